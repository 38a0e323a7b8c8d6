package healthcheck

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Tracker keeps the health check ports of the Services (from the Kubernetes objects)
// and their local endpoint counts (from the rendering) and has its Server serve them.
// It is a renderer.Renderer that stages nothing. Its methods are called from the
// controller's event loop.
type Tracker struct {
	server   *Server
	mappings *Mappings // nil: the ports are not mapped from the node IP
	// counts are the local endpoint counts of the rendered services (absent: 0).
	counts map[renderer.ServiceID]int
}

var _ renderer.Renderer = (*Tracker)(nil)

// NewTracker returns a tracker serving through server and, with mappings, staging
// the mappings of the ports from the node IP to the host.
func NewTracker(server *Server, mappings *Mappings) *Tracker {
	return &Tracker{server: server, mappings: mappings, counts: make(map[renderer.ServiceID]int)}
}

// HealthCheckPort returns the health check node port kube-proxy serves for the
// Service: its healthCheckNodePort when it is of type LoadBalancer with
// externalTrafficPolicy Local and not left to another proxy (by its labels), else 0.
func HealthCheckPort(svc *svcmodel.Service) uint16 {
	if svc.GetServiceType() != "LoadBalancer" || svc.GetExternalTrafficPolicy() != "Local" {
		return 0
	}
	if _, other := svcmodel.OtherProxyLabel(svc); other {
		return 0
	}
	port := svc.GetHealthCheckNodePort()
	if port <= 0 || port > 65535 {
		return 0
	}
	return uint16(port)
}

// UpdateService takes a change of a Service object (prev nil: added; svc nil:
// deleted), stages the change of its port mapping into txn and returns its
// description ("" for none).
func (t *Tracker) UpdateService(txn controller.UpdateOperations, prev, svc proto.Message) (string, error) {
	obj := svc
	if obj == nil {
		obj = prev
	}
	s, ok := obj.(*svcmodel.Service)
	if !ok || s == nil {
		return "", fmt.Errorf("health check: service change of type %T, want *service.Service", obj)
	}
	id := renderer.ServiceID{Namespace: s.GetNamespace(), Name: s.GetName()}
	port := uint16(0)
	if svc != nil {
		port = HealthCheckPort(s)
	}
	t.setPort(id, port)
	if t.mappings == nil {
		return "", nil
	}
	return t.mappings.set(txn, id, port), nil
}

// ResyncServices takes the complete set of Service objects (the "service" resource of
// the Kubernetes state) and stages the port mappings into txn.
func (t *Tracker) ResyncServices(txn controller.ResyncOperations, services controller.KeyValuePairs) {
	want := make(map[renderer.ServiceID]uint16)
	for _, v := range services {
		s, ok := v.(*svcmodel.Service)
		if !ok {
			continue
		}
		if port := HealthCheckPort(s); port != 0 {
			want[renderer.ServiceID{Namespace: s.GetNamespace(), Name: s.GetName()}] = port
		}
	}
	for _, id := range t.server.ids() {
		if _, ok := want[id]; !ok {
			t.server.SetPort(id, 0)
		}
	}
	for id, port := range want {
		t.setPort(id, port)
	}
	if t.mappings != nil {
		t.mappings.resync(txn, want)
	}
}

func (t *Tracker) setPort(id renderer.ServiceID, port uint16) {
	t.server.SetPort(id, port)
	t.server.SetCount(id, t.counts[id])
}

func (t *Tracker) setCount(id renderer.ServiceID, count int) {
	if count == 0 {
		delete(t.counts, id)
	} else {
		t.counts[id] = count
	}
	t.server.SetCount(id, count)
}

// LocalEndpoints returns the number of distinct local ready endpoint addresses that
// external traffic of the service uses. Serving and terminating endpoints are not
// counted even while they carry the traffic (the fallback when none is ready), as in
// kube-proxy (pkg/proxy endpointsmap.go LocalReadyEndpoints): a node left with only
// terminating endpoints fails its health check, so that load balancers drain it.
func LocalEndpoints(fs *renderer.FlatService) int {
	var seen map[renderer.Address]struct{}
	n := 0
	for i := range fs.Ports {
		for _, g := range fs.Ports[i].ExternalBackends {
			for _, ep := range g.Endpoints {
				if !ep.Local || ep.Terminating {
					continue
				}
				if seen == nil {
					seen = make(map[renderer.Address]struct{})
				}
				if _, dup := seen[ep.Address]; !dup {
					seen[ep.Address] = struct{}{}
					n++
				}
			}
		}
	}
	return n
}

// AddFlatService counts the local endpoints of a new rendering.
func (t *Tracker) AddFlatService(_ renderer.UpdateTxn, fs *renderer.FlatService) error {
	t.setCount(fs.ID, LocalEndpoints(fs))
	return nil
}

// UpdateFlatService counts the local endpoints of a changed rendering.
func (t *Tracker) UpdateFlatService(_ renderer.UpdateTxn, _, fs *renderer.FlatService) error {
	t.setCount(fs.ID, LocalEndpoints(fs))
	return nil
}

// DeleteFlatService forgets the count of a service no longer rendered.
func (t *Tracker) DeleteFlatService(_ renderer.UpdateTxn, fs *renderer.FlatService) error {
	t.setCount(fs.ID, 0)
	return nil
}

// UpdateFlatNodePortServices has nothing to count.
func (t *Tracker) UpdateFlatNodePortServices(renderer.UpdateTxn, *renderer.IPAddresses, []*renderer.FlatService) error {
	return nil
}

// UpdateFrontendIfs has nothing to count.
func (t *Tracker) UpdateFrontendIfs(_ renderer.UpdateTxn, _, _ renderer.Interfaces) error { return nil }

// UpdateBackendIfs has nothing to count.
func (t *Tracker) UpdateBackendIfs(_ renderer.UpdateTxn, _, _ renderer.Interfaces) error { return nil }

// ResyncFlat counts the local endpoints of every rendered service anew.
func (t *Tracker) ResyncFlat(_ controller.ResyncOperations, ev *renderer.FlatResyncEventData) error {
	old := t.counts
	t.counts = make(map[renderer.ServiceID]int, len(ev.Services))
	for _, fs := range ev.Services {
		t.setCount(fs.ID, LocalEndpoints(fs))
	}
	for id := range old {
		if _, ok := t.counts[id]; !ok {
			t.server.SetCount(id, 0)
		}
	}
	return nil
}

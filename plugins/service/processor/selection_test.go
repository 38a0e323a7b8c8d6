package processor

import (
	"fmt"
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	nodemodel "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	cidrmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// webSlice is an EndpointSlice of default/web with one ready endpoint per IP, port
// "http" 8080/TCP.
func webSlice(name string, ips ...string) *esmodel.EndpointSlice {
	es := &esmodel.EndpointSlice{Name: name, Namespace: "default", ServiceName: "web", AddressType: "IPv4",
		Ports: []*esmodel.Port{{Name: "http", Protocol: "TCP", Port: 8080}}}
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, &esmodel.Endpoint{Addresses: []string{ip}, Ready: true, Serving: true})
	}
	return es
}

func (e *env) putSlice(es *esmodel.EndpointSlice) []call {
	key := esmodel.Key(es.Name, es.Namespace)
	return e.update(&controller.KubeStateChange{Resource: esmodel.Keyword, Key: key, NewValue: es})
}

func (e *env) putServiceCIDR(name string, cidrs ...string) []call {
	var v *cidrmodel.ServiceCIDR
	if cidrs != nil {
		v = &cidrmodel.ServiceCIDR{Name: name, Cidrs: cidrs, Ready: true}
	}
	ev := &controller.KubeStateChange{Resource: cidrmodel.Keyword, Key: cidrmodel.Key(name)}
	if v != nil {
		ev.NewValue = v
	}
	return e.update(ev)
}

func TestSliceMovingToAnotherServiceLeavesTheFirst(t *testing.T) {
	e := newEnv(t, "")
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.putService(st.Service("default", "api", "10.96.0.11", st.Port("http", "TCP", 80, 0)))
	// Both services are rendered without endpoints first (to be rejected).
	expectCalls(t, "first slice", e.putSlice(webSlice("s1", remoteIP)), "update default/web")
	moved := webSlice("s1", remoteIP)
	moved.ServiceName = "api"
	expectCalls(t, "slice relabelled", e.putSlice(moved), "update default/web", "update default/api")
	if got := backends(e.svc("default", "web"), "http"); len(got) != 0 {
		t.Errorf("web backends %v after its slice moved", got)
	}
	if got := backends(e.svc("default", "api"), "http"); len(got) != 1 || got[0] != remoteIP+":8080" {
		t.Errorf("api backends %v", got)
	}
}

func TestServiceOfAnotherProxyIsNotProgrammed(t *testing.T) {
	for _, label := range []string{svcmodel.LabelServiceProxyName, svcmodel.LabelHeadless} {
		t.Run(label, func(t *testing.T) {
			e := newEnv(t, "")
			svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			e.putService(svc)
			expectCalls(t, "slice", e.putSlice(webSlice("s1", remoteIP)), "update default/web")
			other := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			other.Labels = map[string]string{label: ""}
			expectCalls(t, "labelled", e.putService(other), "delete default/web")
			expectCalls(t, "endpoints of a labelled service", e.putSlice(webSlice("s1", remoteIP, pod1IP)))
			expectCalls(t, "label removed", e.putService(svc), "add default/web")
		})
	}
}

func TestClusterIPOfAServiceCIDRIsServed(t *testing.T) {
	e := newEnv(t, "")
	// The configured service CIDR is 10.96.0.0/12; 10.200.0.5 is in no range yet.
	e.putService(st.Service("default", "web", "10.200.0.5", st.Port("http", "TCP", 80, 0)))
	e.putService(st.Service("default", "api", "10.96.0.11", st.Port("http", "TCP", 80, 0)))
	e.putSlice(webSlice("s1", remoteIP))
	api := webSlice("a1", remoteIP)
	api.ServiceName = "api"
	e.putSlice(api)
	if cs := e.svc("default", "web"); cs.ClusterIPs.Len() != 0 {
		t.Fatalf("cluster IP outside every range rendered: %v", cs.ClusterIPs)
	}
	// A ServiceCIDR holding it: the service is rendered again, the other is not touched.
	expectCalls(t, "ServiceCIDR added", e.putServiceCIDR("extra", "10.200.0.0/16"), "update default/web")
	if cs := e.svc("default", "web"); !cs.ClusterIPs.Has(net.ParseIP("10.200.0.5")) {
		t.Errorf("cluster IP of a ServiceCIDR not rendered: %v", cs.ClusterIPs)
	}
	if g := e.gauge("contiv_service_rejected_fields", "field", "clusterIP"); g != 0 {
		t.Errorf("rejected clusterIP gauge %v, want 0", g)
	}
	expectCalls(t, "a range that changes nothing", e.putServiceCIDR("more", "10.201.0.0/16"))
	expectCalls(t, "ServiceCIDR gone", e.putServiceCIDR("extra"), "update default/web")
	if cs := e.svc("default", "web"); cs.ClusterIPs.Len() != 0 {
		t.Errorf("cluster IP rendered after its ServiceCIDR went: %v", cs.ClusterIPs)
	}
}

func TestResyncReadsServiceCIDRsAndSlices(t *testing.T) {
	e := newEnv(t, "")
	svc := st.Service("default", "web", "10.200.0.5", st.Port("http", "TCP", 80, 0))
	es := webSlice("s1", remoteIP)
	kube := controller.NewKubeStateData()
	kube[svcmodel.Keyword] = map[string]proto.Message{svcmodel.Key(svc.Name, svc.Namespace): svc}
	kube[esmodel.Keyword] = map[string]proto.Message{esmodel.Key(es.Name, es.Namespace): es}
	kube[cidrmodel.Keyword] = map[string]proto.Message{cidrmodel.Key("extra"): &cidrmodel.ServiceCIDR{Name: "extra", Cidrs: []string{"10.200.0.0/16"}}}
	e.resync(kube)
	cs := e.svc("default", "web")
	if cs == nil || !cs.ClusterIPs.Has(net.ParseIP("10.200.0.5")) || len(backends(cs, "http")) != 1 {
		t.Fatalf("after a resync with the ServiceCIDR: %v", cs)
	}
	delete(kube, cidrmodel.Keyword)
	e.resync(kube)
	if cs := e.svc("default", "web"); cs == nil || cs.ClusterIPs.Len() != 0 {
		t.Errorf("after a resync without the ServiceCIDR: %v", cs)
	}
	delete(kube, esmodel.Keyword)
	e.resync(kube)
	if cs := e.svc("default", "web"); cs == nil || len(backends(cs, "http")) != 0 {
		t.Errorf("after a resync without the slice: %v, want the service without endpoints", cs)
	}
}

// TestSlicesOfAServiceAreMergedWithoutCap: 2,500 endpoints in 25 slices are 2,500
// backends (v1 Endpoints stopped at 1,000); an IPv6 slice's endpoints are kept for a
// renderer of IPv6 services; an FQDN slice has none.
func TestSlicesOfAServiceAreMergedWithoutCap(t *testing.T) {
	e := newEnv(t, "")
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	for s := range 25 {
		ips := make([]string, 100)
		for i := range ips {
			n := s*100 + i
			ips[i] = fmt.Sprintf("10.1.%d.%d", 2+n/250, 2+n%250)
		}
		e.putSlice(webSlice(fmt.Sprintf("web-%d", s), ips...))
	}
	v6 := webSlice("web-v6", "fd00::5")
	v6.AddressType = "IPv6"
	fqdn := webSlice("web-fqdn", "example.com")
	fqdn.AddressType = "FQDN"
	e.putSlice(v6)
	e.putSlice(fqdn)
	if got := len(backends(e.svc("default", "web"), "http")); got != 2501 {
		t.Errorf("%d backends, want 2,500 IPv4 and 1 IPv6", got)
	}
	if g := e.gauge("contiv_service_invalid_ips"); g != 0 {
		t.Errorf("an FQDN slice counted %v invalid IPs", g)
	}
}

// TestZoneChangeReRendersHintedServices: this node's zone comes from its Node; when it
// changes, the services with zone hints are rendered for the new zone, the others are
// not touched; another node's change does nothing.
func TestZoneChangeReRendersHintedServices(t *testing.T) {
	e := newEnv(t, "")
	hinted := webSlice("s1", remoteIP, "10.1.2.4")
	hinted.Endpoints[0].HintsForZones = []string{"z1"}
	hinted.Endpoints[1].HintsForZones = []string{"z2"}
	plain := webSlice("a1", remoteIP)
	plain.ServiceName = "api"
	kube := controller.NewKubeStateData()
	kube[svcmodel.Keyword] = map[string]proto.Message{
		svcmodel.Key("web", "default"): st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)),
		svcmodel.Key("api", "default"): st.Service("default", "api", "10.96.0.11", st.Port("http", "TCP", 80, 0)),
	}
	kube[esmodel.Keyword] = map[string]proto.Message{esmodel.Key("s1", "default"): hinted, esmodel.Key("a1", "default"): plain}
	kube[nodemodel.Keyword] = map[string]proto.Message{nodemodel.Key("master"): &nodemodel.Node{Name: "master", Zone: "z1"}}
	e.resync(kube)
	e.r.take()
	if got := backends(e.svc("default", "web"), "http"); len(got) != 1 || got[0] != remoteIP+":8080" {
		t.Fatalf("zone z1: backends %v", got)
	}
	zone := func(node, z string) []call {
		return e.update(&controller.KubeStateChange{Resource: nodemodel.Keyword, Key: nodemodel.Key(node),
			NewValue: &nodemodel.Node{Name: node, Zone: z}})
	}
	expectCalls(t, "another node's zone", zone("worker", "z2"))
	expectCalls(t, "this node's zone", zone("master", "z2"), "update default/web")
	if got := backends(e.svc("default", "web"), "http"); len(got) != 1 || got[0] != "10.1.2.4:8080" {
		t.Errorf("zone z2: backends %v", got)
	}
	expectCalls(t, "a zone without hints", zone("master", "z3"), "update default/web")
	if got := backends(e.svc("default", "web"), "http"); len(got) != 2 {
		t.Errorf("zone z3 (no endpoint hinted for it): backends %v, want both", got)
	}
}

// TestProxyModeIngressIPsAreNotProgrammed: a load balancer ingress IP of ipMode Proxy
// belongs to the load balancer, which proxies to the node ports: only VIP-mode ingress
// IPs are programmed, as kube-proxy does.
func TestProxyModeIngressIPsAreNotProgrammed(t *testing.T) {
	e := newEnv(t, "")
	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	svc.ServiceType = "LoadBalancer"
	svc.LbIngressIps = []string{"20.0.0.1", "20.0.0.2"}
	svc.LbIngressProxyIps = []string{"20.0.0.2"}
	e.putService(svc)
	e.putSlice(webSlice("s1", remoteIP))
	cs := e.svc("default", "web")
	if cs == nil || cs.ExternalIPs.Len() != 1 || !cs.ExternalIPs.Has(net.ParseIP("20.0.0.1")) {
		t.Errorf("external IPs %v, want the VIP-mode ingress IP only", cs)
	}
}

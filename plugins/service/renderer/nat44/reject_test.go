package nat44

import (
	"net/netip"
	"testing"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// lbService is a service on the shared load balancer IP 20.0.0.9, port port/TCP, with
// the given backends (none: no endpoint).
func lbService(name string, port uint16, backends ...string) *renderer.FlatService {
	fs := &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: name},
		ExternalIPs: []renderer.Address{renderer.NewAddress(netip.MustParseAddr("20.0.0.9").AsSlice())},
		Ports:       []renderer.FlatPort{{Name: "p", Port: renderer.ServicePort{Protocol: renderer.TCP, Port: port}}}}
	p := &fs.Ports[0]
	for _, b := range backends {
		if len(p.Backends) == 0 {
			p.Backends = []renderer.BackendGroup{{TargetPort: 8080}}
		}
		p.Backends[0].Endpoints = append(p.Backends[0].Endpoints, renderer.Endpoint{Address: renderer.NewAddress(netip.MustParseAddr(b).AsSlice())})
	}
	p.ExternalBackends, p.HasEndpoints = p.Backends, len(backends) > 0
	return fs
}

// TestServicesSharingAnAddressShareItsRoute: two services on one load balancer IP
// (other ports): the address rejects while one of them has no endpoint, and its route
// goes only when neither wants it.
func TestServicesSharingAnAddressShareItsRoute(t *testing.T) {
	e := newEnv(t, envOptions{})
	key := l3.RouteKey(e.rndr.mainVRF, "20.0.0.9/32", "")
	stage := func(what string, call func(txn renderer.UpdateTxn) error) *st.Txn {
		t.Helper()
		txn := st.NewTxn()
		if err := call(&describedTxn{Txn: txn}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return txn
	}
	routeIn := func(txn *st.Txn) string {
		v, staged := txn.Values[key]
		switch r, _ := v.(*l3.Route); {
		case !staged:
			return "unchanged"
		case r == nil:
			return "deleted"
		default:
			return r.GetType().String()
		}
	}
	a, b := lbService("a", 80), lbService("b", 443, "10.1.2.3")
	if got := routeIn(stage("add a", func(txn renderer.UpdateTxn) error { return e.rndr.AddFlatService(txn, a) })); got != "ICMP_PROHIBIT" {
		t.Fatalf("a without endpoints: route %s", got)
	}
	if got := routeIn(stage("add b", func(txn renderer.UpdateTxn) error { return e.rndr.AddFlatService(txn, b) })); got != "unchanged" {
		t.Errorf("b with endpoints: route %s, want the one of a kept", got)
	}
	a2 := lbService("a", 80, "10.1.2.4")
	if got := routeIn(stage("a gets an endpoint", func(txn renderer.UpdateTxn) error { return e.rndr.UpdateFlatService(txn, a, a2) })); got != "deleted" {
		t.Errorf("every port of the address has endpoints: route %s, want it deleted", got)
	}
	b2 := lbService("b", 443)
	if got := routeIn(stage("b loses its endpoints", func(txn renderer.UpdateTxn) error { return e.rndr.UpdateFlatService(txn, b, b2) })); got != "ICMP_PROHIBIT" {
		t.Errorf("b without endpoints: route %s", got)
	}
	if got := routeIn(stage("delete b", func(txn renderer.UpdateTxn) error { return e.rndr.DeleteFlatService(txn, b2) })); got != "deleted" {
		t.Errorf("b deleted: route %s, want it deleted", got)
	}
}

// TestAddressRejectedWhenOnlyTheOtherFamilyHasEndpoints: a dual-stack Service whose
// endpoints are all IPv6 has none for IPv4 (kube-proxy's IPv4 proxier sees IPv4
// slices only): its IPv4 address is rejected at once, not dropped as if a traffic
// policy had left this node without a backend.
func TestAddressRejectedWhenOnlyTheOtherFamilyHasEndpoints(t *testing.T) {
	e := newEnv(t, envOptions{})
	svc := lbService("dual", 80, "fd00:10:1:2::3")
	svc.Ports[0].NoIPv4Endpoints = true
	txn := st.NewTxn()
	if err := e.rndr.AddFlatService(&describedTxn{Txn: txn}, svc); err != nil {
		t.Fatal(err)
	}
	r, _ := txn.Values[l3.RouteKey(e.rndr.mainVRF, "20.0.0.9/32", "")].(*l3.Route)
	if r.GetType() != l3.Route_ICMP_PROHIBIT {
		t.Errorf("IPv4 address of a port with IPv6 endpoints only: route %v, want ICMP_PROHIBIT", r)
	}
}

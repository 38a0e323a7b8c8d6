package rejects

import (
	"net"
	"reflect"
	"testing"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

func addr(s string) renderer.Address { return renderer.NewAddress(net.ParseIP(s)) }

func servedAll(renderer.Address, bool) bool { return false }

// A port without endpoints of an address's family rejects that address; a port whose
// endpoints exist elsewhere but not among the address's backends drops it; an address
// with backends of its family wants no route.
func TestWantedRejectsPerFamilyAndDropsWithoutBackends(t *testing.T) {
	svc := &renderer.FlatService{
		ClusterIPs:  []renderer.Address{addr("10.96.0.10"), addr("fd00:96::10")},
		ExternalIPs: []renderer.Address{addr("198.51.100.1")},
		Ports: []renderer.FlatPort{{
			Port:            renderer.ServicePort{Protocol: renderer.TCP, Port: 80},
			HasEndpoints:    true,
			NoIPv4Endpoints: false,
			NoIPv6Endpoints: true,
			Backends:        []renderer.BackendGroup{{TargetPort: 8080, Endpoints: []renderer.Endpoint{{Address: addr("10.1.1.2")}}}},
		}},
	}
	got := Wanted(svc, servedAll)
	want := []Route{{Addr: "fd00:96::10", Type: l3.Route_ICMP_PROHIBIT}, {Addr: "198.51.100.1", Type: l3.Route_DROP}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Wanted = %+v, want %+v", got, want)
	}
	skipIPv6 := func(a renderer.Address, _ bool) bool { return !a.IsIPv4() }
	if got := Wanted(svc, skipIPv6); len(got) != 1 || got[0].Addr != "198.51.100.1" {
		t.Errorf("Wanted skipping IPv6 = %+v, want the external IP's drop only", got)
	}
}

// Users of one address: reject wins over drop, and the route goes when its last user does.
func TestUsersRejectOverDropUntilTheLastUserLeaves(t *testing.T) {
	var u Users
	a, b := renderer.ServiceID{Namespace: "ns", Name: "a"}, renderer.ServiceID{Namespace: "ns", Name: "b"}
	drop := []Route{{Addr: "10.96.0.10", Type: l3.Route_DROP}}
	reject := []Route{{Addr: "10.96.0.10", Type: l3.Route_ICMP_PROHIBIT}}
	u.Update(a, nil, drop)
	if typ := u.Type("10.96.0.10"); typ != l3.Route_DROP {
		t.Fatalf("one dropping user: %v", typ)
	}
	if touched := u.Update(b, nil, reject); !reflect.DeepEqual(touched, []string{"10.96.0.10"}) {
		t.Errorf("touched %v", touched)
	}
	if typ := u.Type("10.96.0.10"); typ != l3.Route_ICMP_PROHIBIT {
		t.Fatalf("a rejecting and a dropping user: %v, want reject", typ)
	}
	u.Update(b, reject, nil)
	if typ := u.Type("10.96.0.10"); typ != l3.Route_DROP {
		t.Fatalf("the rejecting user left: %v, want drop", typ)
	}
	u.Update(a, drop, nil)
	if typ := u.Type("10.96.0.10"); typ != None || len(u.Addrs()) != 0 {
		t.Fatalf("no user left: %v, addresses %v", typ, u.Addrs())
	}
}

package l3plugin

import (
	"net/netip"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// routeEnv is an env with VRF 1 and 2 (IPv4) and VRF 2 (IPv6), and two
// loopbacks with addresses.
func routeEnv(t *testing.T) (*env, uint32, uint32) {
	e := newEnv(t)
	create(t, NewVrfTableDescriptor(e.deps()), map[string]proto.Message{
		l3.VrfTableKey(1, l3.VrfTable_IPV4): &l3.VrfTable{Id: 1},
		l3.VrfTableKey(2, l3.VrfTable_IPV4): &l3.VrfTable{Id: 2},
		l3.VrfTableKey(2, l3.VrfTable_IPV6): &l3.VrfTable{Id: 2, Protocol: l3.VrfTable_IPV6},
	})
	lo1 := e.loopback("lo1", "10.10.0.1/24", "fd00::1/64")
	lo2 := e.loopback("lo2", "10.20.0.1/24")
	return e, lo1, lo2
}

func routeKey(r *l3.Route) string { return l3.RouteKey(r.VrfId, r.DstNetwork, r.NextHopAddr) }

func TestRouteCreateRetrieveDelete(t *testing.T) {
	e, lo1, lo2 := routeEnv(t)
	tests := []struct {
		name  string
		route *l3.Route
		// what VPP must hold afterwards
		vrf  uint32
		ipv6 bool
		dst  string
		path vppsim.RoutePath
	}{
		{"via interface and next hop", &l3.Route{DstNetwork: "192.168.1.0/24", NextHopAddr: "10.10.0.2", OutgoingInterface: "lo1"},
			0, false, "192.168.1.0/24", vppsim.RoutePath{Type: "normal", SwIfIndex: lo1, NextHop: netip.MustParseAddr("10.10.0.2"), Weight: 1}},
		{"via next hop only (recursive)", &l3.Route{VrfId: 1, DstNetwork: "192.168.2.0/24", NextHopAddr: "10.20.0.9", Weight: 5, Preference: 2},
			1, false, "192.168.2.0/24", vppsim.RoutePath{Type: "normal", SwIfIndex: vppsim.NoIndex, NextHop: netip.MustParseAddr("10.20.0.9"), NextHopVRF: 1, Weight: 5, Preference: 2}},
		{"via interface only", &l3.Route{DstNetwork: "10.30.0.0/16", OutgoingInterface: "lo2"},
			0, false, "10.30.0.0/16", vppsim.RoutePath{Type: "normal", SwIfIndex: lo2, Weight: 1}},
		{"inter-VRF", &l3.Route{Type: l3.Route_INTER_VRF, VrfId: 1, DstNetwork: "10.1.0.0/16", ViaVrfId: 2},
			1, false, "10.1.0.0/16", vppsim.RoutePath{Type: "normal", SwIfIndex: vppsim.NoIndex, NextHopVRF: 2, Weight: 1}},
		{"inter-VRF with next hop", &l3.Route{Type: l3.Route_INTER_VRF, VrfId: 2, DstNetwork: "0.0.0.0/0", ViaVrfId: 0, NextHopAddr: "10.10.0.254"},
			2, false, "0.0.0.0/0", vppsim.RoutePath{Type: "normal", SwIfIndex: vppsim.NoIndex, NextHop: netip.MustParseAddr("10.10.0.254"), NextHopVRF: 0, Weight: 1}},
		{"drop", &l3.Route{Type: l3.Route_DROP, VrfId: 1, DstNetwork: "10.99.0.0/16"},
			1, false, "10.99.0.0/16", vppsim.RoutePath{Type: "drop", SwIfIndex: vppsim.NoIndex, Weight: 1}},
		{"ICMP unreachable", &l3.Route{Type: l3.Route_ICMP_UNREACH, VrfId: 1, DstNetwork: "10.96.0.10/32"},
			1, false, "10.96.0.10/32", vppsim.RoutePath{Type: "FIB_API_PATH_TYPE_ICMP_UNREACH", SwIfIndex: vppsim.NoIndex, Weight: 1}},
		{"ICMP prohibited", &l3.Route{Type: l3.Route_ICMP_PROHIBIT, DstNetwork: "10.96.0.11/32"},
			0, false, "10.96.0.11/32", vppsim.RoutePath{Type: "FIB_API_PATH_TYPE_ICMP_PROHIBIT", SwIfIndex: vppsim.NoIndex, Weight: 1}},
		{"ICMP prohibited IPv6", &l3.Route{Type: l3.Route_ICMP_PROHIBIT, VrfId: 2, DstNetwork: "fd00:96::10/128"},
			2, true, "fd00:96::10/128", vppsim.RoutePath{Type: "FIB_API_PATH_TYPE_ICMP_PROHIBIT", SwIfIndex: vppsim.NoIndex, Weight: 1}},
		{"IPv6 in VRF 2", &l3.Route{VrfId: 2, DstNetwork: "fd10::/64", NextHopAddr: "fd00::2", OutgoingInterface: "lo1"},
			2, true, "fd10::/64", vppsim.RoutePath{Type: "normal", SwIfIndex: lo1, NextHop: netip.MustParseAddr("fd00::2"), NextHopVRF: 2, Weight: 1}},
	}
	d := NewRouteDescriptor(e.deps())
	values := map[string]proto.Message{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			create(t, d, map[string]proto.Message{routeKey(tt.route): tt.route})
			values[routeKey(tt.route)] = tt.route
			if !hasPath(e.sim.Routes(tt.vrf, tt.ipv6), tt.dst, tt.path) {
				t.Errorf("VPP has no path %+v to %s in VRF %d: %+v", tt.path, tt.dst, tt.vrf, e.sim.Routes(tt.vrf, tt.ipv6))
			}
		})
	}

	// a restarted agent reads back exactly NB's routes; VPP's own entries
	// (special, connected, local, broadcast) are not reported
	expectRetrieved(t, NewRouteDescriptor(e.freshDeps()), values)

	// without NB, routes are rebuilt from VPP's paths
	got := retrieved(t, NewRouteDescriptor(e.freshDeps()), nil)
	if len(got) != len(values) {
		t.Errorf("retrieve without NB: %d routes, want %d: %v", len(got), len(values), got)
	}
	for k, v := range values {
		if g, ok := got[k]; !ok || !EquivalentRoutes(g.(*l3.Route), v.(*l3.Route)) {
			t.Errorf("retrieve without NB: %s = %v, want %v", k, g, v)
		}
	}

	for _, k := range sortedKeys(values) {
		if err := d.Delete(k, values[k], nil); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
	}
	for _, vrf := range []uint32{0, 1, 2} {
		for _, r := range append(e.sim.Routes(vrf, false), e.sim.Routes(vrf, true)...) {
			if r.Source == "api" {
				t.Errorf("route %v left in VRF %d", r, vrf)
			}
		}
	}
}

func hasPath(routes []vppsim.Route, dst string, want vppsim.RoutePath) bool {
	for _, r := range routes {
		if r.Prefix.String() != dst {
			continue
		}
		for _, p := range r.Paths {
			if p == want {
				return true
			}
		}
	}
	return false
}

func TestRouteECMPPathsAreIndependent(t *testing.T) {
	e, lo1, _ := routeEnv(t)
	d := NewRouteDescriptor(e.deps())
	a := &l3.Route{DstNetwork: "172.16.0.0/12", NextHopAddr: "10.10.0.2", OutgoingInterface: "lo1"}
	b := &l3.Route{DstNetwork: "172.16.0.0/12", NextHopAddr: "10.10.0.3", OutgoingInterface: "lo1"}
	create(t, d, map[string]proto.Message{routeKey(a): a, routeKey(b): b})
	if err := d.Delete(routeKey(a), a, nil); err != nil {
		t.Fatal(err)
	}
	rest := vppsim.RoutePath{Type: "normal", SwIfIndex: lo1, NextHop: netip.MustParseAddr("10.10.0.3"), Weight: 1}
	if !hasPath(e.sim.Routes(0, false), "172.16.0.0/12", rest) {
		t.Errorf("deleting one path removed the other: %+v", e.sim.Routes(0, false))
	}
	expectRetrieved(t, NewRouteDescriptor(e.freshDeps()), map[string]proto.Message{routeKey(b): b})
}

func TestRouteDependencies(t *testing.T) {
	tests := []struct {
		name string
		r    *l3.Route
		want []string
	}{
		{"main VRF via interface", &l3.Route{DstNetwork: "1.0.0.0/8", OutgoingInterface: "tap1"},
			[]string{ifmodel.InterfaceKey("tap1")}},
		{"VRF 3, recursive", &l3.Route{VrfId: 3, DstNetwork: "1.0.0.0/8", NextHopAddr: "2.2.2.2"},
			[]string{l3.VrfTableKey(3, l3.VrfTable_IPV4)}},
		{"inter-VRF 3 -> 4, IPv6", &l3.Route{Type: l3.Route_INTER_VRF, VrfId: 3, ViaVrfId: 4, DstNetwork: "fd00::/8"},
			[]string{l3.VrfTableKey(3, l3.VrfTable_IPV6), l3.VrfTableKey(4, l3.VrfTable_IPV6)}},
		{"inter-VRF into 0", &l3.Route{Type: l3.Route_INTER_VRF, VrfId: 3, DstNetwork: "0.0.0.0/0"},
			[]string{l3.VrfTableKey(3, l3.VrfTable_IPV4)}},
		{"drop in 0", &l3.Route{Type: l3.Route_DROP, DstNetwork: "1.0.0.0/8"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, dep := range RouteDependencies(tt.r) {
				got = append(got, dep.Key)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("dependencies %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("dependencies %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestRouteValidate(t *testing.T) {
	tests := []struct {
		name  string
		r     *l3.Route
		field string
	}{
		{"ok", &l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"}, ""},
		{"bad dst", &l3.Route{DstNetwork: "10.0.0.0", NextHopAddr: "1.1.1.1"}, "dst_network"},
		{"bad next hop", &l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "x"}, "next_hop_addr"},
		{"mixed families", &l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "fd00::1"}, "next_hop_addr"},
		{"intra without next hop or interface", &l3.Route{DstNetwork: "10.0.0.0/8"}, "next_hop_addr"},
		{"inter-VRF with interface", &l3.Route{Type: l3.Route_INTER_VRF, DstNetwork: "10.0.0.0/8", OutgoingInterface: "a"}, "outgoing_interface"},
		{"drop with next hop", &l3.Route{Type: l3.Route_DROP, DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"}, "next_hop_addr"},
		{"unreach", &l3.Route{Type: l3.Route_ICMP_UNREACH, DstNetwork: "10.96.0.10/32"}, ""},
		{"unreach with next hop", &l3.Route{Type: l3.Route_ICMP_UNREACH, DstNetwork: "10.96.0.10/32", NextHopAddr: "1.1.1.1"}, "next_hop_addr"},
		{"unreach with interface", &l3.Route{Type: l3.Route_ICMP_UNREACH, DstNetwork: "10.96.0.10/32", OutgoingInterface: "a"}, "outgoing_interface"},
		{"prohibit with interface", &l3.Route{Type: l3.Route_ICMP_PROHIBIT, DstNetwork: "fd00::10/128", OutgoingInterface: "a"}, "outgoing_interface"},
		{"prohibit with next hop", &l3.Route{Type: l3.Route_ICMP_PROHIBIT, DstNetwork: "10.96.0.10/32", NextHopAddr: "::1"}, "next_hop_addr"},
		{"weight", &l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1", Weight: 300}, "weight"},
		{"preference", &l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1", Preference: 256}, "preference"},
		{"unknown type", &l3.Route{Type: 9, DstNetwork: "10.0.0.0/8"}, "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := ""
			if tt.field == "" {
				key = routeKey(tt.r)
			}
			checkInvalid(t, ValidateRoute(key, tt.r), tt.field)
		})
	}
	if err := ValidateRoute(l3.RouteKey(1, "10.0.0.0/8", "1.1.1.1"), &l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"}); err == nil {
		t.Error("key of another VRF accepted")
	}
	if !EquivalentRoutes(&l3.Route{DstNetwork: "10.1.0.0/8", NextHopAddr: "1.1.1.1"},
		&l3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1", Weight: 1}) {
		t.Error("weight 0 and 1, and host bits of dst, should not matter")
	}
}

func TestRouteVPPErrors(t *testing.T) {
	e, _, _ := routeEnv(t)
	d := NewRouteDescriptor(e.deps())
	tests := []struct {
		name   string
		r      *l3.Route
		fail   string
		retval govppapi.VPPApiError
	}{
		{"missing VRF", &l3.Route{VrfId: 7, DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"}, "", govppapi.NO_SUCH_FIB},
		{"missing via VRF", &l3.Route{Type: l3.Route_INTER_VRF, DstNetwork: "10.0.0.0/8", ViaVrfId: 9}, "", govppapi.NO_SUCH_FIB},
		{"injected failure", &l3.Route{DstNetwork: "10.0.0.0/8", OutgoingInterface: "lo1"}, "ip_route_add_del", govppapi.UNSPECIFIED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fail != "" {
				if err := e.sim.FailMessage(tt.fail, int32(tt.retval), 1); err != nil {
					t.Fatal(err)
				}
			}
			_, err := d.Create(routeKey(tt.r), tt.r)
			if !vppbase.IsRetval(err, tt.retval) {
				t.Fatalf("error %v, want retval %d", err, tt.retval)
			}
		})
	}
	if _, err := d.Create("", &l3.Route{DstNetwork: "10.0.0.0/8", OutgoingInterface: "nope"}); err == nil {
		t.Error("route through an unknown interface created")
	}
}

func TestRouteRetrieveSkipsDHCPRoutes(t *testing.T) {
	e := newEnv(t)
	sw := e.loopback("dhcp0")
	req := &dhcp.DHCPClientConfig{IsAdd: true, Client: dhcp.DHCPClient{SwIfIndex: interface_types.InterfaceIndex(sw), Hostname: "node1"}}
	if err := vppbase.Call(e.ch, req, &dhcp.DHCPClientConfigReply{}); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.PushDHCPLease(sw, vppsim.DHCPLease{Address: netip.MustParsePrefix("192.168.50.10/24"),
		Router: netip.MustParseAddr("192.168.50.1")}); err != nil {
		t.Fatal(err)
	}
	if !hasPath(e.sim.Routes(0, false), "0.0.0.0/0", vppsim.RoutePath{Type: "normal", SwIfIndex: sw,
		NextHop: netip.MustParseAddr("192.168.50.1"), Weight: 1}) {
		t.Fatalf("no DHCP default route in VPP: %+v", e.sim.Routes(0, false))
	}
	// the lease's routes are VPP's, not configuration (the leased address
	// is not in the interface metadata)
	if got := retrieved(t, NewRouteDescriptor(e.freshDeps()), nil); len(got) != 0 {
		t.Errorf("DHCP routes retrieved: %v", got)
	}
	// unless NB asks for the same route
	r := &l3.Route{DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.50.1", OutgoingInterface: "dhcp0"}
	expectRetrieved(t, NewRouteDescriptor(e.freshDeps()), map[string]proto.Message{routeKey(r): r})
}

package vppsim

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

func tableIDs(e *testEnv) []string {
	var out []string
	for _, d := range dump[ip.IPTableDetails](e.t, e.ch, &ip.IPTableDump{}) {
		out = append(out, fmt.Sprintf("%v/%d/%s", d.Table.IsIP6, d.Table.TableID, d.Table.Name))
	}
	return out
}

func TestVRFTables(t *testing.T) {
	e := newEnv(t)
	if got := tableIDs(e); !slices.Equal(got, []string{"false/0/ipv4-VRF:0", "true/0/ipv6-VRF:0"}) {
		t.Fatalf("tables at start: %v", got)
	}
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 1, Name: "pods"}})
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 1}}) // adding again is fine
	e.ok(&ip.IPTableAddDelV2{IsAdd: true, Table: ip.IPTable{TableID: 2, IsIP6: true}})
	if got := tableIDs(e); !slices.Equal(got, []string{"false/0/ipv4-VRF:0", "false/1/pods", "true/0/ipv6-VRF:0", "true/2/ipv6-VRF:2"}) {
		t.Fatalf("tables: %v", got)
	}

	lo := e.loopback()
	tests := []struct {
		name string
		req  *interfaces.SwInterfaceSetTable
		want int32
	}{
		{"missing table", &interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 3}, retvalNoSuchFIB},
		{"missing ipv6 table", &interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 1, IsIPv6: true}, retvalNoSuchFIB},
		{"bind ipv4", &interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 1}, 0},
		{"bind ipv6", &interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 2, IsIPv6: true}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	get := &interfaces.SwInterfaceGetTableReply{}
	e.ok(&interfaces.SwInterfaceGetTable{SwIfIndex: lo}, get)
	if get.VrfID != 1 {
		t.Errorf("sw_interface_get_table = %d", get.VrfID)
	}
	// An interface with addresses cannot change VRF.
	if rv := e.addAddr(lo, "10.1.1.1/24"); rv != 0 {
		t.Fatal(rv)
	}
	e.expect(retvalAddressFoundForInterface, &interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 0})
	e.expect(0, &interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 1}) // same table: no change

	// Deleting the table via the API releases the API's lock only; the
	// bound interface keeps it alive, as in VPP.
	e.ok(&ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: 1}})
	if got := tableIDs(e); !slices.Contains(got, "false/1/pods") {
		t.Errorf("table 1 vanished while bound: %v", got)
	}
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: lo, DelAll: true})
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 0})
	if got := tableIDs(e); slices.Contains(got, "false/1/pods") {
		t.Errorf("table 1 still exists with no lock: %v", got)
	}
	// Table 0 can be neither added nor deleted; deleting a missing table is fine.
	e.ok(&ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: 0}})
	e.ok(&ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: 42}})
	if got := tableIDs(e); !slices.Contains(got, "false/0/ipv4-VRF:0") {
		t.Errorf("table 0 deleted: %v", got)
	}
}

// apiRoutes returns the routes of a table that came from the API.
func apiRoutes(e *testEnv, vrf uint32) map[string][]fib_types.FibPath {
	out := map[string][]fib_types.FibPath{}
	for _, d := range dump[ip.IPRouteV2Details](e.t, e.ch, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: vrf}, Src: fibSrcAPI}) {
		out[d.Route.Prefix.String()] = d.Route.Paths
	}
	return out
}

func TestRoutes(t *testing.T) {
	e := newEnv(t)
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 1}})
	if rv := e.addAddr(1, "192.168.16.1/24"); rv != 0 {
		t.Fatal(rv)
	}
	route := func(isAdd, multi bool, vrf uint32, prefix string, paths ...fib_types.FibPath) *ip.IPRouteAddDel {
		return &ip.IPRouteAddDel{IsAdd: isAdd, IsMultipath: multi, Route: ip.IPRoute{TableID: vrf, Prefix: pfx(prefix), NPaths: uint8(len(paths)), Paths: paths}}
	}
	tests := []struct {
		name string
		req  *ip.IPRouteAddDel
		want int32
	}{
		{"add", route(true, false, 0, "10.2.0.0/16", viaPath(1, "192.168.16.2")), 0},
		{"add into other vrf", route(true, false, 1, "10.96.0.0/12", lookupPath(0)), 0},
		{"missing table", route(true, false, 7, "10.3.0.0/16", viaPath(1, "192.168.16.2")), retvalNoSuchFIB},
		{"path via missing table", route(true, false, 0, "10.4.0.0/16", lookupPath(9)), retvalNoSuchFIB},
		{"path via missing interface", route(true, false, 0, "10.5.0.0/16", viaPath(55, "192.168.16.2")), retvalInvalidSwIfIndex},
		{"no paths", route(true, false, 0, "10.6.0.0/16"), retvalNoPathsInRoute},
		{"delete missing is silent", route(false, false, 0, "10.7.0.0/16"), 0},
		{"multipath add", route(true, true, 0, "10.2.0.0/16", viaPath(1, "192.168.16.3")), 0},
		{"multipath add again", route(true, true, 0, "10.8.0.0/24", viaPath(1, "192.168.16.3")), 0},
		{"multipath remove one", route(false, true, 0, "10.2.0.0/16", viaPath(1, "192.168.16.2")), 0},
		{"host bits are masked", route(true, false, 0, "10.9.9.9/24", viaPath(1, "192.168.16.4")), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	got := apiRoutes(e, 0)
	if p := got["10.2.0.0/16"]; len(p) != 1 || p[0].Weight != 1 {
		t.Errorf("10.2.0.0/16 paths after multipath remove: %+v", p)
	} else if nh, _ := addrFromAPI(pathNextHop(p[0])); nh.String() != "192.168.16.3" {
		t.Errorf("10.2.0.0/16 via %v", nh)
	}
	if _, ok := got["10.9.9.0/24"]; !ok {
		t.Errorf("masked prefix missing: %v", got)
	}
	if len(got) != 3 {
		t.Errorf("API routes in table 0: %v", got)
	}
	if r1 := apiRoutes(e, 1); len(r1["10.96.0.0/12"]) != 1 || r1["10.96.0.0/12"][0].TableID != 0 {
		t.Errorf("table 1: %v", r1)
	}
	// Replace (is_multipath=0) and delete.
	e.ok(route(true, false, 0, "10.8.0.0/24", viaPath(1, "192.168.16.9"), viaPath(1, "192.168.16.10")))
	if p := apiRoutes(e, 0)["10.8.0.0/24"]; len(p) != 2 {
		t.Errorf("replaced route has %d paths", len(p))
	}
	e.ok(route(false, false, 0, "10.8.0.0/24"))
	if _, ok := apiRoutes(e, 0)["10.8.0.0/24"]; ok {
		t.Error("route not deleted")
	}

	// ip_route_dump shows what VPP shows: special, connected and local
	// entries next to the API routes.
	all := map[string]fib_types.FibPathType{}
	for _, d := range dump[ip.IPRouteDetails](t, e.ch, &ip.IPRouteDump{Table: ip.IPTable{TableID: 0}}) {
		all[d.Route.Prefix.String()] = d.Route.Paths[0].Type
	}
	for p, typ := range map[string]fib_types.FibPathType{
		"0.0.0.0/0": fib_types.FIB_API_PATH_TYPE_DROP, "224.0.0.0/4": fib_types.FIB_API_PATH_TYPE_DROP,
		"192.168.16.0/24": fib_types.FIB_API_PATH_TYPE_NORMAL, "192.168.16.1/32": fib_types.FIB_API_PATH_TYPE_LOCAL,
		"192.168.16.255/32": fib_types.FIB_API_PATH_TYPE_DROP, "10.2.0.0/16": fib_types.FIB_API_PATH_TYPE_NORMAL,
	} {
		if got, ok := all[p]; !ok || got != typ {
			t.Errorf("ip_route_dump: %s type %v (present %v)", p, got, ok)
		}
	}
	// A default route from the API overrides the default drop route.
	e.ok(route(true, false, 0, "0.0.0.0/0", viaPath(1, "192.168.16.254")))
	if p := apiRoutes(e, 0)["0.0.0.0/0"]; len(p) != 1 {
		t.Errorf("default route not from the API: %v", p)
	}
	if n := len(dump[ip.IPRouteDetails](t, e.ch, &ip.IPRouteDump{Table: ip.IPTable{TableID: 99}})); n != 0 {
		t.Errorf("dump of a missing table returned %d", n)
	}
	v2 := &ip.IPRouteAddDelV2Reply{}
	e.ok(&ip.IPRouteAddDelV2{IsAdd: true, Route: ip.IPRouteV2{TableID: 0, Prefix: pfx("10.10.0.0/16"), NPaths: 1,
		Paths: []fib_types.FibPath{viaPath(1, "192.168.16.2")}}}, v2)
	routes := e.sim.Routes(0, false)
	if k := slices.IndexFunc(routes, func(r Route) bool { return r.Prefix.String() == "10.10.0.0/16" }); k < 0 ||
		routes[k].Source != "api" || routes[k].Paths[0].NextHop != netip.MustParseAddr("192.168.16.2") {
		t.Errorf("Routes(): %+v", routes)
	}
}

func TestNeighbors(t *testing.T) {
	e := newEnv(t)
	if rv := e.addAddr(1, "192.168.16.1/24"); rv != 0 {
		t.Fatal(rv)
	}
	nb := func(isAdd bool, sw uint32, ipaddr string, flags ip_neighbor.IPNeighborFlags) *ip_neighbor.IPNeighborAddDel {
		return &ip_neighbor.IPNeighborAddDel{IsAdd: isAdd, Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: ifIdx(sw), Flags: flags, MacAddress: mac("02:00:00:00:00:aa"), IPAddress: addr(ipaddr)}}
	}
	e.ok(nb(true, 1, "192.168.16.2", ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC))
	e.ok(nb(true, 1, "192.168.16.3", ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC|ip_neighbor.IP_API_NEIGHBOR_FLAG_NO_FIB_ENTRY))
	e.ok(nb(true, 2, "fd00::2", ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC))
	e.ok(nb(true, 1, "192.168.16.2", ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC)) // update
	e.expect(retvalInvalidSwIfIndex, nb(true, 9, "192.168.16.4", 0))
	e.expect(retvalNoSuchEntry, nb(false, 1, "192.168.16.99", 0))

	v4 := dump[ip_neighbor.IPNeighborDetails](t, e.ch, &ip_neighbor.IPNeighborDump{SwIfIndex: allIfaces, Af: ip_types.ADDRESS_IP4})
	if len(v4) != 2 || v4[0].Neighbor.IPAddress.String() != "192.168.16.2" {
		t.Errorf("ipv4 neighbors %+v", v4)
	}
	v6 := dump[ip_neighbor.IPNeighborDetails](t, e.ch, &ip_neighbor.IPNeighborDump{SwIfIndex: 2, Af: ip_types.ADDRESS_IP6})
	if len(v6) != 1 {
		t.Errorf("ipv6 neighbors on 2: %+v", v6)
	}
	// The neighbor gets an adjacency FIB entry unless NO_FIB_ENTRY is set.
	routes := map[string]string{}
	for _, r := range e.sim.Routes(0, false) {
		routes[r.Prefix.String()] = r.Source
	}
	if routes["192.168.16.2/32"] != "adjacency" || routes["192.168.16.3/32"] != "" {
		t.Errorf("adjacency entries: %v", routes)
	}
	e.ok(nb(false, 1, "192.168.16.2", 0))
	if n := len(e.sim.Neighbors()); n != 2 {
		t.Errorf("%d neighbors after delete", n)
	}

	e.ok(&ip_neighbor.IPNeighborConfig{Af: ip_types.ADDRESS_IP4, MaxNumber: 100, MaxAge: 30, Recycle: true})
	cfg := &ip_neighbor.IPNeighborConfigGetReply{}
	e.ok(&ip_neighbor.IPNeighborConfigGet{Af: ip_types.ADDRESS_IP4}, cfg)
	if cfg.MaxNumber != 100 || cfg.MaxAge != 30 || !cfg.Recycle {
		t.Errorf("neighbor config %+v", cfg)
	}
	e.expect(retvalInvalidValue, &ip_neighbor.IPNeighborConfig{Af: 7})
}

func ifIdx(sw uint32) interface_types.InterfaceIndex { return interface_types.InterfaceIndex(sw) }

func TestProxyARP(t *testing.T) {
	e := newEnv(t)
	rng := func(isAdd bool, vrf uint32, lo, hi string) *arp.ProxyArpAddDel {
		return &arp.ProxyArpAddDel{IsAdd: isAdd, Proxy: arp.ProxyArp{TableID: vrf, Low: ip4(lo), Hi: ip4(hi)}}
	}
	e.ok(rng(true, 0, "10.1.1.1", "10.1.1.254"))
	e.ok(rng(true, 0, "10.1.1.1", "10.1.1.254")) // same range again: accepted
	e.expect(retvalNoSuchFIB, rng(true, 5, "10.1.1.1", "10.1.1.254"))
	e.expect(retvalNoSuchEntry, rng(false, 0, "10.2.2.1", "10.2.2.2"))
	if got := dump[arp.ProxyArpDetails](t, e.ch, &arp.ProxyArpDump{}); len(got) != 1 || got[0].Proxy.Hi.String() != "10.1.1.254" {
		t.Errorf("proxy_arp_dump %+v", got)
	}
	e.ok(rng(false, 0, "10.1.1.1", "10.1.1.254"))
	e.ok(&arp.ProxyArpIntfcEnableDisable{SwIfIndex: 1, Enable: true})
	e.expect(retvalInvalidSwIfIndex, &arp.ProxyArpIntfcEnableDisable{SwIfIndex: 9, Enable: true})
	if got := dump[arp.ProxyArpIntfcDetails](t, e.ch, &arp.ProxyArpIntfcDump{}); len(got) != 1 || got[0].SwIfIndex != 1 {
		t.Errorf("proxy_arp_intfc_dump %+v", got)
	}
	if n := len(e.sim.ProxyARPRanges()); n != 0 {
		t.Errorf("%d ranges left", n)
	}
}

func TestNATCreatesVRFTablesImplicitly(t *testing.T) {
	e := newEnv(t)
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
	e.ok(&nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, LocalIPAddress: ip4("10.1.1.2"),
		ExternalIPAddress: ip4("20.0.0.2"), ExternalSwIfIndex: allIfaces, VrfID: 7})
	if got := tableIDs(e); !slices.Contains(got, "false/7/ipv4-VRF:7") {
		t.Fatalf("NAT did not create VRF 7: %v", got)
	}
	e.ok(&nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: false, Flags: nat_types.NAT_IS_ADDR_ONLY, LocalIPAddress: ip4("10.1.1.2"),
		ExternalIPAddress: ip4("20.0.0.2"), ExternalSwIfIndex: allIfaces, VrfID: 7})
	if got := tableIDs(e); slices.Contains(got, "false/7/ipv4-VRF:7") {
		t.Fatalf("VRF 7 not released with the mapping: %v", got)
	}
}

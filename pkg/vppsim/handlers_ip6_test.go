package vppsim

import (
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_neighbor"
)

// The IPv6 API as VPP 25.10 answers it (handlers_ip6.go).

func TestIP6EnableDisableAndLinkLocalAddress(t *testing.T) {
	e := newEnv(t)
	getLL := func() (string, int32) {
		rep := &ip.SwInterfaceIP6GetLinkLocalAddressReply{}
		rv := e.call(&ip.SwInterfaceIP6GetLinkLocalAddress{SwIfIndex: 1}, rep)
		return addr6(rep.IP).String(), rv
	}
	if _, rv := getLL(); rv != retvalIP6NotEnabled {
		t.Fatalf("link-local of an interface without IPv6: retval %d, want IP6_NOT_ENABLED", rv)
	}
	e.expect(retvalIP6NotEnabled, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: false})
	e.expect(retvalInvalidSwIfIndex, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: 99, Enable: true})
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: true})
	// VPP: a second enable answers VALUE_EXIST but takes another lock.
	e.expect(retvalValueExist, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: true})
	if ll, rv := getLL(); rv != 0 || ll != "fe80::a00:27ff:fe5a:1" {
		t.Errorf("link-local %s (retval %d), want the modified EUI-64 of 08:00:27:5a:00:01", ll, rv)
	}
	// Link-local addresses through sw_interface_add_del_address.
	e.expect(retvalAddressLengthMismatch, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: awp("fe80::1/64")})
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: awp("fe80::1/128")})
	if ll, _ := getLL(); ll != "fe80::1" {
		t.Errorf("link-local after adding fe80::1/128: %s", ll)
	}
	if d := dump[ip.IPAddressDetails](t, e.ch, &ip.IPAddressDump{SwIfIndex: 1, IsIPv6: true}); len(d) != 0 {
		t.Errorf("the link-local address is listed among the addresses: %+v", d)
	}
	e.expect(retvalAddressNotDeletable, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: false, Prefix: awp("fe80::1/128")})
	e.expect(retvalAddressNotFoundForInterface, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: false, Prefix: awp("fe80::2/128")})
	// Two disables release the two locks; a third finds IPv6 disabled.
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: false})
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: false})
	e.expect(retvalIP6NotEnabled, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: false})

	// A global address enables IPv6; deleting it disables it again.
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: true, Prefix: awp("2001:db8::1/64")})
	if _, rv := (func() (string, int32) {
		rep := &ip.SwInterfaceIP6GetLinkLocalAddressReply{}
		return "", e.call(&ip.SwInterfaceIP6GetLinkLocalAddress{SwIfIndex: 2}, rep)
	})(); rv != 0 {
		t.Errorf("a global address did not enable IPv6: retval %d", rv)
	}
	// Overlaps in one VRF are DUPLICATE_IF_ADDRESS for IPv6 (IPv4: ADDRESS_IN_USE).
	e.expect(retvalDuplicateIfAddress, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: awp("2001:db8::2/64")})
	e.expect(retvalDuplicateIfAddress, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: true, Prefix: awp("2001:db8::1/64")})
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: true, Prefix: awp("2001:db8::3/64")}) // same prefix, same interface
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: false, Prefix: awp("2001:db8::1/64")})
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: false, Prefix: awp("2001:db8::3/64")})
	e.expect(retvalIP6NotEnabled, &ip.SwInterfaceIP6EnableDisable{SwIfIndex: 2, Enable: false})

	// Router advertisements need IPv6 and valid intervals.
	e.expect(retvalIP6NotEnabled, &ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 2, Suppress: 1})
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 2, Enable: true})
	e.expect(retvalInvalidValue, &ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 2, MaxInterval: 10, MinInterval: 9})
	e.expect(retvalInvalidValue, &ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 2, InitialCount: 4})
	e.ok(&ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 2, Suppress: 1})
}

func TestIP6RoutesNeedAnIPv6Table(t *testing.T) {
	e := newEnv(t)
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 5}}) // IPv4 only
	route := ip.IPRoute{TableID: 5, Prefix: pfx("2001:db8:5::/64"), NPaths: 1, Paths: []fib_types.FibPath{viaPath6(1, "2001:db8::9")}}
	e.expect(retvalNoSuchFIB, &ip.IPRouteAddDel{IsAdd: true, Route: route})
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 5, IsIP6: true}})
	e.ok(&ip.IPRouteAddDel{IsAdd: true, Route: route})
	found := false
	for _, d := range dump[ip.IPRouteDetails](t, e.ch, &ip.IPRouteDump{Table: ip.IPTable{TableID: 5, IsIP6: true}}) {
		found = found || d.Route.Prefix.String() == "2001:db8:5::/64"
	}
	if !found {
		t.Error("the IPv6 route is not in the dump of IPv6 table 5")
	}
	e.expect(retvalNoSuchFIB, &interfaces.SwInterfaceSetTable{SwIfIndex: 1, IsIPv6: true, VrfID: 6})
}

// TestNeighborAddNeverDowngradesAStaticEntry: ip_neighbor_add refuses a
// dynamic update of a static entry with another MAC (-2) and keeps it
// static with the same MAC; a static add upgrades a dynamic entry.
func TestNeighborAddNeverDowngradesAStaticEntry(t *testing.T) {
	e := newEnv(t)
	add := func(ipAddr string, m [6]byte, flags ip_neighbor.IPNeighborFlags) int32 {
		return e.rv(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: 1, Flags: flags, MacAddress: m, IPAddress: addr(ipAddr)}})
	}
	const static = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	if rv := add("2001:db8::5", hostAMAC, static); rv != 0 {
		t.Fatalf("static add: %d", rv)
	}
	if rv := add("2001:db8::5", hostBMAC, 0); rv != -2 {
		t.Errorf("dynamic add over a static entry with another MAC: retval %d, want -2", rv)
	}
	if rv := add("2001:db8::5", hostAMAC, 0); rv != 0 {
		t.Errorf("dynamic add over a static entry with its MAC: retval %d, want 0", rv)
	}
	if n := e.sim.Neighbors(); len(n) != 1 || !n[0].Static || n[0].MAC.String() != macString(hostAMAC) {
		t.Errorf("after dynamic updates: %+v, want the static entry unchanged", n)
	}
	add("2001:db8::6", hostBMAC, 0)
	add("2001:db8::6", hostBMAC, static)
	if n := e.sim.Neighbors(); len(n) != 2 || !n[1].Static {
		t.Errorf("a static add did not make the dynamic entry static: %+v", n)
	}
}

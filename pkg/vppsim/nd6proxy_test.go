package vppsim

import (
	"net/netip"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_neighbor"
)

func nd6Proxy(e *testEnv, sw interface_types.InterfaceIndex, a string, add bool) int32 {
	e.t.Helper()
	return e.rv(&ip6_nd.IP6ndProxyAddDel{SwIfIndex: sw, IsAdd: add, IP: netip.MustParseAddr(a).As16()})
}

// A host on nic1's link solicits an off-link address (a pod's, behind
// nic2): VPP answers only once the address is proxied, with nic1's MAC,
// and traffic to the address goes out the proxy's interface.
func TestIP6NDProxyAnswersSolicitationsForProxiedAddresses(t *testing.T) {
	e, c, _ := l3Env6(t)
	const pod = "2001:db8:5::7" // in no attached prefix
	hostC6, hostCMAC := "2001:db8:1::3", [6]byte{0x52, 0x54, 0, 0, 0, 0xc}
	solicit := func() string {
		return traceOf(e, func() {
			e.inject(nic1, eth6(solicitedMAC(pod), hostCMAC, ip6Pkt(hostC6, solicitedNode(pod), protoICMP6, 255, nsL4(pod, &hostCMAC))))
		})
	}
	tr := solicit()
	none(t, c)
	contains(t, tr, "neighbor solicitations for unknown targets")

	if rv := nd6Proxy(e, 2, pod, true); rv != 0 {
		t.Fatalf("ip6nd_proxy_add_del add: retval %d", rv)
	}
	tr = solicit()
	na := one6(t, c, nic1)
	if na.icmpType != icmp6NeighborAdvert || na.target.String() != pod || na.src.String() != pod || na.dst.String() != hostC6 ||
		na.srcMAC != nic1MAC || na.dstMAC != hostCMAC || na.optType != icmp6OptTgtLinkLayer || na.optMAC != nic1MAC || !na.csumOK {
		t.Fatalf("NA %+v, want %s is-at %s to %s\n%s", na, pod, macString(nic1MAC), hostC6, tr)
	}
	// The /128 via nic2 to the address itself: a packet to the pod makes
	// VPP solicit it on nic2.
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, pod, protoUDP, 64, udpL4(1000, 53, "q"))))
	if ns := one6(t, c, nic2); ns.icmpType != icmp6NeighborSolicit || ns.target.String() != pod {
		t.Fatalf("packet to the proxied address: %+v on nic2, want an NS for it", ns)
	}
	e.neighbor(2, pod, hostBMAC)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, pod, protoUDP, 64, udpL4(1000, 53, "q"))))
	if r := one6(t, c, nic2); r.dst.String() != pod || r.dstMAC != hostBMAC {
		t.Fatalf("packet to the resolved proxied address: %+v, want it on nic2 to %s", r, macString(hostBMAC))
	}
	// Deleting it stops the answers and flushes its neighbour on nic2.
	if rv := nd6Proxy(e, 2, pod, false); rv != 0 {
		t.Fatalf("ip6nd_proxy_add_del delete: retval %d", rv)
	}
	solicit()
	none(t, c)
	for _, n := range dump[ip_neighbor.IPNeighborDetails](t, e.ch, &ip_neighbor.IPNeighborDump{SwIfIndex: 2, Af: 1}) {
		if n.Neighbor.IPAddress.String() == pod {
			t.Fatalf("neighbour %s on nic2 survived the proxy delete", pod)
		}
	}
}

func TestIP6NDProxyAPI(t *testing.T) {
	e, _, _ := l3Env6(t)
	if rv := nd6Proxy(e, 99, "2001:db8:5::7", true); rv != retvalInvalidSwIfIndex {
		t.Fatalf("unknown interface: retval %d, want %d", rv, retvalInvalidSwIfIndex)
	}
	if rv := nd6Proxy(e, 2, "2001:db8:5::8", false); rv != 0 {
		t.Fatalf("deleting an absent proxy: retval %d, want 0 (fib_table_entry_path_remove allows it)", rv)
	}
	for _, a := range []string{"2001:db8:5::9", "2001:db8:5::7", "2001:db8:5::7"} {
		if rv := nd6Proxy(e, 2, a, true); rv != 0 {
			t.Fatalf("add %s: retval %d", a, rv)
		}
	}
	ds := dump[ip6_nd.IP6ndProxyDetails](t, e.ch, &ip6_nd.IP6ndProxyDump{})
	if len(ds) != 2 || netip.AddrFrom16(ds[0].IP).String() != "2001:db8:5::7" || ds[0].SwIfIndex != 2 ||
		netip.AddrFrom16(ds[1].IP).String() != "2001:db8:5::9" {
		t.Fatalf("ip6nd_proxy_dump %+v, want ::7 and ::9 on nic2, sorted, the repeated add once", ds)
	}
	var found bool
	for _, d := range dump[ip.IPRouteV2Details](t, e.ch, &ip.IPRouteV2Dump{Table: ip.IPTable{IsIP6: true}, Src: fibSrcIP6NDProxy}) {
		r := d.Route
		p := r.Paths[0]
		if r.Prefix.String() == "2001:db8:5::7/128" && len(r.Paths) == 1 && p.SwIfIndex == 2 &&
			p.Type == fib_types.FIB_API_PATH_TYPE_NORMAL && p.Nh.Address.GetIP6().String() == "2001:db8:5::7" {
			found = true
		}
	}
	if !found {
		t.Fatal("no IP6_ND_PROXY-sourced 2001:db8:5::7/128 via nic2 in the IPv6 FIB dump")
	}
	// One delete removes the path the two adds made.
	nd6Proxy(e, 2, "2001:db8:5::7", false)
	if ds := dump[ip6_nd.IP6ndProxyDetails](t, e.ch, &ip6_nd.IP6ndProxyDump{}); len(ds) != 1 {
		t.Fatalf("after the delete: %+v, want only ::9", ds)
	}
}

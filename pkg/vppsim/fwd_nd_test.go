package vppsim

import (
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// Neighbour discovery, IPv6 ACLs and NAT44's absence on IPv6 arcs, by
// traffic (docs/dev-guide/VPP-FORWARDING.md §11.6-11.9).

func TestIP6NeighbourSolicitationAnswers(t *testing.T) {
	e, c, clk := l3Env6(t)
	lo := e.loopback()
	e.addAddr(lo, "2001:db8:9::1/128")
	e.up(lo)
	hostC6, hostCMAC := "2001:db8:1::3", [6]byte{0x52, 0x54, 0, 0, 0, 0xc}
	ns := func(src, dst, target string, hop uint8, sll *[6]byte) []byte {
		return eth6(solicitedMAC(target), hostCMAC, ip6Pkt(src, dst, protoICMP6, hop, nsL4(target, sll)))
	}
	tests := []struct {
		name    string
		frame   []byte
		drop    string // node: reason
		naDst   string
		naOpt   bool
		learned bool
	}{
		{name: "NS for the interface's address, with a source link-layer option", frame: ns(hostC6, solicitedNode(nic1G6), nic1G6, 255, &hostCMAC),
			naDst: hostC6, naOpt: true, learned: true},
		{name: "NS without options gets an NA without options, nothing learned", frame: ns(hostC6, solicitedNode(nic1G6), nic1G6, 255, nil),
			naDst: hostC6},
		{name: "DAD probe from :: is answered to all nodes", frame: ns("::", solicitedNode(nic1G6), nic1G6, 255, nil), naDst: "ff02::1"},
		{name: "NS for the link-local address", frame: ns("fe80::c", solicitedNode(eui64(nic1MAC)), eui64(nic1MAC), 255, &hostCMAC),
			naDst: "fe80::c", naOpt: true, learned: true},
		{name: "NS for another interface's address in the VRF is answered (derived)", frame: ns(hostC6, solicitedNode("2001:db8:9::1"), "2001:db8:9::1", 255, &hostCMAC),
			naDst: hostC6, naOpt: true, learned: true},
		{name: "NS for an address not ours", frame: ns(hostC6, solicitedNode("2001:db8:1::99"), "2001:db8:1::99", 255, &hostCMAC),
			drop: "icmp6-neighbor-solicitation: neighbor solicitations for unknown targets", learned: true},
		{name: "NS from a source not on link", frame: ns("2001:db8:2::7", solicitedNode(nic1G6), nic1G6, 255, &hostCMAC),
			drop: "icmp6-neighbor-solicitation: neighbor solicitations from source not on link"},
		{name: "NS with hop limit 254", frame: ns(hostC6, solicitedNode(nic1G6), nic1G6, 254, &hostCMAC),
			drop: "ip6-icmp-input: hop_limit != 255"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.reset()
			for _, n := range e.sim.Neighbors() {
				if !n.Static {
					e.ok(&ip_neighbor.IPNeighborAddDel{IsAdd: false, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: interface_types.InterfaceIndex(n.SwIfIndex), IPAddress: addrToAPI(n.IP)}})
				}
			}
			clk.Step(time.Second)
			tr := traceOf(e, func() { e.inject(nic1, tc.frame) })
			learned := false
			for _, n := range e.sim.Neighbors() {
				learned = learned || (!n.Static && n.MAC.String() == macString(hostCMAC))
			}
			if learned != tc.learned {
				t.Errorf("learned %v, want %v: %+v", learned, tc.learned, e.sim.Neighbors())
			}
			if tc.drop != "" {
				none(t, c)
				contains(t, tr, tc.drop)
				return
			}
			r := one6(t, c, nic1)
			target := decode6(t, tc.frame).target
			if r.icmpType != icmp6NeighborAdvert || r.target != target || r.src != target || r.dst.String() != tc.naDst || r.hop != 255 ||
				r.dstMAC != hostCMAC || r.srcMAC != nic1MAC || r.l4[4] != icmp6NAFlagSolicited|icmp6NAFlagOverride || !r.csumOK {
				t.Fatalf("NA %v target %s flags %#x (checksum ok %v)", r, r.target, r.l4[4], r.csumOK)
			}
			if tc.naOpt != (r.optType == icmp6OptTgtLinkLayer && r.optMAC == nic1MAC) || (!tc.naOpt && len(r.l4) != icmp6NSNALen) {
				t.Errorf("NA option %d %s, length %d; want a target link-layer option: %v", r.optType, macString(r.optMAC), len(r.l4), tc.naOpt)
			}
		})
	}
	// No router advertisements unless configured: RSs are dropped and
	// nothing is ever sent unsolicited.
	c.reset()
	tr := traceOf(e, func() {
		e.inject(nic1, eth6([6]byte{0x33, 0x33, 0, 0, 0, 2}, hostCMAC, ip6Pkt("fe80::c", "ff02::2", protoICMP6, 255, []byte{icmp6RouterSolicit, 0, 0, 0, 0, 0, 0, 0})))
	})
	none(t, c)
	contains(t, tr, "icmp6-router-solicitation", "drop: neighbor discovery not configured")
	clk.Step(time.Hour)
	none(t, c)
	// Once RAs are on, NAs carry the Router flag.
	e.ok(&ip6_nd.SwInterfaceIP6ndRaConfig{SwIfIndex: 1})
	e.inject(nic1, ns(hostC6, solicitedNode(nic1G6), nic1G6, 255, &hostCMAC))
	if r := one6(t, c, nic1); r.l4[4]&icmp6NAFlagRouter == 0 {
		t.Errorf("NA flags %#x without Router while RAs are on", r.l4[4])
	}
}

func TestIP6NeighbourAdvertisementLearning(t *testing.T) {
	e, c, _ := l3Env6(t)
	hostC6, hostCMAC := "2001:db8:1::3", [6]byte{0x52, 0x54, 0, 0, 0, 0xc}
	na := func(target string, m [6]byte) []byte {
		return eth6(nic1MAC, m, ip6Pkt(target, nic1G6, protoICMP6, 255, naL4(target, &m)))
	}
	// Unsolicited NAs create entries.
	tr := traceOf(e, func() { e.inject(nic1, na(hostC6, hostCMAC)) })
	none(t, c)
	contains(t, tr, "icmp6-neighbor-advertisement", "learned "+hostC6, "drop: neighbor advertisements received")
	found := false
	for _, n := range e.sim.Neighbors() {
		found = found || (n.IP.String() == hostC6 && n.MAC.String() == macString(hostCMAC) && !n.Static)
	}
	if !found {
		t.Fatalf("the NA was not learned: %+v", e.sim.Neighbors())
	}
	// A static entry keeps its MAC.
	e.inject(nic1, na(hostA6, hostCMAC))
	for _, n := range e.sim.Neighbors() {
		if n.IP.String() == hostA6 && n.MAC.String() != macString(hostAMAC) {
			t.Errorf("an NA changed the static neighbour %s to %s", hostA6, n.MAC)
		}
	}
	// Learned, the neighbour forwards.
	e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt(hostB6, hostC6, protoUDP, 64, udpL4(1, 2, "x"))))
	if r := one6(t, c, nic1); r.dstMAC != hostCMAC || r.dst.String() != hostC6 {
		t.Errorf("to the learned neighbour: %v", r)
	}
}

// dualEnv is l3Env6 with IPv4 addresses too (10.0.0.1/24, 10.0.1.1/24)
// and host B's IPv6 address a static neighbour.
func dualEnv(t *testing.T) (*testEnv, *capture) {
	e, c, _ := l3Env6(t)
	e.neighbor(2, hostB6, hostBMAC)
	e.addAddr(1, "10.0.0.1/24")
	e.addAddr(2, "10.0.1.1/24")
	return e, c
}

func TestIP6ACLFiltersOnlyIPv6WithIPv6Rules(t *testing.T) {
	e, c := dualEnv(t)
	e.neighbor(2, "10.0.1.2", hostBMAC)
	e.neighbor(1, "10.0.0.2", hostAMAC)
	v6, _ := e.addACL(noIndex, "v6", rule(aclDeny, "::/0", hostB6+"/128", protoTCP, 22), rule(aclPermit, "2001:db8::/32", "::/0", 0, 0))
	if rv := e.setACLs(1, []uint32{v6}); rv != 0 {
		t.Fatalf("set ACLs: %d", rv)
	}
	udp6 := eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, hostB6, protoUDP, 64, udpL4(1, 2, "x")))
	e.inject(nic1, udp6)
	one6(t, c, nic2)
	tr := traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, hostB6, protoTCP, 64, tcpL4(1000, 22, tcpSYN))))
	})
	none(t, c)
	contains(t, tr, "acl-plugin-in-ip6-fa", "drop: acl 0 (v6) rule 0: deny")
	// IPv4 meets only IPv6 rules: no rule matches.
	tr = traceOf(e, func() {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoUDP, 64, udpL4(1, 2, "x"))))
	})
	none(t, c)
	contains(t, tr, "acl-plugin-in-ip4-fa", "drop: no ACL rule matched")
	// And IPv6 meets only IPv4 rules on output: nothing matches either.
	v4, _ := e.addACL(noIndex, "v4", rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	e.setACLs(1, nil)
	e.setACLs(2, nil, v4)
	tr = traceOf(e, func() { e.inject(nic1, udp6) })
	none(t, c)
	contains(t, tr, "acl-plugin-out-ip6-fa", "drop: no ACL rule matched")
	// The solicitation VPP sends goes through the output ACL too
	// (ip6-rewrite-mcast runs the adjacency's output features, adj.c).
	tr = traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, "2001:db8:2::9", protoUDP, 64, udpL4(1, 2, "x"))))
	})
	none(t, c)
	contains(t, tr, "ip6-glean", "acl-plugin-out-ip6-fa")
	// ICMPv6 rules match type and code in the port fields.
	nd, _ := e.addACL(noIndex, "nd", acl_types.ACLRule{IsPermit: aclPermit, SrcPrefix: pfx("::/0"), DstPrefix: pfx("::/0"), Proto: ip_types.IP_API_PROTO_ICMP6,
		SrcportOrIcmptypeFirst: icmp6NeighborSolicit, SrcportOrIcmptypeLast: icmp6NeighborAdvert, DstportOrIcmpcodeLast: 255})
	e.setACLs(2, nil, v4, nd)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, "2001:db8:2::10", protoUDP, 64, udpL4(1, 2, "x"))))
	if r := one6(t, c, nic2); r.icmpType != icmp6NeighborSolicit {
		t.Errorf("with ND permitted out: %v", r)
	}
}

func TestIP6PassesNAT44Untouched(t *testing.T) {
	e, c := dualEnv(t)
	enableNAT(e)
	e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 1})
	e.ok(&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 2})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4("10.0.1.1"), LastIPAddress: ip4("10.0.1.1"), VrfID: noIndex, IsAdd: true})
	tr := traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, hostB6, protoTCP, 64, tcpL4(1000, 80, tcpACK))))
	})
	r := one6(t, c, nic2)
	if r.src.String() != hostA6 || r.sport != 1000 || r.dst.String() != hostB6 || r.dport != 80 || !r.csumOK {
		t.Errorf("IPv6 through NAT44 interfaces: %v ports %d -> %d", r, r.sport, r.dport)
	}
	if len(e.sim.Sessions()) != 0 {
		t.Errorf("NAT44 sessions for IPv6: %+v", e.sim.Sessions())
	}
	if strings.Contains(tr, "nat44") {
		t.Errorf("a NAT44 node in the trace of an IPv6 packet:\n%s", tr)
	}
}

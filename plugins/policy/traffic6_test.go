package policy

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// The traffic model made dual-stack: every pod also has an IPv6 address in
// this node's IPv6 pod subnet fd00:10:1:1::/64 (the last byte of its IPv4
// address), its TAP is IPv6-enabled with a /128 route; the gateway loopback
// holds fd00:10:1:1::1/64. The pod named noNeighbour gets no static IPv6
// neighbour: VPP must resolve it by neighbour discovery.

// newDualTrafficEnv is newTrafficEnv with IPv6 on every pod and the plugin
// of a dual-stack node.
func newDualTrafficEnv(t *testing.T, noNeighbour *podmodel.ID) *trafficEnv {
	t.Helper()
	e := newTrafficEnv(t)
	var lo interface_types.InterfaceIndex
	for _, itf := range e.sim.Interfaces() {
		if itf.Name == "loop0" {
			lo = interface_types.InterfaceIndex(itf.SwIfIndex)
		}
	}
	gw, _ := ip_types.ParseAddressWithPrefix("fd00:10:1:1::1/64")
	e.call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: lo, IsAdd: true, Prefix: gw}, &interfaces.SwInterfaceAddDelAddressReply{})
	for _, p := range e.pods {
		a16 := netip.MustParseAddr("fd00:10:1:1::").As16()
		a16[15] = p.ip.As4()[3]
		p.ip6 = netip.AddrFrom16(a16)
		sw := interface_types.InterfaceIndex(p.sw)
		e.call(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: sw, Enable: true}, &ip.SwInterfaceIP6EnableDisableReply{})
		addr := ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(p.ip6.As16())}
		if noNeighbour == nil || *noNeighbour != p.id {
			e.call(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: sw,
				Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: p.mac, IPAddress: addr}}, &ip_neighbor.IPNeighborAddDelReply{})
		}
		e.call(&ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: ip_types.Prefix{Address: addr, Len: 128}, NPaths: 1,
			Paths: []fib_types.FibPath{{SwIfIndex: p.sw, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP6,
				Nh: fib_types.FibPathNh{Address: addr.Un}}}}}, &ip.IPRouteAddDelReply{})
	}
	e.plugin = NewPlugin(Deps{Log: tQuiet(), ContivConf: trafficConf{},
		IPAM:  trafficIPAM{fakeIPAM{pods: map[podmodel.ID]string{}, dual: true}},
		IPNet: trafficIPNet{env: e}, PodManager: fakePods{pods: podmanager.LocalPods{}}})
	if err := e.plugin.Init(); err != nil {
		t.Fatal(err)
	}
	return e
}

// frame6 builds an Ethernet/IPv6 frame around an L4 payload of protocol
// next, with its checksum (at csumAt of the payload) computed.
func frame6(dstMAC, srcMAC [6]byte, src, dst netip.Addr, next, hopLimit uint8, l4 []byte, csumAt int) []byte {
	b := make([]byte, 14+40+len(l4))
	copy(b[0:6], dstMAC[:])
	copy(b[6:12], srcMAC[:])
	binary.BigEndian.PutUint16(b[12:14], 0x86dd)
	h := b[14:54]
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:6], uint16(len(l4)))
	h[6], h[7] = next, hopLimit
	s16, d16 := src.As16(), dst.As16()
	copy(h[8:24], s16[:])
	copy(h[24:40], d16[:])
	payload := b[54:]
	copy(payload, l4)
	// the checksum over the pseudo-header (addresses, length, next header)
	// and the payload
	var sum uint32
	add := func(p []byte) {
		for i := 0; i+1 < len(p); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(p[i : i+2]))
		}
		if len(p)%2 == 1 {
			sum += uint32(p[len(p)-1]) << 8
		}
	}
	add(h[8:40])
	sum += uint32(len(l4)) + uint32(next)
	add(payload)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(payload[csumAt:csumAt+2], ^uint16(sum))
	return b
}

// l4Frame6 builds a TCP (or UDP) frame over IPv6.
func l4Frame6(dstMAC, srcMAC [6]byte, src, dst netip.Addr, tcp bool, sport, dport uint16, flags uint8) []byte {
	if !tcp {
		l4 := make([]byte, 8)
		binary.BigEndian.PutUint16(l4[0:2], sport)
		binary.BigEndian.PutUint16(l4[2:4], dport)
		binary.BigEndian.PutUint16(l4[4:6], 8)
		return frame6(dstMAC, srcMAC, src, dst, 17, 64, l4, 6)
	}
	l4 := make([]byte, 20)
	binary.BigEndian.PutUint16(l4[0:2], sport)
	binary.BigEndian.PutUint16(l4[2:4], dport)
	l4[12], l4[13] = 5<<4, flags
	binary.BigEndian.PutUint16(l4[14:16], 65535)
	return frame6(dstMAC, srcMAC, src, dst, 6, 64, l4, 16)
}

// parsed6 is what a pod's stack reads of an IPv6 frame.
type parsed6 struct {
	srcMAC       [6]byte
	src, dst     netip.Addr
	next         uint8
	sport, dport uint16 // TCP/UDP ports; ICMPv6: type and code in sport
	flags        uint8
	target       netip.Addr // of a neighbour solicitation
}

func parseFrame6(b []byte) (parsed6, bool) {
	if len(b) < 54 || binary.BigEndian.Uint16(b[12:14]) != 0x86dd {
		return parsed6{}, false
	}
	h := b[14:]
	p := parsed6{src: netip.AddrFrom16([16]byte(h[8:24])), dst: netip.AddrFrom16([16]byte(h[24:40])), next: h[6]}
	copy(p.srcMAC[:], b[6:12])
	l4 := h[40:]
	switch {
	case p.next == 6 && len(l4) >= 20:
		p.flags = l4[13]
	case p.next == 17 && len(l4) >= 8:
	case p.next == 58 && len(l4) >= 4:
		p.sport = uint16(l4[0])
		if l4[0] == 135 && len(l4) >= 24 {
			p.target = netip.AddrFrom16([16]byte(l4[8:24]))
		}
		return p, true
	default:
		return parsed6{}, false
	}
	p.sport, p.dport = binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])
	return p, true
}

// parseL4Frame6 reads a TCP or UDP frame over IPv6 as parse does over IPv4.
func parseL4Frame6(b []byte) (parsed, bool) {
	p, ok := parseFrame6(b)
	if !ok || (p.next != 6 && p.next != 17) {
		return parsed{}, false
	}
	return parsed{src: p.src, dst: p.dst, tcp: p.next == 6, sport: p.sport, dport: p.dport, flags: p.flags}, true
}

// probe6 is probe over IPv6.
func (e *trafficEnv) probe6(src, dst *tPod, tcp bool, port uint16) bool {
	return e.probeFamily(true, src, dst, tcp, port)
}

// pod returns the pod ns/name of the model.
func (e *trafficEnv) pod(ns, name string) *tPod {
	for _, p := range e.pods {
		if is(p.id, ns, name) {
			return p
		}
	}
	e.t.Fatalf("no pod %s/%s", ns, name)
	return nil
}

// TestTrafficIPv6FollowsThePolicies: on a dual-stack node every policy holds
// over IPv6 with the verdicts it has over IPv4: a peer pod selected by labels
// is reached on both its addresses, an ipBlock of either family selects the
// addresses of its family (minus its exceptions), egress is restricted
// towards local pods per family, and the pods no policy selects talk freely
// over IPv6 too.
func TestTrafficIPv6FollowsThePolicies(t *testing.T) {
	e := newDualTrafficEnv(t, nil)
	xa, xb, xc, ya := e.pod("x", "a"), e.pod("x", "b"), e.pod("x", "c"), e.pod("y", "a")
	type probe struct {
		src, dst *tPod
		tcp      bool
		port     uint16
		want     bool
	}
	check := func(what string, probes ...probe) {
		t.Helper()
		for _, p := range probes {
			if got := e.probe(p.src, p.dst, p.tcp, p.port); got != p.want {
				t.Errorf("%s: IPv4 %s -> %s %v:%d reachable = %v, want %v", what, p.src.id, p.dst.id, p.tcp, p.port, got, p.want)
			}
			if got := e.probe6(p.src, p.dst, p.tcp, p.port); got != p.want {
				t.Errorf("%s: IPv6 %s -> %s %v:%d reachable = %v, want %v", what, p.src.id, p.dst.id, p.tcp, p.port, got, p.want)
			}
		}
	}
	e.resync()
	check("no policy", probe{xb, xa, true, 80, true}, probe{xa, xb, false, 81, true})

	e.resync(&pm.Policy{Namespace: "x", Name: "a", Pods: tsel("pod", "a"), PolicyType: pm.Policy_INGRESS_AND_EGRESS,
		IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{tport(true, 80)}, From: []*pm.Policy_Peer{{Pods: tsel("pod", "b")}}}},
		EgressRule:  []*pm.Policy_EgressRule{{To: []*pm.Policy_Peer{{Pods: tsel("pod", "c")}}}}})
	check("x/a: in from x/b on TCP 80, out to x/c only",
		probe{xb, xa, true, 80, true}, probe{xb, xa, true, 81, false}, probe{xc, xa, true, 80, false},
		probe{xa, xc, true, 81, true}, probe{xa, xb, true, 80, false}, probe{xa, ya, false, 80, false},
		probe{xb, xc, false, 80, true})

	// ipBlocks of both families: y/a's and y/c's addresses of each family are
	// in a block, y/b's excepted (.20-.23: y/a .21, y/b .22, y/c .23).
	e.resync(&pm.Policy{Namespace: "x", Name: "blocks", Pods: tsel("pod", "a"),
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{
			{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "10.1.1.20/30", Except: []string{"10.1.1.22/32"}}},
			{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "fd00:10:1:1::14/126", Except: []string{"fd00:10:1:1::16/128"}}}}}}})
	check("x/a from ipBlocks of both families", probe{ya, xa, true, 80, true}, probe{e.pod("y", "c"), xa, false, 81, true},
		probe{e.pod("y", "b"), xa, true, 80, false}, probe{xb, xa, true, 80, false})

	// An IPv6 block only: the IPv4 addresses of its pods are not in it.
	e.resync(&pm.Policy{Namespace: "x", Name: "v6", Pods: tsel("pod", "a"),
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "fd00:10:1:1::/64"}}}}}})
	if !e.probe6(xb, xa, true, 80) || e.probe(xb, xa, true, 80) {
		t.Errorf("x/a from fd00:10:1:1::/64 only: x/b over IPv6 %v (want true), over IPv4 %v (want false)",
			e.probe6(xb, xa, true, 80), e.probe(xb, xa, true, 80))
	}
}

// TestTrafficIPv6NeighbourDiscoveryReachesAnIsolatedPod: VPP resolves the IPv6
// address of a pod isolated in both directions by neighbour discovery: its
// solicitation passes the pod interface's output ACL, the pod's advertisement
// (unicast to VPP's link-local address) its input ACL, and the allowed
// connection then reaches the pod.
func TestTrafficIPv6NeighbourDiscoveryReachesAnIsolatedPod(t *testing.T) {
	id := podmodel.ID{Namespace: "x", Name: "a"}
	e := newDualTrafficEnv(t, &id)
	xa, xb := e.pod("x", "a"), e.pod("x", "b")
	e.resync(&pm.Policy{Namespace: "x", Name: "a", Pods: tsel("pod", "a"), PolicyType: pm.Policy_INGRESS_AND_EGRESS,
		IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{tport(true, 80)}, From: []*pm.Policy_Peer{{Pods: tsel("pod", "b")}}}},
		EgressRule:  []*pm.Policy_EgressRule{{To: []*pm.Policy_Peer{{Pods: tsel("pod", "c")}}}}})
	e.takeTx()
	if err := e.sim.InjectFrame(xb.vppIf, l4Frame6(xb.mac2, xb.mac, xb.ip6, xa.ip6, true, 30000, 80, synFlag)); err != nil {
		t.Fatal(err)
	}
	var ns *parsed6
	for _, f := range e.takeTx() {
		if p, ok := parseFrame6(f.frame); ok && f.ifName == xa.vppIf && p.next == 58 && p.sport == 135 && p.target == xa.ip6 {
			ns = &p
		}
	}
	if ns == nil {
		t.Fatalf("VPP's neighbour solicitation for %s did not leave x/a's interface (its output ACL dropped it?)", xa.ip6)
	}
	// x/a answers from its link-local address: solicited and override, with its MAC.
	ll := [16]byte{0: 0xfe, 1: 0x80, 8: xa.mac[0] ^ 2, 9: xa.mac[1], 10: xa.mac[2], 11: 0xff, 12: 0xfe, 13: xa.mac[3], 14: xa.mac[4], 15: xa.mac[5]}
	na := make([]byte, 32)
	na[0] = 136
	binary.BigEndian.PutUint32(na[4:8], 0x60000000)
	a16 := xa.ip6.As16()
	copy(na[8:24], a16[:])
	na[24], na[25] = 2, 1
	copy(na[26:32], xa.mac[:])
	if err := e.sim.InjectFrame(xa.vppIf, frame6(ns.srcMAC, xa.mac, netip.AddrFrom16(ll), ns.src, 58, 255, na, 2)); err != nil {
		t.Fatal(err)
	}
	if !e.probe6(xb, xa, true, 80) {
		t.Errorf("x/b -> x/a TCP 80 over IPv6 (allowed) does not pass after neighbour discovery: the advertisement was dropped?")
	}
	if e.probe6(xb, xa, true, 81) {
		t.Error("x/b -> x/a TCP 81 over IPv6 passes: the neighbour discovery permits opened more than ND")
	}
}

// The IPv6 outside: the NIC GbE has fd00:192:168:16::a/112 and the default
// route via the gateway fd00:192:168:16::1 (tGwMAC). NAT44 does not touch
// IPv6: pods leave with their own addresses.
var (
	tNodeIP6  = netip.MustParseAddr("fd00:192:168:16::a")
	tGateway6 = netip.MustParseAddr("fd00:192:168:16::1")
)

func (e *trafficEnv) wireOutside6() {
	addr := func(a netip.Addr) ip_types.Address {
		return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
	}
	nodePfx, _ := ip_types.ParseAddressWithPrefix(tNodeIP6.String() + "/112")
	e.call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: nodePfx}, &interfaces.SwInterfaceAddDelAddressReply{})
	e.call(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: 1,
		Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: tGwMAC, IPAddress: addr(tGateway6)}}, &ip_neighbor.IPNeighborAddDelReply{})
	e.call(&ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: ip_types.Prefix{Address: addr(netip.IPv6Unspecified())}, NPaths: 1,
		Paths: []fib_types.FibPath{{SwIfIndex: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP6, Nh: fib_types.FibPathNh{Address: addr(tGateway6).Un}}}}},
		&ip.IPRouteAddDelReply{})
}

// probeOutside6 is probeOutside over IPv6.
func (e *trafficEnv) probeOutside6(src *tPod, dst netip.Addr, port uint16) bool {
	return e.probeOutsideFamily(true, src, dst, port)
}

// TestTrafficIPv6EgressToOutsideFollowsThePolicy: a pod allowed to reach one
// outside IPv6 address on one port reaches exactly that over IPv6 (the EGRESS
// ACL on its input and GLOBAL on the NIC), the other pods are not
// restricted.
func TestTrafficIPv6EgressToOutsideFollowsThePolicy(t *testing.T) {
	e := newDualTrafficEnv(t, nil)
	e.wireOutside6()
	xa, xb := e.pod("x", "a"), e.pod("x", "b")
	allowed, other := netip.MustParseAddr("2001:db8::8"), netip.MustParseAddr("2001:db8::4")
	check := func(what string, src *tPod, dst netip.Addr, port uint16, want bool) {
		t.Helper()
		if got := e.probeOutside6(src, dst, port); got != want {
			t.Errorf("%s: %s -> [%s]:%d reachable = %v, want %v", what, src.id, dst, port, got, want)
		}
	}
	e.resync()
	check("no policy", xa, other, 80, true)
	e.resync(&pm.Policy{Namespace: "x", Name: "out", Pods: tsel("pod", "a"), PolicyType: pm.Policy_EGRESS,
		EgressRule: []*pm.Policy_EgressRule{{Port: []*pm.Policy_Port{tport(true, 80)},
			To: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "2001:db8::8/128"}}}}}})
	check("allowed destination and port", xa, allowed, 80, true)
	check("other port", xa, allowed, 443, false)
	check("other destination", xa, other, 80, false)
	check("unrestricted pod", xb, other, 443, true)
}

package vppsim

import (
	"fmt"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/tapv2"
)

// The Contiv two-node layout of fwd_contiv_vxlan_test.go made dual-stack
// (issue 28 item 4 as the agent would program it): IPv6 beside IPv4 in
// the pod VRF (pod TAPs unnumbered to the gateway loopback and
// IPv6-enabled, the BVI with an IPv6 address, a static neighbour and the
// route to the peer's IPv6 pod subnet), a second pod TAP on node 1 and a
// host-interconnect TAP in the main VRF whose host is found by ND. The
// IPv6 inner frames cross the same IPv4 VXLAN underlay, and NAT44-ED
// (enabled on every interface here) never touches them.

func vx6Pod(id, n int) string  { return fmt.Sprintf("2001:db8:1:%d::%d", id, n) }
func vx6BVI(id int) string     { return fmt.Sprintf("2001:db8:30::%d", id) }
func vx6HostIf(id int) string  { return fmt.Sprintf("2001:db8:ff:%d::1", id) }
func vx6HostEnd(id int) string { return fmt.Sprintf("2001:db8:ff:%d::2", id) }

var (
	vx6Pod3MAC  = [6]byte{0x02, 0xfe, 0, 0, 1, 3}
	vx6Tap3MAC  = [6]byte{0x02, 0xfe, 0xaa, 0, 1, 3}
	vx6HostMAC  = [6]byte{0x02, 0xfe, 0xbb, 0, 0, 2}
	vx6HostIMAC = [6]byte{0x02, 0xfe, 0xaa, 0, 0, 1}
)

// addIPv6 adds the IPv6 half of node n; tap3 and hostTap are created on node 1 only.
func (n *vxNode) addIPv6(peer *vxNode) (tap3, hostTap interface_types.InterfaceIndex) {
	e := n.testEnv
	const tap = 2
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: vxPodVRF, IsIP6: true}})
	gw := interface_types.InterfaceIndex(3) // the first loopback of newVXNode
	for _, sw := range []interface_types.InterfaceIndex{gw, tap, n.bvi} {
		e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: sw, IsIPv6: true, VrfID: vxPodVRF})
	}
	e.addAddr(gw, vx6Pod(n.id, 1)+"/64")
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: tap, Enable: true})
	e.neighbor(tap, vx6Pod(n.id, 2), n.podMAC)
	e.addRoute(ip.IPRoute{TableID: vxPodVRF, Prefix: pfx(vx6Pod(n.id, 2) + "/128"), Paths: []fib_types.FibPath{viaPath6(tap, vx6Pod(n.id, 2))}})
	e.addAddr(n.bvi, vx6BVI(n.id)+"/64")
	e.neighbor(n.bvi, vx6BVI(peer.id), peer.bviMAC)
	e.addRoute(ip.IPRoute{TableID: vxPodVRF, Prefix: pfx(fmt.Sprintf("2001:db8:1:%d::/64", peer.id)), Paths: []fib_types.FibPath{viaPath6(n.bvi, vx6BVI(peer.id))}})
	if n.id != 1 {
		return 0, 0
	}
	newTap := func(m [6]byte) interface_types.InterfaceIndex {
		rep := &tapv2.TapCreateV3Reply{}
		e.ok(&tapv2.TapCreateV3{ID: noIndex, MacAddress: m}, rep)
		return rep.SwIfIndex
	}
	tap3 = newTap(vx6Tap3MAC)
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap3, IsIPv6: true, VrfID: vxPodVRF})
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap3, VrfID: vxPodVRF})
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: gw, UnnumberedSwIfIndex: tap3, IsAdd: true})
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: tap3, Enable: true})
	e.up(tap3)
	e.neighbor(tap3, vx6Pod(1, 3), vx6Pod3MAC)
	e.addRoute(ip.IPRoute{TableID: vxPodVRF, Prefix: pfx(vx6Pod(1, 3) + "/128"), Paths: []fib_types.FibPath{viaPath6(tap3, vx6Pod(1, 3))}})
	// The host interconnect, main VRF; pods reach it through the pod VRF's
	// default route, the host reaches the pods through the main VRF's
	// route to the pod prefix.
	hostTap = newTap(vx6HostIMAC)
	e.addAddr(hostTap, vx6HostIf(1)+"/64")
	e.up(hostTap)
	e.addRoute(ip.IPRoute{TableID: vxPodVRF, Prefix: pfx("::/0"), Paths: []fib_types.FibPath{lookupPath6(0)}})
	e.addRoute(ip.IPRoute{TableID: 0, Prefix: pfx("2001:db8:1::/48"), Paths: []fib_types.FibPath{lookupPath6(vxPodVRF)}})
	return tap3, hostTap
}

func lookupPath6(vrf uint32) fib_types.FibPath {
	p := lookupPath(vrf)
	p.Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	return p
}

// pump6 carries frames between the NICs' wires until nothing moves and
// returns the IPv6 frames that left the other interfaces, by node and
// interface name.
func (p *vxPair) pump6() map[string][]pkt6Info {
	p.t.Helper()
	got := map[string][]pkt6Info{}
	p.run(func(n *vxNode) bool {
		n.c.mu.Lock()
		names := make([]string, 0, len(n.c.frames))
		for name := range n.c.frames {
			names = append(names, name)
		}
		n.c.mu.Unlock()
		for _, name := range names {
			key := fmt.Sprintf("node%d/%s", n.id, name)
			for _, f := range n.c.take(name) {
				got[key] = append(got[key], decode6(p.t, f))
			}
		}
		return false
	})
	return got
}

func TestContivDualStackIPv6PodTrafficOnOneNodeAcrossVXLANAndToTheHost(t *testing.T) {
	p := newVXPair(t)
	n1, n2 := p.nodes[0], p.nodes[1]
	tap3, hostTap := n1.addIPv6(n2)
	n2.addIPv6(n1)
	tap3Name, hostName := n1.sim.ifaceName(tap3), n1.sim.ifaceName(hostTap)
	fromPod1 := func(dst string, l4 []byte) {
		n1.inject(nic2, eth6(nic2MAC, n1.podMAC, ip6Pkt(vx6Pod(1, 2), dst, protoUDP, 64, l4)))
	}

	// Pod to pod on one node: pod VRF /128 out the other TAP, hop limit - 1.
	fromPod1(vx6Pod(1, 3), udpL4(5000, 53, "same node"))
	got := p.pump6()
	if r := got["node1/"+tap3Name]; len(r) != 1 || r[0].dst.String() != vx6Pod(1, 3) || r[0].hop != 63 ||
		r[0].dstMAC != vx6Pod3MAC || r[0].srcMAC != vx6Tap3MAC || !r[0].csumOK {
		t.Fatalf("pod to pod on node1: %v", got)
	}

	// Pod to pod across nodes: IPv6 inside the IPv4 VXLAN tunnel, hop
	// limit - 1 per node; NAT44 makes no session for it.
	tr := traceOf(n2.testEnv, func() {
		fromPod1(vx6Pod(2, 2), udpL4(5001, 53, "across"))
		got = p.pump6()
	})
	if r := got["node2/"+nic2]; len(r) != 1 || r[0].src.String() != vx6Pod(1, 2) || r[0].dst.String() != vx6Pod(2, 2) || r[0].hop != 62 ||
		r[0].dstMAC != n2.podMAC || r[0].sport != 5001 || !r[0].csumOK {
		t.Fatalf("pod to pod across VXLAN: %v\nnode2 trace:\n%s", got, tr)
	}
	contains(t, tr, "vxlan4-input", "ip6-input", "ip6-lookup")
	if s := n1.sim.Sessions(); len(s) != 0 {
		t.Errorf("node1 made NAT44 sessions for IPv6: %+v", s)
	}
	// And back: node2's pod answers through the same tunnel.
	n2.inject(nic2, eth6(nic2MAC, n2.podMAC, ip6Pkt(vx6Pod(2, 2), vx6Pod(1, 2), protoUDP, 64, udpL4(53, 5001, "reply"))))
	got = p.pump6()
	if r := got["node1/"+nic2]; len(r) != 1 || r[0].src.String() != vx6Pod(2, 2) || r[0].hop != 62 {
		t.Fatalf("the reply across VXLAN: %v", got)
	}

	// Pod to host: the pod VRF's ::/0 looks up the main VRF; the host end
	// is resolved by ND on the host-interconnect TAP.
	fromPod1(vx6HostEnd(1), udpL4(5002, 53, "to host"))
	got = p.pump6()
	ns := got["node1/"+hostName]
	if len(ns) != 1 || ns[0].icmpType != icmp6NeighborSolicit || ns[0].target.String() != vx6HostEnd(1) || ns[0].srcMAC != vx6HostIMAC {
		t.Fatalf("to the host before ND: %v", got)
	}
	n1.inject(hostName, eth6(vx6HostIMAC, vx6HostMAC, ip6Pkt(vx6HostEnd(1), ns[0].src.String(), protoICMP6, 255, naL4(vx6HostEnd(1), &vx6HostMAC))))
	fromPod1(vx6HostEnd(1), udpL4(5002, 53, "to host"))
	got = p.pump6()
	if r := got["node1/"+hostName]; len(r) != 1 || r[0].dst.String() != vx6HostEnd(1) || r[0].dstMAC != vx6HostMAC || r[0].hop != 63 {
		t.Fatalf("pod to host after ND: %v", got)
	}
	// Host to pod: main VRF -> pod VRF -> the pod's TAP.
	n1.inject(hostName, eth6(vx6HostIMAC, vx6HostMAC, ip6Pkt(vx6HostEnd(1), vx6Pod(1, 2), protoICMP6, 64, icmpEcho(icmp6EchoRequest, 9, 1))))
	got = p.pump6()
	if r := got["node1/"+nic2]; len(r) != 1 || r[0].src.String() != vx6HostEnd(1) || r[0].icmpType != icmp6EchoRequest || r[0].hop != 63 {
		t.Fatalf("host to pod: %v", got)
	}
	// The pod pings its gateway: answered by VPP on the pod's own TAP.
	n1.inject(nic2, eth6(nic2MAC, n1.podMAC, ip6Pkt(vx6Pod(1, 2), vx6Pod(1, 1), protoICMP6, 64, icmpEcho(icmp6EchoRequest, 9, 2))))
	got = p.pump6()
	if r := got["node1/"+nic2]; len(r) != 1 || r[0].icmpType != icmp6EchoReply || r[0].src.String() != vx6Pod(1, 1) || r[0].srcMAC != nic2MAC {
		t.Fatalf("pod pings its gateway: %v", got)
	}
	// The pod resolves its gateway: the TAP, unnumbered to the gateway
	// loopback, answers with its own MAC.
	n1.inject(nic2, eth6(solicitedMAC(vx6Pod(1, 1)), n1.podMAC, ip6Pkt(vx6Pod(1, 2), solicitedNode(vx6Pod(1, 1)), protoICMP6, 255, nsL4(vx6Pod(1, 1), &n1.podMAC))))
	got = p.pump6()
	if r := got["node1/"+nic2]; len(r) != 1 || r[0].icmpType != icmp6NeighborAdvert || r[0].optMAC != nic2MAC || r[0].target.String() != vx6Pod(1, 1) {
		t.Fatalf("pod resolves its gateway: %v", got)
	}
}

// ifaceName is the name of an interface index.
func (s *Sim) ifaceName(idx interface_types.InterfaceIndex) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.ifName(uint32(idx))
}

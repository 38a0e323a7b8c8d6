package vppsim

import (
	"testing"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The flows of docs/dev-guide/VPP-FORWARDING.md §10 on a node laid out as the agent programs it
// (docs/ARCHITECTURE.md §4): pods in VRF 1 behind TAPs unnumbered to the
// pod gateway loopback, the NIC in VRF 0, inter-VRF routes between them,
// NAT44-ED with the pod TAPs inside and outside, the output feature on the
// NIC, LB mappings with locals in the pod VRF and the identity mappings of
// the node IP. NIC2 and NIC3 stand for the TAPs of pod 1 and pod 2.

const nic3 = "GigabitEthernet0/a/0"

var nic3MAC = [6]byte{0x08, 0x00, 0x27, 0x5a, 0, 3}

type contivNode struct {
	*natEnv
}

func newContivNode(t *testing.T) *contivNode {
	clk := testkit.NewClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnvWith(t, func(o *Options) { o.NICs = []string{nic1, nic2, nic3}; o.Clock = clk })
	n := &contivNode{&natEnv{testEnv: e, c: newCapture(e), clk: clk}}
	const podVRF = 1
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: podVRF}})
	gw := e.loopback()
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: gw, VrfID: podVRF})
	e.addAddr(gw, "10.1.1.1/24")
	e.up(gw)
	for k, pod := range []struct {
		ip  string
		mac [6]byte
	}{{pod1IP, pod1MAC}, {pod2IP, pod2MAC}} {
		tap := ifIdx(uint32(2 + k))
		e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap, VrfID: podVRF})
		e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: gw, UnnumberedSwIfIndex: tap, IsAdd: true})
		e.up(tap)
		e.neighbor(tap, pod.ip, pod.mac)
		e.addRoute(ip.IPRoute{TableID: podVRF, Prefix: pfx(pod.ip + "/32"), Paths: []fib_types.FibPath{viaPath(tap, pod.ip)}})
	}
	e.addAddr(1, nodeIP+"/24")
	e.up(1)
	e.neighbor(1, hostAIP, hostAMAC)
	e.addRoute(ip.IPRoute{TableID: 0, Prefix: pfx("0.0.0.0/0"), Paths: []fib_types.FibPath{viaPath(1, hostAIP)}})
	e.addRoute(ip.IPRoute{TableID: podVRF, Prefix: pfx("0.0.0.0/0"), Paths: []fib_types.FibPath{lookupPath(0)}})
	e.addRoute(ip.IPRoute{TableID: 0, Prefix: pfx("10.1.0.0/16"), Paths: []fib_types.FibPath{lookupPath(podVRF)}})

	enableNAT(e)
	e.ok(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	for _, tap := range []uint32{2, 3} {
		e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: ifIdx(tap)})
		e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: ifIdx(tap)})
	}
	e.ok(&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 1})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(nodeIP), LastIPAddress: ip4(nodeIP), VrfID: noIndex, IsAdd: true})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(natLoop), LastIPAddress: ip4(natLoop), VrfID: noIndex, IsAdd: true,
		Flags: nat_types.NAT_IS_TWICE_NAT})
	locals := []nat44_ed.Nat44LbAddrPort{{Addr: ip4(pod1IP), Port: podPort, Probability: 1, VrfID: podVRF},
		{Addr: ip4(pod2IP), Port: podPort, Probability: 1, VrfID: podVRF}}
	e.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(svcIP), ExternalPort: svcPort, Protocol: protoTCP, LocalNum: 2, Locals: locals})
	e.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(nodeIP), ExternalPort: nodePort, Protocol: protoTCP, LocalNum: 2, Locals: locals})
	// The renderer's identity mappings of the node IP.
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4(nodeIP), Protocol: protoUDP, Port: vxlanPort, SwIfIndex: allIfaces, VrfID: 0})
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4(nodeIP), Protocol: protoUDP, SwIfIndex: allIfaces, VrfID: podVRF})
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4(nodeIP), Protocol: protoUDP, SwIfIndex: allIfaces, VrfID: 0})
	return n
}

// podTap returns the interface and the pod's MAC of a pod address.
func podTap(podIP string) (string, [6]byte, [6]byte) {
	if podIP == pod1IP {
		return nic2, nic2MAC, pod1MAC
	}
	return nic3, nic3MAC, pod2MAC
}

func (n *contivNode) fromPodIP(podIP string, pkt []byte) {
	n.t.Helper()
	ifName, vppMAC, podMAC := podTap(podIP)
	n.inject(ifName, ethFrame(vppMAC, podMAC, etherTypeIP4, pkt))
}

func TestContivPodToPodSameNode(t *testing.T) {
	n := newContivNode(t)
	n.fromPodIP(pod1IP, ipPkt(pod1IP, pod2IP, protoTCP, 64, tcpL4(1111, 80, tcpSYN)))
	r := oneFrame(t, n.c, nic3)
	if r.src.String() != pod1IP || r.dst.String() != pod2IP || r.ttl != 63 || r.srcMAC != nic3MAC || r.dstMAC != pod2MAC {
		t.Errorf("pod to pod %v", r)
	}
	if s := n.sim.Sessions(); len(s) != 0 {
		t.Errorf("pod to pod made sessions %+v", s)
	}
}

func TestContivPodToClusterIPInPodVRF(t *testing.T) {
	n := newContivNode(t)
	for port := uint16(40000); port < 40016; port++ {
		n.fromPodIP(pod1IP, ipPkt(pod1IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpSYN)))
		var r pktInfo
		var backendIf string
		if f := n.c.take(nic2); len(f) == 1 {
			r, backendIf = decodeFrame(t, f[0]), nic2
		} else if f := n.c.take(nic3); len(f) == 1 {
			r, backendIf = decodeFrame(t, f[0]), nic3
		} else {
			t.Fatalf("SYN to the ClusterIP went nowhere:\n%s", cli(n.testEnv, "show errors"))
		}
		self := r.dst.String() == pod1IP
		if self != (backendIf == nic2) || r.dport != podPort || (self && r.src.String() != natLoop) || (!self && r.src.String() != pod1IP) {
			t.Fatalf("DNAT %v out of %s", r, backendIf)
		}
		// The backend answers; the client sees the ClusterIP.
		n.fromPodIP(r.dst.String(), ipPkt(r.dst.String(), r.src.String(), protoTCP, 64, tcpL4(podPort, r.sport, tcpSYN|tcpACK)))
		back := oneFrame(t, n.c, nic2)
		if back.src.String() != svcIP || back.sport != svcPort || back.dst.String() != pod1IP || back.dport != port {
			t.Fatalf("reply %v", back)
		}
	}
}

func TestContivPodToOutsideAndNodePort(t *testing.T) {
	n := newContivNode(t)
	// Pod -> outside: pod VRF 0/0 -> main VRF -> NIC, SNAT at the NIC's
	// output feature keeping the port; the reply is looked up in the pod VRF.
	n.fromPodIP(pod2IP, ipPkt(pod2IP, "8.8.8.8", protoUDP, 64, udpL4(3333, 53, "q")))
	r := oneFrame(t, n.c, nic1)
	if r.src.String() != nodeIP || r.sport != 3333 || r.ttl != 63 {
		t.Fatalf("SNAT %v", r)
	}
	n.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("8.8.8.8", nodeIP, protoUDP, 60, udpL4(53, 3333, "a"))))
	if back := oneFrame(t, n.c, nic3); back.dst.String() != pod2IP || back.dport != 3333 || back.dstMAC != pod2MAC {
		t.Errorf("reply %v", back)
	}
	// NodePort: DNAT at the NIC, reply SNATed back to nodeIP:nodePort and
	// let through the NIC's output feature by the identity mapping.
	n.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(hostAIP, nodeIP, protoTCP, 64, tcpL4(41000, nodePort, tcpSYN))))
	var backend string
	if f := n.c.take(nic2); len(f) == 1 {
		backend = decodeFrame(t, f[0]).dst.String()
	} else if f := n.c.take(nic3); len(f) == 1 {
		backend = decodeFrame(t, f[0]).dst.String()
	} else {
		t.Fatalf("NodePort SYN went nowhere:\n%s", cli(n.testEnv, "show errors"))
	}
	before := len(n.sim.Sessions())
	n.fromPodIP(backend, ipPkt(backend, hostAIP, protoTCP, 64, tcpL4(podPort, 41000, tcpSYN|tcpACK)))
	back := oneFrame(t, n.c, nic1)
	if back.src.String() != nodeIP || back.sport != nodePort || back.dst.String() != hostAIP || back.dstMAC != hostAMAC {
		t.Errorf("NodePort reply %v", back)
	}
	if after := len(n.sim.Sessions()); after != before {
		t.Errorf("the NodePort reply made a session at the NIC (%d -> %d)", before, after)
	}
	// Ping of the pod gateway from a pod.
	n.fromPodIP(pod1IP, ipPkt(pod1IP, "10.1.1.1", protoICMP, 64, icmpEcho(icmpEchoRequest, 9, 1)))
	if r := oneFrame(t, n.c, nic2); r.icmpType != icmpEchoReply || r.src.String() != "10.1.1.1" {
		t.Errorf("gateway echo reply %v", r)
	}
}

// extIP is an externalIP / LoadBalancer ingress IP of a Service, routed
// to the node by the external network.
const extIP = "192.168.50.10"

// externalIPNode is a Contiv node with a Service reachable on extIP:80,
// as the renderer maps a ClusterIP: a load-balanced, out2in-only mapping
// whose locals are the pods (pod VRF).
func externalIPNode(t *testing.T) *contivNode {
	n := newContivNode(t)
	locals := []nat44_ed.Nat44LbAddrPort{{Addr: ip4(pod1IP), Port: podPort, Probability: 1, VrfID: 1},
		{Addr: ip4(pod2IP), Port: podPort, Probability: 1, VrfID: 1}}
	n.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(extIP), ExternalPort: svcPort, Protocol: protoTCP, LocalNum: 2, Locals: locals})
	return n
}

// synToExternalIP sends a SYN from host A (outside) to extIP:80 and
// returns the backend it was DNATed to, with the client's address kept.
func (n *contivNode) synToExternalIP(t *testing.T, sport uint16) string {
	t.Helper()
	n.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(hostAIP, extIP, protoTCP, 64, tcpL4(sport, svcPort, tcpSYN))))
	var r pktInfo
	if f := n.c.take(nic2); len(f) == 1 {
		r = decodeFrame(t, f[0])
	} else if f := n.c.take(nic3); len(f) == 1 {
		r = decodeFrame(t, f[0])
	} else {
		t.Fatalf("SYN to the external IP went nowhere:\n%s", cli(n.testEnv, "show errors"))
	}
	if r.src.String() != hostAIP || r.sport != sport || r.dport != podPort {
		t.Fatalf("DNAT %v: want the client's address kept, port %d", r, podPort)
	}
	return r.dst.String()
}

// TestContivExternalIPReplyNeedsIdentityMapping reproduces issue #26 item
// 7: from outside, the SYN to an external IP is DNATed at the NIC (out2in
// of the output feature), but the backend's SYN-ACK, rewritten back to
// extIP:80 by the session, is dropped by the NIC's in2out-output. VPP
// 25.10 does the same (nat44_ed_in2out.c): the fast path looks the packet
// up with the receiving (pod TAP's) FIB, where the session has no flow
// for (extIP:80 -> client); nat44_ed_not_translate_output_feature finds no
// flow (src, dst) in the NIC's FIB and no reverse flow in the pod FIB (the
// session's o2i flow is in the NIC's FIB 0), so slow_path_ed runs: no
// static mapping by local (extIP, 80, pod FIB), and a non-SYN TCP packet
// cannot create a session. The NodePort reply passes only because of
// Contiv's identity mapping of the node IP in the pod VRF. An
// address-only identity mapping of the external IP in the pod VRF lets
// this reply pass the same way, untranslated, the client's address kept;
// but nat44-ed-classify tries address-only mappings first, so the pods'
// own packets to extIP:80 would then be classified in2out (identity) and
// never DNATed, unless extIP is also a NAT pool address (classify sends
// packets to pool addresses out2in before looking at mappings), here of a
// VRF no source uses, so dynamic SNAT never picks it.
func TestContivExternalIPReplyNeedsIdentityMapping(t *testing.T) {
	n := externalIPNode(t)
	backend := n.synToExternalIP(t, 42000)
	n.fromPodIP(backend, ipPkt(backend, hostAIP, protoTCP, 64, tcpL4(podPort, 42000, tcpSYN|tcpACK)))
	none(t, n.c)
	if c := n.sim.ErrorCount("nat44-ed-in2out-output", "TCP non-SYN packet cannot create a session"); c != 1 {
		t.Fatalf("the reply was not dropped at the NIC's output feature (count %d):\n%s", c, cli(n.testEnv, "show errors"))
	}

	// The external IP as an identity in the pod VRF, like the node IP.
	n.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4(extIP), SwIfIndex: allIfaces, VrfID: 1})
	backend = n.synToExternalIP(t, 42001)
	before := len(n.sim.Sessions())
	n.fromPodIP(backend, ipPkt(backend, hostAIP, protoTCP, 64, tcpL4(podPort, 42001, tcpSYN|tcpACK)))
	back := oneFrame(t, n.c, nic1)
	if back.src.String() != extIP || back.sport != svcPort || back.dst.String() != hostAIP || back.dport != 42001 || back.dstMAC != hostAMAC {
		t.Errorf("reply %v, want %s:%d -> %s:42001", back, extIP, svcPort, hostAIP)
	}
	if after := len(n.sim.Sessions()); after != before {
		t.Errorf("the reply made a session at the NIC (%d -> %d)", before, after)
	}
	// The rest of the connection both ways.
	n.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(hostAIP, extIP, protoTCP, 64, tcpL4(42001, svcPort, tcpACK))))
	ifName, _, _ := podTap(backend)
	if r := oneFrame(t, n.c, ifName); r.src.String() != hostAIP || r.dst.String() != backend {
		t.Errorf("ACK %v", r)
	}
	n.fromPodIP(backend, ipPkt(backend, hostAIP, protoTCP, 64, tcpL4(podPort, 42001, tcpACK)))
	if r := oneFrame(t, n.c, nic1); r.src.String() != extIP || r.sport != svcPort {
		t.Errorf("data from the backend %v", r)
	}

	// A pod's SYN to extIP:80 is now classified in2out by the identity
	// and passes untranslated, to VPP itself (NAT makes an identity
	// mapping's address local in the outside interfaces' FIBs), where TCP
	// is dropped: no pod gets it.
	podSYN := func(sport uint16) int {
		n.fromPodIP(pod2IP, ipPkt(pod2IP, extIP, protoTCP, 64, tcpL4(sport, svcPort, tcpSYN)))
		got := len(n.c.take(nic2)) + len(n.c.take(nic3))
		n.c.reset()
		return got
	}
	if got := podSYN(43000); got != 0 {
		t.Fatalf("pod to external IP with only the identity: %d frames to pods, want none (classified in2out)", got)
	}
	// extIP also a pool address (of an otherwise unused VRF): classify
	// sends it out2in again and the LB mapping DNATs it.
	n.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 99}})
	n.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(extIP), LastIPAddress: ip4(extIP), VrfID: 99, IsAdd: true})
	if got := podSYN(43001); got != 1 {
		t.Fatalf("pod to external IP with identity and pool address: %d frames to pods", got)
	}
	// The external path still works, and pods' traffic to the internet
	// is not SNATed to extIP.
	backend = n.synToExternalIP(t, 42002)
	n.fromPodIP(backend, ipPkt(backend, hostAIP, protoTCP, 64, tcpL4(podPort, 42002, tcpSYN|tcpACK)))
	if r := oneFrame(t, n.c, nic1); r.src.String() != extIP {
		t.Errorf("reply with the pool address %v", r)
	}
	n.fromPodIP(pod1IP, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5353, 53, "q")))
	if r := oneFrame(t, n.c, nic1); r.src.String() != nodeIP {
		t.Errorf("pod to internet SNATed to %s, want the node IP", r.src)
	}
}

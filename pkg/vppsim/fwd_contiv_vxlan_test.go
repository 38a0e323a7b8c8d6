package vppsim

import (
	"fmt"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/binapi/vxlan"
)

// Two simulated nodes joined by VXLAN, each laid out as the agent programs it
// (docs/ARCHITECTURE.md §4, docs/dev-guide/SERVICES.md): one pod per node in VRF 1 behind
// a TAP (NIC2 stands for it) unnumbered to the pod gateway loopback, vxlanBVI in VRF 1
// bridged with a tunnel to the peer (split-horizon group 1, static neighbour and L2FIB
// entry of the peer's BVI), NAT44-ED with the pod TAP and the BVI inside and outside, the
// NIC with the output feature, the node IP and the NAT loopback (twice-NAT) in the pool,
// the identity mappings of the node IP, and the same Service on both nodes: a ClusterIP
// load-balanced over both pods (self-twice-NAT), each local in VRF 1. The NICs' wires are
// joined by the test (pump), the pods answer TCP SYNs.

const (
	vxPodVRF   = 1
	vxSvcIP    = "10.96.0.50"
	vxVNI      = 10
	vxNodeMask = "/24"
)

// vxNode is one node of the pair.
type vxNode struct {
	*testEnv
	c                *capture
	id               int
	nodeIP, podIP    string
	bviIP, natLoopIP string
	nicMAC, bviMAC   [6]byte
	podMAC           [6]byte
	bvi, vx          interface_types.InterfaceIndex
}

func vxNodeAddrs(id int) (nodeIP, podIP, bviIP, natLoopIP string) {
	return fmt.Sprintf("192.168.16.%d", id), fmt.Sprintf("10.1.%d.2", id), fmt.Sprintf("192.168.30.%d", id), fmt.Sprintf("10.1.%d.254", id)
}

// newVXNode builds node id (1 or 2) up to the tunnel, which needs the peer's BVI MAC
// (connectVX).
func newVXNode(t *testing.T, id int) *vxNode {
	e := newEnv(t)
	n := &vxNode{testEnv: e, c: newCapture(e), id: id, podMAC: [6]byte{0x02, 0xfe, 0, 0, byte(id), 2}}
	n.nodeIP, n.podIP, n.bviIP, n.natLoopIP = vxNodeAddrs(id)
	// Distinct NIC MACs, as the lab sets them through the API.
	n.nicMAC = [6]byte{0x08, 0x00, 0x27, 0x5a, byte(id), 1}
	e.ok(&interfaces.SwInterfaceSetMacAddress{SwIfIndex: 1, MacAddress: n.nicMAC})
	e.addAddr(1, n.nodeIP+vxNodeMask)
	e.up(1)

	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: vxPodVRF}})
	gw := e.loopback()
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: gw, VrfID: vxPodVRF})
	e.addAddr(gw, fmt.Sprintf("10.1.%d.1/24", id))
	e.up(gw)
	const tap = 2
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap, VrfID: vxPodVRF})
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: gw, UnnumberedSwIfIndex: tap, IsAdd: true})
	e.up(tap)
	e.neighbor(tap, n.podIP, n.podMAC)
	e.addRoute(ip.IPRoute{TableID: vxPodVRF, Prefix: pfx(n.podIP + "/32"), Paths: []fib_types.FibPath{viaPath(tap, n.podIP)}})

	n.bvi = e.loopback()
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: n.bvi, VrfID: vxPodVRF})
	e.addAddr(n.bvi, n.bviIP+"/24")
	e.up(n.bvi)
	// The agent's BVI MAC scheme: one MAC per node ID.
	n.bviMAC = [6]byte{0x1a, 0x2b, 0x3c, 0x4d, 0x5e, byte(id)}
	e.ok(&interfaces.SwInterfaceSetMacAddress{SwIfIndex: n.bvi, MacAddress: n.bviMAC})
	e.bridge(vxVNI, false, false, false)
	e.member(n.bvi, vxVNI, 0, true)

	enableNAT(e)
	e.ok(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	for _, sw := range []interface_types.InterfaceIndex{tap, n.bvi} {
		e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: sw})
		e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: sw})
	}
	e.ok(&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 1})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(n.nodeIP), LastIPAddress: ip4(n.nodeIP), VrfID: noIndex, IsAdd: true})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(n.natLoopIP), LastIPAddress: ip4(n.natLoopIP), VrfID: noIndex, IsAdd: true,
		Flags: nat_types.NAT_IS_TWICE_NAT})
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4(n.nodeIP), Protocol: protoUDP, Port: vxlanPort, SwIfIndex: allIfaces, VrfID: 0})
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4(n.nodeIP), Protocol: protoUDP, SwIfIndex: allIfaces, VrfID: vxPodVRF})
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4(n.nodeIP), Protocol: protoUDP, SwIfIndex: allIfaces, VrfID: 0})
	// The Service: both pods, each in the pod VRF, probability 1 (local and remote).
	var locals []nat44_ed.Nat44LbAddrPort
	for peer := 1; peer <= 2; peer++ {
		_, podIP, _, _ := vxNodeAddrs(peer)
		locals = append(locals, nat44_ed.Nat44LbAddrPort{Addr: ip4(podIP), Port: podPort, Probability: 1, VrfID: vxPodVRF})
	}
	e.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(vxSvcIP), ExternalPort: svcPort, Protocol: protoTCP, LocalNum: uint32(len(locals)), Locals: locals})
	return n
}

// connectVX adds n's tunnel to peer and the routes to the peer's pods.
func (n *vxNode) connectVX(peer *vxNode) {
	e := n.testEnv
	// The peer's node IP is on the NIC's wire (static, so no packet waits for ARP).
	e.neighbor(1, peer.nodeIP, peer.nicMAC)
	rep := &vxlan.VxlanAddDelTunnelV3Reply{}
	e.ok(&vxlan.VxlanAddDelTunnelV3{IsAdd: true, Instance: noIndex, SrcAddress: addr(n.nodeIP), DstAddress: addr(peer.nodeIP),
		Vni: vxVNI, DecapNextIndex: noIndex}, rep)
	n.vx = rep.SwIfIndex
	e.member(n.vx, vxVNI, 1, false)
	e.neighbor(n.bvi, peer.bviIP, peer.bviMAC)
	e.ok(&l2.L2fibAddDel{Mac: peer.bviMAC, BdID: vxVNI, SwIfIndex: n.vx, IsAdd: true, StaticMac: true})
	e.addRoute(ip.IPRoute{TableID: vxPodVRF, Prefix: pfx(fmt.Sprintf("10.1.%d.0/24", peer.id)), Paths: []fib_types.FibPath{viaPath(n.bvi, peer.bviIP)}})
}

// vxPair is the two nodes and what their pods received.
type vxPair struct {
	t     *testing.T
	nodes [2]*vxNode
	// synAt records, per pod IP, the SYNs that reached the pod.
	synAt map[string][]pktInfo
}

func newVXPair(t *testing.T) *vxPair {
	a, b := newVXNode(t, 1), newVXNode(t, 2)
	a.connectVX(b)
	b.connectVX(a)
	return &vxPair{t: t, nodes: [2]*vxNode{a, b}, synAt: map[string][]pktInfo{}}
}

// fromPod sends a packet from node n's pod.
func (p *vxPair) fromPod(n *vxNode, pkt []byte) {
	p.t.Helper()
	n.inject(nic2, ethFrame(nic2MAC, n.podMAC, etherTypeIP4, pkt))
}

// pump carries frames between the NICs' wires and lets the pods answer a SYN to their
// port with a SYN-ACK, until nothing moves; it returns the frames each pod received that
// it did not answer (e.g. SYN-ACKs for its own connections), by pod IP.
func (p *vxPair) pump() map[string][]pktInfo {
	p.t.Helper()
	got := map[string][]pktInfo{}
	p.run(func(n *vxNode) bool {
		moved := false
		for _, f := range n.c.take(nic2) {
			moved = true
			r := decodeFrame(p.t, f)
			if r.dstMAC != n.podMAC || !r.csumOK {
				p.t.Fatalf("node%d: frame to the pod %v (checksums ok %v)", n.id, r, r.csumOK)
			}
			if r.proto == protoTCP && r.tcpFlags == tcpSYN && r.dport == podPort {
				p.synAt[n.podIP] = append(p.synAt[n.podIP], r)
				p.fromPod(n, ipPkt(n.podIP, r.src.String(), protoTCP, 64, tcpL4(podPort, r.sport, tcpSYN|tcpACK)))
				continue
			}
			got[n.podIP] = append(got[n.podIP], r)
		}
		return moved
	})
	return got
}

// run carries frames between the NICs' wires and lets visit handle what
// each node sent elsewhere (visit tells whether that moved anything),
// until nothing moves.
func (p *vxPair) run(visit func(n *vxNode) bool) {
	p.t.Helper()
	for round := 0; ; round++ {
		if round > 100 {
			p.t.Fatal("frames still moving after 100 rounds")
		}
		moved := false
		for k, n := range p.nodes {
			for _, f := range n.c.take(nic1) {
				moved = true
				p.nodes[1-k].inject(nic1, f)
			}
			moved = visit(n) || moved
		}
		if !moved {
			return
		}
	}
}

// TestContivBackendReachesEveryBackendThroughItsOwnClusterIPAcrossVXLAN: the pod of node1,
// a backend of the Service, opens connections to the ClusterIP. Each SYN is load-balanced
// at random (VPP: LB static mapping, docs/dev-guide/VPP-FORWARDING.md §7 out2in step 4) to
// itself (source = node1's NAT loopback, self-twice-NAT) or to node2's pod (source = its
// own IP, through VXLAN); every SYN-ACK comes back to it from the ClusterIP.
func TestContivBackendReachesEveryBackendThroughItsOwnClusterIPAcrossVXLAN(t *testing.T) {
	p := newVXPair(t)
	n1, n2 := p.nodes[0], p.nodes[1]
	const tries = 64
	for k := range tries {
		cport := uint16(40000 + k)
		p.fromPod(n1, ipPkt(n1.podIP, vxSvcIP, protoTCP, 64, tcpL4(cport, svcPort, tcpSYN)))
		got := p.pump()
		back := got[n1.podIP]
		if len(back) != 1 || len(got) != 1 {
			t.Fatalf("try %d: SYN from %s:%d to %s:%d: the pods received %v, want one SYN-ACK at %s\nnode1:\n%s\nnode2:\n%s",
				k, n1.podIP, cport, vxSvcIP, svcPort, got, n1.podIP, cli(n1.testEnv, "show errors"), cli(n2.testEnv, "show errors"))
		}
		if r := back[0]; r.src.String() != vxSvcIP || r.sport != svcPort || r.dst.String() != n1.podIP || r.dport != cport || r.tcpFlags != tcpSYN|tcpACK {
			t.Fatalf("try %d: the client got %v (flags %#x), want a SYN-ACK from %s:%d", k, r, r.tcpFlags, vxSvcIP, svcPort)
		}
	}
	self, remote := p.synAt[n1.podIP], p.synAt[n2.podIP]
	t.Logf("%d connections from %s to %s:%d: %d reached itself, %d the backend on node2", tries, n1.podIP, vxSvcIP, svcPort, len(self), len(remote))
	if len(self)+len(remote) != tries {
		t.Fatalf("%d SYNs reached a backend, want %d", len(self)+len(remote), tries)
	}
	// Random choice between two backends: a backend missed in 64 tries has probability
	// 2 * 2^-64.
	if len(self) == 0 || len(remote) == 0 {
		t.Errorf("every connection went to one backend: itself %d, node2 %d", len(self), len(remote))
	}
	for _, r := range self {
		if r.src.String() != n1.natLoopIP || r.dst.String() != n1.podIP {
			t.Errorf("connection to itself %v, want the source %s (self-twice-NAT)", r, n1.natLoopIP)
		}
	}
	for _, r := range remote {
		if r.src.String() != n1.podIP || r.dst.String() != n2.podIP || r.ttl != 62 {
			t.Errorf("connection to node2's backend %v, want the client's own address %s, TTL 62 (one hop per node)", r, n1.podIP)
		}
	}
	if s := n2.sim.Sessions(); len(s) != 0 {
		t.Errorf("node2 made NAT sessions for the connections it only forwards: %+v", s)
	}
}

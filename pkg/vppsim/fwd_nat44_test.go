package vppsim

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// Pod and node addresses of the NAT tests, laid out like a Contiv node in
// one VRF: NIC1 is the node interface (192.168.16.1, output feature, the
// outside host A at .2), NIC2 stands for the pod TAPs (10.1.1.1/24, NAT
// inside and outside; pods P1 10.1.1.2 and P2 10.1.1.3).
var (
	pod1MAC = [6]byte{0x02, 0, 0, 0, 1, 2}
	pod2MAC = [6]byte{0x02, 0, 0, 0, 1, 3}
)

const (
	nodeIP   = "192.168.16.1"
	hostAIP  = "192.168.16.2"
	pod1IP   = "10.1.1.2"
	pod2IP   = "10.1.1.3"
	natLoop  = "10.1.1.254" // twice-NAT address (Contiv's NAT loopback IP)
	svcIP    = "10.96.0.10"
	svcPort  = 80
	podPort  = 8080
	nodePort = 30080
)

type natEnv struct {
	*testEnv
	c   *capture
	clk *testkit.Clock
}

func newNATEnv(t *testing.T, affinity uint32) *natEnv {
	return newNATEnvWith(t, affinity, nil)
}

// newNATEnvWith is newNATEnv with the simulator's options changed by opt.
func newNATEnvWith(t *testing.T, affinity uint32, opt func(*Options)) *natEnv {
	clk := testkit.NewClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnvWith(t, func(o *Options) {
		o.Clock = clk
		if opt != nil {
			opt(o)
		}
	})
	n := &natEnv{testEnv: e, c: newCapture(e), clk: clk}
	programNATNode(func(req, rep api.Message) {
		t.Helper()
		if rep == nil {
			e.ok(req)
		} else {
			e.ok(req, rep)
		}
	}, affinity)
	return n
}

// programNATNode programs the node of the NAT tests and benchmarks
// through do (which fails on error).
func programNATNode(do func(req, rep api.Message), affinity uint32) {
	up := func(sw interface_types.InterfaceIndex) {
		do(&interfaces.SwInterfaceSetFlags{SwIfIndex: sw, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, nil)
	}
	nb := func(sw interface_types.InterfaceIndex, ipAddr string, m [6]byte) {
		do(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: sw,
			Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: m, IPAddress: addr(ipAddr)}}, nil)
	}
	do(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: awp(nodeIP + "/24")}, nil)
	do(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: true, Prefix: awp("10.1.1.1/24")}, nil)
	up(1)
	up(2)
	nb(1, hostAIP, hostAMAC)
	nb(2, pod1IP, pod1MAC)
	nb(2, pod2IP, pod2MAC)
	do(&ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: pfx("0.0.0.0/0"), NPaths: 1, Paths: []fib_types.FibPath{viaPath(1, hostAIP)}}}, nil)
	do(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}, nil)
	do(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true}, nil)
	do(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: 2}, nil)
	do(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: 2}, nil)
	do(&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 1}, nil)
	do(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(nodeIP), LastIPAddress: ip4(nodeIP), VrfID: noIndex, IsAdd: true}, nil)
	do(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4(natLoop), LastIPAddress: ip4(natLoop), VrfID: noIndex, IsAdd: true,
		Flags: nat_types.NAT_IS_TWICE_NAT}, nil)
	locals := []nat44_ed.Nat44LbAddrPort{{Addr: ip4(pod1IP), Port: podPort, Probability: 50}, {Addr: ip4(pod2IP), Port: podPort, Probability: 50}}
	do(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(svcIP), ExternalPort: svcPort, Protocol: protoTCP, Affinity: affinity, LocalNum: 2, Locals: locals}, nil)
	do(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(nodeIP), ExternalPort: nodePort, Protocol: protoTCP, LocalNum: 2, Locals: locals}, nil)
	// Contiv's identity mappings: VXLAN and the node IP itself.
	do(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4(nodeIP), Protocol: protoUDP, Port: vxlanPort, SwIfIndex: allIfaces, VrfID: 0}, nil)
}

// fromPod sends a packet from a pod (NIC2) to VPP.
func (n *natEnv) fromPod(srcMAC [6]byte, pkt []byte) {
	n.t.Helper()
	n.inject(nic2, ethFrame(nic2MAC, srcMAC, etherTypeIP4, pkt))
}

// fromOutside sends a packet from host A on the node network.
func (n *natEnv) fromOutside(pkt []byte) {
	n.t.Helper()
	n.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, pkt))
}

func TestNATPodToClusterIP(t *testing.T) {
	n := newNATEnv(t, 0)
	// The first packet must be a SYN.
	n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(40000, svcPort, tcpACK)))
	none(t, n.c)
	if n.sim.ErrorCount("nat44-ed-out2in", "TCP non-SYN packet cannot create a session") != 1 {
		t.Errorf("non-SYN not counted:\n%s", cli(n.testEnv, "show errors"))
	}
	// SYN: load-balanced DNAT to a backend, looked up and sent to it.
	n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(40000, svcPort, tcpSYN)))
	r := oneFrame(t, n.c, nic2)
	if r.dport != podPort || (r.dst.String() != pod1IP && r.dst.String() != pod2IP) || !r.csumOK || r.ttl != 63 {
		t.Fatalf("DNATed %v", r)
	}
	backend, backendMAC := r.dst.String(), pod1MAC
	if backend == pod2IP {
		backendMAC = pod2MAC
	}
	if backend == pod2IP && r.src.String() != natLoop || backend == pod1IP && r.src.String() != pod2IP {
		t.Errorf("self-twice-NAT only when the client is the backend: %v", r)
	}
	// The reply comes back from the ClusterIP.
	n.fromPod(backendMAC, ipPkt(backend, r.src.String(), protoTCP, 64, tcpL4(podPort, r.sport, tcpSYN|tcpACK)))
	back := oneFrame(t, n.c, nic2)
	if back.src.String() != svcIP || back.sport != svcPort || back.dst.String() != pod2IP || back.dport != 40000 || !back.csumOK {
		t.Errorf("reply %v", back)
	}
	// The session is the real one: dumps show it and the API deletes it.
	sess := n.sim.Sessions()
	if len(sess) != 1 || !sess[0].Static || sess[0].InsideAddr.Addr().String() != backend || sess[0].TotalPkts != 2 {
		t.Fatalf("sessions %+v", sess)
	}
	users := dump[nat44_ed.Nat44UserDetails](t, n.ch, &nat44_ed.Nat44UserDump{})
	if len(users) != 1 || users[0].IPAddress.String() != backend || users[0].Nstaticsessions != 1 {
		t.Errorf("users %+v", users)
	}
	contains(t, cli(n.testEnv, "show nat44 sessions"), "1 sessions", "i2o "+backend+" proto tcp port 8080",
		"o2i "+svcIP+" proto tcp port 80", "external host "+pod2IP+":40000", "total pkts 2", "static translation")
	us := dump[nat44_ed.Nat44UserSessionDetails](t, n.ch, &nat44_ed.Nat44UserSessionDump{IPAddress: ip4(backend)})
	if len(us) != 1 || us[0].OutsideIPAddress.String() != svcIP || us[0].OutsidePort != svcPort || us[0].ExtHostPort != 40000 {
		t.Fatalf("user sessions %+v", us)
	}
	n.ok(&nat44_ed.Nat44DelSession{Address: ip4(backend), Port: podPort, Protocol: protoTCP, VrfID: 0,
		Flags: nat_types.NAT_IS_INSIDE | nat_types.NAT_IS_EXT_HOST_VALID, ExtHostAddress: us[0].ExtHostNatAddress, ExtHostPort: us[0].ExtHostNatPort})
	if s := n.sim.Sessions(); len(s) != 0 {
		t.Errorf("sessions after delete %+v", s)
	}
	contains(t, cli(n.testEnv, "show nat44 sessions"), "0 sessions")
}

func TestNATSelfTwiceNATOnlyForTheChosenBackend(t *testing.T) {
	n := newNATEnv(t, 0)
	seen := map[string]bool{}
	for port := uint16(20000); port < 20064 && len(seen) < 2; port++ {
		n.fromPod(pod1MAC, ipPkt(pod1IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpSYN)))
		r := oneFrame(t, n.c, nic2)
		seen[r.dst.String()] = true
		switch r.dst.String() {
		case pod1IP:
			if r.src.String() != natLoop || r.sport < 1024 {
				t.Fatalf("hairpin to itself not twice-NATed: %v", r)
			}
		case pod2IP:
			if r.src.String() != pod1IP || r.sport != port {
				t.Fatalf("other backend twice-NATed: %v", r)
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("64 SYNs reached only %v", seen)
	}
}

func TestNATAffinityKeepsTheBackend(t *testing.T) {
	n := newNATEnv(t, 600)
	first := ""
	for port := uint16(30000); port < 30020; port++ {
		n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpSYN)))
		r := oneFrame(t, n.c, nic2)
		if first == "" {
			first = r.dst.String()
		}
		if r.dst.String() != first {
			t.Fatalf("affinity broken: %s then %s", first, r.dst)
		}
	}
}

func TestNATOutputFeatureSNATKeepsThePort(t *testing.T) {
	n := newNATEnv(t, 0)
	// Pod -> internet: untranslated until NIC1's in2out-output SNATs it to
	// the node IP, keeping the source port.
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5555, 53, "q")))
	r := oneFrame(t, n.c, nic1)
	if r.src.String() != nodeIP || r.sport != 5555 || r.dst.String() != "8.8.8.8" || !r.csumOK || r.dstMAC != hostAMAC {
		t.Fatalf("SNAT %v", r)
	}
	// The same port from another pod gets another port.
	n.fromPod(pod2MAC, ipPkt(pod2IP, "8.8.8.8", protoUDP, 64, udpL4(5555, 53, "q")))
	r2 := oneFrame(t, n.c, nic1)
	if r2.src.String() != nodeIP || r2.sport == 5555 || r2.sport < 1024 {
		t.Errorf("second SNAT %v", r2)
	}
	// The reply hits the o2i flow and goes back to the pod.
	n.fromOutside(ipPkt("8.8.8.8", nodeIP, protoUDP, 60, udpL4(53, 5555, "a")))
	back := oneFrame(t, n.c, nic2)
	if back.dst.String() != pod1IP || back.dport != 5555 || back.src.String() != "8.8.8.8" || back.dstMAC != pod1MAC || !back.csumOK {
		t.Errorf("reply %v", back)
	}
	s := n.sim.Sessions()
	if len(s) != 2 || s[0].Static || s[0].OutsideAddr.String() != nodeIP+":5555" {
		t.Errorf("sessions %+v", s)
	}
}

func TestNATNodePortFromOutside(t *testing.T) {
	n := newNATEnv(t, 0)
	n.fromOutside(ipPkt(hostAIP, nodeIP, protoTCP, 64, tcpL4(41000, nodePort, tcpSYN)))
	r := oneFrame(t, n.c, nic2)
	if r.dport != podPort || r.src.String() != hostAIP {
		t.Fatalf("NodePort DNAT %v (client IP must be kept)", r)
	}
	mac := pod1MAC
	if r.dst.String() == pod2IP {
		mac = pod2MAC
	}
	n.fromPod(mac, ipPkt(r.dst.String(), hostAIP, protoTCP, 64, tcpL4(podPort, 41000, tcpSYN|tcpACK)))
	back := oneFrame(t, n.c, nic1)
	if back.src.String() != nodeIP || back.sport != nodePort || back.dst.String() != hostAIP || back.dport != 41000 {
		t.Errorf("NodePort reply %v", back)
	}
	if s := n.sim.Sessions(); len(s) != 1 {
		t.Errorf("the reply made another session: %+v", s)
	}
}

func TestNATForwardingAndIdentity(t *testing.T) {
	n := newNATEnv(t, 0)
	// Pod to pod: forwarding on, untranslated, no session.
	n.fromPod(pod1MAC, ipPkt(pod1IP, pod2IP, protoTCP, 64, tcpL4(1234, 80, tcpSYN)))
	if r := oneFrame(t, n.c, nic2); r.src.String() != pod1IP || r.dst.String() != pod2IP || r.dstMAC != pod2MAC {
		t.Errorf("pod to pod %v", r)
	}
	if s := n.sim.Sessions(); len(s) != 0 {
		t.Errorf("sessions %+v", s)
	}
	// Identity mapping: VXLAN's port on the node IP passes untranslated
	// (no tunnel here, so VPP answers port unreachable).
	n.ok(&nat44_ed.Nat44ForwardingEnableDisable{Enable: false})
	n.fromOutside(ipPkt(hostAIP, nodeIP, protoUDP, 64, udpL4(50000, vxlanPort, "x")))
	if r := oneFrame(t, n.c, nic1); r.icmpType != icmpUnreach || r.icmpCode != 3 {
		t.Errorf("identity-mapped packet %v", r)
	}
	// Forwarding off: an unmapped port of the node IP is dropped by out2in.
	n.fromOutside(ipPkt(hostAIP, nodeIP, protoUDP, 64, udpL4(50000, 7777, "x")))
	none(t, n.c)
	if n.sim.ErrorCount("nat44-ed-out2in", "no translation") != 1 {
		t.Errorf("out2in drop not counted:\n%s", cli(n.testEnv, "show errors"))
	}
	// Forwarding on: it passes and VPP answers port unreachable (past the
	// 10 µs window of ip4-icmp-error's rate limit per (src, dst)).
	n.ok(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	n.clk.Step(time.Millisecond)
	n.fromOutside(ipPkt(hostAIP, nodeIP, protoUDP, 64, udpL4(50000, 7777, "x")))
	if r := oneFrame(t, n.c, nic1); r.icmpType != icmpUnreach {
		t.Errorf("with forwarding %v", r)
	}
}

func TestNATSessionExpiryAndTCPState(t *testing.T) {
	n := newNATEnv(t, 0)
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(6000, 53, "q")))
	oneFrame(t, n.c, nic1)
	n.clk.Step(301 * time.Second)
	s := n.sim.Sessions()
	if len(s) != 1 || !s[0].TimedOut || s[0].TimeSinceLastHeard != 301 {
		t.Fatalf("expired session must stay until touched: %+v", s)
	}
	// Touching it deletes it lazily; the reply no longer translates.
	n.fromOutside(ipPkt("8.8.8.8", nodeIP, protoUDP, 60, udpL4(53, 6000, "a")))
	if r := n.c.take(nic2); len(r) != 0 {
		t.Errorf("expired session still translated")
	}
	// With forwarding on, the stray reply made a forwarding-bypass
	// session (untranslated) in place of the expired one.
	if s := n.sim.Sessions(); len(s) != 1 || s[0].InsideAddr.String() != nodeIP+":6000" || s[0].OutsideAddr != s[0].InsideAddr || s[0].TimedOut {
		t.Errorf("sessions after expiry %+v", s)
	}
	n.c.reset()
	// TCP: established only after SYN and ACK both ways; then the
	// established timeout applies.
	n.fromPod(pod1MAC, ipPkt(pod1IP, "1.1.1.1", protoTCP, 64, tcpL4(7000, 443, tcpSYN)))
	r := oneFrame(t, n.c, nic1)
	n.fromOutside(ipPkt("1.1.1.1", nodeIP, protoTCP, 60, tcpL4(443, r.sport, tcpSYN|tcpACK)))
	oneFrame(t, n.c, nic2)
	n.fromPod(pod1MAC, ipPkt(pod1IP, "1.1.1.1", protoTCP, 64, tcpL4(7000, 443, tcpACK)))
	oneFrame(t, n.c, nic1)
	n.clk.Step(1000 * time.Second) // > transitory 240 s, < established 7440 s
	n.fromOutside(ipPkt("1.1.1.1", nodeIP, protoTCP, 60, tcpL4(443, r.sport, tcpACK)))
	if back := oneFrame(t, n.c, nic2); back.dst.String() != pod1IP {
		t.Errorf("established session expired early: %v", back)
	}
}

// TestFeatureOrderACLSeesPreAndPostNAT checks where the ACL hook runs:
// input ACLs before NAT (the ClusterIP), output ACLs after NAT (the pod).
func TestFeatureOrderACLSeesPreAndPostNAT(t *testing.T) {
	n := newNATEnv(t, 0)
	type seen struct {
		sw    uint32
		input bool
		dst   netip.Addr
	}
	var got []seen
	n.sim.mu.Lock()
	n.sim.st.aclFilter = func(sw uint32, input bool, f *aclFlow) (bool, string) {
		got = append(got, seen{sw, input, f.Dst})
		if f.DstPort == 9 {
			return false, "deny port 9"
		}
		return true, "permit"
	}
	n.sim.mu.Unlock()
	n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(40000, svcPort, tcpSYN)))
	oneFrame(t, n.c, nic2)
	if len(got) != 2 || !got[0].input || got[0].dst.String() != svcIP || got[1].input || got[1].dst.String() == svcIP {
		t.Errorf("ACL calls %+v: want input with the ClusterIP, then output with the backend", got)
	}
	// A deny drops, and show trace explains it.
	contains(t, cli(n.testEnv, "trace add dpdk-input 5")+"ok", "ok")
	n.fromPod(pod2MAC, ipPkt(pod2IP, pod1IP, protoTCP, 64, tcpL4(40001, 9, tcpSYN)))
	none(t, n.c)
	contains(t, cli(n.testEnv, "show trace"), "acl-plugin-in-ip4-fa", "deny port 9", "error-drop")
}

func TestNATRemovedBackendGetsNoNewPackets(t *testing.T) {
	n := newNATEnv(t, 0)
	n.ok(&nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: true, ExternalAddr: ip4(svcIP), ExternalPort: svcPort, Protocol: protoTCP,
		Local: nat44_ed.Nat44LbAddrPort{Addr: ip4("10.1.1.4"), Port: podPort, Probability: 50}})
	n.neighbor(2, "10.1.1.4", [6]byte{0x02, 0, 0, 0, 1, 4})
	// Open flows until one reaches the third backend, then remove it.
	var port uint16
	for port = 50000; port < 50100; port++ {
		n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpSYN)))
		if r := oneFrame(t, n.c, nic2); r.dst.String() == "10.1.1.4" {
			break
		}
	}
	if port == 50100 {
		t.Fatal("no flow reached the third backend")
	}
	n.ok(&nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: false, ExternalAddr: ip4(svcIP), ExternalPort: svcPort, Protocol: protoTCP,
		Local: nat44_ed.Nat44LbAddrPort{Addr: ip4("10.1.1.4"), Port: podPort}})
	for _, s := range n.sim.Sessions() {
		if s.InsideAddr.Addr().String() == "10.1.1.4" {
			t.Fatalf("session of the removed backend kept: %+v", s)
		}
	}
	// The old flow's next packet is not a SYN: dropped, never forwarded
	// to the removed backend; new flows go to the others.
	n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpACK)))
	none(t, n.c)
	for p := uint16(51000); p < 51020; p++ {
		n.fromPod(pod2MAC, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(p, svcPort, tcpSYN)))
		if r := oneFrame(t, n.c, nic2); r.dst.String() == "10.1.1.4" {
			t.Fatal("a new flow reached the removed backend")
		}
	}
}

func TestNATTranslatesICMPErrorsBySession(t *testing.T) {
	n := newNATEnv(t, 0)
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5555, 53, "q")))
	sent := n.c.take(nic1)
	if len(sent) != 1 {
		t.Fatal("not SNATed out")
	}
	// 8.8.8.8 answers port unreachable about the SNATed packet.
	inner := sent[0][ethHdrLen:]
	icmp := append([]byte{icmpUnreach, 3, 0, 0, 0, 0, 0, 0}, inner[:ip4IHL(inner)+8]...)
	n.fromOutside(ipPkt("8.8.8.8", nodeIP, protoICMP, 60, icmp))
	fs := n.c.take(nic2)
	if len(fs) != 1 {
		t.Fatalf("%d frames to the pod:\n%s", len(fs), cli(n.testEnv, "show errors"))
	}
	r := decodeFrame(t, fs[0])
	if r.icmpType != icmpUnreach || r.dst.String() != pod1IP || !r.csumOK {
		t.Fatalf("ICMP error %v", r)
	}
	emb := fs[0][ethHdrLen+ip4HdrLen+8:]
	if checksum(emb[:ip4HdrLen], 0) != 0 || addr4(ip4Src(emb)).String() != pod1IP || be16(emb[20:22]) != 5555 ||
		addr4(ip4Dst(emb)).String() != "8.8.8.8" || be16(emb[22:24]) != 53 {
		t.Errorf("embedded packet % x", emb[:28])
	}
}

func TestNATTwiceNATAndStaticSNAT(t *testing.T) {
	n := newNATEnv(t, 0)
	// TWICE_NAT: the source is always translated to the twice-NAT pool.
	n.ok(static(true, protoTCP, pod1IP, podPort, "10.96.0.20", 80, nat_types.NAT_IS_TWICE_NAT|nat_types.NAT_IS_OUT2IN_ONLY))
	n.fromPod(pod2MAC, ipPkt(pod2IP, "10.96.0.20", protoTCP, 64, tcpL4(42000, 80, tcpSYN)))
	r := oneFrame(t, n.c, nic2)
	if r.dst.String() != pod1IP || r.dport != podPort || r.src.String() != natLoop || r.sport < 1024 {
		t.Fatalf("twice-NAT %v", r)
	}
	s := n.sim.Sessions()
	if len(s) != 1 || !s[0].TwiceNAT || s[0].ExtHostNATAddr.Addr().String() != natLoop || s[0].ExtHostAddr.String() != pod2IP+":42000" {
		t.Errorf("twice-NAT session %+v", s)
	}
	n.fromPod(pod1MAC, ipPkt(pod1IP, natLoop, protoTCP, 64, tcpL4(podPort, r.sport, tcpSYN|tcpACK)))
	if back := oneFrame(t, n.c, nic2); back.src.String() != "10.96.0.20" || back.sport != 80 || back.dst.String() != pod2IP || back.dport != 42000 {
		t.Errorf("twice-NAT reply %v", back)
	}
	// A 1:1 mapping without OUT2IN_ONLY also SNATs its local going out; an
	// out2in-only one does not (pod 1 gets the dynamic pool address).
	n.ok(&nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, LocalIPAddress: ip4(pod2IP),
		ExternalIPAddress: ip4("192.168.16.50"), ExternalSwIfIndex: allIfaces})
	n.fromPod(pod2MAC, ipPkt(pod2IP, "8.8.8.8", protoUDP, 64, udpL4(7777, 53, "q")))
	if r := oneFrame(t, n.c, nic1); r.src.String() != "192.168.16.50" || r.sport != 7777 {
		t.Errorf("static SNAT %v", r)
	}
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(7777, 53, "q")))
	if r := oneFrame(t, n.c, nic1); r.src.String() != nodeIP {
		t.Errorf("out2in-only mapping's local SNATed statically: %v", r)
	}
	// The static external address answers ARP on the NAT outside side.
	n.inject(nic1, ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, hostAIP, [6]byte{}, "192.168.16.50")))
	if r := oneFrame(t, n.c, nic1); r.arpOp != arpOpReply || r.arpSHA != nic1MAC {
		t.Errorf("ARP for the static external address %v", r)
	}
}

func TestNATPingThroughSNAT(t *testing.T) {
	n := newNATEnv(t, 0)
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoICMP, 64, icmpEcho(icmpEchoRequest, 77, 1)))
	r := oneFrame(t, n.c, nic1)
	if r.src.String() != nodeIP || r.sport != 77 || r.icmpType != icmpEchoRequest || !r.csumOK {
		t.Fatalf("echo out %v", r)
	}
	n.fromOutside(ipPkt("8.8.8.8", nodeIP, protoICMP, 60, icmpEcho(icmpEchoReply, 77, 1)))
	if back := oneFrame(t, n.c, nic2); back.dst.String() != pod1IP || back.sport != 77 || back.icmpType != icmpEchoReply || !back.csumOK {
		t.Errorf("echo reply %v", back)
	}
	// Ping of the node IP from outside is answered by VPP: with forwarding
	// on, out2in lets it through with a forwarding-bypass session, which
	// the reply then matches at the output feature.
	n.fromOutside(ipPkt(hostAIP, nodeIP, protoICMP, 64, icmpEcho(icmpEchoRequest, 5, 1)))
	if r := oneFrame(t, n.c, nic1); r.icmpType != icmpEchoReply || r.dst.String() != hostAIP {
		t.Errorf("node IP echo %v", r)
	}
}

// traceNodes returns, per traced packet of "show trace", the nodes it
// visited in order and the text of each node's line.
func traceNodes(out string) (nodes [][]string, texts [][]string) {
	lines := strings.Split(out, "\n")
	for k := 0; k < len(lines); k++ {
		l := lines[k]
		switch {
		case strings.HasPrefix(l, "Packet "):
			nodes, texts = append(nodes, nil), append(texts, nil)
		case len(nodes) > 0 && len(l) > 17 && l[2] == ':' && strings.HasPrefix(l[15:], ": "):
			last := len(nodes) - 1
			nodes[last] = append(nodes[last], l[17:])
			text := ""
			if k+1 < len(lines) {
				text = strings.TrimSpace(lines[k+1])
			}
			texts[last] = append(texts[last], text)
		}
	}
	return nodes, texts
}

// TestTraceListsEachNATNodeOnceForANewSession: a packet that creates a
// NAT session shows its NAT node once, at its place in the feature order
// (ip4-unicast: ACL-in, NAT, lookup; ip4-output: NAT output, ACL-out), with
// what the node did and the packet it made.
func TestTraceListsEachNATNodeOnceForANewSession(t *testing.T) {
	n := newNATEnv(t, 0)
	cli(n.testEnv, "trace add dpdk-input 5")
	// out2in: a NodePort SYN from outside creates a static session.
	n.fromOutside(ipPkt(hostAIP, nodeIP, protoTCP, 64, tcpL4(41000, nodePort, tcpSYN)))
	r := oneFrame(t, n.c, nic2)
	// in2out-output: a pod's connection to the Internet creates a dynamic
	// session on the NIC's output feature.
	n.fromPod(pod1MAC, ipPkt(pod1IP, "1.1.1.1", protoTCP, 64, tcpL4(7000, 443, tcpSYN)))
	oneFrame(t, n.c, nic1)
	nodes, texts := traceNodes(cli(n.testEnv, "show trace"))
	want := [][]string{
		{"dpdk-input", "ethernet-input", "ip4-input", "acl-plugin-in-ip4-fa", "nat44-ed-out2in", "ip4-lookup", "ip4-rewrite",
			"acl-plugin-out-ip4-fa", "GigabitEthernet0/9/0-output", "GigabitEthernet0/9/0-tx"},
		{"dpdk-input", "ethernet-input", "ip4-input", "acl-plugin-in-ip4-fa", "nat44-ed-classify", "nat44-ed-in2out", "ip4-lookup",
			"ip4-rewrite", "nat44-ed-in2out-output", "acl-plugin-out-ip4-fa", "GigabitEthernet0/8/0-output", "GigabitEthernet0/8/0-tx"},
	}
	if len(nodes) != len(want) {
		t.Fatalf("%d packets traced, want %d: %v", len(nodes), len(want), nodes)
	}
	for k := range want {
		if strings.Join(nodes[k], "\n") != strings.Join(want[k], "\n") {
			t.Errorf("packet %d visited:\n  %s\nwant:\n  %s", k+1, strings.Join(nodes[k], "\n  "), strings.Join(want[k], "\n  "))
		}
	}
	nat := func(k int, node string) string {
		for j, nd := range nodes[k] {
			if nd == node {
				return texts[k][j]
			}
		}
		return ""
	}
	if got, w := nat(0, "nat44-ed-out2in"), fmt.Sprintf("new static session %s:%d -> %s:%d (twice-NAT false): %s:41000 -> %s:%d fib 0",
		nodeIP, nodePort, r.dst, podPort, hostAIP, r.dst, podPort); got != w {
		t.Errorf("out2in line %q, want %q", got, w)
	}
	if got := nat(1, "nat44-ed-in2out-output"); !strings.HasPrefix(got, fmt.Sprintf("new session %s:7000 -> %s:", pod1IP, nodeIP)) ||
		!strings.HasSuffix(got, " -> 1.1.1.1:443 fib 0") {
		t.Errorf("in2out-output line %q", got)
	}
}

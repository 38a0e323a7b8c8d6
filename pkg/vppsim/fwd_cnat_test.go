package vppsim

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The cnat forwarding tests: nic1 (10.0.0.1/24) faces an outside host A
// (10.0.0.2), nic2 (10.0.1.1/24) the pods, backends 10.0.1.2 and up.

const (
	cnatVIP    = "10.96.0.10"
	cnatHostA  = "10.0.0.2"
	cnatNodeIP = "10.0.0.1"
	cnatPod1   = "10.0.1.2"
)

var podMACs = func() (m [16][6]byte) {
	for i := range m {
		m[i] = [6]byte{0x02, 0xfe, 0, 0, 1, byte(2 + i)}
	}
	return
}()

// cnatEnv is l3Env on a fake clock with host A and 16 pods 10.0.1.2.. resolved.
func cnatEnv(t *testing.T) (*testEnv, *capture, *testkit.Clock) {
	return cnatEnvWith(t, func(*Options) {})
}

func cnatEnvWith(t *testing.T, opt func(*Options)) (*testEnv, *capture, *testkit.Clock) {
	clk := testkit.NewClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnvWith(t, func(o *Options) { o.Clock = clk; opt(o) })
	c := newCapture(e)
	e.l3Up("10.0.0.1/24", "10.0.1.1/24")
	e.neighbor(1, cnatHostA, hostAMAC)
	for i, m := range podMACs {
		e.neighbor(2, podIP(i), m)
	}
	return e, c, clk
}

func podIP(i int) string { return "10.0.1." + utoa(uint32(2+i)) }

func (e *testEnv) mustCnat(t cnat.CnatTranslation) uint32 {
	e.t.Helper()
	id, rv := e.cnatUpdate(t)
	if rv != 0 {
		e.t.Fatalf("cnat_translation_update: retval %d", rv)
	}
	return id
}

func TestCnatClusterIPToLocalBackendAndReplyFromTheVIP(t *testing.T) {
	e, c, _ := cnatEnv(t)
	e.mustCnat(apiTr(cnatVIP, 53, false, apiEP(cnatPod1, 5353)))
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(40000, 53, "q"))))
	r := oneFrame(t, c, nic2)
	if r.dst.String() != cnatPod1 || r.dport != 5353 || r.src.String() != cnatHostA || r.sport != 40000 || !r.csumOK || r.ttl != 63 {
		t.Fatalf("translated %v (csum ok %v), want %s:40000 -> %s:5353", r, r.csumOK, cnatHostA, cnatPod1)
	}
	// The reply is routed into ip4-cnat-tx by the client learned for the
	// client's address, hits the return session and leaves from the VIP.
	tr := traceOf(e, func() {
		e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatHostA, protoUDP, 64, udpL4(5353, 40000, "a"))))
	})
	back := oneFrame(t, c, nic1)
	if back.src.String() != cnatVIP || back.sport != 53 || back.dst.String() != cnatHostA || back.dport != 40000 || !back.csumOK {
		t.Fatalf("reply %v, want %s:53 -> %s:40000", back, cnatVIP, cnatHostA)
	}
	contains(t, tr, "ip4-cnat-tx", "found session")
	ss := dump[cnat.CnatSessionDetails](t, e.ch, &cnat.CnatSessionDump{})
	if len(ss) != 2 || ss[0].Session.Src.Addr.String() != cnatHostA || ss[0].Session.Dst.Addr.String() != cnatVIP ||
		ss[0].Session.New.Addr.String() != cnatPod1 || ss[0].Session.New.Port != 5353 || ss[0].Session.Location != cnatLocFIB ||
		ss[1].Session.Src.Addr.String() != cnatPod1 || ss[1].Session.New.Addr.String() != cnatHostA {
		t.Fatalf("sessions %+v, want the forward and the return session", ss)
	}
	contains(t, cli(e, "show cnat translation"), "[0] 10.96.0.10;53 UDP lb:default fhc:0x9f(default)", "  0.0.0.0;0->10.0.1.2;5353")
	contains(t, cli(e, "show cnat session"), "CNat Sessions: now:",
		"session:[10.0.0.2;40000 -> 10.96.0.10;53, UDP] => 10.0.0.2;40000 -> 10.0.1.2;5353 fib lb:0 age:30.000000",
		"session:[10.0.1.2;5353 -> 10.0.0.2;40000, UDP] => 10.96.0.10;53 -> 10.0.0.2;40000 fib lb:-1", "2 active elements")
}

func TestCnatExclusiveVIPDropsWhatNoTranslationMatches(t *testing.T) {
	e, c, _ := cnatEnv(t)
	e.mustCnat(apiTr(cnatVIP, 53, false, apiEP(cnatPod1, 53)))
	// A route would forward the VIP: cnat's exclusive entry takes precedence.
	e.addRoute(ip.IPRoute{Prefix: pfx("10.96.0.0/12"), Paths: []fib_types.FibPath{viaPath(2, cnatPod1)}})
	tr := traceOf(e, func() {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoTCP, 64, tcpL4(40000, 80, tcpSYN))))
	})
	none(t, c)
	contains(t, tr, "ip4-cnat-tx", "exclusive VIP 10.96.0.10: no translation for TCP port 80: not translated", "ip4-drop")
	// ICMP reads the checksum where the port would be: no translation either.
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoICMP, 64, icmpEcho(icmpEchoRequest, 7, 1))))
	none(t, c)
	if n := e.sim.ErrorCount("ip4-drop", "ip4 adjacency drop"); n != 2 {
		t.Errorf("ip4-drop counted %d, want 2", n)
	}
}

func TestCnatInterposedNodePortWithSNATViaThePathSource(t *testing.T) {
	e, c, clk := cnatEnv(t)
	tr := cnat.CnatTranslation{Vip: apiEP(cnatNodeIP, 30080), IPProto: ip_types.IP_API_PROTO_TCP, IsRealIP: 1,
		Flags: uint8(cnat.CNAT_TRANSLATION_ALLOC_PORT),
		Paths: []cnat.CnatEndpointTuple{{SrcEp: apiEP(cnatNodeIP, 0), DstEp: apiEP(cnatPod1, 8080)}}}
	e.mustCnat(tr)
	// Unmatched traffic to the node IP follows its normal forwarding (local).
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatNodeIP, protoICMP, 64, icmpEcho(icmpEchoRequest, 7, 1))))
	if r := oneFrame(t, c, nic1); r.icmpType != icmpEchoReply || r.src.String() != cnatNodeIP {
		t.Fatalf("echo to the interposed node IP: %v, want an echo reply", r)
	}
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatNodeIP, protoTCP, 64, tcpL4(41000, 30080, tcpSYN))))
	r := oneFrame(t, c, nic2)
	if r.src.String() != cnatNodeIP || r.sport != cnatMinSrcPort || r.dst.String() != cnatPod1 || r.dport != 8080 || !r.csumOK {
		t.Fatalf("NodePort SYN %v, want %s:49152 -> %s:8080", r, cnatNodeIP, cnatPod1)
	}
	e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatNodeIP, protoTCP, 64, tcpL4(8080, cnatMinSrcPort, tcpSYN|tcpACK))))
	back := oneFrame(t, c, nic1)
	if back.src.String() != cnatNodeIP || back.sport != 30080 || back.dst.String() != cnatHostA || back.dport != 41000 || !back.csumOK {
		t.Fatalf("NodePort reply %v, want %s:30080 -> %s:41000", back, cnatNodeIP, cnatHostA)
	}
	// SYN+ACK made the flow live for tcp-max-age: 31 s later it is still there.
	clk.Step(31 * time.Second)
	if ss := dump[cnat.CnatSessionDetails](t, e.ch, &cnat.CnatSessionDump{}); len(ss) != 2 {
		t.Fatalf("%d sessions 31 s after SYN+ACK, want the 2 of the flow (tcp-max-age)", len(ss))
	}
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatNodeIP, protoTCP, 64, tcpL4(41000, 30080, tcpACK))))
	if r := oneFrame(t, c, nic2); r.sport != cnatMinSrcPort {
		t.Fatalf("established flow after 31 s: %v", r)
	}
	// A RST shortens it to 5 s; then the flow and its port are gone and a
	// new flow gets the same port again.
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatNodeIP, protoTCP, 64, tcpL4(41000, 30080, tcpRST))))
	oneFrame(t, c, nic2)
	clk.Step(6 * time.Second)
	if ss := dump[cnat.CnatSessionDetails](t, e.ch, &cnat.CnatSessionDump{}); len(ss) != 0 {
		t.Fatalf("sessions 6 s after RST: %d", len(ss))
	}
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatNodeIP, protoTCP, 64, tcpL4(41001, 30080, tcpSYN))))
	if r := oneFrame(t, c, nic2); r.sport != cnatMinSrcPort {
		t.Fatalf("new flow after the old expired got port %d, want the freed 49152", r.sport)
	}
}

func TestCnatSNATK8SPolicy(t *testing.T) {
	e, c, _ := cnatEnv(t)
	e.addRoute(ip.IPRoute{Prefix: pfx("0.0.0.0/0"), Paths: []fib_types.FibPath{viaPath(1, cnatHostA)}})
	e.ok(&cnat.CnatSetSnatAddresses{SnatIP4: ip4(cnatNodeIP), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	e.ok(&cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S})
	e.ok(&cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: 1, Prefix: pfx("10.0.1.0/24")})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 2, IsAdd: 1, Table: cnat.CNAT_POLICY_INCLUDE_V4})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 2, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
	// Without the feature nothing is source-NATed.
	e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, "8.8.8.8", protoUDP, 64, udpL4(33000, 53, "q"))))
	if r := oneFrame(t, c, nic1); r.src.String() != cnatPod1 {
		t.Fatalf("without cnat-snat-ip4: %v", r)
	}
	e.ok(&feature.FeatureEnableDisable{SwIfIndex: 2, Enable: true, ArcName: "ip4-unicast", FeatureName: "cnat-snat-ip4"})
	e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, "8.8.8.8", protoUDP, 64, udpL4(33001, 53, "q"))))
	r := oneFrame(t, c, nic1)
	if r.src.String() != cnatNodeIP || r.sport != cnatMinSrcPort || r.dst.String() != "8.8.8.8" || r.dport != 53 || !r.csumOK {
		t.Fatalf("pod to outside: %v, want %s:49152 -> 8.8.8.8:53", r, cnatNodeIP)
	}
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("8.8.8.8", cnatNodeIP, protoUDP, 64, udpL4(53, cnatMinSrcPort, "a"))))
	back := oneFrame(t, c, nic2)
	if back.dst.String() != cnatPod1 || back.dport != 33001 || back.src.String() != "8.8.8.8" || !back.csumOK {
		t.Fatalf("reply: %v, want 8.8.8.8:53 -> %s:33001", back, cnatPod1)
	}
	// Pod to pod: the destination is excluded and both ends are pods.
	e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, podIP(1), protoUDP, 64, udpL4(33002, 53, "q"))))
	if r := oneFrame(t, c, nic2); r.src.String() != cnatPod1 || r.sport != 33002 {
		t.Fatalf("pod to pod: %v, want untranslated", r)
	}
}

func TestCnatSessionPurgeRemovesSessionsTranslationsAndClients(t *testing.T) {
	e, c, _ := cnatEnv(t)
	e.mustCnat(apiTr(cnatVIP, 53, false, apiEP(cnatPod1, 53)))
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(40000, 53, "q"))))
	oneFrame(t, c, nic2)
	e.ok(&cnat.CnatSessionPurge{})
	if ss := dump[cnat.CnatSessionDetails](t, e.ch, &cnat.CnatSessionDump{}); len(ss) != 0 {
		t.Fatalf("sessions after purge: %+v", ss)
	}
	// The VIP is no client any more: the lookup misses (no route).
	tr := traceOf(e, func() {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(40000, 53, "q"))))
	})
	none(t, c)
	if strings.Contains(tr, "cnat") {
		t.Errorf("purged VIP still reaches cnat:\n%s", tr)
	}
	contains(t, tr, "ip4 destination lookup miss")
	// The reply path's learned client went with its session.
	if n := len(e.sim.st.cnat.clients); n != 0 {
		t.Errorf("%d clients left after purge", n)
	}
}

// maglevChoices sends one UDP flow per source port to the VIP and returns
// the backend each reached.
func maglevChoices(t *testing.T, e *testEnv, c *capture, ports int) []string {
	t.Helper()
	out := make([]string, ports)
	for i := range out {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(uint16(20000+i), 53, "q"))))
		out[i] = oneFrame(t, c, nic2).dst.String()
	}
	return out
}

func maglevTr(n int) cnat.CnatTranslation {
	var bs []cnat.CnatEndpoint
	for i := 0; i < n; i++ {
		bs = append(bs, apiEP(podIP(i), 53))
	}
	tr := apiTr(cnatVIP, 53, false, bs...)
	tr.LbType = cnat.CNAT_LB_TYPE_MAGLEV
	return tr
}

func TestCnatMaglevIsConsistentAcrossNodesAndOnBackendRemoval(t *testing.T) {
	const flows, backends = 400, 10
	e1, c1, _ := cnatEnv(t)
	e2, c2, clk2 := cnatEnv(t)
	e1.mustCnat(maglevTr(backends))
	e2.mustCnat(maglevTr(backends))
	a, b := maglevChoices(t, e1, c1, flows), maglevChoices(t, e2, c2, flows)
	used := map[string]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("flow %d: node 1 chose %s, node 2 %s", i, a[i], b[i])
		}
		used[a[i]]++
	}
	if len(used) != backends {
		t.Errorf("flows spread over %d backends, want %d: %v", len(used), backends, used)
	}
	// Remove the last backend on node 2 (an update keeps lb_type), let the
	// sessions expire and send the same flows again.
	e2.mustCnat(maglevTr(backends - 1))
	clk2.Step(31 * time.Second)
	after := maglevChoices(t, e2, c2, flows)
	removed, moved := podIP(backends-1), 0
	for i := range after {
		switch {
		case after[i] == removed:
			t.Fatalf("flow %d still reaches the removed backend", i)
		case a[i] != removed && after[i] != a[i]:
			moved++
		}
	}
	// Maglev moves only a small share of the flows whose backend stayed
	// (hash mod n would move about 90% of them).
	if moved > flows/10 {
		t.Errorf("%d of %d flows of remaining backends changed backend", moved, flows)
	}
	t.Logf("removing 1 of %d backends moved %d of %d flows of the remaining backends", backends, moved, flows-used[removed])
	contains(t, cli(e2, "show cnat translation"), "lb:maglev", "maglev backends map", "  backend#0: ")
}

func TestCnatIPv6VIP(t *testing.T) {
	e, c, _ := l3Env6(t)
	e.neighbor(2, hostB6, hostBMAC)
	vip := "fd00:10:96::10"
	tr := cnat.CnatTranslation{Vip: apiEP(vip, 80), IPProto: ip_types.IP_API_PROTO_TCP,
		Paths: []cnat.CnatEndpointTuple{{SrcEp: apiEP("::", 0), DstEp: apiEP(hostB6, 8080)}}}
	e.mustCnat(tr)
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP6, ip6Pkt(hostA6, vip, protoTCP, 64, tcpL4(40000, 80, tcpSYN))))
	r := one6(t, c, nic2)
	if r.dst.String() != hostB6 || r.dport != 8080 || r.src.String() != hostA6 || r.sport != 40000 || !r.csumOK || r.hop != 63 {
		t.Fatalf("IPv6 translated %v ports %d->%d csum %v", r, r.sport, r.dport, r.csumOK)
	}
	e.inject(nic2, ethFrame(nic2MAC, hostBMAC, etherTypeIP6, ip6Pkt(hostB6, hostA6, protoTCP, 64, tcpL4(8080, 40000, tcpSYN|tcpACK))))
	back := one6(t, c, nic1)
	if back.src.String() != vip || back.sport != 80 || back.dst.String() != hostA6 || back.dport != 40000 || !back.csumOK {
		t.Fatalf("IPv6 reply %v ports %d->%d", back, back.sport, back.dport)
	}
}

func TestCnatTranslationCounterCountsSessionCreations(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "stats.sock")
	e, c, _ := cnatEnvWith(t, func(o *Options) { o.StatsSocketPath = stats })
	r := newStatsReader(t, stats)
	e.mustCnat(apiTr("10.96.0.11", 53, false, apiEP(cnatPod1, 53)))
	id := e.mustCnat(apiTr(cnatVIP, 53, false, apiEP(cnatPod1, 53)))
	send := func(sport uint16) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(sport, 53, "q"))))
		oneFrame(t, c, nic2)
	}
	send(40000)
	send(40000) // same flow: a session hit, not counted
	send(40001)
	pk, by := r.combined(cnatCounterName, int(id))
	if pk != 2 || by != 2*(ip4HdrLen+udpHdrLen+1) {
		t.Fatalf("%s[%d] = %d packets %d bytes, want 2 packets (the session creations) of 29 bytes", cnatCounterName, id, pk, by)
	}
}

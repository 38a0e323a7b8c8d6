package vppsim

import (
	"path/filepath"
	"slices"
	"testing"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/binapi/acl"
	interfaces "go.fd.io/govpp/binapi/interface"
)

// statsReader reads the simulator's stats segment as the agent does: govpp's
// statsclient on the stats socket.
type statsReader struct {
	t  *testing.T
	sc *statsclient.StatsClient
}

func newStatsReader(t *testing.T, path string) *statsReader {
	t.Helper()
	sc := statsclient.NewStatsClient(path)
	if err := sc.Connect(); err != nil {
		t.Fatalf("statsclient connect %s: %v", path, err)
	}
	t.Cleanup(func() { _ = sc.Disconnect() })
	return &statsReader{t: t, sc: sc}
}

// entry reads one entry by its exact name (nil if absent).
func (r *statsReader) entry(name string) adapter.Stat {
	r.t.Helper()
	list, err := r.sc.DumpStats("^" + regexpQuote(name) + "$")
	if err != nil {
		r.t.Fatalf("dump %s: %v", name, err)
	}
	for _, e := range list {
		if string(e.Name) == name {
			return e.Data
		}
	}
	return nil
}

func regexpQuote(s string) string {
	out := make([]byte, 0, len(s)*2)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == '(' || c == ')' || c == '[' || c == ']' || c == '+' || c == '*' || c == '?' || c == '|' || c == '^' || c == '$' || c == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// combined returns element k of a combined counter, thread 0.
func (r *statsReader) combined(name string, k int) (packets, bytes uint64) {
	r.t.Helper()
	s, ok := r.entry(name).(adapter.CombinedCounterStat)
	if !ok || len(s) == 0 || k >= len(s[0]) {
		r.t.Fatalf("%s[%d]: not a combined counter with that element: %#v", name, k, r.entry(name))
	}
	return s[0][k].Packets(), s[0][k].Bytes()
}

// simple returns element k of a simple counter (a symlink reads as one element).
func (r *statsReader) simple(name string, k int) uint64 {
	r.t.Helper()
	s, ok := r.entry(name).(adapter.SimpleCounterStat)
	if !ok || len(s) == 0 || k >= len(s[0]) {
		r.t.Fatalf("%s[%d]: not a simple counter with that element: %#v", name, k, r.entry(name))
	}
	return uint64(s[0][k])
}

// newStatsNATEnv is the NAT test node with the stats segment served.
func newStatsNATEnv(t *testing.T) (*natEnv, *statsReader) {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats.sock")
	n := newNATEnvWith(t, 0, func(o *Options) { o.StatsSocketPath = stats })
	return n, newStatsReader(t, stats)
}

// TestStatsSegmentCountsTrafficExactly sends known traffic through the NAT node
// and reads VPP's counters back through govpp's statsclient: interface rx/tx,
// drops, an error by its symbolic name, ACL rule matches and NAT44-ED sessions and
// translations, each to the packet.
func TestStatsSegmentCountsTrafficExactly(t *testing.T) {
	n, r := newStatsNATEnv(t)
	e := n.testEnv
	const outside, podSide = 1, 2

	// Three UDP packets of one flow from pod 1 to the Internet: SNAT on the
	// output interface (nat44-ed-in2out-output), one session, the first
	// packet through the slow path.
	pkt := ethFrame(nic2MAC, pod1MAC, etherTypeIP4, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5000, 53, "query")))
	for range 3 {
		n.inject(nic2, pkt)
	}
	if got := len(n.c.take(nic1)); got != 3 {
		t.Fatalf("%d packets out of %s, want 3", got, nic1)
	}
	if p, b := r.combined("/if/rx", podSide); p != 3 || b != uint64(3*len(pkt)) {
		t.Errorf("/if/rx[%s] = %d packets %d bytes, want 3 and %d", nic2, p, b, 3*len(pkt))
	}
	if p, _ := r.combined("/if/tx", outside); p != 3 {
		t.Errorf("/if/tx[%s] = %d packets, want 3", nic1, p)
	}
	if v := r.simple("/if/ip4", podSide); v != 3 {
		t.Errorf("/if/ip4[%s] = %d, want 3", nic2, v)
	}
	if v := r.simple("/nat44-ed/total-sessions", 0); v != 1 {
		t.Errorf("total-sessions = %d, want 1", v)
	}
	if v := r.simple("/nat44-ed/in2out/slowpath/udp", outside); v != 1 {
		t.Errorf("in2out slowpath udp on the output interface = %d, want 1", v)
	}
	// The next two hit the session in nat44-ed-in2out on the pod side,
	// which is inside and outside (Contiv's pod-facing interface).
	if v := r.simple("/nat44-ed/in2out/fastpath/udp", podSide); v != 2 {
		t.Errorf("in2out fastpath udp on the receiving interface = %d, want 2", v)
	}
	if s, ok := r.entry("/nat44-ed/max-cfg-sessions").(adapter.ScalarStat); !ok || s != natDefaultSessions {
		t.Errorf("max-cfg-sessions = %v, want %d", r.entry("/nat44-ed/max-cfg-sessions"), natDefaultSessions)
	}

	// Two packets that are not IPv4: ip4-input drops them; the error is
	// named as VPP's stats segment names it, the description as "show
	// errors" prints it.
	bad := ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5001, 53, "x"))
	bad[0] = 0x55
	for range 2 {
		n.fromPod(pod1MAC, bad)
	}
	if v := r.simple("/err/ip4-input/version", 0); v != 2 {
		t.Errorf("/err/ip4-input/version = %d, want 2", v)
	}
	if r.entry("/err/ip4-input/ip4 version != 4") != nil {
		t.Error("the error is published under its description, not its symbolic name")
	}
	contains(t, cli(e, "show errors"), "ip4 version != 4")
	if v := r.simple("/if/drops", podSide); v != 2 {
		t.Errorf("/if/drops[%s] = %d, want 2", nic2, v)
	}

	// ACL rule matches, counted once enabled, on the rule that matched;
	// VPP 25.10 answers the enable with acl_del_reply.
	deny, _ := e.addACL(noIndex, "deny-pod2", rule(aclPermit, pod1IP+"/32", "0.0.0.0/0", 0, 0), rule(aclDeny, pod2IP+"/32", "0.0.0.0/0", 0, 0))
	if rv := e.setACLs(podSide, []uint32{deny}); rv != 0 {
		t.Fatal(rv)
	}
	denied := ipPkt(pod2IP, "8.8.8.8", protoUDP, 64, udpL4(6000, 53, "query"))
	n.fromPod(pod2MAC, denied) // not counted: counters are off
	if err := e.ch.SendRequest(&acl.ACLStatsIntfCountersEnable{Enable: true}).ReceiveReply(&acl.ACLDelReply{}); err != nil {
		t.Fatalf("acl_stats_intf_counters_enable: %v", err)
	}
	for range 2 {
		n.fromPod(pod2MAC, denied)
	}
	name := "/acl/" + utoa(deny) + "/matches"
	if p, b := r.combined(name, 1); p != 2 || b != uint64(2*len(denied)) {
		t.Errorf("%s[rule 1] = %d packets %d bytes, want 2 and %d (IP bytes)", name, p, b, 2*len(denied))
	}
	if p, _ := r.combined(name, 0); p != 0 {
		t.Errorf("%s[rule 0] = %d, want 0", name, p)
	}
	if v := r.simple("/err/acl-plugin-in-ip4-fa/ACL deny packets", 0); v != 3 {
		t.Errorf("ACL deny packets = %d, want 3", v)
	}
	if v := r.simple("/if/drops", podSide); v != 5 {
		t.Errorf("/if/drops[%s] = %d, want 5", nic2, v)
	}

	// sw_interface_clear_stats zeroes the interface's counters, not the errors.
	e.ok(&interfaces.SwInterfaceClearStats{SwIfIndex: podSide})
	if p, _ := r.combined("/if/rx", podSide); p != 0 {
		t.Errorf("/if/rx after clear = %d", p)
	}
	if p, _ := r.combined("/if/tx", outside); p != 3 {
		t.Errorf("/if/tx of the other interface after clear = %d, want 3", p)
	}
	if v := r.simple("/err/ip4-input/version", 0); v != 2 {
		t.Errorf("errors after clearing interfaces = %d, want 2", v)
	}
}

// TestStatsSegmentFollowsInterfacesAndRestart: interfaces are published under
// VPP's names as they are created and deleted, and a VPP restart serves a new
// segment with local0 and the NICs only.
func TestStatsSegmentFollowsInterfacesAndRestart(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "run", "stats.sock")
	e := newEnvWith(t, func(o *Options) { o.StatsSocketPath = stats })
	names := func() []string {
		t.Helper()
		r := newStatsReader(t, stats)
		s, _ := r.entry("/if/names").(adapter.NameStat)
		out := make([]string, len(s))
		for i, n := range s {
			out[i] = string(n)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"local0", nic1, nic2}) {
		t.Fatalf("/if/names at start = %q", got)
	}
	loop := e.loopback()
	if got := names(); !slices.Equal(got, []string{"local0", nic1, nic2, "loop0"}) {
		t.Fatalf("/if/names with a loopback = %q", got)
	}
	e.ok(&interfaces.DeleteLoopback{SwIfIndex: loop})
	if got := names(); !slices.Equal(got, []string{"local0", nic1, nic2, "deleted"}) {
		t.Fatalf("/if/names after delete = %q", got)
	}
	e.sim.Restart()
	if got := names(); !slices.Equal(got, []string{"local0", nic1, nic2}) {
		t.Fatalf("/if/names after restart = %q", got)
	}
}

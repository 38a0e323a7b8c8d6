package statscollector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.fd.io/govpp/adapter"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg/statsegtest"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/statscollector"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// metaMap is a descriptor's metadata map as the scheduler keeps it.
type metaMap struct {
	mu sync.RWMutex
	m  map[string]kvapi.Metadata
}

func (m *metaMap) GetValue(label string) (kvapi.Metadata, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.m[label]
	return v, ok
}

func (m *metaMap) ListAllNames() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (m *metaMap) set(label string, v kvapi.Metadata) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]kvapi.Metadata)
	}
	m.m[label] = v
}

func (m *metaMap) del(label string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, label)
}

// pods is ipnet's interface -> pod map.
type pods struct {
	mu sync.RWMutex
	m  map[string][2]string
}

func (p *pods) GetPodByIf(ifName string) (string, string, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.m[ifName]
	return id[0], id[1], ok
}

func (p *pods) set(ifName, ns, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[string][2]string)
	}
	p.m[ifName] = [2]string{ns, name}
}

func (p *pods) del(ifName string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, ifName)
}

type nodes map[string]*nodesync.Node

func (n nodes) GetAllNodes() map[string]*nodesync.Node { return n }

type policyRules map[string][]statscollector.RuleOwner

func (p policyRules) ACLRules(acl string) []statscollector.RuleOwner { return p[acl] }

// node is one simulated node: the stats segment that VPP (here the test) writes,
// the agent's view of its interfaces, and the collector reading both.
type node struct {
	seg    *statseg.Segment
	path   string
	ifaces *metaMap
	acls   *metaMap
	pods   *pods
	col    *statscollector.Plugin
}

func newNode(t testing.TB, rules statscollector.PolicyRules) *node {
	t.Helper()
	seg, path := statsegtest.Serve(t, statseg.Config{})
	n := &node{seg: seg, path: path, ifaces: &metaMap{}, acls: &metaMap{}, pods: &pods{}}
	n.col = statscollector.NewPlugin(statscollector.Deps{
		StatsSocketPath: path,
		Interfaces:      n.ifaces,
		ACLs:            n.acls,
		Pods:            n.pods,
		Nodes:           nodes{"k8s-worker1": {ID: 2, Name: "k8s-worker1"}, "k8s-master": {ID: 1, Name: "k8s-master"}},
		PolicyRules:     rules,
	})
	if err := n.col.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.col.Close() })
	n.addIf(t, 0, "local0", "", "", "")
	return n
}

// addIf creates interface sw in VPP (VPP's name vppName) and in the agent's view
// (logical name), wiring pod ns/pod when given.
func (n *node) addIf(t testing.TB, sw uint32, vppName, logical, ns, pod string) {
	t.Helper()
	if err := n.seg.AddInterface(sw, vppName); err != nil {
		t.Fatal(err)
	}
	if logical != "" {
		n.ifaces.set(logical, &ifaceidx.Metadata{SwIfIndex: sw})
	}
	if pod != "" {
		n.pods.set(logical, ns, pod)
	}
}

// traffic counts packets of the given size through interface sw in both directions
// and drops some of what it received.
func (n *node) traffic(sw uint32, rx, tx, drops, size uint64) {
	for range rx {
		n.seg.AddIfCombined(0, statseg.IfRx, sw, 1, size)
	}
	for range tx {
		n.seg.AddIfCombined(0, statseg.IfTx, sw, 1, size)
	}
	n.seg.AddIfSimple(0, statseg.IfDrops, sw, drops)
}

func compare(t *testing.T, col prometheus.Collector, want string, names ...string) {
	t.Helper()
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

const podHelp = `# HELP contiv_dataplane_pod_interface_rx_packets_total Packets VPP received on the VPP interface of the pod (VPP's view: rx is what the pod sent).
# TYPE contiv_dataplane_pod_interface_rx_packets_total counter
`

func TestScrapeExportsExactPodTunnelErrorAndNATCounters(t *testing.T) {
	n := newNode(t, nil)
	n.addIf(t, 1, "tap0", "tap-vpp2", "", "")                           // the host interconnect: not a pod
	n.addIf(t, 2, "tap1", "vpp-tap-aaaa", "default", "web-1")           // a pod
	n.addIf(t, 3, "tap2", "vpp-tap-bbbb", "kube-system", "coredns-abc") // a pod
	n.addIf(t, 4, "vxlan_tunnel0", "vxlan2", "", "")                    // the tunnel to node ID 2
	n.addIf(t, 5, "loop0", "vxlanBVI", "", "")                          // not a tunnel
	n.traffic(1, 50, 50, 0, 1000)
	n.traffic(2, 3, 2, 1, 100)
	n.traffic(3, 7, 0, 0, 64)
	n.traffic(4, 4, 5, 2, 150)
	ttl, err := n.seg.RegisterErrors("ip4-input", "time_expired", "valid_ip4_packets")
	if err != nil {
		t.Fatal(err)
	}
	deny, err := n.seg.RegisterErrors("acl-plugin-out-ip4-fa", "ACL deny packets")
	if err != nil {
		t.Fatal(err)
	}
	n.seg.AddError(0, ttl, 2)
	n.seg.AddError(0, deny, 9)
	n.seg.SetNATSessions(0, 12)
	n.seg.SetNATMaxCfgSessions(63000)

	compare(t, n.col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-1"} 3
contiv_dataplane_pod_interface_rx_packets_total{namespace="kube-system",pod="coredns-abc"} 7
# HELP contiv_dataplane_pod_interface_tx_bytes_total Bytes VPP transmitted on the VPP interface of the pod (VPP's view: rx is what the pod sent).
# TYPE contiv_dataplane_pod_interface_tx_bytes_total counter
contiv_dataplane_pod_interface_tx_bytes_total{namespace="default",pod="web-1"} 200
contiv_dataplane_pod_interface_tx_bytes_total{namespace="kube-system",pod="coredns-abc"} 0
# HELP contiv_dataplane_pod_interface_drops_total Packets received on the VPP interface that VPP dropped, of the pod (VPP's view: rx is what the pod sent).
# TYPE contiv_dataplane_pod_interface_drops_total counter
contiv_dataplane_pod_interface_drops_total{namespace="default",pod="web-1"} 1
contiv_dataplane_pod_interface_drops_total{namespace="kube-system",pod="coredns-abc"} 0
# HELP contiv_dataplane_vxlan_rx_bytes_total Bytes VPP received on the VPP interface of the VXLAN tunnel to the remote node.
# TYPE contiv_dataplane_vxlan_rx_bytes_total counter
contiv_dataplane_vxlan_rx_bytes_total{remote_node="k8s-worker1"} 600
# HELP contiv_dataplane_vxlan_tx_packets_total Packets VPP transmitted on the VPP interface of the VXLAN tunnel to the remote node.
# TYPE contiv_dataplane_vxlan_tx_packets_total counter
contiv_dataplane_vxlan_tx_packets_total{remote_node="k8s-worker1"} 5
# HELP contiv_dataplane_vpp_errors_total VPP's error counters (show errors) by graph node and reason, the drop reasons among them; only counters that are not zero.
# TYPE contiv_dataplane_vpp_errors_total counter
contiv_dataplane_vpp_errors_total{reason="ACL deny packets",vpp_node="acl-plugin-out-ip4-fa"} 9
contiv_dataplane_vpp_errors_total{reason="time_expired",vpp_node="ip4-input"} 2
# HELP contiv_dataplane_nat44_sessions NAT44-ED sessions in VPP, all threads.
# TYPE contiv_dataplane_nat44_sessions gauge
contiv_dataplane_nat44_sessions 12
# HELP contiv_dataplane_nat44_max_sessions NAT44-ED's configured session limit.
# TYPE contiv_dataplane_nat44_max_sessions gauge
contiv_dataplane_nat44_max_sessions 63000
# HELP contiv_dataplane_stats_up 1 when this scrape read VPP's stats segment, 0 when it could not (no other contiv_dataplane_ metric is exported then).
# TYPE contiv_dataplane_stats_up gauge
contiv_dataplane_stats_up 1
`, "contiv_dataplane_pod_interface_rx_packets_total", "contiv_dataplane_pod_interface_tx_bytes_total",
		"contiv_dataplane_pod_interface_drops_total", "contiv_dataplane_vxlan_rx_bytes_total",
		"contiv_dataplane_vxlan_tx_packets_total", "contiv_dataplane_vpp_errors_total",
		"contiv_dataplane_nat44_sessions", "contiv_dataplane_nat44_max_sessions", "contiv_dataplane_stats_up")

	// Counting on: the next scrape sees the new totals, nothing is cached.
	n.traffic(2, 1, 0, 0, 100)
	compare(t, n.col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-1"} 4
contiv_dataplane_pod_interface_rx_packets_total{namespace="kube-system",pod="coredns-abc"} 7
`, "contiv_dataplane_pod_interface_rx_packets_total")
}

func TestDeletedPodSeriesDisappear(t *testing.T) {
	n := newNode(t, nil)
	n.addIf(t, 1, "tap0", "vpp-tap-aaaa", "default", "web-1")
	n.addIf(t, 2, "tap1", "vpp-tap-bbbb", "default", "web-2")
	n.traffic(1, 1, 1, 0, 60)
	n.traffic(2, 2, 2, 0, 60)
	compare(t, n.col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-1"} 1
contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-2"} 2
`, "contiv_dataplane_pod_interface_rx_packets_total")

	// CNI DEL of web-1: ipnet forgets the pod, the interface goes from the scheduler
	// and from VPP.
	n.pods.del("vpp-tap-aaaa")
	n.ifaces.del("vpp-tap-aaaa")
	if err := n.seg.DeleteInterface(1); err != nil {
		t.Fatal(err)
	}
	compare(t, n.col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-2"} 2
`, "contiv_dataplane_pod_interface_rx_packets_total")
	for _, name := range []string{"contiv_dataplane_pod_interface_tx_bytes_total", "contiv_dataplane_pod_interface_drops_total"} {
		if got := testutil.CollectAndCount(n.col, name); got != 1 {
			t.Errorf("%s: %d series after web-1 was deleted, want 1 (web-2)", name, got)
		}
	}

	// The index is reused by a new pod: its counters start from zero, under its labels.
	n.addIf(t, 1, "tap0", "vpp-tap-cccc", "default", "web-3")
	compare(t, n.col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-2"} 2
contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-3"} 0
`, "contiv_dataplane_pod_interface_rx_packets_total")
}

func TestPolicyRuleCountersCarryThePolicyAndVerdict(t *testing.T) {
	rules := policyRules{
		"contiv-policy-EGRESS-abc": {
			{Policy: "default/allow-web", Deny: false},
			{Policy: "default/allow-dns", Deny: false},
			{Policy: "default/allow-web,default/allow-dns", Deny: true},
		},
	}
	n := newNode(t, rules)
	n.acls.set("contiv-policy-EGRESS-abc", &aclplugin.ACLMetadata{Index: 1})
	n.acls.set("someone-elses-acl", &aclplugin.ACLMetadata{Index: 0})
	if err := n.seg.SetACL(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := n.seg.SetACL(1, 3); err != nil {
		t.Fatal(err)
	}
	n.seg.EnableACLCounters(true)
	n.seg.AddACLMatch(0, 1, 0, 100)
	n.seg.AddACLMatch(0, 1, 0, 100)
	n.seg.AddACLMatch(0, 1, 2, 60) // denied
	n.seg.AddACLMatch(0, 0, 0, 60) // not a policy's ACL: not exported
	compare(t, n.col, `# HELP contiv_dataplane_policy_rule_packets_total Packets that matched a rule of a NetworkPolicy's ACL (verdict deny: denied); only rules that matched.
# TYPE contiv_dataplane_policy_rule_packets_total counter
contiv_dataplane_policy_rule_packets_total{acl="contiv-policy-EGRESS-abc",policy="default/allow-web",rule="0",verdict="permit"} 2
contiv_dataplane_policy_rule_packets_total{acl="contiv-policy-EGRESS-abc",policy="default/allow-web,default/allow-dns",rule="2",verdict="deny"} 1
# HELP contiv_dataplane_policy_rule_bytes_total Bytes that matched a rule of a NetworkPolicy's ACL; only rules that matched.
# TYPE contiv_dataplane_policy_rule_bytes_total counter
contiv_dataplane_policy_rule_bytes_total{acl="contiv-policy-EGRESS-abc",policy="default/allow-web",rule="0",verdict="permit"} 200
contiv_dataplane_policy_rule_bytes_total{acl="contiv-policy-EGRESS-abc",policy="default/allow-web,default/allow-dns",rule="2",verdict="deny"} 60
`, "contiv_dataplane_policy_rule_packets_total", "contiv_dataplane_policy_rule_bytes_total")
}

func TestWithoutVPPOnlyUpZeroThenCountersWhenVPPComesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.sock")
	ifaces, pods := &metaMap{}, &pods{}
	col := statscollector.NewPlugin(statscollector.Deps{
		StatsSocketPath: path,
		Interfaces:      ifaces,
		Pods:            pods,
		ScrapeTimeout:   100 * time.Millisecond, // real time: statsclient polls for the socket file
	})
	if err := col.Init(); err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	if got := testutil.CollectAndCount(col); got != 1 {
		t.Errorf("without VPP %d series, want only contiv_dataplane_stats_up", got)
	}
	compare(t, col, `# HELP contiv_dataplane_stats_up 1 when this scrape read VPP's stats segment, 0 when it could not (no other contiv_dataplane_ metric is exported then).
# TYPE contiv_dataplane_stats_up gauge
contiv_dataplane_stats_up 0
`, "contiv_dataplane_stats_up")

	seg, err := statseg.New(statseg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	srv, err := seg.Serve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := seg.AddInterface(1, "tap0"); err != nil {
		t.Fatal(err)
	}
	ifaces.set("vpp-tap-aaaa", &ifaceidx.Metadata{SwIfIndex: 1})
	pods.set("vpp-tap-aaaa", "default", "web-1")
	seg.AddIfCombined(0, statseg.IfRx, 1, 5, 500)
	compare(t, col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-1"} 5
`, "contiv_dataplane_pod_interface_rx_packets_total")
}

func TestVPPRestartIsFollowed(t *testing.T) {
	n := newNode(t, nil)
	n.addIf(t, 1, "tap0", "vpp-tap-aaaa", "default", "web-1")
	n.traffic(1, 5, 0, 0, 100)
	compare(t, n.col, podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-1"} 5
`, "contiv_dataplane_pod_interface_rx_packets_total")

	// VPP restarts: a new segment on the same socket, the pod re-created at index 1.
	seg, err := statseg.New(statseg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	srv, err := seg.Serve(context.Background(), n.path)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := seg.AddInterface(1, "tap0"); err != nil {
		t.Fatal(err)
	}
	seg.AddIfCombined(0, statseg.IfRx, 1, 2, 200)
	testkit.Eventually(t, 10*time.Second, "the collector reads the new segment", func() error {
		return testutil.CollectAndCompare(n.col, strings.NewReader(podHelp+`contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web-1"} 2
`), "contiv_dataplane_pod_interface_rx_packets_total")
	})
}

func TestInitNamesMissingDependencies(t *testing.T) {
	err := statscollector.NewPlugin(statscollector.Deps{ScrapeTimeout: -time.Second}).Init()
	for _, want := range []string{"Deps.Interfaces", "Deps.Pods", "Deps.ScrapeTimeout", "-1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Init error %v, want it to name %s", err, want)
		}
	}
}

// BenchmarkScrape110Pods is the goal: one scrape of a node with 110 pods
// (plus the host interconnect and 20 tunnels, 110 policy ACLs of 5 rules, and VPP
// error counters of which one in ten counts) through the registry, as GET /metrics
// does before encoding. Goal: < 5 ms CPU and < 5 MB. errors=2000 is a VPP with
// its usual plugins loaded, errors=200 about what the simulator registers.
func BenchmarkScrape110Pods(b *testing.B) {
	for _, errs := range []int{200, 2000} {
		b.Run(fmt.Sprintf("errors=%d", errs), func(b *testing.B) { benchmarkScrape(b, errs/10) })
	}
}

func benchmarkScrape(b *testing.B, errorNodes int) {
	rules := policyRules{}
	n := newNode(b, rules)
	n.addIf(b, 1, "tap0", "tap-vpp2", "", "")
	ids := nodes{}
	for i := range 20 {
		name := fmt.Sprintf("worker-%d", i+2)
		ids[name] = &nodesync.Node{ID: uint32(i + 2), Name: name}
		n.addIf(b, uint32(2+i), fmt.Sprintf("vxlan_tunnel%d", i), fmt.Sprintf("vxlan%d", i+2), "", "")
		n.traffic(uint32(2+i), 10, 10, 1, 100)
	}
	n.seg.EnableACLCounters(true)
	for p := range 110 {
		sw := uint32(100 + p)
		logical := fmt.Sprintf("vpp-tap-%064d", p)
		n.addIf(b, sw, fmt.Sprintf("tap%d", sw), logical, fmt.Sprintf("ns-%d", p%10), fmt.Sprintf("pod-%d", p))
		n.traffic(sw, 10, 10, 1, 100)
		acl := fmt.Sprintf("contiv-policy-EGRESS-%d", p)
		n.acls.set(acl, &aclplugin.ACLMetadata{Index: uint32(p)})
		if err := n.seg.SetACL(uint32(p), 5); err != nil {
			b.Fatal(err)
		}
		owners := make([]statscollector.RuleOwner, 5)
		for r := range owners {
			owners[r] = statscollector.RuleOwner{Policy: fmt.Sprintf("ns-%d/policy-%d", p%10, r), Deny: r == 4}
		}
		rules[acl] = owners
		n.seg.AddACLMatch(0, uint32(p), 0, 100)
		n.seg.AddACLMatch(0, uint32(p), 4, 100)
	}
	for node := range errorNodes {
		reasons := make([]string, 10)
		for r := range reasons {
			reasons[r] = fmt.Sprintf("reason_%d", r)
		}
		first, err := n.seg.RegisterErrors(fmt.Sprintf("node-%d", node), reasons...)
		if err != nil {
			b.Fatal(err)
		}
		if node%10 == 0 {
			for r := range 10 {
				n.seg.AddError(0, first+statseg.ErrorIndex(r), 3)
			}
		}
	}
	col := statscollector.NewPlugin(statscollector.Deps{
		StatsSocketPath: n.path, Interfaces: n.ifaces, ACLs: n.acls, Pods: n.pods, Nodes: ids, PolicyRules: rules,
	})
	if err := col.Init(); err != nil {
		b.Fatal(err)
	}
	defer col.Close()
	reg := prometheus.NewRegistry() // as the agent's (health.MetricsKey)
	reg.MustRegister(col)
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		series += len(mf.Metric)
	}
	b.ReportMetric(float64(series), "series")
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time of the whole process (the GC's work on other cores included): on a
	// shared machine, ns/op is wall time and waits for a core.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestEveryMetricIsDocumented keeps docs/METRICS-DATAPLANE.md and the collector in step.
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/METRICS-DATAPLANE.md")
	if err != nil {
		t.Fatal(err)
	}
	col := statscollector.NewPlugin(statscollector.Deps{Interfaces: &metaMap{}, Pods: &pods{}})
	if err := col.Init(); err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	ch := make(chan *prometheus.Desc, 64)
	col.Describe(ch)
	close(ch)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	n := 0
	for d := range ch {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		n++
		if !strings.Contains(string(doc), "`"+m[1]+"`") {
			t.Errorf("%s is not in docs/METRICS-DATAPLANE.md", m[1])
		}
	}
	if n < 10 {
		t.Errorf("only %d metrics described", n)
	}
}

// busyStats is a stats segment that VPP keeps changing: every read is interrupted.
type busyStats struct {
	adapter.StatsAPI
	clock *testkit.Clock
	reads int
}

func (b *busyStats) PrepareDir(...string) (*adapter.StatDir, error) {
	b.reads++
	b.clock.Step(30 * time.Millisecond) // each read takes its time
	return nil, adapter.ErrStatsDataBusy
}

func TestAScrapeOfABusySegmentEndsAtTheTimeout(t *testing.T) {
	clock := testkit.NewClock()
	stats := &busyStats{clock: clock}
	col := statscollector.NewPlugin(statscollector.Deps{
		Stats: stats, Interfaces: &metaMap{}, Pods: &pods{},
		ScrapeTimeout: 100 * time.Millisecond, Now: clock.Now,
	})
	if err := col.Init(); err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	compare(t, col, `# HELP contiv_dataplane_stats_up 1 when this scrape read VPP's stats segment, 0 when it could not (no other contiv_dataplane_ metric is exported then).
# TYPE contiv_dataplane_stats_up gauge
contiv_dataplane_stats_up 0
`)
	if stats.reads != 4 { // at 0, 30, 60 and 90 ms; the one ending at 120 ms is the last
		t.Errorf("%d reads within the 100 ms bound, want 4", stats.reads)
	}
}

// TestScrapeWithoutStatsSocketDoesNotWait: without VPP's stats socket a scrape
// exports stats_up 0 at once instead of waiting for the socket until
// ScrapeTimeout (which would slow every GET /metrics of the agent).
func TestScrapeWithoutStatsSocketDoesNotWait(t *testing.T) {
	col := statscollector.NewPlugin(statscollector.Deps{StatsSocketPath: filepath.Join(t.TempDir(), "stats.sock"),
		Interfaces: &metaMap{}, Pods: &pods{}, ScrapeTimeout: 4 * time.Second})
	if err := col.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { col.Close() })
	start := time.Now() // real time: govpp's client waits for the socket in real time
	compare(t, col, `# HELP contiv_dataplane_stats_up 1 when this scrape read VPP's stats segment, 0 when it could not (no other contiv_dataplane_ metric is exported then).
# TYPE contiv_dataplane_stats_up gauge
contiv_dataplane_stats_up 0
`, "contiv_dataplane_stats_up")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a scrape without the stats socket took %v", d)
	}
}

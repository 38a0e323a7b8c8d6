package policy

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/binapi/vlib"

	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/acl"
)

// aclVerdict is the ACL rule that decided a traced packet (VPP's trace of
// acl-plugin-{in,out}-ip4-fa: the ACL's index and tag, the rule's index).
var aclVerdict = regexp.MustCompile(`acl (\d+) \(([^)]*)\) rule (\d+): (deny|permit\+reflect|permit)`)

// tracedVerdicts probes src -> dst with VPP tracing on and returns the ACL
// rules that decided the packets of the probe: [index, tag, rule, verdict]
// per traced packet (a packet's record names its rule on the ACL node's line
// and, when dropped, on error-drop's: once here).
func (e *trafficEnv) tracedVerdicts(src, dst *tPod, port uint16) (reached bool, verdicts [][]string) {
	e.t.Helper()
	for _, cmd := range []string{"clear trace", "trace add virtio-input 10"} {
		e.call(&vlib.CliInband{Cmd: cmd}, &vlib.CliInbandReply{})
	}
	reached = e.probe(src, dst, true, port)
	rep := &vlib.CliInbandReply{}
	e.call(&vlib.CliInband{Cmd: "show trace"}, rep)
	for _, record := range strings.Split(rep.Reply, "\nPacket ") {
		seen := map[string]bool{}
		for _, m := range aclVerdict.FindAllStringSubmatch(record, -1) {
			if !seen[m[0]] {
				seen[m[0]] = true
				verdicts = append(verdicts, m[1:])
			}
		}
	}
	return reached, verdicts
}

// TestTrafficVerdictsAreOwnedByTheirPolicy: the ACL rule VPP applies to a
// probe (read from VPP's packet trace) is, in the policy plugin's rule map,
// the rule of the NetworkPolicy that allows or denies it: a denied probe hits
// a DENY owned by the policy isolating the destination, an allowed one a
// PERMIT of the policy that allows it. And VPP counted each such packet on
// that rule in its stats segment (/acl/<index>/matches, after the
// acl_stats_intf_counters_enable the ACL plugin sends): the counter
// statscollector exports as the policy's contiv_dataplane_policy_rule_*.
func TestTrafficVerdictsAreOwnedByTheirPolicy(t *testing.T) {
	e := newTrafficEnv(t)
	stats := statsclient.NewStatsClient(e.sim.StatsSocketPath())
	if err := stats.Connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stats.Disconnect() })
	type ruleRef struct {
		acl  string
		rule int
	}
	// ruleMatches reads every ACL rule's match counter (packets, all threads).
	ruleMatches := func() map[ruleRef]uint64 {
		list, err := stats.DumpStats("^/acl/[0-9]+/matches$")
		if err != nil {
			t.Fatal(err)
		}
		out := map[ruleRef]uint64{}
		for _, entry := range list {
			acl := strings.TrimSuffix(strings.TrimPrefix(string(entry.Name), "/acl/"), "/matches")
			for _, thread := range entry.Data.(adapter.CombinedCounterStat) {
				for rule, c := range thread {
					out[ruleRef{acl, rule}] += c.Packets()
				}
			}
		}
		return out
	}
	xa, xb, ya := e.pods[0], e.pods[1], e.pods[3]
	e.resync(&pm.Policy{Namespace: "x", Name: "from-b", Pods: tsel("pod", "a"),
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: tsel("pod", "b")}}}}})
	for _, c := range []struct {
		src     *tPod
		reached bool
		verdict string
		owner   acl.RuleOwner
	}{
		{ya, false, "deny", acl.RuleOwner{Policy: "x/from-b", Deny: true}},
		{xb, true, "permit+reflect", acl.RuleOwner{Policy: "x/from-b"}},
	} {
		before := ruleMatches()
		reached, verdicts := e.tracedVerdicts(c.src, xa, 80)
		after := ruleMatches()
		hits := map[ruleRef]uint64{}
		for _, v := range verdicts {
			rule, _ := strconv.Atoi(v[2])
			hits[ruleRef{v[0], rule}]++
		}
		for r, n := range after {
			if got := n - before[r]; got != hits[r] {
				t.Errorf("%s -> %s: VPP counted %d packets on rule %d of ACL %s, the trace shows %d", c.src.id, xa.id, got, r.rule, r.acl, hits[r])
			}
		}
		if c.owner.Deny && len(hits) == 0 {
			t.Errorf("%s -> %s: no rule counted the denied probe", c.src.id, xa.id)
		}
		if reached != c.reached {
			t.Errorf("%s -> %s: reached %v, want %v", c.src.id, xa.id, reached, c.reached)
		}
		found := false
		for _, v := range verdicts {
			if v[3] != c.verdict {
				continue
			}
			rule, _ := strconv.Atoi(v[2])
			owners := e.plugin.ACLRules(v[1])
			if rule >= len(owners) {
				t.Errorf("%s -> %s: VPP applied rule %d of %s (%s); the plugin's map has %v", c.src.id, xa.id, rule, v[1], v[3], owners)
				continue
			}
			found = true
			if owners[rule] != c.owner {
				t.Errorf("%s -> %s: rule %d of %s (%s) is owned by %+v, want %+v", c.src.id, xa.id, rule, v[1], v[3], owners[rule], c.owner)
			}
		}
		if !found {
			t.Errorf("%s -> %s: no ACL rule with verdict %s in the trace: %v", c.src.id, xa.id, c.verdict, verdicts)
		}
	}
}

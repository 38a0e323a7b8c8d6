package policy

import (
	"regexp"
	"strconv"
	"testing"

	"go.fd.io/govpp/binapi/vlib"

	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/acl"
)

// aclVerdict is the ACL rule that decided a traced packet (VPP's trace of
// acl-plugin-{in,out}-ip4-fa: the ACL's index and tag, the rule's index).
var aclVerdict = regexp.MustCompile(`acl (\d+) \(([^)]*)\) rule (\d+): (deny|permit\+reflect|permit)`)

// tracedVerdicts probes src -> dst with VPP tracing on and returns the ACL
// rules that decided the packets of the probe: "<tag> <rule>" -> verdict.
func (e *trafficEnv) tracedVerdicts(src, dst *tPod, port uint16) (reached bool, verdicts [][]string) {
	e.t.Helper()
	for _, cmd := range []string{"clear trace", "trace add virtio-input 10"} {
		e.call(&vlib.CliInband{Cmd: cmd}, &vlib.CliInbandReply{})
	}
	reached = e.probe(src, dst, true, port)
	rep := &vlib.CliInbandReply{}
	e.call(&vlib.CliInband{Cmd: "show trace"}, rep)
	for _, m := range aclVerdict.FindAllStringSubmatch(rep.Reply, -1) {
		verdicts = append(verdicts, m[2:])
	}
	return reached, verdicts
}

// TestTrafficVerdictsAreOwnedByTheirPolicy: the ACL rule VPP applies to a
// probe (read from VPP's packet trace) is, in the policy plugin's rule map,
// the rule of the NetworkPolicy that allows or denies it: a denied probe hits
// a DENY owned by the policy isolating the destination, an allowed one a
// PERMIT of the policy that allows it.
//
// Not yet: the deny counter itself. The simulator of this round does not
// count ACL matches in its stats segment (pkg/vppsim does not call
// statseg's AddACLMatch, nor implement acl_stats_intf_counters_enable), so
// contiv_dataplane_policy_rule_packets_total cannot be read after the probe.
func TestTrafficVerdictsAreOwnedByTheirPolicy(t *testing.T) {
	e := newTrafficEnv(t)
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
		reached, verdicts := e.tracedVerdicts(c.src, xa, 80)
		if reached != c.reached {
			t.Errorf("%s -> %s: reached %v, want %v", c.src.id, xa.id, reached, c.reached)
		}
		found := false
		for _, v := range verdicts {
			if v[2] != c.verdict {
				continue
			}
			rule, _ := strconv.Atoi(v[1])
			owners := e.plugin.ACLRules(v[0])
			if rule >= len(owners) {
				t.Errorf("%s -> %s: VPP applied rule %d of %s (%s); the plugin's map has %v", c.src.id, xa.id, rule, v[0], v[2], owners)
				continue
			}
			found = true
			if owners[rule] != c.owner {
				t.Errorf("%s -> %s: rule %d of %s (%s) is owned by %+v, want %+v", c.src.id, xa.id, rule, v[0], v[2], owners[rule], c.owner)
			}
		}
		if !found {
			t.Errorf("%s -> %s: no ACL rule with verdict %s in the trace: %v", c.src.id, xa.id, c.verdict, verdicts)
		}
	}
}

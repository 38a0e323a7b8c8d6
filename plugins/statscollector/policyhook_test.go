package statscollector_test

import (
	"net/netip"
	"testing"

	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/acl"
	rcache "github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/cache"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
)

type dropTxn struct{}

func (dropTxn) Put(string, proto.Message) {}
func (dropTxn) Get(string) proto.Message  { return nil }
func (dropTxn) Delete(string)             {}

// TestPolicyRuleCountersWithThePolicyRenderersOwners: the real ACL renderer's
// owners label VPP's rule counters; a matched rule no policy made (the node's
// address always allowed in) is not exported.
func TestPolicyRuleCountersWithThePolicyRenderersOwners(t *testing.T) {
	r := &acl.Renderer{Deps: acl.Deps{Cache: rcache.New(rcache.Config{}),
		UpdateTxnFactory: func(string) controller.UpdateOperations { return dropTxn{} },
		ResyncTxnFactory: func() controller.ResyncOperations { return dropTxn{} }}}
	ingress := []renderer.ContivRule{
		{Action: renderer.ActionPermit, SrcNetwork: netip.MustParsePrefix("10.1.1.3/32"), Protocol: renderer.TCP, DestPortFirst: 80, DestPortLast: 80},
		{Action: renderer.ActionPermit, SrcNetwork: netip.MustParsePrefix("192.168.16.10/32"), Protocol: renderer.ANY},
		{Action: renderer.ActionDeny, Protocol: renderer.ANY},
	}
	err := r.Render([]renderer.PodConfig{{ID: podmodel.ID{Namespace: "x", Name: "a"}, IP: netip.MustParseAddr("10.1.1.2"),
		Interface: "tap-a", PodIngress: ingress, IngressOwners: []string{"x/allow-web", "", "x/allow-web"}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	local := ""
	for _, tb := range r.Cache.Tables() {
		if tb.Kind == rcache.Local {
			local = acl.ACLName(tb)
		}
	}
	n := newNode(t, r.RuleOwners())
	n.acls.set(local, &aclplugin.ACLMetadata{Index: 0})
	if err := n.seg.SetACL(0, len(ingress)); err != nil {
		t.Fatal(err)
	}
	n.seg.EnableACLCounters(true)
	n.seg.AddACLMatch(0, 0, 0, 100) // permitted from x/b
	n.seg.AddACLMatch(0, 0, 1, 80)  // the kubelet's probe
	n.seg.AddACLMatch(0, 0, 2, 60)  // denied
	n.seg.AddACLMatch(0, 0, 2, 60)
	compare(t, n.col, `# HELP contiv_dataplane_policy_rule_packets_total Packets that matched a rule of a NetworkPolicy's ACL (verdict deny: denied); only rules that matched.
# TYPE contiv_dataplane_policy_rule_packets_total counter
contiv_dataplane_policy_rule_packets_total{acl="`+local+`",policy="x/allow-web",rule="0",verdict="permit"} 1
contiv_dataplane_policy_rule_packets_total{acl="`+local+`",policy="x/allow-web",rule="2",verdict="deny"} 2
`, "contiv_dataplane_policy_rule_packets_total")
}

package acl

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/cache"
)

// recTxn records the operations in staging order.
type recTxn struct {
	ops    []string
	values map[string]proto.Message
}

func (t *recTxn) Put(k string, v proto.Message) {
	t.ops = append(t.ops, "put "+k)
	t.values[k] = v
}
func (t *recTxn) Get(k string) proto.Message { return t.values[k] }
func (t *recTxn) Delete(k string) {
	t.ops = append(t.ops, "del "+k)
	delete(t.values, k)
}

func newRenderer() (*Renderer, *recTxn) {
	txn := &recTxn{values: map[string]proto.Message{}}
	r := &Renderer{Deps: Deps{
		Cache:            cache.New(cache.Config{ClusterNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, NodeInterfaces: []string{"GbE"}}),
		UpdateTxnFactory: func(string) controller.UpdateOperations { return txn },
		ResyncTxnFactory: func() controller.ResyncOperations { return txn },
	}}
	return r, txn
}

var denyAll = renderer.ContivRule{Action: renderer.ActionDeny, Protocol: renderer.ANY}

func from(src string, port uint16) renderer.ContivRule {
	return renderer.ContivRule{Action: renderer.ActionPermit, SrcNetwork: netip.MustParsePrefix(src), Protocol: renderer.TCP, DestPortFirst: port, DestPortLast: port}
}

func pod(name, ip string, in, eg []renderer.ContivRule) renderer.PodConfig {
	return renderer.PodConfig{ID: podmodel.ID{Namespace: "x", Name: name}, IP: netip.MustParseAddr(ip), Interface: "tap-" + name, PodIngress: in, PodEgress: eg}
}

func TestRenderStagesNamedACLsAndOneListPerInterface(t *testing.T) {
	r, txn := newRenderer()
	eg := []renderer.ContivRule{{Action: renderer.ActionPermit, DestNetwork: netip.MustParsePrefix("8.8.8.8/32"), Protocol: renderer.UDP, DestPortFirst: 53, DestPortLast: 53}, denyAll}
	if err := r.Render([]renderer.PodConfig{pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.3/32", 80), denyAll}, eg)}, true); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range txn.values {
		names = append(names, k)
	}
	local := r.Cache.Bindings()["tap-a"].Output
	want := map[string]bool{
		vpp_acl.ACLKey(NamePrefix + local): true, vpp_acl.ACLKey(GlobalName): true, vpp_acl.ACLKey(ReflectionName): true,
		vpp_acl.ACLKey(EgressPrefix + r.Cache.Bindings()["tap-a"].Input): true,
		vpp_acl.InterfaceKey("tap-a"):                                    true, vpp_acl.InterfaceKey("GbE"): true,
	}
	if len(txn.values) != len(want) {
		t.Errorf("staged %v, want %v", names, want)
	}
	for k := range want {
		if txn.values[k] == nil {
			t.Errorf("%s not staged (staged: %v)", k, names)
		}
	}
	itf := txn.values[vpp_acl.InterfaceKey("tap-a")].(*vpp_acl.InterfaceACLs)
	if fmt.Sprint(itf.InputAcls, itf.OutputAcls) != fmt.Sprintf("[%s] [%s]", EgressPrefix+r.Cache.Bindings()["tap-a"].Input, NamePrefix+local) {
		t.Errorf("tap-a lists = %v %v", itf.InputAcls, itf.OutputAcls)
	}
	gbe := txn.values[vpp_acl.InterfaceKey("GbE")].(*vpp_acl.InterfaceACLs)
	if fmt.Sprint(gbe.InputAcls, gbe.OutputAcls) != fmt.Sprintf("[%s] [%s]", ReflectionName, GlobalName) {
		t.Errorf("GbE lists = %v %v", gbe.InputAcls, gbe.OutputAcls)
	}
	glob := txn.values[vpp_acl.ACLKey(GlobalName)].(*vpp_acl.ACL)
	wantRules := []*vpp_acl.ACL_Rule{
		{Action: vpp_acl.ACL_Rule_PERMIT, SourceNetwork: "10.1.1.2/32", DestinationNetwork: "8.8.8.8/32", Protocol: 17,
			DestinationPortRange: &vpp_acl.ACL_Rule_PortRange{LowerPort: 53, UpperPort: 53}},
		{Action: vpp_acl.ACL_Rule_DENY, SourceNetwork: "10.1.1.2/32"},
		{Action: vpp_acl.ACL_Rule_PERMIT},
	}
	if len(glob.Rules) != len(wantRules) {
		t.Fatalf("GLOBAL rules = %v", glob.Rules)
	}
	for i := range wantRules {
		if !proto.Equal(glob.Rules[i], wantRules[i]) {
			t.Errorf("GLOBAL rule %d = %v, want %v", i, glob.Rules[i], wantRules[i])
		}
	}
	loc := txn.values[vpp_acl.ACLKey(NamePrefix+local)].(*vpp_acl.ACL)
	if loc.Rules[0].Action != vpp_acl.ACL_Rule_REFLECT || loc.Rules[len(loc.Rules)-1].Action != vpp_acl.ACL_Rule_DENY {
		t.Errorf("LOCAL rules = %v, want reflective permits and a final deny", loc.Rules)
	}
}

func TestRebindingStagesNewACLThenListThenDeletion(t *testing.T) {
	r, txn := newRenderer()
	r.Render([]renderer.PodConfig{pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.3/32", 80), denyAll}, nil)}, true)
	oldName := NamePrefix + r.Cache.Bindings()["tap-a"].Output
	txn.ops = nil
	r.Render([]renderer.PodConfig{pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.3/32", 81), denyAll}, nil)}, false)
	newName := NamePrefix + r.Cache.Bindings()["tap-a"].Output
	want := []string{"put " + vpp_acl.ACLKey(newName), "put " + vpp_acl.InterfaceKey("tap-a"), "del " + vpp_acl.ACLKey(oldName)}
	if strings.Join(txn.ops, "\n") != strings.Join(want, "\n") {
		t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(txn.ops, "\n"), strings.Join(want, "\n"))
	}
	txn.ops = nil
	r.Render([]renderer.PodConfig{pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.3/32", 81), denyAll}, nil)}, false)
	if len(txn.ops) != 0 {
		t.Errorf("unchanged re-render staged %v", txn.ops)
	}
	removed := pod("a", "10.1.1.2", nil, nil)
	removed.Removed = true
	txn.ops = nil
	r.Render([]renderer.PodConfig{removed}, false)
	if len(txn.values) != 0 {
		t.Errorf("after removal still staged: %v (ops %v)", txn.values, txn.ops)
	}
}

// TestIncrementalValuesEqualFreshConversions: what the renderer reuses across
// updates (tables by ID, GLOBAL by pod) equals a conversion from scratch.
func TestIncrementalValuesEqualFreshConversions(t *testing.T) {
	r, txn := newRenderer()
	eg := func(port uint16) []renderer.ContivRule {
		return []renderer.ContivRule{{Action: renderer.ActionPermit, DestNetwork: netip.MustParsePrefix("8.8.8.8/32"), Protocol: renderer.UDP, DestPortFirst: port, DestPortLast: port}, denyAll}
	}
	pods := []renderer.PodConfig{
		pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.3/32", 80), denyAll}, eg(53)),
		pod("b", "10.1.1.3", nil, eg(54)),
		pod("c", "10.1.1.4", []renderer.ContivRule{from("10.1.1.2/32", 80), denyAll}, eg(55)),
	}
	if err := r.Render(pods, true); err != nil {
		t.Fatal(err)
	}
	for step, change := range []renderer.PodConfig{
		pod("b", "10.1.1.3", nil, eg(60)),
		pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.4/32", 81), denyAll}, eg(53)),
		pod("c", "10.1.1.4", nil, nil),
	} {
		if err := r.Render([]renderer.PodConfig{change}, false); err != nil {
			t.Fatal(err)
		}
		for _, tb := range r.Cache.Tables() {
			got := txn.values[vpp_acl.ACLKey(ACLName(tb))]
			if !proto.Equal(got, ACL(tb)) {
				t.Errorf("step %d: staged %s = %v, want %v", step, ACLName(tb), got, ACL(tb))
			}
		}
	}
}

// liveRules counts the rules (with repeats) of the live LOCAL, EGRESS and
// REFLECTION tables.
func liveRules(r *Renderer) int {
	n := 0
	for _, t := range r.Cache.Tables() {
		if t.Kind != cache.Global {
			n += len(t.Rules)
		}
	}
	return n
}

// TestRuleMemoStaysBoundedByLiveTablesUnderChurn: pods come and go with
// ever new rules (distinct ports and peers), with no resync in between; the
// memo of converted rules stays within twice the rules of the live tables
// (plus the sweep slack), and the memo of tables holds only live tables.
func TestRuleMemoStaysBoundedByLiveTablesUnderChurn(t *testing.T) {
	r, txn := newRenderer()
	if err := r.Render(nil, true); err != nil {
		t.Fatal(err)
	}
	const live = 5
	maxMemo := 0
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("p%d", i)
		ip := fmt.Sprintf("10.1.%d.%d", 2+i/200, 2+i%200)
		in := []renderer.ContivRule{from(fmt.Sprintf("10.1.9.%d/32", i%250), uint16(1000+i)), denyAll}
		eg := []renderer.ContivRule{{Action: renderer.ActionPermit, DestNetwork: netip.MustParsePrefix("8.8.8.8/32"),
			Protocol: renderer.UDP, DestPortFirst: uint16(3000 + i), DestPortLast: uint16(3000 + i)}, denyAll}
		change := []renderer.PodConfig{pod(name, ip, in, eg)}
		if i >= live { // keep the last few pods, remove the oldest
			old := pod(fmt.Sprintf("p%d", i-live), "10.1.0.1", nil, nil)
			old.Removed = true
			change = append(change, old)
		}
		if err := r.Render(change, false); err != nil {
			t.Fatal(err)
		}
		if got, max := len(r.byRule), 2*liveRules(r)+sweepSlack; got > max {
			t.Fatalf("step %d: rule memo holds %d rules, the live tables have %d", i, got, liveRules(r))
		}
		if got, max := len(r.byID), len(r.Cache.Tables()); got > max {
			t.Fatalf("step %d: table memo holds %d tables, %d are live", i, got, max)
		}
		maxMemo = max(maxMemo, len(r.byRule))
	}
	if n := len(r.Cache.Tables()); n > 2*live+2 {
		t.Errorf("%d tables live after the churn, want at most %d", n, 2*live+2)
	}
	// the rules that stayed are converted as from scratch
	for _, tb := range r.Cache.Tables() {
		if got := txn.values[vpp_acl.ACLKey(ACLName(tb))]; !proto.Equal(got, ACL(tb)) {
			t.Errorf("staged %s = %v, want %v", ACLName(tb), got, ACL(tb))
		}
	}
	t.Logf("memo peaked at %d rules", maxMemo)
}

func TestSharedListsKeepTheFirewallBeforeThePolicyACLs(t *testing.T) {
	r, txn := newRenderer()
	r.Lists = ifacls.NewAgentLists()
	fw := ifacls.Part{Input: []string{"contiv-lb-ranges-x"}, InputTail: "contiv-lb-permit-rest"}
	r.Lists.Set(txn, ifacls.ServiceOwner, "GbE", fw)

	// A pod with egress rules: GLOBAL on the uplink's output, REFLECTION on its input,
	// after the firewall (whose permit of the rest no longer ends the list).
	eg := []renderer.ContivRule{{Action: renderer.ActionPermit, DestNetwork: netip.MustParsePrefix("8.8.8.8/32"), Protocol: renderer.UDP, DestPortFirst: 53, DestPortLast: 53}, denyAll}
	if err := r.Render([]renderer.PodConfig{pod("a", "10.1.1.2", nil, eg)}, true); err != nil {
		t.Fatal(err)
	}
	want := &vpp_acl.InterfaceACLs{Interface: "GbE", InputAcls: []string{"contiv-lb-ranges-x", ReflectionName}, OutputAcls: []string{GlobalName}}
	if got := txn.values[vpp_acl.InterfaceKey("GbE")]; !proto.Equal(got, want) {
		t.Errorf("GbE lists after the resync = %v, want %v", got, want)
	}

	// The pod loses its egress rules: the policy leaves the uplink, the firewall stays.
	if err := r.Render([]renderer.PodConfig{pod("a", "10.1.1.2", nil, nil)}, false); err != nil {
		t.Fatal(err)
	}
	want = &vpp_acl.InterfaceACLs{Interface: "GbE", InputAcls: []string{"contiv-lb-ranges-x", "contiv-lb-permit-rest"}}
	if got := txn.values[vpp_acl.InterfaceKey("GbE")]; !proto.Equal(got, want) {
		t.Errorf("GbE lists after the update = %v, want %v", got, want)
	}
}

// TestDualStackACLsCoverBothFamiliesAndKeepTheirOwners: on a dual-stack node a
// rule without addresses becomes one VPP rule per family (a VPP rule has one
// family; the list's implicit deny would otherwise drop the other), the
// pod-interface ACLs open with the ICMPv6 neighbour discovery permit, GLOBAL
// gives a dual-stack pod one segment per address (rules towards the other
// family left out: a VPP rule cannot mix them), and the owners the
// statscollector reads line up with the VPP rules one for one.
func TestDualStackACLsCoverBothFamiliesAndKeepTheirOwners(t *testing.T) {
	r, txn := newRenderer()
	r.Cache.SetConfig(cache.Config{
		ClusterNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00:10:1::/48")},
		NodeInterfaces:  []string{"GbE"},
		AnyNetworks:     []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")},
	})
	a := pod("a", "10.1.1.2", []renderer.ContivRule{from("10.1.1.3/32", 80), from("fd00:10:1:1::3/128", 80), denyAll},
		[]renderer.ContivRule{{Action: renderer.ActionPermit, DestNetwork: netip.MustParsePrefix("2001:db8::/64"), Protocol: renderer.ANY}, denyAll})
	a.IPs = []netip.Addr{a.IP, netip.MustParseAddr("fd00:10:1:1::2")}
	a.IngressOwners = []string{"x/p", "x/p", "x/p"}
	a.EgressOwners = []string{"x/q", "x/q"}
	if err := r.Render([]renderer.PodConfig{a}, true); err != nil {
		t.Fatal(err)
	}
	rules := func(v *vpp_acl.ACL) []string {
		var out []string
		for _, ru := range v.GetRules() {
			s := fmt.Sprintf("%s %s->%s p%d", ru.GetAction(), ru.GetSourceNetwork(), ru.GetDestinationNetwork(), ru.GetProtocol())
			if pr := ru.GetSourcePortRange(); pr != nil {
				s += fmt.Sprintf(" type%d-%d", pr.GetLowerPort(), pr.GetUpperPort())
			}
			out = append(out, s)
		}
		return out
	}
	var local, global *vpp_acl.ACL
	for k, v := range txn.values {
		if acl, ok := v.(*vpp_acl.ACL); ok && k == vpp_acl.ACLKey(GlobalName) {
			global = acl
		} else if ok && strings.HasPrefix(acl.GetName(), NamePrefix) && !strings.HasPrefix(acl.GetName(), EgressPrefix) && acl.GetName() != ReflectionName {
			local = acl
		}
	}
	if local == nil || global == nil {
		t.Fatalf("no LOCAL or GLOBAL ACL staged: %v", txn.ops)
	}
	wantLocal := []string{"PERMIT ::/0->::/0 p58 type135-136", "REFLECT 10.1.1.3/32-> p6", "REFLECT fd00:10:1:1::3/128-> p6",
		"DENY 0.0.0.0/0->0.0.0.0/0 p0", "DENY ::/0->::/0 p0"}
	if got := rules(local); strings.Join(got, "|") != strings.Join(wantLocal, "|") {
		t.Errorf("LOCAL rules\n got  %q\n want %q", got, wantLocal)
	}
	wantGlobal := []string{"DENY 10.1.1.2/32-> p0", "PERMIT fd00:10:1:1::2/128->2001:db8::/64 p0", "DENY fd00:10:1:1::2/128-> p0",
		"PERMIT 0.0.0.0/0->0.0.0.0/0 p0", "PERMIT ::/0->::/0 p0"}
	if got := rules(global); strings.Join(got, "|") != strings.Join(wantGlobal, "|") {
		t.Errorf("GLOBAL rules\n got  %q\n want %q", got, wantGlobal)
	}
	for _, acl := range []*vpp_acl.ACL{local, global} {
		owners := r.RuleOwners().ACLRules(acl.GetName())
		if len(owners) != len(acl.GetRules()) {
			t.Fatalf("%s: %d owners for %d VPP rules", acl.GetName(), len(owners), len(acl.GetRules()))
		}
		for i, ru := range acl.GetRules() {
			if owners[i].Deny != (ru.GetAction() == vpp_acl.ACL_Rule_DENY) {
				t.Errorf("%s rule %d (%v): owner %+v", acl.GetName(), i, ru.GetAction(), owners[i])
			}
		}
	}
	if o := r.RuleOwners().ACLRules(local.GetName()); o[0].Policy != "" || o[3].Policy != "x/p" || o[4].Policy != "x/p" {
		t.Errorf("LOCAL owners %+v: want none for ND, x/p for both DENYs", o)
	}
}

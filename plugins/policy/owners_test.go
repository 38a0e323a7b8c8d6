package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// ownersEnv keeps what the plugin staged, as the scheduler would hold it.
type ownersEnv struct {
	t     *testing.T
	p     *Plugin
	state mapTxn
}

func newOwnersEnv(t *testing.T, st controller.KubeStateData) *ownersEnv {
	t.Helper()
	p, _, _ := newPlugin(t, false)
	e := &ownersEnv{t: t, p: p, state: mapTxn{}}
	if err := p.Resync(controller.NewDBResync(), st, 1, e.state); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *ownersEnv) policy(prev, next *pm.Policy) {
	e.t.Helper()
	ev := &controller.KubeStateChange{Resource: pm.Keyword}
	if prev != nil {
		ev.PrevValue, ev.Key = prev, pm.Key(prev.Name, prev.Namespace)
	}
	if next != nil {
		ev.NewValue, ev.Key = next, pm.Key(next.Name, next.Namespace)
	}
	txn := mapTxn{}
	if _, err := e.p.Update(ev, txn); err != nil {
		e.t.Fatal(err)
	}
	e.apply(txn)
}

// apply records what an update staged.
func (e *ownersEnv) apply(txn mapTxn) {
	for k, v := range txn {
		if v == nil {
			delete(e.state, k)
		} else {
			e.state[k] = v
		}
	}
}

// acl returns the name of an ACL of an interface ("" for none).
func (e *ownersEnv) acl(iface string, input bool) string {
	v, _ := e.state[vpp_acl.InterfaceKey(iface)].(*vpp_acl.InterfaceACLs)
	list := v.GetOutputAcls()
	if input {
		list = v.GetInputAcls()
	}
	if len(list) != 1 {
		return ""
	}
	return list[0]
}

// owners describes the rules of an ACL with their owners, one line each:
// "<action> <src> -> <dst> <port> : <policy>", the policy "-" for none.
func (e *ownersEnv) owners(name string) string {
	e.t.Helper()
	v, ok := e.state[vpp_acl.ACLKey(name)].(*vpp_acl.ACL)
	if !ok {
		e.t.Fatalf("ACL %q not staged", name)
	}
	owners := e.p.ACLRules(name)
	if owners != nil && len(owners) != len(v.Rules) {
		e.t.Fatalf("ACL %s: %d owners for %d rules", name, len(owners), len(v.Rules))
	}
	var b strings.Builder
	for i, r := range v.Rules {
		owner := "-"
		if owners != nil && owners[i].Policy != "" {
			owner = owners[i].Policy
			if owners[i].Deny != (r.Action == vpp_acl.ACL_Rule_DENY) {
				e.t.Errorf("ACL %s rule %d: owner says deny=%v, the rule is %v", name, i, owners[i].Deny, r.Action)
			}
		}
		port := "any"
		if pr := r.DestinationPortRange; pr != nil {
			port = fmt.Sprint(pr.LowerPort)
		}
		fmt.Fprintf(&b, "%s %s -> %s %s : %s\n", r.Action, orAny(r.SourceNetwork), orAny(r.DestinationNetwork), port, owner)
	}
	return b.String()
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

func (e *ownersEnv) expect(what, name, want string) {
	e.t.Helper()
	if got := e.owners(name); got != want {
		e.t.Errorf("%s: ACL %s owners\n%s\nwant\n%s", what, name, got, want)
	}
}

// ownersState: namespace x with pods a (app=db, 10.1.1.2) and b (app=web,
// 10.1.1.3); namespace y with pod c (app=db, 10.1.1.4).
func ownersState(policies ...*pm.Policy) controller.KubeStateData {
	st := kubeState()
	delete(st[pm.Keyword], pm.Key("deny", "x"))
	st[podmodel.Keyword][podmodel.Key("b", "x")] = &podmodel.Pod{Name: "b", Namespace: "x", IpAddress: "10.1.1.3",
		Label: []*podmodel.Pod_Label{{Key: "app", Value: "web"}}}
	st[podmodel.Keyword][podmodel.Key("c", "y")] = &podmodel.Pod{Name: "c", Namespace: "y", IpAddress: "10.1.1.4",
		Label: []*podmodel.Pod_Label{{Key: "app", Value: "db"}}}
	for _, p := range policies {
		st[pm.Keyword][pm.Key(p.Name, p.Namespace)] = p
	}
	return st
}

func fromWeb(name string, port int32) *pm.Policy {
	return &pm.Policy{Namespace: "x", Name: name, Pods: tsel("app", "db"), PolicyType: pm.Policy_INGRESS,
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: tsel("app", "web")}}, Port: []*pm.Policy_Port{tport(true, port)}}}}
}

// The node's own sources (NAT loopback, host interconnect, node IP) in every
// isolated LOCAL ACL, owned by no policy.
const nodeSources = "REFLECT 10.1.1.254/32 -> any any : -\nREFLECT 172.30.1.2/32 -> any any : -\nREFLECT 192.168.16.10/32 -> any any : -\n"

// TestRuleOwnersFollowPolicyChanges: each rule of a pod's ACL names the
// NetworkPolicy it comes from, and its final DENY the policies isolating the
// pod, through a policy added (with the same rules: the ACL stays, its owners
// change), changed and removed.
func TestRuleOwnersFollowPolicyChanges(t *testing.T) {
	p1 := fromWeb("allow-web", 80)
	e := newOwnersEnv(t, ownersState(p1))
	local := e.acl("tap-a", false)
	e.expect("one policy", local, "REFLECT 10.1.1.3/32 -> any 80 : x/allow-web\n"+nodeSources+"DENY any -> any any : x/allow-web\n")

	p2 := fromWeb("allow-web-2", 80)
	e.policy(nil, p2)
	if got := e.acl("tap-a", false); got != local {
		t.Fatalf("a second policy with the same rules moved the pod from ACL %s to %s", local, got)
	}
	e.expect("two policies with the same rule", local,
		"REFLECT 10.1.1.3/32 -> any 80 : x/allow-web,x/allow-web-2\n"+nodeSources+"DENY any -> any any : x/allow-web,x/allow-web-2\n")

	p2b := fromWeb("allow-web-2", 81)
	e.policy(p2, p2b)
	e.expect("the second policy changed", e.acl("tap-a", false),
		"REFLECT 10.1.1.3/32 -> any 80 : x/allow-web\nREFLECT 10.1.1.3/32 -> any 81 : x/allow-web-2\n"+nodeSources+
			"DENY any -> any any : x/allow-web,x/allow-web-2\n")

	e.policy(p1, nil)
	e.expect("the first policy removed", e.acl("tap-a", false),
		"REFLECT 10.1.1.3/32 -> any 81 : x/allow-web-2\n"+nodeSources+"DENY any -> any any : x/allow-web-2\n")
	if e.p.ACLRules(local) != nil {
		t.Errorf("the ACL %s no pod uses any more still has owners %v", local, e.p.ACLRules(local))
	}

	last := e.acl("tap-a", false)
	e.policy(p2b, nil)
	if got := e.acl("tap-a", false); got != "" || e.p.ACLRules(last) != nil {
		t.Errorf("no policy left: tap-a output ACL %q, owners of %s %v", got, last, e.p.ACLRules(last))
	}
}

// TestRuleOwnersOfATableSharedByPodsOfTwoPolicies: pods of two namespaces
// isolated by two policies with the same rules share one ACL; its rules name
// both policies while both pods use it, and the remaining one after the other
// policy goes.
func TestRuleOwnersOfATableSharedByPodsOfTwoPolicies(t *testing.T) {
	fromNet := func(ns string) *pm.Policy {
		return &pm.Policy{Namespace: ns, Name: "from-lan", Pods: tsel("app", "db"), PolicyType: pm.Policy_INGRESS,
			IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "192.168.0.0/16"}}}}}}
	}
	px, py := fromNet("x"), fromNet("y")
	e := newOwnersEnv(t, ownersState(px, py))
	shared := e.acl("tap-a", false)
	if shared == "" || e.acl("tap-c", false) != shared {
		t.Fatalf("x/a and y/c have ACLs %q and %q, want one shared", shared, e.acl("tap-c", false))
	}
	e.expect("shared", shared, nodeSources+"REFLECT 192.168.0.0/16 -> any any : x/from-lan,y/from-lan\nDENY any -> any any : x/from-lan,y/from-lan\n")
	e.policy(py, nil)
	if e.acl("tap-a", false) != shared {
		t.Fatalf("x/a moved from %s to %s", shared, e.acl("tap-a", false))
	}
	e.expect("y's policy removed", shared, nodeSources+"REFLECT 192.168.0.0/16 -> any any : x/from-lan\nDENY any -> any any : x/from-lan\n")
	e.policy(nil, py)
	e.expect("y's policy back", shared, nodeSources+"REFLECT 192.168.0.0/16 -> any any : x/from-lan,y/from-lan\nDENY any -> any any : x/from-lan,y/from-lan\n")

	// y/c goes: its policy no longer isolates a pod using the ACL
	yc := ownersState()[podmodel.Keyword][podmodel.Key("c", "y")]
	txn := mapTxn{}
	if _, err := e.p.Update(&controller.KubeStateChange{Resource: podmodel.Keyword, Key: podmodel.Key("c", "y"), PrevValue: yc}, txn); err != nil {
		t.Fatal(err)
	}
	e.apply(txn)
	e.expect("y/c deleted", shared, nodeSources+"REFLECT 192.168.0.0/16 -> any any : x/from-lan\nDENY any -> any any : x/from-lan\n")
}

// TestRuleOwnersOfEgressRules: a pod's egress policy owns its rules in the
// pod's EGRESS ACL, in the node's GLOBAL ACL, and the part of a local peer's
// ACL that enforces it; the cluster networks and GLOBAL's final PERMIT are the
// renderer's own.
func TestRuleOwnersOfEgressRules(t *testing.T) {
	eg := &pm.Policy{Namespace: "x", Name: "web-out", Pods: tsel("app", "web"), PolicyType: pm.Policy_EGRESS,
		EgressRule: []*pm.Policy_EgressRule{
			{To: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "8.8.8.8/32"}}}, Port: []*pm.Policy_Port{tport(false, 53)}},
			{To: []*pm.Policy_Peer{{Pods: tsel("app", "db")}}, Port: []*pm.Policy_Port{tport(true, 5432)}},
		}}
	e := newOwnersEnv(t, ownersState(eg))
	e.expect("EGRESS of x/b", e.acl("tap-b", true),
		"REFLECT any -> 10.1.0.0/16 any : -\nREFLECT any -> 10.96.0.0/12 any : -\nREFLECT any -> 8.8.8.8/32 53 : x/web-out\nDENY any -> any any : x/web-out\n")
	e.expect("GLOBAL", "contiv-policy-NODE-GLOBAL",
		"PERMIT 10.1.1.3/32 -> 8.8.8.8/32 53 : x/web-out\nPERMIT 10.1.1.3/32 -> 10.1.1.2/32 5432 : x/web-out\nDENY 10.1.1.3/32 -> any any : x/web-out\nPERMIT any -> any any : -\n")
	e.expect("x/b's part of x/a's LOCAL", e.acl("tap-a", false),
		"REFLECT 10.1.1.3/32 -> any 5432 : x/web-out\nDENY 10.1.1.3/32 -> any any : x/web-out\nREFLECT any -> any any : -\n")

	// a second policy with the same egress rules: no ACL changes, every rule
	// names both
	eg2 := proto.Clone(eg).(*pm.Policy)
	eg2.Name = "web-out-2"
	tables := []string{e.acl("tap-b", true), e.acl("tap-a", false)}
	e.policy(nil, eg2)
	if got := []string{e.acl("tap-b", true), e.acl("tap-a", false)}; !slices.Equal(got, tables) {
		t.Fatalf("a policy with the same rules moved the pods from %v to %v", tables, got)
	}
	both := "x/web-out,x/web-out-2"
	e.expect("EGRESS of x/b, two policies", e.acl("tap-b", true),
		"REFLECT any -> 10.1.0.0/16 any : -\nREFLECT any -> 10.96.0.0/12 any : -\nREFLECT any -> 8.8.8.8/32 53 : "+both+"\nDENY any -> any any : "+both+"\n")
	e.expect("GLOBAL, two policies", "contiv-policy-NODE-GLOBAL",
		"PERMIT 10.1.1.3/32 -> 8.8.8.8/32 53 : "+both+"\nPERMIT 10.1.1.3/32 -> 10.1.1.2/32 5432 : "+both+"\nDENY 10.1.1.3/32 -> any any : "+both+"\nPERMIT any -> any any : -\n")
	e.expect("x/b's part of x/a's LOCAL, two policies", e.acl("tap-a", false),
		"REFLECT 10.1.1.3/32 -> any 5432 : "+both+"\nDENY 10.1.1.3/32 -> any any : "+both+"\nREFLECT any -> any any : -\n")
}

// TestRuleOwnersAreReadWhileTheEventLoopRenders: the scrape goroutine reads
// the owners while the event loop changes them (run with -race).
func TestRuleOwnersAreReadWhileTheEventLoopRenders(t *testing.T) {
	p1 := fromWeb("allow-web", 80)
	e := newOwnersEnv(t, ownersState(p1))
	names := []string{e.acl("tap-a", false), "contiv-policy-NODE-GLOBAL"} // the first goes with the first change
	done := make(chan struct{})
	read := make(chan int)
	go func() {
		n := 0
		defer func() { read <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, name := range names {
				n += len(e.p.ACLRules(name))
			}
			for _, o := range e.p.ACLRules("contiv-policy-REFLECTION") {
				n += len(o.Policy)
			}
		}
	}()
	prev := p1
	for port := int32(81); port < 120; port++ {
		next := fromWeb("allow-web", port)
		e.policy(prev, next)
		prev = next
	}
	close(done)
	<-read
	e.expect("after the changes", e.acl("tap-a", false), "REFLECT 10.1.1.3/32 -> any 119 : x/allow-web\n"+nodeSources+"DENY any -> any any : x/allow-web\n")
}

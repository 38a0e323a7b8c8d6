package processor

import (
	"fmt"
	"net/netip"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/configurator"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// fakeNode: pods in 10.1.1.0/24 are local, with interface tap-<name>; cni
// holds IPs given by IPAM to pods Kubernetes did not report yet.
type fakeNode struct {
	cni map[podmodel.ID]netip.Addr
}

var localNet = netip.MustParsePrefix("10.1.1.0/24")

func (n *fakeNode) LocalPod(id podmodel.ID, k8sIPs []netip.Addr) ([]netip.Addr, string, bool) {
	if ip, ok := n.cni[id]; ok {
		return []netip.Addr{ip}, "tap-" + id.Name, true
	}
	return k8sIPs, "tap-" + id.Name, len(k8sIPs) > 0 && localNet.Contains(k8sIPs[0])
}
func (n *fakeNode) LocalPods() []podmodel.ID {
	var out []podmodel.ID
	for id := range n.cni {
		out = append(out, id)
	}
	return out
}
func (n *fakeNode) Sources() configurator.Node { return configurator.Node{} }

// recRenderer records the pods of each Render.
type recRenderer struct {
	calls [][]renderer.PodConfig
	last  map[podmodel.ID]renderer.PodConfig
}

func (r *recRenderer) Render(pods []renderer.PodConfig, resync bool) error {
	r.calls = append(r.calls, pods)
	if resync {
		r.last = map[podmodel.ID]renderer.PodConfig{}
	}
	for _, p := range pods {
		if p.Removed {
			delete(r.last, p.ID)
		} else {
			r.last[p.ID] = p
		}
	}
	return nil
}

func (r *recRenderer) lastPods() []string {
	if len(r.calls) == 0 {
		return nil
	}
	var out []string
	for _, p := range r.calls[len(r.calls)-1] {
		s := p.ID.String()
		if p.Removed {
			s += "(removed)"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func podModel(ns, name, ip string, labels ...string) *podmodel.Pod {
	m := &podmodel.Pod{Namespace: ns, Name: name, IpAddress: ip}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &podmodel.Pod_Label{Key: labels[i], Value: labels[i+1]})
	}
	return m
}

func sel(k, v string) *pm.Policy_LabelSelector {
	return &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: k, Value: v}}}
}

// state: namespace x (local pods a0..a9 role=a, b0..b9 role=b, remote r0..r9
// role=b) and namespace y (local pod y0); policy pa: role=a allow from role=b.
func state() controller.KubeStateData {
	st := controller.NewKubeStateData(podmodel.Keyword, nsmodel.Keyword, pm.Keyword)
	put := func(v proto.Message, key string, res string) { st[res][key] = v }
	put(&nsmodel.Namespace{Name: "x", Label: []*nsmodel.Namespace_Label{{Key: "team", Value: "x"}}}, "ns/x", nsmodel.Keyword)
	put(&nsmodel.Namespace{Name: "y"}, "ns/y", nsmodel.Keyword)
	for i := 0; i < 10; i++ {
		put(podModel("x", fmt.Sprint("a", i), fmt.Sprintf("10.1.1.%d", 10+i), "role", "a"), podmodel.Key(fmt.Sprint("a", i), "x"), podmodel.Keyword)
		put(podModel("x", fmt.Sprint("b", i), fmt.Sprintf("10.1.1.%d", 30+i), "role", "b"), podmodel.Key(fmt.Sprint("b", i), "x"), podmodel.Keyword)
		put(podModel("x", fmt.Sprint("r", i), fmt.Sprintf("10.1.2.%d", 10+i), "role", "b"), podmodel.Key(fmt.Sprint("r", i), "x"), podmodel.Keyword)
	}
	put(podModel("y", "y0", "10.1.1.50", "role", "c"), podmodel.Key("y0", "y"), podmodel.Keyword)
	put(&pm.Policy{Namespace: "x", Name: "pa", Pods: sel("role", "a"),
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: sel("role", "b")}}}}}, pm.Key("pa", "x"), pm.Keyword)
	return st
}

func newProc(t *testing.T) (*Processor, *recRenderer, *fakeNode) {
	t.Helper()
	r := &recRenderer{}
	n := &fakeNode{cni: map[podmodel.ID]netip.Addr{}}
	p := New(Deps{Node: n, Renderer: r})
	if err := p.Resync(state()); err != nil {
		t.Fatal(err)
	}
	return p, r, n
}

func change(res string, prev, next proto.Message) *controller.KubeStateChange {
	return &controller.KubeStateChange{Resource: res, PrevValue: prev, NewValue: next}
}

func TestResyncRendersEveryLocalPod(t *testing.T) {
	p, r, _ := newProc(t)
	if got := len(r.calls[0]); got != 21 {
		t.Errorf("resync rendered %d pods, want the 21 local ones", got)
	}
	a0 := r.last[podmodel.ID{Namespace: "x", Name: "a0"}]
	if a0.PodIngress == nil || a0.PodEgress != nil || a0.Interface != "tap-a0" {
		t.Errorf("a0 = %+v", a0)
	}
	if b0 := r.last[podmodel.ID{Namespace: "x", Name: "b0"}]; b0.PodIngress != nil {
		t.Errorf("b0 isolated: %+v", b0)
	}
	if st := p.LastStats(); st.PoliciesCompiled != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestEventsRecomputeOnlyTheAffectedPods(t *testing.T) {
	tests := []struct {
		name string
		ev   func(p *Processor) error
		want string
	}{
		{"peer pod relabelled: the policy's targets (upstream missed them)", func(p *Processor) error {
			return p.KubeStateChange(change(podmodel.Keyword, podModel("x", "b3", "10.1.1.33", "role", "b"), podModel("x", "b3", "10.1.1.33", "role", "z")))
		}, "[x/a0 x/a1 x/a2 x/a3 x/a4 x/a5 x/a6 x/a7 x/a8 x/a9 x/b3]"},
		{"peer selected by an expression through a namespace selector (unindexed path)", func(p *Processor) error {
			pol := &pm.Policy{Namespace: "y", Name: "py", Pods: &pm.Policy_LabelSelector{},
				IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: sel("team", "x"),
					Pods: &pm.Policy_LabelSelector{MatchExpression: []*pm.Policy_LabelSelector_LabelExpression{
						{Key: "role", Operator: pm.Policy_LabelSelector_LabelExpression_IN, Value: []string{"b"}}}}}}}}}
			if err := p.KubeStateChange(change(pm.Keyword, nil, pol)); err != nil {
				return err
			}
			return p.KubeStateChange(change(podmodel.Keyword, podModel("x", "r3", "10.1.2.13", "role", "b"), podModel("x", "r3", "10.1.2.13", "role", "z")))
		}, "[x/a0 x/a1 x/a2 x/a3 x/a4 x/a5 x/a6 x/a7 x/a8 x/a9 y/y0]"},
		{"remote peer pod added: the targets only", func(p *Processor) error {
			return p.KubeStateChange(change(podmodel.Keyword, nil, podModel("x", "r99", "10.1.2.99", "role", "b")))
		}, "[x/a0 x/a1 x/a2 x/a3 x/a4 x/a5 x/a6 x/a7 x/a8 x/a9]"},
		{"unrelated pod changed: itself only", func(p *Processor) error {
			return p.KubeStateChange(change(podmodel.Keyword, podModel("y", "y0", "10.1.1.50", "role", "c"), podModel("y", "y0", "10.1.1.50", "role", "d")))
		}, "[y/y0]"},
		{"target relabelled out of the policy: itself", func(p *Processor) error {
			return p.KubeStateChange(change(podmodel.Keyword, podModel("x", "a0", "10.1.1.10", "role", "a"), podModel("x", "a0", "10.1.1.10", "role", "q")))
		}, "[x/a0]"},
		{"annotation-only change: nothing", func(p *Processor) error {
			n := podModel("x", "a0", "10.1.1.10", "role", "a")
			n.Annotations = map[string]string{"k": "v"}
			return p.KubeStateChange(change(podmodel.Keyword, podModel("x", "a0", "10.1.1.10", "role", "a"), n))
		}, "[]"},
		{"policy changed: old and new targets", func(p *Processor) error {
			old := p.k8s.Policy(struct{ Namespace, Name string }{"x", "pa"})
			n := proto.Clone(old).(*pm.Policy)
			n.Pods = sel("role", "b")
			return p.KubeStateChange(change(pm.Keyword, old, n))
		}, "[x/a0 x/a1 x/a2 x/a3 x/a4 x/a5 x/a6 x/a7 x/a8 x/a9 x/b0 x/b1 x/b2 x/b3 x/b4 x/b5 x/b6 x/b7 x/b8 x/b9]"},
		{"policy deleted: its targets", func(p *Processor) error {
			return p.KubeStateChange(change(pm.Keyword, p.k8s.Policy(struct{ Namespace, Name string }{"x", "pa"}), nil))
		}, "[x/a0 x/a1 x/a2 x/a3 x/a4 x/a5 x/a6 x/a7 x/a8 x/a9]"},
		{"policy in another namespace added: its targets there", func(p *Processor) error {
			return p.KubeStateChange(change(pm.Keyword, nil, &pm.Policy{Namespace: "y", Name: "py", Pods: &pm.Policy_LabelSelector{}}))
		}, "[y/y0]"},
		{"namespace relabelled into a namespace selector: the policy's targets", func(p *Processor) error {
			pol := &pm.Policy{Namespace: "y", Name: "py", Pods: &pm.Policy_LabelSelector{},
				IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: sel("team", "y")}}}}}
			if err := p.KubeStateChange(change(pm.Keyword, nil, pol)); err != nil {
				return err
			}
			return p.KubeStateChange(change(nsmodel.Keyword, &nsmodel.Namespace{Name: "x"},
				&nsmodel.Namespace{Name: "x", Label: []*nsmodel.Namespace_Label{{Key: "team", Value: "y"}}}))
		}, "[y/y0]"},
		{"namespace change no selector cares about: nothing", func(p *Processor) error {
			return p.KubeStateChange(change(nsmodel.Keyword, &nsmodel.Namespace{Name: "y"},
				&nsmodel.Namespace{Name: "y", Label: []*nsmodel.Namespace_Label{{Key: "k", Value: "v"}}}))
		}, "[]"},
		{"local pod deleted in Kubernetes (not wired by CNI): removed, and the targets", func(p *Processor) error {
			return p.KubeStateChange(change(podmodel.Keyword, podModel("x", "b0", "10.1.1.30", "role", "b"), nil))
		}, "[x/a0 x/a1 x/a2 x/a3 x/a4 x/a5 x/a6 x/a7 x/a8 x/a9 x/b0(removed)]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, r, _ := newProc(t)
			before := len(r.calls)
			if err := tt.ev(p); err != nil {
				t.Fatal(err)
			}
			got := "[]"
			if len(r.calls) > before {
				got = fmt.Sprint(r.lastPods())
			}
			if got != tt.want {
				t.Errorf("rendered %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPeerChangesReachTheRules(t *testing.T) {
	p, r, _ := newProc(t)
	a0 := podmodel.ID{Namespace: "x", Name: "a0"}
	allowedFrom := func(src string) bool {
		for _, rule := range r.last[a0].PodIngress {
			if rule.Action == renderer.ActionPermit && rule.SrcNetwork.Contains(netip.MustParseAddr(src)) {
				return true
			}
		}
		return false
	}
	if !allowedFrom("10.1.2.13") {
		t.Fatal("r3 not allowed before the change")
	}
	must(t, p.KubeStateChange(change(podmodel.Keyword, podModel("x", "r3", "10.1.2.13", "role", "b"), podModel("x", "r3", "10.1.2.13", "role", "z"))))
	if allowedFrom("10.1.2.13") {
		t.Error("r3 still allowed after its label changed")
	}
	must(t, p.KubeStateChange(change(podmodel.Keyword, podModel("x", "r3", "10.1.2.13", "role", "z"), podModel("x", "r3", "10.1.2.77", "role", "b"))))
	if !allowedFrom("10.1.2.77") || allowedFrom("10.1.2.13") {
		t.Error("r3's new address not allowed or old one kept")
	}
}

func TestCNIAddPodIsPolicedBeforeKubernetesReportsItsIP(t *testing.T) {
	p, r, n := newProc(t)
	id := podmodel.ID{Namespace: "x", Name: "new"}
	// Kubernetes knows the pod and its labels, not its IP yet.
	must(t, p.KubeStateChange(change(podmodel.Keyword, nil, podModel("x", "new", "", "role", "a"))))
	if _, ok := r.last[id]; ok {
		t.Fatal("pod without IP rendered")
	}
	n.cni[id] = netip.MustParseAddr("10.1.1.99")
	must(t, p.AddPod(id))
	got, ok := r.last[id]
	if !ok || got.PodIngress == nil || got.IP != netip.MustParseAddr("10.1.1.99") {
		t.Fatalf("after AddPod: %+v, want isolated with IPAM's IP", got)
	}
	delete(n.cni, id)
	must(t, p.DeletePod(id))
	if _, ok := r.last[id]; ok {
		t.Error("pod still rendered after DeletePod")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package cache

import (
	"fmt"
	"math/rand"
	"net/netip"
	"sort"
	"testing"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
)

type expr = pm.Policy_LabelSelector_LabelExpression

func sel(labels map[string]string, exprs ...*expr) *pm.Policy_LabelSelector {
	s := &pm.Policy_LabelSelector{}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.MatchLabel = append(s.MatchLabel, &pm.Policy_Label{Key: k, Value: labels[k]})
	}
	s.MatchExpression = exprs
	return s
}

func in(k string, v ...string) *expr {
	return &expr{Key: k, Operator: pm.Policy_LabelSelector_LabelExpression_IN, Value: v}
}
func notIn(k string, v ...string) *expr {
	return &expr{Key: k, Operator: pm.Policy_LabelSelector_LabelExpression_NOT_IN, Value: v}
}
func exists(k string) *expr {
	return &expr{Key: k, Operator: pm.Policy_LabelSelector_LabelExpression_EXISTS}
}
func notExists(k string) *expr {
	return &expr{Key: k, Operator: pm.Policy_LabelSelector_LabelExpression_DOES_NOT_EXIST}
}

func TestMatchesEvaluatesLabelsAndExpressions(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": "front"}
	for _, tt := range []struct {
		name string
		sel  *pm.Policy_LabelSelector
		want bool
	}{
		{"nil selector matches all", nil, true},
		{"empty selector matches all", sel(nil), true},
		{"equal label", sel(map[string]string{"app": "web"}), true},
		{"other value", sel(map[string]string{"app": "db"}), false},
		{"all labels ANDed", sel(map[string]string{"app": "web", "tier": "back"}), false},
		{"In hit", sel(nil, in("tier", "back", "front")), true},
		{"In miss", sel(nil, in("tier", "back")), false},
		{"In on a missing label", sel(nil, in("zone", "a")), false},
		{"NotIn hit", sel(nil, notIn("tier", "front")), false},
		{"NotIn miss", sel(nil, notIn("tier", "back")), true},
		{"NotIn on a missing label holds", sel(nil, notIn("zone", "a")), true},
		{"Exists", sel(nil, exists("app")), true},
		{"Exists missing", sel(nil, exists("zone")), false},
		{"DoesNotExist", sel(nil, notExists("zone")), true},
		{"DoesNotExist present", sel(nil, notExists("app")), false},
		{"labels and expressions ANDed", sel(map[string]string{"app": "web"}, notExists("tier")), false},
		{"unknown operator selects nothing", sel(nil, &expr{Key: "app", Operator: 42}), false},
	} {
		if got := Matches(tt.sel, labels); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func pod(ns, name, ip string, labels map[string]string) *Pod {
	p := &Pod{ID: podmodel.ID{Namespace: ns, Name: name}, Labels: labels}
	if ip != "" {
		p.IP = netip.MustParseAddr(ip)
	}
	return p
}

func names(pods []*Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.ID.String())
	}
	sort.Strings(out)
	return out
}

func fixture() *Cache {
	c := New()
	c.PutNamespace(&nsmodel.Namespace{Name: "x", Label: []*nsmodel.Namespace_Label{{Key: "ns", Value: "x"}}})
	c.PutNamespace(&nsmodel.Namespace{Name: "y", Label: []*nsmodel.Namespace_Label{{Key: "ns", Value: "y"}}})
	c.PutNamespace(&nsmodel.Namespace{Name: "kube-system"})
	for _, ns := range []string{"x", "y", "z"} { // z is known only from its pods
		for i, n := range []string{"a", "b", "c"} {
			c.PutPod(pod(ns, n, fmt.Sprintf("10.1.%d.%d", len(ns), i+2), map[string]string{"pod": n}))
		}
	}
	c.PutPod(pod("kube-system", "dns", "10.1.9.2", map[string]string{"k8s-app": "kube-dns"}))
	return c
}

func TestPeerPodsCombinesSelectorsAsKubernetesDefines(t *testing.T) {
	c := fixture()
	for _, tt := range []struct {
		name string
		peer *pm.Policy_Peer
		want []string
	}{
		{"podSelector: policy namespace only", &pm.Policy_Peer{Pods: sel(map[string]string{"pod": "a"})},
			[]string{"x/a"}},
		{"empty podSelector: all pods of the policy namespace", &pm.Policy_Peer{Pods: sel(nil)},
			[]string{"x/a", "x/b", "x/c"}},
		{"namespaceSelector: every pod of the namespaces", &pm.Policy_Peer{Namespaces: sel(map[string]string{"ns": "y"})},
			[]string{"y/a", "y/b", "y/c"}},
		{"empty namespaceSelector includes kube-system and namespaces known from pods", &pm.Policy_Peer{Namespaces: sel(nil)},
			[]string{"kube-system/dns", "x/a", "x/b", "x/c", "y/a", "y/b", "y/c", "z/a", "z/b", "z/c"}},
		{"podSelector AND namespaceSelector", &pm.Policy_Peer{Pods: sel(map[string]string{"pod": "b"}), Namespaces: sel(nil, in("ns", "x", "y"))},
			[]string{"x/b", "y/b"}},
		{"metadata name label of an unreflected namespace", &pm.Policy_Peer{Namespaces: sel(map[string]string{MetadataNameLabel: "z"}), Pods: sel(nil, in("pod", "c"))},
			[]string{"z/c"}},
		{"ipBlock selects no pods", &pm.Policy_Peer{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "10.0.0.0/8"}}, []string{}},
	} {
		got := names(c.PeerPods("x", tt.peer))
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: PeerPods = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPeerMatchesPodAgreesWithPeerPods checks on random selectors and pods that the
// reverse question gives the same answer as the forward one (one evaluator).
func TestPeerMatchesPodAgreesWithPeerPods(t *testing.T) {
	rnd := rand.New(rand.NewSource(7))
	keys, values := []string{"a", "b", "c"}, []string{"1", "2"}
	randSel := func() *pm.Policy_LabelSelector {
		if rnd.Intn(4) == 0 {
			return nil
		}
		s := &pm.Policy_LabelSelector{}
		for i := rnd.Intn(3); i > 0; i-- {
			s.MatchLabel = append(s.MatchLabel, &pm.Policy_Label{Key: keys[rnd.Intn(3)], Value: values[rnd.Intn(2)]})
		}
		for i := rnd.Intn(3); i > 0; i-- {
			s.MatchExpression = append(s.MatchExpression, &expr{Key: keys[rnd.Intn(3)],
				Operator: pm.Policy_LabelSelector_LabelExpression_Operator(rnd.Intn(4)), Value: []string{values[rnd.Intn(2)]}})
		}
		return s
	}
	randLabels := func() map[string]string {
		l := map[string]string{}
		for _, k := range keys {
			if rnd.Intn(2) == 0 {
				l[k] = values[rnd.Intn(2)]
			}
		}
		return l
	}
	c := New()
	for _, ns := range []string{"n1", "n2", "n3"} {
		m := &nsmodel.Namespace{Name: ns}
		for k, v := range randLabels() {
			m.Label = append(m.Label, &nsmodel.Namespace_Label{Key: k, Value: v})
		}
		c.PutNamespace(m)
		for i := 0; i < 20; i++ {
			c.PutPod(pod(ns, fmt.Sprint("p", i), "", randLabels()))
		}
	}
	for n := 0; n < 500; n++ {
		peer := &pm.Policy_Peer{Pods: randSel(), Namespaces: randSel()}
		if peer.Pods == nil && peer.Namespaces == nil {
			continue
		}
		selected := map[podmodel.ID]bool{}
		for _, p := range c.PeerPods("n1", peer) {
			selected[p.ID] = true
		}
		c.AllPods(func(p *Pod) {
			nsl, _ := c.NamespaceLabels(p.ID.Namespace)
			if got := PeerMatchesPod("n1", peer, p, nsl); got != selected[p.ID] {
				t.Fatalf("peer %v, pod %v %v: PeerMatchesPod = %v, PeerPods selected it: %v", peer, p.ID, p.Labels, got, selected[p.ID])
			}
		})
	}
}

func TestLabelIndexFollowsPodChanges(t *testing.T) {
	c := fixture()
	id := podmodel.ID{Namespace: "x", Name: "a"}
	c.PutPod(pod("x", "a", "10.1.1.2", map[string]string{"pod": "b"}))
	if got := names(c.SelectPods("x", sel(map[string]string{"pod": "a"}))); len(got) != 0 {
		t.Errorf("after relabel, pod=a selects %v", got)
	}
	if got := names(c.SelectPods("x", sel(map[string]string{"pod": "b"}))); fmt.Sprint(got) != "[x/a x/b]" {
		t.Errorf("after relabel, pod=b selects %v", got)
	}
	c.DeletePod(id)
	if got := names(c.SelectPods("x", sel(nil, in("pod", "a", "b")))); fmt.Sprint(got) != "[x/b]" {
		t.Errorf("after delete, pod in (a,b) selects %v", got)
	}
}

func TestPoliciesOfPodAreSortedAndSelectedInTheirNamespace(t *testing.T) {
	c := fixture()
	c.PutPolicy(&pm.Policy{Namespace: "x", Name: "z-all", Pods: sel(nil)})
	c.PutPolicy(&pm.Policy{Namespace: "x", Name: "a-only", Pods: sel(map[string]string{"pod": "a"})})
	c.PutPolicy(&pm.Policy{Namespace: "y", Name: "other-ns", Pods: sel(nil)})
	got := c.PoliciesOfPod(c.Pod(podmodel.ID{Namespace: "x", Name: "a"}))
	if fmt.Sprint(got) != "[x/a-only x/z-all]" {
		t.Errorf("PoliciesOfPod(x/a) = %v", got)
	}
	c.DeletePolicy(PolicyID{Namespace: "x", Name: "z-all"})
	if got := c.PoliciesOfPod(c.Pod(podmodel.ID{Namespace: "x", Name: "b"})); len(got) != 0 {
		t.Errorf("PoliciesOfPod(x/b) after delete = %v", got)
	}
}

func TestPodFromModelKeepsNamedPortsWithProtocol(t *testing.T) {
	p := PodFromModel(&podmodel.Pod{Name: "a", Namespace: "x", IpAddress: "10.1.1.2",
		Label: []*podmodel.Pod_Label{{Key: "app", Value: "web"}},
		Container: []*podmodel.Pod_Container{{Port: []*podmodel.Pod_Container_Port{
			{Name: "http", ContainerPort: 8080},
			{Name: "dns", ContainerPort: 53, Protocol: podmodel.Pod_Container_Port_UDP},
			{ContainerPort: 9000}, // unnamed: not usable by name
		}}}})
	if p.IP != netip.MustParseAddr("10.1.1.2") || p.Labels["app"] != "web" {
		t.Errorf("pod = %+v", p)
	}
	if port, ok := p.ResolvePort("http", TCP); !ok || port != 8080 {
		t.Errorf("http/TCP = %d, %v", port, ok)
	}
	if _, ok := p.ResolvePort("http", UDP); ok {
		t.Error("http/UDP resolved, want unresolved")
	}
	if port, ok := p.ResolvePort("dns", UDP); !ok || port != 53 {
		t.Errorf("dns/UDP = %d, %v", port, ok)
	}
}

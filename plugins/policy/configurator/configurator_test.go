package configurator

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/cache"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// cluster is the Kubernetes network-policy test model: namespaces x, y, z with
// pods a, b, c each (label pod=<name>, namespace label ns=<name>); every pod
// has the named ports serve-80-tcp, serve-81-udp.
func cluster() *cache.Cache {
	c := cache.New()
	for n, ns := range []string{"x", "y", "z"} {
		c.PutNamespace(&nsmodel.Namespace{Name: ns, Label: []*nsmodel.Namespace_Label{{Key: "ns", Value: ns}}})
		for i, name := range []string{"a", "b", "c"} {
			c.PutPod(&cache.Pod{
				ID:     podmodel.ID{Namespace: ns, Name: name},
				Labels: map[string]string{"pod": name},
				IP:     netip.AddrFrom4([4]byte{10, 1, byte(n + 1), byte(i + 2)}),
				Ports: []cache.NamedPort{{Name: "serve-80-tcp", Protocol: cache.TCP, Port: 80},
					{Name: "serve-81-udp", Protocol: cache.UDP, Port: 81}},
			})
		}
	}
	c.PutNamespace(&nsmodel.Namespace{Name: "kube-system"})
	c.PutPod(&cache.Pod{ID: podmodel.ID{Namespace: "kube-system", Name: "dns"}, Labels: map[string]string{"k8s-app": "dns"},
		IP: netip.MustParseAddr("10.1.9.2")})
	return c
}

var node = Node{AllowedSources: []netip.Addr{netip.MustParseAddr("10.1.1.254"), netip.MustParseAddr("172.30.1.2")}}

func ip(c *cache.Cache, id string) netip.Addr {
	var ns, name string
	fmt.Sscanf(id, "%1s/%s", &ns, &name)
	if id == "kube-system/dns" {
		ns, name = "kube-system", "dns"
	}
	p := c.Pod(podmodel.ID{Namespace: ns, Name: name})
	if p == nil {
		panic("no pod " + id)
	}
	return p.IP
}

// allows evaluates a rule list like VPP's ACL plugin (first match wins; nil
// list: everything passes).
func allows(rules []renderer.ContivRule, src, dst netip.Addr, proto renderer.Protocol, port uint16) bool {
	if rules == nil {
		return true
	}
	for _, r := range rules {
		if r.SrcNetwork.IsValid() && !r.SrcNetwork.Contains(src) {
			continue
		}
		if r.DestNetwork.IsValid() && !r.DestNetwork.Contains(dst) {
			continue
		}
		if r.Protocol != renderer.ANY {
			if r.Protocol != proto {
				continue
			}
			if !r.AnyPort() && (port < r.DestPortFirst || port > r.DestPortLast) {
				continue
			}
		}
		return r.Action == renderer.ActionPermit
	}
	return false
}

type flow struct {
	from, to string // pod IDs or IP addresses
	proto    renderer.Protocol
	port     uint16
	want     bool
}

func rulesOf(c *cache.Cache, policies []*pm.Policy, podID podmodel.ID) (in, eg []renderer.ContivRule) {
	for _, p := range policies {
		c.PutPolicy(p)
	}
	pod := c.Pod(podID)
	var compiled []*Compiled
	for _, id := range c.PoliciesOfPod(pod) {
		compiled = append(compiled, Compile(c, c.Policy(id)))
	}
	return PodRules(compiled, pod, node)
}

func addr(c *cache.Cache, s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a
	}
	return ip(c, s)
}

type lsel = pm.Policy_LabelSelector

func podSel(name string) *lsel {
	return &lsel{MatchLabel: []*pm.Policy_Label{{Key: "pod", Value: name}}}
}
func nsSel(name string) *lsel {
	return &lsel{MatchLabel: []*pm.Policy_Label{{Key: "ns", Value: name}}}
}
func tcp(n int32) *pm.Policy_Port {
	return &pm.Policy_Port{Port: &pm.Policy_Port_PortNameOrNumber{Number: n}}
}
func udp(n int32) *pm.Policy_Port {
	return &pm.Policy_Port{Protocol: pm.Policy_Port_UDP, Port: &pm.Policy_Port_PortNameOrNumber{Number: n}}
}
func named(name string, proto pm.Policy_Port_Protocol) *pm.Policy_Port {
	return &pm.Policy_Port{Protocol: proto, Port: &pm.Policy_Port_PortNameOrNumber{Type: pm.Policy_Port_PortNameOrNumber_NAME, Name: name}}
}

// TestPodRulesAllowWhatKubernetesDefines checks the rules of pod x/a (ingress:
// flows into it; egress: flows out of it) by evaluating flows, one case per
// behaviour and per upstream quirk fixed.
func TestPodRulesAllowWhatKubernetesDefines(t *testing.T) {
	xa := podmodel.ID{Namespace: "x", Name: "a"}
	pol := func(mod func(p *pm.Policy)) *pm.Policy {
		p := &pm.Policy{Namespace: "x", Name: "p", Pods: podSel("a")}
		mod(p)
		return p
	}
	tests := []struct {
		name     string
		policies []*pm.Policy
		ingress  []flow // to x/a
		egress   []flow // from x/a
	}{
		{name: "no policy: not isolated",
			ingress: []flow{{from: "y/b", proto: renderer.TCP, port: 80, want: true}},
			egress:  []flow{{to: "8.8.8.8", proto: renderer.UDP, port: 53, want: true}}},
		{name: "default deny ingress (DEFAULT without egress rules isolates ingress only)",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {})},
			ingress: []flow{{from: "x/b", proto: renderer.TCP, port: 80, want: false},
				{from: "y/b", proto: renderer.ANY, want: false}},
			egress: []flow{{to: "y/b", proto: renderer.TCP, port: 80, want: true}}},
		{name: "DEFAULT with egress rules isolates egress too",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.EgressRule = []*pm.Policy_EgressRule{{To: []*pm.Policy_Peer{{Pods: podSel("b")}}}}
			})},
			ingress: []flow{{from: "x/b", proto: renderer.TCP, port: 80, want: false}},
			egress: []flow{{to: "x/b", proto: renderer.TCP, port: 80, want: true},
				{to: "x/c", proto: renderer.TCP, port: 80, want: false}}},
		{name: "default deny egress",
			policies: []*pm.Policy{pol(func(p *pm.Policy) { p.PolicyType = pm.Policy_EGRESS })},
			ingress:  []flow{{from: "x/b", proto: renderer.TCP, port: 80, want: true}},
			egress: []flow{{to: "x/b", proto: renderer.TCP, port: 80, want: false},
				{to: "8.8.8.8", proto: renderer.ANY, want: false}}},
		{name: "allow from one pod",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: podSel("b")}}}}
			})},
			ingress: []flow{{from: "x/b", proto: renderer.TCP, port: 80, want: true},
				{from: "x/b", proto: renderer.ANY, want: true},
				{from: "x/c", proto: renderer.TCP, port: 80, want: false},
				{from: "y/b", proto: renderer.TCP, port: 80, want: false}}},
		{name: "allow from a namespace",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: nsSel("y")}}}}
			})},
			ingress: []flow{{from: "y/a", proto: renderer.UDP, port: 81, want: true},
				{from: "y/c", proto: renderer.TCP, port: 80, want: true},
				{from: "x/b", proto: renderer.TCP, port: 80, want: false},
				{from: "z/b", proto: renderer.TCP, port: 80, want: false}}},
		{name: "podSelector AND namespaceSelector in one peer",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: nsSel("y"), Pods: podSel("b")}}}}
			})},
			ingress: []flow{{from: "y/b", proto: renderer.TCP, port: 80, want: true},
				{from: "y/a", proto: renderer.TCP, port: 80, want: false},
				{from: "x/b", proto: renderer.TCP, port: 80, want: false}}},
		{name: "empty namespaceSelector includes kube-system",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: &lsel{}}}}}
			})},
			ingress: []flow{{from: "kube-system/dns", proto: renderer.UDP, port: 53, want: true},
				{from: "z/c", proto: renderer.UDP, port: 53, want: true},
				{from: "192.168.1.1", proto: renderer.UDP, port: 53, want: false}}},
		{name: "ipBlock with except",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{
					Cidr: "10.1.0.0/16", Except: []string{"10.1.2.0/24", "10.1.3.3/32"}}}}}}
			})},
			ingress: []flow{{from: "x/b", proto: renderer.TCP, port: 80, want: true},
				{from: "y/b", proto: renderer.TCP, port: 80, want: false},
				{from: "z/a", proto: renderer.TCP, port: 80, want: true},
				{from: "z/b", proto: renderer.TCP, port: 80, want: false},
				{from: "10.2.0.1", proto: renderer.TCP, port: 80, want: false}}},
		{name: "ports: number, range (endPort), protocol only = all ports of it",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				ranged := tcp(1000)
				ranged.EndPort = 1010
				p.IngressRule = []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{tcp(80), ranged, {Protocol: pm.Policy_Port_SCTP}}}}
			})},
			ingress: []flow{{from: "y/b", proto: renderer.TCP, port: 80, want: true},
				{from: "y/b", proto: renderer.TCP, port: 81, want: false},
				{from: "y/b", proto: renderer.UDP, port: 80, want: false},
				{from: "y/b", proto: renderer.TCP, port: 1000, want: true},
				{from: "y/b", proto: renderer.TCP, port: 1010, want: true},
				{from: "y/b", proto: renderer.TCP, port: 1011, want: false},
				{from: "y/b", proto: renderer.SCTP, port: 5000, want: true},
				{from: "y/b", proto: renderer.ANY, want: false}}},
		{name: "ingress named port resolves on the pod; unresolved matches nothing",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{
					named("serve-80-tcp", pm.Policy_Port_TCP), named("serve-80-tcp", pm.Policy_Port_UDP), named("nope", pm.Policy_Port_TCP)}}}
			})},
			ingress: []flow{{from: "y/b", proto: renderer.TCP, port: 80, want: true},
				{from: "y/b", proto: renderer.UDP, port: 80, want: false},
				{from: "y/b", proto: renderer.TCP, port: 81, want: false}}},
		{name: "only an unresolved named port: nothing allowed (upstream: everything)",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.IngressRule = []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{named("nope", pm.Policy_Port_TCP)}}}
			})},
			ingress: []flow{{from: "y/b", proto: renderer.TCP, port: 80, want: false}}},
		{name: "egress named port resolves on each destination pod, IP blocks keep numbered ports",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.PolicyType = pm.Policy_EGRESS
				p.EgressRule = []*pm.Policy_EgressRule{{Port: []*pm.Policy_Port{named("serve-81-udp", pm.Policy_Port_UDP), udp(53)},
					To: []*pm.Policy_Peer{{Namespaces: nsSel("y")}, {IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "8.8.8.8/32"}}}}}
			})},
			egress: []flow{{to: "y/b", proto: renderer.UDP, port: 81, want: true},
				{to: "y/b", proto: renderer.UDP, port: 53, want: true},
				{to: "z/b", proto: renderer.UDP, port: 81, want: false},
				{to: "8.8.8.8", proto: renderer.UDP, port: 53, want: true},
				{to: "8.8.8.8", proto: renderer.UDP, port: 81, want: false}}},
		{name: "egress named port without peers: every pod of the cluster",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.PolicyType = pm.Policy_EGRESS
				p.EgressRule = []*pm.Policy_EgressRule{{Port: []*pm.Policy_Port{named("serve-80-tcp", pm.Policy_Port_TCP)}}}
			})},
			egress: []flow{{to: "z/c", proto: renderer.TCP, port: 80, want: true},
				{to: "kube-system/dns", proto: renderer.TCP, port: 80, want: false},
				{to: "8.8.8.8", proto: renderer.TCP, port: 80, want: false}}},
		{name: "egress to outside the cluster",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {
				p.PolicyType = pm.Policy_EGRESS
				p.EgressRule = []*pm.Policy_EgressRule{{To: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}}}}}
			})},
			egress: []flow{{to: "8.8.8.8", proto: renderer.UDP, port: 53, want: true},
				{to: "x/b", proto: renderer.TCP, port: 80, want: false}}},
		{name: "two policies: union",
			policies: []*pm.Policy{
				pol(func(p *pm.Policy) {
					p.IngressRule = []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: podSel("b")}}, Port: []*pm.Policy_Port{tcp(80)}}}
				}),
				{Namespace: "x", Name: "q", Pods: &lsel{}, IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: podSel("c")}}, Port: []*pm.Policy_Port{udp(81)}}}},
			},
			ingress: []flow{{from: "x/b", proto: renderer.TCP, port: 80, want: true},
				{from: "x/c", proto: renderer.UDP, port: 81, want: true},
				{from: "x/b", proto: renderer.UDP, port: 81, want: false},
				{from: "x/c", proto: renderer.TCP, port: 80, want: false}}},
		{name: "allow all ingress rule: not isolated",
			policies: []*pm.Policy{pol(func(p *pm.Policy) { p.IngressRule = []*pm.Policy_IngressRule{{}} })},
			ingress:  []flow{{from: "203.0.113.9", proto: renderer.ANY, want: true}}},
		{name: "node and NAT loopback always allowed in (kubelet probes)",
			policies: []*pm.Policy{pol(func(p *pm.Policy) {})},
			ingress: []flow{{from: "172.30.1.2", proto: renderer.TCP, port: 8080, want: true},
				{from: "10.1.1.254", proto: renderer.TCP, port: 80, want: true},
				{from: "172.30.1.3", proto: renderer.TCP, port: 80, want: false}}},
		{name: "policy of another pod does not apply",
			policies: []*pm.Policy{{Namespace: "x", Name: "p", Pods: podSel("b")}},
			ingress:  []flow{{from: "y/b", proto: renderer.TCP, port: 80, want: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			in, eg := rulesOf(c, tt.policies, xa)
			self := ip(c, "x/a")
			for _, f := range tt.ingress {
				if got := allows(in, addr(c, f.from), self, f.proto, f.port); got != f.want {
					t.Errorf("%s -> x/a %v:%d allowed = %v, want %v\nrules: %v", f.from, f.proto, f.port, got, f.want, in)
				}
			}
			for _, f := range tt.egress {
				if got := allows(eg, self, addr(c, f.to), f.proto, f.port); got != f.want {
					t.Errorf("x/a -> %s %v:%d allowed = %v, want %v\nrules: %v", f.to, f.proto, f.port, got, f.want, eg)
				}
			}
		})
	}
}

func TestIsolatedListsAreSortedPermitsThenOneDeny(t *testing.T) {
	c := cluster()
	in, _ := rulesOf(c, []*pm.Policy{{Namespace: "x", Name: "p", Pods: podSel("a"),
		IngressRule: []*pm.Policy_IngressRule{
			{From: []*pm.Policy_Peer{{Pods: podSel("b")}, {Pods: podSel("b")}}, Port: []*pm.Policy_Port{tcp(80)}},
			{From: []*pm.Policy_Peer{{Pods: podSel("b")}}, Port: []*pm.Policy_Port{tcp(80)}},
		}}}, podmodel.ID{Namespace: "x", Name: "a"})
	want := []string{
		"PERMIT 10.1.1.3/32 -> any TCP:80",
		"PERMIT 10.1.1.254/32 -> any ANY",
		"PERMIT 172.30.1.2/32 -> any ANY",
		"DENY any -> any ANY",
	}
	if fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("rules:\n got %v\nwant %v", in, want)
	}
}

func TestSubtractSplitsAroundExceptions(t *testing.T) {
	for _, tt := range []struct {
		cidr   string
		except []string
		want   string
	}{
		{"10.0.0.0/8", nil, "[10.0.0.0/8]"},
		{"10.0.0.0/30", []string{"10.0.0.1/32"}, "[10.0.0.0/32 10.0.0.2/31]"},
		{"10.0.0.0/24", []string{"10.0.0.0/24"}, "[]"},
		{"10.0.0.0/24", []string{"192.168.0.0/16"}, "[10.0.0.0/24]"},
		{"10.0.0.5/24", []string{"10.0.0.128/25"}, "[10.0.0.0/25]"},
	} {
		got, err := subtract(tt.cidr, tt.except)
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("subtract(%s, %v) = %v, %v; want %s", tt.cidr, tt.except, got, err, tt.want)
		}
	}
	if _, err := subtract("nonsense", nil); err == nil {
		t.Error("bad CIDR accepted")
	}
}

func TestBadIPBlockIsReportedAndAllowsNothing(t *testing.T) {
	c := cluster()
	p := &pm.Policy{Namespace: "x", Name: "p", Pods: podSel("a"),
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "10.1.0.0/33"}}}}}}
	comp := Compile(c, p)
	if len(comp.Problems) != 1 {
		t.Errorf("problems = %v, want one", comp.Problems)
	}
	in, _ := PodRules([]*Compiled{comp}, c.Pod(podmodel.ID{Namespace: "x", Name: "a"}), Node{})
	if allows(in, ip(c, "x/b"), ip(c, "x/a"), renderer.TCP, 80) {
		t.Errorf("bad ipBlock allowed traffic: %v", in)
	}
}

func TestUpdatePodReportsOnlyChangesOfTheRules(t *testing.T) {
	c := cluster()
	pol := &pm.Policy{Name: "p", Namespace: "x", Pods: podSel("a"),
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: podSel("b")}}}},
		EgressRule:  []*pm.Policy_EgressRule{{Port: []*pm.Policy_Port{named("serve-80-tcp", pm.Policy_Port_TCP)}}}}
	comp := Compile(c, pol)
	b := *c.Pod(podmodel.ID{Namespace: "x", Name: "b"})
	nsLabels, _ := c.NamespaceLabels("x")
	step := func(name string, p *cache.Pod, want bool) {
		t.Helper()
		if got := comp.UpdatePod(b.ID, p, nsLabels); got != want {
			t.Errorf("%s: UpdatePod = %v, want %v", name, got, want)
		}
	}
	relabelled := b
	relabelled.Labels = map[string]string{"pod": "b", "extra": "yes"}
	step("new label, still selected", &relabelled, false)
	moved := relabelled
	moved.IP = netip.MustParseAddr("10.1.1.77")
	step("new address", &moved, true)
	renamed := moved
	renamed.Ports = []cache.NamedPort{{Name: "serve-80-tcp", Protocol: cache.TCP, Port: 8080}}
	step("named port renumbered (egress named port of every pod)", &renamed, true)
	unselected := renamed
	unselected.Labels = map[string]string{"pod": "z"}
	step("no longer selected by the ingress peer (still by the egress rule)", &unselected, true)
	step("same again", &unselected, false)
	step("deleted", nil, true)
}

// TestPodRulesFollowPeerUpdates: the sorted rules a policy keeps are
// dropped when a peer changes, and rules of several policies are merged
// without duplicates.
func TestPodRulesFollowPeerUpdates(t *testing.T) {
	c := cluster()
	mk := func(name string) *Compiled {
		return Compile(c, &pm.Policy{Name: name, Namespace: "x", Pods: podSel("a"),
			IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{tcp(80)}, From: []*pm.Policy_Peer{{Pods: podSel("b")}}}}})
	}
	p1, p2 := mk("p1"), mk("p2")
	a := c.Pod(podmodel.ID{Namespace: "x", Name: "a"})
	b := *c.Pod(podmodel.ID{Namespace: "x", Name: "b"})
	in, _ := PodRules([]*Compiled{p1, p2}, a, node)
	if len(in) != 1+len(node.AllowedSources)+1 || !allows(in, b.IP, a.IP, renderer.TCP, 80) || allows(in, b.IP, a.IP, renderer.TCP, 81) {
		t.Fatalf("two equal policies: %v", in)
	}
	moved := b
	moved.IP = netip.MustParseAddr("10.1.1.77")
	nsLabels, _ := c.NamespaceLabels("x")
	p1.UpdatePod(b.ID, &moved, nsLabels)
	in, _ = PodRules([]*Compiled{p1}, a, node)
	if !allows(in, moved.IP, a.IP, renderer.TCP, 80) || allows(in, b.IP, a.IP, renderer.TCP, 80) {
		t.Errorf("after the peer moved: %v", in)
	}
	in, _ = PodRules([]*Compiled{p1, p2}, a, node)
	if !allows(in, moved.IP, a.IP, renderer.TCP, 80) || !allows(in, b.IP, a.IP, renderer.TCP, 80) || !slices.IsSortedFunc(in[:len(in)-1], renderer.Compare) {
		t.Errorf("merged with the policy that still has the old address: %v", in)
	}
}

// TestMergeEqualsSortingTheUnion: merging sorted lists gives what sorting
// and deduplicating their concatenation gives.
func TestMergeEqualsSortingTheUnion(t *testing.T) {
	for seed := 0; seed < 300; seed++ {
		var lists []ruleList
		var all []renderer.ContivRule
		for l := 0; l < 1+seed%5; l++ {
			var rules []renderer.ContivRule
			for i := 0; i < (seed*3+l*7)%23; i++ {
				v := (seed*31 + l*17 + i*i*13) % 29
				rules = append(rules, renderer.ContivRule{Action: renderer.ActionPermit, Protocol: renderer.Protocol(v % 3),
					SrcNetwork:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 1, byte(v % 7)}), 32),
					DestPortFirst: uint16(80 + v%4), DestPortLast: uint16(80 + v%4)})
			}
			all = append(all, rules...)
			lists = append(lists, normalizeList(slices.Clone(rules)))
		}
		want := append(normalizeList(all).rules, renderer.ContivRule{Action: renderer.ActionDeny, Protocol: renderer.ANY})
		if got, _ := merge(lists); !slices.Equal(got, want) {
			t.Fatalf("seed %d:\n got %v\nwant %v", seed, got, want)
		}
	}
}

// TestPodRulesNameTheirPolicies: a rule names the policies that produce it
// (both when two do), the node's sources none, and the final DENY the
// policies isolating the pod in that direction.
func TestPodRulesNameTheirPolicies(t *testing.T) {
	c := cluster()
	mk := func(name string, port int32) *Compiled {
		return Compile(c, &pm.Policy{Name: name, Namespace: "x", Pods: podSel("a"),
			IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{tcp(port)}, From: []*pm.Policy_Peer{{Pods: podSel("b")}}}}})
	}
	a := c.Pod(podmodel.ID{Namespace: "x", Name: "a"})
	r := PodRulesOwned([]*Compiled{mk("p1", 80), mk("p2", 80), mk("p3", 81)}, a, node)
	if len(r.IngressOwners) != len(r.Ingress) || r.Egress != nil || r.EgressOwners != nil {
		t.Fatalf("owners %v for rules %v (egress %v %v)", r.IngressOwners, r.Ingress, r.Egress, r.EgressOwners)
	}
	for i, rule := range r.Ingress {
		want := ""
		switch {
		case rule.Action == renderer.ActionDeny:
			want = "x/p1,x/p2,x/p3"
		case rule.DestPortFirst == 80:
			want = "x/p1,x/p2"
		case rule.DestPortFirst == 81:
			want = "x/p3"
		}
		if r.IngressOwners[i] != want {
			t.Errorf("rule %s owned by %q, want %q", rule, r.IngressOwners[i], want)
		}
	}
}

// Package configurator turns network policies into the ContivRule lists of
// each local pod (renderer.PodConfig.PodIngress / PodEgress).
//
// It works in two steps, so that a change costs only what it touches:
//
//	Compile(cache, policy)  -> Compiled: the policy's rules with peers resolved
//	                           to prefixes (pod /32s, ipBlock pieces) and ports
//	                           parsed; independent of the pods it applies to.
//	PodRules(compiled, pod) -> the pod's ingress and egress rule lists: named
//	                           ports resolved (ingress: on the pod itself;
//	                           egress: on each peer pod), node addresses
//	                           always allowed in, DENY of the rest.
//
// Semantics (Kubernetes networking.k8s.io/v1, with upstream's quirks fixed):
//   - a pod is isolated in a direction when a policy selecting it has that
//     policy type; policyTypes unset (DEFAULT) means Ingress, plus Egress
//     when the policy has egress rules;
//   - the allowed traffic is the union of the rules of those policies; a rule
//     without peers allows every peer, without ports every port;
//   - a port with a protocol and no number allows every port of that
//     protocol; endPort makes a range; a named port that does not resolve
//     allows nothing (upstream: everything);
//   - ipBlock: the CIDR minus its exceptions, split into permitted pieces;
//   - traffic into a pod from the node itself (kubelet probes: host
//     addresses, the host interconnect) and from the NAT loopback (a pod
//     reaching itself through a service) is always allowed.
//
// Lists are sorted by renderer.Compare and deduplicated; an isolated list
// ends with DENY any; a list that allows everything is returned as nil.
package configurator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/cache"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// Port is one port of a rule: a protocol with a range (0-0 for every port
// of the protocol) or a name to resolve, or ANY for a rule without ports.
type Port struct {
	Protocol    renderer.Protocol
	First, Last uint16
	Name        string
}

// Match is one compiled rule of a policy.
type Match struct {
	// AnyPeer is true for a rule without peers.
	AnyPeer bool
	// Blocks are the ipBlock pieces.
	Blocks []netip.Prefix
	// PeerPods are the selected pods with an address (with AnyPeer: every pod
	// of the cluster when the rule is an egress rule with a named port).
	PeerPods map[podmodel.ID]*cache.Pod
	// Ports are the rule's ports; one ANY entry for a rule without ports.
	Ports []Port
	// peers are the rule's peers, namespaced in ns, to re-evaluate one pod.
	peers   []*pm.Policy_Peer
	ns      string
	allPods bool // AnyPeer egress rule with a named port
}

// Compiled is a policy with its peers resolved.
type Compiled struct {
	ID              cache.PolicyID
	Ingress, Egress bool
	IngressRules    []Match
	EgressRules     []Match
	// NamedIngress is true when an ingress rule has a named port (its rules
	// then depend on the target pod).
	NamedIngress bool
	// Problems lists what could not be used (bad CIDRs), for logs.
	Problems []string
	// sorted caches the policy's rules, normalized, sorted and deduplicated
	// (PodRules merges them); dropped when UpdatePod changes the rules.
	sorted sortedRules
}

// sortedRules are the rule lists of one policy, ready to merge.
type sortedRules struct {
	// in by the target pod's named ports ("" when the policy has no named
	// ingress port)
	in map[string]ruleList
	eg *ruleList
}

// ruleList is a normalized, sorted, deduplicated list of PERMITs; all is true
// when one of them allows everything; owner is the policy the list comes from
// ("namespace/name"; "" for the node's own sources).
type ruleList struct {
	rules []renderer.ContivRule
	all   bool
	owner string
}

// Compile resolves a policy's peers against the cluster state.
func Compile(c *cache.Cache, p *pm.Policy) *Compiled {
	out := &Compiled{ID: cache.PolicyID{Namespace: p.GetNamespace(), Name: p.GetName()}}
	switch p.GetPolicyType() {
	case pm.Policy_INGRESS:
		out.Ingress = true
	case pm.Policy_EGRESS:
		out.Egress = true
	case pm.Policy_INGRESS_AND_EGRESS:
		out.Ingress, out.Egress = true, true
	default: // DEFAULT: as Kubernetes defaults policyTypes
		out.Ingress, out.Egress = true, len(p.GetEgressRule()) > 0
	}
	if out.Ingress {
		for i, r := range p.GetIngressRule() {
			m := out.compileMatch(c, p.GetNamespace(), fmt.Sprintf("ingress[%d]", i), r.GetPort(), r.GetFrom(), false)
			for _, port := range m.Ports {
				out.NamedIngress = out.NamedIngress || port.Name != ""
			}
			out.IngressRules = append(out.IngressRules, m)
		}
	}
	if out.Egress {
		for i, r := range p.GetEgressRule() {
			out.EgressRules = append(out.EgressRules, out.compileMatch(c, p.GetNamespace(), fmt.Sprintf("egress[%d]", i), r.GetPort(), r.GetTo(), true))
		}
	}
	return out
}

func (out *Compiled) compileMatch(c *cache.Cache, ns, where string, ports []*pm.Policy_Port, peers []*pm.Policy_Peer, egress bool) Match {
	m := Match{AnyPeer: len(peers) == 0, PeerPods: map[podmodel.ID]*cache.Pod{}, peers: peers, ns: ns}
	named := false
	for _, p := range ports {
		port := Port{Protocol: protocol(p.GetProtocol())}
		if pn := p.GetPort(); pn != nil {
			if pn.GetType() == pm.Policy_Port_PortNameOrNumber_NAME {
				port.Name, named = pn.GetName(), true
			} else {
				n := pn.GetNumber()
				last := n
				if p.GetEndPort() > 0 {
					last = p.GetEndPort()
				}
				if n < 1 || n > 65535 || last < n || last > 65535 {
					out.Problems = append(out.Problems, fmt.Sprintf("%s: port %d-%d out of range: ignored", where, n, last))
					continue
				}
				port.First, port.Last = uint16(n), uint16(last)
			}
		}
		m.Ports = append(m.Ports, port)
	}
	if len(ports) == 0 {
		m.Ports = []Port{{Protocol: renderer.ANY}}
	}
	for i, peer := range peers {
		if b := peer.GetIpBlock(); b != nil {
			pieces, err := subtract(b.GetCidr(), b.GetExcept())
			if err != nil {
				out.Problems = append(out.Problems, fmt.Sprintf("%s.peers[%d]: %v", where, i, err))
				continue
			}
			m.Blocks = append(m.Blocks, pieces...)
			continue
		}
		for _, pod := range c.PeerPods(ns, peer) {
			if pod.IP.IsValid() {
				m.PeerPods[pod.ID] = pod
			}
		}
	}
	if egress && named && m.AnyPeer {
		m.allPods = true
		c.AllPods(func(p *cache.Pod) {
			if p.IP.IsValid() {
				m.PeerPods[p.ID] = p
			}
		})
	}
	return m
}

// UpdatePod re-evaluates one pod (removed when pod is nil) against the peers
// of every rule, at the cost of the policy's peers instead of a cluster
// scan; it reports whether the rules it yields changed (a peer pod that
// stays selected with the same address and named ports changes nothing).
// nsLabels are the labels of the pod's namespace.
func (out *Compiled) UpdatePod(id podmodel.ID, pod *cache.Pod, nsLabels map[string]string) bool {
	changed := false
	for _, rules := range [][]Match{out.IngressRules, out.EgressRules} {
		for i := range rules {
			m := &rules[i]
			selected := false
			if pod != nil && pod.IP.IsValid() {
				selected = m.allPods
				for _, peer := range m.peers {
					selected = selected || cache.PeerMatchesPod(m.ns, peer, pod, nsLabels)
				}
			}
			old, had := m.PeerPods[id]
			switch {
			case selected && !had:
				m.PeerPods[id] = pod
				changed = true
			case selected && old != pod:
				// the rules use a peer's address and named ports only: a new
				// label (or anything else) of a pod that stays selected
				// changes nothing
				m.PeerPods[id] = pod
				changed = changed || !slices.Equal(old.Addrs(), pod.Addrs()) || !slices.Equal(old.Ports, pod.Ports)
			case !selected && had:
				delete(m.PeerPods, id)
				changed = true
			}
		}
	}
	if changed {
		out.sorted = sortedRules{}
	}
	return changed
}

// ingressOf returns the policy's ingress rules for the pod, from the cache.
func (out *Compiled) ingressOf(pod *cache.Pod) ruleList {
	key := ""
	if out.NamedIngress {
		key = portsKey(pod)
	}
	if l, ok := out.sorted.in[key]; ok {
		return l
	}
	var rules []renderer.ContivRule
	for _, m := range out.IngressRules {
		rules = appendIngress(rules, m, pod)
	}
	l := normalizeList(rules)
	l.owner = out.ID.String()
	if out.sorted.in == nil {
		out.sorted.in = map[string]ruleList{}
	}
	out.sorted.in[key] = l
	return l
}

// egressOf returns the policy's egress rules, from the cache.
func (out *Compiled) egressOf() ruleList {
	if out.sorted.eg == nil {
		var rules []renderer.ContivRule
		for _, m := range out.EgressRules {
			rules = appendEgress(rules, m)
		}
		l := normalizeList(rules)
		l.owner = out.ID.String()
		out.sorted.eg = &l
	}
	return *out.sorted.eg
}

// normalizeList normalizes the ports of PERMITs (every port: 0-0), sorts
// them and drops duplicates.
func normalizeList(rules []renderer.ContivRule) ruleList {
	l := ruleList{}
	for i := range rules {
		if rules[i].AnyPort() {
			rules[i].DestPortFirst, rules[i].DestPortLast = 0, 0
		}
		if !rules[i].SrcNetwork.IsValid() && !rules[i].DestNetwork.IsValid() && rules[i].Protocol == renderer.ANY {
			l.all = true
		}
	}
	if !slices.IsSortedFunc(rules, renderer.Compare) {
		slices.SortFunc(rules, renderer.Compare)
	}
	l.rules = slices.Clip(slices.Compact(rules))
	return l
}

// merge merges sorted lists into one sorted list without duplicates,
// followed by DENY any; nil when a list allows everything. owners names, rule
// by rule, the owners of the lists that have the rule (renderer.JoinOwners);
// the DENY is owned by the owners of all lists (the policies isolating the
// pod in that direction).
func merge(lists []ruleList) (out []renderer.ContivRule, owners []string) {
	n := 1
	for _, l := range lists {
		if l.all {
			return nil, nil
		}
		n += len(l.rules)
	}
	out = make([]renderer.ContivRule, 0, n)
	owners = make([]string, 0, n)
	type head struct {
		rules []renderer.ContivRule
		owner string
	}
	heads := make([]head, 0, len(lists))
	var isolating []string
	for _, l := range lists {
		if l.owner != "" {
			isolating = append(isolating, l.owner)
		}
		if len(l.rules) > 0 {
			heads = append(heads, head{l.rules, l.owner})
		}
	}
	// the unions of owners repeat (the rules two policies share): each is
	// built once
	var joined map[[2]string]string
	join := func(a, b string) string {
		k := [2]string{a, b}
		if j, ok := joined[k]; ok {
			return j
		}
		if joined == nil {
			joined = map[[2]string]string{}
		}
		j := renderer.JoinOwners(a, b)
		joined[k] = j
		return j
	}
	for len(heads) > 0 {
		lo := 0
		for i := 1; i < len(heads); i++ {
			if renderer.Compare(heads[i].rules[0], heads[lo].rules[0]) < 0 {
				lo = i
			}
		}
		r := heads[lo].rules[0]
		if len(out) == 0 || out[len(out)-1] != r {
			out = append(out, r)
			owners = append(owners, heads[lo].owner)
		} else {
			owners[len(owners)-1] = join(owners[len(owners)-1], heads[lo].owner)
		}
		if heads[lo].rules = heads[lo].rules[1:]; len(heads[lo].rules) == 0 {
			heads = slices.Delete(heads, lo, lo+1)
		}
	}
	slices.Sort(isolating) // (the policies' order is by namespace, then name)
	return append(out, renderer.ContivRule{Action: renderer.ActionDeny, Protocol: renderer.ANY}),
		append(owners, strings.Join(slices.Compact(isolating), renderer.OwnerSeparator))
}

// portsKey identifies the named container ports of a pod.
func portsKey(pod *cache.Pod) string {
	var b strings.Builder
	for _, np := range pod.Ports {
		fmt.Fprintf(&b, "|%s/%d/%d", np.Name, np.Protocol, np.Port)
	}
	return b.String()
}

func protocol(p pm.Policy_Port_Protocol) renderer.Protocol {
	switch p {
	case pm.Policy_Port_UDP:
		return renderer.UDP
	case pm.Policy_Port_SCTP:
		return renderer.SCTP
	}
	return renderer.TCP
}

func cacheProto(p renderer.Protocol) cache.Protocol {
	switch p {
	case renderer.UDP:
		return cache.UDP
	case renderer.SCTP:
		return cache.SCTP
	}
	return cache.TCP
}

// subtract returns cidr minus the excepted networks, as the largest prefixes
// that cover the rest. Exceptions outside cidr are ignored.
func subtract(cidr string, except []string) ([]netip.Prefix, error) {
	base, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("ipBlock cidr %q: %w", cidr, err)
	}
	base = base.Masked()
	var ex []netip.Prefix
	for _, e := range except {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("ipBlock except %q: %w", e, err)
		}
		ex = append(ex, p.Masked())
	}
	var out []netip.Prefix
	var walk func(p netip.Prefix)
	walk = func(p netip.Prefix) {
		overlaps := false
		for _, e := range ex {
			if e.Bits() <= p.Bits() && e.Contains(p.Addr()) {
				return // p is excepted entirely
			}
			if p.Overlaps(e) {
				overlaps = true
			}
		}
		if !overlaps {
			out = append(out, p)
			return
		}
		lo, hi := split(p)
		walk(lo)
		walk(hi)
	}
	walk(base)
	return out, nil
}

// split returns the two halves of p (p is not a host prefix: an overlapping
// exception that does not contain p is longer than p).
func split(p netip.Prefix) (netip.Prefix, netip.Prefix) {
	bits := p.Bits() + 1
	lo := netip.PrefixFrom(p.Addr(), bits)
	a := p.Addr().As16()
	idx := p.Bits()
	if p.Addr().Is4() {
		idx += 96
	}
	a[idx/8] |= 0x80 >> (idx % 8)
	hiAddr := netip.AddrFrom16(a)
	if p.Addr().Is4() {
		hiAddr = hiAddr.Unmap()
	}
	return lo, netip.PrefixFrom(hiAddr, bits)
}

// Node lists the addresses traffic from which is always allowed into pods.
type Node struct {
	// AllowedSources: the NAT loopback, the host's addresses, the host end of
	// the host interconnect.
	AllowedSources []netip.Addr
}

// PodRules returns the ingress and egress rules of a pod given the compiled
// policies that select it (sorted by namespace/name). nil means not isolated
// (or everything allowed) in that direction.
//
// Each policy's rules are kept sorted (recomputed only when its peers
// change), so a pod's lists are merged, not sorted.
func PodRules(policies []*Compiled, pod *cache.Pod, node Node) (ingress, egress []renderer.ContivRule) {
	r := PodRulesOwned(policies, pod, node)
	return r.Ingress, r.Egress
}

// Rules are a pod's rule lists with their owners: the policies each rule
// comes from, rule by rule ("namespace/name", several joined by
// renderer.JoinOwners; "" for the node's sources that are always allowed
// in). The final DENY of an isolated list is owned by the policies isolating
// the pod in that direction.
type Rules struct {
	Ingress, Egress             []renderer.ContivRule
	IngressOwners, EgressOwners []string
}

// PodRulesOwned is PodRules with the owners of the rules.
func PodRulesOwned(policies []*Compiled, pod *cache.Pod, node Node) Rules {
	var in, eg []ruleList
	for _, p := range policies {
		if p.Ingress {
			in = append(in, p.ingressOf(pod))
		}
		if p.Egress {
			eg = append(eg, p.egressOf())
		}
	}
	var out Rules
	if in != nil {
		var src []renderer.ContivRule
		for _, a := range node.AllowedSources {
			if a.IsValid() {
				src = append(src, renderer.ContivRule{Action: renderer.ActionPermit, SrcNetwork: netip.PrefixFrom(a, a.BitLen()), Protocol: renderer.ANY})
			}
		}
		out.Ingress, out.IngressOwners = merge(append(in, normalizeList(src)))
	}
	if eg != nil {
		out.Egress, out.EgressOwners = merge(eg)
	}
	return out
}

// appendIngress appends the rules of m for the pod. The peers' rules come
// in the order of renderer.Compare (by source, then port), so that the list
// of a policy with one ingress rule and no ipBlock needs no sort
// (normalizeList); ipBlocks and further rules follow.
func appendIngress(out []renderer.ContivRule, m Match, pod *cache.Pod) []renderer.ContivRule {
	var ports []renderer.ContivRule // the port part of each rule, in rule order
	for _, port := range m.Ports {
		r := renderer.ContivRule{Action: renderer.ActionPermit, Protocol: port.Protocol, DestPortFirst: port.First, DestPortLast: port.Last}
		if port.Name != "" {
			n, ok := pod.ResolvePort(port.Name, cacheProto(port.Protocol))
			if !ok {
				continue // an unresolved named port allows nothing
			}
			r.DestPortFirst, r.DestPortLast = n, n
		}
		if r.AnyPort() {
			r.DestPortFirst, r.DestPortLast = 0, 0 // as normalizeList has it
		}
		ports = append(ports, r)
	}
	slices.SortFunc(ports, renderer.Compare)
	if m.AnyPeer {
		return append(out, ports...)
	}
	srcs := make([]netip.Prefix, 0, len(m.PeerPods))
	for _, pod := range m.PeerPods {
		for _, ip := range pod.Addrs() { // every family of a dual-stack peer
			srcs = append(srcs, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	slices.SortFunc(srcs, renderer.ComparePrefix)
	for _, src := range srcs {
		for _, r := range ports {
			r.SrcNetwork = src
			out = append(out, r)
		}
	}
	for _, p := range m.Blocks {
		for _, r := range ports {
			r.SrcNetwork = p
			out = append(out, r)
		}
	}
	return out
}

func appendEgress(out []renderer.ContivRule, m Match) []renderer.ContivRule {
	for _, port := range m.Ports {
		r := renderer.ContivRule{Action: renderer.ActionPermit, Protocol: port.Protocol, DestPortFirst: port.First, DestPortLast: port.Last}
		if port.Name != "" {
			// resolved on each destination pod; IP blocks cannot resolve names
			for _, pod := range m.PeerPods {
				if n, ok := pod.ResolvePort(port.Name, cacheProto(port.Protocol)); ok {
					r.DestPortFirst, r.DestPortLast = n, n
					for _, ip := range pod.Addrs() {
						r.DestNetwork = netip.PrefixFrom(ip, ip.BitLen())
						out = append(out, r)
					}
				}
			}
			continue
		}
		if m.AnyPeer {
			out = append(out, r)
			continue
		}
		for _, pod := range m.PeerPods {
			for _, ip := range pod.Addrs() {
				r.DestNetwork = netip.PrefixFrom(ip, ip.BitLen())
				out = append(out, r)
			}
		}
		for _, p := range m.Blocks {
			r.DestNetwork = p
			out = append(out, r)
		}
	}
	return out
}

// Key identifies the rules a pod gets from a set of compiled policies: the
// policies, plus the pod's named container ports when a policy has named
// ingress ports (then the rules depend on them). Pods with equal keys get
// equal rules.
func Key(policies []*Compiled, pod *cache.Pod) string {
	var b strings.Builder
	named := false
	for _, p := range policies {
		named = named || p.NamedIngress
		b.WriteString(p.ID.String())
		b.WriteByte(',')
	}
	if named {
		b.WriteString(portsKey(pod))
	}
	return b.String()
}

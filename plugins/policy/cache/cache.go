// Package cache holds the Kubernetes state the policy plugin works on (pods,
// namespaces, network policies) with the indexes its questions need, and the
// one label-selector evaluator used for every question:
//
//   - which pods a policy applies to (SelectPods on its pod selector);
//   - which pods a peer of a rule selects (PeerPods);
//   - whether a peer selects a given pod (PeerMatchesPod), which the
//     processor asks to find the policies a pod change concerns.
//
// Both directions use Matches, so "which pods does this select" and "does
// this select that pod" can never disagree (upstream had two evaluators and
// the reverse one built wrong index keys).
//
// Costs: a pod or namespace change is O(its labels); SelectPods with a
// matchLabels entry (or an In expression) visits only the pods of the
// smallest index set, otherwise the pods of the namespace.
//
// It holds no locks: the policy plugin uses it from the controller's event
// loop only.
package cache

import (
	"net/netip"
	"slices"
	"sort"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	policymodel "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
)

// MetadataNameLabel is the label Kubernetes puts on every namespace, with the
// namespace name as value. The cache assumes it for namespaces it knows only
// from their pods.
const MetadataNameLabel = "kubernetes.io/metadata.name"

// PolicyID identifies a policy by namespace and name.
type PolicyID struct {
	Namespace, Name string
}

// String returns "namespace/name".
func (id PolicyID) String() string { return id.Namespace + "/" + id.Name }

// Protocol of a container port.
type Protocol uint8

// The container port protocols.
const (
	TCP Protocol = iota
	UDP
	SCTP
)

// NamedPort is a container port with a name.
type NamedPort struct {
	Name     string
	Protocol Protocol
	Port     uint16
}

// Pod is what the policies need of a pod.
type Pod struct {
	ID     podmodel.ID
	Labels map[string]string
	// IP is the pod's address as Kubernetes reports it (invalid if none): the
	// primary one, IPs[0].
	IP netip.Addr
	// IPs are all the pod's addresses (pod.AllIPAddresses: every family of a
	// dual-stack pod, the primary first); nil when it has none.
	IPs []netip.Addr
	// Ports are the named container ports.
	Ports []NamedPort
}

// Addrs returns the pod's addresses: IPs, or IP alone for a pod built with IP
// only (nil when it has none).
func (p *Pod) Addrs() []netip.Addr {
	switch {
	case len(p.IPs) > 0:
		return p.IPs
	case p.IP.IsValid():
		return []netip.Addr{p.IP}
	}
	return nil
}

// ResolvePort returns the number of the named container port with the
// protocol; ok is false when the pod has none.
func (p *Pod) ResolvePort(name string, proto Protocol) (uint16, bool) {
	for _, np := range p.Ports {
		if np.Name == name && np.Protocol == proto {
			return np.Port, true
		}
	}
	return 0, false
}

// PodFromModel converts a reflected pod.
func PodFromModel(m *podmodel.Pod) *Pod {
	p := &Pod{ID: podmodel.GetID(m), Labels: map[string]string{}}
	for _, l := range m.GetLabel() {
		p.Labels[l.GetKey()] = l.GetValue()
	}
	for _, text := range m.AllIPAddresses() {
		if ip, err := netip.ParseAddr(text); err == nil && !slices.Contains(p.IPs, ip.Unmap()) {
			p.IPs = append(p.IPs, ip.Unmap())
		}
	}
	if len(p.IPs) > 0 {
		p.IP = p.IPs[0]
	}
	for _, c := range m.GetContainer() {
		for _, cp := range c.GetPort() {
			if cp.GetName() == "" || cp.GetContainerPort() < 1 || cp.GetContainerPort() > 65535 {
				continue
			}
			proto := TCP
			if cp.GetProtocol() == podmodel.Pod_Container_Port_UDP {
				proto = UDP
			}
			p.Ports = append(p.Ports, NamedPort{Name: cp.GetName(), Protocol: proto, Port: uint16(cp.GetContainerPort())})
		}
	}
	return p
}

// Cache is the Kubernetes state with label indexes.
type Cache struct {
	pods       map[podmodel.ID]*Pod
	podsByNs   map[string]map[podmodel.ID]*Pod
	labelIdx   map[string]map[label]map[podmodel.ID]*Pod // namespace -> label -> pods
	namespaces map[string]map[string]string              // reflected namespaces -> labels
	policies   map[PolicyID]*policymodel.Policy
	polByNs    map[string]map[PolicyID]*policymodel.Policy
}

type label struct{ key, value string }

// New returns an empty cache.
func New() *Cache {
	c := &Cache{}
	c.Clear()
	return c
}

// Clear forgets everything (before a resync).
func (c *Cache) Clear() {
	c.pods = map[podmodel.ID]*Pod{}
	c.podsByNs = map[string]map[podmodel.ID]*Pod{}
	c.labelIdx = map[string]map[label]map[podmodel.ID]*Pod{}
	c.namespaces = map[string]map[string]string{}
	c.policies = map[PolicyID]*policymodel.Policy{}
	c.polByNs = map[string]map[PolicyID]*policymodel.Policy{}
}

// Pod returns the pod with the ID, nil if unknown.
func (c *Cache) Pod(id podmodel.ID) *Pod { return c.pods[id] }

// PodCount returns the number of pods.
func (c *Cache) PodCount() int { return len(c.pods) }

// PutPod adds or replaces a pod and returns the previous version (nil if
// new).
func (c *Cache) PutPod(p *Pod) *Pod {
	old := c.DeletePod(p.ID)
	c.pods[p.ID] = p
	ns := c.podsByNs[p.ID.Namespace]
	if ns == nil {
		ns = map[podmodel.ID]*Pod{}
		c.podsByNs[p.ID.Namespace] = ns
	}
	ns[p.ID] = p
	idx := c.labelIdx[p.ID.Namespace]
	if idx == nil {
		idx = map[label]map[podmodel.ID]*Pod{}
		c.labelIdx[p.ID.Namespace] = idx
	}
	for k, v := range p.Labels {
		set := idx[label{k, v}]
		if set == nil {
			set = map[podmodel.ID]*Pod{}
			idx[label{k, v}] = set
		}
		set[p.ID] = p
	}
	return old
}

// DeletePod removes a pod and returns it (nil if unknown).
func (c *Cache) DeletePod(id podmodel.ID) *Pod {
	p := c.pods[id]
	if p == nil {
		return nil
	}
	delete(c.pods, id)
	if ns := c.podsByNs[id.Namespace]; ns != nil {
		delete(ns, id)
		if len(ns) == 0 {
			delete(c.podsByNs, id.Namespace)
		}
	}
	if idx := c.labelIdx[id.Namespace]; idx != nil {
		for k, v := range p.Labels {
			if set := idx[label{k, v}]; set != nil {
				delete(set, id)
				if len(set) == 0 {
					delete(idx, label{k, v})
				}
			}
		}
		if len(idx) == 0 {
			delete(c.labelIdx, id.Namespace)
		}
	}
	return p
}

// PutNamespace adds or replaces a namespace's labels and returns the
// previous labels (nil if it was not reflected).
func (c *Cache) PutNamespace(m *nsmodel.Namespace) map[string]string {
	old := c.namespaces[m.GetName()]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetKey()] = l.GetValue()
	}
	c.namespaces[m.GetName()] = labels
	return old
}

// DeleteNamespace forgets a namespace and returns its labels.
func (c *Cache) DeleteNamespace(name string) map[string]string {
	old := c.namespaces[name]
	delete(c.namespaces, name)
	return old
}

// NamespaceLabels returns the labels of a namespace: the reflected ones, or
// only MetadataNameLabel for a namespace known from its pods; ok is false
// for a namespace that is neither reflected nor has pods.
func (c *Cache) NamespaceLabels(name string) (labels map[string]string, ok bool) {
	if l, ok := c.namespaces[name]; ok {
		return l, true
	}
	if _, ok := c.podsByNs[name]; ok {
		return map[string]string{MetadataNameLabel: name}, true
	}
	return nil, false
}

// PutPolicy adds or replaces a policy and returns the previous version.
func (c *Cache) PutPolicy(p *policymodel.Policy) *policymodel.Policy {
	id := PolicyID{Namespace: p.GetNamespace(), Name: p.GetName()}
	old := c.policies[id]
	c.policies[id] = p
	ns := c.polByNs[id.Namespace]
	if ns == nil {
		ns = map[PolicyID]*policymodel.Policy{}
		c.polByNs[id.Namespace] = ns
	}
	ns[id] = p
	return old
}

// DeletePolicy removes a policy and returns it (nil if unknown).
func (c *Cache) DeletePolicy(id PolicyID) *policymodel.Policy {
	old := c.policies[id]
	delete(c.policies, id)
	if ns := c.polByNs[id.Namespace]; ns != nil {
		delete(ns, id)
		if len(ns) == 0 {
			delete(c.polByNs, id.Namespace)
		}
	}
	return old
}

// Policy returns a policy, nil if unknown.
func (c *Cache) Policy(id PolicyID) *policymodel.Policy { return c.policies[id] }

// Policies returns the IDs of all policies, sorted.
func (c *Cache) Policies() []PolicyID {
	out := make([]PolicyID, 0, len(c.policies))
	for id := range c.policies {
		out = append(out, id)
	}
	sortIDs(out)
	return out
}

// PoliciesOfPod returns the IDs of the policies whose pod selector selects
// the pod, sorted by namespace and name.
func (c *Cache) PoliciesOfPod(p *Pod) []PolicyID {
	var out []PolicyID
	for id, pol := range c.polByNs[p.ID.Namespace] {
		if Matches(pol.GetPods(), p.Labels) {
			out = append(out, id)
		}
	}
	sortIDs(out)
	return out
}

func sortIDs(ids []PolicyID) {
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Namespace != ids[j].Namespace {
			return ids[i].Namespace < ids[j].Namespace
		}
		return ids[i].Name < ids[j].Name
	})
}

// Matches is the label selector evaluator: every match_label and every
// expression must hold. A nil or empty selector matches everything.
func Matches(sel *policymodel.Policy_LabelSelector, labels map[string]string) bool {
	for _, l := range sel.GetMatchLabel() {
		if v, ok := labels[l.GetKey()]; !ok || v != l.GetValue() {
			return false
		}
	}
	for _, e := range sel.GetMatchExpression() {
		v, ok := labels[e.GetKey()]
		switch e.GetOperator() {
		case policymodel.Policy_LabelSelector_LabelExpression_IN:
			if !ok || !contains(e.GetValue(), v) {
				return false
			}
		case policymodel.Policy_LabelSelector_LabelExpression_NOT_IN:
			if ok && contains(e.GetValue(), v) {
				return false
			}
		case policymodel.Policy_LabelSelector_LabelExpression_EXISTS:
			if !ok {
				return false
			}
		case policymodel.Policy_LabelSelector_LabelExpression_DOES_NOT_EXIST:
			if ok {
				return false
			}
		default:
			return false // unknown operator: selects nothing
		}
	}
	return true
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// SelectPods returns the pods of a namespace that the selector matches (all
// of them for an empty selector), in no particular order.
func (c *Cache) SelectPods(namespace string, sel *policymodel.Policy_LabelSelector) []*Pod {
	candidates := c.candidates(namespace, sel)
	out := make([]*Pod, 0, len(candidates))
	for _, p := range candidates {
		if Matches(sel, p.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// candidates returns a superset of the pods sel selects in the namespace:
// the smallest index set of a match_label, or the union of the index sets
// of the first In expression, or every pod of the namespace.
func (c *Cache) candidates(namespace string, sel *policymodel.Policy_LabelSelector) map[podmodel.ID]*Pod {
	idx := c.labelIdx[namespace]
	var best map[podmodel.ID]*Pod
	found := false
	for _, l := range sel.GetMatchLabel() {
		set := idx[label{l.GetKey(), l.GetValue()}]
		if !found || len(set) < len(best) {
			best, found = set, true
		}
	}
	if found {
		return best
	}
	for _, e := range sel.GetMatchExpression() {
		if e.GetOperator() != policymodel.Policy_LabelSelector_LabelExpression_IN {
			continue
		}
		union := map[podmodel.ID]*Pod{}
		for _, v := range e.GetValue() {
			for id, p := range idx[label{e.GetKey(), v}] {
				union[id] = p
			}
		}
		return union
	}
	return c.podsByNs[namespace]
}

// SelectNamespaces returns the namespaces (reflected or known from pods)
// whose labels the selector matches, sorted.
func (c *Cache) SelectNamespaces(sel *policymodel.Policy_LabelSelector) []string {
	var out []string
	for name, labels := range c.namespaces {
		if Matches(sel, labels) {
			out = append(out, name)
		}
	}
	for name := range c.podsByNs {
		if _, reflected := c.namespaces[name]; !reflected && Matches(sel, map[string]string{MetadataNameLabel: name}) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// PeerPods returns the pods a peer of a policy in policyNs selects: with a
// namespace selector, the pods its pod selector (if any) matches in the
// selected namespaces (an empty namespace selector selects every namespace,
// kube-system included); without one, the pods its pod selector matches in
// policyNs. An IP-block peer selects no pods.
func (c *Cache) PeerPods(policyNs string, peer *policymodel.Policy_Peer) []*Pod {
	if peer.GetIpBlock() != nil || (peer.GetPods() == nil && peer.GetNamespaces() == nil) {
		return nil
	}
	if peer.GetNamespaces() == nil {
		return c.SelectPods(policyNs, peer.GetPods())
	}
	var out []*Pod
	for _, ns := range c.SelectNamespaces(peer.GetNamespaces()) {
		out = append(out, c.SelectPods(ns, peer.GetPods())...)
	}
	return out
}

// PeerMatchesPod tells whether a peer of a policy in policyNs selects the
// pod, given the labels of the pod's namespace: the reverse of PeerPods,
// with the same evaluator.
func PeerMatchesPod(policyNs string, peer *policymodel.Policy_Peer, pod *Pod, nsLabels map[string]string) bool {
	if peer.GetIpBlock() != nil || (peer.GetPods() == nil && peer.GetNamespaces() == nil) {
		return false
	}
	if peer.GetNamespaces() == nil {
		if pod.ID.Namespace != policyNs {
			return false
		}
	} else if !Matches(peer.GetNamespaces(), nsLabels) {
		return false
	}
	return Matches(peer.GetPods(), pod.Labels)
}

// AllPods calls fn for every pod.
func (c *Cache) AllPods(fn func(*Pod)) {
	for _, p := range c.pods {
		fn(p)
	}
}

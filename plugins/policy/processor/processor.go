// Package processor decides, per event, which local pods need their policy
// rules recomputed, computes them with the configurator and hands them to
// the renderer.
//
//	event                     pods recomputed (only local ones)
//	resync                    all
//	policy added/deleted      the pods it selects
//	policy changed            the pods it selected before or selects now
//	pod added/changed/deleted the pod itself, and the pods selected by the
//	                          policies whose peers select it before or after
//	                          the change (one evaluator: cache.PeerMatchesPod)
//	namespace changed         the pods selected by the policies whose
//	                          namespace selectors match it before or after
//	CNI AddPod                the pod, with the IP IPAM gave it (policed
//	                          before contiv-ksr reports its IP)
//	CNI DeletePod             the pod (its ACLs go)
//
// A policy is compiled (peers resolved) once and recompiled only when an
// event may change its peers, so a pod label change costs one evaluation of
// each policy's peer selectors plus the rules of the pods it affects.
package processor

import (
	"net/netip"
	"slices"

	"github.com/sirupsen/logrus"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/cache"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/configurator"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// Node is what the processor needs to know of this node.
type Node interface {
	// LocalPod tells whether a pod runs on this node and returns the
	// addresses it has here, the primary first (IPAM's, else those of
	// Kubernetes' in this node's pod subnets: every family of a dual-stack
	// pod), and its VPP interface ("" if not wired).
	LocalPod(id podmodel.ID, k8sIPs []netip.Addr) (ips []netip.Addr, iface string, local bool)
	// LocalPods lists the pods wired on this node (CNI), whether or not
	// Kubernetes reported them yet.
	LocalPods() []podmodel.ID
	// Sources returns the addresses always allowed into pods.
	Sources() configurator.Node
}

// Deps lists what the processor needs.
type Deps struct {
	Log      logrus.FieldLogger
	Node     Node
	Renderer renderer.Renderer
}

// Processor is the policy processor.
type Processor struct {
	Deps
	k8s      *cache.Cache
	compiled map[cache.PolicyID]*configurator.Compiled
	// local are the tracked local pods with what was last rendered.
	local map[podmodel.ID]*localPod
	// rulesBySet caches pod rules by policy set within one Process call.
	rulesBySet map[string]configurator.Rules
	stats      Stats
	// The policies by what their peers select, to find those a pod change
	// concerns without evaluating every policy: peers with a pod label in
	// peerIdx (namespace "" for peers with a namespace selector), the others
	// in unindexed.
	peerIdx   map[peerKey]map[cache.PolicyID]bool
	unindexed map[cache.PolicyID]bool
	indexed   map[cache.PolicyID][]peerKey
}

// peerKey is one label a peer's pod selector requires, in a namespace ("":
// any namespace its namespace selector selects).
type peerKey struct{ ns, key, value string }

type localPod struct {
	ip    netip.Addr
	iface string
}

// Stats counts the work of the last event.
type Stats struct {
	// PodsRecomputed is the number of local pods whose rules were computed.
	PodsRecomputed int
	// PoliciesCompiled is the number of policies compiled.
	PoliciesCompiled int
}

// New returns a processor.
func New(deps Deps) *Processor {
	deps.Log = infra.LoggerOr(deps.Log, "policy-processor")
	p := &Processor{Deps: deps, k8s: cache.New(), compiled: map[cache.PolicyID]*configurator.Compiled{}, local: map[podmodel.ID]*localPod{}}
	p.resetIndex()
	return p
}

func (p *Processor) resetIndex() {
	p.peerIdx = map[peerKey]map[cache.PolicyID]bool{}
	p.unindexed = map[cache.PolicyID]bool{}
	p.indexed = map[cache.PolicyID][]peerKey{}
}

// index records what the peers of a policy select (unindex first if known).
func (p *Processor) index(id cache.PolicyID, pol *pm.Policy) {
	p.unindex(id)
	var peers []*pm.Policy_Peer
	for _, r := range pol.GetIngressRule() {
		peers = append(peers, r.GetFrom()...)
	}
	for _, r := range pol.GetEgressRule() {
		peers = append(peers, r.GetTo()...)
		if len(r.GetTo()) == 0 {
			for _, port := range r.GetPort() {
				if port.GetPort().GetType() == pm.Policy_Port_PortNameOrNumber_NAME {
					p.unindexed[id] = true // every pod is a peer
				}
			}
		}
	}
	for _, peer := range peers {
		if peer.GetIpBlock() != nil {
			continue
		}
		labels := peer.GetPods().GetMatchLabel()
		if len(labels) == 0 {
			p.unindexed[id] = true
			continue
		}
		k := peerKey{ns: pol.GetNamespace(), key: labels[0].GetKey(), value: labels[0].GetValue()}
		if peer.GetNamespaces() != nil {
			k.ns = ""
		}
		set := p.peerIdx[k]
		if set == nil {
			set = map[cache.PolicyID]bool{}
			p.peerIdx[k] = set
		}
		set[id] = true
		p.indexed[id] = append(p.indexed[id], k)
	}
}

func (p *Processor) unindex(id cache.PolicyID) {
	delete(p.unindexed, id)
	for _, k := range p.indexed[id] {
		if set := p.peerIdx[k]; set != nil {
			delete(set, id)
			if len(set) == 0 {
				delete(p.peerIdx, k)
			}
		}
	}
	delete(p.indexed, id)
}

// candidates returns the policies whose peers may select a pod with one of
// the label sets, in the pod's namespace.
func (p *Processor) candidates(ns string, labelSets ...map[string]string) map[cache.PolicyID]bool {
	out := make(map[cache.PolicyID]bool, len(p.unindexed))
	for id := range p.unindexed {
		out[id] = true
	}
	for _, labels := range labelSets {
		for k, v := range labels {
			for id := range p.peerIdx[peerKey{ns: ns, key: k, value: v}] {
				out[id] = true
			}
			for id := range p.peerIdx[peerKey{key: k, value: v}] {
				out[id] = true
			}
		}
	}
	return out
}

// LastStats returns the counters of the last event.
func (p *Processor) LastStats() Stats { return p.stats }

// Cache returns the Kubernetes state (read-only use).
func (p *Processor) Cache() *cache.Cache { return p.k8s }

// Resync rebuilds everything from the Kubernetes state.
func (p *Processor) Resync(state controller.KubeStateData) error {
	p.stats = Stats{}
	p.k8s.Clear()
	p.compiled = map[cache.PolicyID]*configurator.Compiled{}
	p.local = map[podmodel.ID]*localPod{}
	p.resetIndex()
	for _, v := range state[nsmodel.Keyword] {
		if ns, ok := v.(*nsmodel.Namespace); ok {
			p.k8s.PutNamespace(ns)
		}
	}
	for _, v := range state[podmodel.Keyword] {
		if m, ok := v.(*podmodel.Pod); ok {
			p.k8s.PutPod(cache.PodFromModel(m))
		}
	}
	for _, v := range state[pm.Keyword] {
		if m, ok := v.(*pm.Policy); ok {
			p.k8s.PutPolicy(m)
		}
	}
	for _, id := range p.k8s.Policies() {
		p.index(id, p.k8s.Policy(id))
		p.compile(id)
	}
	dirty := map[podmodel.ID]bool{}
	p.k8s.AllPods(func(pod *cache.Pod) { dirty[pod.ID] = true })
	for _, id := range p.Node.LocalPods() {
		dirty[id] = true
	}
	return p.render(dirty, true)
}

func (p *Processor) compile(id cache.PolicyID) {
	pol := p.k8s.Policy(id)
	if pol == nil {
		delete(p.compiled, id)
		return
	}
	c := configurator.Compile(p.k8s, pol)
	for _, problem := range c.Problems {
		p.Log.WithField("policy", id.String()).Warn(problem)
	}
	p.compiled[id] = c
	p.stats.PoliciesCompiled++
}

// KubeStateChange processes a change of a pod, namespace or policy.
func (p *Processor) KubeStateChange(ev *controller.KubeStateChange) error {
	p.stats = Stats{}
	dirty := map[podmodel.ID]bool{}
	switch ev.Resource {
	case podmodel.Keyword:
		p.podChange(ev, dirty)
	case nsmodel.Keyword:
		p.namespaceChange(ev, dirty)
	case pm.Keyword:
		p.policyChange(ev, dirty)
	default:
		return nil
	}
	return p.render(dirty, false)
}

func (p *Processor) podChange(ev *controller.KubeStateChange, dirty map[podmodel.ID]bool) {
	var newPod *cache.Pod
	if m, ok := ev.NewValue.(*podmodel.Pod); ok && m != nil {
		newPod = cache.PodFromModel(m)
	}
	var oldPod *cache.Pod
	if newPod != nil {
		oldPod = p.k8s.PutPod(newPod)
	} else if m, ok := ev.PrevValue.(*podmodel.Pod); ok && m != nil {
		oldPod = p.k8s.DeletePod(podmodel.GetID(m))
	}
	if oldPod != nil && newPod != nil && samePod(oldPod, newPod) {
		return
	}
	id := podmodel.ID{}
	if newPod != nil {
		id = newPod.ID
	} else if oldPod != nil {
		id = oldPod.ID
	} else {
		return
	}
	dirty[id] = true
	nsLabels, _ := p.k8s.NamespaceLabels(id.Namespace)
	var labelSets []map[string]string
	for _, pod := range []*cache.Pod{oldPod, newPod} {
		if pod != nil {
			labelSets = append(labelSets, pod.Labels)
		}
	}
	for pid := range p.candidates(id.Namespace, labelSets...) {
		pol := p.k8s.Policy(pid)
		if pol == nil {
			continue
		}
		if references(pol, oldPod, nsLabels) || references(pol, newPod, nsLabels) {
			if c := p.compiled[pid]; c != nil {
				if !c.UpdatePod(id, newPod, nsLabels) {
					continue // the pod's change does not alter the policy's peers
				}
			} else {
				p.compile(pid)
			}
			p.markTargets(pol, dirty)
		}
	}
}

func samePod(a, b *cache.Pod) bool {
	if !slices.Equal(a.Addrs(), b.Addrs()) || len(a.Labels) != len(b.Labels) || !slices.Equal(a.Ports, b.Ports) {
		return false
	}
	for k, v := range a.Labels {
		if w, ok := b.Labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// references tells whether a peer of the policy selects the pod, or the
// policy has an egress named port without peers (every pod is a peer).
func references(pol *pm.Policy, pod *cache.Pod, nsLabels map[string]string) bool {
	if pod == nil {
		return false
	}
	for _, r := range pol.GetIngressRule() {
		for _, peer := range r.GetFrom() {
			if cache.PeerMatchesPod(pol.GetNamespace(), peer, pod, nsLabels) {
				return true
			}
		}
	}
	for _, r := range pol.GetEgressRule() {
		if len(r.GetTo()) == 0 {
			for _, port := range r.GetPort() {
				if port.GetPort().GetType() == pm.Policy_Port_PortNameOrNumber_NAME {
					return true
				}
			}
		}
		for _, peer := range r.GetTo() {
			if cache.PeerMatchesPod(pol.GetNamespace(), peer, pod, nsLabels) {
				return true
			}
		}
	}
	return false
}

// markTargets marks the local pods the policy selects.
func (p *Processor) markTargets(pol *pm.Policy, dirty map[podmodel.ID]bool) {
	for id := range p.local {
		if id.Namespace != pol.GetNamespace() {
			continue
		}
		if pod := p.k8s.Pod(id); pod == nil || cache.Matches(pol.GetPods(), pod.Labels) {
			dirty[id] = true // (a pod unknown to Kubernetes yet is recomputed too)
		}
	}
}

func (p *Processor) namespaceChange(ev *controller.KubeStateChange, dirty map[podmodel.ID]bool) {
	var name string
	var newLabels, oldLabels map[string]string
	if m, ok := ev.NewValue.(*nsmodel.Namespace); ok && m != nil {
		name = m.GetName()
		oldLabels = p.k8s.PutNamespace(m)
		newLabels, _ = p.k8s.NamespaceLabels(name)
	} else if m, ok := ev.PrevValue.(*nsmodel.Namespace); ok && m != nil {
		name = m.GetName()
		oldLabels = p.k8s.DeleteNamespace(name)
		newLabels, _ = p.k8s.NamespaceLabels(name)
	} else {
		return
	}
	if oldLabels == nil {
		oldLabels = map[string]string{cache.MetadataNameLabel: name}
	}
	for _, pid := range p.k8s.Policies() {
		pol := p.k8s.Policy(pid)
		if selectsNamespace(pol, oldLabels) || selectsNamespace(pol, newLabels) {
			p.compile(pid)
			p.markTargets(pol, dirty)
		}
	}
}

func selectsNamespace(pol *pm.Policy, labels map[string]string) bool {
	if labels == nil {
		return false
	}
	peers := []*pm.Policy_Peer{}
	for _, r := range pol.GetIngressRule() {
		peers = append(peers, r.GetFrom()...)
	}
	for _, r := range pol.GetEgressRule() {
		peers = append(peers, r.GetTo()...)
	}
	for _, peer := range peers {
		if peer.GetNamespaces() != nil && cache.Matches(peer.GetNamespaces(), labels) {
			return true
		}
	}
	return false
}

func (p *Processor) policyChange(ev *controller.KubeStateChange, dirty map[podmodel.ID]bool) {
	if m, ok := ev.PrevValue.(*pm.Policy); ok && m != nil {
		p.markTargets(m, dirty)
	}
	if m, ok := ev.NewValue.(*pm.Policy); ok && m != nil {
		if old := p.k8s.PutPolicy(m); old != nil {
			p.markTargets(old, dirty)
		}
		id := cache.PolicyID{Namespace: m.GetNamespace(), Name: m.GetName()}
		p.index(id, m)
		p.compile(id)
		p.markTargets(m, dirty)
	} else if m, ok := ev.PrevValue.(*pm.Policy); ok && m != nil {
		id := cache.PolicyID{Namespace: m.GetNamespace(), Name: m.GetName()}
		if old := p.k8s.DeletePolicy(id); old != nil {
			p.markTargets(old, dirty)
		}
		p.unindex(id)
		delete(p.compiled, id)
	}
}

// AddPod polices a pod wired by CNI.
func (p *Processor) AddPod(id podmodel.ID) error {
	p.stats = Stats{}
	return p.render(map[podmodel.ID]bool{id: true}, false)
}

// DeletePod removes the ACLs of a pod unwired by CNI.
func (p *Processor) DeletePod(id podmodel.ID) error {
	p.stats = Stats{}
	if _, ok := p.local[id]; !ok {
		return nil
	}
	delete(p.local, id)
	return p.Renderer.Render([]renderer.PodConfig{{ID: id, Removed: true}}, false)
}

// Forget drops a pod from the tracked local pods without rendering (the
// revert of a failed AddPod; the scheduler reverts its configuration).
func (p *Processor) Forget(id podmodel.ID) error {
	if _, ok := p.local[id]; !ok {
		return nil
	}
	delete(p.local, id)
	return p.Renderer.Render([]renderer.PodConfig{{ID: id, Removed: true}}, false)
}

// render computes the rules of the dirty pods that are local and renders
// them (pods no longer local are removed).
func (p *Processor) render(dirty map[podmodel.ID]bool, resync bool) error {
	p.rulesBySet = map[string]configurator.Rules{}
	defer func() { p.rulesBySet = nil }()
	ids := make([]podmodel.ID, 0, len(dirty))
	for id := range dirty {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b podmodel.ID) int {
		if a.Namespace != b.Namespace {
			if a.Namespace < b.Namespace {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		} else if a.Name > b.Name {
			return 1
		}
		return 0
	})
	node := p.Node.Sources()
	var out []renderer.PodConfig
	for _, id := range ids {
		pod := p.k8s.Pod(id)
		var k8sIPs []netip.Addr
		if pod != nil {
			k8sIPs = pod.Addrs()
		}
		ips, iface, local := p.Node.LocalPod(id, k8sIPs)
		if !local || len(ips) == 0 || !ips[0].IsValid() {
			if _, tracked := p.local[id]; tracked && !resync {
				delete(p.local, id)
				out = append(out, renderer.PodConfig{ID: id, Removed: true})
			}
			continue
		}
		p.local[id] = &localPod{ip: ips[0], iface: iface}
		if pod == nil {
			pod = &cache.Pod{ID: id, Labels: map[string]string{}} // not reported by Kubernetes yet
		}
		r := p.podRules(pod, node)
		p.stats.PodsRecomputed++
		out = append(out, renderer.PodConfig{ID: id, IP: ips[0], IPs: ips, Interface: iface, PodIngress: r.Ingress, PodEgress: r.Egress,
			IngressOwners: r.IngressOwners, EgressOwners: r.EgressOwners})
	}
	if len(out) == 0 && !resync {
		return nil
	}
	return p.Renderer.Render(out, resync)
}

func (p *Processor) podRules(pod *cache.Pod, node configurator.Node) configurator.Rules {
	ids := p.k8s.PoliciesOfPod(pod)
	if len(ids) == 0 {
		return configurator.Rules{}
	}
	policies := make([]*configurator.Compiled, 0, len(ids))
	for _, id := range ids {
		c := p.compiled[id]
		if c == nil {
			p.compile(id)
			c = p.compiled[id]
		}
		policies = append(policies, c)
	}
	key := configurator.Key(policies, pod)
	if r, ok := p.rulesBySet[key]; ok {
		return r
	}
	r := configurator.PodRulesOwned(policies, pod, node)
	p.rulesBySet[key] = r
	return r
}

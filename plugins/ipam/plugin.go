package ipam

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// NodeName is this node's name (env MICROSERVICE_LABEL).
	NodeName string
	// ContivConf provides the effective ipamConfig and the static default gateway.
	ContivConf contivconf.API
	// NodeSync provides this node's ID and, with external IPAM, the nodes' podCIDRs.
	NodeSync NodeSync
	// HTTP is where GET /contiv/v1/ipam/allocations is registered; optional.
	HTTP infra.HandlerRegistrar
	// EventLoop receives the PodCIDRChange events (external IPAM only); optional.
	EventLoop api.EventLoop
	// LocalPodIPs returns the IPs this agent gave the pods running on this node, every
	// family of each pod, as the pod manager recorded them (they survive agent
	// restarts); optional. A resync keeps them allocated even when the Kubernetes state
	// does not show them yet.
	LocalPodIPs func() map[PodID][]net.IP
}

// Plugin is the IPAM plugin: it implements API and is an event handler of the
// controller (see the package documentation).
type Plugin struct {
	Deps

	// cfg is set by Init and read-only afterwards (read it through ipamCfg).
	cfg *contivconf.IPAMConfig

	mu          sync.RWMutex
	nodeID      uint32
	podSubnet   *net.IPNet // this node's pod subnet; nil before the first resync
	hostSubnet  *net.IPNet // this node's VPP-host subnet; nil before the first resync
	pool        *podPool   // pod IPs of podSubnet; nil while podSubnet is nil
	pendingCIDR *net.IPNet // pod CIDR of a pushed PodCIDRChange not resynced yet
	// dual is the IPv6 side of a dual-stack node (nil: single-stack); the fields above
	// are then the IPv4 side.
	dual *familyState
}

// familyState is this node's part of the plan of one IP family and its allocations.
type familyState struct {
	podSubnet  *net.IPNet
	hostSubnet *net.IPNet
	pool       *podPool
}

var (
	_ API              = (*Plugin)(nil)
	_ api.EventHandler = (*Plugin)(nil)
)

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "ipam" }

// Init reads the effective ipamConfig, checks that the per-node prefixes can cut the
// cluster ranges and registers the REST handler. This node's addresses are computed by
// the first resync, when nodesync knows the node ID.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	if p.ContivConf == nil {
		return errors.New("ipam: Deps.ContivConf is required")
	}
	if p.NodeSync == nil {
		return errors.New("ipam: Deps.NodeSync is required")
	}
	cfg := p.ContivConf.GetIPAMConfig()
	if cfg == nil {
		return errors.New("ipam: contivconf has no ipamConfig (not initialised)")
	}
	for _, fp := range cfg.Plans() {
		plan := addressPlan{fp: fp}
		if _, err := plan.podSubnet(1); err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
		if _, err := plan.hostSubnet(1); err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
	}
	p.cfg = cfg
	if p.HTTP != nil {
		p.registerHandlers(p.HTTP)
	}
	p.Log.WithFields(logrus.Fields{
		"podSubnetCIDR":   netString(cfg.PodSubnetCIDR),
		"podPrefixLen":    cfg.PodSubnetOneNodePrefixLen,
		"vppHostSubnet":   netString(cfg.VPPHostSubnetCIDR),
		"dualStack":       cfg.IsDualStack(),
		"useExternalIPAM": cfg.UseExternalIPAM,
	}).Debug("ipam initialised")
	return nil
}

// Close releases nothing: the plugin holds no resources.
func (p *Plugin) Close() error { return nil }

// ipamCfg returns the effective ipamConfig; before Init an empty one, with which every
// question fails or has no answer instead of crashing.
func (p *Plugin) ipamCfg() *contivconf.IPAMConfig {
	if p.cfg == nil {
		return &contivconf.IPAMConfig{}
	}
	return p.cfg
}

// plan returns the address plan of the top-level ranges of the effective ipamConfig
// (IPv4 on a dual-stack node).
func (p *Plugin) plan() addressPlan { return addressPlan{fp: p.ipamCfg().Primary()} }

// dualPlan returns the IPv6 plan of a dual-stack cluster; ok is false in a
// single-stack one.
func (p *Plugin) dualPlan() (pl addressPlan, ok bool) {
	v6 := p.ipamCfg().DualStackIPv6
	return addressPlan{fp: v6}, v6 != nil
}

// HandlesEvent selects every resync, the changes of Kubernetes pods (they decide about
// tentative addresses) and, with external IPAM, the NodeUpdate events (matched by
// name), which may carry a new podCIDR of this node.
func (p *Plugin) HandlesEvent(ev api.Event) bool {
	if ev.Method() != api.Update {
		return true
	}
	if ks, ok := ev.(*api.KubeStateChange); ok {
		return ks.Resource == podmodel.Keyword
	}
	return p.ipamCfg().UseExternalIPAM && ev.GetName() == NodeUpdateEventName
}

// Resync recomputes this node's subnets from its node ID (external IPAM: from its
// podCIDR) and rebuilds the pod allocations. An address stays taken when the Kubernetes
// state shows a pod holding it (this is what carries the allocations over an agent
// restart), or when this agent allocated it and it was not released yet (the Kubernetes
// state may lag behind CNI requests). Where both disagree about a pod, the allocation
// of this agent wins. An address of a pod that is not local is tentative: it is
// rebuilt from each resync's state, follows the pod's changes and is not taken again
// when this agent released it from the pod (see the package documentation). The IPAM
// stages no configuration.
func (p *Plugin) Resync(ev api.Event, kubeStateData api.KubeStateData, resyncCount int, _ api.ResyncOperations) error {
	if p.cfg == nil {
		return errors.New("ipam resync: the plugin is not initialised")
	}
	nodeID := p.NodeSync.GetNodeID()
	if nodeID == 0 {
		return fmt.Errorf("ipam resync: node %q has no node ID yet", p.NodeName)
	}
	hostSubnet, err := p.plan().hostSubnet(nodeID)
	if err != nil {
		return fmt.Errorf("ipam resync: %w", err)
	}
	var podSubnet *net.IPNet
	if p.ipamCfg().UseExternalIPAM {
		if podSubnet, err = p.externalPodCIDR(p.NodeName); err != nil {
			return fmt.Errorf("ipam resync: %w", err)
		}
	} else if podSubnet, err = p.plan().podSubnet(nodeID); err != nil {
		return fmt.Errorf("ipam resync: %w", err)
	}

	var dualPod, dualHost *net.IPNet
	if v6, ok := p.dualPlan(); ok {
		if dualPod, err = v6.podSubnet(nodeID); err == nil {
			dualHost, err = v6.hostSubnet(nodeID)
		}
		if err != nil {
			return fmt.Errorf("ipam resync: IPv6: %w", err)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	kube, local := kubeStateData[podmodel.Keyword], p.localPodIPs()
	pool, st, err := p.rebuildPool(p.pool, podSubnet, kube, local)
	if err != nil {
		return fmt.Errorf("ipam resync: %w", err)
	}
	var dual *familyState
	var dualSt rebuildStats
	if dualPod != nil {
		var old *podPool
		if p.dual != nil {
			old = p.dual.pool
		}
		dual = &familyState{podSubnet: dualPod, hostSubnet: dualHost}
		if dual.pool, dualSt, err = p.rebuildPool(old, dualPod, kube, local); err != nil {
			return fmt.Errorf("ipam resync: IPv6: %w", err)
		}
	}
	p.nodeID, p.podSubnet, p.hostSubnet, p.pool, p.pendingCIDR, p.dual = nodeID, podSubnet, hostSubnet, pool, nil, dual

	fields := logrus.Fields{
		"event": ev.GetName(), "resyncCount": resyncCount, "nodeID": nodeID,
		"podSubnet": netString(podSubnet), "vppHostSubnet": hostSubnet.String(),
		"keptAllocations": st.kept, "fromLocalPods": st.recovered, "fromKubeState": st.rebuilt,
		"tentative": st.tentative, "releasedNotRetaken": st.notRetaken, "skipped": st.skipped,
	}
	if dual != nil {
		fields["ipv6PodSubnet"], fields["ipv6VppHostSubnet"] = dual.podSubnet.String(), dual.hostSubnet.String()
		fields["ipv6KeptAllocations"], fields["ipv6FromLocalPods"] = dualSt.kept, dualSt.recovered
		fields["ipv6FromKubeState"], fields["ipv6Skipped"] = dualSt.rebuilt, dualSt.skipped
		fields["ipv6Tentative"], fields["ipv6ReleasedNotRetaken"] = dualSt.tentative, dualSt.notRetaken
	}
	if podSubnet == nil {
		p.Log.WithFields(fields).Warn("ipam resynced, but this node has no podCIDR yet: pods get no IPs until it is known")
		return nil
	}
	p.Log.WithFields(fields).Info("ipam resynced")
	return nil
}

// rebuildStats counts what a resync did to the allocations of one pool.
type rebuildStats struct {
	kept, recovered, rebuilt, tentative, notRetaken, skipped int
}

// rebuildPool returns the pool of subnet for a resync: a copy of old without its
// tentative addresses when it covers the same subnet (the allocations of local pods
// kept), else a new one; then the addresses of the local pods and of the Kubernetes
// pods that lie in subnet are taken. A nil subnet gives a nil pool (external IPAM
// before the podCIDR is known).
func (p *Plugin) rebuildPool(old *podPool, subnet *net.IPNet, kube api.KeyValuePairs, local map[PodID][]net.IP) (*podPool, rebuildStats, error) {
	var st rebuildStats
	if old != nil && !sameNet(old.subnet, subnet) {
		p.Log.WithFields(logrus.Fields{
			"oldPodSubnet": old.subnet.String(), "newPodSubnet": netString(subnet), "dropped": old.allocated(),
		}).Warn("pod subnet of this node changed: allocations of the old subnet dropped")
	}
	if subnet == nil {
		return nil, st, nil
	}
	var pool *podPool
	var hints map[PodID]uint64
	fresh := false
	if old != nil && sameNet(old.subnet, subnet) {
		pool, hints = old.cloneConfirmed(), old.released
		st.kept = pool.allocated()
	} else {
		var err error
		if pool, err = newPodPool(subnet); err != nil {
			return nil, st, err
		}
		fresh = true
	}
	// The agent's own records first (they survive restarts and are never behind),
	// then the Kubernetes state.
	st.recovered = p.claimLocalPods(pool, local)
	p.claimKubePods(pool, kube, local, hints, &st)
	if fresh {
		pool.last = pool.highest() // after a restart: continue after the highest address in use
	}
	return pool, st, nil
}

// localPodIPs returns the pod manager's records, nil without Deps.LocalPodIPs.
func (p *Plugin) localPodIPs() map[PodID][]net.IP {
	if p.LocalPodIPs == nil {
		return nil
	}
	return p.LocalPodIPs()
}

// claimLocalPods marks the addresses that the pods of this node got from this agent (as
// the pod manager recorded them, also across restarts) as taken by those pods: of each
// pod, the address that lies in the pool's subnet.
func (p *Plugin) claimLocalPods(pool *podPool, local map[PodID][]net.IP) int {
	ids := make([]PodID, 0, len(local))
	for id := range local {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	claimed := 0
	for _, id := range ids {
		ip := firstIn(pool.subnet, local[id])
		if ip == nil {
			continue
		}
		o := owner{pod: id}
		if cur := pool.ipOfOwner(o); cur != nil {
			continue
		}
		if _, err := pool.claim(ip, o); err != nil {
			p.Log.WithError(err).WithFields(logrus.Fields{"pod": id.String(), "podIP": ip.String()}).
				Warn("IP recorded for a local pod not taken over")
			continue
		}
		claimed++
	}
	return claimed
}

// firstIn returns the first of ips that lies in n, nil if none does.
func firstIn(n *net.IPNet, ips []net.IP) net.IP {
	for _, ip := range ips {
		if ip != nil && n.Contains(ip) {
			return ip
		}
	}
	return nil
}

// claimKubePods marks the addresses of the Kubernetes pods that lie in the pool's
// subnet as taken (pods of other nodes and host-network pods lie outside). Keys are
// visited in order, so a conflict is decided the same way on every resync. The address
// of a pod that is not local (no CNI ADD recorded by the pod manager) is tentative,
// and it is not taken at all when hints (the released hints of the previous pool) say
// that this agent released it from the pod: that state is then behind a CNI DEL, and
// the hint is carried over.
func (p *Plugin) claimKubePods(pool *podPool, pods api.KeyValuePairs, local map[PodID][]net.IP, hints map[PodID]uint64, st *rebuildStats) {
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		pd, ok := pods[key].(*podmodel.Pod)
		if !ok || pd == nil {
			continue
		}
		ip, bad := kubePodIPIn(pool.subnet, pd)
		if bad != "" {
			p.Log.WithFields(logrus.Fields{"key": key, "podIP": bad}).Warn("pod in the Kubernetes state has an invalid IP: skipped")
			st.skipped++
			continue
		}
		if ip == nil {
			continue
		}
		log := func() logrus.FieldLogger {
			return p.Log.WithFields(logrus.Fields{"key": key, "podIP": ip.String()})
		}
		id := kubePodID(key, pd)
		o := owner{pod: id}
		if cur := pool.ipOfOwner(o); cur != nil {
			if !cur.Equal(ip) {
				log().WithField("allocatedIP", cur.String()).Info("pod holds another IP allocated by this agent: the Kubernetes state is behind, keeping the allocation")
			}
			continue
		}
		_, isLocal := local[id]
		if i, released := hints[id]; released && !isLocal {
			if h, _ := pool.hostOf(ip); h == i {
				pool.hintReleased(id, i)
				log().Debug("pod IP released by this agent (CNI DEL) still in the Kubernetes state: not taken again")
				st.notRetaken++
				continue
			}
		}
		var err error
		if isLocal {
			_, err = pool.claim(ip, o)
		} else {
			err = pool.claimTentative(ip, id)
		}
		if err != nil {
			log().WithError(err).Warn("pod IP from the Kubernetes state not taken over")
			st.skipped++
			continue
		}
		st.rebuilt++
		if !isLocal {
			st.tentative++
		}
	}
}

// kubePodID returns the ID of the Kubernetes pod stored under key.
func kubePodID(key string, pd *podmodel.Pod) PodID {
	id := PodID{Name: pd.GetName(), Namespace: pd.GetNamespace()}
	if id.Name == "" {
		if name, ns, err := podmodel.ParsePodFromKey(key); err == nil {
			id = PodID{Name: name, Namespace: ns}
		}
	}
	return id
}

// kubePodIPIn returns the IP of the Kubernetes pod that lies in n (every family of the
// pod is looked at: pod.AllIPAddresses), nil when none does; bad is the first address
// that is not an IP.
func kubePodIPIn(n *net.IPNet, pd *podmodel.Pod) (ip net.IP, bad string) {
	for _, s := range pd.AllIPAddresses() {
		v := net.ParseIP(strings.TrimSpace(s))
		switch {
		case v == nil:
			return nil, s
		case n.Contains(v):
			return v, ""
		}
	}
	return nil, ""
}

// Update handles the changes of Kubernetes pods (see kubePodChanged) and, with
// external IPAM, NodeUpdate: when this node's podCIDR differs from the pod subnet in
// use, it pushes a PodCIDRChange, whose resync switches every handler to the new
// subnet. The state itself changes only in that resync.
func (p *Plugin) Update(ev api.Event, txn api.UpdateOperations) (string, error) {
	if ks, ok := ev.(*api.KubeStateChange); ok {
		if ks.Resource != podmodel.Keyword {
			return "", nil
		}
		return p.kubePodChanged(ks), nil
	}
	if ev.GetName() != NodeUpdateEventName || !p.ipamCfg().UseExternalIPAM {
		return "", nil
	}
	cidr, err := p.externalPodCIDR(p.NodeName)
	if err != nil {
		return "", fmt.Errorf("ipam: %w", err)
	}
	if cidr == nil {
		return "", nil
	}
	p.mu.Lock()
	if sameNet(cidr, p.podSubnet) || sameNet(cidr, p.pendingCIDR) {
		p.mu.Unlock()
		return "", nil
	}
	prev := p.podSubnet
	p.pendingCIDR = cidr
	p.mu.Unlock()

	log := p.Log.WithFields(logrus.Fields{"oldPodCIDR": netString(prev), "newPodCIDR": cidr.String()})
	if p.EventLoop == nil {
		log.Warn("podCIDR of this node changed, but there is no event loop to resync on: it applies from the next resync")
		return "", nil
	}
	if err := api.PushFollowUp(txn, p.EventLoop, &PodCIDRChange{LocalPodCIDR: cloneNet(cidr)}); err != nil {
		p.mu.Lock()
		p.pendingCIDR = nil
		p.mu.Unlock()
		return "", fmt.Errorf("ipam: push %s for podCIDR %s: %w", PodCIDRChangeEventName, cidr, err)
	}
	log.Info("podCIDR of this node changed: PodCIDRChange pushed")
	return fmt.Sprintf("podCIDR of this node changed from %s to %s: %s pushed", netString(prev), cidr, PodCIDRChangeEventName), nil
}

// kubePodChanged makes the tentative addresses of a pod that is not local follow its
// change in the Kubernetes state, in every family: deleted, moved to another node (no
// address in this node's subnet) or given another address, the pod frees its tentative
// address; shown with an address of this node that nobody holds, it takes it
// tentatively (the pod runs here unknown to the pod manager: its address is not given
// away), unless this agent released that address from the pod. A pod holding a
// confirmed address (a local pod) is left to its CNI DEL. O(1) per change.
func (p *Plugin) kubePodChanged(ev *api.KubeStateChange) string {
	name, ns, err := podmodel.ParsePodFromKey(ev.Key)
	if err != nil {
		return ""
	}
	id := PodID{Name: name, Namespace: ns}
	pd, _ := ev.NewValue.(*podmodel.Pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	var changes []string
	for _, pool := range p.pools() {
		if pool.confirmed(id) {
			return ""
		}
	}
	for _, pool := range p.pools() {
		var ip net.IP
		if pd != nil {
			var bad string
			if ip, bad = kubePodIPIn(pool.subnet, pd); bad != "" {
				p.Log.WithFields(logrus.Fields{"pod": id.String(), "podIP": bad}).Warn("pod in the Kubernetes state has an invalid IP: ignored")
			}
		}
		freed, took, err := pool.followKubePod(id, ip)
		log := p.Log.WithFields(logrus.Fields{"pod": id.String(), "change": ev.String()})
		if freed != nil {
			log.WithField("ip", freed.String()).Info("tentative IP of a pod that is not local released: the Kubernetes state no longer shows the pod with it")
			changes = append(changes, "released "+freed.String())
		}
		if took != nil {
			log.WithField("ip", took.String()).Info("IP of a pod that is not local taken tentatively from the Kubernetes state")
			changes = append(changes, "took "+took.String())
		}
		if err != nil {
			log.WithError(err).Warn("pod IP from the Kubernetes state not taken over")
		}
	}
	if len(changes) == 0 {
		return ""
	}
	return fmt.Sprintf("pod %s (not local): %s", id, strings.Join(changes, ", "))
}

// Revert does nothing: it is called for failed RevertOnFailure events only, and Update
// handles none (the pod changes it follows are best-effort events).
func (p *Plugin) Revert(api.Event) error { return nil }

// externalPodCIDR returns the Kubernetes podCIDR of the named node (nil when unknown or
// not assigned yet).
func (p *Plugin) externalPodCIDR(nodeName string) (*net.IPNet, error) {
	nodes := p.NodeSync.GetAllNodes()
	n := nodes[nodeName]
	if n == nil {
		for _, cand := range nodes {
			if cand != nil && cand.Name == nodeName {
				n = cand
				break
			}
		}
	}
	if n == nil || n.PodCIDR == "" {
		return nil, nil
	}
	return p.parsePodCIDR(n)
}

// parsePodCIDR parses a node's podCIDR, which must be of the cluster's IP family.
func (p *Plugin) parsePodCIDR(n *NodeInfo) (*net.IPNet, error) {
	_, cidr, err := net.ParseCIDR(strings.TrimSpace(n.PodCIDR))
	if err != nil {
		return nil, fmt.Errorf("podCIDR %q of node %s: %w", n.PodCIDR, n.Name, err)
	}
	cidr = networkOf(cidr)
	if len(cidr.IP) != len(networkOf(p.ipamCfg().PodSubnetCIDR).IP) {
		return nil, fmt.Errorf("podCIDR %s of node %s is not of the IP family of podSubnetCIDR %s",
			cidr, n.Name, p.ipamCfg().PodSubnetCIDR)
	}
	return cidr, nil
}

// noPoolError explains why no pod IP can be allocated yet.
func (p *Plugin) noPoolError() error {
	if p.hostSubnet == nil {
		return errors.New("the IPAM is not resynced yet")
	}
	return fmt.Errorf("the podCIDR of node %s is not known yet (external IPAM)", p.NodeName)
}

// AllocatePodIP implements API: AllocatePodIPs, of which it returns the primary
// address.
func (p *Plugin) AllocatePodIP(podID PodID, ipamType string, ipamData string) (*net.IPNet, error) {
	ips, err := p.AllocatePodIPs(podID, ipamType, ipamData)
	if err != nil {
		return nil, err
	}
	return ips[0], nil
}

// allocatePrimary gives the pod its address of the top-level plan (IPv4 on a
// dual-stack node); fresh tells whether this call allocated it. With external IPAM the
// pod gets the address of the IPAM result, even when it held another one: the external
// IPAM is the authority. The caller holds p.mu.
func (p *Plugin) allocatePrimary(podID PodID, ipamType, ipamData string) (ip *net.IPNet, fresh bool, err error) {
	if p.pool == nil {
		return nil, false, fmt.Errorf("allocate IP for pod %s: %w", podID, p.noPoolError())
	}
	o := owner{pod: podID}
	if p.ipamCfg().UseExternalIPAM {
		ip, err := p.claimExternal(o, ipamType, ipamData)
		return ip, false, err
	}
	if ip := p.pool.ipOfOwner(o); ip != nil {
		p.pool.confirm(podID) // a tentative address: the pod's ADD makes it local
		return hostNet(ip), false, nil
	}
	i, err := p.pool.allocate(o)
	if err != nil {
		return nil, false, fmt.Errorf("allocate IP for pod %s: %w", podID, err)
	}
	addr := p.pool.ipOf(i)
	p.Log.WithFields(logrus.Fields{"pod": podID.String(), "ip": addr.String(), "allocated": p.pool.allocated()}).
		Info("pod IP allocated")
	return hostNet(addr), true, nil
}

// claimExternal records the address an external IPAM plugin gave the pod.
func (p *Plugin) claimExternal(o owner, ipamType, ipamData string) (*net.IPNet, error) {
	ip, err := podIPFromCNIResult(ipamData, len(p.pool.subnet.IP) == net.IPv6len)
	if err != nil {
		return nil, fmt.Errorf("allocate IP for pod %s: external IPAM %q: %w", o.pod, ipamType, err)
	}
	if !p.pool.subnet.Contains(ip) {
		return nil, fmt.Errorf("allocate IP for pod %s: external IPAM %q gave %s, which is not in the podCIDR %s of this node",
			o.pod, ipamType, ip, p.pool.subnet)
	}
	if _, err := p.pool.checkClaimable(ip); err != nil {
		return nil, fmt.Errorf("allocate IP for pod %s: external IPAM %q: %w", o.pod, ipamType, err)
	}
	if cur := p.pool.ipOfOwner(o); cur != nil {
		if cur.Equal(ip) {
			p.pool.confirm(o.pod)
			return hostNet(ip), nil
		}
		p.Log.WithFields(logrus.Fields{"pod": o.pod.String(), "oldIP": cur.String(), "newIP": ip.String()}).
			Warn("external IPAM gave the pod a new IP: the old one is released")
		i, _ := p.pool.hostOf(cur)
		p.pool.drop(i)
	}
	if prev, held := p.pool.ownerOf(ip); held {
		p.Log.WithFields(logrus.Fields{"ip": ip.String(), "previousHolder": prev.String(), "pod": o.pod.String()}).
			Warn("external IPAM reassigned an IP this node still had recorded: the stale record is dropped")
		i, _ := p.pool.hostOf(ip)
		p.pool.drop(i)
	}
	if _, err := p.pool.claim(ip, o); err != nil {
		return nil, fmt.Errorf("allocate IP for pod %s: %w", o.pod, err)
	}
	p.Log.WithFields(logrus.Fields{"pod": o.pod.String(), "ip": ip.String(), "ipamType": ipamType}).
		Info("pod IP taken from the external IPAM")
	return hostNet(ip), nil
}

// AllocatePodCustomIfIP implements API. It is not available with external IPAM, whose
// plugin hands out one address per pod.
func (p *Plugin) AllocatePodCustomIfIP(podID PodID, ifName, network string) (net.IP, error) {
	if network != "" && network != DefaultPodNetworkName {
		return nil, fmt.Errorf("allocate IP for interface %s of pod %s: network %q is not supported (only %q)",
			ifName, podID, network, DefaultPodNetworkName)
	}
	if ifName == "" {
		return nil, fmt.Errorf("allocate IP for a custom interface of pod %s: no interface name given", podID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool == nil {
		return nil, fmt.Errorf("allocate IP for interface %s of pod %s: %w", ifName, podID, p.noPoolError())
	}
	if p.ipamCfg().UseExternalIPAM {
		return nil, fmt.Errorf("allocate IP for interface %s of pod %s: custom interface IPs are not available with external IPAM",
			ifName, podID)
	}
	o := owner{pod: podID, ifName: ifName}
	if ip := p.pool.ipOfOwner(o); ip != nil {
		return ip, nil
	}
	i, err := p.pool.allocate(o)
	if err != nil {
		return nil, fmt.Errorf("allocate IP for interface %s of pod %s: %w", ifName, podID, err)
	}
	ip := p.pool.ipOf(i)
	p.Log.WithFields(logrus.Fields{"pod": podID.String(), "interface": ifName, "ip": ip.String()}).
		Info("custom interface IP allocated")
	return ip, nil
}

// GetPodIP implements API.
func (p *Plugin) GetPodIP(podID PodID) *net.IPNet {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.pool == nil {
		return nil
	}
	if ip := p.pool.ipOfOwner(owner{pod: podID}); ip != nil {
		return hostNet(ip)
	}
	return nil
}

// GetPodCustomIfIP implements API.
func (p *Plugin) GetPodCustomIfIP(podID PodID, ifName, network string) net.IP {
	if network != "" && network != DefaultPodNetworkName {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.pool == nil || ifName == "" {
		return nil
	}
	return p.pool.ipOfOwner(owner{pod: podID, ifName: ifName})
}

// GetPodFromIP implements API: ip may be of either family.
func (p *Plugin) GetPodFromIP(ip net.IP) (PodID, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, pool := range p.pools() {
		if o, held := pool.ownerOf(ip); held {
			return o.pod, true
		}
	}
	return PodID{}, false
}

// pools returns the pools of this node, the primary first (none before the first
// resync). The caller holds p.mu.
func (p *Plugin) pools() []*podPool {
	out := make([]*podPool, 0, 2)
	if p.pool != nil {
		out = append(out, p.pool)
	}
	if p.dual != nil && p.dual.pool != nil {
		out = append(out, p.dual.pool)
	}
	return out
}

// ReleasePodIPs implements API: every address of the pod, of every family.
func (p *Plugin) ReleasePodIPs(podID PodID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ips []string
	for _, pool := range p.pools() {
		for _, ip := range pool.release(podID) {
			ips = append(ips, ip.String())
		}
	}
	if len(ips) == 0 {
		p.Log.WithField("pod", podID.String()).Debug("pod holds no IP: nothing to release")
		return nil
	}
	fields := logrus.Fields{"pod": podID.String(), "ips": strings.Join(ips, ","), "allocated": p.pool.allocated()}
	if p.dual != nil {
		fields["ipv6Allocated"] = p.dual.pool.allocated()
	}
	p.Log.WithFields(fields).Info("pod IPs released")
	return nil
}

// Allocations returns the pods holding addresses, sorted by namespace and name.
func (p *Plugin) Allocations() *IPAllocations {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := &IPAllocations{Pods: []PodIPAllocation{}}
	if p.pool != nil {
		out.Pods = p.pool.allocations()
	}
	if p.dual != nil && p.dual.pool != nil {
		out.Pods = withDualStackIPs(out.Pods, p.dual.pool)
	}
	return out
}

// NodeIPAddress implements API. The gateway shift uses the static default gateway of
// this node for every node ID, so all nodes must share the gateway for the plan to agree.
func (p *Plugin) NodeIPAddress(nodeID uint32) (net.IP, *net.IPNet, error) {
	var gw net.IP
	if p.ContivConf != nil {
		gw = p.ContivConf.GetStaticDefaultGW()
	}
	return p.plan().nodeIP(nodeID, gw)
}

// VxlanIPAddress implements API.
func (p *Plugin) VxlanIPAddress(nodeID uint32) (net.IP, *net.IPNet, error) {
	return p.plan().vxlanIP(nodeID)
}

// HostInterconnectIPInVPP implements API.
func (p *Plugin) HostInterconnectIPInVPP() net.IP {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.hostSubnet == nil {
		return nil
	}
	return hostAt(p.hostSubnet, 1)
}

// HostInterconnectIPInLinux implements API.
func (p *Plugin) HostInterconnectIPInLinux() net.IP {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.hostSubnet == nil {
		return nil
	}
	return hostAt(p.hostSubnet, 2)
}

// HostInterconnectSubnetThisNode implements API.
func (p *Plugin) HostInterconnectSubnetThisNode() *net.IPNet {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return cloneNet(p.hostSubnet)
}

// HostInterconnectSubnetAllNodes implements API.
func (p *Plugin) HostInterconnectSubnetAllNodes() *net.IPNet {
	return cloneNet(p.ipamCfg().VPPHostSubnetCIDR)
}

// HostInterconnectSubnetOtherNode implements API.
func (p *Plugin) HostInterconnectSubnetOtherNode(nodeID uint32) (*net.IPNet, error) {
	return p.plan().hostSubnet(nodeID)
}

// NodeIDFromPodIP implements API; podIP may be of either family. With external IPAM it looks for the node whose
// podCIDR holds the address.
func (p *Plugin) NodeIDFromPodIP(podIP net.IP) (uint32, error) {
	if v6, ok := p.dualPlan(); ok && podIP.To4() == nil {
		return v6.nodeIDFromPodIP(podIP)
	}
	if !p.ipamCfg().UseExternalIPAM {
		return p.plan().nodeIDFromPodIP(podIP)
	}
	for _, n := range p.NodeSync.GetAllNodes() {
		if n == nil || n.ID == 0 || n.PodCIDR == "" {
			continue
		}
		if cidr, err := p.parsePodCIDR(n); err == nil && cidr.Contains(podIP) {
			return n.ID, nil
		}
	}
	return 0, fmt.Errorf("node ID of pod IP %s: no node has a podCIDR holding it", podIP)
}

// PodSubnetAllNodes implements API.
func (p *Plugin) PodSubnetAllNodes() *net.IPNet {
	return cloneNet(p.ipamCfg().PodSubnetCIDR)
}

// PodSubnetThisNode implements API.
func (p *Plugin) PodSubnetThisNode() *net.IPNet {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return cloneNet(p.podSubnet)
}

// PodSubnetOtherNode implements API. With external IPAM it is the node's podCIDR.
func (p *Plugin) PodSubnetOtherNode(nodeID uint32) (*net.IPNet, error) {
	if !p.ipamCfg().UseExternalIPAM {
		return p.plan().podSubnet(nodeID)
	}
	for _, n := range p.NodeSync.GetAllNodes() {
		if n == nil || n.ID != nodeID {
			continue
		}
		if n.PodCIDR == "" {
			return nil, fmt.Errorf("pod subnet of nodeID %d: node %s has no podCIDR yet", nodeID, n.Name)
		}
		return p.parsePodCIDR(n)
	}
	return nil, fmt.Errorf("pod subnet of nodeID %d: no such node", nodeID)
}

// ServiceNetwork implements API.
func (p *Plugin) ServiceNetwork() *net.IPNet {
	return cloneNet(p.ipamCfg().ServiceCIDR)
}

// PodGatewayIP implements API.
func (p *Plugin) PodGatewayIP() net.IP {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.podSubnet == nil {
		return nil
	}
	return hostAt(p.podSubnet, 1)
}

// NatLoopbackIP implements API.
func (p *Plugin) NatLoopbackIP() net.IP {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.podSubnet == nil {
		return nil
	}
	return ipDec(lastAddr(p.podSubnet))
}

// GetIPAMConfigForJSON implements API.
func (p *Plugin) GetIPAMConfigForJSON() *contivconf.IPAMConfigForJSON {
	if p.ContivConf == nil {
		return nil
	}
	return p.ContivConf.GetIPAMConfigForJSON()
}

// NodeID returns the node ID the last resync used (0 before the first one).
func (p *Plugin) NodeID() uint32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeID
}

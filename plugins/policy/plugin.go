package policy

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/configurator"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/processor"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/acl"
	rcache "github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/cache"
)

// ContivConf is what the plugin needs of contivconf.
type ContivConf interface {
	// GetMainInterfaceName returns the VPP interface towards the other nodes.
	GetMainInterfaceName() string
	// GetOtherVPPInterfaces returns the node's other VPP interfaces.
	GetOtherVPPInterfaces() contivconf.OtherInterfaces
}

// IPAM is what the plugin needs of ipam.
type IPAM interface {
	// PodSubnetThisNode returns this node's pod subnet (local pods).
	PodSubnetThisNode() *net.IPNet
	// PodSubnetAllNodes returns the pod network of the cluster.
	PodSubnetAllNodes() *net.IPNet
	// ServiceNetwork returns the service network.
	ServiceNetwork() *net.IPNet
	// NatLoopbackIP returns the source of pods reaching themselves through a service.
	NatLoopbackIP() net.IP
	// HostInterconnectIPInLinux returns the host's address on the host interconnect.
	HostInterconnectIPInLinux() net.IP
	// GetPodIPs returns the addresses of a local pod, the primary first (one of
	// each family on a dual-stack node), nil if it has none.
	GetPodIPs(podID ipam.PodID) []*net.IPNet
	// Families returns the IP families of the cluster, the primary first.
	Families() []ipam.Family
	// ThisNodeAddresses returns this node's networks and addresses of a family
	// (nil without the family).
	ThisNodeAddresses(f ipam.Family) *ipam.FamilyAddresses
}

// IPNet is what the plugin needs of ipnet.
type IPNet interface {
	// GetPodIfNames returns the names of a pod's interfaces; exists is false for
	// pods not wired on this node.
	GetPodIfNames(podNamespace string, podName string) (vppIfName, linuxIfName, loopIfName string, exists bool)
	// GetHostInterconnectIfName returns the VPP interface facing the host.
	GetHostInterconnectIfName() string
	// GetVxlanBVIIfName returns the BVI of the VXLAN bridge domain ("" without overlay).
	GetVxlanBVIIfName() string
	// GetNodeIP returns this node's IP.
	GetNodeIP() (ip net.IP, network *net.IPNet)
	// GetHostIPs returns the addresses of the host's links.
	GetHostIPs() []net.IP
}

// PodManager lists the pods CNI wired on this node.
type PodManager interface {
	GetLocalPods() podmanager.LocalPods
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log        logrus.FieldLogger
	ContivConf ContivConf
	IPAM       IPAM
	IPNet      IPNet
	PodManager PodManager
	// ACLLists shares the interfaces' ACL lists with the other plugins that filter
	// on them (ifacls); nil: the policy ACLs are the only ones on every interface.
	ACLLists *ifacls.Lists
}

// Plugin is the policy plugin: an event handler of the controller (see the
// package documentation).
type Plugin struct {
	Deps

	processor *processor.Processor
	cache     *rcache.Cache
	renderer  *acl.Renderer
	// podSubnets are this node's pod subnets of every family (read at
	// resync): the local pods Kubernetes reports before IPAM knows them.
	podSubnets []netip.Prefix

	resyncTxn controller.ResyncOperations
	updateTxn controller.UpdateOperations
	changes   []string
}

var _ controller.EventHandler = (*Plugin)(nil)

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "policy" }

// Init builds the processor, the renderer cache and the ACL renderer.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	if p.ContivConf == nil || p.IPAM == nil || p.IPNet == nil || p.PodManager == nil {
		return fmt.Errorf("policy: ContivConf, IPAM, IPNet and PodManager are required")
	}
	p.cache = rcache.New(rcache.Config{})
	p.renderer = &acl.Renderer{Deps: acl.Deps{
		Log: p.Log.WithField("component", "acl"), Cache: p.cache,
		UpdateTxnFactory: p.updateTxnFactory, ResyncTxnFactory: p.resyncTxnFactory, Lists: p.ACLLists,
	}}
	p.processor = processor.New(processor.Deps{Log: p.Log.WithField("component", "processor"), Node: node{p}, Renderer: p.renderer})
	return nil
}

// Close does nothing: the plugin has no goroutines.
func (p *Plugin) Close() error { return nil }

// HandlesEvent selects every resync, KubeStateChange of pods, namespaces and
// policies, AddPod and DeletePod.
func (p *Plugin) HandlesEvent(ev controller.Event) bool {
	if ev.Method() != controller.Update {
		return true
	}
	switch e := ev.(type) {
	case *controller.KubeStateChange:
		return e.Resource == podmodel.Keyword || e.Resource == nsmodel.Keyword || e.Resource == pm.Keyword
	case *podmanager.AddPod, *podmanager.DeletePod:
		return true
	}
	return false
}

// Resync rebuilds the policies from the Kubernetes state and stages every
// ACL and interface ACL list.
func (p *Plugin) Resync(ev controller.Event, kubeStateData controller.KubeStateData, resyncCount int, txn controller.ResyncOperations) error {
	p.resyncTxn = txn
	defer func() { p.resyncTxn = nil }()
	p.cache.SetConfig(p.nodeConfig())
	if err := p.processor.Resync(kubeStateData); err != nil {
		return fmt.Errorf("policy resync (%s, #%d): %w", ev.GetName(), resyncCount, err)
	}
	st := p.renderer.LastStats()
	p.Log.WithFields(logrus.Fields{"acls": st.ACLs, "rules": st.Rules}).Info("policies resynced")
	return nil
}

// Update handles one event and describes what changed.
func (p *Plugin) Update(ev controller.Event, txn controller.UpdateOperations) (string, error) {
	p.updateTxn, p.changes = txn, nil
	defer func() { p.updateTxn = nil }()
	var err error
	switch e := ev.(type) {
	case *controller.KubeStateChange:
		err = p.processor.KubeStateChange(e)
	case *podmanager.AddPod:
		err = p.processor.AddPod(e.Pod)
	case *podmanager.DeletePod:
		err = p.processor.DeletePod(e.Pod)
	}
	if err != nil {
		return "", fmt.Errorf("policy: %s: %w", ev, err)
	}
	return strings.Join(p.changes, ", "), nil
}

// Revert forgets the pod of a failed AddPod (what it staged is discarded).
func (p *Plugin) Revert(ev controller.Event) error {
	e, ok := ev.(*podmanager.AddPod)
	if !ok {
		return nil
	}
	p.updateTxn = discardTxn{}
	defer func() { p.updateTxn, p.changes = nil, nil }()
	return p.processor.Forget(e.Pod)
}

func (p *Plugin) updateTxnFactory(change string) controller.UpdateOperations {
	if p.updateTxn == nil {
		p.Log.WithField("change", change).Error("ACL renderer staged a change outside of an update event: dropped")
		return discardTxn{}
	}
	p.changes = append(p.changes, change)
	return p.updateTxn
}

func (p *Plugin) resyncTxnFactory() controller.ResyncOperations {
	if p.resyncTxn == nil {
		p.Log.Error("ACL renderer staged a resync outside of a resync event: dropped")
		return discardTxn{}
	}
	return p.resyncTxn
}

// nodeConfig reads the node's networks and interfaces, of every IP family of
// the cluster (the primary family's from the IPAM's getters of the IPv4 era,
// the others' from ThisNodeAddresses), and keeps this node's pod subnets.
func (p *Plugin) nodeConfig() rcache.Config {
	var c rcache.Config
	p.podSubnets = p.podSubnets[:0]
	addNet := func(list []netip.Prefix, n *net.IPNet) []netip.Prefix {
		if pf, ok := prefix(n); ok && !slices.Contains(list, pf) {
			list = append(list, pf)
		}
		return list
	}
	c.ClusterNetworks = addNet(addNet(nil, p.IPAM.PodSubnetAllNodes()), p.IPAM.ServiceNetwork())
	p.podSubnets = addNet(p.podSubnets, p.IPAM.PodSubnetThisNode())
	for _, f := range p.IPAM.Families() {
		if a := p.IPAM.ThisNodeAddresses(f); a != nil {
			c.ClusterNetworks = addNet(addNet(c.ClusterNetworks, a.PodSubnetAllNodes), a.ServiceNetwork)
			p.podSubnets = addNet(p.podSubnets, a.PodSubnet)
		}
	}
	// The families whose traffic the ACLs filter: those of the cluster's
	// networks (a rule without addresses becomes one VPP rule per family).
	for _, n := range append(slices.Clone(c.ClusterNetworks), p.podSubnets...) {
		any := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		if n.Addr().Is6() {
			any = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		}
		if !slices.Contains(c.AnyNetworks, any) {
			c.AnyNetworks = append(c.AnyNetworks, any)
		}
	}
	slices.SortFunc(c.AnyNetworks, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	add := func(name string) {
		if name != "" {
			c.NodeInterfaces = append(c.NodeInterfaces, name)
		}
	}
	add(p.IPNet.GetHostInterconnectIfName())
	add(p.ContivConf.GetMainInterfaceName())
	for _, o := range p.ContivConf.GetOtherVPPInterfaces() {
		add(o.InterfaceName)
	}
	add(p.IPNet.GetVxlanBVIIfName())
	return c
}

// RuleOwners tells which NetworkPolicies the rules of the policy ACLs enforce
// (what the statscollector labels the ACL rule counters with).
type RuleOwners interface {
	// ACLRules returns the owner of every rule of the named ACL by rule index;
	// nil for an ACL that is not the policy renderer's (or names no policy).
	ACLRules(aclName string) []acl.RuleOwner
}

var _ RuleOwners = (*Plugin)(nil)

// ACLRules implements RuleOwners; safe for concurrent use with the event loop
// (the ACL renderer's Owners: a lock, entries replaced per changed ACL). Nil
// before Init.
func (p *Plugin) ACLRules(aclName string) []acl.RuleOwner {
	if p.renderer == nil {
		return nil
	}
	return p.renderer.RuleOwners().ACLRules(aclName)
}

// Stats returns the ACL renderer's counters of the last render.
func (p *Plugin) Stats() acl.Stats { return p.renderer.LastStats() }

// node implements processor.Node over the plugin's dependencies.
type node struct{ p *Plugin }

func (n node) LocalPod(id podmodel.ID, k8sIPs []netip.Addr) ([]netip.Addr, string, bool) {
	iface, _, _, wired := n.p.IPNet.GetPodIfNames(id.Namespace, id.Name)
	if !wired {
		iface = ""
	}
	var ips []netip.Addr
	for _, ipn := range n.p.IPAM.GetPodIPs(id) {
		if a, ok := netip.AddrFromSlice(ipn.IP); ok {
			ips = append(ips, a.Unmap())
		}
	}
	if len(ips) > 0 {
		return ips, iface, true
	}
	// Not allocated here (yet): the addresses Kubernetes reports in this
	// node's pod subnets, of every family.
	for _, a := range k8sIPs {
		for _, sub := range n.p.podSubnets {
			if sub.Contains(a) {
				ips = append(ips, a)
				break
			}
		}
	}
	return ips, iface, len(ips) > 0
}

func (n node) LocalPods() []podmodel.ID {
	pods := n.p.PodManager.GetLocalPods()
	out := make([]podmodel.ID, 0, len(pods))
	for id := range pods {
		out = append(out, id)
	}
	return out
}

func (n node) Sources() configurator.Node {
	var out configurator.Node
	add := func(ip net.IP) {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out.AllowedSources = append(out.AllowedSources, a.Unmap())
		}
	}
	add(n.p.IPAM.NatLoopbackIP())
	add(n.p.IPAM.HostInterconnectIPInLinux())
	nodeIP, _ := n.p.IPNet.GetNodeIP()
	add(nodeIP)
	for _, ip := range n.p.IPNet.GetHostIPs() {
		add(ip)
	}
	// The same addresses of the other families of a dual-stack node (the
	// primary family's are those above).
	for i, f := range n.p.IPAM.Families() {
		if a := n.p.IPAM.ThisNodeAddresses(f); i > 0 && a != nil {
			add(a.NatLoopbackIP)
			add(a.HostInterconnectIPInLinux)
			add(a.NodeIP)
		}
	}
	return out
}

func prefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	a = a.Unmap()
	if a.Is4() && ones > 32 {
		ones -= 96
	}
	return netip.PrefixFrom(a, ones).Masked(), true
}

// discardTxn drops everything staged into it.
type discardTxn struct{}

// Put drops the value.
func (discardTxn) Put(string, proto.Message) {}

// Get finds nothing.
func (discardTxn) Get(string) proto.Message { return nil }

// Delete drops the deletion.
func (discardTxn) Delete(string) {}

package ipam

import (
	"fmt"
	"net"

	"github.com/sirupsen/logrus"
)

// Family is an IP family.
type Family uint8

// The IP families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// String names the family ("IPv4", "IPv6").
func (f Family) String() string { return fmt.Sprintf("IPv%d", uint8(f)) }

// familyOf returns the family of a network.
func familyOf(n *net.IPNet) Family {
	if len(networkOf(n).IP) == net.IPv6len {
		return IPv6
	}
	return IPv4
}

// FamilyAddresses are a node's subnets and addresses of one IP family, as the address
// plan gives them (docs/IPAM.md). A nil network or address is not configured for the
// family (no VXLAN range with useNoOverlay, no nodeInterconnectCIDR, no IPv6 service
// range).
type FamilyAddresses struct {
	// Family is the IP family of every address below.
	Family Family
	// PodSubnetAllNodes is the pod range of the cluster.
	PodSubnetAllNodes *net.IPNet
	// PodSubnet is the node's pod subnet (this node with external IPAM: its podCIDR).
	PodSubnet *net.IPNet
	// PodGatewayIP is host #1 of PodSubnet, the pods' gateway.
	PodGatewayIP net.IP
	// NatLoopbackIP is the last address but one of PodSubnet, never given to a pod.
	NatLoopbackIP net.IP
	// HostInterconnectSubnetAllNodes is the range of the VPP-host interconnects.
	HostInterconnectSubnetAllNodes *net.IPNet
	// HostInterconnectSubnet is the node's VPP-host interconnect subnet.
	HostInterconnectSubnet *net.IPNet
	// HostInterconnectIPInVPP and HostInterconnectIPInLinux are its hosts #1 and #2.
	HostInterconnectIPInVPP, HostInterconnectIPInLinux net.IP
	// VxlanIP is the node's VXLAN BVI address (host #ID of VxlanNetwork).
	VxlanIP      net.IP
	VxlanNetwork *net.IPNet
	// NodeIP is the node's address on the node interconnect (host #ID of NodeNetwork,
	// shifted past the static default gateway of the same family).
	NodeIP      net.IP
	NodeNetwork *net.IPNet
	// ServiceNetwork is the range of the Kubernetes service IPs of the family.
	ServiceNetwork *net.IPNet
}

// Families returns the IP families of the cluster's address plan, the primary first:
// [IPv4, IPv6] on a dual-stack cluster, one family otherwise.
func (p *Plugin) Families() []Family {
	var out []Family
	for _, fp := range p.ipamCfg().Plans() {
		if fp.PodSubnetCIDR != nil {
			out = append(out, familyOf(fp.PodSubnetCIDR))
		}
	}
	return out
}

// planOf returns the address plan of family f, ok false when the cluster has none.
func (p *Plugin) planOf(f Family) (addressPlan, bool) {
	fp := p.ipamCfg().Plan(f == IPv6)
	return addressPlan{fp: fp}, fp != nil
}

// NodeAddresses returns the subnets and addresses of family f that the node with the
// given ID has by the address plan; it fails when the cluster has no such family or
// the ID does not fit the plan. With external IPAM the pod subnet of another node is
// not computed (its podCIDR decides: PodSubnetOtherNode) and stays nil.
func (p *Plugin) NodeAddresses(f Family, nodeID uint32) (*FamilyAddresses, error) {
	pl, ok := p.planOf(f)
	if !ok {
		return nil, fmt.Errorf("%s addresses of nodeID %d: the address plan has no %s ranges", f, nodeID, f)
	}
	var gw net.IP
	if p.ContivConf != nil {
		gw = p.ContivConf.GetStaticDefaultGW()
	}
	out := &FamilyAddresses{
		Family:                         f,
		PodSubnetAllNodes:              cloneNet(pl.fp.PodSubnetCIDR),
		HostInterconnectSubnetAllNodes: cloneNet(pl.fp.VPPHostSubnetCIDR),
		ServiceNetwork:                 cloneNet(pl.fp.ServiceCIDR),
	}
	host, err := pl.hostSubnet(nodeID)
	if err != nil {
		return nil, fmt.Errorf("%s addresses: %w", f, err)
	}
	out.setHostSubnet(host)
	if !p.ipamCfg().UseExternalIPAM {
		pod, err := pl.podSubnet(nodeID)
		if err != nil {
			return nil, fmt.Errorf("%s addresses: %w", f, err)
		}
		out.setPodSubnet(pod)
	}
	if pl.fp.VxlanCIDR != nil {
		if out.VxlanIP, out.VxlanNetwork, err = pl.vxlanIP(nodeID); err != nil {
			return nil, fmt.Errorf("%s addresses: %w", f, err)
		}
	}
	if pl.fp.NodeInterconnectCIDR != nil {
		if out.NodeIP, out.NodeNetwork, err = pl.nodeIP(nodeID, gw); err != nil {
			return nil, fmt.Errorf("%s addresses: %w", f, err)
		}
	}
	return out, nil
}

// ThisNodeAddresses returns this node's subnets and addresses of family f, nil before
// the first resync or when the cluster has no such family. Its pod subnet is the one
// in use (external IPAM: the node's podCIDR; nil while unknown).
func (p *Plugin) ThisNodeAddresses(f Family) *FamilyAddresses {
	p.mu.RLock()
	nodeID := p.nodeID
	st := p.familyState(f)
	p.mu.RUnlock()
	if st == nil || nodeID == 0 {
		return nil
	}
	out, err := p.NodeAddresses(f, nodeID)
	if err != nil { // cannot happen: the resync computed the same plan
		p.Log.WithError(err).WithField("family", f.String()).Warn("addresses of this node")
		return nil
	}
	out.setPodSubnet(st.podSubnet)
	out.setHostSubnet(st.hostSubnet)
	return out
}

// familyState returns this node's state of family f, nil when there is none (no such
// family, or not resynced yet). The caller holds p.mu.
func (p *Plugin) familyState(f Family) *familyState {
	switch {
	case p.dual != nil && f == IPv6:
		return p.dual
	case p.hostSubnet != nil && familyOf(p.hostSubnet) == f:
		return &familyState{podSubnet: p.podSubnet, hostSubnet: p.hostSubnet, pool: p.pool}
	}
	return nil
}

// setPodSubnet sets the pod subnet and the addresses derived from it (nil: none).
func (a *FamilyAddresses) setPodSubnet(n *net.IPNet) {
	a.PodSubnet, a.PodGatewayIP, a.NatLoopbackIP = cloneNet(n), nil, nil
	if n != nil {
		a.PodGatewayIP, a.NatLoopbackIP = hostAt(n, 1), ipDec(lastAddr(n))
	}
}

// setHostSubnet sets the VPP-host subnet and its two ends.
func (a *FamilyAddresses) setHostSubnet(n *net.IPNet) {
	a.HostInterconnectSubnet, a.HostInterconnectIPInVPP, a.HostInterconnectIPInLinux = cloneNet(n), hostAt(n, 1), hostAt(n, 2)
}

// AllocatePodIPs gives the pod an address of every family of the plan in one call, the
// primary first (dual-stack: [IPv4/32, IPv6/128]): all or none, so a failure of the
// second family releases what this call allocated of the first. A pod that already
// holds addresses gets the same ones again. With external IPAM (single-stack only) the
// address is the one of the CNI IPAM result in ipamData.
func (p *Plugin) AllocatePodIPs(podID PodID, ipamType string, ipamData string) ([]*net.IPNet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	primary, fresh, err := p.allocatePrimary(podID, ipamType, ipamData)
	if err != nil {
		return nil, err
	}
	if p.dual == nil {
		return []*net.IPNet{primary}, nil
	}
	o := owner{pod: podID}
	if ip := p.dual.pool.ipOfOwner(o); ip != nil {
		p.dual.pool.confirm(podID)
		return []*net.IPNet{primary, hostNet(ip)}, nil
	}
	i, err := p.dual.pool.allocate(o)
	if err != nil {
		if fresh {
			p.pool.release(podID)
		}
		return nil, fmt.Errorf("allocate IPv6 for pod %s: %w", podID, err)
	}
	ip := p.dual.pool.ipOf(i)
	p.Log.WithFields(logrus.Fields{"pod": podID.String(), "ip": ip.String(), "allocated": p.dual.pool.allocated()}).
		Info("pod IPv6 allocated")
	return []*net.IPNet{primary, hostNet(ip)}, nil
}

// GetPodIPs returns the addresses of the pod's main interface, the primary first (one
// per family), nil when it has none.
func (p *Plugin) GetPodIPs(podID PodID) []*net.IPNet {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []*net.IPNet
	for _, pool := range p.pools() {
		if ip := pool.ipOfOwner(owner{pod: podID}); ip != nil {
			out = append(out, hostNet(ip))
		}
	}
	return out
}

// withDualStackIPs fills MainIPs of the allocations of the primary pool with the
// addresses of both families, adding the pods that hold an address of v6 only.
func withDualStackIPs(pods []PodIPAllocation, v6 *podPool) []PodIPAllocation {
	seen := make(map[PodID]int, len(pods))
	for i := range pods {
		seen[pods[i].PodID] = i
		if pods[i].MainIP != nil {
			pods[i].MainIPs = []net.IP{pods[i].MainIP}
		}
	}
	for _, a := range v6.allocations() {
		if a.MainIP == nil {
			continue
		}
		i, ok := seen[a.PodID]
		if !ok {
			pods = append(pods, PodIPAllocation{PodID: a.PodID, CustomIfIPs: map[string]net.IP{}})
			i = len(pods) - 1
		}
		pods[i].MainIPs = append(pods[i].MainIPs, a.MainIP)
	}
	sortAllocations(pods)
	return pods
}

package ipam

import (
	"errors"
	"fmt"
	"net"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// API is the address plan of the cluster as seen from this node, and the pod IP
// allocator of this node. Every method may be called from any goroutine. Addresses of
// "this node" are known after the first resync; before it those getters return nil.
// Returned IPs and networks are copies that the caller may keep and change.
type API interface {
	// NodeIPAddress returns the IP that the node with the given ID gets on the node
	// interconnect (host #ID of nodeInterconnectCIDR, one higher when the static default
	// gateway lies at or below it) and the interconnect network. It fails when
	// nodeInterconnectCIDR is not set (DHCP, configured node IPs) or the ID has no address.
	NodeIPAddress(nodeID uint32) (net.IP, *net.IPNet, error)
	// VxlanIPAddress returns the IP of the VXLAN BVI of the node with the given ID (host
	// #ID of vxlanCIDR) and the VXLAN network.
	VxlanIPAddress(nodeID uint32) (net.IP, *net.IPNet, error)
	// HostInterconnectIPInVPP returns the VPP end of this node's VPP-host interconnect
	// (host #1 of its VPP-host subnet).
	HostInterconnectIPInVPP() net.IP
	// HostInterconnectIPInLinux returns the Linux end of this node's VPP-host
	// interconnect (host #2 of its VPP-host subnet).
	HostInterconnectIPInLinux() net.IP
	// HostInterconnectSubnetThisNode returns this node's VPP-host subnet.
	HostInterconnectSubnetThisNode() *net.IPNet
	// HostInterconnectSubnetAllNodes returns vppHostSubnetCIDR, the range of every
	// node's VPP-host subnet.
	HostInterconnectSubnetAllNodes() *net.IPNet
	// HostInterconnectSubnetOtherNode returns the VPP-host subnet of the node with the
	// given ID.
	HostInterconnectSubnetOtherNode(nodeID uint32) (*net.IPNet, error)
	// NodeIDFromPodIP returns the ID of the node whose pod subnet holds podIP.
	NodeIDFromPodIP(podIP net.IP) (uint32, error)
	// PodSubnetAllNodes returns podSubnetCIDR, the range of every node's pod subnet.
	PodSubnetAllNodes() *net.IPNet
	// PodSubnetThisNode returns this node's pod subnet (with external IPAM: this node's
	// Kubernetes podCIDR).
	PodSubnetThisNode() *net.IPNet
	// PodSubnetOtherNode returns the pod subnet of the node with the given ID.
	PodSubnetOtherNode(nodeID uint32) (*net.IPNet, error)
	// ServiceNetwork returns serviceCIDR, the range of Kubernetes service IPs.
	ServiceNetwork() *net.IPNet
	// PodGatewayIP returns the gateway of this node's pods (host #1 of its pod subnet).
	PodGatewayIP() net.IP
	// NatLoopbackIP returns the address VPP uses as source for the self-twice-NAT of
	// pods reaching themselves through a service (the last unicast address of this
	// node's pod subnet: broadcast minus one). It is never given to a pod.
	NatLoopbackIP() net.IP
	// AllocatePodIP gives the pod an IP of this node's pod subnet (/32, IPv6 /128). With
	// external IPAM the IP is the one of the CNI IPAM result in ipamData, produced by the
	// IPAM plugin ipamType. A pod that already has an IP gets the same one again. On a
	// dual-stack node it is AllocatePodIPs (the pod gets both families) and returns
	// the primary (IPv4) address.
	AllocatePodIP(podID PodID, ipamType string, ipamData string) (*net.IPNet, error)
	// AllocatePodCustomIfIP gives an extra (custom) interface of the pod an IP from this
	// node's pod subnet; network must be "" or DefaultPodNetworkName. It is idempotent
	// per pod and interface.
	AllocatePodCustomIfIP(podID PodID, ifName, network string) (net.IP, error)
	// GetPodIP returns the IP of the pod's main interface, nil when it has none.
	GetPodIP(podID PodID) *net.IPNet
	// GetPodCustomIfIP returns the IP of a custom interface of the pod, nil when none.
	GetPodCustomIfIP(podID PodID, ifName, network string) net.IP
	// GetPodFromIP returns the local pod that holds ip (main or custom interface, either
	// family).
	GetPodFromIP(ip net.IP) (podID PodID, found bool)
	// ReleasePodIPs frees every IP of the pod, of every family; releasing a pod without
	// IPs is no error.
	ReleasePodIPs(podID PodID) error
	// GetIPAMConfigForJSON returns the effective ipamConfig in the contiv.conf shape.
	GetIPAMConfigForJSON() *contivconf.IPAMConfigForJSON

	// Dual-stack. The methods above answer for the primary family (the top-level
	// ranges of ipamConfig: IPv4 on a dual-stack node), except AllocatePodIP,
	// ReleasePodIPs, GetPodFromIP and NodeIDFromPodIP, which cover every family.

	// Families returns the IP families of the address plan, the primary first
	// ([IPv4, IPv6] on a dual-stack cluster).
	Families() []Family
	// AllocatePodIPs gives the pod an address of every family in one call, the
	// primary first (/32 and /128); all or none. A pod that holds addresses gets the
	// same ones again.
	AllocatePodIPs(podID PodID, ipamType string, ipamData string) ([]*net.IPNet, error)
	// GetPodIPs returns the addresses of the pod's main interface, the primary first.
	GetPodIPs(podID PodID) []*net.IPNet
	// ThisNodeAddresses returns this node's subnets and addresses of a family (pod
	// subnet, gateway, NAT loopback, VPP-host interconnect and its two ends, VXLAN BVI
	// IP, node IP, service range), nil before the first resync or without the family.
	ThisNodeAddresses(f Family) *FamilyAddresses
	// NodeAddresses returns the same of the node with the given ID, as the plan
	// gives them.
	NodeAddresses(f Family, nodeID uint32) (*FamilyAddresses, error)
}

// PodID identifies a Kubernetes pod.

// PodID identifies a pod (name and namespace); it is the KSR model's pod ID.
type PodID = podmodel.ID

// DefaultPodNetworkName names the pod network that the IPAM allocates from; it is the
// only network accepted by the custom interface methods.
const DefaultPodNetworkName = "default"

// NodeInfo is what the IPAM needs to know about a node of the cluster.
type NodeInfo struct {
	// ID is the node ID allocated by nodesync (0: none yet).
	ID uint32
	// Name is the Kubernetes node name.
	Name string
	// PodCIDR is the node's Kubernetes spec.podCIDR ("" when not assigned); it is used
	// only with external IPAM.
	PodCIDR string
}

// NodeSync is the part of nodesync the IPAM uses.
type NodeSync interface {
	// GetNodeID returns the ID of this node, 0 while it has none.
	GetNodeID() uint32
	// GetAllNodes returns the nodes of the cluster by name.
	GetAllNodes() map[string]*NodeInfo
}

// NodeSyncFuncs adapts two functions to NodeSync, e.g. to wire the nodesync plugin,
// whose node type differs, in cmd/contiv-agent. A nil function means "nothing known".
type NodeSyncFuncs struct {
	NodeID   func() uint32
	AllNodes func() map[string]*NodeInfo
}

// GetNodeID implements NodeSync.
func (f NodeSyncFuncs) GetNodeID() uint32 {
	if f.NodeID == nil {
		return 0
	}
	return f.NodeID()
}

// GetAllNodes implements NodeSync.
func (f NodeSyncFuncs) GetAllNodes() map[string]*NodeInfo {
	if f.AllNodes == nil {
		return nil
	}
	return f.AllNodes()
}

// Errors the callers may test for with errors.Is; the messages carry the details.
var (
	// ErrNodeIDOutOfRange: the node ID does not fit into the node part of a range.
	ErrNodeIDOutOfRange = errors.New("nodeID is out of the valid range")
	// ErrNoAddressForNodeID: the node ID maps to an address a node cannot have (the
	// network or broadcast address, or beyond the range after skipping the gateway).
	ErrNoAddressForNodeID = errors.New("no free address for nodeID")
	// ErrNoFreeIP: every allocatable address of the pod subnet is taken.
	ErrNoFreeIP = errors.New("no free IP address")
)

// NodeUpdateEventName is the GetName of nodesync's NodeUpdate event. The IPAM matches
// the event by name so that it does not depend on the nodesync package.
const NodeUpdateEventName = "Node Update"

// PodCIDRChangeEventName is the GetName of PodCIDRChange.
const PodCIDRChangeEventName = "Pod CIDR Change"

// PodCIDRChange is pushed by the IPAM (external IPAM only) when the Kubernetes podCIDR
// of this node changes; every handler then rebuilds its state for the new pod subnet.
type PodCIDRChange struct {
	// LocalPodCIDR is the new pod subnet of this node.
	LocalPodCIDR *net.IPNet
}

var _ api.Event = (*PodCIDRChange)(nil)

// GetName returns "Pod CIDR Change".
func (ev *PodCIDRChange) GetName() string { return PodCIDRChangeEventName }

// String names the new pod CIDR.
func (ev *PodCIDRChange) String() string {
	return fmt.Sprintf("%s (new pod CIDR of this node: %s)", ev.GetName(), netString(ev.LocalPodCIDR))
}

// Method is UpstreamResync.
func (ev *PodCIDRChange) Method() api.EventMethodType { return api.UpstreamResync }

// IsBlocking is false.
func (ev *PodCIDRChange) IsBlocking() bool { return false }

// Done does nothing: nobody waits for the event.
func (ev *PodCIDRChange) Done(error) {}

package contivconf

import (
	"net"
)

// API is what ContivConf offers to the other plugins. Every method may be called from any
// goroutine; returned pointers and slices are copies that the caller may keep and change.
type API interface {
	// InSTNMode tells whether VPP steals a host NIC on this node (stealFirstNIC,
	// stealInterface or this node's nodeConfig stealInterface).
	InSTNMode() bool
	// UseDHCP tells whether the main VPP interface gets its IP by DHCP.
	UseDHCP() bool
	// EnablePacketTrace tells whether VPP packet tracing is requested.
	EnablePacketTrace() bool
	// GetMainInterfaceName returns the name of the VPP interface connecting this node to
	// the others; "" means none was found and a loopback stands in.
	GetMainInterfaceName() string
	// GetMainInterfaceConfiguredIPs returns the statically known IPs of the main
	// interface (STN: those of the stolen NIC; else the node's mainVPPInterface.ip).
	// Empty when DHCP is used or when the IPAM derives the node IP from the node ID.
	GetMainInterfaceConfiguredIPs() IPsWithNetworks
	// GetOtherVPPInterfaces returns this node's other VPP interfaces.
	GetOtherVPPInterfaces() OtherInterfaces
	// GetStaticDefaultGW returns the static default gateway (nil: none, or DHCP).
	GetStaticDefaultGW() net.IP
	// NatExternalTraffic tells whether cluster-outbound traffic is SNATed on this node.
	NatExternalTraffic() bool
	// GetIPAMConfig returns the parsed effective address plan (contivCIDR dissected).
	GetIPAMConfig() *IPAMConfig
	// GetIPAMConfigForJSON returns the effective address plan in the contiv.conf shape.
	GetIPAMConfigForJSON() *IPAMConfigForJSON
	// GetInterfaceConfig returns how pods and the host attach to VPP.
	GetInterfaceConfig() *InterfaceConfig
	// GetRoutingConfig returns the VRFs and the node-to-node transport.
	GetRoutingConfig() *RoutingConfig
	// GetIPNeighborScanConfig returns the IP neighbour scan settings.
	GetIPNeighborScanConfig() *IPNeighborScanConfig
	// GetSTNConfig returns the global STN settings.
	GetSTNConfig() *STNConfig
	// GetStolenInterface returns what the STN daemon recorded about the stolen NIC, nil
	// outside STN mode. The main interface is an af_packet on its link when
	// GetMainInterfaceName is AFPacketInterfaceName(LinkName).
	GetStolenInterface() *StolenInterfaceInfo
	// UseVmxnet3 tells whether the main interface is a vmxnet3 interface.
	UseVmxnet3() bool
	// GetVmxnet3Config returns how to create the vmxnet3 main interface; it fails when
	// the main interface is not vmxnet3.
	GetVmxnet3Config() (*Vmxnet3Config, error)
	// IsIPv6 tells whether the cluster runs on IPv6 (decided by the pod subnet).
	IsIPv6() bool
	// ServiceRenderer returns serviceRenderer: ServiceRendererNAT44 or
	// ServiceRendererCNAT, the renderer of IPv4 Services (IPv6 ones always use cnat).
	ServiceRenderer() string
}

// IPAMConfig is the parsed effective ipamConfig. When contivCIDR is set, the pod, VPP-host,
// VXLAN and (without a configured one and without DHCP) node-interconnect subnets are the
// ones carved from it, and ContivCIDR keeps the original range.
type IPAMConfig struct {
	UseExternalIPAM bool
	// ContivCIDR is the configured contivCIDR, nil when not used.
	ContivCIDR *net.IPNet
	// NodeInterconnectDHCP is the global ipamConfig flag; UseDHCP gives this node's choice.
	NodeInterconnectDHCP bool
	// FamilyPlan holds the top-level ranges: the IPv4 plan of a dual-stack cluster, the
	// only plan of a single-stack one (IPv4 or IPv6). Its fields are promoted
	// (cfg.PodSubnetCIDR, ...) as before dual-stack.
	FamilyPlan
	// DefaultGateway is the global static gateway, nil when not set.
	DefaultGateway net.IP
	SRv6           SRv6Config
	// DualStackIPv6 is the IPv6 plan of a dual-stack cluster (ipamConfig.ipv6 beside
	// IPv4 ranges), nil in a single-stack cluster. A single-stack IPv6 cluster has its
	// plan in FamilyPlan (whether the file put IPv6 ranges in the top-level keys, as
	// upstream did, or only in ipamConfig.ipv6).
	DualStackIPv6 *FamilyPlan
}

// FamilyPlan is the address plan of one IP family. Nil networks are not configured.
type FamilyPlan struct {
	// ServiceCIDR is the range of Kubernetes service IPs (nil: not configured, only
	// possible in an IPv6 plan).
	ServiceCIDR                   *net.IPNet
	PodSubnetCIDR                 *net.IPNet
	PodSubnetOneNodePrefixLen     uint8
	VPPHostSubnetCIDR             *net.IPNet
	VPPHostSubnetOneNodePrefixLen uint8
	// NodeInterconnectCIDR is nil when not configured (DHCP or configured node IPs).
	NodeInterconnectCIDR *net.IPNet
	// VxlanCIDR is nil only when VXLAN is not used and the file left it empty.
	VxlanCIDR *net.IPNet
}

// IsIPv6 tells whether the plan is of IPv6 (decided by its pod subnet).
func (fp *FamilyPlan) IsIPv6() bool {
	return fp != nil && fp.PodSubnetCIDR != nil && family(fp.PodSubnetCIDR) == "IPv6"
}

// Primary returns the plan of the top-level ranges: IPv4 in a dual-stack cluster, the
// only family in a single-stack one. It points into c.
func (c *IPAMConfig) Primary() *FamilyPlan { return &c.FamilyPlan }

// IsDualStack tells whether the cluster has a plan of each IP family.
func (c *IPAMConfig) IsDualStack() bool { return c != nil && c.DualStackIPv6 != nil }

// Plans returns the plan of every configured family, the primary first (IPv4, then
// IPv6, in a dual-stack cluster).
func (c *IPAMConfig) Plans() []*FamilyPlan {
	if c.IsDualStack() {
		return []*FamilyPlan{c.Primary(), c.DualStackIPv6}
	}
	return []*FamilyPlan{c.Primary()}
}

// Plan returns the plan of the family (ipv6: IPv6, else IPv4), nil when the cluster
// has no such family.
func (c *IPAMConfig) Plan(ipv6 bool) *FamilyPlan {
	for _, fp := range c.Plans() {
		if fp.IsIPv6() == ipv6 {
			return fp
		}
	}
	return nil
}

// SRv6Config holds the parsed SRv6 SID and BSID prefixes.
type SRv6Config struct {
	ServicePolicyBSIDSubnetCIDR       *net.IPNet
	ServicePodLocalSIDSubnetCIDR      *net.IPNet
	ServiceHostLocalSIDSubnetCIDR     *net.IPNet
	ServiceNodeLocalSIDSubnetCIDR     *net.IPNet
	NodeToNodePodLocalSIDSubnetCIDR   *net.IPNet
	NodeToNodeHostLocalSIDSubnetCIDR  *net.IPNet
	NodeToNodePodPolicySIDSubnetCIDR  *net.IPNet
	NodeToNodeHostPolicySIDSubnetCIDR *net.IPNet
}

// IPWithNetwork is an interface address together with the network it belongs to.
type IPWithNetwork struct {
	Address net.IP
	Network *net.IPNet
}

// IPsWithNetworks is a list of interface addresses.
type IPsWithNetworks []*IPWithNetwork

// OtherInterfaceConfig is one of this node's other VPP interfaces.
type OtherInterfaceConfig struct {
	InterfaceName string
	UseDHCP       bool
	IPs           IPsWithNetworks
}

// OtherInterfaces is the list of this node's other VPP interfaces.
type OtherInterfaces []*OtherInterfaceConfig

// StolenInterfaceInfo is what the STN daemon reports about the host NIC it stole.
type StolenInterfaceInfo struct {
	// IPAddresses are the NIC's addresses with their prefix lengths (IP = host address).
	IPAddresses []*net.IPNet
	// DefaultGW is the gateway of the NIC's default route, nil if it had none.
	DefaultGW net.IP
	// PCIAddress is the NIC's PCI address, e.g. "0000:0b:00.0".
	PCIAddress string
	// KernelDriver is the Linux driver that drove the NIC, e.g. "vmxnet3".
	KernelDriver string
	// LinkName is the NIC's Linux name, e.g. "eth0" ("" when the daemon did not say):
	// without a DPDK NIC in VPP, the main interface is an af_packet on it.
	LinkName string
	// MAC is the NIC's hardware address (nil when unknown); the af_packet main
	// interface takes it, so that the wire's ARP caches stay right.
	MAC net.HardwareAddr
	// Routes are the NIC's other routes (neither its default route nor the prefix
	// routes of its addresses): the host keeps them through VPP.
	Routes []*StolenRoute
}

// StolenRoute is a route the host had out of the stolen NIC.
type StolenRoute struct {
	// Dst is the destination prefix.
	Dst *net.IPNet
	// Gw is the next hop, nil for a route on the link (no gateway).
	Gw net.IP
}

// AFPacketInterfaceName is the name VPP gives the af_packet interface on a Linux link
// (af_packet.c: "host-" and the link's name), the main interface of a single-NIC node
// whose VPP has no DPDK NIC.
func AFPacketInterfaceName(link string) string { return "host-" + link }

// Vmxnet3Config is how to create the vmxnet3 main interface in VPP.
type Vmxnet3Config struct {
	// PCIAddress is the NIC's PCI address in the "dddd:bb:ss.f" form.
	PCIAddress string
	// RxRingSize and TxRingSize are the queue sizes; both 0 (VPP default) unless both
	// vmxnet3RxRingSize and vmxnet3TxRingSize are set.
	RxRingSize uint16
	TxRingSize uint16
}

// Vmxnet3InterfacePrefix starts the VPP name of a vmxnet3 interface.
const Vmxnet3InterfacePrefix = "vmxnet3-"

// Vmxnet3KernelDriver is the Linux driver name that marks a stolen NIC as vmxnet3.
const Vmxnet3KernelDriver = "vmxnet3"

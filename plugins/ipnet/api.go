package ipnet

import (
	"fmt"
	"net"

	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// API is what ipnet tells the other plugins about the node's IP connectivity. Only
// GetPodByIf may be called outside the controller's event loop; the other methods
// read state that the loop owns.
type API interface {
	// GetPodIfNames returns the logical names of the interfaces that wire the given
	// local pod: the VPP side, the Linux side (in the pod) and the pod's loopback.
	// exists is false for a pod that ipnet has not wired.
	GetPodIfNames(podNamespace string, podName string) (vppIfName, linuxIfName, loopIfName string, exists bool)
	// GetPodByIf returns the pod whose VPP-side interface has the given logical name.
	// Safe to call from any goroutine.
	GetPodByIf(ifname string) (podNamespace string, podName string, exists bool)
	// GetNodeIP returns this node's IP on the node interconnect and its network; both
	// are nil while the node has none (waiting for a DHCP lease).
	GetNodeIP() (ip net.IP, network *net.IPNet)
	// GetHostIPs returns the addresses of the host's own (non-virtual) links, every
	// family, as read at the last resync; on a single-NIC (STN) node also the node's
	// addresses that the host keeps on its end of the interconnect.
	GetHostIPs() []net.IP
	// GetHostInterconnectIfName returns the logical name of the VPP interface facing
	// the host stack: the TAP or the AF_PACKET interface.
	GetHostInterconnectIfName() string
	// GetVxlanBVIIfName returns the logical name of the BVI in front of the VXLAN
	// tunnels, or "" when nodes are connected without an overlay.
	GetVxlanBVIIfName() string
}

// Logical names of the VPP-host interconnect.
const (
	// HostInterconnectTAPinVPPLogicalName names the VPP side of the host TAP.
	HostInterconnectTAPinVPPLogicalName = "tap-vpp2"
	// HostInterconnectTAPinLinuxLogicalName names the Linux side of the host TAP.
	HostInterconnectTAPinLinuxLogicalName = "tap-vpp1"
	// HostInterconnectTAPinLinuxHostName is the kernel name of the Linux side of the
	// host TAP (also the host_if_name VPP gives it).
	HostInterconnectTAPinLinuxHostName = "vpp1"
)

// Names of the VXLAN overlay.
const (
	// VxlanBVIInterfaceName names the loopback that is the BVI of the VXLAN bridge
	// domain, the L3 end of the overlay in the pod VRF.
	VxlanBVIInterfaceName = "vxlanBVI"
)

// HostLinkIPsDumpClb returns the IP addresses of the host's own links (virtual links
// such as lo*, docker*, virbr* and vpp* left out).
type HostLinkIPsDumpClb func() ([]net.IP, error)

// VPPIfPlugin is the part of the VPP interface plugin that ipnet reads: the DHCP
// leases that the VPP DHCP client obtains on interfaces with set_dhcp_client (state
// published under vpp/interface/dhcp-lease/<interface>). GetDHCPLease has the
// signature of plugins/vpp/ifplugin; WatchDHCPLeases is the one addition ipnet needs
// (an adapter in cmd/contiv-agent can provide it).
type VPPIfPlugin interface {
	// GetDHCPLease returns the current lease of the interface with the given logical
	// name; found is false when it has none.
	GetDHCPLease(ifName string) (lease *vppif.DHCPLease, found bool)
	// WatchDHCPLeases registers cb, called (from any goroutine) with every new or
	// changed lease; a lease with an empty host_ip_address reports a lost lease.
	WatchDHCPLeases(cb func(lease *vppif.DHCPLease))
}

// NodeIPv4ChangeName is the GetName of NodeIPv4Change.
const NodeIPv4ChangeName = "Node IP(v4) Change"

// NodeIPv4Change is pushed by ipnet when the DHCP lease of the main interface gives
// this node another IPv4 address (or takes it away). It is an UpstreamResync: every
// handler rebuilds its configuration for the new address.
type NodeIPv4Change struct {
	// NodeIP is the new address of the node, nil when the lease was lost.
	NodeIP net.IP
	// NodeIPNet is the network of the new address.
	NodeIPNet *net.IPNet
	// DefaultGw is the gateway that the DHCP server offered, nil when none.
	DefaultGw net.IP
}

var _ api.Event = (*NodeIPv4Change)(nil)

// GetName returns "Node IP(v4) Change".
func (ev *NodeIPv4Change) GetName() string { return NodeIPv4ChangeName }

// String describes the new address and gateway.
func (ev *NodeIPv4Change) String() string {
	return fmt.Sprintf("%s: node IP %s, network %s, default gateway %s",
		ev.GetName(), ipString(ev.NodeIP), netString(ev.NodeIPNet), ipString(ev.DefaultGw))
}

// Method is UpstreamResync.
func (ev *NodeIPv4Change) Method() api.EventMethodType { return api.UpstreamResync }

// IsBlocking is false: nobody waits for the event.
func (ev *NodeIPv4Change) IsBlocking() bool { return false }

// Done does nothing.
func (ev *NodeIPv4Change) Done(error) {}

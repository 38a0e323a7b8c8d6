package ipnet

import (
	"fmt"
	"net"
	"sort"

	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// vxlanIfName returns the logical name of the VXLAN tunnel to the node with the ID.
func vxlanIfName(nodeID uint32) string { return fmt.Sprintf("vxlan%d", nodeID) }

// peerIP returns the address used to reach the other node: its first published VPP
// address of the cluster's IP family, nil when it has none.
func (s *settings) peerIP(node *nodesync.Node) net.IP { return vppIPOfFamily(node, s.ipv6) }

// vppIPOfFamily returns the node's first published VPP address of the family (IPv6
// when ipv6), nil when it has none.
func vppIPOfFamily(node *nodesync.Node, ipv6 bool) net.IP {
	if node == nil {
		return nil
	}
	for _, a := range node.VppIPAddresses {
		if a != nil && a.IP != nil && (a.IP.To4() == nil) == ipv6 {
			return a.IP
		}
	}
	return nil
}

// connectable tells whether this node builds connectivity to the other node: it needs
// an ID, a VPP address (the tunnel endpoint or next hop) and a management address.
// Nodes that fail the test are left out everywhere, the VXLAN bridge domain included
// (upstream v3.1.0 still put their tunnels into the bridge domain, docs/ARCHITECTURE.md §8, quirk 4).
func (s *settings) connectable(node *nodesync.Node) bool {
	return node != nil && node.ID != 0 && s.peerIP(node) != nil && len(node.MgmtIPAddresses) > 0
}

// peer returns the configuration connecting this node to another (docs/dev-guide/UPSTREAM.md §2 item 8):
// with the overlay the VXLAN tunnel, the static ARP entry for the peer's BVI and the
// L2 FIB entry of its BVI MAC, then the routes (pod VRF via the peer's VXLAN IP out of
// vxlanBVI; without overlay main VRF via the peer's node IP) to its pod subnet
// (unless the pod IPs come from an external IPAM), its VPP-host subnet and each of its
// management IPs, and with the overlay a main->pod inter-VRF route per management IP.
// Management IPs of another IP family, equal to the next hop or equal to the peer's
// VPP IP (which must stay reachable directly, or the tunnel would carry itself) get
// no route. With routeServiceCIDRToVPP the host gets a route to the peer's VPP IP via
// VPP (hostRouteToVPP). The caller checks connectable and that this node has an IP.
func (b *builder) peer(node *nodesync.Node) (api.KeyValuePairs, error) {
	s := b.s
	kvs := make(api.KeyValuePairs)
	peerIP := s.peerIP(node)
	if peerIP == nil {
		return nil, fmt.Errorf("node %s (ID=%d) has no VPP IP", node.Name, node.ID)
	}
	nextHop := peerIP
	if !s.noOverlay {
		vxlanIP, _, err := b.ipam.VxlanIPAddress(node.ID)
		if err != nil {
			return nil, fmt.Errorf("node %s (ID=%d): VXLAN IP: %w", node.Name, node.ID, err)
		}
		nextHop = vxlanIP
		tunnel := vxlanIfName(node.ID)
		bviMAC := nodeMAC(vxlanBVIMACPrefix, node.ID)
		addVPPIf(kvs, &vppif.Interface{
			Name: tunnel, Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true, Vrf: s.mainVRF,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{
				SrcAddress: b.nodeIP.IP.String(), DstAddress: peerIP.String(), Vni: vxlanVNI,
			}},
		})
		addVPPARP(kvs, &vppl3.ARPEntry{
			Interface: VxlanBVIInterfaceName, IpAddress: vxlanIP.String(), PhysAddress: bviMAC, Static: true,
		})
		addFIB(kvs, &vppl2.FIBEntry{
			BridgeDomain: vxlanBDName, PhysAddress: bviMAC, OutgoingInterface: tunnel,
			Action: vppl2.FIBEntry_FORWARD, StaticConfig: true,
		})
	}

	if s.routeServiceCIDR {
		b.hostRouteToVPP(kvs, hostNet(peerIP)) // the host reaches the peer's NodePorts
	}

	var podSubnet *net.IPNet
	if !s.externalIPAM {
		var err error
		if podSubnet, err = b.ipam.PodSubnetOtherNode(node.ID); err != nil {
			return nil, fmt.Errorf("node %s (ID=%d): pod subnet: %w", node.Name, node.ID, err)
		}
	}
	hostSubnet, err := b.ipam.HostInterconnectSubnetOtherNode(node.ID)
	if err != nil {
		return nil, fmt.Errorf("node %s (ID=%d): VPP-host subnet: %w", node.Name, node.ID, err)
	}
	b.peerRoutes(kvs, node, nextHop, peerIP, podSubnet, hostSubnet)
	if b.second != nil {
		if err := b.peerSecondFamily(kvs, node); err != nil {
			return nil, err
		}
	}
	return kvs, nil
}

// peerRoutes adds the routes of one family to the other node: its pod subnet (nil:
// none, external IPAM), its VPP-host subnet and each of its management IPs of the
// family via nextHop (pod VRF out vxlanBVI with the overlay, main VRF without), and
// with the overlay a main->pod inter-VRF route per management IP. peerIP is the
// node's VPP IP of the family (nil: unknown); a management IP equal to it gets no route.
func (b *builder) peerRoutes(kvs api.KeyValuePairs, node *nodesync.Node, nextHop, peerIP net.IP, podSubnet, hostSubnet *net.IPNet) {
	s := b.s
	route := func(dst string) {
		r := &vppl3.Route{DstNetwork: dst, NextHopAddr: nextHop.String(), VrfId: s.mainVRF}
		if !s.noOverlay {
			r.VrfId, r.OutgoingInterface = s.podVRF, VxlanBVIInterfaceName
		}
		addVPPRoute(kvs, r)
	}
	if podSubnet != nil {
		route(podSubnet.String())
	}
	route(hostSubnet.String())
	for _, mgmt := range node.MgmtIPAddresses {
		// A management IP that is the peer's VPP IP is reached directly; a route for it
		// would capture the tunnel's own traffic.
		if mgmt == nil || !sameFamily(mgmt, nextHop) || (peerIP != nil && mgmt.Equal(peerIP)) {
			continue
		}
		if !mgmt.Equal(nextHop) {
			route(hostNet(mgmt))
		}
		if !s.noOverlay {
			addVPPRoute(kvs, &vppl3.Route{
				Type: vppl3.Route_INTER_VRF, VrfId: s.mainVRF, DstNetwork: hostNet(mgmt), ViaVrfId: s.podVRF,
			})
		}
	}
}

// peerSecondFamily adds the connectivity of the second family (IPv6 on a dual-stack
// node) to the other node. With the overlay the IPv6 frames cross the same VXLAN
// tunnel: the peer's BVI gets a static IPv6 neighbour (its BVI MAC; the bridge domain
// floods nothing, so neighbour discovery cannot cross it, as ARP cannot) and the
// routes go via its BVI's IPv6 address. Without the overlay they go in the main VRF via
// the peer's published IPv6 VPP address; a peer that published none gets no IPv6
// routes.
func (b *builder) peerSecondFamily(kvs api.KeyValuePairs, node *nodesync.Node) error {
	f := b.second
	fa, err := b.ipam.NodeAddresses(f.Family, node.ID)
	if err != nil {
		return fmt.Errorf("node %s (ID=%d): %w", node.Name, node.ID, err)
	}
	peerIP := vppIPOfFamily(node, f.Family == ipam.IPv6)
	nextHop := peerIP
	if !b.s.noOverlay {
		if fa.VxlanIP == nil {
			return fmt.Errorf("node %s (ID=%d): the IPAM has no %s VXLAN address", node.Name, node.ID, f.Family)
		}
		nextHop = fa.VxlanIP
		addVPPARP(kvs, &vppl3.ARPEntry{
			Interface: VxlanBVIInterfaceName, IpAddress: fa.VxlanIP.String(),
			PhysAddress: nodeMAC(vxlanBVIMACPrefix, node.ID), Static: true,
		})
	}
	if nextHop == nil {
		return nil
	}
	var podSubnet *net.IPNet
	if !b.s.externalIPAM {
		podSubnet = fa.PodSubnet
	}
	b.peerRoutes(kvs, node, nextHop, peerIP, podSubnet, fa.HostInterconnectSubnet)
	return nil
}

// connectedPeerIDs returns the sorted IDs of the peers that get connectivity, given
// that this node has an IP (none otherwise: tunnels need a source address).
func (b *builder) connectedPeerIDs(peers map[string]*nodesync.Node) []uint32 {
	if b.nodeIP == nil {
		return nil
	}
	var ids []uint32
	for _, node := range peers {
		if b.s.connectable(node) {
			ids = append(ids, node.ID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

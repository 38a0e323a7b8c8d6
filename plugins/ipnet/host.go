package ipnet

import (
	"fmt"
	"net"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Names of this node's interfaces and bridge domain besides the exported ones.
const (
	// loopbackNICName names the loopback that carries the node IP when VPP has no
	// main NIC.
	loopbackNICName = "loopbackNIC"
	// podGwLoopName names the loopback holding the pod gateway IP; every pod-facing
	// VPP interface is unnumbered to it.
	podGwLoopName = "podGwLoop"
	// vxlanBDName names the bridge domain of the VXLAN overlay.
	vxlanBDName = "vxlanBD"

	// VETH mode of the VPP-host interconnect.
	hostVeth1Name     = "veth-vpp1" // the host end, with the Linux IP
	hostVeth1HostName = "vpp1"
	hostVeth2Name     = "veth-vpp2" // the end VPP attaches to with AF_PACKET
	hostVeth2HostName = "vpp2"
	hostAfPacketName  = "afpacket-vpp2"
)

// Constants of the VXLAN overlay.
const (
	vxlanVNI               = 10
	vxlanSplitHorizonGroup = 1
)

// hostInterconnectVPPName returns the logical name of the VPP side of the VPP-host
// interconnect.
func (s *settings) hostInterconnectVPPName() string {
	if s.useTAP {
		return HostInterconnectTAPinVPPLogicalName
	}
	return hostAfPacketName
}

// hostInterconnectLinuxName returns the logical name of the Linux side of the VPP-host
// interconnect (the one with the Linux IP).
func (s *settings) hostInterconnectLinuxName() string {
	if s.useTAP {
		return HostInterconnectTAPinLinuxLogicalName
	}
	return hostVeth1Name
}

// nodeLocal returns the configuration of this node that does not depend on other nodes
// or pods (docs/dev-guide/UPSTREAM.md §2 items 1, 2, 4-7): NICs, the VPP-host interconnect, VRFs, the
// inter-VRF and drop routes, the neighbour scan, the pod gateway loopback and the
// VXLAN BVI. The bridge domain is added by vxlanBD.
func (b *builder) nodeLocal(hostIPs []net.IP) (api.KeyValuePairs, error) {
	kvs := make(api.KeyValuePairs)
	b.mainNIC(kvs)
	b.otherNICs(kvs)
	if err := b.hostInterconnect(kvs, hostIPs); err != nil {
		return nil, err
	}
	b.stnExtras(kvs)
	if err := b.vrfs(kvs); err != nil {
		return nil, err
	}
	b.neighborScan(kvs)
	if err := b.podGwLoop(kvs); err != nil {
		return nil, err
	}
	if !b.s.noOverlay {
		if err := b.vxlanBVI(kvs); err != nil {
			return nil, err
		}
	}
	return kvs, nil
}

// mainNIC adds the main NIC (or the loopback standing in for it) with the node IP,
// and the static default route.
func (b *builder) mainNIC(kvs api.KeyValuePairs) {
	s := b.s
	var ips []string
	if b.nodeIP != nil && (!s.useDHCP || s.mainIfName == "") {
		ips = b.mainIPs() // with DHCP the NIC gets its address from the lease, not from us
	}
	if s.mainIfName == "" {
		addVPPIf(kvs, &vppif.Interface{
			Name: loopbackNICName, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			Vrf: s.mainVRF, IpAddresses: ips,
		})
		return
	}
	nic := &vppif.Interface{
		Name: s.mainIfName, Type: s.mainIfType, Enabled: true, Vrf: s.mainVRF,
		IpAddresses: ips, SetDhcpClient: s.useDHCP,
	}
	if s.mainIfType == vppif.Interface_AF_PACKET {
		stnAFPacket(kvs, nic, s.stolen)
	}
	addVPPIf(kvs, nic)
	if !s.useDHCP && s.staticGW != nil {
		addVPPRoute(kvs, &vppl3.Route{
			VrfId: s.mainVRF, DstNetwork: anyNet(s.staticGW), NextHopAddr: s.staticGW.String(),
			OutgoingInterface: s.mainIfName,
		})
	}
}

// mainIPs returns the addresses of the main interface: the configured ones, else the
// node IP.
func (b *builder) mainIPs() []string {
	if len(b.s.configuredIPs) > 0 {
		ips := make([]string, 0, len(b.s.configuredIPs))
		for _, ip := range b.s.configuredIPs {
			ips = append(ips, withPrefixOf(ip.Address, ip.Network))
		}
		return ips
	}
	ips := []string{b.nodeIP.String()}
	if f := b.second; f != nil && f.NodeIP != nil && f.NodeNetwork != nil {
		ips = append(ips, withPrefixOf(f.NodeIP, f.NodeNetwork)) // dual-stack: the node's IPv6 too
	}
	return ips
}

// otherNICs adds the other VPP NICs of this node with their IPs or DHCP.
func (b *builder) otherNICs(kvs api.KeyValuePairs) {
	for _, o := range b.s.otherIfs {
		nic := &vppif.Interface{
			Name: o.InterfaceName, Type: vppif.Interface_DPDK, Enabled: true, Vrf: b.s.mainVRF,
			SetDhcpClient: o.UseDHCP,
		}
		if !o.UseDHCP {
			for _, ip := range o.IPs {
				nic.IpAddresses = append(nic.IpAddresses, withPrefixOf(ip.Address, ip.Network))
			}
		}
		addVPPIf(kvs, nic)
	}
}

// hostInterconnect adds the VPP-host interconnect (TAP, or VETH pair + AF_PACKET),
// the VPP routes to the host's own IPs and the Linux routes to the pods (and
// services) via VPP.
func (b *builder) hostInterconnect(kvs api.KeyValuePairs, hostIPs []net.IP) error {
	s := b.s
	subnet := b.ipam.HostInterconnectSubnetThisNode()
	vppEnd, linuxEnd := b.ipam.HostInterconnectIPInVPP(), b.ipam.HostInterconnectIPInLinux()
	if subnet == nil || vppEnd == nil || linuxEnd == nil {
		return fmt.Errorf("VPP-host interconnect: the IPAM does not know this node's VPP-host subnet")
	}
	vppIPs, linuxIPs := []string{withPrefixOf(vppEnd, subnet)}, []string{withPrefixOf(linuxEnd, subnet)}
	if f := b.second; f != nil {
		if f.HostInterconnectSubnet == nil || f.HostInterconnectIPInVPP == nil || f.HostInterconnectIPInLinux == nil {
			return fmt.Errorf("VPP-host interconnect: the IPAM does not know this node's %s VPP-host subnet", f.Family)
		}
		vppIPs = append(vppIPs, withPrefixOf(f.HostInterconnectIPInVPP, f.HostInterconnectSubnet))
		linuxIPs = append(linuxIPs, withPrefixOf(f.HostInterconnectIPInLinux, f.HostInterconnectSubnet))
	}
	mac := nodeMAC(hostInterconnectMACPrefix, b.nodeID)

	linuxMAC := ""
	if s.stn {
		// STN: the host's end also has the node's addresses, and the MAC that VPP's
		// STN node writes (stn.go).
		linuxIPs, linuxMAC = append(b.stnHostIPs(), linuxIPs...), stnHostMAC
	}
	if s.useTAP {
		addVPPIf(kvs, &vppif.Interface{
			Name: HostInterconnectTAPinVPPLogicalName, Type: vppif.Interface_TAP, Enabled: true,
			PhysAddress: mac, IpAddresses: vppIPs, Vrf: s.mainVRF, Mtu: s.mtu, RxMode: s.rxMode,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{
				Version: 2, HostIfName: HostInterconnectTAPinLinuxHostName,
				RxRingSize: s.tapRxRing, TxRingSize: s.tapTxRing,
			}},
		})
		addLinuxIf(kvs, &linuxif.Interface{
			Name: HostInterconnectTAPinLinuxLogicalName, Type: linuxif.Interface_TAP_TO_VPP,
			HostIfName: HostInterconnectTAPinLinuxHostName, IpAddresses: linuxIPs, PhysAddress: linuxMAC, Mtu: s.mtu, Enabled: true,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: HostInterconnectTAPinVPPLogicalName}},
		})
	} else {
		veth1 := &linuxif.Interface{
			Name: hostVeth1Name, Type: linuxif.Interface_VETH, HostIfName: hostVeth1HostName,
			IpAddresses: linuxIPs, PhysAddress: linuxMAC, Mtu: s.mtu, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: hostVeth2Name}},
		}
		if s.vethCsumDisabled {
			veth1.GetVeth().RxChecksumOffloading = linuxif.VethLink_CHKSM_OFFLOAD_DISABLED
			veth1.GetVeth().TxChecksumOffloading = linuxif.VethLink_CHKSM_OFFLOAD_DISABLED
		}
		addLinuxIf(kvs, veth1)
		addLinuxIf(kvs, &linuxif.Interface{
			Name: hostVeth2Name, Type: linuxif.Interface_VETH, HostIfName: hostVeth2HostName,
			Mtu: s.mtu, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: hostVeth1Name}},
		})
		addVPPIf(kvs, &vppif.Interface{
			Name: hostAfPacketName, Type: vppif.Interface_AF_PACKET, Enabled: true,
			PhysAddress: mac, IpAddresses: vppIPs, Vrf: s.mainVRF, Mtu: s.mtu,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: hostVeth2HostName}},
		})
	}

	// VPP -> host: one host route per address of the host's own links.
	b.vppRoutesToHost(kvs, hostIPs, linuxEnd)

	// host -> VPP: the pods of the whole cluster (and optionally the services).
	podsAll := b.ipam.PodSubnetAllNodes()
	if podsAll == nil {
		return fmt.Errorf("VPP-host interconnect: the IPAM does not know the pod subnet of the cluster")
	}
	b.hostRoutesToVPP(kvs, vppEnd, podsAll, b.ipam.ServiceNetwork(), b.nodeIP)
	if f := b.second; f != nil {
		if f.PodSubnetAllNodes == nil {
			return fmt.Errorf("VPP-host interconnect: the IPAM does not know the %s pod subnet of the cluster", f.Family)
		}
		b.vppRoutesToHost(kvs, hostIPs, f.HostInterconnectIPInLinux)
		var nodeIP *net.IPNet
		if f.NodeIP != nil {
			nodeIP = &net.IPNet{IP: f.NodeIP, Mask: net.CIDRMask(hostPrefixLen(f.NodeIP), hostPrefixLen(f.NodeIP))}
		}
		b.hostRoutesToVPP(kvs, f.HostInterconnectIPInVPP, f.PodSubnetAllNodes, f.ServiceNetwork, nodeIP)
	}
	return nil
}

// vppRoutesToHost adds a VPP route in the main VRF to each address of the host's own
// links of the family of linuxEnd (link-local ones left out) via linuxEnd.
func (b *builder) vppRoutesToHost(kvs api.KeyValuePairs, hostIPs []net.IP, linuxEnd net.IP) {
	for _, ip := range hostIPs {
		if !sameFamily(ip, linuxEnd) || ip.IsLinkLocalUnicast() {
			continue
		}
		addVPPRoute(kvs, &vppl3.Route{
			VrfId: b.s.mainVRF, DstNetwork: hostNet(ip), NextHopAddr: linuxEnd.String(),
			OutgoingInterface: b.s.hostInterconnectVPPName(),
		})
	}
}

// hostRoutesToVPP adds the host's routes via VPP's end vppEnd of one family: to the
// cluster's pod subnet, and with routeServiceCIDRToVPP to the service range (nil: the
// family has none) and the node IP (nil: none).
func (b *builder) hostRoutesToVPP(kvs api.KeyValuePairs, vppEnd net.IP, podsAll, services, nodeIP *net.IPNet) {
	b.hostRouteVia(kvs, podsAll.String(), vppEnd)
	if !b.s.routeServiceCIDR {
		return
	}
	if services != nil {
		b.hostRouteVia(kvs, services.String(), vppEnd)
	}
	if nodeIP != nil {
		b.hostRouteVia(kvs, hostNet(nodeIP.IP), vppEnd)
	}
}

// hostRouteToVPP adds a Linux route in the host to dst via VPP's end of the VPP-host
// interconnect. With routeServiceCIDRToVPP the host reaches the Services through VPP
// (the service CIDR) and the NodePorts of every node (this node's IP and each peer's
// VPP IP, /32): a node without kube-proxy has no other path to them.
func (b *builder) hostRouteToVPP(kvs api.KeyValuePairs, dst string) {
	b.hostRouteVia(kvs, dst, b.ipam.HostInterconnectIPInVPP())
}

// hostRouteVia adds a Linux route in the host to dst via vppEnd, VPP's end of the
// VPP-host interconnect (of the family of dst).
func (b *builder) hostRouteVia(kvs api.KeyValuePairs, dst string, vppEnd net.IP) {
	addLinuxRoute(kvs, &linuxl3.Route{
		OutgoingInterface: b.s.hostInterconnectLinuxName(), Scope: linuxl3.Route_GLOBAL,
		DstNetwork: dst, GwAddr: vppEnd.String(),
	})
}

// vrfs adds the VRF tables and the routes between them: pod VRF default route to the
// main VRF; with the overlay also this node's host subnet pod->main, the cluster pod
// and host subnets main->pod and drop routes for both in the pod VRF (so that traffic
// to an unknown pod or host subnet does not loop back through the default route);
// without the overlay only this node's pod subnet main->pod.
func (b *builder) vrfs(kvs api.KeyValuePairs) error {
	podsAll, hostsAll := b.ipam.PodSubnetAllNodes(), b.ipam.HostInterconnectSubnetAllNodes()
	if podsAll == nil || hostsAll == nil {
		return fmt.Errorf("inter-VRF routes: the IPAM does not know the cluster subnets")
	}
	podsHere, hostsHere := b.ipam.PodSubnetThisNode(), b.ipam.HostInterconnectSubnetThisNode()
	if err := b.vrfsOf(kvs, podsAll, hostsAll, podsHere, hostsHere); err != nil {
		return err
	}
	if f := b.second; f != nil {
		if f.PodSubnetAllNodes == nil || f.HostInterconnectSubnetAllNodes == nil {
			return fmt.Errorf("inter-VRF routes: the IPAM does not know the %s cluster subnets", f.Family)
		}
		return b.vrfsOf(kvs, f.PodSubnetAllNodes, f.HostInterconnectSubnetAllNodes, f.PodSubnet, f.HostInterconnectSubnet)
	}
	return nil
}

// vrfsOf adds the VRF tables and the routes between them of the family of podsAll
// (see vrfs), given the cluster's and this node's pod and VPP-host subnets of it.
func (b *builder) vrfsOf(kvs api.KeyValuePairs, podsAll, hostsAll, podsHere, hostsHere *net.IPNet) error {
	s := b.s
	family, proto := "IPv4", vppl3.VrfTable_IPV4
	if podsAll.IP.To4() == nil {
		family, proto = "IPv6", vppl3.VrfTable_IPV6
	}
	addVrf(kvs, &vppl3.VrfTable{Id: s.mainVRF, Protocol: proto, Label: mainVRFLabel + "-" + family})
	addVrf(kvs, &vppl3.VrfTable{Id: s.podVRF, Protocol: proto, Label: podVRFLabel + "-" + family})

	interVRF := func(from, to uint32, dst string) {
		addVPPRoute(kvs, &vppl3.Route{Type: vppl3.Route_INTER_VRF, VrfId: from, DstNetwork: dst, ViaVrfId: to})
	}
	interVRF(s.podVRF, s.mainVRF, anyNet(podsAll.IP))
	if s.noOverlay {
		if podsHere == nil {
			return fmt.Errorf("inter-VRF routes: the IPAM does not know this node's %s pod subnet", family)
		}
		interVRF(s.mainVRF, s.podVRF, podsHere.String())
		return nil
	}
	if hostsHere == nil {
		return fmt.Errorf("inter-VRF routes: the IPAM does not know this node's %s VPP-host subnet", family)
	}
	interVRF(s.podVRF, s.mainVRF, hostsHere.String())
	interVRF(s.mainVRF, s.podVRF, podsAll.String())
	interVRF(s.mainVRF, s.podVRF, hostsAll.String())
	for _, dst := range []string{podsAll.String(), hostsAll.String()} {
		addVPPRoute(kvs, &vppl3.Route{Type: vppl3.Route_DROP, VrfId: s.podVRF, DstNetwork: dst})
	}
	return nil
}

// neighborScan adds the IP neighbour scan when it is enabled.
func (b *builder) neighborScan(kvs api.KeyValuePairs) {
	if !b.s.scanNeighbors {
		return
	}
	mode := vppl3.IPScanNeighbor_IPV4
	switch {
	case b.second != nil:
		mode = vppl3.IPScanNeighbor_BOTH
	case b.s.ipv6:
		mode = vppl3.IPScanNeighbor_IPV6
	}
	kvs[vppl3.IPScanNeighborKey] = &vppl3.IPScanNeighbor{
		Mode: mode, ScanInterval: b.s.scanInterval, StaleThreshold: b.s.staleThreshold,
	}
}

// podGwLoop adds the loopback with the pod gateway IP in the pod VRF.
func (b *builder) podGwLoop(kvs api.KeyValuePairs) error {
	gw, subnet := b.ipam.PodGatewayIP(), b.ipam.PodSubnetThisNode()
	if gw == nil || subnet == nil {
		return fmt.Errorf("pod gateway: the IPAM does not know this node's pod subnet")
	}
	ips := []string{withPrefixOf(gw, subnet)}
	if f := b.second; f != nil {
		if f.PodGatewayIP == nil || f.PodSubnet == nil {
			return fmt.Errorf("pod gateway: the IPAM does not know this node's %s pod subnet", f.Family)
		}
		ips = append(ips, withPrefixOf(f.PodGatewayIP, f.PodSubnet))
	}
	addVPPIf(kvs, &vppif.Interface{
		Name: podGwLoopName, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
		Vrf: b.s.podVRF, IpAddresses: ips,
	})
	return nil
}

// vxlanBVI adds the BVI of the VXLAN bridge domain: a loopback in the pod VRF with
// this node's VXLAN IP and a MAC derived from the node ID.
func (b *builder) vxlanBVI(kvs api.KeyValuePairs) error {
	ip, network, err := b.ipam.VxlanIPAddress(b.nodeID)
	if err != nil {
		return fmt.Errorf("VXLAN BVI of node ID=%d: %w", b.nodeID, err)
	}
	ips := []string{withPrefixOf(ip, network)}
	if f := b.second; f != nil {
		if f.VxlanIP == nil || f.VxlanNetwork == nil {
			return fmt.Errorf("VXLAN BVI of node ID=%d: the IPAM has no %s VXLAN address", b.nodeID, f.Family)
		}
		ips = append(ips, withPrefixOf(f.VxlanIP, f.VxlanNetwork))
	}
	addVPPIf(kvs, &vppif.Interface{
		Name: VxlanBVIInterfaceName, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
		PhysAddress: nodeMAC(vxlanBVIMACPrefix, b.nodeID), Vrf: b.s.podVRF,
		IpAddresses: ips,
	})
	return nil
}

// vxlanBD returns the VXLAN bridge domain: learning and flooding off, forwarding on,
// the BVI, and the tunnel to each of the given peers in split-horizon group 1 (so that
// nothing is forwarded from one tunnel to another).
func (b *builder) vxlanBD(peerIDs []uint32) *vppl2.BridgeDomain {
	bd := &vppl2.BridgeDomain{
		Name: vxlanBDName, Learn: false, Forward: true, Flood: false, UnknownUnicastFlood: false,
		Interfaces: []*vppl2.BridgeDomain_Interface{{Name: VxlanBVIInterfaceName, BridgedVirtualInterface: true}},
	}
	for _, id := range peerIDs {
		bd.Interfaces = append(bd.Interfaces, &vppl2.BridgeDomain_Interface{
			Name: vxlanIfName(id), SplitHorizonGroup: vxlanSplitHorizonGroup,
		})
	}
	return bd
}

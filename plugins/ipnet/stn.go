package ipnet

import (
	"encoding/binary"
	"net"

	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vppstn "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Single-NIC nodes (STN): VPP owns the only NIC and the node's address on it; the host
// keeps the same address on the Linux side of the host interconnect and reaches
// everything through VPP. The interconnect keeps its own subnet too: the host's routes
// to pods, Services and other nodes go via VPP's end of it, so their source is the
// host's interconnect address, which the other nodes route back through the overlay
// (with the node IP as source, a remote pod's reply would leave its node by the NIC,
// SNATed). Only the host's default route, via the NIC's gateway, uses the node IP. The host side of the takeover (recording the NIC's
// configuration, taking it off the NIC, giving it back when VPP dies) is pkg/stn's;
// contivconf hands ipnet the stolen NIC's addresses and default gateway.
//
//	wire ── NIC (node IP, VPP) ──┬── VPP consumes it (ARP, ICMP echo, VXLAN, NAT'd Services)
//	                             └── punted (TCP, UDP to no VPP port, ...): STN rule ──> tap-vpp2 ──> vpp1 (node IP, host)
//	host (vpp1: node IP/len + interconnect IP, MAC 00:00:00:00:00:02) ── default route via
//	     the NIC's gateway, proxy-ARPed by VPP on tap-vpp2 ──> VPP ──> NIC ──> wire
//	     pods, Services, other nodes via VPP's interconnect IP (as without STN)

// stnHostMAC is the MAC of the host side of the interconnect in STN mode: VPP's STN
// node writes it as the destination of every frame it hands to the host (stn.c,
// stn_hw_addr_dst), so the host side must own it.
const stnHostMAC = "00:00:00:00:00:02"

// stnAFPacket makes the main interface an af_packet on the stolen NIC's link (a VPP
// without DPDK: af_packet_create_v3 on host_if_name, VPP's interface host-<link>), with
// the NIC's own MAC, so that the wire's ARP caches stay right across a takeover and a
// give-back. The kernel keeps the link up but neither answers ARP on it nor accepts its
// packets (pkg/stn's Steal), so only VPP consumes the frames. The link itself is the
// host's: a HostLink value states that it exists, which the af_packet waits for
// (vpp-stn-host-link derives linux/interface/host-name/<link>).
func stnAFPacket(kvs api.KeyValuePairs, nic *vppif.Interface, stolen *contivconf.StolenInterfaceInfo) {
	kvs[vppstn.HostLinkKey(stolen.LinkName)] = &vppstn.HostLink{Name: stolen.LinkName}
	nic.Link = &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: stolen.LinkName}}
	if len(stolen.MAC) == 6 {
		nic.PhysAddress = stolen.MAC.String()
	}
}

// stnHostIPs returns the node's addresses for the host's end of the interconnect (none
// while the node has no address). An IPv6 address goes there as a /128: the host could
// not resolve its on-link neighbours through VPP (stnIPv6), so its subnet is routed
// via VPP instead of being on the link.
func (b *builder) stnHostIPs() []string {
	if b.nodeIP == nil {
		return nil
	}
	var out []string
	for _, ip := range b.nodeAddrs() {
		if ip.IP.To4() == nil {
			out = append(out, ip.IP.String()+"/128")
			continue
		}
		out = append(out, ip.String())
	}
	return out
}

// stnHostAddrs returns the host's addresses on its end of the interconnect in STN mode:
// the stolen NIC's, every family (the host link listing leaves vpp* links out, and
// GetHostIPs must still name them: they are the host's own).
func (b *builder) stnHostAddrs() []net.IP {
	if !b.s.stn || b.nodeIP == nil {
		return nil
	}
	var out []net.IP
	for _, ip := range b.nodeAddrs() {
		out = append(out, ip.IP)
	}
	return out
}

// stnExtras adds what STN mode needs besides the interconnect itself: one STN rule per
// node address toward the interconnect, proxy ARP on the interconnect for the node's
// subnet (so the host resolves its gateway and neighbours to VPP), a static neighbour
// for the host's MAC, the host's default route via the NIC's gateway through VPP, and
// the NIC's other recorded routes (stnRoutes). Nothing while the node has no address
// (DHCP without a lease).
func (b *builder) stnExtras(kvs api.KeyValuePairs) {
	s := b.s
	if !s.stn || b.nodeIP == nil {
		return
	}
	vppSide, linuxSide := s.hostInterconnectVPPName(), s.hostInterconnectLinuxName()
	for _, ip := range b.nodeAddrs() {
		kvs[vppstn.RuleKey(vppSide, ip.IP.String())] = &vppstn.Rule{IpAddress: ip.IP.String(), Interface: vppSide}
		addVPPARP(kvs, &vppl3.ARPEntry{Interface: vppSide, IpAddress: ip.IP.String(), PhysAddress: stnHostMAC, Static: true})
	}
	var ranges []*vppl3.ProxyARP_Range
	if first, last, ok := hostRange(b.nodeIP); ok {
		ranges = append(ranges, &vppl3.ProxyARP_Range{FirstIpAddr: first.String(), LastIpAddr: last.String(), VrfId: s.mainVRF})
	}
	ranges = append(ranges, b.stnRoutes(kvs)...)
	if len(ranges) > 0 {
		kvs[vppl3.ProxyARPKey] = &vppl3.ProxyARP{Interfaces: []*vppl3.ProxyARP_Interface{{Name: vppSide}}, Ranges: ranges}
	}
	switch nh6 := b.stnNextHop6(); {
	case s.staticGW == nil:
	case s.staticGW.To4() != nil:
		addLinuxRoute(kvs, &linuxl3.Route{
			OutgoingInterface: linuxSide, Scope: linuxl3.Route_GLOBAL,
			DstNetwork: anyNet(s.staticGW), GwAddr: s.staticGW.String(),
		})
	case nh6 != nil:
		addLinuxRoute(kvs, &linuxl3.Route{
			OutgoingInterface: linuxSide, Scope: linuxl3.Route_GLOBAL, DstNetwork: anyNet(s.staticGW), GwAddr: nh6.String(),
		})
	}
	b.stnIPv6(kvs)
}

// IPv6 in STN mode. VPP owns the node's IPv6 addresses on the NIC as it owns the IPv4
// one: it answers the wire's neighbour solicitations for them itself (they are its
// interface addresses, ip6_nd.c), consumes what it handles and punts the rest to the
// host through the STN rule. The other way, the host cannot resolve anything through
// VPP by neighbour discovery: Linux sends a solicitation from the source of the packet
// that triggered it when that address is on the link (ndisc_solicit), here the node's
// own address, and VPP drops a solicitation whose source is not on link, which one of
// its own addresses never is (ip6_nd.c: the source must resolve to an adjacency on the
// receiving interface; ip6_src_lookup_for_packet finds the receive entry of the NIC's
// address). Proxy ND (ip6nd_proxy_add_del) answers a target, not a source, so it cannot
// help. The host therefore has one IPv6 next hop, VPP's IPv6 address on the
// interconnect, with a static neighbour entry for VPP's MAC there, and routes every
// IPv6 destination of the NIC through it: the node's subnet (the node's address is a
// /128 on the host's end), the NIC's recorded IPv6 routes (stnRoutes) and the IPv6
// default route. VPP routes them as the NIC had them. Without an IPv6 address on VPP's
// end of the interconnect (an IPv4-only cluster) VPP does not accept IPv6 from the host
// at all (ip6 not enabled there), and none of this is configured.

// stnNextHop6 returns the host's IPv6 next hop in STN mode: VPP's IPv6 address on the
// interconnect, nil when it has none.
func (b *builder) stnNextHop6() net.IP {
	if ip := b.ipam.HostInterconnectIPInVPP(); ip != nil && ip.To4() == nil {
		return ip
	}
	if f := b.second; f != nil && f.HostInterconnectIPInVPP != nil && f.HostInterconnectIPInVPP.To4() == nil {
		return f.HostInterconnectIPInVPP
	}
	return nil
}

// stnIPv6 adds the host's static neighbour entry for its IPv6 next hop and the routes to
// the node's IPv6 subnets through it (nothing without the next hop).
func (b *builder) stnIPv6(kvs api.KeyValuePairs) {
	nh6 := b.stnNextHop6()
	if nh6 == nil {
		return
	}
	linuxSide := b.s.hostInterconnectLinuxName()
	addLinuxARP(kvs, &linuxl3.ARPEntry{
		Interface: linuxSide, IpAddress: nh6.String(), HwAddress: nodeMAC(hostInterconnectMACPrefix, b.nodeID),
	})
	for _, ip := range b.nodeAddrs() {
		if ip.IP.To4() != nil {
			continue
		}
		addLinuxRoute(kvs, &linuxl3.Route{
			OutgoingInterface: linuxSide, Scope: linuxl3.Route_GLOBAL,
			DstNetwork: (&net.IPNet{IP: ip.IP.Mask(ip.Mask), Mask: ip.Mask}).String(), GwAddr: nh6.String(),
		})
	}
}

// stnRoutes mirrors the stolen NIC's other routes (contivconf leaves the default route
// out: staticGW stands for it): VPP routes them out of the NIC, and the host routes
// them to VPP on its end of the interconnect. A route via a gateway stays via that
// gateway on both sides (the host resolves it to VPP by proxy ARP, as its default
// gateway); a route on the link is attached out of the NIC in VPP and on the link on
// the host, and its addresses join the proxy ARP ranges returned, so the host resolves
// them to VPP too. An IPv6 route goes the same way in VPP; the host routes it via its
// IPv6 next hop (stnIPv6), and without one it is left out. A route whose gateway is of
// the other family than its destination is left out too.
func (b *builder) stnRoutes(kvs api.KeyValuePairs) []*vppl3.ProxyARP_Range {
	s := b.s
	if s.stolen == nil || s.mainIfName == "" {
		return nil
	}
	nh6 := b.stnNextHop6()
	var ranges []*vppl3.ProxyARP_Range
	for _, rt := range s.stolen.Routes {
		if rt.Dst == nil || (rt.Gw != nil && !sameFamily(rt.Gw, rt.Dst.IP)) {
			continue
		}
		v6 := rt.Dst.IP.To4() == nil
		if v6 && nh6 == nil {
			continue
		}
		dst := rt.Dst.String()
		vppRoute := &vppl3.Route{VrfId: s.mainVRF, DstNetwork: dst, OutgoingInterface: s.mainIfName}
		hostRoute := &linuxl3.Route{OutgoingInterface: s.hostInterconnectLinuxName(), DstNetwork: dst, Scope: linuxl3.Route_LINK}
		switch {
		case v6:
			hostRoute.GwAddr, hostRoute.Scope = nh6.String(), linuxl3.Route_GLOBAL
			if rt.Gw != nil {
				vppRoute.NextHopAddr = rt.Gw.String()
			}
		case rt.Gw != nil:
			vppRoute.NextHopAddr, hostRoute.GwAddr, hostRoute.Scope = rt.Gw.String(), rt.Gw.String(), linuxl3.Route_GLOBAL
		default:
			first, last := linkRange(rt.Dst)
			ranges = append(ranges, &vppl3.ProxyARP_Range{FirstIpAddr: first.String(), LastIpAddr: last.String(), VrfId: s.mainVRF})
		}
		addVPPRoute(kvs, vppRoute)
		addLinuxRoute(kvs, hostRoute)
	}
	return ranges
}

// nodeAddrs returns the node's addresses on the NIC with their networks.
func (b *builder) nodeAddrs() []*net.IPNet {
	if len(b.s.configuredIPs) == 0 || b.s.useDHCP {
		return []*net.IPNet{b.nodeIP}
	}
	out := make([]*net.IPNet, 0, len(b.s.configuredIPs))
	for _, ip := range b.s.configuredIPs {
		out = append(out, &net.IPNet{IP: ip.Address, Mask: ip.Network.Mask})
	}
	return out
}

// linkRange returns the addresses an IPv4 route on the link reaches: its hosts
// (hostRange), or for a /31 or /32 every address of it.
func linkRange(dst *net.IPNet) (first, last net.IP) {
	if first, last, ok := hostRange(dst); ok {
		return first, last
	}
	first = dst.IP.Mask(dst.Mask).To4()
	last = make(net.IP, 4)
	for i := range last {
		last[i] = first[i] | ^dst.Mask[len(dst.Mask)-4+i]
	}
	return first, last
}

// hostRange returns the first and last host addresses of an IPv4 address's subnet
// (network and broadcast excluded); ok is false for IPv6 (no ARP) and for subnets
// without hosts (/31, /32).
func hostRange(ip *net.IPNet) (first, last net.IP, ok bool) {
	v4 := ip.IP.To4()
	ones, bits := ip.Mask.Size()
	if v4 == nil || bits != 32 || ones > 30 {
		return nil, nil, false
	}
	network := binary.BigEndian.Uint32(v4.Mask(ip.Mask))
	size := uint32(1) << (32 - ones)
	first, last = make(net.IP, 4), make(net.IP, 4)
	binary.BigEndian.PutUint32(first, network+1)
	binary.BigEndian.PutUint32(last, network+size-2)
	return first, last, true
}

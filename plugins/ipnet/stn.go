package ipnet

import (
	"encoding/binary"
	"net"

	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vppstn "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
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

// stnHostIPs returns the node's addresses for the host's end of the interconnect (none
// while the node has no address).
func (b *builder) stnHostIPs() []string {
	if b.nodeIP == nil {
		return nil
	}
	var out []string
	for _, ip := range b.nodeAddrs() {
		out = append(out, ip.String())
	}
	return out
}

// stnExtras adds what STN mode needs besides the interconnect itself: one STN rule per
// node address toward the interconnect, proxy ARP on the interconnect for the node's
// subnet (so the host resolves its gateway and neighbours to VPP), a static neighbour
// for the host's MAC, and the host's default route via the NIC's gateway through VPP.
// Nothing while the node has no address (DHCP without a lease).
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
	if first, last, ok := hostRange(b.nodeIP); ok {
		kvs[vppl3.ProxyARPKey] = &vppl3.ProxyARP{
			Interfaces: []*vppl3.ProxyARP_Interface{{Name: vppSide}},
			Ranges:     []*vppl3.ProxyARP_Range{{FirstIpAddr: first.String(), LastIpAddr: last.String(), VrfId: s.mainVRF}},
		}
	}
	if s.staticGW != nil {
		addLinuxRoute(kvs, &linuxl3.Route{
			OutgoingInterface: linuxSide, Scope: linuxl3.Route_GLOBAL,
			DstNetwork: anyNet(s.staticGW), GwAddr: s.staticGW.String(),
		})
	}
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

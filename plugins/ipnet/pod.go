package ipnet

import (
	"fmt"
	"hash/fnv"
	"net"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// Naming of the pod wiring.
const (
	// podLoopHostName is the kernel name of the pod's loopback.
	podLoopHostName = "lo"

	podVPPTapPrefix   = "vpp-tap-"
	podLinuxTapPrefix = "linux-tap-"
	podLoopPrefix     = "linux-loop-"
	podVeth1Prefix    = "veth1-"
	podVeth2Prefix    = "veth2-"
	podAfPacketPrefix = "afpacket"

	// logicalNameMaxLen is the longest logical interface name (VPP keeps the name as
	// the interface tag, at most 63 characters).
	logicalNameMaxLen = 63
	// linuxHostNameMaxLen is the longest Linux interface name (IFNAMSIZ - 1).
	linuxHostNameMaxLen = 15
)

// Addresses of the pod's loopback.
var podLoopIPs = []string{"127.0.0.1/8", "::1/128"}

// localPod is a pod that ipnet wired: enough to build (and so to remove) its
// configuration again.
type localPod struct {
	id          podmodel.ID
	containerID string
	netns       string
	// ips are the pod's addresses (/32, /128), one per family, the primary first.
	ips []*net.IPNet
	// ifName is the kernel name of the pod's interface inside the pod (CNI_IFNAME;
	// "" means podmanager.DefaultIfName).
	ifName string
}

// hostIfName is the kernel name of the pod's interface inside the pod.
func (p *localPod) hostIfName() string {
	if p.ifName == "" {
		return podmanager.DefaultIfName
	}
	return p.ifName
}

// trimName cuts name to at most max bytes.
func trimName(name string, max int) string {
	if len(name) > max {
		return name[:max]
	}
	return name
}

func podVPPTapName(cid string) string   { return trimName(podVPPTapPrefix+cid, logicalNameMaxLen) }
func podLinuxTapName(cid string) string { return trimName(podLinuxTapPrefix+cid, logicalNameMaxLen) }
func podLoopName(cid string) string     { return trimName(podLoopPrefix+cid, logicalNameMaxLen) }
func podVeth1Name(cid string) string    { return trimName(podVeth1Prefix+cid, logicalNameMaxLen) }
func podVeth2Name(cid string) string    { return trimName(podVeth2Prefix+cid, logicalNameMaxLen) }
func podVeth2HostName(cid string) string {
	return trimName(cid, linuxHostNameMaxLen)
}
func podAfPacketName(cid string) string {
	return trimName(podAfPacketPrefix+podVeth2Name(cid), logicalNameMaxLen)
}

// podIfNames returns the logical names of the VPP side and the Linux (pod) side of the
// pod's interface.
func (s *settings) podIfNames(cid string) (vppSide, linuxSide string) {
	if s.useTAP {
		return podVPPTapName(cid), podLinuxTapName(cid)
	}
	return podAfPacketName(cid), podVeth1Name(cid)
}

// podMAC returns the MAC of the pod's side of its interface: 02:fe followed by the
// FNV-32a hash of the container ID; the VPP side gets the bitwise NOT of the hash, so
// both are stable across restarts and differ from each other.
func podMAC(cid string, vppSide bool) string {
	h := fnv.New32a()
	h.Write([]byte(cid))
	sum := h.Sum(nil)
	mac := net.HardwareAddr{0x02, 0xfe, sum[0], sum[1], sum[2], sum[3]}
	if vppSide {
		for i := 2; i < len(mac); i++ {
			mac[i] = ^mac[i]
		}
	}
	return mac.String()
}

// podNamespace is the reference to the pod's network namespace.
func podNamespace(p *localPod) *linuxif.NetNamespace {
	return &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: p.netns}
}

// pod returns the configuration wiring one pod to VPP (docs/dev-guide/UPSTREAM.md §3): the interface pair
// (TAP, or VETH pair + AF_PACKET) unnumbered to podGwLoop in the pod VRF, the pod's
// loopback, and per address of the pod (one per family, dual-stack: IPv4 and IPv6) in
// the pod a static neighbour entry for the gateway of that family (the VPP side's MAC),
// a link route to the gateway and the default route via it, in VPP a static neighbour
// entry and a host route for the pod address; with an external IPAM (single-stack
// only) a host route to the pod.
func (b *builder) pod(p *localPod) (api.KeyValuePairs, error) {
	s := b.s
	if len(p.ips) == 0 || p.ips[0] == nil {
		return nil, fmt.Errorf("pod %s: no IP", p.id)
	}
	gws := make([]net.IP, len(p.ips))
	podIPs := make([]string, len(p.ips))
	for i, ip := range p.ips {
		if gws[i] = b.podGateway(ip.IP); gws[i] == nil {
			return nil, fmt.Errorf("pod %s: the IPAM does not know the pod gateway of %s", p.id, ip)
		}
		podIPs[i] = ip.String()
	}
	kvs := make(api.KeyValuePairs)
	cid := p.containerID
	vppSide, linuxSide := s.podIfNames(cid)
	vppMAC, linuxMAC := podMAC(cid, true), podMAC(cid, false)
	unnumbered := &vppif.Interface_Unnumbered{InterfaceWithIp: podGwLoopName}

	if s.useTAP {
		addVPPIf(kvs, &vppif.Interface{
			Name: vppSide, Type: vppif.Interface_TAP, Enabled: true, PhysAddress: vppMAC,
			Vrf: s.podVRF, Mtu: s.mtu, Unnumbered: unnumbered, RxMode: s.rxMode,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{
				Version: 2, HostIfName: p.hostIfName(), HostNamespace: p.netns,
				RxRingSize: s.tapRxRing, TxRingSize: s.tapTxRing,
			}},
		})
		addLinuxIf(kvs, &linuxif.Interface{
			Name: linuxSide, Type: linuxif.Interface_TAP_TO_VPP, Namespace: podNamespace(p),
			HostIfName: p.hostIfName(), PhysAddress: linuxMAC, IpAddresses: podIPs,
			Mtu: s.mtu, Enabled: true,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: vppSide}},
		})
	} else {
		veth1 := &linuxif.Interface{
			Name: linuxSide, Type: linuxif.Interface_VETH, Namespace: podNamespace(p),
			HostIfName: p.hostIfName(), PhysAddress: linuxMAC, IpAddresses: podIPs,
			Mtu: s.mtu, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: podVeth2Name(cid)}},
		}
		if s.vethCsumDisabled {
			veth1.GetVeth().RxChecksumOffloading = linuxif.VethLink_CHKSM_OFFLOAD_DISABLED
			veth1.GetVeth().TxChecksumOffloading = linuxif.VethLink_CHKSM_OFFLOAD_DISABLED
		}
		addLinuxIf(kvs, veth1)
		addLinuxIf(kvs, &linuxif.Interface{
			Name: podVeth2Name(cid), Type: linuxif.Interface_VETH, HostIfName: podVeth2HostName(cid),
			Mtu: s.mtu, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: linuxSide}},
		})
		addVPPIf(kvs, &vppif.Interface{
			Name: vppSide, Type: vppif.Interface_AF_PACKET, Enabled: true, PhysAddress: vppMAC,
			Vrf: s.podVRF, Mtu: s.mtu, Unnumbered: unnumbered,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: podVeth2HostName(cid)}},
		})
	}
	addLinuxIf(kvs, &linuxif.Interface{
		Name: podLoopName(cid), Type: linuxif.Interface_LOOPBACK, Namespace: podNamespace(p),
		HostIfName: podLoopHostName, IpAddresses: append([]string(nil), podLoopIPs...), Enabled: true,
	})

	for i, ip := range p.ips {
		gw := gws[i]
		// Inside the pod: the gateway is on the link (the pod's own prefix is a host
		// prefix), answers with the VPP side's MAC and is the default route. For IPv6
		// the gateway is the global address of podGwLoop, as for IPv4, and the static
		// neighbour spares the pod its neighbour solicitation.
		addLinuxARP(kvs, &linuxl3.ARPEntry{Interface: linuxSide, IpAddress: gw.String(), HwAddress: vppMAC})
		addLinuxRoute(kvs, &linuxl3.Route{OutgoingInterface: linuxSide, Scope: linuxl3.Route_LINK, DstNetwork: hostNet(gw)})
		addLinuxRoute(kvs, &linuxl3.Route{
			OutgoingInterface: linuxSide, Scope: linuxl3.Route_GLOBAL, DstNetwork: anyNet(gw), GwAddr: gw.String(),
		})

		// In VPP: the pod's MAC and the route to it.
		addVPPARP(kvs, &vppl3.ARPEntry{Interface: vppSide, IpAddress: ip.IP.String(), PhysAddress: linuxMAC, Static: true})
		addVPPRoute(kvs, &vppl3.Route{
			VrfId: s.podVRF, DstNetwork: podIPs[i], NextHopAddr: ip.IP.String(), OutgoingInterface: vppSide,
		})
	}

	if s.externalIPAM {
		vppEnd := b.ipam.HostInterconnectIPInVPP()
		if vppEnd == nil {
			return nil, fmt.Errorf("pod %s: the IPAM does not know the VPP end of the VPP-host interconnect", p.id)
		}
		addLinuxRoute(kvs, &linuxl3.Route{
			OutgoingInterface: s.hostInterconnectLinuxName(), Scope: linuxl3.Route_GLOBAL,
			DstNetwork: podIPs[0], GwAddr: vppEnd.String(),
		})
	}
	return kvs, nil
}

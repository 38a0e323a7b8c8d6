package ipnet

import (
	"net"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// Expected transactions, written out by hand from docs/dev-guide/UPSTREAM.md §2-3 for node ID 1 with the
// address plan of the test configurations:
//
//	pod subnet 10.1.1.0/24 (gateway .1, first pod .2), VPP-host subnet 172.30.1.0/24
//	(VPP end .1, Linux end .2), node IP 192.168.16.1/24 (gateway .100), VXLAN IP
//	192.168.30.1/24, MTU 1450, host IP 10.20.0.5.

// Configurations (contiv.conf) of the tests.
const (
	tapConf = `
mtuSize: 1450
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
  defaultGateway: 192.168.16.100
`
	vethConf      = tapConf + "useTAPInterfaces: false\n"
	noOverlayConf = tapConf + "useNoOverlay: true\n"
	dhcpConf      = `
mtuSize: 1450
ipamConfig:
  nodeInterconnectDHCP: true
`
)

// nic is the DPDK NIC of the tests.
const nic = "GigabitEthernet0/8/0"

// The three other nodes: node2 and node3 are connectable, node4 has no VPP IP yet.
func node2() *nodesync.Node {
	return &nodesync.Node{ID: 2, Name: "node2", VppIPAddresses: []*net.IPNet{cidr("192.168.16.2/24")}, MgmtIPAddresses: ips("10.20.0.6")}
}

func node3() *nodesync.Node {
	// Its second management IP is its VPP IP: no route may capture the tunnel's traffic.
	return &nodesync.Node{ID: 3, Name: "node3", VppIPAddresses: []*net.IPNet{cidr("192.168.16.3/24")}, MgmtIPAddresses: ips("10.20.0.7", "192.168.16.3")}
}

func node4() *nodesync.Node {
	return &nodesync.Node{ID: 4, Name: "node4", MgmtIPAddresses: ips("10.20.0.8")}
}

// ips parses IP addresses.
func ips(addrs ...string) []net.IP {
	out := make([]net.IP, len(addrs))
	for i, a := range addrs {
		out[i] = net.ParseIP(a)
	}
	return out
}

func otherNodes() map[string]*nodesync.Node {
	return map[string]*nodesync.Node{"node2": node2(), "node3": node3(), "node4": node4()}
}

// wantNIC is the DPDK NIC with the node IP and the static default route.
func wantNIC() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/interfaces/GigabitEthernet0/8/0": &vppif.Interface{
			Name: nic, Type: vppif.Interface_DPDK, Enabled: true, IpAddresses: []string{"192.168.16.1/24"},
		},
		"config/vpp/v2/route/vrf/0/dst/0.0.0.0/0/gw/192.168.16.100": &vppl3.Route{
			DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.16.100", OutgoingInterface: nic,
		},
	}
}

// wantLoopbackNIC stands in for a missing NIC.
func wantLoopbackNIC() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/interfaces/loopbackNIC": &vppif.Interface{
			Name: "loopbackNIC", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			IpAddresses: []string{"192.168.16.1/24"},
		},
	}
}

// wantTAPInterconnect is the VPP-host TAP with the host routes.
func wantTAPInterconnect() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/interfaces/tap-vpp2": &vppif.Interface{
			Name: "tap-vpp2", Type: vppif.Interface_TAP, Enabled: true, PhysAddress: "34:3c:00:00:00:01",
			IpAddresses: []string{"172.30.1.1/24"}, Mtu: 1450,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "vpp1"}},
		},
		"config/linux/interfaces/v2/interface/tap-vpp1": &linuxif.Interface{
			Name: "tap-vpp1", Type: linuxif.Interface_TAP_TO_VPP, HostIfName: "vpp1",
			IpAddresses: []string{"172.30.1.2/24"}, Mtu: 1450, Enabled: true,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap-vpp2"}},
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.5/32/gw/172.30.1.2": &vppl3.Route{
			DstNetwork: "10.20.0.5/32", NextHopAddr: "172.30.1.2", OutgoingInterface: "tap-vpp2",
		},
		"config/linux/l3/v2/route/10.1.0.0/16/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "10.1.0.0/16", GwAddr: "172.30.1.1",
		},
	}
}

// wantVETHInterconnect is the VPP-host VETH pair and AF_PACKET with the host routes.
func wantVETHInterconnect() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/linux/interfaces/v2/interface/veth-vpp1": &linuxif.Interface{
			Name: "veth-vpp1", Type: linuxif.Interface_VETH, HostIfName: "vpp1",
			IpAddresses: []string{"172.30.1.2/24"}, Mtu: 1450, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{
				PeerIfName:           "veth-vpp2",
				RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED,
				TxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED,
			}},
		},
		"config/linux/interfaces/v2/interface/veth-vpp2": &linuxif.Interface{
			Name: "veth-vpp2", Type: linuxif.Interface_VETH, HostIfName: "vpp2", Mtu: 1450, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth-vpp1"}},
		},
		"config/vpp/v2/interfaces/afpacket-vpp2": &vppif.Interface{
			Name: "afpacket-vpp2", Type: vppif.Interface_AF_PACKET, Enabled: true, PhysAddress: "34:3c:00:00:00:01",
			IpAddresses: []string{"172.30.1.1/24"}, Mtu: 1450,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "vpp2"}},
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.5/32/gw/172.30.1.2": &vppl3.Route{
			DstNetwork: "10.20.0.5/32", NextHopAddr: "172.30.1.2", OutgoingInterface: "afpacket-vpp2",
		},
		"config/linux/l3/v2/route/10.1.0.0/16/veth-vpp1": &linuxl3.Route{
			OutgoingInterface: "veth-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "10.1.0.0/16", GwAddr: "172.30.1.1",
		},
	}
}

// wantCommon is what every mode has: VRF tables, the pod VRF default route, the
// neighbour scan and the pod gateway loopback.
func wantCommon() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/vrf-table/id/0/protocol/IPV4": &vppl3.VrfTable{Id: 0, Protocol: vppl3.VrfTable_IPV4, Label: "mainVRF-IPv4"},
		"config/vpp/v2/vrf-table/id/1/protocol/IPV4": &vppl3.VrfTable{Id: 1, Protocol: vppl3.VrfTable_IPV4, Label: "podVRF-IPv4"},
		"config/vpp/v2/route/vrf/1/dst/0.0.0.0/0/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 1, DstNetwork: "0.0.0.0/0", ViaVrfId: 0,
		},
		"config/vpp/v2/ipscanneigh-global": &vppl3.IPScanNeighbor{Mode: vppl3.IPScanNeighbor_IPV4, ScanInterval: 1, StaleThreshold: 4},
		"config/vpp/v2/interfaces/podGwLoop": &vppif.Interface{
			Name: "podGwLoop", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: 1,
			IpAddresses: []string{"10.1.1.1/24"},
		},
	}
}

// wantOverlayLocal is this node's part of the VXLAN overlay: the inter-VRF and drop
// routes and the BVI.
func wantOverlayLocal() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/route/vrf/1/dst/172.30.1.0/24/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 1, DstNetwork: "172.30.1.0/24", ViaVrfId: 0,
		},
		"config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "10.1.0.0/16", ViaVrfId: 1,
		},
		"config/vpp/v2/route/vrf/0/dst/172.30.0.0/16/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "172.30.0.0/16", ViaVrfId: 1,
		},
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/gw/": &vppl3.Route{
			Type: vppl3.Route_DROP, VrfId: 1, DstNetwork: "10.1.0.0/16",
		},
		"config/vpp/v2/route/vrf/1/dst/172.30.0.0/16/gw/": &vppl3.Route{
			Type: vppl3.Route_DROP, VrfId: 1, DstNetwork: "172.30.0.0/16",
		},
		"config/vpp/v2/interfaces/vxlanBVI": &vppif.Interface{
			Name: "vxlanBVI", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, PhysAddress: "12:2b:00:00:00:01",
			Vrf: 1, IpAddresses: []string{"192.168.30.1/24"},
		},
	}
}

// wantNoOverlayLocal is this node's main->pod route without overlay.
func wantNoOverlayLocal() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/route/vrf/0/dst/10.1.1.0/24/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "10.1.1.0/24", ViaVrfId: 1,
		},
	}
}

// wantBD is the VXLAN bridge domain with the BVI and the given tunnels.
func wantBD(tunnels ...string) api.KeyValuePairs {
	bd := &vppl2.BridgeDomain{
		Name: "vxlanBD", Forward: true,
		Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "vxlanBVI", BridgedVirtualInterface: true}},
	}
	for _, t := range tunnels {
		bd.Interfaces = append(bd.Interfaces, &vppl2.BridgeDomain_Interface{Name: t, SplitHorizonGroup: 1})
	}
	return api.KeyValuePairs{"config/vpp/l2/v2/bridge-domain/vxlanBD": bd}
}

// wantPeer2Overlay connects node2 (ID 2, VPP IP 192.168.16.2, management IP
// 10.20.0.6, VXLAN IP 192.168.30.2) over VXLAN from src (this node's IP).
func wantPeer2Overlay(src string) api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/interfaces/vxlan2": &vppif.Interface{
			Name: "vxlan2", Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: src, DstAddress: "192.168.16.2", Vni: 10}},
		},
		"config/vpp/v2/arp/vxlanBVI/192.168.30.2": &vppl3.ARPEntry{
			Interface: "vxlanBVI", IpAddress: "192.168.30.2", PhysAddress: "12:2b:00:00:00:02", Static: true,
		},
		"config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:02": &vppl2.FIBEntry{
			BridgeDomain: "vxlanBD", PhysAddress: "12:2b:00:00:00:02", OutgoingInterface: "vxlan2",
			Action: vppl2.FIBEntry_FORWARD, StaticConfig: true,
		},
		"config/vpp/v2/route/vrf/1/dst/10.1.2.0/24/gw/192.168.30.2": &vppl3.Route{
			VrfId: 1, DstNetwork: "10.1.2.0/24", NextHopAddr: "192.168.30.2", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/1/dst/172.30.2.0/24/gw/192.168.30.2": &vppl3.Route{
			VrfId: 1, DstNetwork: "172.30.2.0/24", NextHopAddr: "192.168.30.2", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/1/dst/10.20.0.6/32/gw/192.168.30.2": &vppl3.Route{
			VrfId: 1, DstNetwork: "10.20.0.6/32", NextHopAddr: "192.168.30.2", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.6/32/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "10.20.0.6/32", ViaVrfId: 1,
		},
	}
}

// wantPeer3Overlay connects node3 (ID 3, VPP IP 192.168.16.3, management IPs
// 10.20.0.7 and 192.168.16.3, VXLAN IP 192.168.30.3): no route for the management IP
// that is its VPP IP.
func wantPeer3Overlay() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/interfaces/vxlan3": &vppif.Interface{
			Name: "vxlan3", Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: "192.168.16.1", DstAddress: "192.168.16.3", Vni: 10}},
		},
		"config/vpp/v2/arp/vxlanBVI/192.168.30.3": &vppl3.ARPEntry{
			Interface: "vxlanBVI", IpAddress: "192.168.30.3", PhysAddress: "12:2b:00:00:00:03", Static: true,
		},
		"config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:03": &vppl2.FIBEntry{
			BridgeDomain: "vxlanBD", PhysAddress: "12:2b:00:00:00:03", OutgoingInterface: "vxlan3",
			Action: vppl2.FIBEntry_FORWARD, StaticConfig: true,
		},
		"config/vpp/v2/route/vrf/1/dst/10.1.3.0/24/gw/192.168.30.3": &vppl3.Route{
			VrfId: 1, DstNetwork: "10.1.3.0/24", NextHopAddr: "192.168.30.3", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/1/dst/172.30.3.0/24/gw/192.168.30.3": &vppl3.Route{
			VrfId: 1, DstNetwork: "172.30.3.0/24", NextHopAddr: "192.168.30.3", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/1/dst/10.20.0.7/32/gw/192.168.30.3": &vppl3.Route{
			VrfId: 1, DstNetwork: "10.20.0.7/32", NextHopAddr: "192.168.30.3", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.7/32/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "10.20.0.7/32", ViaVrfId: 1,
		},
	}
}

// wantPeersNoOverlay routes to node2 and node3 through the main VRF.
func wantPeersNoOverlay() api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/vpp/v2/route/vrf/0/dst/10.1.2.0/24/gw/192.168.16.2": &vppl3.Route{
			DstNetwork: "10.1.2.0/24", NextHopAddr: "192.168.16.2",
		},
		"config/vpp/v2/route/vrf/0/dst/172.30.2.0/24/gw/192.168.16.2": &vppl3.Route{
			DstNetwork: "172.30.2.0/24", NextHopAddr: "192.168.16.2",
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.6/32/gw/192.168.16.2": &vppl3.Route{
			DstNetwork: "10.20.0.6/32", NextHopAddr: "192.168.16.2",
		},
		"config/vpp/v2/route/vrf/0/dst/10.1.3.0/24/gw/192.168.16.3": &vppl3.Route{
			DstNetwork: "10.1.3.0/24", NextHopAddr: "192.168.16.3",
		},
		"config/vpp/v2/route/vrf/0/dst/172.30.3.0/24/gw/192.168.16.3": &vppl3.Route{
			DstNetwork: "172.30.3.0/24", NextHopAddr: "192.168.16.3",
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.7/32/gw/192.168.16.3": &vppl3.Route{
			DstNetwork: "10.20.0.7/32", NextHopAddr: "192.168.16.3",
		},
	}
}

// The pod of the pod tests: a 64-character container ID, so every name is cut.
const (
	podCID   = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	podNetns = "/var/run/netns/web"

	podVPPTap   = "vpp-tap-0123456789abcdef0123456789abcdef0123456789abcdef0123456"
	podLinuxTap = "linux-tap-0123456789abcdef0123456789abcdef0123456789abcdef01234"
	podLoop     = "linux-loop-0123456789abcdef0123456789abcdef0123456789abcdef0123"
	podVeth1    = "veth1-0123456789abcdef0123456789abcdef0123456789abcdef012345678"
	podVeth2    = "veth2-0123456789abcdef0123456789abcdef0123456789abcdef012345678"
	podAfPacket = "afpacketveth2-0123456789abcdef0123456789abcdef0123456789abcdef0"
	podVeth2Dev = "0123456789abcde"

	// FNV-32a of podCID is df1f5865 (computed outside this code base).
	podSideMAC = "02:fe:df:1f:58:65"
	vppSideMAC = "02:fe:20:e0:a7:9a"
)

func podNs() *linuxif.NetNamespace {
	return &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: podNetns}
}

// wantPodCommon is the pod configuration of both modes, given the logical names of the
// VPP side and the pod side, for pod IP 10.1.1.2.
func wantPodCommon(vppSide, podSide string) api.KeyValuePairs {
	return api.KeyValuePairs{
		"config/linux/interfaces/v2/interface/" + podLoop: &linuxif.Interface{
			Name: podLoop, Type: linuxif.Interface_LOOPBACK, Namespace: podNs(), HostIfName: "lo",
			IpAddresses: []string{"127.0.0.1/8", "::1/128"}, Enabled: true,
		},
		"config/linux/l3/v2/arp/" + podSide + "/10.1.1.1": &linuxl3.ARPEntry{
			Interface: podSide, IpAddress: "10.1.1.1", HwAddress: vppSideMAC,
		},
		"config/linux/l3/v2/route/10.1.1.1/32/" + podSide: &linuxl3.Route{
			OutgoingInterface: podSide, Scope: linuxl3.Route_LINK, DstNetwork: "10.1.1.1/32",
		},
		"config/linux/l3/v2/route/0.0.0.0/0/" + podSide: &linuxl3.Route{
			OutgoingInterface: podSide, Scope: linuxl3.Route_GLOBAL, DstNetwork: "0.0.0.0/0", GwAddr: "10.1.1.1",
		},
		"config/vpp/v2/arp/" + vppSide + "/10.1.1.2": &vppl3.ARPEntry{
			Interface: vppSide, IpAddress: "10.1.1.2", PhysAddress: podSideMAC, Static: true,
		},
		"config/vpp/v2/route/vrf/1/dst/10.1.1.2/32/gw/10.1.1.2": &vppl3.Route{
			VrfId: 1, DstNetwork: "10.1.1.2/32", NextHopAddr: "10.1.1.2", OutgoingInterface: vppSide,
		},
	}
}

// wantPodTAP is the TAP wiring of the pod.
func wantPodTAP() api.KeyValuePairs {
	return union(wantPodCommon(podVPPTap, podLinuxTap), api.KeyValuePairs{
		"config/vpp/v2/interfaces/" + podVPPTap: &vppif.Interface{
			Name: podVPPTap, Type: vppif.Interface_TAP, Enabled: true, PhysAddress: vppSideMAC, Vrf: 1, Mtu: 1450,
			Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "podGwLoop"},
			Link:       &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "eth0", HostNamespace: podNetns}},
		},
		"config/linux/interfaces/v2/interface/" + podLinuxTap: &linuxif.Interface{
			Name: podLinuxTap, Type: linuxif.Interface_TAP_TO_VPP, Namespace: podNs(), HostIfName: "eth0",
			PhysAddress: podSideMAC, IpAddresses: []string{"10.1.1.2/32"}, Mtu: 1450, Enabled: true,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: podVPPTap}},
		},
	})
}

// wantPodVETH is the VETH + AF_PACKET wiring of the pod.
func wantPodVETH() api.KeyValuePairs {
	return union(wantPodCommon(podAfPacket, podVeth1), api.KeyValuePairs{
		"config/linux/interfaces/v2/interface/" + podVeth1: &linuxif.Interface{
			Name: podVeth1, Type: linuxif.Interface_VETH, Namespace: podNs(), HostIfName: "eth0",
			PhysAddress: podSideMAC, IpAddresses: []string{"10.1.1.2/32"}, Mtu: 1450, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{
				PeerIfName:           podVeth2,
				RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED,
				TxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED,
			}},
		},
		"config/linux/interfaces/v2/interface/" + podVeth2: &linuxif.Interface{
			Name: podVeth2, Type: linuxif.Interface_VETH, HostIfName: podVeth2Dev, Mtu: 1450, Enabled: true,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: podVeth1}},
		},
		"config/vpp/v2/interfaces/" + podAfPacket: &vppif.Interface{
			Name: podAfPacket, Type: vppif.Interface_AF_PACKET, Enabled: true, PhysAddress: vppSideMAC, Vrf: 1, Mtu: 1450,
			Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "podGwLoop"},
			Link:       &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: podVeth2Dev}},
		},
	})
}

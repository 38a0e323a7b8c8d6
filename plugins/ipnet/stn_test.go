package ipnet

import (
	"net"
	"strings"
	"testing"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vppstn "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// stnConf steals eth1; the STN daemon reports 192.168.16.5/24 with gateway .100.
const stnConf = `
mtuSize: 1450
stealInterface: eth1
`

func stolenNIC() *contivconf.StolenInterfaceInfo {
	return &contivconf.StolenInterfaceInfo{IPAddresses: []*net.IPNet{cidr("192.168.16.5/24")}, DefaultGW: net.ParseIP("192.168.16.100")}
}

// wantSTN is what STN mode puts besides the common and overlay keys: the NIC with the
// stolen address, the usual interconnect with the node's address and STN's MAC added
// on the host's end, the STN rule, proxy ARP for the node subnet on VPP's end, the
// host's MAC for its address, and the host's default route via the NIC's gateway.
func wantSTN() api.KeyValuePairs {
	kvs := union(wantTAPInterconnect(), api.KeyValuePairs{
		"config/vpp/v2/interfaces/GigabitEthernet0/8/0": &vppif.Interface{
			Name: nic, Type: vppif.Interface_DPDK, Enabled: true, IpAddresses: []string{"192.168.16.5/24"},
		},
		"config/vpp/v2/route/vrf/0/dst/0.0.0.0/0/gw/192.168.16.100": &vppl3.Route{
			DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.16.100", OutgoingInterface: nic,
		},
		"config/linux/l3/v2/route/0.0.0.0/0/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "0.0.0.0/0", GwAddr: "192.168.16.100",
		},
		"config/vpp/stn/v2/rule/tap-vpp2/ip/192.168.16.5": &vppstn.Rule{IpAddress: "192.168.16.5", Interface: "tap-vpp2"},
		"config/vpp/v2/arp/tap-vpp2/192.168.16.5": &vppl3.ARPEntry{
			Interface: "tap-vpp2", IpAddress: "192.168.16.5", PhysAddress: "00:00:00:00:00:02", Static: true,
		},
		vppl3.ProxyARPKey: &vppl3.ProxyARP{
			Interfaces: []*vppl3.ProxyARP_Interface{{Name: "tap-vpp2"}},
			Ranges:     []*vppl3.ProxyARP_Range{{FirstIpAddr: "192.168.16.1", LastIpAddr: "192.168.16.254"}},
		},
	})
	host := kvs["config/linux/interfaces/v2/interface/tap-vpp1"].(*linuxif.Interface)
	host.PhysAddress, host.IpAddresses = "00:00:00:00:00:02", []string{"192.168.16.5/24", "172.30.1.2/24"}
	return kvs
}

func TestSTNResyncGivesTheHostTheNodeAddressBehindVPP(t *testing.T) {
	e := newEnv(t, stnConf, envOptions{dpdk: []string{nic}, stnInfo: stolenNIC()})
	kvs := e.mustResync()
	diffKVs(t, kvs, union(wantSTN(), wantCommon(), wantOverlayLocal(), wantBD()))
	if ip, _ := e.n.GetNodeIP(); ip.String() != "192.168.16.5" {
		t.Errorf("node IP %v, want the stolen NIC's 192.168.16.5", ip)
	}
}

func TestHostRangeExcludesNetworkAndBroadcast(t *testing.T) {
	for _, tc := range []struct{ in, first, last string }{
		{"192.168.16.5/24", "192.168.16.1", "192.168.16.254"},
		{"10.0.0.9/30", "10.0.0.9", "10.0.0.10"},
		{"10.0.0.9/31", "", ""},
		{"2001:db8::5/64", "", ""},
	} {
		first, last, ok := hostRange(cidr(tc.in))
		if tc.first == "" {
			if ok {
				t.Errorf("%s: range %v-%v, want none", tc.in, first, last)
			}
			continue
		}
		if !ok || first.String() != tc.first || last.String() != tc.last {
			t.Errorf("%s: %v-%v (%v), want %s-%s", tc.in, first, last, ok, tc.first, tc.last)
		}
	}
}

// Without a DPDK NIC in VPP, the main interface is an af_packet on the stolen link
// (af_packet_create_v3, host-eth1 in VPP) with the NIC's own MAC, and the link is
// declared (HostLink: the af_packet's dependency); the rest of STN mode
// is the same, with that interface where the DPDK NIC was.
func TestSTNWithoutDPDKDrivesTheStolenLinkAsAFPacket(t *testing.T) {
	info := stolenNIC()
	info.LinkName, info.MAC = "eth1", net.HardwareAddr{0x52, 0x54, 0, 0xab, 0xcd, 0xef}
	e := newEnv(t, stnConf, envOptions{stnInfo: info})
	kvs := e.mustResync()
	want := union(wantSTN(), wantCommon(), wantOverlayLocal(), wantBD())
	delete(want, "config/vpp/v2/interfaces/"+nic)
	want["config/vpp/v2/interfaces/host-eth1"] = &vppif.Interface{
		Name: "host-eth1", Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{"192.168.16.5/24"},
		PhysAddress: "52:54:00:ab:cd:ef", Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "eth1"}},
	}
	want["config/vpp/v2/route/vrf/0/dst/0.0.0.0/0/gw/192.168.16.100"].(*vppl3.Route).OutgoingInterface = "host-eth1"
	want["config/vpp/stn/v2/host-link/eth1"] = &vppstn.HostLink{Name: "eth1"}
	diffKVs(t, kvs, want)
}

// The stolen NIC's other routes keep working for the host through VPP: VPP routes them
// out of the NIC, the host routes them to VPP's end of the interconnect; a gateway
// route keeps its gateway (proxy-ARPed like the default gateway), a route on the link
// stays on the link and its addresses are proxy-ARPed. IPv6 routes are left out (no
// proxy ND).
func TestSTNMirrorsTheNICsOtherRoutesThroughVPP(t *testing.T) {
	info := stolenNIC()
	info.Routes = []*contivconf.StolenRoute{
		{Dst: cidr("10.50.0.0/16"), Gw: net.ParseIP("192.168.16.2").To4()},
		{Dst: cidr("172.16.0.0/24")},
		{Dst: cidr("172.17.0.9/32")},
		{Dst: cidr("2001:db8:9::/48"), Gw: net.ParseIP("2001:db8::1")},
	}
	e := newEnv(t, stnConf, envOptions{dpdk: []string{nic}, stnInfo: info})
	kvs := e.mustResync()
	want := union(wantSTN(), wantCommon(), wantOverlayLocal(), wantBD(), api.KeyValuePairs{
		"config/vpp/v2/route/vrf/0/dst/10.50.0.0/16/gw/192.168.16.2": &vppl3.Route{
			DstNetwork: "10.50.0.0/16", NextHopAddr: "192.168.16.2", OutgoingInterface: nic,
		},
		"config/vpp/v2/route/vrf/0/dst/172.16.0.0/24/gw/": &vppl3.Route{DstNetwork: "172.16.0.0/24", OutgoingInterface: nic},
		"config/vpp/v2/route/vrf/0/dst/172.17.0.9/32/gw/": &vppl3.Route{DstNetwork: "172.17.0.9/32", OutgoingInterface: nic},
		"config/linux/l3/v2/route/10.50.0.0/16/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "10.50.0.0/16", GwAddr: "192.168.16.2",
		},
		"config/linux/l3/v2/route/172.16.0.0/24/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_LINK, DstNetwork: "172.16.0.0/24",
		},
		"config/linux/l3/v2/route/172.17.0.9/32/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_LINK, DstNetwork: "172.17.0.9/32",
		},
	})
	want[vppl3.ProxyARPKey].(*vppl3.ProxyARP).Ranges = []*vppl3.ProxyARP_Range{
		{FirstIpAddr: "192.168.16.1", LastIpAddr: "192.168.16.254"},
		{FirstIpAddr: "172.16.0.1", LastIpAddr: "172.16.0.254"},
		{FirstIpAddr: "172.17.0.9", LastIpAddr: "172.17.0.9"},
	}
	diffKVs(t, kvs, want)
}

// The host's addresses on a single-NIC node are on its end of the interconnect (vpp1,
// a link the host listing leaves out): GetHostIPs names them, every family, so the
// policies always allow the host (an IPv6 address of the NIC included).
func TestSTNHostIPsIncludeTheStolenAddressesOfEveryFamily(t *testing.T) {
	info := stolenNIC()
	info.IPAddresses = append(info.IPAddresses, cidr("2001:db8:16::5/64"))
	e := newEnv(t, stnConf, envOptions{dpdk: []string{nic}, stnInfo: info, hostIPs: []net.IP{net.ParseIP("10.20.0.5").To4()}})
	e.mustResync()
	got := map[string]bool{}
	for _, ip := range e.n.GetHostIPs() {
		got[ip.String()] = true
	}
	for _, want := range []string{"10.20.0.5", "192.168.16.5", "2001:db8:16::5"} {
		if !got[want] {
			t.Errorf("GetHostIPs() = %v, want %s among them", e.n.GetHostIPs(), want)
		}
	}
}

// On a dual-stack single-NIC node the host reaches everything IPv6 through VPP's IPv6
// address on the interconnect (fd00:172:30::1:1), which it knows by a static neighbour
// entry: it could not resolve anything through VPP by neighbour discovery (its
// solicitations come from the node's own address, which VPP refuses as not on link).
// Its IPv6 node address is a /128 on its end, its subnet routed through VPP; the NIC's
// IPv6 routes are mirrored (VPP: via their gateway or attached, out of the NIC; the
// host: via VPP), the IPv6 default route included.
func TestSTNDualStackRoutesTheHostsIPv6ThroughVPP(t *testing.T) {
	info := stolenNIC()
	info.IPAddresses = append(info.IPAddresses, cidr("2001:db8:16::5/64"))
	info.Routes = []*contivconf.StolenRoute{
		{Dst: cidr("::/0"), Gw: net.ParseIP("2001:db8:16::1")},
		{Dst: cidr("2001:db8:9::/48"), Gw: net.ParseIP("2001:db8:16::2")},
		{Dst: cidr("2001:db8:77::/64")},
		{Dst: cidr("2001:db8:78::/64"), Gw: net.ParseIP("192.168.16.2").To4()}, // families mixed: left out
	}
	e := newEnv(t, strings.Replace(dualConf, "mtuSize: 1450\n", stnConf, 1), envOptions{dpdk: []string{nic}, stnInfo: info})
	kvs := e.mustResync()
	vppMAC := kvs[vppif.InterfaceKey(HostInterconnectTAPinVPPLogicalName)].(*vppif.Interface).GetPhysAddress()
	if host, _ := kvs[linuxif.InterfaceKey(HostInterconnectTAPinLinuxLogicalName)].(*linuxif.Interface); host == nil ||
		strings.Join(host.GetIpAddresses(), " ") != "192.168.16.5/24 2001:db8:16::5/128 172.30.1.2/24 fd00:172:30::1:2/112" {
		t.Errorf("tap-vpp1 = %v", describe(host))
	}
	mustHave(t, kvs, vppif.InterfaceKey(nic), &vppif.Interface{
		Name: nic, Type: vppif.Interface_DPDK, Enabled: true, IpAddresses: []string{"192.168.16.5/24", "2001:db8:16::5/64"},
	})
	mustHave(t, kvs, vppstn.RuleKey("tap-vpp2", "2001:db8:16::5"), &vppstn.Rule{IpAddress: "2001:db8:16::5", Interface: "tap-vpp2"})
	mustHave(t, kvs, vppl3.ARPEntryKey("tap-vpp2", "2001:db8:16::5"), &vppl3.ARPEntry{
		Interface: "tap-vpp2", IpAddress: "2001:db8:16::5", PhysAddress: stnHostMAC, Static: true,
	})
	mustHave(t, kvs, linuxl3.ARPEntryKey("tap-vpp1", "fd00:172:30::1:1"), &linuxl3.ARPEntry{
		Interface: "tap-vpp1", IpAddress: "fd00:172:30::1:1", HwAddress: vppMAC,
	})
	for _, dst := range []string{"2001:db8:16::/64", "::/0", "2001:db8:9::/48", "2001:db8:77::/64"} {
		mustHave(t, kvs, linuxl3.RouteKey(dst, "tap-vpp1"), &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: dst, GwAddr: "fd00:172:30::1:1",
		})
	}
	for _, r := range []*vppl3.Route{
		{DstNetwork: "::/0", NextHopAddr: "2001:db8:16::1", OutgoingInterface: nic},
		{DstNetwork: "2001:db8:9::/48", NextHopAddr: "2001:db8:16::2", OutgoingInterface: nic},
		{DstNetwork: "2001:db8:77::/64", OutgoingInterface: nic},
	} {
		mustHave(t, kvs, vppl3.RouteKey(0, r.DstNetwork, r.NextHopAddr), r)
	}
	for k := range kvs {
		if strings.Contains(k, "2001:db8:78::") {
			t.Errorf("%s: a route whose gateway is of the other family", k)
		}
	}
	// The NIC's addresses are published by family (its IPv6 a next hop for the other
	// nodes as a dual-stack node's NIC IPv6 is).
	if len(e.ns.published) != 2 || e.ns.versions[0] != nodesync.IPv4 || e.ns.published[0][0].String() != "192.168.16.5/24" ||
		e.ns.versions[1] != nodesync.IPv6 || e.ns.published[1][0].String() != "2001:db8:16::5/64" {
		t.Errorf("published %v (versions %v)", e.ns.published, e.ns.versions)
	}
	// IPv4 stays as in single-stack STN.
	mustHave(t, kvs, "config/linux/l3/v2/route/0.0.0.0/0/tap-vpp1", &linuxl3.Route{
		OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "0.0.0.0/0", GwAddr: "192.168.16.100",
	})
}

// On a single-stack IPv6 node the NIC's gateway is IPv6: VPP's default route goes via
// it out of the NIC, the host's via VPP's IPv6 interconnect address.
func TestSTNSingleStackIPv6DefaultRouteThroughVPP(t *testing.T) {
	info := &contivconf.StolenInterfaceInfo{IPAddresses: []*net.IPNet{cidr("2001:db8:16::5/64")}, DefaultGW: net.ParseIP("2001:db8:16::1")}
	conf := strings.Replace(v6Conf, "mtuSize: 1450\n", "mtuSize: 1450\nstealInterface: eth1\n", 1)
	e := newEnv(t, conf, envOptions{dpdk: []string{nic}, stnInfo: info})
	kvs := e.mustResync()
	mustHave(t, kvs, vppl3.RouteKey(0, "::/0", "2001:db8:16::1"), &vppl3.Route{
		DstNetwork: "::/0", NextHopAddr: "2001:db8:16::1", OutgoingInterface: nic,
	})
	for _, dst := range []string{"::/0", "2001:db8:16::/64"} {
		mustHave(t, kvs, linuxl3.RouteKey(dst, "tap-vpp1"), &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: dst, GwAddr: "fd00:172:30::1:1",
		})
	}
	if _, ok := kvs[linuxl3.ARPEntryKey("tap-vpp1", "fd00:172:30::1:1")]; !ok {
		t.Error("no static neighbour for the host's IPv6 next hop")
	}
	mustHave(t, kvs, vppstn.RuleKey("tap-vpp2", "2001:db8:16::5"), &vppstn.Rule{IpAddress: "2001:db8:16::5", Interface: "tap-vpp2"})
}

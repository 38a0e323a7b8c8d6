package ipnet

import (
	"net"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// dualConf is tapConf made dual-stack with docs/CONFIG.md's IPv6 plan. Node 1 gets:
// pods fd00:10:1:1::/64 (gateway ::1), VPP-host fd00:172:30::1:0/112 (VPP ::1:1, host
// ::1:2), BVI fd00:192:168:30::1/112, node IP fd00:192:168:16::1/112.
const dualConf = tapConf + `  ipv6:
    podSubnetCIDR: fd00:10:1::/48
    vppHostSubnetCIDR: fd00:172:30::/96
    vxlanCIDR: fd00:192:168:30::/112
    nodeInterconnectCIDR: fd00:192:168:16::/112
    serviceCIDR: fd00:10:96::/108
`

// mustHave fails the test unless kvs holds key with a value equal to want.
func mustHave(t *testing.T, kvs api.KeyValuePairs, key string, want proto.Message) {
	t.Helper()
	got, ok := kvs[key]
	switch {
	case !ok:
		t.Errorf("missing %s\n    want %s", key, describe(want))
	case !proto.Equal(got, want):
		t.Errorf("different %s\n    got  %s\n    want %s", key, describe(got), describe(want))
	}
}

func TestDualStackResyncAddsIPv6BesideIPv4(t *testing.T) {
	e := newEnv(t, dualConf, envOptions{dpdk: []string{nic}, nodes: map[string]*nodesync.Node{"node2": node2()}})
	kvs := e.mustResync()
	// Single-stack IPv4 stays as it was: everything of the IPv4 test is there.
	for k := range wantCommon() {
		if _, ok := kvs[k]; !ok {
			t.Errorf("IPv4 key %s missing", k)
		}
	}
	mustHave(t, kvs, vppif.InterfaceKey(nic), &vppif.Interface{
		Name: nic, Type: vppif.Interface_DPDK, Enabled: true,
		IpAddresses: []string{"192.168.16.1/24", "fd00:192:168:16::1/112"},
	})
	mustHave(t, kvs, vppif.InterfaceKey(podGwLoopName), &vppif.Interface{
		Name: podGwLoopName, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: 1,
		IpAddresses: []string{"10.1.1.1/24", "fd00:10:1:1::1/64"},
	})
	if bvi, _ := kvs[vppif.InterfaceKey(VxlanBVIInterfaceName)].(*vppif.Interface); bvi == nil ||
		strings.Join(bvi.GetIpAddresses(), " ") != "192.168.30.1/24 fd00:192:168:30::1/112" {
		t.Errorf("vxlanBVI = %v", describe(bvi))
	}
	if tap, _ := kvs[vppif.InterfaceKey(HostInterconnectTAPinVPPLogicalName)].(*vppif.Interface); tap == nil ||
		strings.Join(tap.GetIpAddresses(), " ") != "172.30.1.1/24 fd00:172:30::1:1/112" {
		t.Errorf("tap-vpp2 = %v", describe(tap))
	}
	if tap, _ := kvs[linuxif.InterfaceKey(HostInterconnectTAPinLinuxLogicalName)].(*linuxif.Interface); tap == nil ||
		strings.Join(tap.GetIpAddresses(), " ") != "172.30.1.2/24 fd00:172:30::1:2/112" {
		t.Errorf("tap-vpp1 = %v", describe(tap))
	}
	// VRFs and the inter-VRF and drop routes, mirroring IPv4.
	mustHave(t, kvs, vppl3.VrfTableKey(0, vppl3.VrfTable_IPV6), &vppl3.VrfTable{Id: 0, Protocol: vppl3.VrfTable_IPV6, Label: "mainVRF-IPv6"})
	mustHave(t, kvs, vppl3.VrfTableKey(1, vppl3.VrfTable_IPV6), &vppl3.VrfTable{Id: 1, Protocol: vppl3.VrfTable_IPV6, Label: "podVRF-IPv6"})
	for _, r := range []*vppl3.Route{
		{Type: vppl3.Route_INTER_VRF, VrfId: 1, DstNetwork: "::/0", ViaVrfId: 0},
		{Type: vppl3.Route_INTER_VRF, VrfId: 1, DstNetwork: "fd00:172:30::1:0/112", ViaVrfId: 0},
		{Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "fd00:10:1::/48", ViaVrfId: 1},
		{Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "fd00:172:30::/96", ViaVrfId: 1},
		{Type: vppl3.Route_DROP, VrfId: 1, DstNetwork: "fd00:10:1::/48"},
		{Type: vppl3.Route_DROP, VrfId: 1, DstNetwork: "fd00:172:30::/96"},
		// VPP -> the host's global IPv6 (the link-local one is skipped).
		{VrfId: 0, DstNetwork: "2001:db8::5/128", NextHopAddr: "fd00:172:30::1:2", OutgoingInterface: HostInterconnectTAPinVPPLogicalName},
		// node2: its BVI's IPv6, its IPv6 pod and VPP-host subnets.
		{VrfId: 1, DstNetwork: "fd00:10:1:2::/64", NextHopAddr: "fd00:192:168:30::2", OutgoingInterface: VxlanBVIInterfaceName},
		{VrfId: 1, DstNetwork: "fd00:172:30::2:0/112", NextHopAddr: "fd00:192:168:30::2", OutgoingInterface: VxlanBVIInterfaceName},
	} {
		mustHave(t, kvs, vppl3.RouteKey(r.VrfId, r.DstNetwork, r.NextHopAddr), r)
	}
	if _, ok := kvs[vppl3.RouteKey(0, "fe80::1/128", "fd00:172:30::1:2")]; ok {
		t.Error("a VPP route to the host's link-local address")
	}
	mustHave(t, kvs, vppl3.ARPEntryKey(VxlanBVIInterfaceName, "fd00:192:168:30::2"), &vppl3.ARPEntry{
		Interface: VxlanBVIInterfaceName, IpAddress: "fd00:192:168:30::2", PhysAddress: "12:2b:00:00:00:02", Static: true,
	})
	// The host reaches every node's IPv6 pods through VPP.
	mustHave(t, kvs, linuxl3.RouteKey("fd00:10:1::/48", HostInterconnectTAPinLinuxLogicalName), &linuxl3.Route{
		OutgoingInterface: HostInterconnectTAPinLinuxLogicalName, Scope: linuxl3.Route_GLOBAL,
		DstNetwork: "fd00:10:1::/48", GwAddr: "fd00:172:30::1:1",
	})
	// The node's IPv6 is published beside its IPv4.
	if n := len(e.ns.versions); n != 2 || e.ns.versions[1] != nodesync.IPv6 || e.ns.published[1][0].String() != "fd00:192:168:16::1/112" {
		t.Errorf("published %v (versions %v)", e.ns.published, e.ns.versions)
	}
}

func TestDualStackAddPodGivesBothFamiliesAndDeleteTakesBoth(t *testing.T) {
	e := newEnv(t, dualConf, envOptions{dpdk: []string{nic}})
	e.mustResync()
	ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
	kvs, _, err := e.update(ev)
	if err != nil {
		t.Fatal(err)
	}
	// The CNI reply: both addresses on the pod's interface, each with its gateway, and
	// a default route of each family.
	if len(ev.Interfaces) != 1 {
		t.Fatalf("Interfaces = %v", ev.Interfaces)
	}
	if got := ev.Interfaces[0].String(); got != "eth0[10.1.1.2/32 gw 10.1.1.1, fd00:10:1:1::2/128 gw fd00:10:1:1::1]" {
		t.Errorf("interface = %s", got)
	}
	var routes []string
	for _, r := range ev.Routes {
		routes = append(routes, r.Network.String()+" via "+r.Gateway.String())
	}
	if got := strings.Join(routes, ", "); got != "0.0.0.0/0 via 10.1.1.1, ::/0 via fd00:10:1:1::1" {
		t.Errorf("routes = %s", got)
	}
	// Inside the pod: both addresses, the IPv6 gateway's neighbour entry, link route
	// and default route.
	if lt, _ := kvs[linuxif.InterfaceKey(podLinuxTap)].(*linuxif.Interface); lt == nil ||
		strings.Join(lt.GetIpAddresses(), " ") != "10.1.1.2/32 fd00:10:1:1::2/128" {
		t.Errorf("pod's interface = %s", describe(lt))
	}
	mustHave(t, kvs, linuxl3.ARPEntryKey(podLinuxTap, "fd00:10:1:1::1"), &linuxl3.ARPEntry{
		Interface: podLinuxTap, IpAddress: "fd00:10:1:1::1", HwAddress: vppSideMAC})
	mustHave(t, kvs, linuxl3.RouteKey("fd00:10:1:1::1/128", podLinuxTap), &linuxl3.Route{
		OutgoingInterface: podLinuxTap, Scope: linuxl3.Route_LINK, DstNetwork: "fd00:10:1:1::1/128"})
	mustHave(t, kvs, linuxl3.RouteKey("::/0", podLinuxTap), &linuxl3.Route{
		OutgoingInterface: podLinuxTap, Scope: linuxl3.Route_GLOBAL, DstNetwork: "::/0", GwAddr: "fd00:10:1:1::1"})
	// In VPP: the pod's IPv6 neighbour and /128 route in the pod VRF.
	mustHave(t, kvs, vppl3.ARPEntryKey(podVPPTap, "fd00:10:1:1::2"), &vppl3.ARPEntry{
		Interface: podVPPTap, IpAddress: "fd00:10:1:1::2", PhysAddress: podSideMAC, Static: true})
	mustHave(t, kvs, vppl3.RouteKey(1, "fd00:10:1:1::2/128", "fd00:10:1:1::2"), &vppl3.Route{
		VrfId: 1, DstNetwork: "fd00:10:1:1::2/128", NextHopAddr: "fd00:10:1:1::2", OutgoingInterface: podVPPTap})

	// A restart: the resync wires the pod again with both addresses.
	e.pm.pods[podID("default", "web")] = &podmanager.LocalPod{ID: podID("default", "web"), ContainerID: podCID, NetworkNamespace: podNetns}
	again := e.mustResync()
	for k, v := range kvs {
		if w, ok := again[k]; !ok || !proto.Equal(v, w) {
			t.Errorf("after a resync %s = %s, want %s", k, describe(w), describe(v))
		}
	}

	del, _, err := e.update(podmanager.NewDeletePod(podID("default", "web")))
	if err != nil {
		t.Fatal(err)
	}
	diffKVs(t, del, deletes(kvs))
	if ips := e.ipam.GetPodIPs(podID("default", "web")); len(ips) != 0 {
		t.Errorf("after the delete the pod still has %v", ips)
	}
	if id, found := e.ipam.GetPodFromIP(net.ParseIP("fd00:10:1:1::2")); found {
		t.Errorf("after the delete fd00:10:1:1::2 still belongs to %s", id)
	}
}

// v6Conf is a single-stack IPv6 plan (ipamConfig.ipv6 alone).
const v6Conf = `
mtuSize: 1450
ipamConfig:
  defaultGateway: fd00:192:168:16::64
  ipv6:
    podSubnetCIDR: fd00:10:1::/48
    vppHostSubnetCIDR: fd00:172:30::/96
    vxlanCIDR: fd00:192:168:30::/112
    nodeInterconnectCIDR: fd00:192:168:16::/112
    serviceCIDR: fd00:10:96::/108
`

func TestSingleStackIPv6PodGetsItsIPv6AndDefaultRoute(t *testing.T) {
	e := newEnv(t, v6Conf, envOptions{dpdk: []string{nic}})
	kvs := e.mustResync()
	mustHave(t, kvs, vppif.InterfaceKey(podGwLoopName), &vppif.Interface{
		Name: podGwLoopName, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: 1,
		IpAddresses: []string{"fd00:10:1:1::1/64"},
	})
	if _, ok := kvs[vppl3.VrfTableKey(1, vppl3.VrfTable_IPV4)]; ok {
		t.Error("an IPv4 pod VRF on a single-stack IPv6 node")
	}
	ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
	kvs, _, err := e.update(ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Interfaces[0].String(); got != "eth0[fd00:10:1:1::2/128 gw fd00:10:1:1::1]" {
		t.Errorf("interface = %s", got)
	}
	if len(ev.Routes) != 1 || ev.Routes[0].Network.String() != "::/0" {
		t.Errorf("routes = %+v", ev.Routes)
	}
	mustHave(t, kvs, linuxl3.RouteKey("::/0", podLinuxTap), &linuxl3.Route{
		OutgoingInterface: podLinuxTap, Scope: linuxl3.Route_GLOBAL, DstNetwork: "::/0", GwAddr: "fd00:10:1:1::1"})
}

func TestDualStackWithoutOverlayRoutesIPv6ViaThePeersPublishedIPv6(t *testing.T) {
	withV6 := node2()
	withV6.VppIPAddresses = append(withV6.VppIPAddresses, cidr("fd00:192:168:16::2/112"))
	e := newEnv(t, dualConf+"useNoOverlay: true\n", envOptions{dpdk: []string{nic},
		nodes: map[string]*nodesync.Node{"node2": withV6, "node3": node3()}})
	kvs := e.mustResync()
	for _, r := range []*vppl3.Route{
		{VrfId: 0, DstNetwork: "fd00:10:1:2::/64", NextHopAddr: "fd00:192:168:16::2"},
		{VrfId: 0, DstNetwork: "fd00:172:30::2:0/112", NextHopAddr: "fd00:192:168:16::2"},
		{Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "fd00:10:1:1::/64", ViaVrfId: 1},
	} {
		mustHave(t, kvs, vppl3.RouteKey(r.VrfId, r.DstNetwork, r.NextHopAddr), r)
	}
	// node3 published no IPv6: its IPv4 routes only.
	for k := range kvs {
		if strings.Contains(k, "fd00:10:1:3::") {
			t.Errorf("an IPv6 route to node3, which published no IPv6 VPP address: %s", k)
		}
	}
	if _, ok := kvs[vppl3.RouteKey(0, "10.1.3.0/24", "192.168.16.3")]; !ok {
		t.Error("node3's IPv4 pod route is missing")
	}
}

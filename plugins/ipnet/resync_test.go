package ipnet

import (
	"errors"
	"net"
	"strings"
	"testing"

	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

func TestStartupResyncPutsTheWholeNodeConfiguration(t *testing.T) {
	tests := []struct {
		name  string
		conf  string
		dpdk  []string
		nodes map[string]*nodesync.Node
		want  api.KeyValuePairs
	}{
		{
			name: "TAP, overlay, one node",
			conf: tapConf, dpdk: []string{nic},
			want: union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantOverlayLocal(), wantBD()),
		},
		{
			name: "VETH, overlay, one node, no NIC: loopback",
			conf: vethConf,
			want: union(wantLoopbackNIC(), wantVETHInterconnect(), wantCommon(), wantOverlayLocal(), wantBD()),
		},
		{
			name: "TAP, overlay, three other nodes (node4 without IP left out, also of the BD)",
			conf: tapConf, dpdk: []string{nic}, nodes: otherNodes(),
			want: union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantOverlayLocal(),
				wantPeer2Overlay("192.168.16.1"), wantPeer3Overlay(), wantBD("vxlan2", "vxlan3")),
		},
		{
			name: "TAP, no overlay, one node",
			conf: noOverlayConf, dpdk: []string{nic},
			want: union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantNoOverlayLocal()),
		},
		{
			name: "TAP, no overlay, three other nodes",
			conf: noOverlayConf, dpdk: []string{nic}, nodes: otherNodes(),
			want: union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantNoOverlayLocal(), wantPeersNoOverlay()),
		},
		{
			name: "VETH, no overlay, three other nodes, no NIC",
			conf: vethConf + "useNoOverlay: true\n", nodes: otherNodes(),
			want: union(wantLoopbackNIC(), wantVETHInterconnect(), wantCommon(), wantNoOverlayLocal(), wantPeersNoOverlay()),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: tc.dpdk, nodes: tc.nodes})
			diffKVs(t, e.mustResync(), tc.want)

			ip, network := e.n.GetNodeIP()
			if !ip.Equal(net.ParseIP("192.168.16.1")) || network.String() != "192.168.16.0/24" {
				t.Errorf("GetNodeIP = %v, %v", ip, network)
			}
			if len(e.ns.published) != 1 || len(e.ns.published[0]) != 1 ||
				e.ns.published[0][0].String() != "192.168.16.1/24" || e.ns.versions[0] != nodesync.IPv4 {
				t.Errorf("published node IPs = %v %v", e.ns.published, e.ns.versions)
			}
		})
	}
}

func TestResyncRewiresLocalPodsThatHaveAnIP(t *testing.T) {
	for _, tc := range []struct {
		name string
		conf string
		want api.KeyValuePairs
	}{
		{"TAP", tapConf, union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantOverlayLocal(), wantBD(), wantPodTAP())},
		{"VETH", vethConf, union(wantNIC(), wantVETHInterconnect(), wantCommon(), wantOverlayLocal(), wantBD(), wantPodVETH())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}})
			if ip := e.addLocalPod("default", "web", podCID, podNetns); ip.String() != "10.1.1.2/32" {
				t.Fatalf("pod IP %s", ip)
			}
			// A local pod the IPAM knows nothing about is not wired.
			e.pm.pods[podID("default", "lost")] = nil
			diffKVs(t, e.mustResync(), tc.want)

			vppSide, podSide := podVPPTap, podLinuxTap
			if tc.name == "VETH" {
				vppSide, podSide = podAfPacket, podVeth1
			}
			if ns, name, ok := e.n.GetPodByIf(vppSide); !ok || ns != "default" || name != "web" {
				t.Errorf("GetPodByIf(%s) = %s/%s %v", vppSide, ns, name, ok)
			}
			v, l, loop, ok := e.n.GetPodIfNames("default", "web")
			if !ok || v != vppSide || l != podSide || loop != podLoop {
				t.Errorf("GetPodIfNames = %s %s %s %v", v, l, loop, ok)
			}
		})
	}
}

func TestResyncWithDHCPWaitsForTheLeaseThenNodeIPv4ChangeConnectsThePeers(t *testing.T) {
	e := newEnv(t, dhcpConf, envOptions{dpdk: []string{nic}, nodes: map[string]*nodesync.Node{"node2": node2()}})
	dhcpNIC := api.KeyValuePairs{
		"config/vpp/v2/interfaces/GigabitEthernet0/8/0": &vppif.Interface{
			Name: nic, Type: vppif.Interface_DPDK, Enabled: true, SetDhcpClient: true,
		},
	}

	// 1. No lease yet: no node IP, no tunnels, the BD holds only the BVI.
	diffKVs(t, e.mustResync(), union(dhcpNIC, wantTAPInterconnect(), wantCommon(), wantOverlayLocal(), wantBD()))
	if ip, network := e.n.GetNodeIP(); ip != nil || network != nil {
		t.Errorf("GetNodeIP before the lease = %v %v", ip, network)
	}
	if len(e.ns.published) != 0 {
		t.Errorf("published before the lease: %v", e.ns.published)
	}

	// 2. A lease of another interface changes nothing; the main NIC's lease pushes
	// NodeIPv4Change.
	e.vppIf.announce(&vppif.DHCPLease{InterfaceName: "other0", HostIpAddress: "10.9.9.9/24"})
	if ev := e.loop.pushed(); len(ev) != 0 {
		t.Fatalf("events after a foreign lease: %v", ev)
	}
	e.vppIf.announce(&vppif.DHCPLease{
		InterfaceName: nic, HostIpAddress: "192.168.16.50/24", RouterIpAddress: "192.168.16.254/24",
	})
	events := e.loop.pushed()
	if len(events) != 1 {
		t.Fatalf("events after the lease: %v", events)
	}
	change, ok := events[0].(*NodeIPv4Change)
	if !ok || !change.NodeIP.Equal(net.ParseIP("192.168.16.50")) || change.NodeIPNet.String() != "192.168.16.0/24" ||
		!change.DefaultGw.Equal(net.ParseIP("192.168.16.254")) {
		t.Fatalf("pushed %v", events[0])
	}
	if change.Method() != api.UpstreamResync || change.IsBlocking() || change.GetName() != "Node IP(v4) Change" {
		t.Errorf("NodeIPv4Change: method %v blocking %v name %q", change.Method(), change.IsBlocking(), change.GetName())
	}

	// 3. The resync of the event connects node2 from the leased address.
	kvs, err := e.resync(change, 2)
	if err != nil {
		t.Fatal(err)
	}
	diffKVs(t, kvs, union(dhcpNIC, wantTAPInterconnect(), wantCommon(), wantOverlayLocal(),
		wantPeer2Overlay("192.168.16.50"), wantBD("vxlan2")))
	if ip, network := e.n.GetNodeIP(); !ip.Equal(net.ParseIP("192.168.16.50")) || network.String() != "192.168.16.0/24" {
		t.Errorf("GetNodeIP after the lease = %v %v", ip, network)
	}
	if last := e.ns.published[len(e.ns.published)-1]; len(last) != 1 || last[0].String() != "192.168.16.50/24" {
		t.Errorf("published after the lease: %v", last)
	}

	// 4. The same lease again pushes nothing; a later resync reads the lease itself.
	e.vppIf.announce(&vppif.DHCPLease{InterfaceName: nic, HostIpAddress: "192.168.16.50/24"})
	if ev := e.loop.pushed(); len(ev) != 1 {
		t.Errorf("events after the same lease: %v", ev)
	}
	kvs, err = e.resync(api.NewDBResync(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kvs["config/vpp/v2/interfaces/vxlan2"]; !ok {
		t.Error("a resync after the lease lost the tunnel")
	}

	// 5. A new address announced twice before its resync is pushed once.
	moved := &vppif.DHCPLease{InterfaceName: nic, HostIpAddress: "192.168.16.60/24"}
	e.vppIf.announce(moved)
	e.vppIf.announce(moved)
	if ev := e.loop.pushed(); len(ev) != 2 {
		t.Fatalf("events after a new address announced twice: %v", ev)
	}

	// 6. A lost lease takes the node IP and the peers away.
	e.vppIf.announce(&vppif.DHCPLease{InterfaceName: nic})
	events = e.loop.pushed()
	lost, ok := events[len(events)-1].(*NodeIPv4Change)
	if len(events) != 3 || !ok || lost.NodeIP != nil || lost.NodeIPNet != nil {
		t.Fatalf("events after the lease was lost: %v", events)
	}
	if kvs, err = e.resync(lost, 4); err != nil {
		t.Fatal(err)
	}
	diffKVs(t, kvs, union(dhcpNIC, wantTAPInterconnect(), wantCommon(), wantOverlayLocal(), wantBD()))
	if ip, _ := e.n.GetNodeIP(); ip != nil {
		t.Errorf("GetNodeIP after the lease was lost = %v", ip)
	}
	if got := lost.String(); got != "Node IP(v4) Change: node IP <none>, network <none>, default gateway <none>" {
		t.Errorf("String = %q", got)
	}
}

func TestResyncReportsHostIPFailureAfterStagingTheRest(t *testing.T) {
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}, hostErr: errors.New("netlink down")})
	e.hostIPs = nil
	kvs, err := e.resync(api.NewDBResync(), 1)
	if err == nil || !strings.Contains(err.Error(), "netlink down") || api.IsFatal(err) {
		t.Fatalf("Resync error = %v", err)
	}
	want := union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantOverlayLocal(), wantBD())
	delete(want, "config/vpp/v2/route/vrf/0/dst/10.20.0.5/32/gw/172.30.1.2")
	diffKVs(t, kvs, want)
}

func TestResyncWithoutNodeIDAbortsTheEvent(t *testing.T) {
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	e.ns.id = 0
	if _, err := e.resync(api.NewDBResync(), 1); !api.IsAbort(err) || !strings.Contains(err.Error(), `node "node1" has no node ID`) {
		t.Errorf("Resync error = %v", err)
	}
}

func TestResyncRefusesSRv6(t *testing.T) {
	e := newEnv(t, tapConf+"useSRv6Interconnect: true\n", envOptions{dpdk: []string{nic}})
	_, err := e.resync(api.NewDBResync(), 1)
	if err == nil || !api.IsFatal(err) || !strings.Contains(err.Error(), "useSRv6Interconnect: the SRv6 node interconnect is not supported by this port") {
		t.Errorf("Resync error = %v", err)
	}
}

func TestResyncAppliesTheOptionalSettings(t *testing.T) {
	conf := `
mtuSize: 1500
interfaceRxMode: interrupt
tapv2RxRingSize: 512
tapv2TxRingSize: 1024
mainVRFID: 5
podVRFID: 6
routeServiceCIDRToVPP: true
scanIPNeighbors: false
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: node1
  mainVPPInterface:
    interfaceName: GigabitEthernet0/8/0
    ip: 192.168.16.10/24
  gateway: 192.168.16.254
  otherVPPInterfaces:
  - interfaceName: GigabitEthernet0/9/0
    ip: 10.5.0.1/24
  - interfaceName: GigabitEthernet0/a/0
    useDHCP: true
`
	e := newEnv(t, conf, envOptions{})
	kvs := e.mustResync()
	want := api.KeyValuePairs{
		"config/vpp/v2/interfaces/GigabitEthernet0/8/0": &vppif.Interface{
			Name: nic, Type: vppif.Interface_DPDK, Enabled: true, Vrf: 5, IpAddresses: []string{"192.168.16.10/24"},
		},
		"config/vpp/v2/route/vrf/5/dst/0.0.0.0/0/gw/192.168.16.254": &vppl3.Route{
			VrfId: 5, DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.16.254", OutgoingInterface: nic,
		},
		"config/vpp/v2/interfaces/GigabitEthernet0/9/0": &vppif.Interface{
			Name: "GigabitEthernet0/9/0", Type: vppif.Interface_DPDK, Enabled: true, Vrf: 5, IpAddresses: []string{"10.5.0.1/24"},
		},
		"config/vpp/v2/interfaces/GigabitEthernet0/a/0": &vppif.Interface{
			Name: "GigabitEthernet0/a/0", Type: vppif.Interface_DPDK, Enabled: true, Vrf: 5, SetDhcpClient: true,
		},
		"config/vpp/v2/interfaces/tap-vpp2": &vppif.Interface{
			Name: "tap-vpp2", Type: vppif.Interface_TAP, Enabled: true, PhysAddress: "34:3c:00:00:00:01",
			IpAddresses: []string{"172.30.1.1/24"}, Vrf: 5, Mtu: 1500, RxMode: vppif.Interface_INTERRUPT,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "vpp1", RxRingSize: 512, TxRingSize: 1024}},
		},
		"config/linux/l3/v2/route/10.96.0.0/12/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "10.96.0.0/12", GwAddr: "172.30.1.1",
		},
		"config/vpp/v2/vrf-table/id/5/protocol/IPV4": &vppl3.VrfTable{Id: 5, Label: "mainVRF-IPv4"},
		"config/vpp/v2/vrf-table/id/6/protocol/IPV4": &vppl3.VrfTable{Id: 6, Label: "podVRF-IPv4"},
		"config/vpp/v2/route/vrf/6/dst/0.0.0.0/0/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 6, DstNetwork: "0.0.0.0/0", ViaVrfId: 5,
		},
	}
	got := make(api.KeyValuePairs)
	for k := range want {
		got[k] = kvs[k]
	}
	diffKVs(t, got, want)
	if _, ok := kvs["config/vpp/v2/ipscanneigh-global"]; ok {
		t.Error("neighbour scan configured although scanIPNeighbors is false")
	}
	if ip, _ := e.n.GetNodeIP(); !ip.Equal(net.ParseIP("192.168.16.10")) {
		t.Errorf("GetNodeIP = %v", ip)
	}
	if len(e.ns.published) != 1 || len(e.ns.published[0]) != 1 || e.ns.published[0][0].String() != "192.168.16.10/24" {
		t.Errorf("published %v", e.ns.published)
	}

	// A pod's TAP gets the rings, the rx mode, the MTU and the pod VRF.
	ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
	pkvs, _, err := e.update(ev)
	if err != nil {
		t.Fatal(err)
	}
	diffKVs(t, api.KeyValuePairs{"config/vpp/v2/interfaces/" + podVPPTap: pkvs["config/vpp/v2/interfaces/"+podVPPTap]},
		api.KeyValuePairs{"config/vpp/v2/interfaces/" + podVPPTap: &vppif.Interface{
			Name: podVPPTap, Type: vppif.Interface_TAP, Enabled: true, PhysAddress: vppSideMAC, Vrf: 6, Mtu: 1500,
			RxMode:     vppif.Interface_INTERRUPT,
			Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "podGwLoop"},
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{
				Version: 2, HostIfName: "eth0", HostNamespace: podNetns, RxRingSize: 512, TxRingSize: 1024,
			}},
		}})
}

package ipnet

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

func TestAddPodWiresThePodAndFillsTheCNIReply(t *testing.T) {
	for _, tc := range []struct {
		name, conf       string
		want             api.KeyValuePairs
		vppSide, podSide string
	}{
		{"TAP", tapConf, wantPodTAP(), podVPPTap, podLinuxTap},
		{"VETH", vethConf, wantPodVETH(), podAfPacket, podVeth1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}})
			e.mustResync()
			ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
			kvs, change, err := e.update(ev)
			if err != nil || change != "configure IP connectivity" {
				t.Fatalf("Update = %q, %v", change, err)
			}
			diffKVs(t, kvs, tc.want)

			wantIfs := []podmanager.PodInterface{{
				HostName: "eth0", MAC: podSideMAC,
				IPAddresses: []*podmanager.IPWithGateway{{Address: cidr("10.1.1.2/32"), Gateway: net.ParseIP("10.1.1.1").To4()}},
			}}
			if !reflect.DeepEqual(ev.Interfaces, wantIfs) {
				t.Errorf("Interfaces = %v, want %v", ev.Interfaces, wantIfs)
			}
			if len(ev.Routes) != 1 || ev.Routes[0].Network.String() != "0.0.0.0/0" || !ev.Routes[0].Gateway.Equal(net.ParseIP("10.1.1.1")) {
				t.Errorf("Routes = %+v", ev.Routes)
			}
			if ip := e.ipam.GetPodIP(podID("default", "web")); ip == nil || ip.String() != "10.1.1.2/32" {
				t.Errorf("IPAM pod IP = %v", ip)
			}
			if ns, name, ok := e.n.GetPodByIf(tc.vppSide); !ok || ns != "default" || name != "web" {
				t.Errorf("GetPodByIf = %s/%s %v", ns, name, ok)
			}
			if v, l, loop, ok := e.n.GetPodIfNames("default", "web"); !ok || v != tc.vppSide || l != tc.podSide || loop != podLoop {
				t.Errorf("GetPodIfNames = %s %s %s %v", v, l, loop, ok)
			}
			if len(e.ipv6Done) != 1 || e.ipv6Done[0] != podNetns {
				t.Errorf("IPv6 enabled in %v", e.ipv6Done)
			}
		})
	}
}

func TestDeletePodRemovesItsKeysAndReleasesTheIP(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       api.KeyValuePairs
		vppSide    string
	}{
		{"TAP", tapConf, wantPodTAP(), podVPPTap},
		{"VETH", vethConf, wantPodVETH(), podAfPacket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}})
			e.mustResync()
			if _, _, err := e.update(podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)); err != nil {
				t.Fatal(err)
			}
			kvs, change, err := e.update(podmanager.NewDeletePod(podID("default", "web")))
			if err != nil || change != "un-configure IP connectivity" {
				t.Fatalf("Update = %q, %v", change, err)
			}
			diffKVs(t, kvs, deletes(tc.want))
			if ip := e.ipam.GetPodIP(podID("default", "web")); ip != nil {
				t.Errorf("IP not released: %v", ip)
			}
			if _, _, ok := e.n.GetPodByIf(tc.vppSide); ok {
				t.Error("GetPodByIf still finds the pod")
			}
			if _, _, _, ok := e.n.GetPodIfNames("default", "web"); ok {
				t.Error("GetPodIfNames still finds the pod")
			}
			// Deleting an unknown pod stages nothing.
			kvs, change, err = e.update(podmanager.NewDeletePod(podID("default", "ghost")))
			if err != nil || change != "" || len(kvs) != 0 {
				t.Errorf("delete of unknown pod = %v %q %v", kvs, change, err)
			}
		})
	}
}

func TestRevertAddPodReleasesTheIPAndForgetsThePod(t *testing.T) {
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	e.mustResync()
	ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
	if _, _, err := e.update(ev); err != nil {
		t.Fatal(err)
	}
	if err := e.n.Revert(ev); err != nil {
		t.Fatal(err)
	}
	if ip := e.ipam.GetPodIP(podID("default", "web")); ip != nil {
		t.Errorf("IP not released: %v", ip)
	}
	if _, _, ok := e.n.GetPodByIf(podVPPTap); ok {
		t.Error("GetPodByIf still finds the pod")
	}
	if _, _, _, ok := e.n.GetPodIfNames("default", "web"); ok {
		t.Error("GetPodIfNames still finds the pod")
	}
	// The next resync does not wire it.
	if _, ok := e.mustResync()["config/vpp/v2/interfaces/"+podVPPTap]; ok {
		t.Error("reverted pod wired by resync")
	}
	// Revert of other events does nothing.
	if err := e.n.Revert(api.NewShutdown()); err != nil {
		t.Error(err)
	}
}

func TestAddPodWithExternalIPAMAddsAHostRoute(t *testing.T) {
	conf := strings.Replace(tapConf, "ipamConfig:\n", "ipamConfig:\n  useExternalIPAM: true\n", 1)
	e := newEnv(t, conf, envOptions{dpdk: []string{nic},
		nodes: map[string]*nodesync.Node{thisNode: {ID: 1, Name: thisNode, PodCIDR: "10.1.1.0/24"}}})
	e.mustResync()
	ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
	ev.IPAMType, ev.IPAMData = "host-local", `{"cniVersion":"1.0.0","ips":[{"address":"10.1.1.2/24"}]}`
	kvs, _, err := e.update(ev)
	if err != nil {
		t.Fatal(err)
	}
	diffKVs(t, kvs, union(wantPodTAP(), api.KeyValuePairs{
		"config/linux/l3/v2/route/10.1.1.2/32/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "10.1.1.2/32", GwAddr: "172.30.1.1",
		},
	}))
}

func TestNodeUpdateReconfiguresOnlyThatNode(t *testing.T) {
	node2Moved := &nodesync.Node{ID: 2, Name: "node2", VppIPAddresses: []*net.IPNet{cidr("192.168.16.22/24")}, MgmtIPAddresses: ips("10.20.0.16")}
	movedPeer := union(wantPeer2Overlay("192.168.16.1"), api.KeyValuePairs{
		"config/vpp/v2/interfaces/vxlan2": &vppif.Interface{
			Name: "vxlan2", Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: "192.168.16.1", DstAddress: "192.168.16.22", Vni: 10}},
		},
		"config/vpp/v2/route/vrf/1/dst/10.20.0.6/32/gw/192.168.30.2": nil,
		"config/vpp/v2/route/vrf/0/dst/10.20.0.6/32/gw/":             nil,
		"config/vpp/v2/route/vrf/1/dst/10.20.0.16/32/gw/192.168.30.2": &vppl3.Route{
			VrfId: 1, DstNetwork: "10.20.0.16/32", NextHopAddr: "192.168.30.2", OutgoingInterface: "vxlanBVI",
		},
		"config/vpp/v2/route/vrf/0/dst/10.20.0.16/32/gw/": &vppl3.Route{
			Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "10.20.0.16/32", ViaVrfId: 1,
		},
	})
	tests := []struct {
		name       string
		conf       string
		nodes      map[string]*nodesync.Node
		ev         *nodesync.NodeUpdate
		wantChange string
		want       api.KeyValuePairs
	}{
		{
			name: "overlay: node2 joins", conf: tapConf,
			nodes:      map[string]*nodesync.Node{"node3": node3()},
			ev:         &nodesync.NodeUpdate{NodeName: "node2", NewState: node2()},
			wantChange: "connect node ID=2",
			want:       union(wantPeer2Overlay("192.168.16.1"), wantBD("vxlan2", "vxlan3")),
		},
		{
			name: "overlay: node2 leaves", conf: tapConf, nodes: otherNodes(),
			ev:         &nodesync.NodeUpdate{NodeName: "node2", PrevState: node2()},
			wantChange: "disconnect node ID=2",
			want:       union(deletes(wantPeer2Overlay("192.168.16.1")), wantBD("vxlan3")),
		},
		{
			name: "overlay: node2 changes its IPs", conf: tapConf, nodes: otherNodes(),
			ev:         &nodesync.NodeUpdate{NodeName: "node2", PrevState: node2(), NewState: node2Moved},
			wantChange: "update connectivity to node ID=2",
			want:       union(movedPeer, wantBD("vxlan2", "vxlan3")),
		},
		{
			name: "overlay: node4 gets its VPP IP", conf: tapConf, nodes: otherNodes(),
			ev: &nodesync.NodeUpdate{NodeName: "node4", PrevState: node4(), NewState: &nodesync.Node{
				ID: 4, Name: "node4", VppIPAddresses: []*net.IPNet{cidr("192.168.16.4/24")}, MgmtIPAddresses: ips("10.20.0.8"),
			}},
			wantChange: "connect node ID=4",
			want: union(wantBD("vxlan2", "vxlan3", "vxlan4"), api.KeyValuePairs{
				"config/vpp/v2/interfaces/vxlan4": &vppif.Interface{
					Name: "vxlan4", Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true,
					Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: "192.168.16.1", DstAddress: "192.168.16.4", Vni: 10}},
				},
				"config/vpp/v2/arp/vxlanBVI/192.168.30.4": &vppl3.ARPEntry{
					Interface: "vxlanBVI", IpAddress: "192.168.30.4", PhysAddress: "12:2b:00:00:00:04", Static: true,
				},
				"config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:04": &vppl2.FIBEntry{
					BridgeDomain: "vxlanBD", PhysAddress: "12:2b:00:00:00:04", OutgoingInterface: "vxlan4",
					Action: vppl2.FIBEntry_FORWARD, StaticConfig: true,
				},
				"config/vpp/v2/route/vrf/1/dst/10.1.4.0/24/gw/192.168.30.4": &vppl3.Route{
					VrfId: 1, DstNetwork: "10.1.4.0/24", NextHopAddr: "192.168.30.4", OutgoingInterface: "vxlanBVI",
				},
				"config/vpp/v2/route/vrf/1/dst/172.30.4.0/24/gw/192.168.30.4": &vppl3.Route{
					VrfId: 1, DstNetwork: "172.30.4.0/24", NextHopAddr: "192.168.30.4", OutgoingInterface: "vxlanBVI",
				},
				"config/vpp/v2/route/vrf/1/dst/10.20.0.8/32/gw/192.168.30.4": &vppl3.Route{
					VrfId: 1, DstNetwork: "10.20.0.8/32", NextHopAddr: "192.168.30.4", OutgoingInterface: "vxlanBVI",
				},
				"config/vpp/v2/route/vrf/0/dst/10.20.0.8/32/gw/": &vppl3.Route{
					Type: vppl3.Route_INTER_VRF, VrfId: 0, DstNetwork: "10.20.0.8/32", ViaVrfId: 1,
				},
			}),
		},
		{
			name: "overlay: a node without IP joins: nothing to do", conf: tapConf,
			ev: &nodesync.NodeUpdate{NodeName: "node4", NewState: node4()},
		},
		{
			name: "no overlay: node2 joins", conf: noOverlayConf,
			ev:         &nodesync.NodeUpdate{NodeName: "node2", NewState: node2()},
			wantChange: "connect node ID=2",
			want: api.KeyValuePairs{
				"config/vpp/v2/route/vrf/0/dst/10.1.2.0/24/gw/192.168.16.2":   &vppl3.Route{DstNetwork: "10.1.2.0/24", NextHopAddr: "192.168.16.2"},
				"config/vpp/v2/route/vrf/0/dst/172.30.2.0/24/gw/192.168.16.2": &vppl3.Route{DstNetwork: "172.30.2.0/24", NextHopAddr: "192.168.16.2"},
				"config/vpp/v2/route/vrf/0/dst/10.20.0.6/32/gw/192.168.16.2":  &vppl3.Route{DstNetwork: "10.20.0.6/32", NextHopAddr: "192.168.16.2"},
			},
		},
		{
			name: "no overlay: node3 leaves", conf: noOverlayConf, nodes: otherNodes(),
			ev:         &nodesync.NodeUpdate{NodeName: "node3", PrevState: node3()},
			wantChange: "disconnect node ID=3",
			want: api.KeyValuePairs{
				"config/vpp/v2/route/vrf/0/dst/10.1.3.0/24/gw/192.168.16.3":   nil,
				"config/vpp/v2/route/vrf/0/dst/172.30.3.0/24/gw/192.168.16.3": nil,
				"config/vpp/v2/route/vrf/0/dst/10.20.0.7/32/gw/192.168.16.3":  nil,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}, nodes: tc.nodes})
			e.mustResync()
			if !e.n.HandlesEvent(tc.ev) {
				t.Fatal("NodeUpdate of another node not handled")
			}
			kvs, change, err := e.update(tc.ev)
			if err != nil || change != tc.wantChange {
				t.Fatalf("Update = %q, %v; want %q", change, err, tc.wantChange)
			}
			if tc.want == nil {
				tc.want = api.KeyValuePairs{}
			}
			diffKVs(t, kvs, tc.want)
		})
	}
}

func TestNodeUpdateOfThisNodeIsNotHandled(t *testing.T) {
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	if e.n.HandlesEvent(&nodesync.NodeUpdate{NodeName: thisNode}) {
		t.Error("NodeUpdate of this node handled")
	}
	for _, ev := range []api.Event{api.NewDBResync(), &NodeIPv4Change{}, api.NewShutdown(),
		podmanager.NewAddPod(podID("a", "b"), "c", "d"), podmanager.NewDeletePod(podID("a", "b"))} {
		if !e.n.HandlesEvent(ev) {
			t.Errorf("%s not handled", ev.GetName())
		}
	}
	if e.n.HandlesEvent(&api.KubeStateChange{Resource: "pod"}) {
		t.Error("KubeStateChange handled")
	}
}

func TestShutdownDeletesTheVETHsInVETHModeOnly(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		change     string
		want       api.KeyValuePairs
	}{
		{"VETH", vethConf, "delete VETH interfaces", api.KeyValuePairs{
			"config/linux/interfaces/v2/interface/veth-vpp1":   nil,
			"config/linux/interfaces/v2/interface/veth-vpp2":   nil,
			"config/linux/interfaces/v2/interface/" + podVeth1: nil,
			"config/linux/interfaces/v2/interface/" + podVeth2: nil,
		}},
		{"TAP", tapConf, "", api.KeyValuePairs{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}})
			e.mustResync()
			if _, _, err := e.update(podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)); err != nil {
				t.Fatal(err)
			}
			kvs, change, err := e.update(api.NewShutdown())
			if err != nil || change != tc.change {
				t.Fatalf("Update = %q, %v", change, err)
			}
			diffKVs(t, kvs, tc.want)
		})
	}
}

func TestAPIGetters(t *testing.T) {
	e := newEnv(t, vethConf+"useNoOverlay: true\n", envOptions{dpdk: []string{nic}})
	e.mustResync()
	if got := e.n.GetHostInterconnectIfName(); got != "afpacket-vpp2" {
		t.Errorf("GetHostInterconnectIfName = %q", got)
	}
	if got := e.n.GetVxlanBVIIfName(); got != "" {
		t.Errorf("GetVxlanBVIIfName = %q", got)
	}
	if got := e.n.GetHostIPs(); !reflect.DeepEqual(got, defaultHostIPs()) {
		t.Errorf("GetHostIPs = %v", got)
	}
	tap := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	if got := tap.n.GetHostInterconnectIfName(); got != "tap-vpp2" {
		t.Errorf("GetHostInterconnectIfName = %q", got)
	}
	if got := tap.n.GetVxlanBVIIfName(); got != "vxlanBVI" {
		t.Errorf("GetVxlanBVIIfName = %q", got)
	}
	if s := e.n.StateToString(); !strings.Contains(s, "VETH + AF_PACKET") || !strings.Contains(s, "192.168.16.1") {
		t.Errorf("StateToString = %s", s)
	}
}

func TestIPAMRESTServesTheNodeIP(t *testing.T) {
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	h := e.http["GET /contiv/v1/ipam"]
	if h == nil {
		t.Fatalf("not registered: %v", e.http)
	}
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/contiv/v1/ipam", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "Error getting node IP") {
		t.Errorf("before resync: %d %s", rec.Code, rec.Body)
	}
	e.mustResync()
	rec = httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/contiv/v1/ipam", nil))
	var body struct {
		NodeID            uint32 `json:"nodeId"`
		NodeIP            string `json:"nodeIP"`
		PodSubnetThisNode string `json:"podSubnetThisNode"`
		VppHostNetwork    string `json:"vppHostNetwork"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if body.NodeID != 1 || body.NodeIP != "192.168.16.1" || body.PodSubnetThisNode != "10.1.1.0/24" || body.VppHostNetwork != "172.30.1.0/24" {
		t.Errorf("body %+v", body)
	}
}

func TestPodMACsAreTheFNVHashAndItsComplement(t *testing.T) {
	// FNV-32a("c0ffee") = eff53ef0, computed outside this code base.
	if got := podMAC("c0ffee", false); got != "02:fe:ef:f5:3e:f0" {
		t.Errorf("pod side %s", got)
	}
	if got := podMAC("c0ffee", true); got != "02:fe:10:0a:c1:0f" {
		t.Errorf("VPP side %s", got)
	}
}

func TestLongNamesAreCut(t *testing.T) {
	for _, name := range []string{podVPPTap, podLinuxTap, podLoop, podVeth1, podVeth2, podAfPacket} {
		if len(name) != 63 {
			t.Errorf("%s: %d characters", name, len(name))
		}
	}
	if got := podVeth2HostName(podCID); got != podVeth2Dev || len(got) != 15 {
		t.Errorf("veth2 host name %q", got)
	}
	if got := podVPPTapName("short"); got != "vpp-tap-short" {
		t.Errorf("short name %q", got)
	}
}

func TestVirtualHostLinksAreSkipped(t *testing.T) {
	for name, virtual := range map[string]bool{
		"lo": true, "docker0": true, "virbr0": true, "vpp1": true, "eth0": false, "ens3": false, "tap0": false,
	} {
		if isVirtualLink(name) != virtual {
			t.Errorf("isVirtualLink(%s) = %v", name, !virtual)
		}
	}
}

// ipamWithoutREST hides the IPAM's IPAMDataHandler.
type ipamWithoutREST struct{ ipam.API }

func TestInitChecksTheDependencies(t *testing.T) {
	err := NewPlugin(Deps{Log: quietLog()}).Init()
	for _, dep := range []string{"ContivConf", "IPAM", "NodeSync", "PodManager"} {
		if err == nil || !strings.Contains(err.Error(), "Deps."+dep+" is required") {
			t.Errorf("Init error %v does not name %s", err, dep)
		}
	}
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	n := NewPlugin(Deps{Log: quietLog(), ContivConf: e.conf, IPAM: ipamWithoutREST{e.ipam}, NodeSync: e.ns,
		PodManager: e.pm, HTTPHandlers: fakeHTTP{}})
	if err := n.Init(); err == nil || !strings.Contains(err.Error(), "cannot serve /contiv/v1/ipam") {
		t.Errorf("Init error = %v", err)
	}
	if n.String() != "ipnet" || n.Close() != nil {
		t.Error("String/Close")
	}
}

func TestCheckPodWiringFollowsThePodAndItsInterfaces(t *testing.T) {
	e := newEnv(t, tapConf, envOptions{dpdk: []string{nic}})
	states := map[string][2]string{}
	e.n.ValueStatus = func(key string) (string, string) {
		if s, ok := states[key]; ok {
			return s[0], s[1]
		}
		return "CONFIGURED", ""
	}
	e.mustResync()
	web := podID("default", "web")
	if err := e.n.CheckPodWiring(web); err == nil || !strings.Contains(err.Error(), "the pod is not wired") {
		t.Fatalf("unknown pod: %v", err)
	}
	ev := podmanager.NewAddPod(web, podCID, podNetns)
	if _, _, err := e.update(ev); err != nil {
		t.Fatal(err)
	}
	if err := e.n.CheckPodWiring(web); err != nil {
		t.Errorf("wired pod: %v", err)
	}
	linuxKey := "config/linux/interfaces/v2/interface/" + podLinuxTap
	states[linuxKey] = [2]string{"RETRYING", "link eth0 not found"}
	if err := e.n.CheckPodWiring(web); err == nil || err.Error() != linuxKey+" is RETRYING: link eth0 not found" {
		t.Errorf("pod with a failing interface: %v", err)
	}
	delete(states, linuxKey)
	if _, _, err := e.update(podmanager.NewDeletePod(web)); err != nil {
		t.Fatal(err)
	}
	if err := e.n.CheckPodWiring(web); err == nil {
		t.Error("deleted pod still wired")
	}
}

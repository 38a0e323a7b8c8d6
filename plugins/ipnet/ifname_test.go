package ipnet

import (
	"testing"

	"google.golang.org/protobuf/proto"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// withPodIfName returns kvs with the pod's interface inside the pod (the Linux
// interface in the pod's namespace, the Linux side of a VPP TAP) named ifName.
func withPodIfName(t *testing.T, kvs api.KeyValuePairs, ifName string) api.KeyValuePairs {
	t.Helper()
	out := make(api.KeyValuePairs, len(kvs))
	renamed := 0
	for k, v := range kvs {
		switch x := v.(type) {
		case *linuxif.Interface:
			if x.GetNamespace() != nil && x.GetHostIfName() == "eth0" {
				c := proto.Clone(x).(*linuxif.Interface)
				c.HostIfName = ifName
				v = c
				renamed++
			}
		case *vppif.Interface:
			if x.GetTap().GetHostIfName() == "eth0" {
				c := proto.Clone(x).(*vppif.Interface)
				c.GetTap().HostIfName = ifName
				v = c
				renamed++
			}
		}
		out[k] = v
	}
	if renamed == 0 {
		t.Fatal("no pod interface named eth0 in the expected values")
	}
	return out
}

// TestAddPodNamesThePodsInterfaceAfterCNI_IFNAME: the AddPod's IfName names the pod's
// interface in the values and in the CNI reply.
func TestAddPodNamesThePodsInterfaceAfterCNI_IFNAME(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       api.KeyValuePairs
	}{
		{"TAP", tapConf, wantPodTAP()},
		{"VETH", vethConf, wantPodVETH()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}})
			e.mustResync()
			ev := podmanager.NewAddPod(podID("default", "web"), podCID, podNetns)
			ev.IfName = "net1"
			kvs, _, err := e.update(ev)
			if err != nil {
				t.Fatal(err)
			}
			diffKVs(t, kvs, withPodIfName(t, tc.want, "net1"))
			if len(ev.Interfaces) != 1 || ev.Interfaces[0].HostName != "net1" {
				t.Errorf("Interfaces = %v, want one named net1", ev.Interfaces)
			}
		})
	}
}

// TestResyncRebuildKeepsThePodsInterfaceName: the pods rebuilt from the local pods keep
// their interface name; a local pod without one (an older agent's) has eth0.
func TestResyncRebuildKeepsThePodsInterfaceName(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       api.KeyValuePairs
	}{
		{"TAP", tapConf, union(wantNIC(), wantTAPInterconnect(), wantCommon(), wantOverlayLocal(), wantBD(), wantPodTAP())},
		{"VETH", vethConf, union(wantNIC(), wantVETHInterconnect(), wantCommon(), wantOverlayLocal(), wantBD(), wantPodVETH())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.conf, envOptions{dpdk: []string{nic}})
			e.addLocalPod("default", "web", podCID, podNetns)
			e.pm.pods[podID("default", "web")].IfName = "net1"
			diffKVs(t, e.mustResync(), withPodIfName(t, tc.want, "net1"))

			e.pm.pods[podID("default", "web")].IfName = ""
			diffKVs(t, e.mustResync(), tc.want)
		})
	}
}

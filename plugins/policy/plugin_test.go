package policy

import (
	"net"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

type fakeConf struct{ ipv6 bool }

func (f fakeConf) IsIPv6() bool               { return f.ipv6 }
func (fakeConf) GetMainInterfaceName() string { return "GbE" }
func (fakeConf) GetOtherVPPInterfaces() contivconf.OtherInterfaces {
	return contivconf.OtherInterfaces{{InterfaceName: "GbE2"}}
}

func cidr(s string) *net.IPNet {
	ip, n, _ := net.ParseCIDR(s)
	n.IP = ip
	return n
}

// fakeIPAM: this node's pod subnet 10.1.1.0/24 and, with dual, the IPv6 plan
// of docs/CONFIG.md (pod subnet fd00:10:1:1::/64). pods holds the addresses
// IPAM gave each pod, comma-separated, the primary first.
type fakeIPAM struct {
	pods map[podmodel.ID]string
	dual bool
}

func (f fakeIPAM) GetPodIPs(id ipam.PodID) []*net.IPNet {
	var out []*net.IPNet
	if ips, ok := f.pods[id]; ok {
		for _, ip := range strings.Split(ips, ",") {
			bits := "/32"
			if strings.Contains(ip, ":") {
				bits = "/128"
			}
			out = append(out, cidr(ip+bits))
		}
	}
	return out
}

func (f fakeIPAM) Families() []ipam.Family {
	if f.dual {
		return []ipam.Family{ipam.IPv4, ipam.IPv6}
	}
	return []ipam.Family{ipam.IPv4}
}

func (f fakeIPAM) ThisNodeAddresses(fam ipam.Family) *ipam.FamilyAddresses {
	switch {
	case fam == ipam.IPv4:
		return &ipam.FamilyAddresses{Family: fam, PodSubnetAllNodes: f.PodSubnetAllNodes(), PodSubnet: f.PodSubnetThisNode(),
			ServiceNetwork: f.ServiceNetwork(), NatLoopbackIP: f.NatLoopbackIP(), HostInterconnectIPInLinux: f.HostInterconnectIPInLinux()}
	case f.dual:
		return &ipam.FamilyAddresses{Family: fam, PodSubnetAllNodes: cidr("fd00:10:1::/48"), PodSubnet: cidr("fd00:10:1:1::/64"),
			ServiceNetwork: cidr("fd00:10:96::/108"), NatLoopbackIP: net.ParseIP("fd00:10:1:1:ffff:ffff:ffff:fffe"),
			HostInterconnectIPInLinux: net.ParseIP("fd00:172:30::1:2"), NodeIP: net.ParseIP("fd00:192:168:16::1")}
	}
	return nil
}

func (fakeIPAM) PodSubnetThisNode() *net.IPNet     { return cidr("10.1.1.0/24") }
func (fakeIPAM) PodSubnetAllNodes() *net.IPNet     { return cidr("10.1.0.0/16") }
func (fakeIPAM) ServiceNetwork() *net.IPNet        { return cidr("10.96.0.0/12") }
func (fakeIPAM) NatLoopbackIP() net.IP             { return net.ParseIP("10.1.1.254") }
func (fakeIPAM) HostInterconnectIPInLinux() net.IP { return net.ParseIP("172.30.1.2") }

type fakeIPNet struct{}

func (fakeIPNet) GetPodIfNames(ns, name string) (string, string, string, bool) {
	return "tap-" + name, "eth0", "", true
}
func (fakeIPNet) GetHostInterconnectIfName() string { return "tap-vpp2" }
func (fakeIPNet) GetVxlanBVIIfName() string         { return "vxlanBVI" }
func (fakeIPNet) GetNodeIP() (net.IP, *net.IPNet) {
	return net.ParseIP("192.168.16.10"), cidr("192.168.16.0/24")
}
func (fakeIPNet) GetHostIPs() []net.IP { return []net.IP{net.ParseIP("192.168.16.10")} }

type fakePods struct{ pods podmanager.LocalPods }

func (f fakePods) GetLocalPods() podmanager.LocalPods { return f.pods }

type mapTxn map[string]proto.Message

func (t mapTxn) Put(k string, v proto.Message) { t[k] = v }
func (t mapTxn) Get(k string) proto.Message    { return t[k] }
func (t mapTxn) Delete(k string)               { t[k] = nil }

func newPlugin(t *testing.T, ipv6 bool) (*Plugin, fakeIPAM, fakePods) {
	t.Helper()
	im := fakeIPAM{pods: map[podmodel.ID]string{}}
	pods := fakePods{pods: podmanager.LocalPods{}}
	l := logrus.New()
	l.SetOutput(&strings.Builder{})
	p := NewPlugin(Deps{Log: l, ContivConf: fakeConf{ipv6: ipv6}, IPAM: im, IPNet: fakeIPNet{}, PodManager: pods})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	return p, im, pods
}

func kubeState() controller.KubeStateData {
	st := controller.NewKubeStateData(podmodel.Keyword, nsmodel.Keyword, pm.Keyword)
	st[nsmodel.Keyword][nsmodel.Key("x")] = &nsmodel.Namespace{Name: "x"}
	st[podmodel.Keyword][podmodel.Key("a", "x")] = &podmodel.Pod{Name: "a", Namespace: "x", IpAddress: "10.1.1.2",
		Label: []*podmodel.Pod_Label{{Key: "app", Value: "db"}}}
	st[pm.Keyword][pm.Key("deny", "x")] = &pm.Policy{Name: "deny", Namespace: "x", Pods: &pm.Policy_LabelSelector{},
		PolicyType: pm.Policy_INGRESS_AND_EGRESS}
	return st
}

func TestResyncStagesACLsOfLocalPodsAndNodeInterfaces(t *testing.T) {
	p, _, _ := newPlugin(t, false)
	txn := mapTxn{}
	if err := p.Resync(controller.NewDBResync(), kubeState(), 1, txn); err != nil {
		t.Fatal(err)
	}
	for _, iface := range []string{"tap-a", "tap-vpp2", "GbE", "GbE2", "vxlanBVI"} {
		v, ok := txn[vpp_acl.InterfaceKey(iface)].(*vpp_acl.InterfaceACLs)
		if !ok || len(v.InputAcls) != 1 || len(v.OutputAcls) != 1 {
			t.Errorf("%s: ACL lists = %v", iface, v)
		}
	}
	glob, ok := txn[vpp_acl.ACLKey("contiv-policy-NODE-GLOBAL")].(*vpp_acl.ACL)
	if !ok || len(glob.Rules) != 2 || glob.Rules[0].SourceNetwork != "10.1.1.2/32" || glob.Rules[0].Action != vpp_acl.ACL_Rule_DENY {
		t.Errorf("GLOBAL = %v, want DENY from the pod then PERMIT", glob)
	}
	// the pod's LOCAL table lets the node (kubelet probes) in
	loc := txn[vpp_acl.ACLKey(txn[vpp_acl.InterfaceKey("tap-a")].(*vpp_acl.InterfaceACLs).OutputAcls[0])].(*vpp_acl.ACL)
	var sources []string
	for _, r := range loc.Rules {
		if r.Action != vpp_acl.ACL_Rule_DENY {
			sources = append(sources, r.SourceNetwork)
		}
	}
	for _, want := range []string{"10.1.1.254/32", "172.30.1.2/32", "192.168.16.10/32"} {
		if !strings.Contains(strings.Join(sources, " "), want) {
			t.Errorf("LOCAL table does not permit %s: %v", want, loc.Rules)
		}
	}
	if st := p.Stats(); st.ACLs != 4 {
		t.Errorf("stats = %+v, want 4 ACLs (LOCAL, EGRESS, GLOBAL, REFLECTION)", st)
	}
}

func TestAddPodIsPolicedInItsOwnTransaction(t *testing.T) {
	p, im, pods := newPlugin(t, false)
	if err := p.Resync(controller.NewDBResync(), kubeState(), 1, mapTxn{}); err != nil {
		t.Fatal(err)
	}
	// contiv-ksr reported the pod without IP; CNI adds it
	id := podmodel.ID{Namespace: "x", Name: "new"}
	if _, err := p.Update(&controller.KubeStateChange{Resource: podmodel.Keyword, NewValue: &podmodel.Pod{Name: "new", Namespace: "x"}}, mapTxn{}); err != nil {
		t.Fatal(err)
	}
	im.pods[id] = "10.1.1.3"
	pods.pods[id] = &podmanager.LocalPod{ID: id}
	txn := mapTxn{}
	desc, err := p.Update(&podmanager.AddPod{Pod: id}, txn)
	if err != nil {
		t.Fatal(err)
	}
	if txn[vpp_acl.InterfaceKey("tap-new")] == nil || desc == "" {
		t.Errorf("AddPod staged %v (%q), want the pod's ACL list", txn, desc)
	}
	if err := p.Revert(&podmanager.AddPod{Pod: id}); err != nil {
		t.Fatal(err)
	}
	delete(im.pods, id)
	txn = mapTxn{}
	if _, err := p.Update(&podmanager.DeletePod{Pod: id}, txn); err != nil {
		t.Fatal(err)
	}
	if len(txn) != 0 {
		t.Errorf("DeletePod after a reverted AddPod staged %v", txn)
	}
}

// TestHandlesOnlyItsEvents, on an IPv6 cluster too: the plugin no longer turns
// itself off there (it rendered nothing: every IPv6 pod failed open).
func TestHandlesOnlyItsEventsAndPolicesIPv6(t *testing.T) {
	p, _, _ := newPlugin(t, true)
	for _, tt := range []struct {
		ev   controller.Event
		want bool
	}{
		{controller.NewDBResync(), true},
		{&controller.KubeStateChange{Resource: "policy"}, true},
		{&controller.KubeStateChange{Resource: "namespace"}, true},
		{&controller.KubeStateChange{Resource: "pod"}, true},
		{&controller.KubeStateChange{Resource: "service"}, false},
		{&podmanager.AddPod{}, true},
		{&podmanager.DeletePod{}, true},
	} {
		if got := p.HandlesEvent(tt.ev); got != tt.want {
			t.Errorf("HandlesEvent(%s) = %v", tt.ev, got)
		}
	}
	txn := mapTxn{}
	if err := p.Resync(controller.NewDBResync(), kubeState(), 1, txn); err != nil || txn[vpp_acl.InterfaceKey("tap-a")] == nil {
		t.Errorf("resync on an IPv6 cluster: %v, pod a has no ACLs: %v", err, txn)
	}
}

package ipam

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// ipStrings renders addresses for comparisons.
func ipStrings(ips []*net.IPNet) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func TestDualStackPodGetsAnAddressOfEachFamilyInOneCall(t *testing.T) {
	p := resynced(t, dualConf, 1)
	if got := p.Families(); !slices.Equal(got, []Family{IPv4, IPv6}) {
		t.Fatalf("Families() = %v, want [IPv4 IPv6]", got)
	}
	ips, err := p.AllocatePodIPs(pid("default/a"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.1.2/32", "fd00:10:1:1::2/128"}
	if got := ipStrings(ips); !slices.Equal(got, want) {
		t.Fatalf("AllocatePodIPs = %v, want %v", got, want)
	}
	again, _ := p.AllocatePodIPs(pid("default/a"), "", "")
	if got := ipStrings(again); !slices.Equal(got, want) {
		t.Errorf("second AllocatePodIPs = %v, want the same %v", got, want)
	}
	if got := ipStrings(p.GetPodIPs(pid("default/a"))); !slices.Equal(got, want) {
		t.Errorf("GetPodIPs = %v, want %v", got, want)
	}
	// AllocatePodIP (the IPv4 callers' method) allocates both families as well.
	b, _ := p.AllocatePodIP(pid("default/b"), "", "")
	if b.String() != "10.1.1.3/32" || len(p.GetPodIPs(pid("default/b"))) != 2 {
		t.Errorf("AllocatePodIP gave %v, pod b holds %v: want 10.1.1.3/32 and an IPv6 address", b, p.GetPodIPs(pid("default/b")))
	}
	for _, ip := range []string{"10.1.1.2", "fd00:10:1:1::2"} {
		if id, ok := p.GetPodFromIP(net.ParseIP(ip)); !ok || id != pid("default/a") {
			t.Errorf("GetPodFromIP(%s) = %v, %v, want default/a", ip, id, ok)
		}
	}
	if id, err := p.NodeIDFromPodIP(net.ParseIP("fd00:10:1:7::9")); err != nil || id != 7 {
		t.Errorf("NodeIDFromPodIP(IPv6 of node 7) = %d, %v", id, err)
	}
	if err := p.ReleasePodIPs(pid("default/a")); err != nil {
		t.Fatal(err)
	}
	if p.GetPodIPs(pid("default/a")) != nil {
		t.Errorf("after release, pod a holds %v", p.GetPodIPs(pid("default/a")))
	}
	for _, ip := range []string{"10.1.1.2", "fd00:10:1:1::2"} {
		if _, ok := p.GetPodFromIP(net.ParseIP(ip)); ok {
			t.Errorf("%s still held after release", ip)
		}
	}
}

func TestDualStackAllocationIsAllOrNothing(t *testing.T) {
	// IPv6 pod subnets of 8 addresses: network, gateway, 4 pods, NAT loopback, last.
	conf := strings.Replace(dualConf, "    vppHostSubnetCIDR", "    podSubnetOneNodePrefixLen: 125\n    vppHostSubnetCIDR", 1)
	conf = strings.Replace(conf, "fd00:10:1::/48", "fd00:10:1::/117", 1)
	p := resynced(t, conf, 1)
	for i := 0; i < 4; i++ {
		if _, err := p.AllocatePodIPs(pid("default/p"+string(rune('a'+i))), "", ""); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
	_, err := p.AllocatePodIPs(pid("default/late"), "", "")
	if !errors.Is(err, ErrNoFreeIP) || !strings.Contains(err.Error(), "IPv6") {
		t.Fatalf("fifth pod: %v, want an IPv6 ErrNoFreeIP", err)
	}
	if got := p.GetPodIPs(pid("default/late")); got != nil {
		t.Errorf("the failed pod kept %v: an allocation is all or nothing", got)
	}
	if _, ok := p.GetPodFromIP(net.ParseIP("10.1.1.6")); ok {
		t.Error("the IPv4 address of the failed allocation is still held")
	}
}

func TestDualStackRecoveryKeepsBothFamilies(t *testing.T) {
	// After a restart, the Kubernetes state (pod.ip_addresses) and the pod manager's
	// records give both families back; a record of the previous release (ip_address
	// only) keeps its IPv4 address and the pod gets an IPv6 one on its next ADD.
	dual := &podmodel.Pod{Name: "a", Namespace: "default", IpAddress: "10.1.1.7", IpAddresses: []string{"10.1.1.7", "fd00:10:1:1::7"}}
	old := kubePod("default/old", "10.1.1.8")
	other := &podmodel.Pod{Name: "x", Namespace: "default", IpAddress: "10.1.2.7", IpAddresses: []string{"10.1.2.7", "fd00:10:1:2::7"}}
	p, _ := testPlugin(t, dualConf, 1)
	p.LocalPodIPs = func() map[PodID][]net.IP {
		return map[PodID][]net.IP{pid("default/local"): {net.ParseIP("10.1.1.9"), net.ParseIP("fd00:10:1:1::9")}}
	}
	if err := p.Resync(api.NewDBResync(), kubeState(dual, old, other), 1, nil); err != nil {
		t.Fatal(err)
	}
	for pod, want := range map[string][]string{
		"default/a":     {"10.1.1.7/32", "fd00:10:1:1::7/128"},
		"default/local": {"10.1.1.9/32", "fd00:10:1:1::9/128"},
		"default/old":   {"10.1.1.8/32"},
		"default/x":     nil, // another node's pod
	} {
		if got := ipStrings(p.GetPodIPs(pid(pod))); !slices.Equal(got, want) && (len(got) != 0 || want != nil) {
			t.Errorf("pod %s recovered %v, want %v", pod, got, want)
		}
	}
	ips, err := p.AllocatePodIPs(pid("default/old"), "", "")
	if err != nil || len(ips) != 2 || ips[0].String() != "10.1.1.8/32" {
		t.Errorf("ADD of the upgraded pod = %v, %v: want its IPv4 address and a new IPv6 one", ips, err)
	}
	// A resync keeps the allocations (same subnets) and a second one changes nothing
	// (pod a, not local, keeps its addresses while the Kubernetes state shows it).
	if err := p.Resync(api.NewDBResync(), kubeState(dual, old, other), 2, nil); err != nil {
		t.Fatal(err)
	}
	if got := ipStrings(p.GetPodIPs(pid("default/a"))); len(got) != 2 {
		t.Errorf("after a second resync pod a holds %v", got)
	}
	// New pods never get a recovered address.
	next, _ := p.AllocatePodIPs(pid("default/new"), "", "")
	for _, ip := range next {
		if owner, _ := p.GetPodFromIP(ip.IP); owner != pid("default/new") {
			t.Errorf("new pod got %s, held by %v", ip, owner)
		}
	}
	if got := ipStrings(next); slices.Contains(got, "fd00:10:1:1::7/128") || slices.Contains(got, "fd00:10:1:1::9/128") {
		t.Errorf("new pod got a recovered address: %v", got)
	}
}

func TestDualStackKubeStateCollisionIsNotTakenTwice(t *testing.T) {
	// Two pods claim the same IPv6 address in a stale Kubernetes state: the first by
	// key keeps it, the second keeps only its IPv4 address.
	a := &podmodel.Pod{Name: "a", Namespace: "default", IpAddress: "10.1.1.2", IpAddresses: []string{"10.1.1.2", "fd00:10:1:1::2"}}
	b := &podmodel.Pod{Name: "b", Namespace: "default", IpAddress: "10.1.1.3", IpAddresses: []string{"10.1.1.3", "fd00:10:1:1::2"}}
	p := resynced(t, dualConf, 1, a, b)
	if got := ipStrings(p.GetPodIPs(pid("default/a"))); len(got) != 2 {
		t.Errorf("pod a holds %v, want both addresses", got)
	}
	if got := ipStrings(p.GetPodIPs(pid("default/b"))); !slices.Equal(got, []string{"10.1.1.3/32"}) {
		t.Errorf("pod b holds %v, want its IPv4 address only", got)
	}
}

func TestPerNodeAddressesOfBothFamilies(t *testing.T) {
	p := resynced(t, dualConf, 3)
	v6 := p.ThisNodeAddresses(IPv6)
	if v6 == nil {
		t.Fatal("no IPv6 addresses on a dual-stack node")
	}
	for what, got := range map[string]any{
		"pod subnet": v6.PodSubnet, "pod gateway": v6.PodGatewayIP, "NAT loopback": v6.NatLoopbackIP,
		"host subnet": v6.HostInterconnectSubnet, "VPP end": v6.HostInterconnectIPInVPP, "Linux end": v6.HostInterconnectIPInLinux,
		"VXLAN BVI": v6.VxlanIP, "node IP": v6.NodeIP, "services": v6.ServiceNetwork,
	} {
		want := map[string]string{
			"pod subnet": "fd00:10:1:3::/64", "pod gateway": "fd00:10:1:3::1", "NAT loopback": "fd00:10:1:3:ffff:ffff:ffff:fffe",
			"host subnet": "fd00:172:30::3:0/112", "VPP end": "fd00:172:30::3:1", "Linux end": "fd00:172:30::3:2",
			"VXLAN BVI": "fd00:192:168:30::3", "node IP": "fd00:192:168:16::3", "services": "fd00:10:96::/108",
		}[what]
		if s := got.(interface{ String() string }).String(); s != want {
			t.Errorf("IPv6 %s = %s, want %s", what, s, want)
		}
	}
	v4 := p.ThisNodeAddresses(IPv4)
	if v4.PodSubnet.String() != "10.1.3.0/24" || v4.VxlanIP.String() != "192.168.30.3" || v4.PodGatewayIP.String() != "10.1.3.1" {
		t.Errorf("IPv4 addresses %+v", v4)
	}
	other, err := p.NodeAddresses(IPv6, 9)
	if err != nil || other.PodSubnet.String() != "fd00:10:1:9::/64" || other.VxlanIP.String() != "fd00:192:168:30::9" {
		t.Errorf("NodeAddresses(IPv6, 9) = %+v, %v", other, err)
	}
	if _, err := p.NodeAddresses(IPv6, 1<<16+1); !errors.Is(err, ErrNodeIDOutOfRange) {
		t.Errorf("NodeAddresses of an ID beyond the plan: %v, want ErrNodeIDOutOfRange", err)
	}
	single := resynced(t, defaultConf, 3)
	if single.ThisNodeAddresses(IPv6) != nil || !slices.Equal(single.Families(), []Family{IPv4}) {
		t.Error("a single-stack IPv4 node answers for IPv6")
	}
	if _, err := single.NodeAddresses(IPv6, 3); err == nil {
		t.Error("NodeAddresses(IPv6) on an IPv4 cluster succeeded")
	}
}

func TestSingleStackIPv6FromIPv6KeysOnly(t *testing.T) {
	p := resynced(t, ipv6OnlyConf, 2)
	if got := p.Families(); !slices.Equal(got, []Family{IPv6}) {
		t.Fatalf("Families() = %v, want [IPv6]", got)
	}
	ips, err := p.AllocatePodIPs(pid("default/a"), "", "")
	if err != nil || len(ips) != 1 || ips[0].String() != "fd00:10:1:2::2/128" {
		t.Fatalf("AllocatePodIPs = %v, %v", ips, err)
	}
	if p.PodGatewayIP().String() != "fd00:10:1:2::1" || p.ThisNodeAddresses(IPv4) != nil {
		t.Errorf("gateway %v, IPv4 addresses %v", p.PodGatewayIP(), p.ThisNodeAddresses(IPv4))
	}
}

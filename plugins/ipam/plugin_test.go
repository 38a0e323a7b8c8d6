package ipam

import (
	"fmt"
	"net"
	"sync"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

func TestThisNodeAddressPlan(t *testing.T) {
	tests := []struct {
		name                      string
		conf                      string
		nodeID                    uint32
		podSubnet, gateway, natLo string
		firstPod                  string
		hostSubnet, vppEnd, linux string
		nodeIP, vxlanIP           string
	}{
		{"default config node 1", defaultConf, 1,
			"10.1.1.0/24", "10.1.1.1", "10.1.1.254", "10.1.1.2/32",
			"172.30.1.0/24", "172.30.1.1", "172.30.1.2", "192.168.16.1", "192.168.30.1"},
		{"default config node 256 (block 0)", defaultConf, 256,
			"10.1.0.0/24", "10.1.0.1", "10.1.0.254", "10.1.0.2/32",
			"172.30.0.0/24", "172.30.0.1", "172.30.0.2", "", ""},
		{"/22 per node, node 3", conf22PerNode, 3,
			"10.128.12.0/22", "10.128.12.1", "10.128.15.254", "10.128.12.2/32",
			"172.30.3.0/24", "172.30.3.1", "172.30.3.2", "192.168.16.3", "192.168.30.3"},
		{">256 nodes, node 300", confBigCluster, 300,
			"10.1.44.0/24", "10.1.44.1", "10.1.44.254", "10.1.44.2/32",
			"172.16.18.192/28", "172.16.18.193", "172.16.18.194", "192.168.1.44", "100.64.1.44"},
		{">256 nodes, node 65535", confBigCluster, 65535,
			"10.255.255.0/24", "10.255.255.1", "10.255.255.254", "10.255.255.2/32",
			"172.31.255.240/28", "172.31.255.241", "172.31.255.242", "", ""},
		{"contivCIDR node 1", confContivCIDR, 1,
			"10.128.0.128/25", "10.128.0.129", "10.128.0.254", "10.128.0.130/32",
			"10.129.0.128/25", "10.129.0.129", "10.129.0.130", "10.130.0.1", "10.130.2.1"},
		{"IPv6 node 1", ipv6Conf, 1,
			"2001:0:0:1::/64", "2001:0:0:1::1", "2001::1:ffff:ffff:ffff:fffe", "2001:0:0:1::2/128",
			"2002::1:0/112", "2002::1:1", "2002::1:2", "fe10::1", "2005::1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := resynced(t, tc.conf, tc.nodeID)
			check := func(what, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %s, want %s", what, got, want)
				}
			}
			check("PodSubnetThisNode", p.PodSubnetThisNode().String(), tc.podSubnet)
			check("PodGatewayIP", p.PodGatewayIP().String(), tc.gateway)
			check("NatLoopbackIP", p.NatLoopbackIP().String(), tc.natLo)
			check("HostInterconnectSubnetThisNode", p.HostInterconnectSubnetThisNode().String(), tc.hostSubnet)
			check("HostInterconnectIPInVPP", p.HostInterconnectIPInVPP().String(), tc.vppEnd)
			check("HostInterconnectIPInLinux", p.HostInterconnectIPInLinux().String(), tc.linux)
			ip, err := p.AllocatePodIP(pid("default/first"), "", "")
			if err != nil {
				t.Fatal(err)
			}
			check("first pod IP", ip.String(), tc.firstPod)
			if tc.nodeIP != "" {
				nodeIP, _, err := p.NodeIPAddress(tc.nodeID)
				checkErr(t, err, "")
				check("NodeIPAddress", nodeIP.String(), tc.nodeIP)
			}
			if tc.vxlanIP != "" {
				vxlanIP, _, err := p.VxlanIPAddress(tc.nodeID)
				checkErr(t, err, "")
				check("VxlanIPAddress", vxlanIP.String(), tc.vxlanIP)
			}
			if got, err := p.NodeIDFromPodIP(ip.IP); err != nil || got != tc.nodeID {
				t.Errorf("NodeIDFromPodIP(%s) = %d, %v", ip.IP, got, err)
			}
		})
	}
}

func TestClusterWideRangesComeFromTheConfig(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	if p.PodSubnetAllNodes().String() != "10.1.0.0/16" || p.HostInterconnectSubnetAllNodes().String() != "172.30.0.0/16" ||
		p.ServiceNetwork().String() != "10.96.0.0/12" {
		t.Errorf("ranges %s %s %s", p.PodSubnetAllNodes(), p.HostInterconnectSubnetAllNodes(), p.ServiceNetwork())
	}
	other, err := p.PodSubnetOtherNode(7)
	if err != nil || other.String() != "10.1.7.0/24" {
		t.Errorf("PodSubnetOtherNode(7) = %v, %v", other, err)
	}
	other, err = p.HostInterconnectSubnetOtherNode(7)
	if err != nil || other.String() != "172.30.7.0/24" {
		t.Errorf("HostInterconnectSubnetOtherNode(7) = %v, %v", other, err)
	}
	_, err = p.PodSubnetOtherNode(1000)
	checkErr(t, err, "nodeID is out of the valid range: nodeID 1000 is not in 1-256")
	if cfg := p.GetIPAMConfigForJSON(); cfg == nil || cfg.PodSubnetCIDR != "10.1.0.0/16" || cfg.NodeInterconnectCIDR != "192.168.16.0/24" {
		t.Errorf("GetIPAMConfigForJSON = %+v", cfg)
	}
	// Results are copies.
	p.PodSubnetThisNode().IP[2] = 99
	p.PodGatewayIP()[3] = 99
	if p.PodSubnetThisNode().String() != "10.1.1.0/24" || p.PodGatewayIP().String() != "10.1.1.1" {
		t.Error("a caller changed the plugin's state through a returned value")
	}
}

func TestNodeIPAddressSkipsTheStaticDefaultGateway(t *testing.T) {
	p := resynced(t, defaultConf+"  defaultGateway: 192.168.16.1\n", 1)
	for id, want := range map[uint32]string{1: "192.168.16.2", 2: "192.168.16.3", 100: "192.168.16.101"} {
		ip, network, err := p.NodeIPAddress(id)
		if err != nil || ip.String() != want || network.String() != "192.168.16.0/24" {
			t.Errorf("NodeIPAddress(%d) = %v %v %v, want %s", id, ip, network, err, want)
		}
	}
}

func TestNodeIPAddressNeedsNodeInterconnectCIDR(t *testing.T) {
	p := resynced(t, "ipamConfig:\n  nodeInterconnectDHCP: true\n", 1)
	_, _, err := p.NodeIPAddress(1)
	checkErr(t, err, "node IP of nodeID 1: nodeInterconnectCIDR is not configured")
}

func TestAllocatePodIPIsIdempotentPerPod(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	a1, _ := p.AllocatePodIP(pid("default/a"), "", "")
	b, _ := p.AllocatePodIP(pid("default/b"), "", "")
	a2, err := p.AllocatePodIP(pid("default/a"), "", "")
	if err != nil || a1.String() != "10.1.1.2/32" || a2.String() != a1.String() || b.String() != "10.1.1.3/32" {
		t.Errorf("a %s, again %s (%v), b %s", a1, a2, err, b)
	}
	if got := p.GetPodIP(pid("default/a")); got.String() != "10.1.1.2/32" {
		t.Errorf("GetPodIP = %s", got)
	}
	if got, ok := p.GetPodFromIP(net.ParseIP("10.1.1.3")); !ok || got != pid("default/b") {
		t.Errorf("GetPodFromIP = %v %v", got, ok)
	}
}

func TestReleaseFreesAllIPsOfThePodForLaterReuse(t *testing.T) {
	p := resynced(t, defaultConf+"  podSubnetOneNodePrefixLen: 29\n", 1) // 10.1.0.8/29: .10-.13
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := p.AllocatePodIP(pid("ns/"+name), "", ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err := p.AllocatePodIP(pid("ns/e"), "", "")
	checkErr(t, err, "allocate IP for pod ns/e: no free IP address in pod subnet 10.1.0.8/29 (4 allocated)")

	if err := p.ReleasePodIPs(pid("ns/b")); err != nil {
		t.Fatal(err)
	}
	if err := p.ReleasePodIPs(pid("ns/unknown")); err != nil {
		t.Errorf("releasing a pod without IPs: %v", err)
	}
	if p.GetPodIP(pid("ns/b")) != nil {
		t.Error("released pod still has an IP")
	}
	if _, ok := p.GetPodFromIP(net.ParseIP("10.1.0.11")); ok {
		t.Error("released IP still has an owner")
	}
	ip, err := p.AllocatePodIP(pid("ns/e"), "", "")
	if err != nil || ip.String() != "10.1.0.11/32" {
		t.Errorf("re-allocation got %v, %v", ip, err)
	}
}

func TestPodIPsAreUniqueAndNeverGatewayOrNATLoopbackUntilExhausted(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	seen := map[string]bool{}
	for k := 0; k < 252; k++ {
		ip, err := p.AllocatePodIP(PodID{Name: fmt.Sprint("p", k), Namespace: "default"}, "", "")
		if err != nil {
			t.Fatalf("pod %d: %v", k, err)
		}
		s := ip.IP.String()
		if seen[s] || s == "10.1.1.1" || s == "10.1.1.254" || s == "10.1.1.255" || s == "10.1.1.0" {
			t.Fatalf("pod %d got %s", k, s)
		}
		seen[s] = true
	}
	_, err := p.AllocatePodIP(pid("default/one-too-many"), "", "")
	checkErr(t, err, "no free IP address in pod subnet 10.1.1.0/24 (252 allocated)")
}

func TestRestartRebuildsAllocationsFromKubeState(t *testing.T) {
	pods := []*podmodel.Pod{
		kubePod("default/web-1", "10.1.1.2"),
		kubePod("default/web-2", "10.1.1.3"),
		kubePod("kube-system/dns", "10.1.1.7"),
		kubePod("default/spaces", " 10.1.1.9 "),
		kubePod("default/highest", "10.1.1.253"),
		kubePod("default/on-node-2", "10.1.2.2"),             // another node's pod
		kubePod("other/on-node-256", "10.1.0.5"),             // block 0 is node 256's
		kubePod("kube-system/proxy", "192.168.16.1"),         // host network
		kubePod("default/pending", ""),                       // no IP yet
		kubePod("default/bad-ip", "not-an-ip"),               // skipped
		kubePod("default/ipv6", "2001:db8::1"),               // other family
		kubePod("default/on-gateway", "10.1.1.1"),            // impossible: skipped
		kubePod("default/on-nat-loopback", "10.1.1.254"),     // impossible: skipped
		kubePod("default/zz-duplicate-of-web-1", "10.1.1.2"), // conflict: the first key wins
	}
	p := resynced(t, defaultConf, 1, pods...)

	want := map[string]string{
		"default/web-1": "10.1.1.2/32", "default/web-2": "10.1.1.3/32", "kube-system/dns": "10.1.1.7/32",
		"default/spaces": "10.1.1.9/32", "default/highest": "10.1.1.253/32",
	}
	for pod, ip := range want {
		if got := p.GetPodIP(pid(pod)); got.String() != ip {
			t.Errorf("%s: GetPodIP = %s, want %s", pod, got, ip)
		}
	}
	for _, pd := range pods[5:] {
		if got := p.GetPodIP(PodID{Name: pd.Name, Namespace: pd.Namespace}); got != nil {
			t.Errorf("%s/%s got %s from the Kubernetes state", pd.Namespace, pd.Name, got)
		}
	}
	if owner, ok := p.GetPodFromIP(net.ParseIP("10.1.1.2")); !ok || owner != pid("default/web-1") {
		t.Errorf("10.1.1.2 is held by %v", owner)
	}
	if n := len(p.Allocations().Pods); n != len(want) {
		t.Fatalf("%d pods hold IPs, want %d", n, len(want))
	}

	// Allocation continues after the highest address in use (wrapping to the first
	// free one) and never hands out an address a running pod holds.
	for k := 0; k < 252-len(want); k++ {
		ip, err := p.AllocatePodIP(PodID{Name: fmt.Sprint("new", k), Namespace: "default"}, "", "")
		if err != nil {
			t.Fatalf("new pod %d: %v", k, err)
		}
		if k == 0 && ip.String() != "10.1.1.4/32" {
			t.Errorf("first new pod after the restart got %s, want 10.1.1.4", ip)
		}
		for pod, held := range want {
			if ip.String() == held {
				t.Fatalf("new pod %d got %s, held by %s", k, ip, pod)
			}
		}
	}
	_, err := p.AllocatePodIP(pid("default/full"), "", "")
	checkErr(t, err, "no free IP address in pod subnet 10.1.1.0/24 (252 allocated)")
}

func TestResyncKeepsAllocationsTheKubeStateDoesNotShowYet(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	a, _ := p.AllocatePodIP(pid("default/a"), "", "")
	// A healing resync before KSR reflected pod a: its IP must stay taken.
	if err := p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(), 2, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.GetPodIP(pid("default/a")); got.String() != a.String() {
		t.Errorf("pod a lost its IP: %v", got)
	}
	b, _ := p.AllocatePodIP(pid("default/b"), "", "")
	if b.String() != "10.1.1.3/32" {
		t.Errorf("pod b got %s", b)
	}
}

func TestResyncPrefersTheAgentsAllocationOverStaleKubeState(t *testing.T) {
	p := resynced(t, defaultConf, 1, kubePod("default/web-0", "10.1.1.2"))
	// web-0 is deleted and re-created: CNI DEL released .2, CNI ADD gave it .3, but
	// the Kubernetes state still shows .2.
	_ = p.ReleasePodIPs(pid("default/web-0"))
	ip, _ := p.AllocatePodIP(pid("default/web-0"), "", "")
	if ip.String() != "10.1.1.3/32" {
		t.Fatalf("re-created web-0 got %s", ip)
	}
	if err := p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(kubePod("default/web-0", "10.1.1.2")), 2, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.GetPodIP(pid("default/web-0")); got.String() != "10.1.1.3/32" {
		t.Errorf("web-0 has %s after the resync, want its live 10.1.1.3", got)
	}
	if _, ok := p.GetPodFromIP(net.ParseIP("10.1.1.2")); ok {
		t.Error("the stale 10.1.1.2 of web-0 is still recorded")
	}
}

func TestResyncFailsWithoutUsableNodeID(t *testing.T) {
	p, ns := testPlugin(t, defaultConf, 0)
	err := p.Resync(api.NewDBResync(), kubeState(), 1, nil)
	checkErr(t, err, `ipam resync: node "node1" has no node ID yet`)
	ns.id = 257
	err = p.Resync(api.NewDBResync(), kubeState(), 1, nil)
	checkErr(t, err, "ipam resync: VPP-host subnet of nodeID 257: 172.30.0.0/16 cut into /24 per node: nodeID is out of the valid range: nodeID 257 is not in 1-256")
}

func TestAPIBeforeTheFirstResync(t *testing.T) {
	p, _ := testPlugin(t, defaultConf, 1)
	if p.PodSubnetThisNode() != nil || p.PodGatewayIP() != nil || p.NatLoopbackIP() != nil ||
		p.HostInterconnectIPInVPP() != nil || p.HostInterconnectIPInLinux() != nil || p.HostInterconnectSubnetThisNode() != nil {
		t.Error("this node's addresses are known before the first resync")
	}
	_, err := p.AllocatePodIP(pid("default/a"), "", "")
	checkErr(t, err, "allocate IP for pod default/a: the IPAM is not resynced yet")
	_, err = p.AllocatePodCustomIfIP(pid("default/a"), "memif1", "")
	checkErr(t, err, "the IPAM is not resynced yet")
	if p.GetPodIP(pid("default/a")) != nil || p.GetPodCustomIfIP(pid("default/a"), "memif1", "") != nil {
		t.Error("IPs known before the first resync")
	}
	if _, ok := p.GetPodFromIP(net.ParseIP("10.1.1.2")); ok {
		t.Error("owner known before the first resync")
	}
	if err := p.ReleasePodIPs(pid("default/a")); err != nil {
		t.Error(err)
	}
	if len(p.Allocations().Pods) != 0 || p.NodeID() != 0 {
		t.Error("allocations before the first resync")
	}
	// Node-independent answers work already.
	if ip, _, err := p.NodeIPAddress(3); err != nil || ip.String() != "192.168.16.3" {
		t.Errorf("NodeIPAddress(3) = %v, %v", ip, err)
	}
}

func TestInitChecksDependenciesAndConfig(t *testing.T) {
	cc := contivConf(t, defaultConf)
	tests := []struct {
		deps    Deps
		wantErr string
	}{
		{Deps{NodeSync: &fakeNodeSync{}}, "ipam: Deps.ContivConf is required"},
		{Deps{ContivConf: cc}, "ipam: Deps.NodeSync is required"},
		{Deps{ContivConf: contivconfNotInitialised{cc}, NodeSync: &fakeNodeSync{}}, "contivconf has no ipamConfig"},
		{Deps{ContivConf: cc, NodeSync: &fakeNodeSync{}}, ""},
	}
	for _, tc := range tests {
		p := NewPlugin(tc.deps)
		checkErr(t, p.Init(), tc.wantErr)
		if p.String() != "ipam" || p.Close() != nil {
			t.Error("String/Close")
		}
	}
}

func TestHandlesEveryResyncPodChangesAndNodeUpdateOnlyWithExternalIPAM(t *testing.T) {
	internal, _ := testPlugin(t, defaultConf, 1)
	external, _ := testPlugin(t, externalConf, 1)
	tests := []struct {
		ev                 api.Event
		internal, external bool
	}{
		{api.NewDBResync(), true, true},
		{&api.HealingResync{Type: api.AfterError}, true, true},
		{&PodCIDRChange{}, true, true},
		{&api.KubeStateChange{Resource: "pod"}, true, true},
		{&api.KubeStateChange{Resource: "service"}, false, false},
		{nodeUpdate{}, false, true},
		{api.NewShutdown(), false, false},
	}
	for _, tc := range tests {
		if got := internal.HandlesEvent(tc.ev); got != tc.internal {
			t.Errorf("internal IPAM handles %s: %v", tc.ev.GetName(), got)
		}
		if got := external.HandlesEvent(tc.ev); got != tc.external {
			t.Errorf("external IPAM handles %s: %v", tc.ev.GetName(), got)
		}
	}
	if desc, err := internal.Update(nodeUpdate{}, nil); desc != "" || err != nil {
		t.Errorf("internal IPAM Update: %q %v", desc, err)
	}
	if internal.Revert(nodeUpdate{}) != nil {
		t.Error("Revert failed")
	}
}

func TestPodCIDRChangeIsANonBlockingUpstreamResync(t *testing.T) {
	ev := &PodCIDRChange{LocalPodCIDR: mustCIDR(t, "10.10.5.0/24")}
	if ev.GetName() != "Pod CIDR Change" || ev.Method() != api.UpstreamResync || ev.IsBlocking() ||
		ev.String() != "Pod CIDR Change (new pod CIDR of this node: 10.10.5.0/24)" {
		t.Errorf("event %q %v %v %q", ev.GetName(), ev.Method(), ev.IsBlocking(), ev.String())
	}
	ev.Done(nil)
}

func TestCustomInterfaceIPs(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	main, _ := p.AllocatePodIP(pid("default/a"), "", "")
	c1, err := p.AllocatePodCustomIfIP(pid("default/a"), "memif1", "")
	checkErr(t, err, "")
	c1again, _ := p.AllocatePodCustomIfIP(pid("default/a"), "memif1", DefaultPodNetworkName)
	if main.String() != "10.1.1.2/32" || c1.String() != "10.1.1.3" || !c1again.Equal(c1) {
		t.Errorf("main %s, custom %s, again %s", main, c1, c1again)
	}
	if got := p.GetPodCustomIfIP(pid("default/a"), "memif1", ""); !got.Equal(c1) {
		t.Errorf("GetPodCustomIfIP = %s", got)
	}
	if p.GetPodCustomIfIP(pid("default/a"), "memif1", "other-net") != nil || p.GetPodCustomIfIP(pid("default/a"), "", "") != nil {
		t.Error("custom IP found in another network or without a name")
	}
	if got, ok := p.GetPodFromIP(c1); !ok || got != pid("default/a") {
		t.Errorf("GetPodFromIP(custom) = %v %v", got, ok)
	}
	_, err = p.AllocatePodCustomIfIP(pid("default/a"), "memif2", "blue")
	checkErr(t, err, `allocate IP for interface memif2 of pod default/a: network "blue" is not supported (only "default")`)
	_, err = p.AllocatePodCustomIfIP(pid("default/a"), "", "")
	checkErr(t, err, "no interface name given")
	_ = p.ReleasePodIPs(pid("default/a"))
	if p.GetPodIP(pid("default/a")) != nil || p.GetPodCustomIfIP(pid("default/a"), "memif1", "") != nil {
		t.Error("release left IPs behind")
	}
}

func TestConcurrentCallersNeverShareAnIP(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	var wg sync.WaitGroup
	results := make([]string, 8*20)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 20; k++ {
				id := PodID{Name: fmt.Sprintf("g%d-%d", g, k), Namespace: "default"}
				ip, err := p.AllocatePodIP(id, "", "")
				if err != nil {
					t.Error(err)
					return
				}
				results[g*20+k] = ip.String()
				_ = p.GetPodIP(id)
				_, _ = p.GetPodFromIP(ip.IP)
				_ = p.Allocations()
				if k%2 == 0 {
					_ = p.ReleasePodIPs(id)
					results[g*20+k] = ""
				}
			}
		}(g)
	}
	for k := 0; k < 5; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(), 2, nil)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range results {
		if r == "" {
			continue
		}
		if seen[r] {
			t.Fatalf("%s handed out twice", r)
		}
		seen[r] = true
	}
	if len(seen) != 80 || len(p.Allocations().Pods) != 80 {
		t.Errorf("%d pods hold IPs, want 80", len(p.Allocations().Pods))
	}
}

// contivconfNotInitialised is a contivconf that has no ipamConfig yet.
type contivconfNotInitialised struct{ contivconf.API }

func (contivconfNotInitialised) GetIPAMConfig() *contivconf.IPAMConfig { return nil }

func TestRoundRobinContinuesAcrossRuntimeResyncs(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	for _, name := range []string{"a", "b", "c"} { // .2 .3 .4
		_, _ = p.AllocatePodIP(pid("default/"+name), "", "")
		_ = p.ReleasePodIPs(pid("default/" + name))
	}
	if err := p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(), 2, nil); err != nil {
		t.Fatal(err)
	}
	ip, _ := p.AllocatePodIP(pid("default/d"), "", "")
	if ip.String() != "10.1.1.5/32" {
		t.Errorf("after a runtime resync the next pod got %s, want 10.1.1.5 (recently released addresses come last)", ip)
	}
}

func TestUninitialisedPluginAnswersWithoutCrashing(t *testing.T) {
	var p Plugin
	p.Log = quietLog()
	checkErr(t, p.Resync(api.NewDBResync(), kubeState(), 1, nil), "ipam resync: the plugin is not initialised")
	_, _, err := p.NodeIPAddress(1)
	checkErr(t, err, "nodeInterconnectCIDR is not configured")
	_, _, err = p.VxlanIPAddress(1)
	checkErr(t, err, "vxlanCIDR is not configured")
	_, err = p.PodSubnetOtherNode(1)
	checkErr(t, err, "no cluster range is configured")
	_, err = p.HostInterconnectSubnetOtherNode(1)
	checkErr(t, err, "no cluster range is configured")
	_, err = p.NodeIDFromPodIP(net.ParseIP("10.1.1.2"))
	checkErr(t, err, "it is not in the pod subnet <none>")
	_, err = p.AllocatePodIP(pid("a/b"), "", "")
	checkErr(t, err, "not resynced yet")
	if p.PodSubnetAllNodes() != nil || p.ServiceNetwork() != nil || p.HostInterconnectSubnetAllNodes() != nil ||
		p.GetIPAMConfigForJSON() != nil || p.HandlesEvent(nodeUpdate{}) {
		t.Error("answers without configuration")
	}
	if desc, err := p.Update(nodeUpdate{}, nil); desc != "" || err != nil {
		t.Errorf("Update = %q, %v", desc, err)
	}
}

func TestRestartKeepsIPsRecordedForLocalPodsTheKubeStateDoesNotShow(t *testing.T) {
	// The agent restarted after CNI ADD gave pod a 10.1.1.5 but before the kubelet
	// reported it: only the pod manager's record knows the address.
	p, _ := testPlugin(t, defaultConf, 1)
	p.LocalPodIPs = func() map[PodID][]net.IP {
		return map[PodID][]net.IP{
			pid("default/a"):     {net.ParseIP("10.1.1.5")},
			pid("default/other"): {net.ParseIP("10.1.2.9")}, // not this node's subnet: ignored
			pid("default/no-ip"): nil,
		}
	}
	// The Kubernetes state is behind for pod a and shows pod b.
	if err := p.Resync(api.NewDBResync(), kubeState(kubePod("default/a", ""), kubePod("default/b", "10.1.1.2")), 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.GetPodIP(pid("default/a")); got.String() != "10.1.1.5/32" {
		t.Errorf("pod a lost its recorded IP: %v", got)
	}
	if got := p.GetPodIP(pid("default/b")); got.String() != "10.1.1.2/32" {
		t.Errorf("pod b = %v", got)
	}
	if p.GetPodIP(pid("default/other")) != nil || p.GetPodIP(pid("default/no-ip")) != nil {
		t.Error("records outside the pod subnet or without IP were taken")
	}
	c, _ := p.AllocatePodIP(pid("default/c"), "", "")
	if c.String() == "10.1.1.5/32" || c.String() == "10.1.1.2/32" {
		t.Errorf("new pod c got an address in use: %s", c)
	}
}

package ipam

import (
	"fmt"
	"net"
	"slices"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// podChange is the KubeStateChange of a pod from prev to next (nil: absent).
func podChange(prev, next *podmodel.Pod) *api.KubeStateChange {
	ev := &api.KubeStateChange{Resource: podmodel.Keyword}
	for _, pd := range []*podmodel.Pod{prev, next} {
		if pd != nil {
			ev.Key = podmodel.Key(pd.Name, pd.Namespace)
		}
	}
	if prev != nil {
		ev.PrevValue = prev
	}
	if next != nil {
		ev.NewValue = next
	}
	return ev
}

// update hands the plugin an event as the controller does, failing the test on an
// error.
func update(t *testing.T, p *Plugin, ev api.Event) {
	t.Helper()
	if !p.HandlesEvent(ev) {
		t.Fatalf("the IPAM does not handle %s", ev)
	}
	if _, err := p.Update(ev, nil); err != nil {
		t.Fatalf("Update(%s): %v", ev, err)
	}
}

// allocateAll allocates addresses to new pods until the pool is exhausted and returns
// how many it got; none of them may be one of held.
func allocateAll(t *testing.T, p *Plugin, held ...string) int {
	t.Helper()
	for n := 0; ; n++ {
		ip, err := p.AllocatePodIP(PodID{Name: fmt.Sprint("fill-", n), Namespace: "fill"}, "", "")
		if err != nil {
			return n
		}
		if slices.Contains(held, ip.IP.String()) {
			t.Fatalf("new pod %d got %s, which a pod holds", n, ip.IP)
		}
	}
}

// TestPodDeletedWhileEtcdIsDownHoldsNoIPOnceKubernetesReflectsTheDeletion is issue #27's
// chaos case after an agent restart: the pod's CNI DEL was handled while etcd was down,
// the agent restarted, and its resync's Kubernetes copy (no contiv-ksr leader yet)
// still shows the pod, so the IPAM takes the address for it tentatively. When
// contiv-ksr reflects the deletion, the address is free again: all 252 addresses of the
// pod subnet go to new pods.
func TestPodDeletedWhileEtcdIsDownHoldsNoIPOnceKubernetesReflectsTheDeletion(t *testing.T) {
	gone := kubePod("default/old-1", "10.1.1.7")
	running := kubePod("default/old-0", "10.1.1.6")
	p, _ := testPlugin(t, defaultConf, 1)
	p.LocalPodIPs = func() map[PodID][]net.IP { return map[PodID][]net.IP{pid("default/old-0"): {net.ParseIP("10.1.1.6")}} }
	if err := p.Resync(api.NewDBResync(), kubeState(gone, running), 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.GetPodIP(pid("default/old-1")); got.String() != "10.1.1.7/32" {
		t.Fatalf("the pod that the Kubernetes copy shows holds %v, want 10.1.1.7 kept from being given away", got)
	}
	update(t, p, podChange(gone, nil))
	if got := p.GetPodIP(pid("default/old-1")); got != nil {
		t.Errorf("the deleted pod still holds %s", got)
	}
	if who, held := p.GetPodFromIP(net.ParseIP("10.1.1.7")); held {
		t.Errorf("10.1.1.7 is still held by %v", who)
	}
	if got := p.GetPodIP(pid("default/old-0")); got.String() != "10.1.1.6/32" {
		t.Errorf("the running local pod lost its IP: %v", got)
	}
	if n := allocateAll(t, p, "10.1.1.6"); n != 251 {
		t.Errorf("new pods got %d addresses, want 251 (252 less the running pod's): an address leaked", n)
	}
}

// TestCNIDelBeforeAStaleResyncLeavesTheIPFree is the same case without the restart:
// the CNI DEL released the address, then the resync with etcd back shows the pod still
// holding it. The IPAM knows it released it and does not take it again, also at the
// next resync from a copy just as stale; the deletion reflected at last changes nothing.
func TestCNIDelBeforeAStaleResyncLeavesTheIPFree(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	ip, err := p.AllocatePodIP(pid("default/old-1"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	stale := kubePod("default/old-1", ip.IP.String())
	checkErr(t, p.ReleasePodIPs(pid("default/old-1")), "")
	for i := 2; i <= 3; i++ {
		if err := p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(stale), i, nil); err != nil {
			t.Fatal(err)
		}
		if got := p.GetPodIP(pid("default/old-1")); got != nil {
			t.Fatalf("resync %d from a copy behind the CNI DEL took %s again for the deleted pod", i, got)
		}
	}
	update(t, p, podChange(stale, nil))
	if n := allocateAll(t, p); n != 252 {
		t.Errorf("new pods got %d addresses, want all 252", n)
	}
}

// TestTentativeIPFollowsThePodInKubernetes: a tentative address goes when the pod moves
// to another node (an address of another node's subnet, or none yet) and is replaced
// when the pod shows another address of this node; a deletion then frees that one.
func TestTentativeIPFollowsThePodInKubernetes(t *testing.T) {
	for _, tc := range []struct {
		name, next string
		wantHeld   string // after the change; "" none
	}{
		{"moved to node 2", "10.1.2.9", ""},
		{"re-created, not scheduled yet", "", ""},
		{"another IP of this node", "10.1.1.9", "10.1.1.9/32"},
		{"the same IP", "10.1.1.7", "10.1.1.7/32"},
		{"the pod gateway (impossible)", "10.1.1.1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := kubePod("default/web-0", "10.1.1.7")
			p := resynced(t, defaultConf, 1, was)
			next := kubePod("default/web-0", tc.next)
			update(t, p, podChange(was, next))
			if got := p.GetPodIP(pid("default/web-0")); got.String() != tc.wantHeld && (got != nil || tc.wantHeld != "") {
				t.Fatalf("after the change the pod holds %v, want %q", got, tc.wantHeld)
			}
			if tc.wantHeld != "10.1.1.7/32" {
				if who, held := p.GetPodFromIP(net.ParseIP("10.1.1.7")); held {
					t.Errorf("the old 10.1.1.7 is still held by %v", who)
				}
			}
			update(t, p, podChange(next, nil))
			if n := allocateAll(t, p); n != 252 {
				t.Errorf("after the deletion new pods got %d addresses, want all 252", n)
			}
		})
	}
}

// TestDualStackTentativeIPsAreReleasedInBothFamilies: the deletion frees the pod's
// address of each family.
func TestDualStackTentativeIPsAreReleasedInBothFamilies(t *testing.T) {
	pd := &podmodel.Pod{Name: "a", Namespace: "default", IpAddress: "10.1.1.7", IpAddresses: []string{"10.1.1.7", "fd00:10:1:1::7"}}
	p := resynced(t, dualConf, 1, pd)
	if got := ipStrings(p.GetPodIPs(pid("default/a"))); len(got) != 2 {
		t.Fatalf("the pod holds %v, want both families", got)
	}
	moved := &podmodel.Pod{Name: "a", Namespace: "default", IpAddress: "10.1.1.7", IpAddresses: []string{"10.1.1.7", "fd00:10:1:2::7"}}
	update(t, p, podChange(pd, moved))
	if got := ipStrings(p.GetPodIPs(pid("default/a"))); !slices.Equal(got, []string{"10.1.1.7/32"}) {
		t.Errorf("after its IPv6 address changed to another node's the pod holds %v, want its IPv4 one only", got)
	}
	update(t, p, podChange(moved, nil))
	for _, ip := range []string{"10.1.1.7", "fd00:10:1:1::7"} {
		if who, held := p.GetPodFromIP(net.ParseIP(ip)); held {
			t.Errorf("%s is still held by %v", ip, who)
		}
	}
	if n := len(p.Allocations().Pods); n != 0 {
		t.Errorf("%d pods hold addresses, want none", n)
	}
}

// TestLocalPodsKeepTheirIPsWhateverKubernetesShows (issue #27 item 1): a pod with a CNI
// ADD on this node, recorded by the pod manager or added since, keeps its address when
// the Kubernetes state deletes it or shows it elsewhere; its CNI DEL releases it. The
// ADD of a pod whose address was tentative confirms it.
func TestLocalPodsKeepTheirIPsWhateverKubernetesShows(t *testing.T) {
	recorded := kubePod("default/recorded", "10.1.1.5")
	tentative := kubePod("default/tentative", "10.1.1.6")
	p, _ := testPlugin(t, dualConf, 1)
	p.LocalPodIPs = func() map[PodID][]net.IP {
		return map[PodID][]net.IP{pid("default/recorded"): {net.ParseIP("10.1.1.5")}}
	}
	if err := p.Resync(api.NewDBResync(), kubeState(recorded, tentative), 1, nil); err != nil {
		t.Fatal(err)
	}
	ips, err := p.AllocatePodIPs(pid("default/tentative"), "", "")
	if err != nil || ips[0].String() != "10.1.1.6/32" {
		t.Fatalf("the ADD of the pod got %v, %v: want its address 10.1.1.6", ips, err)
	}
	added, _ := p.AllocatePodIPs(pid("default/added"), "", "")
	for name, pd := range map[string]*podmodel.Pod{"recorded": recorded, "tentative": tentative} {
		update(t, p, podChange(pd, kubePod("default/"+name, "10.1.2.3")))
		update(t, p, podChange(pd, nil))
	}
	update(t, p, podChange(kubePod("default/added", added[0].IP.String()), nil))
	for pod, want := range map[string]string{"default/recorded": "10.1.1.5/32", "default/tentative": "10.1.1.6/32",
		"default/added": added[0].String()} {
		if got := p.GetPodIP(pid(pod)); got.String() != want {
			t.Errorf("local pod %s holds %v, want %s", pod, got, want)
		}
	}
	checkErr(t, p.ReleasePodIPs(pid("default/tentative")), "")
	if got := p.GetPodIPs(pid("default/tentative")); got != nil {
		t.Errorf("after its CNI DEL the pod holds %v", got)
	}
}

// TestPodUnknownToThePodManagerKeepsItsIPWhileKubernetesShowsIt: a pod that the
// Kubernetes state shows on this node with an address nobody holds (its ADD record
// lost, the state behind at the last resync) gets the address tentatively, so that no
// new pod gets it; a resync whose state no longer shows the pod frees it.
func TestPodUnknownToThePodManagerKeepsItsIPWhileKubernetesShowsIt(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	unknown := kubePod("default/unknown", "10.1.1.2")
	update(t, p, podChange(nil, unknown))
	if n := allocateAll(t, p, "10.1.1.2"); n != 251 {
		t.Errorf("new pods got %d addresses, want 251", n)
	}
	if err := p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(unknown), 2, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.GetPodIP(pid("default/unknown")); got.String() != "10.1.1.2/32" {
		t.Errorf("after a resync showing it the pod holds %v", got)
	}
	if err := p.Resync(&api.HealingResync{Type: api.AfterError}, kubeState(), 3, nil); err != nil {
		t.Fatal(err)
	}
	if who, held := p.GetPodFromIP(net.ParseIP("10.1.1.2")); held {
		t.Errorf("after a resync without the pod 10.1.1.2 is held by %v", who)
	}
}

// TestPodChangeCostsNoListOfTheLocalPods: following a pod change is O(1): it does not
// ask the pod manager for its pods.
func TestPodChangeCostsNoListOfTheLocalPods(t *testing.T) {
	p, _ := testPlugin(t, defaultConf, 1)
	calls := 0
	p.LocalPodIPs = func() map[PodID][]net.IP { calls++; return nil }
	if err := p.Resync(api.NewDBResync(), kubeState(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		pd := kubePod(fmt.Sprintf("default/p%d", i), fmt.Sprintf("10.1.1.%d", 2+i))
		update(t, p, podChange(nil, pd))
		update(t, p, podChange(pd, nil))
	}
	if calls != 1 {
		t.Errorf("the local pods were listed %d times, want once (the resync)", calls)
	}
}

// TestReleasedHintsAreBounded: the pool remembers at most maxReleasedHints released
// addresses, however many pods the Kubernetes state never shows deleted.
func TestReleasedHintsAreBounded(t *testing.T) {
	pool, err := newPodPool(mustCIDR(t, "10.1.1.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3*maxReleasedHints; i++ {
		id := PodID{Name: fmt.Sprint("p", i), Namespace: "default"}
		if _, err := pool.allocate(owner{pod: id}); err != nil {
			t.Fatal(err)
		}
		pool.release(id)
	}
	if n := len(pool.released); n > maxReleasedHints {
		t.Errorf("%d released hints kept, want at most %d", n, maxReleasedHints)
	}
}

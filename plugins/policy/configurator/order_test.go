package configurator

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/cache"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// TestIngressOfOnePeerRuleComesSortedAndEqualsTheSortedSet: the rules of an
// ingress rule with 60 dual-stack peer pods and three ports (one named, one
// of every port) come in the order of renderer.Compare, so normalizeList
// need not sort them; with an ipBlock too they are the same set as before
// (each peer address with each port), normalized to the same list.
func TestIngressOfOnePeerRuleComesSortedAndEqualsTheSortedSet(t *testing.T) {
	target := &cache.Pod{ID: podmodel.ID{Namespace: "x", Name: "t"}, IP: netip.MustParseAddr("10.1.1.2"),
		Ports: []cache.NamedPort{{Name: "http", Protocol: cache.TCP, Port: 8080}}}
	m := Match{PeerPods: map[podmodel.ID]*cache.Pod{}, Ports: []Port{{Protocol: renderer.TCP, First: 80, Last: 80},
		{Protocol: renderer.TCP, Name: "http"}, {Protocol: renderer.UDP}}}
	for i := 0; i < 60; i++ {
		v4, v6 := netip.AddrFrom4([4]byte{10, 1, byte(2 + i%3), byte(2 + i)}), netip.MustParseAddr(fmt.Sprintf("fd00:10:1:2::%x", 2+i))
		m.PeerPods[podmodel.ID{Namespace: "x", Name: fmt.Sprint("p", i)}] = &cache.Pod{IP: v4, IPs: []netip.Addr{v4, v6}}
	}
	got := appendIngress(nil, m, target)
	if !slices.IsSortedFunc(got, renderer.Compare) {
		t.Errorf("the rules of one peer rule are not in rule order:\n%v", got)
	}
	m.Blocks = []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fd00:99::/64")}
	got = appendIngress(nil, m, target)
	var want []renderer.ContivRule
	ports := []renderer.ContivRule{{Action: renderer.ActionPermit, Protocol: renderer.TCP, DestPortFirst: 80, DestPortLast: 80},
		{Action: renderer.ActionPermit, Protocol: renderer.TCP, DestPortFirst: 8080, DestPortLast: 8080},
		{Action: renderer.ActionPermit, Protocol: renderer.UDP}}
	for _, p := range m.PeerPods {
		for _, a := range p.IPs {
			for _, r := range ports {
				r.SrcNetwork = netip.PrefixFrom(a, a.BitLen())
				want = append(want, r)
			}
		}
	}
	for _, b := range m.Blocks {
		for _, r := range ports {
			r.SrcNetwork = b
			want = append(want, r)
		}
	}
	rand.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
	if g, w := normalizeList(got).rules, normalizeList(want).rules; !slices.Equal(g, w) {
		t.Errorf("normalized rules differ from the normalized set:\n got %v\nwant %v", g, w)
	}
}

package acl

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/cache"
)

// TestNewACLsTakeTheRulesTheyShareWithWhatTheyReplace: a pod's rules name 40
// remote peers (both addresses of each on a dual-stack node); one peer goes
// and another comes, as when a remote pod's label changes. In its ingress:
// the pod's new LOCAL ACL converts only the new peer's rules and takes the
// others from its old ACL. In its egress: its segments of GLOBAL do the same
// (the peers are in the cluster, so its EGRESS ACL does not name them).
// Every staged ACL equals what a resync of a fresh renderer stages.
func TestNewACLsTakeTheRulesTheyShareWithWhatTheyReplace(t *testing.T) {
	toPort443 := func(dst netip.Prefix) renderer.ContivRule {
		return renderer.ContivRule{Action: renderer.ActionPermit, DestNetwork: dst, Protocol: renderer.TCP, DestPortFirst: 443, DestPortLast: 443}
	}
	fromPort80 := func(src netip.Prefix) renderer.ContivRule { return from(src.String(), 80) }
	for _, c := range []struct {
		name    string
		ingress bool
		rule    func(netip.Prefix) renderer.ContivRule
	}{{"ingress", true, fromPort80}, {"egress", false, toPort443}} {
		for _, dual := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dual=%v", c.name, dual), func(t *testing.T) {
				conf := cache.Config{ClusterNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, NodeInterfaces: []string{"GbE"}}
				if dual {
					conf.ClusterNetworks = append(conf.ClusterNetworks, netip.MustParsePrefix("fd00:10:1::/48"))
					conf.AnyNetworks = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
				}
				// podOf is the pod with the 40 peers 2..41 but skip
				podOf := func(skip int) renderer.PodConfig {
					var rules []renderer.ContivRule
					for i := 2; i < 42; i++ {
						if i == skip {
							continue
						}
						rules = append(rules, c.rule(netip.MustParsePrefix(fmt.Sprintf("10.1.2.%d/32", i))))
						if dual {
							rules = append(rules, c.rule(netip.MustParsePrefix(fmt.Sprintf("fd00:10:1:2::%x/128", i))))
						}
					}
					rules = append(rules, denyAll)
					slices.SortFunc(rules, renderer.Compare)
					eg := []renderer.ContivRule{toPort443(netip.MustParsePrefix("8.8.8.8/32")), denyAll}
					p := pod("a", "10.1.1.2", rules, eg)
					if !c.ingress {
						p = pod("a", "10.1.1.2", nil, rules)
					}
					if dual {
						p.IPs = []netip.Addr{p.IP, netip.MustParseAddr("fd00:10:1:1::2")}
					}
					return p
				}
				r, txn := newRenderer()
				r.Cache.SetConfig(conf)
				if err := r.Render([]renderer.PodConfig{podOf(7)}, true); err != nil {
					t.Fatal(err)
				}
				after := podOf(30) // peer 30 goes, peer 7 comes
				if err := r.Render([]renderer.PodConfig{after}, false); err != nil {
					t.Fatal(err)
				}
				want := 1 // the new peer's rule (dual-stack: one per family)
				if dual {
					want = 2
				}
				if got := r.LastStats().Converted; got != want {
					t.Errorf("%d rules converted, want %d (the new peer's)", got, want)
				}
				fresh, freshTxn := newRenderer()
				fresh.Cache.SetConfig(conf)
				if err := fresh.Render([]renderer.PodConfig{after}, true); err != nil {
					t.Fatal(err)
				}
				for k, v := range freshTxn.values {
					if _, ok := v.(*vpp_acl.ACL); ok && !proto.Equal(txn.values[k], v) {
						t.Errorf("staged %s =\n%v\nwant\n%v", k, txn.values[k], v)
					}
				}
			})
		}
	}
}

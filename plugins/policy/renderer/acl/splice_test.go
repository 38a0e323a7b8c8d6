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

// TestNewTableTakesTheRulesItSharesWithTheTableItReplaces: a pod admits 40
// remote peers (both addresses of each on a dual-stack node); one peer goes
// and another comes, as when a remote pod's label changes. The pod's new
// LOCAL ACL converts only the new peer's rules and takes the others from its
// old ACL; every staged ACL equals what a resync of a fresh renderer stages.
func TestNewTableTakesTheRulesItSharesWithTheTableItReplaces(t *testing.T) {
	for _, dual := range []bool{false, true} {
		t.Run(fmt.Sprintf("dual=%v", dual), func(t *testing.T) {
			conf := cache.Config{ClusterNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, NodeInterfaces: []string{"GbE"}}
			if dual {
				conf.ClusterNetworks = append(conf.ClusterNetworks, netip.MustParsePrefix("fd00:10:1::/48"))
				conf.AnyNetworks = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
			}
			peers := func(skip int) []renderer.ContivRule {
				var in []renderer.ContivRule
				for i := 2; i < 42; i++ {
					if i == skip {
						continue
					}
					in = append(in, from(fmt.Sprintf("10.1.2.%d/32", i), 80))
					if dual {
						in = append(in, from(fmt.Sprintf("fd00:10:1:2::%x/128", i), 80))
					}
				}
				in = append(in, denyAll)
				slices.SortFunc(in, renderer.Compare)
				return in
			}
			eg := []renderer.ContivRule{{Action: renderer.ActionPermit, DestNetwork: netip.MustParsePrefix("8.8.8.8/32"), Protocol: renderer.UDP,
				DestPortFirst: 53, DestPortLast: 53}, denyAll}
			podOf := func(in []renderer.ContivRule) renderer.PodConfig {
				p := pod("a", "10.1.1.2", in, eg)
				if dual {
					p.IPs = []netip.Addr{p.IP, netip.MustParseAddr("fd00:10:1:1::2")}
				}
				return p
			}
			r, txn := newRenderer()
			r.Cache.SetConfig(conf)
			if err := r.Render([]renderer.PodConfig{podOf(peers(7))}, true); err != nil {
				t.Fatal(err)
			}
			after := podOf(peers(30)) // peer 30 goes, peer 7 comes
			if err := r.Render([]renderer.PodConfig{after}, false); err != nil {
				t.Fatal(err)
			}
			want := 1
			if dual {
				want = 2
			}
			if got := r.LastStats().Converted; got != want {
				t.Errorf("%d rules of the new table converted, want %d (the new peer's)", got, want)
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

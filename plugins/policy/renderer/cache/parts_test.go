package cache

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// dualCfg is podCfg with an IPv6 address beside the IPv4 one.
func dualCfg(name, ip, ip6 string, in, eg []renderer.ContivRule) renderer.PodConfig {
	c := podCfg(name, ip, in, eg)
	c.IPs = []netip.Addr{a(ip), a(ip6)}
	return c
}

// sorted returns the rules sorted by renderer.Compare (as the configurator
// hands them over).
func sorted(rules ...renderer.ContivRule) []renderer.ContivRule {
	slices.SortFunc(rules, renderer.Compare)
	return rules
}

// TestIngressChangeRecomputesOnlyThePartsItConcerns: local pods with egress
// rules have a part in the LOCAL table of the others; when a pod's ingress
// rules change for a remote peer only (a remote pod's label change), none of
// its parts is computed again; when they change for a local pod with egress
// rules, that pod's part alone is. The state stays the one a resync builds,
// on an IPv4 and on a dual-stack node.
func TestIngressChangeRecomputesOnlyThePartsItConcerns(t *testing.T) {
	for _, dual := range []bool{false, true} {
		t.Run(fmt.Sprintf("dual=%v", dual), func(t *testing.T) {
			cfg := func(name string, n int, in, eg []renderer.ContivRule) renderer.PodConfig {
				if dual {
					return dualCfg(name, fmt.Sprintf("10.1.1.%d", n), fmt.Sprintf("fd00:10:1:1::%x", n), in, eg)
				}
				return podCfg(name, fmt.Sprintf("10.1.1.%d", n), in, eg)
			}
			// peer permits TCP 80 from a source and its IPv6 twin on the dual-stack node
			peer := func(v4, v6 string) []renderer.ContivRule {
				out := []renderer.ContivRule{permit(v4+"/32", "", renderer.TCP, 80)}
				if dual {
					out = append(out, permit(v6+"/128", "", renderer.TCP, 80))
				}
				return out
			}
			c := New(conf)
			if dual {
				c = New(Config{ClusterNetworks: append(slices.Clone(conf.ClusterNetworks), p("fd00:10:1::/48")),
					NodeInterfaces: conf.NodeInterfaces, AnyNetworks: []netip.Prefix{p("0.0.0.0/0"), p("::/0")}})
			}
			// s1..s4 restrict their egress to UDP 53 anywhere: each has a part in
			// the LOCAL table of d, which admits s1 and the remote peer 10.1.2.9.
			eg := []renderer.ContivRule{permit("", "", renderer.UDP, 53), denyAll}
			in := sorted(append(append(peer("10.1.1.11", "fd00:10:1:1::b"), peer("10.1.2.9", "fd00:10:1:2::9")...), denyAll)...)
			pods := []renderer.PodConfig{cfg("d", 2, in, nil)}
			for i := 1; i <= 4; i++ {
				pods = append(pods, cfg(fmt.Sprint("s", i), 10+i, nil, eg))
			}
			c.Update(pods, true)
			step := func(what string, d renderer.PodConfig, wantParts int, others ...renderer.PodConfig) {
				t.Helper()
				pods[0] = d
				for _, o := range others {
					for i := range pods {
						if pods[i].ID == o.ID {
							pods[i] = o
						}
					}
				}
				c.Update(append([]renderer.PodConfig{d}, others...), false)
				full := New(c.Config())
				full.Update(pods, true)
				if got, want := c.Dump(), full.Dump(); got != want {
					t.Fatalf("%s: incremental state differs from a resync:\n got:\n%s\nwant:\n%s", what, got, want)
				}
				if st := c.LastStats(); st.PartsComputed != wantParts || st.LocalTablesComputed != 1+len(others) {
					t.Errorf("%s: %d parts and %d LOCAL tables computed, want %d and %d", what, st.PartsComputed,
						st.LocalTablesComputed, wantParts, 1+len(others))
				}
			}
			// the remote peer 10.1.2.9 goes, 10.1.2.10 comes: no part is concerned
			in2 := sorted(append(append(peer("10.1.1.11", "fd00:10:1:1::b"), peer("10.1.2.10", "fd00:10:1:2::a")...), denyAll)...)
			step("remote peer replaced", cfg("d", 2, in2, nil), 0)
			// and back, while s1's egress gains a rule towards a remote address (as
			// when both select the remote pod): still no part concerned
			eg1 := sorted(append(slices.Clone(eg), peerTo(dual, "10.1.2.9", "fd00:10:1:2::9")...)...)
			step("remote peer back, s1's egress towards it", cfg("d", 2, in, nil), 0, cfg("s1", 11, nil, eg1))
			// s1's egress opens towards d while d's ingress changes for a remote peer:
			// s1's part alone
			eg2 := sorted(append(slices.Clone(eg1), peerTo(dual, "10.1.1.2", "fd00:10:1:1::2")...)...)
			step("s1's egress towards d", cfg("d", 2, in2, nil), 1, cfg("s1", 11, nil, eg2))
			// s2 becomes a peer: its part changes (it is admitted now), the others stay
			in3 := sorted(append(append(slices.Clone(in2[:len(in2)-1]), peer("10.1.1.12", "fd00:10:1:1::c")...), denyAll)...)
			step("local peer added", cfg("d", 2, in3, nil), 1)
			// a rule for any source concerns every part
			in4 := sorted(append(slices.Clone(in3[:len(in3)-1]), permit("", "", renderer.TCP, 22), denyAll)...)
			step("rule for any source", cfg("d", 2, in4, nil), 4)
		})
	}
}

// TestWindowOfAnIPv6SourceHoldsNoIPv4Rule: in a dual-stack list the rules an
// IPv6 source is checked against (ingressFrom) leave out the IPv4 host rules,
// whose /32 is shorter than its /128; those of an IPv4 source leave out the
// IPv6 ones.
func TestWindowOfAnIPv6SourceHoldsNoIPv4Rule(t *testing.T) {
	var in []renderer.ContivRule
	for i := 2; i < 50; i++ {
		in = append(in, permit(fmt.Sprintf("10.1.2.%d/32", i), "", renderer.TCP, 80),
			permit(fmt.Sprintf("fd00:10:1:2::%x/128", i), "", renderer.TCP, 80))
	}
	in = sorted(append(in, permit("10.2.0.0/16", "", renderer.TCP, 80), permit("fd00:20::/32", "", renderer.TCP, 80), denyAll)...)
	d := &pod{}
	d.setConfig(dualCfg("d", "10.1.1.2", "fd00:10:1:1::2", in, nil))
	for _, src := range []string{"fd00:10:1:2::7", "fd00:20::1", "10.1.2.7", "10.2.0.1"} {
		x := a(src)
		host, wide := d.ingressFrom(x)
		for _, r := range append(slices.Clone(host), wide...) {
			if r.SrcNetwork.IsValid() && r.SrcNetwork.Addr().Is6() != x.Is6() {
				t.Errorf("from %s: the window holds %v, of the other family", x, r)
			}
		}
		if got, want := portsAllowedIn([2][]renderer.ContivRule{host, wide}, false, x, a("10.1.1.2")), portsAllowed(in, x, a("10.1.1.2")); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("from %s: window allows %v, the whole list %v", x, got, want)
		}
	}
}

// peerTo permits TCP 80 towards an address and, dual-stack, its IPv6 twin.
func peerTo(dual bool, v4, v6 string) []renderer.ContivRule {
	out := []renderer.ContivRule{permit("", v4+"/32", renderer.TCP, 80)}
	if dual {
		out = append(out, permit("", v6+"/128", renderer.TCP, 80))
	}
	return out
}

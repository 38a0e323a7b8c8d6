package vpp_cnat

import "testing"

// TestComparerRemembersOnlyTheSamePairOfPaths: node-port translations sharing their
// paths are compared once per pair of slices; another pair is compared anew, and a
// difference in a scalar field or a path is seen; addresses compare canonically.
func TestComparerRemembersOnlyTheSamePairOfPaths(t *testing.T) {
	p := func(addrs ...string) []*Path {
		var out []*Path
		for _, a := range addrs {
			out = append(out, &Path{Dst: addr(a, 8080)})
		}
		return out
	}
	tr := func(vip string, paths []*Path) *Translation {
		return &Translation{Vip: addr(vip, 30080), IsRealIp: true, Paths: paths}
	}
	old, same, other, spelled := p("10.1.1.2", "10.1.1.3"), p("10.1.1.2", "10.1.1.3"), p("10.1.1.2", "10.1.1.4"), p("::ffff:10.1.1.2", "10.1.1.3")
	var c Comparer
	for _, tc := range []struct {
		a, b *Translation
		want bool
	}{
		{tr("192.168.16.1", old), tr("192.168.16.1", same), true},
		{tr("192.168.16.2", old), tr("192.168.16.2", same), true}, // the remembered pair
		{tr("192.168.16.1", old), tr("192.168.16.1", other), false},
		{tr("192.168.16.2", old), tr("192.168.16.2", other), false}, // remembered, different
		{tr("192.168.16.1", old), tr("192.168.16.1", same), true},   // the first pair again
		{tr("192.168.16.1", old), tr("192.168.16.2", same), false},  // another VIP
		{tr("192.168.16.1", old), &Translation{Vip: addr("192.168.16.1", 30080), Paths: same}, false},
		{tr("fd00::a", p("fd00::2")), tr("FD00:0::A", p("fd00:0::2")), true},
		{tr("192.168.16.1", old), tr("192.168.16.1", spelled), true},
	} {
		if got := c.Same(tc.a, tc.b); got != tc.want {
			t.Errorf("Same(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

package vpp_cnat

import "testing"

// TestOrderOfSets: the strict order of VIP port, protocol and VIP address as
// written, with canonical addresses only.
func TestOrderOfSets(t *testing.T) {
	tr := func(vip string, port uint32, p Protocol) *Translation {
		return &Translation{VipAddress: vip, VipPort: port, Protocol: p}
	}
	for _, tc := range []struct {
		ts   []*Translation
		want bool
	}{
		{[]*Translation{tr("10.96.0.10", 80, Protocol_TCP), tr("10.96.0.9", 80, Protocol_TCP), tr("fd00::a", 80, Protocol_TCP),
			tr("10.96.0.10", 80, Protocol_UDP), tr("10.96.0.10", 443, 0), tr("10.3.0.1", 30080, 0), tr("192.168.16.1", 30080, 0)}, true},
		{[]*Translation{tr("10.96.0.10", 80, 0), tr("10.96.0.10", 80, 0)}, false},
		{[]*Translation{tr("10.96.0.10", 443, 0), tr("10.96.0.10", 80, 0)}, false},
		{[]*Translation{tr("10.96.0.10", 80, Protocol_UDP), tr("10.96.0.10", 80, Protocol_TCP)}, false},
		{[]*Translation{tr("10.96.0.9", 80, 0), tr("10.96.0.10", 80, 0)}, false},
		{[]*Translation{tr("10.96.0.10", 30080, 0), tr("10.3.0.1", 80, 0)}, false},
		{[]*Translation{tr("10.96.0.10", 80, 0), tr("::ffff:10.96.0.11", 80, 0)}, false},
		{[]*Translation{tr("fd00:0::a", 80, 0)}, false},
		{[]*Translation{tr("FD00::A", 80, 0)}, false},
		{[]*Translation{tr("fe80::1%eth0", 80, 0)}, false},
		{[]*Translation{nil}, false},
		{[]*Translation{tr("fd00::a", 80, 0), tr("fd00::b", 80, 0)}, true},
	} {
		if got := InSetOrder(tc.ts); got != tc.want {
			var vips []string
			for _, x := range tc.ts {
				vips = append(vips, FormatTranslation(x))
			}
			t.Errorf("InSetOrder(%q) = %v, want %v", vips, got, tc.want)
		}
	}
}

// TestCanonicalVIPAllocatesNothing: an IPv6 VIP is checked without allocating (a
// set's validation checks every translation of a set not known in order).
func TestCanonicalVIPAllocatesNothing(t *testing.T) {
	tr := &Translation{VipAddress: "fd00:10:96::a", VipPort: 80}
	if n := testing.AllocsPerRun(100, func() { _ = CanonicalVIP(tr) }); n != 0 || !CanonicalVIP(tr) {
		t.Errorf("CanonicalVIP(fd00:10:96::a) = %v, %v allocations; want true, none", CanonicalVIP(tr), n)
	}
}

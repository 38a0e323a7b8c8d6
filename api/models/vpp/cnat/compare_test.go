package vpp_cnat

import (
	"fmt"
	"testing"
)

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
		return &Translation{VipAddress: vip, VipPort: 30080, IsRealIp: true, Paths: paths}
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
		{tr("192.168.16.1", old), &Translation{VipAddress: "192.168.16.1", VipPort: 30080, Paths: same}, false},
		{tr("fd00::a", p("fd00::2")), tr("FD00:0::A", p("fd00:0::2")), true},
		{tr("192.168.16.1", old), tr("192.168.16.1", spelled), true},
	} {
		if got := c.Same(tc.a, tc.b); got != tc.want {
			t.Errorf("Same(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestComparerComparesCanonicalForms(t *testing.T) {
	base := func() *Translation {
		return &Translation{VipAddress: "10.96.0.1", VipPort: 80, Protocol: Protocol_TCP, AllocPort: true,
			Paths: []*Path{{Dst: addr("10.1.1.2", 8080), Src: addr("192.168.16.1", 0)}, {Dst: addr("10.1.2.2", 8080)}}}
	}
	for _, c := range []struct {
		what   string
		change func(t *Translation)
		same   bool
	}{
		{"unchanged", func(*Translation) {}, true},
		{"an IPv4-mapped spelling of the VIP", func(t *Translation) { t.VipAddress = "::ffff:10.96.0.1" }, true},
		{"a zero source address for none", func(t *Translation) { t.Paths[1].Src = addr("0.0.0.0", 0) }, true},
		{"an empty source for none", func(t *Translation) { t.Paths[1].Src = &Endpoint{} }, true},
		{"an interface source for an address", func(t *Translation) {
			t.Paths[0].Src = &Endpoint{Interface: "loop0", Address: "1.2.3.4"}
		}, false},
		{"another backend", func(t *Translation) { t.Paths[1].Dst.Address = "10.1.2.3" }, false},
		{"another backend port", func(t *Translation) { t.Paths[1].Dst.Port = 8081 }, false},
		{"a path less", func(t *Translation) { t.Paths = t.Paths[:1] }, false},
		{"the flow hash", func(t *Translation) { t.FlowHashConfig = 1 }, false},
		{"is_real_ip", func(t *Translation) { t.IsRealIp = true }, false},
		{"the protocol", func(t *Translation) { t.Protocol = Protocol_UDP }, false},
		{"an address that does not parse", func(t *Translation) { t.Paths[0].Dst.Address = "x" }, false},
	} {
		changed := base()
		c.change(changed)
		if got := sameTranslation(base(), changed); got != c.same {
			t.Errorf("%s: Same = %v, want %v", c.what, got, c.same)
		}
		if got := sameTranslation(changed, base()); got != c.same {
			t.Errorf("%s (swapped): Same = %v, want %v", c.what, got, c.same)
		}
	}
	withIf := func(addr string) *Translation {
		v := base()
		v.Paths[0].Src = &Endpoint{Interface: "loop0", InterfaceFamily: AddressFamily_IPV4, Address: addr}
		return v
	}
	if !sameTranslation(withIf(""), withIf("1.2.3.4")) {
		t.Error("two interface endpoints that differ in the (unused) address compare different")
	}
}

// The scheduler compares every translation it updates or finds in a dump: the
// comparison of a node port's translation of 10 backends allocates nothing.
func TestComparerDoesNotAllocate(t *testing.T) {
	mk := func() *Translation {
		v := &Translation{VipAddress: "10.20.0.11", VipPort: 30000, Protocol: Protocol_TCP, IsRealIp: true, AllocPort: true}
		for i := 0; i < 10; i++ {
			v.Paths = append(v.Paths, &Path{Dst: addr(fmt.Sprintf("10.1.%d.2", i), 8080), Src: addr("192.168.16.1", 0)})
		}
		return v
	}
	a, b := mk(), mk()
	if n := testing.AllocsPerRun(100, func() {
		if !sameTranslation(a, b) {
			t.Fatal("equal translations compare different")
		}
	}); n != 0 {
		t.Errorf("Same allocates %.0f times per call, want 0", n)
	}
}

// sameTranslation compares with a Comparer of its own.
func sameTranslation(a, b *Translation) bool {
	var c Comparer
	return c.Same(a, b)
}

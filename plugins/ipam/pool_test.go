package ipam

import (
	"errors"
	"fmt"
	"math"
	"net"
	"testing"
)

func TestHostSetFindsNextFreeAcrossWords(t *testing.T) {
	var s hostSet
	for i := uint64(2); i < 200; i++ { // fill words 0..2 and part of word 3
		s.add(i)
	}
	s.remove(130)
	tests := []struct {
		from, to uint64
		want     uint64
		ok       bool
	}{
		{0, 10, 0, true},
		{2, 500, 130, true},
		{131, 500, 200, true},
		{2, 129, 0, false},
		{131, 199, 0, false},
		{199, 199, 0, false},
		{200, 200, 200, true},
		{math.MaxUint64 - 1, math.MaxUint64, math.MaxUint64 - 1, true},
		{10, 5, 0, false},
	}
	for _, tc := range tests {
		got, ok := s.nextFree(tc.from, tc.to)
		if got != tc.want || ok != tc.ok {
			t.Errorf("nextFree(%d, %d) = %d, %v; want %d, %v", tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
	if s.len() != 197 || !s.has(2) || s.has(130) || s.has(1) {
		t.Errorf("membership wrong: len %d", s.len())
	}
	if s.add(2) || s.remove(130) || !s.remove(2) || s.has(2) {
		t.Error("add/remove results wrong")
	}
}

func TestHostSetHandlesTheLargestHostNumbers(t *testing.T) {
	var s hostSet
	for i := uint64(math.MaxUint64 - 63); ; i++ {
		s.add(i)
		if i == math.MaxUint64 {
			break
		}
	}
	if _, ok := s.nextFree(math.MaxUint64-63, math.MaxUint64); ok {
		t.Error("found a free host in a full last word")
	}
	if got, ok := s.nextFree(math.MaxUint64-200, math.MaxUint64); !ok || got != math.MaxUint64-200 {
		t.Errorf("got %d, %v", got, ok)
	}
	if len(s.words) != 1 {
		t.Errorf("sparse set uses %d words for 64 members", len(s.words))
	}
}

// allocN allocates n addresses for pods p0, p1, ... and returns them as strings.
func allocN(t *testing.T, p *podPool, n int, prefix string) []string {
	t.Helper()
	var out []string
	for k := 0; k < n; k++ {
		i, err := p.allocate(owner{pod: PodID{Name: fmt.Sprintf("%s%d", prefix, k), Namespace: "default"}})
		if err != nil {
			t.Fatalf("allocation %d: %v", k, err)
		}
		out = append(out, p.ipOf(i).String())
	}
	return out
}

func newTestPool(t *testing.T, cidr string) *podPool {
	t.Helper()
	p, err := newPodPool(mustCIDR(t, cidr))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPodIPsStartAtHost2AndSkipGatewayAndNATLoopback(t *testing.T) {
	p := newTestPool(t, "10.1.1.0/29")
	got := allocN(t, p, 4, "p")
	want := []string{"10.1.1.2", "10.1.1.3", "10.1.1.4", "10.1.1.5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("allocated %v, want %v", got, want)
	}
	if p.gateway().String() != "10.1.1.1" || p.natLoopback().String() != "10.1.1.6" {
		t.Errorf("gateway %s, NAT loopback %s", p.gateway(), p.natLoopback())
	}
}

func TestExhaustedPodSubnetIsReportedWithItsSize(t *testing.T) {
	p := newTestPool(t, "10.1.1.0/29")
	allocN(t, p, 4, "p")
	_, err := p.allocate(owner{pod: pid("default/late")})
	checkErr(t, err, "no free IP address in pod subnet 10.1.1.0/29 (4 allocated)")
	if !errors.Is(err, ErrNoFreeIP) {
		t.Errorf("%v is not ErrNoFreeIP", err)
	}
}

func TestReleasedIPIsReusedOnlyAfterRoundRobinWraps(t *testing.T) {
	p := newTestPool(t, "10.1.1.0/29")
	allocN(t, p, 3, "p") // .2 .3 .4
	if freed := p.release(pid("default/p0")); len(freed) != 1 || freed[0].String() != "10.1.1.2" {
		t.Fatalf("released %v", freed)
	}
	got := allocN(t, p, 2, "q") // .5, then wrap to .2
	if fmt.Sprint(got) != "[10.1.1.5 10.1.1.2]" {
		t.Errorf("after release: %v", got)
	}
	_, err := p.allocate(owner{pod: pid("default/r")})
	checkErr(t, err, "(4 allocated)")
	p.release(pid("default/p2")) // .4
	got = allocN(t, p, 1, "s")
	if got[0] != "10.1.1.4" {
		t.Errorf("re-allocation after exhaustion got %s, want the released 10.1.1.4", got[0])
	}
}

func TestClaimRejectsAddressesNoPodMayHold(t *testing.T) {
	p := newTestPool(t, "10.1.1.0/24")
	if _, err := p.claim(net.ParseIP("10.1.1.9"), owner{pod: pid("a/x")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ip      string
		o       owner
		wantErr string
	}{
		{"10.1.1.0", owner{pod: pid("a/y")}, "10.1.1.0 is the network address of the pod subnet 10.1.1.0/24"},
		{"10.1.1.1", owner{pod: pid("a/y")}, "10.1.1.1 is the pod gateway of 10.1.1.0/24"},
		{"10.1.1.254", owner{pod: pid("a/y")}, "10.1.1.254 is the NAT loopback of 10.1.1.0/24"},
		{"10.1.1.255", owner{pod: pid("a/y")}, "10.1.1.255 is the last address of the pod subnet 10.1.1.0/24"},
		{"10.1.2.5", owner{pod: pid("a/y")}, "10.1.2.5 is not in the pod subnet 10.1.1.0/24"},
		{"10.1.1.9", owner{pod: pid("a/y")}, "10.1.1.9 is already held by pod a/x"},
		{"10.1.1.10", owner{pod: pid("a/x")}, "pod a/x already holds 10.1.1.9"},
		{"10.1.1.9", owner{pod: pid("a/x")}, ""},
		{"10.1.1.10", owner{pod: pid("a/x"), ifName: "eth1"}, ""},
	}
	for _, tc := range tests {
		_, err := p.claim(net.ParseIP(tc.ip), tc.o)
		checkErr(t, err, tc.wantErr)
	}
	if p.allocated() != 2 {
		t.Errorf("allocated %d, want 2", p.allocated())
	}
}

func TestIPv6PoolUsesHost2UpAndLastButOneAsNATLoopback(t *testing.T) {
	p := newTestPool(t, "2001:0:0:1::/64")
	got := allocN(t, p, 2, "p")
	if fmt.Sprint(got) != "[2001:0:0:1::2 2001:0:0:1::3]" {
		t.Errorf("allocated %v", got)
	}
	if p.natLoopback().String() != "2001::1:ffff:ffff:ffff:fffe" {
		t.Errorf("NAT loopback %s", p.natLoopback())
	}
	if p.hi != maxAllocHost {
		t.Errorf("allocation range of a /64 ends at %d, want %d", p.hi, maxAllocHost)
	}
	_, err := p.claim(net.ParseIP("2001::1:ffff:ffff:ffff:fffe"), owner{pod: pid("a/b")})
	checkErr(t, err, "is the NAT loopback")
	_, err = p.claim(net.ParseIP("2001::1:ffff:ffff:ffff:ffff"), owner{pod: pid("a/b")})
	checkErr(t, err, "is the last address")
	if _, err := p.claim(net.ParseIP("2001::1:ffff:ffff:ffff:fff0"), owner{pod: pid("a/b")}); err != nil {
		t.Errorf("claim of a high host in a /64: %v", err)
	}

	big := newTestPool(t, "2001::/56")
	_, err = big.claim(net.ParseIP("2001:0:0:ff::1"), owner{pod: pid("a/b")})
	checkErr(t, err, "lies beyond the first 2^64 addresses of the pod subnet 2001::/56")
	if big.natLoopback().String() != "2001::ff:ffff:ffff:ffff:fffe" {
		t.Errorf("NAT loopback of a /56: %s", big.natLoopback())
	}
}

func TestPoolRejectsSubnetsTooSmallForGatewayPodAndNATLoopback(t *testing.T) {
	_, err := newPodPool(mustCIDR(t, "10.1.1.0/30"))
	checkErr(t, err, "pod subnet 10.1.1.0/30 is too small: it needs at least 8 addresses")
}

func TestCustomInterfacesShareThePoolAndAreReleasedWithThePod(t *testing.T) {
	p := newTestPool(t, "10.1.1.0/24")
	main, _ := p.allocate(owner{pod: pid("a/x")})
	extra, _ := p.allocate(owner{pod: pid("a/x"), ifName: "memif1"})
	if main == extra {
		t.Fatal("same address twice")
	}
	if o, ok := p.ownerOf(p.ipOf(extra)); !ok || o.ifName != "memif1" {
		t.Errorf("owner of the custom IP: %v %v", o, ok)
	}
	allocs := p.allocations()
	if len(allocs) != 1 || allocs[0].MainIP.String() != "10.1.1.2" || allocs[0].CustomIfIPs["memif1"].String() != "10.1.1.3" {
		t.Errorf("allocations %+v", allocs)
	}
	if freed := p.release(pid("a/x")); len(freed) != 2 || p.allocated() != 0 || len(p.pods) != 0 {
		t.Errorf("release freed %v, %d left", freed, p.allocated())
	}
}

func TestAllocationCostDoesNotGrowWithSubnetSize(t *testing.T) {
	// 250 pods held in a /16: after a full round-robin cycle every allocation still
	// finds a free address within a few words of the bitmap.
	p := newTestPool(t, "10.1.0.0/16")
	for k := 0; k < 250; k++ {
		if _, err := p.allocate(owner{pod: PodID{Name: fmt.Sprint(k)}}); err != nil {
			t.Fatal(err)
		}
	}
	for k := 250; k < 70000; k++ {
		p.release(PodID{Name: fmt.Sprint(k - 250)})
		if _, err := p.allocate(owner{pod: PodID{Name: fmt.Sprint(k)}}); err != nil {
			t.Fatal(err)
		}
	}
	if p.allocated() != 250 || len(p.used.words) > 6 {
		t.Errorf("allocated %d, bitmap words %d", p.allocated(), len(p.used.words))
	}
}

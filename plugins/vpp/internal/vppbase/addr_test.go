package vppbase

import (
	"net/netip"
	"testing"

	"go.fd.io/govpp/binapi/ip_types"
)

func TestAddressConversionsRoundTrip(t *testing.T) {
	for _, s := range []string{"10.1.2.3", "0.0.0.0", "fd00::1", "::"} {
		a := netip.MustParseAddr(s)
		got, ok := AddrFromAPI(AddrToAPI(a))
		if !ok || got != a {
			t.Errorf("%s: round trip = %v %v", s, got, ok)
		}
	}
	for _, s := range []string{"10.1.2.3/24", "10.0.0.0/8", "fd00::5/64", "0.0.0.0/0"} {
		p := netip.MustParsePrefix(s)
		got, ok := PrefixFromAPI(PrefixToAPI(p))
		if !ok || got != p {
			t.Errorf("%s: round trip = %v %v (host bits must be kept)", s, got, ok)
		}
	}
	if AddrToAPI(netip.MustParseAddr("10.0.0.1")).Af != ip_types.ADDRESS_IP4 || AddrFamily(true) != ip_types.ADDRESS_IP6 {
		t.Error("wrong family")
	}
	if _, ok := PrefixFromAPI(ip_types.Prefix{Address: AddrToAPI(netip.MustParseAddr("10.0.0.1")), Len: 33}); ok {
		t.Error("an IPv4 prefix longer than 32 accepted")
	}
	if _, ok := AddrFromAPI(ip_types.Address{Af: 7}); ok {
		t.Error("unknown family accepted")
	}
}

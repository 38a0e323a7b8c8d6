package vppbase

import (
	"net/netip"

	"go.fd.io/govpp/binapi/ip_types"
)

// The conversions between net/netip and VPP's ip_types, used by every plugin. An
// IPv4 address always travels as ADDRESS_IP4 (callers Unmap IPv4-mapped IPv6 first).

// AddrToAPI converts an address to VPP's representation.
func AddrToAPI(a netip.Addr) ip_types.Address {
	if a.Is4() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
}

// AddrFromAPI converts VPP's address; ok is false for an unknown family.
func AddrFromAPI(a ip_types.Address) (netip.Addr, bool) {
	switch a.Af {
	case ip_types.ADDRESS_IP4:
		return netip.AddrFrom4(a.Un.GetIP4()), true
	case ip_types.ADDRESS_IP6:
		return netip.AddrFrom16(a.Un.GetIP6()), true
	}
	return netip.Addr{}, false
}

// PrefixToAPI converts a prefix (network or interface address with its length) to
// VPP's representation, host bits kept.
func PrefixToAPI(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: AddrToAPI(p.Addr()), Len: uint8(p.Bits())}
}

// PrefixFromAPI converts VPP's prefix, host bits kept (call Masked for a network);
// ok is false for an unknown family or a length beyond the address size.
func PrefixFromAPI(p ip_types.Prefix) (netip.Prefix, bool) {
	a, ok := AddrFromAPI(p.Address)
	if !ok || int(p.Len) > a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, int(p.Len)), true
}

// AddrFamily is VPP's address family of an IP version.
func AddrFamily(ipv6 bool) ip_types.AddressFamily {
	if ipv6 {
		return ip_types.ADDRESS_IP6
	}
	return ip_types.ADDRESS_IP4
}

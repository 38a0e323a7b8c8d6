package vpp_cnat

import (
	"cmp"
	"net/netip"
)

// Identity is VPP's identity of a translation, (VIP address, VIP port, protocol), as
// a comparable value made without allocation and holding no pointer (the address as
// 16 bytes, IPv4 mapped), so that a map keyed by it costs the garbage collector
// nothing to scan (a descriptor keeps a key per translation in VPP).
type Identity struct {
	vip      [16]byte
	port     uint32
	protocol Protocol
}

// IdentityAt returns the identity of address a (IPv4 or IPv6, no zone), port and
// protocol.
func IdentityAt(a netip.Addr, port uint32, protocol Protocol) Identity {
	return Identity{vip: a.As16(), port: port, protocol: protocol}
}

// IdentityOf returns the identity of a translation (the zero address for a VIP that
// is not an address: validate first).
func IdentityOf(t *Translation) Identity {
	a, _ := ParseAddr(t.GetVipAddress())
	return IdentityAt(a, t.GetVipPort(), t.GetProtocol())
}

// Addr returns the identity's address (IPv4 unmapped).
func (id Identity) Addr() netip.Addr { return netip.AddrFrom16(id.vip).Unmap() }

// Port returns the identity's VIP port.
func (id Identity) Port() uint32 { return id.port }

// Protocol returns the identity's protocol.
func (id Identity) Protocol() Protocol { return id.protocol }

// Compare orders identities by address, port and protocol.
func (id Identity) Compare(o Identity) int {
	return cmp.Or(id.Addr().Compare(o.Addr()), cmp.Compare(id.port, o.port), cmp.Compare(id.protocol, o.protocol))
}

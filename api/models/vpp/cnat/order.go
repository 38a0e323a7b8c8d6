package vpp_cnat

import (
	"cmp"
	"net/netip"
	"strings"
)

// The order of a set. A set whose translations are strictly ascending by VIP port,
// protocol and VIP address as written (in canonical form: CanonicalVIP) holds no two
// translations of one identity, which a reader sees without a map of identities. A
// renderer stages its sets in this order (CompareInSet) and the set descriptor
// recognises it (InSetOrder), so that validating a change of a few translations costs
// those translations and their neighbours.
//
// The port comes first because that is how a service's translations are built: per
// port of the service, its cluster and external IPs, then its node port on every node
// IP. A service port is nearly always below the node port range (30000-32767), so
// with the node IPs in text order a service's translations come out in order without
// a sort, and most comparisons are decided by the port, not by the text.

// CompareInSet orders two translations by VIP port, protocol and VIP address as
// written.
func CompareInSet(a, b *Translation) int {
	return cmp.Or(cmp.Compare(a.GetVipPort(), b.GetVipPort()), cmp.Compare(a.GetProtocol(), b.GetProtocol()),
		strings.Compare(a.GetVipAddress(), b.GetVipAddress()))
}

// CanonicalVIP tells whether t's VIP address is written the one way its identity
// allows: an IPv4 address has one spelling (ParseAddr takes a dotted quad without
// leading zeros only), an IPv6 one is in netip's form and not IPv4-mapped (whose
// identity is the IPv4 address's). An IPv4 address that is not one at all is left to
// validation. It does not allocate.
func CanonicalVIP(t *Translation) bool {
	s := t.GetVipAddress()
	if strings.IndexByte(s, ':') < 0 {
		return true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.Is4In6() {
		return false
	}
	var buf [48]byte
	return string(a.AppendTo(buf[:0])) == s
}

// InSetOrder tells whether ts is strictly in the order of CompareInSet, every VIP in
// canonical form: then no two of its translations have one identity.
func InSetOrder(ts []*Translation) bool {
	for i, t := range ts {
		if t == nil || !CanonicalVIP(t) || (i > 0 && CompareInSet(ts[i-1], t) >= 0) {
			return false
		}
	}
	return true
}

package cnatplugin

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
)

// Sets in order. A set whose translations are strictly ascending by VIP address
// (as written, in canonical form), port and protocol holds no two translations of
// one identity: the renderer stages its sets so. A set a few edits away from such a
// set (a node's translation merged into a node port's set, one taken out) is in that
// order when each fresh message is in order with its neighbours: read from the fresh
// messages and their neighbours only, so that validating a node's join costs its
// translations, not the hundred others of each set.

// before tells whether a comes strictly before b in the order of sets.
func before(a, b *cnatmodel.Translation) bool {
	va, vb := a.GetVip(), b.GetVip()
	return cmp.Or(strings.Compare(va.GetAddress(), vb.GetAddress()), cmp.Compare(va.GetPort(), vb.GetPort()),
		cmp.Compare(a.GetProtocol(), b.GetProtocol())) < 0
}

// canonicalVIP tells whether t's VIP address is written the one way its identity
// allows: an IPv4 address has one spelling (ParseAddr takes a dotted quad without
// leading zeros only), an IPv6 one is in netip's form and not IPv4-mapped (whose
// identity is the IPv4 address's). An address that is not one at all is left to
// validation.
func canonicalVIP(t *cnatmodel.Translation) bool {
	s := t.GetVip().GetAddress()
	if strings.IndexByte(s, ':') < 0 {
		return true
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == "" && !a.Is4In6() && a.String() == s
}

// ordered tells whether ts is in the strict order of sets, every VIP in canonical
// form.
func ordered(ts []*cnatmodel.Translation) bool {
	for i, t := range ts {
		if t == nil || !canonicalVIP(t) || (i > 0 && !before(ts[i-1], t)) {
			return false
		}
	}
	return true
}

// orderedAfter tells whether nt, made of the messages of a set in the strict order
// of sets in their order (diffByPointer pairs them walking both lists forward), less
// some, plus fresh, is in that order too. The messages kept are (the order is
// transitive: two that a removal made neighbours are too), so only the fresh ones
// are read, with their neighbours.
func orderedAfter(nt, fresh []*cnatmodel.Translation) bool {
	if len(fresh) == 0 {
		return true
	}
	for i, t := range nt {
		if !slices.Contains(fresh, t) {
			continue
		}
		if t == nil || !canonicalVIP(t) ||
			(i > 0 && (nt[i-1] == nil || !before(nt[i-1], t))) ||
			(i+1 < len(nt) && (nt[i+1] == nil || !before(t, nt[i+1]))) {
			return false
		}
	}
	return true
}

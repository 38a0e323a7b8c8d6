package cnatplugin

import (
	"slices"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
)

// orderedAfter tells whether nt, made of the messages of a set in the order of sets
// (cnatmodel.InSetOrder) in their order (diffByPointer pairs them walking both lists
// forward), less some, plus fresh, is in that order too. The messages kept are (the
// order is transitive: two that a removal made neighbours are too), so only the fresh
// ones are read, with their neighbours: validating a node's join costs its
// translations, not the hundred others of each set.
func orderedAfter(nt, fresh []*cnatmodel.Translation) bool {
	if len(fresh) == 0 {
		return true
	}
	before := func(a, b *cnatmodel.Translation) bool {
		return a != nil && b != nil && cnatmodel.CompareInSet(a, b) < 0
	}
	for i, t := range nt {
		if !slices.Contains(fresh, t) {
			continue
		}
		if t == nil || !cnatmodel.CanonicalVIP(t) || (i > 0 && !before(nt[i-1], t)) || (i+1 < len(nt) && !before(t, nt[i+1])) {
			return false
		}
	}
	return true
}

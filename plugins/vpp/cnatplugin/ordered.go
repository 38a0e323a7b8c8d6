package cnatplugin

import (
	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
)

// orderedAt tells whether nt, made of the messages of a set in the order of sets
// (cnatmodel.InSetOrder) in their order (diffIndexes pairs them walking both lists
// forward), less some, plus those at the indexes freshAt (ascending), is in that
// order too. The messages kept are (the order is transitive: two that a removal made
// neighbours are too), so only the fresh ones are read, with their neighbours.
func orderedAt(nt []*cnatmodel.Translation, freshAt []int) bool {
	before := func(a, b *cnatmodel.Translation) bool {
		return a != nil && b != nil && cnatmodel.CompareInSet(a, b) < 0
	}
	for _, i := range freshAt {
		t := nt[i]
		if t == nil || !cnatmodel.CanonicalVIP(t) || (i > 0 && !before(nt[i-1], t)) || (i+1 < len(nt) && !before(t, nt[i+1])) {
			return false
		}
	}
	return true
}

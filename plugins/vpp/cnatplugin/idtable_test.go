package cnatplugin

import (
	"net/netip"
	"slices"
	"testing"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
)

// TestIDTableKeepsEveryIDAcrossItsGrowth: ids set, changed and deleted in a table
// that starts small and outgrows its slice read back the same, and it lists each
// identity once.
func TestIDTableKeepsEveryIDAcrossItsGrowth(t *testing.T) {
	idAt := func(i int) identity {
		return cnatmodel.IdentityAt(netip.AddrFrom4([4]byte{10, 96, 0, byte(i)}), 80, cnatmodel.Protocol_TCP)
	}
	for _, start := range []int{0, 1, 2 * idTableFew} {
		tab := newIDTable(start)
		want := map[identity]uint32{}
		for i := range 3 * idTableFew {
			tab.set(idAt(i), uint32(100+i))
			want[idAt(i)] = uint32(100 + i)
			if i%3 == 0 {
				tab.set(idAt(i), uint32(200+i)) // changed
				want[idAt(i)] = uint32(200 + i)
			}
			if i%4 == 1 {
				tab.del(idAt(i - 1))
				delete(want, idAt(i-1))
			}
			if tab.len() != len(want) {
				t.Fatalf("start %d, after %d: %d ids, want %d", start, i, tab.len(), len(want))
			}
		}
		for id, v := range want {
			if got, ok := tab.get(id); !ok || got != v {
				t.Errorf("start %d: id of %v = %d, %v; want %d", start, id.Addr(), got, ok, v)
			}
		}
		if _, ok := tab.get(idAt(0)); ok {
			t.Errorf("start %d: a deleted identity is still there", start)
		}
		ids := tab.identities()
		slices.SortFunc(ids, identity.Compare)
		if len(slices.Compact(ids)) != len(want) {
			t.Errorf("start %d: %d identities listed, want %d, each once", start, len(ids), len(want))
		}
	}
}

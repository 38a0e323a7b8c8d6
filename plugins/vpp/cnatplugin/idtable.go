package cnatplugin

import "slices"

// idTable holds the ids VPP gave a set's translations, by identity: in a slice while
// there are few (most sets are a cluster IP's one or two translations, and a map of
// their own would take some 300 bytes each, ten thousand of them in a cluster), in a
// map beyond idTableFew.
type idTable struct {
	few  []idEntry
	many map[identity]uint32
}

// idEntry is an id of an idTable's slice.
type idEntry struct {
	id  identity
	vpp uint32
}

// idTableFew is the most ids an idTable keeps in its slice.
const idTableFew = 8

// newIDTable returns a table made for n ids.
func newIDTable(n int) idTable {
	if n > idTableFew {
		return idTable{many: make(map[identity]uint32, n)}
	}
	return idTable{few: make([]idEntry, 0, max(n, 1))}
}

// get returns the VPP id of the translation of identity id.
func (t *idTable) get(id identity) (uint32, bool) {
	if t.many != nil {
		v, ok := t.many[id]
		return v, ok
	}
	for i := range t.few {
		if t.few[i].id == id {
			return t.few[i].vpp, true
		}
	}
	return 0, false
}

// set records the VPP id of the translation of identity id.
func (t *idTable) set(id identity, vpp uint32) {
	if t.many != nil {
		t.many[id] = vpp
		return
	}
	for i := range t.few {
		if t.few[i].id == id {
			t.few[i].vpp = vpp
			return
		}
	}
	if len(t.few) < idTableFew {
		t.few = append(t.few, idEntry{id: id, vpp: vpp})
		return
	}
	t.many = make(map[identity]uint32, 2*idTableFew)
	for _, e := range t.few {
		t.many[e.id] = e.vpp
	}
	t.few = nil
	t.many[id] = vpp
}

// del forgets the translation of identity id.
func (t *idTable) del(id identity) {
	if t.many != nil {
		delete(t.many, id)
		return
	}
	if i := slices.IndexFunc(t.few, func(e idEntry) bool { return e.id == id }); i >= 0 {
		t.few = slices.Delete(t.few, i, i+1)
	}
}

// len returns the number of ids.
func (t *idTable) len() int {
	if t.many != nil {
		return len(t.many)
	}
	return len(t.few)
}

// identities returns the identities held, in no particular order.
func (t *idTable) identities() []identity {
	out := make([]identity, 0, t.len())
	for _, e := range t.few {
		out = append(out, e.id)
	}
	for id := range t.many {
		out = append(out, id)
	}
	return out
}

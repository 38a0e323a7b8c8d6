package natplugin

import (
	"slices"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// The planner: what to ask of VPP to move it from one DNat44 to another, as data. It
// does no I/O: its inputs are the two values, what Validate parsed of the new one (if at
// hand) and the resolver of interface names; its output is the ordered list of requests
// (steps), each with the govpp message to send. The executor (exec.go) sends them and
// undoes what succeeded when some fail, with the undo requests planned here too
// (planUndo).

// step is one request of a change plan.
type step struct {
	do request
	// missingOK: a delete of something VPP no longer has counts as done.
	missingOK bool
}

// undo builds the request that reverts the step (only needed on failure); ok is false
// if it cannot be built.
func (s *step) undo(tag string, resolve resolver) (r request, ok bool) {
	m := s.do.m
	if s.do.isLocal {
		return m.localRequest(!s.do.isAdd, s.do.local), true
	}
	r, err := m.request(!s.do.isAdd, tag, resolve)
	return r, err == nil
}

// planUndo lists the requests that revert the steps that succeeded (errs[i] == nil:
// steps[i] is done), the last done first, with the index of the step each reverts. A
// step whose undo cannot be built (its interface is gone) is left out.
func planUndo(tag string, steps []step, errs []error, resolve resolver) (undo []request, undone []int) {
	for i := len(steps) - 1; i >= 0; i-- {
		if errs[i] != nil {
			continue // failed, or already gone
		}
		if u, ok := steps[i].undo(tag, resolve); ok {
			undo = append(undo, u)
			undone = append(undone, i)
		}
	}
	return undo, undone
}

// planChange lists the requests that move VPP from the mappings of from to those of
// to (nil from: create, nil to: delete), tagged with the label's Tag. validated is what
// Validate parsed of to (nil: not at hand; then to is parsed here). Both values are
// valid (Validate accepted them). resolve gives the sw_if_index of the interfaces the
// mappings name.
func planChange(from, to *nat.DNat44, validated []mapping, resolve resolver) ([]step, error) {
	label := to.GetLabel()
	if to == nil {
		label = from.GetLabel()
	}
	if validated != nil && from == nil {
		return planMappings(Tag(label), nil, validated, resolve) // parsed when validated
	}
	// entries equal field by field in both are left alone without being parsed
	var c staticComparer
	oldSt, newSt := dropCommon(from.GetStMappings(), to.GetStMappings(), c.same, keyOfStatic)
	oldID, newID := dropCommon(from.GetIdMappings(), to.GetIdMappings(), sameIdentity, keyOfIdentity)
	oldM, err := parseMappings(oldSt, oldID)
	if err != nil {
		return nil, err
	}
	newM := validated
	if validated == nil || len(newSt) != len(to.GetStMappings()) || len(newID) != len(to.GetIdMappings()) {
		// (every entry changed, as when a backend of a service is replaced: what
		// Validate parsed is the new side, in the same order)
		if newM, err = parseMappings(newSt, newID); err != nil {
			return nil, err
		}
	}
	return planMappings(Tag(label), oldM, newM, resolve)
}

// planMappings lists the requests that turn the mappings oldM into newM: deletes of
// the mappings that went away or changed, then adds of the new and changed
// ones; LB mappings that differ only in their locals get local adds, then
// local removals. The mappings are those of validated values (one per ident in each).
//
// Cost: O(mappings) when oldM and newM list the same mappings in the same order (an
// update in place: no map), the differences of the locals computed once for mappings
// sharing their parsed locals (every mapping of a NodePort service's port), and the
// request messages allocated together (see requestBuilder).
func planMappings(tag string, oldM, newM []mapping, resolve resolver) ([]step, error) {
	kept := make([]bool, len(newM)) // kept[j]: newM[j] needs no add
	var dels []*mapping             // old mappings to delete (added again if changed)
	var locals []localsChange
	newOf := pairMappings(oldM, newM) // newOf[i]: the index in newM of oldM[i]'s ident, -1 if none
	var diffs localsDiffs
	for i := range oldM {
		o := &oldM[i]
		if j := newOf[i]; j >= 0 {
			switch n := &newM[j]; {
			case n.equal(o):
				kept[j] = true
				continue
			case n.sameButLocals(o):
				if ld := diffs.of(o.locals, n.locals); ld.diffable {
					kept[j] = true
					locals = append(locals, localsChange{old: o, new: n, diff: ld})
					continue
				}
			}
		}
		dels = append(dels, o)
	}
	return planSteps(tag, resolve, newM, kept, dels, locals)
}

// localsChange is an LB mapping that changes in its locals only (they can be added and
// removed one by one).
type localsChange struct {
	old, new *mapping
	diff     localsDiff
}

// planSteps builds the requests of a difference in the order VPP must get them: the
// deletes (dels), the adds (the mappings of newM not kept), then for each LB mapping
// whose locals change its new locals before the removal of its old ones (VPP wants at
// least two at any time). (The difference is passed as slices, not in a struct, so
// that small ones stay on the caller's stack.)
func planSteps(tag string, resolve resolver, newM []mapping, kept []bool, dels []*mapping, locals []localsChange) ([]step, error) {
	var kinds [kindIdentity + 1]int // the mappings deleted and added, by kind
	for _, o := range dels {
		kinds[o.kind]++
	}
	nAdds, nLocal := 0, 0
	for j := range newM {
		if !kept[j] {
			kinds[newM[j].kind]++
			nAdds++
		}
	}
	for _, c := range locals {
		nLocal += len(c.diff.added) + len(c.diff.removed)
	}
	steps := make([]step, 0, len(dels)+nAdds+nLocal)
	b := requestBuilder{tag: tag, resolve: resolve}
	b.reserve(kinds[kindStatic], kinds[kindLB])
	for _, o := range dels {
		r, err := b.request(o, false)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{do: r, missingOK: true})
	}
	for j := range newM {
		if kept[j] {
			continue
		}
		r, err := b.request(&newM[j], true)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{do: r})
	}
	b.reserveLocals(nLocal)
	for _, c := range locals {
		for _, l := range c.diff.added {
			steps = append(steps, step{do: b.localRequest(c.new, true, l)})
		}
		for _, l := range c.diff.removed {
			steps = append(steps, step{do: b.localRequest(c.old, false, l), missingOK: true})
		}
	}
	return steps, nil
}

// pairMappings returns, for each mapping of oldM, the index of the mapping of newM with
// its ident (-1 if none). Lists in the same order (an update that changed mappings in
// place) are paired by position, others through a map.
func pairMappings(oldM, newM []mapping) []int {
	newOf := make([]int, len(oldM))
	if len(oldM) == 0 {
		return newOf // a creation: nothing to pair
	}
	aligned := len(oldM) == len(newM)
	for i := range oldM {
		if !aligned {
			break
		}
		if oldM[i].ident() != newM[i].ident() {
			aligned = false
		}
		newOf[i] = i
	}
	if aligned {
		return newOf
	}
	byID := make(map[mappingID]int, len(newM))
	for j := range newM {
		byID[newM[j].ident()] = j
	}
	for i := range oldM {
		j, ok := byID[oldM[i].ident()]
		if !ok {
			j = -1
		}
		newOf[i] = j
	}
	return newOf
}

// localsDiff is how the locals of an LB mapping change: diffable is false when a local
// keeps its endpoint but changes its probability (VPP knows a local by endpoint, so it
// would have to be removed before it is added again, and VPP may refuse to go below
// two); otherwise added and removed list the locals to add and to remove.
type localsDiff struct {
	diffable       bool
	added, removed []local
}

// localsDiffs computes localsDiff, remembering the last lists it compared: the mappings
// of a port of a service share their parsed locals, whose difference is then computed
// once, not once per node IP.
type localsDiffs struct {
	old, new []local
	last     localsDiff
	valid    bool
}

func (c *localsDiffs) of(o, n []local) localsDiff {
	if c.valid && sameSlice(o, c.old) && sameSlice(n, c.new) {
		return c.last
	}
	c.old, c.new, c.valid = o, n, true
	c.last = diffLocals(o, n)
	return c.last
}

// diffLocals computes the localsDiff of two lists of locals (see localsDiff).
func diffLocals(o, n []local) localsDiff {
	for _, a := range o {
		for _, b := range n {
			if a.ip == b.ip && a.port == b.port && a.vrf == b.vrf && a.prob != b.prob {
				return localsDiff{}
			}
		}
	}
	df := localsDiff{diffable: true}
	for _, l := range n {
		if !slices.Contains(o, l) {
			df.added = append(df.added, l)
		}
	}
	for _, l := range o {
		if !slices.Contains(n, l) {
			df.removed = append(df.removed, l)
		}
	}
	return df
}

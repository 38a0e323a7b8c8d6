package kvscheduler

import (
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// runResync executes a Full, Upstream or Downstream resync:
//
//	Full:       stage NB state -> Retrieve (refresh the graph) -> diff -> apply
//	Upstream:   stage NB state ->                                 diff -> apply
//	Downstream:                   Retrieve (refresh the graph) -> diff -> apply
//
// The refresh and the sweep over all values are O(values held) by nature; the
// operations and their recording are proportional to what differs.
func (s *Scheduler) runResync(t *txnExec, rec *api.RecordedTxn, kind api.ResyncType, values []api.KeyValuePair) error {
	g := s.g
	stageStamp := g.nextStamp()
	var nodes []*node
	var vals []proto.Message
	if kind != api.DownstreamResync {
		nodes, vals = t.stage(values, stageStamp)
	}
	var txnErr error
	var refreshed []*node
	if kind != api.UpstreamResync {
		refreshed, txnErr = t.refresh(kind, nodes, vals, stageStamp)
	}
	plan := func(t *txnExec) { t.planResync(kind, nodes, vals, stageStamp, refreshed) }
	if s.config.EnableTxnSimulation {
		rec.Planned = s.simulate(t, plan)
	}
	plan(t)
	return txnErr
}

// planResync replaces the NB state (Full, Upstream), collects every value that may
// need work and reconciles them: top-level values first, then derived values whose
// parent did not already handle them, each group in key order.
func (t *txnExec) planResync(kind api.ResyncType, nodes []*node, vals []proto.Message, stageStamp uint64, refreshed []*node) {
	g := t.g
	stamp := g.nextStamp()
	var dirty []*node
	add := func(n *node) {
		if n.dirty != stamp && !n.dead {
			n.dirty = stamp
			dirty = append(dirty, n)
		}
	}
	for _, n := range refreshed {
		add(n)
	}
	if kind != api.DownstreamResync {
		for i, n := range nodes {
			if nbUnchanged(n, vals[i]) {
				continue
			}
			t.setNB(n, vals[i])
			add(n)
		}
	}
	for _, n := range g.nodes {
		switch {
		case kind != api.DownstreamResync && n.parent == nil && n.nb != nil && n.staged != stageStamp:
			t.setNB(n, nil) // not in the new NB state
			add(n)
		case n.state == api.StateFailed, n.state == api.StateRetrying, n.state == api.StateMissing,
			n.state == api.StateUnimplemented && n.desc != nil:
			add(n)
		}
	}
	sort.Slice(dirty, func(i, j int) bool {
		a, b := dirty[i], dirty[j]
		if (a.parent == nil) != (b.parent == nil) {
			return a.parent == nil
		}
		return a.key < b.key
	})
	t.reconcileAll(dirty)
}

// nbUnchanged reports whether staging v changes nothing for n.
func nbUnchanged(n *node, v proto.Message) bool {
	if v == nil {
		return n.nb == nil
	}
	if n.nb == nil || n.nbErr != nil {
		return false
	}
	return v == n.nb || proto.Equal(n.nb, v)
}

// refresh reads the dataplane with Retrieve (in RetrieveDependencies order) and
// records what it finds in the graph: new values, changed values, values gone
// missing. It returns the values whose dataplane state changed (and the neighbours
// affected), which the plan then reconciles.
func (t *txnExec) refresh(kind api.ResyncType, nodes []*node, vals []proto.Message, stageStamp uint64) ([]*node, error) {
	g := t.g
	order, orderErr := t.s.getRetrieveOrder()
	var errs []error
	if orderErr != nil {
		errs = append(errs, orderErr)
	}

	// correlate: what NB wants from each descriptor
	corr := make(map[*descriptor][]api.KVWithMetadata, len(order))
	if kind == api.FullResync {
		counts := make(map[*descriptor]int, len(order))
		for i, n := range nodes {
			if vals[i] != nil && n.desc != nil && n.desc.Retrieve != nil {
				counts[n.desc]++
			}
		}
		for d, c := range counts {
			corr[d] = make([]api.KVWithMetadata, 0, c)
		}
		for i, n := range nodes {
			if vals[i] != nil && n.desc != nil && n.desc.Retrieve != nil {
				corr[n.desc] = append(corr[n.desc], api.KVWithMetadata{Key: n.key, Value: vals[i], Metadata: n.metadata, Origin: api.FromNB})
			}
		}
	}
	for _, d := range order {
		for n := range d.nodes {
			if n.nb != nil && (kind == api.DownstreamResync || n.parent != nil) {
				corr[d] = append(corr[d], api.KVWithMetadata{Key: n.key, Value: n.nb, Metadata: n.metadata, Origin: api.FromNB})
			}
		}
	}

	seen := g.nextStamp()
	stamp := g.nextStamp()
	var dirty []*node
	mark := func(n *node) {
		if n.dirty != stamp {
			n.dirty = stamp
			dirty = append(dirty, n)
		}
	}
	for _, d := range order {
		list, err := t.callRetrieve(d, corr[d])
		if err != nil {
			errs = append(errs, fmt.Errorf("retrieve %s: %w", d.Name, err))
			continue
		}
		for _, kv := range list {
			if kv.Key == "" || kv.Value == nil {
				continue
			}
			n := g.getOrCreate(kv.Key)
			if n.seen == seen {
				continue // listed twice
			}
			n.seen = seen
			origin := kv.Origin
			if origin == api.UnknownOrigin {
				correlated := (kind == api.FullResync && n.staged == stageStamp) ||
					(kind == api.DownstreamResync && n.nb != nil) || (n.parent != nil && n.nb != nil)
				if correlated || (n.applied != nil && n.managed()) {
					origin = api.FromNB
				}
			}
			t.refreshValue(n, kv.Value, kv.Metadata, origin, mark)
		}
		var missing []*node
		for n := range d.nodes {
			if n.applied != nil && n.seen != seen {
				missing = append(missing, n)
			}
		}
		sort.Slice(missing, func(i, j int) bool { return missing[i].key < missing[j].key })
		for _, n := range missing {
			t.refreshMissing(n, mark)
		}
	}
	return dirty, errors.Join(errs...)
}

// refreshValue records that v exists in the dataplane under n.
func (t *txnExec) refreshValue(n *node, v proto.Message, meta api.Metadata, origin api.ValueOrigin, mark func(*node)) {
	g := t.g
	if n.applied != nil && n.desc.equal(n.key, n.applied, v) {
		if n.origin != origin {
			if meta == nil {
				meta = n.metadata
			}
			g.setApplied(n, n.applied, meta, origin)
			mark(n)
		} else if meta != nil && n.desc != nil && n.desc.meta != nil {
			g.setApplied(n, n.applied, meta, origin)
		}
		return
	}
	wasNil := n.applied == nil
	g.setApplied(n, v, meta, origin)
	g.setAdopted(n, true)
	mark(n)
	t.refreshChildren(n, mark)
	if wasNil {
		for _, d := range g.dependentsOf(n.key, isWaiting) {
			mark(d)
		}
	}
}

// refreshMissing records that n is no longer in the dataplane.
func (t *txnExec) refreshMissing(n *node, mark func(*node)) {
	g := t.g
	if n.applied == nil {
		return
	}
	for _, d := range g.dependentsOf(n.key, isAppliedManaged) {
		mark(d)
	}
	g.setApplied(n, nil, nil, n.origin)
	g.setAdopted(n, true) // its derived values are re-synced when it is reconciled
	if n.nb != nil {
		g.setState(n, api.StateMissing, n.lastOp, nil)
	}
	mark(n)
	for _, c := range n.children {
		if followsParent(c) {
			t.refreshMissing(c, mark)
		}
	}
}

// followsParent reports whether a derived value is known only through its parent
// (its descriptor cannot Retrieve it).
func followsParent(c *node) bool { return c.desc == nil || c.desc.Retrieve == nil }

// refreshChildren updates the derived values of a value found new or changed in
// the dataplane, for those derived values that no Retrieve reports on their own.
func (t *txnExec) refreshChildren(p *node, mark func(*node)) {
	g := t.g
	derived := t.derive(p, p.applied)
	if len(derived) == 0 && len(p.children) == 0 {
		return
	}
	stamp := g.nextStamp()
	kids := make([]*node, 0, len(derived)+len(p.children))
	vals := make([]proto.Message, 0, len(derived))
	for _, kv := range derived {
		c := t.childNode(p, kv.Key)
		if c == nil || c.mark == stamp {
			continue
		}
		c.mark = stamp
		kids = append(kids, c)
		vals = append(vals, kv.Value)
	}
	var gone []*node
	for _, c := range p.children {
		if c.mark != stamp {
			gone = append(gone, c)
		}
	}
	// the list is made exact by syncChildren when the parent is reconciled
	g.setChildren(p, append(append([]*node(nil), kids...), gone...))
	for i, c := range kids {
		if !followsParent(c) || (c.applied != nil && c.desc.equal(c.key, c.applied, vals[i])) {
			continue
		}
		wasNil := c.applied == nil
		g.setApplied(c, vals[i], nil, p.origin)
		g.setAdopted(c, true)
		mark(c)
		t.refreshChildren(c, mark)
		if wasNil {
			for _, d := range g.dependentsOf(c.key, isWaiting) {
				mark(d)
			}
		}
	}
	for _, c := range gone {
		if followsParent(c) {
			t.refreshMissing(c, mark)
		}
	}
}

// getRetrieveOrder returns the descriptors with Retrieve, each after the ones named
// in its RetrieveDependencies (caller holds mu).
func (s *Scheduler) getRetrieveOrder() ([]*descriptor, error) {
	if s.retrieveOrder != nil {
		return s.retrieveOrder, s.retrieveErr
	}
	g := s.g
	order := make([]*descriptor, 0, len(g.descs))
	state := make(map[*descriptor]int, len(g.descs))
	var cycle error
	var visit func(d *descriptor, path []string)
	visit = func(d *descriptor, path []string) {
		switch state[d] {
		case 1:
			if cycle == nil {
				cycle = fmt.Errorf("%w: %v -> %s", api.ErrRetrieveCycle, path, d.Name)
			}
			return
		case 2:
			return
		}
		state[d] = 1
		for _, name := range d.RetrieveDependencies {
			if dep := g.descByName[name]; dep != nil {
				visit(dep, append(path, d.Name))
			}
		}
		state[d] = 2
		if d.Retrieve != nil {
			order = append(order, d)
		}
	}
	for _, d := range g.descs {
		visit(d, nil)
	}
	s.retrieveOrder, s.retrieveErr = order, cycle
	return order, cycle
}

func (t *txnExec) callRetrieve(d *descriptor, corr []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
	var out []api.KVWithMetadata
	err := t.unlocked(func() (err error) {
		out, err = d.Retrieve(corr)
		return err
	})
	return out, err
}

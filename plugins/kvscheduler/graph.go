package kvscheduler

import (
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// descriptor is a registered api.KVDescriptor with the scheduler's per-descriptor
// state: the set of its nodes and its metadata map.
type descriptor struct {
	*api.KVDescriptor
	nodes map[*node]struct{}
	meta  *metadataMap // nil without WithMetadata
	// opTime observes the duration of its Create, Update and Delete calls.
	opTime [api.OpRecreate + 1]prometheus.Observer
}

func (d *descriptor) label(key string) string {
	if d.KeyLabel != nil {
		return d.KeyLabel(key)
	}
	return key
}

func (d *descriptor) equal(key string, a, b proto.Message) bool {
	if a == b {
		return true
	}
	if d != nil && d.ValueComparator != nil {
		return d.ValueComparator(key, a, b)
	}
	return proto.Equal(a, b)
}

// metadataMap is the live, concurrently readable label -> metadata map of one
// descriptor. Only the transaction goroutine writes it.
type metadataMap struct {
	mu sync.RWMutex
	m  map[string]api.Metadata
}

// GetValue implements api.MetadataMap.
func (m *metadataMap) GetValue(label string) (api.Metadata, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.m[label]
	return v, ok
}

// ListAllNames implements api.MetadataMap.
func (m *metadataMap) ListAllNames() []string {
	m.mu.RLock()
	names := make([]string, 0, len(m.m))
	for k := range m.m {
		names = append(names, k)
	}
	m.mu.RUnlock()
	sort.Strings(names)
	return names
}

func (m *metadataMap) set(label string, v api.Metadata) {
	m.mu.Lock()
	m.m[label] = v
	m.mu.Unlock()
}

func (m *metadataMap) del(label string) {
	m.mu.Lock()
	delete(m.m, label)
	m.mu.Unlock()
}

// node is one key in the graph: what NB (or the parent, for a derived value) wants,
// what is in the dataplane, and the bookkeeping around it.
type node struct {
	key    string
	desc   *descriptor // cached descriptor lookup; nil for unimplemented values and properties
	parent *node       // set for derived values
	// children are the derived values of the applied value.
	children []*node

	// nb is the desired value (nil: not desired); nbErr is its validation error and
	// deps its dependencies.
	nb    proto.Message
	nbErr error
	deps  []api.Dependency
	// adeps are the dependencies of the applied value (the same slice as deps when
	// the applied value is the desired one). They differ after a failed update, or
	// while a change is being applied, and they are what protects a dependency from
	// being deleted under the object in the dataplane. The graph indexes the union
	// of deps and adeps.
	adeps []api.Dependency

	// applied is the value in the dataplane (nil: absent), with its metadata and origin.
	applied  proto.Message
	metadata api.Metadata
	origin   api.ValueOrigin

	state  api.ValueState
	lastOp api.TxnOperation
	// removing marks a value being deleted: it no longer satisfies dependencies.
	removing bool
	// dead marks a node dropped from the graph (a stale pointer).
	dead bool
	// adopted is set by a resync on values whose derived values must be re-synced
	// even if the value itself does not change.
	adopted bool
	// appliedSize is the encoded size of applied as a record sized it (0: not known),
	// so that the record of its replacement need not size it again (it fits in the
	// padding after the flags: the node does not grow).
	appliedSize int32

	lastErr  error
	failedIn uint64 // seq of the transaction in which the last op failed
	failGen  uint64 // bumped on every failure; a scheduled retry carries it
	// retry is the retry policy of the NB transaction that staged the value last (nil:
	// none). A failure in a transaction without a policy of its own (an SB
	// notification that makes the value's dependency appear) is retried with it.
	retry *api.RetryOpt

	mark   uint64 // scratch stamp for de-duplication within one pass
	dirty  uint64 // resync: marked for reconciliation in this generation
	seen   uint64 // resync: retrieved from the dataplane in this generation
	staged uint64 // resync / txn: staged by the transaction in this generation
}

// available reports whether the value exists in the dataplane for its dependents.
func (n *node) available() bool {
	return n.applied != nil && !n.removing && !n.dead
}

// managed reports whether the scheduler owns the value in the dataplane.
func (n *node) managed() bool { return n.origin == api.FromNB }

// graph holds all nodes and the indexes over them. It is mutated only by the
// transaction goroutine under Scheduler.mu. When undo is enabled (transaction
// simulation) every mutation records how to reverse itself.
type graph struct {
	nodes      map[string]*node
	descs      []*descriptor
	descByName map[string]*descriptor

	// keyDeps: dependency key -> nodes depending on it.
	keyDeps map[string]*nodeSet
	// prefixDeps: AnyOf prefix -> nodes with an AnyOf dependency using it;
	// prefixLens lists the distinct lengths of those prefixes (sorted) so a created
	// key finds its waiting dependents by looking up its own prefixes.
	prefixDeps    map[string]*nodeSet
	prefixLens    []int
	prefixLenRefs map[int]int
	// selectorDeps: nodes with an AnyOf dependency without prefixes.
	selectorDeps nodeSet
	// avail holds the keys of available values, sorted, for AnyOf prefix scans.
	avail sortedKeys

	pending int // number of PENDING nodes

	// replacedSizes are the known sizes of the values replaced in the dataplane during
	// the current transaction (see node.appliedSize); emptied when it is recorded.
	replacedSizes sizeTable

	stamp uint64

	simulating bool
	undo       []func()
}

func newGraph() *graph {
	return &graph{
		nodes:         make(map[string]*node),
		descByName:    make(map[string]*descriptor),
		keyDeps:       make(map[string]*nodeSet),
		prefixDeps:    make(map[string]*nodeSet),
		prefixLenRefs: make(map[int]int),
	}
}

func (g *graph) nextStamp() uint64 {
	g.stamp++
	return g.stamp
}

// onUndo records how to reverse a mutation. Callers build the closure only while
// simulating (if g.simulating { g.onUndo(...) }): a closure built for nothing is an
// allocation per mutation of every transaction.
func (g *graph) onUndo(f func()) {
	g.undo = append(g.undo, f)
}

// rollback reverts every mutation recorded since simulation started.
func (g *graph) rollback() {
	for i := len(g.undo) - 1; i >= 0; i-- {
		g.undo[i]()
	}
	g.undo = nil
}

// findDescriptor returns the descriptor selecting key (first registered wins).
func (g *graph) findDescriptor(key string) *descriptor {
	for _, d := range g.descs {
		if d.KeySelector(key) {
			return d
		}
	}
	return nil
}

// getOrCreate returns the node of key, creating it (with its descriptor looked up
// once) if needed.
func (g *graph) getOrCreate(key string) *node {
	if n := g.nodes[key]; n != nil {
		return n
	}
	n := &node{key: key, desc: g.findDescriptor(key)}
	g.addNode(n)
	return n
}

func (g *graph) addNode(n *node) {
	g.nodes[n.key] = n
	if n.desc != nil {
		n.desc.nodes[n] = struct{}{}
	}
	if g.simulating {
		g.onUndo(func() { g.dropNode(n) })
	}
}

// removeNode drops a node that is neither desired nor applied.
func (g *graph) removeNode(n *node) {
	if n.dead {
		return
	}
	g.setState(n, api.StateRemoved, n.lastOp, n.lastErr)
	g.dropNode(n)
	if g.simulating {
		g.onUndo(func() {
			n.dead = false
			g.nodes[n.key] = n
			if n.desc != nil {
				n.desc.nodes[n] = struct{}{}
			}
		})
	}
}

func (g *graph) dropNode(n *node) {
	if g.nodes[n.key] == n {
		delete(g.nodes, n.key)
	}
	if n.desc != nil {
		delete(n.desc.nodes, n)
	}
	n.dead = true
}

// setNB changes the desired value and re-indexes its dependencies.
func (g *graph) setNB(n *node, v proto.Message, nbErr error, deps []api.Dependency) {
	oldNB, oldErr, oldDeps, oldADeps := n.nb, n.nbErr, n.deps, n.adeps
	g.reindex(n, deps, n.adeps)
	n.nb, n.nbErr = v, nbErr
	if g.simulating {
		g.onUndo(func() {
			g.reindex(n, oldDeps, oldADeps)
			n.nb, n.nbErr = oldNB, oldErr
		})
	}
}

// reindex replaces the dependencies of n (desired and applied) in the indexes. Only the
// index entries that change are touched: an update whose value keeps its dependencies
// (the usual case: a new slice with the same content) costs comparisons, not index
// operations on sets that may hold every value of a descriptor.
func (g *graph) reindex(n *node, deps, adeps []api.Dependency) {
	if sameDeps(n.deps, deps) && sameDeps(n.adeps, adeps) {
		return
	}
	oldD, oldA := n.deps, n.adeps
	n.deps, n.adeps = deps, adeps
	if len(oldD)+len(oldA)+len(deps)+len(adeps) > maxDiffedDeps {
		// many dependencies: re-registering them all costs less than comparing them
		g.unregisterDeps(n, oldD)
		if !sameDeps(oldA, oldD) {
			g.unregisterDeps(n, oldA)
		}
		g.registerDeps(n, deps)
		if !sameDeps(adeps, deps) {
			g.registerDeps(n, adeps)
		}
		return
	}
	old, cur := [2][]api.Dependency{oldD, oldA}, [2][]api.Dependency{deps, adeps}
	forDepsMissingFrom(old, cur,
		func(key string) { g.removeKeyDep(n, key) },
		func(prefix string) { g.removePrefixDep(n, prefix) },
		func() { g.selectorDeps.remove(n) })
	forDepsMissingFrom(cur, old,
		func(key string) { g.addKeyDep(n, key) },
		func(prefix string) { g.addPrefixDep(n, prefix) },
		func() { g.selectorDeps.add(n) })
}

// forDepsMissingFrom calls key, prefix or selector for every index entry of the
// dependencies in lists (a key, each prefix of an AnyOf, a selector) that others do
// not have: with lists the old dependencies and others the new ones, what to remove
// from the indexes; the other way round, what to add.
func forDepsMissingFrom(lists, others [2][]api.Dependency, key, prefix func(string), selector func()) {
	for _, list := range lists {
		for i := range list {
			d := &list[i]
			switch {
			case d.Key != "":
				if !hasKeyDep(others[0], others[1], d.Key) {
					key(d.Key)
				}
			case len(d.AnyOf.KeyPrefixes) > 0:
				for _, p := range d.AnyOf.KeyPrefixes {
					if !hasPrefixDep(others[0], others[1], p) {
						prefix(p)
					}
				}
			case d.AnyOf.KeySelector != nil:
				if !hasSelectorDep(others[0], others[1]) {
					selector()
				}
			}
		}
	}
}

// maxDiffedDeps bounds the dependencies (old and new, desired and applied) reindex
// compares pairwise; beyond it, it re-registers them all.
const maxDiffedDeps = 32

// hasKeyDep tells whether a or b has a dependency on key (an index entry of keyDeps).
func hasKeyDep(a, b []api.Dependency, key string) bool {
	for _, list := range [2][]api.Dependency{a, b} {
		for i := range list {
			if list[i].Key == key {
				return true
			}
		}
	}
	return false
}

// hasPrefixDep tells whether a or b has an AnyOf dependency using prefix p (an index
// entry of prefixDeps).
func hasPrefixDep(a, b []api.Dependency, p string) bool {
	for _, list := range [2][]api.Dependency{a, b} {
		for i := range list {
			if d := &list[i]; d.Key == "" && slices.Contains(d.AnyOf.KeyPrefixes, p) {
				return true
			}
		}
	}
	return false
}

// hasSelectorDep tells whether a or b has an AnyOf dependency by selector only (an
// entry of selectorDeps).
func hasSelectorDep(a, b []api.Dependency) bool {
	for _, list := range [2][]api.Dependency{a, b} {
		for i := range list {
			if d := &list[i]; d.Key == "" && len(d.AnyOf.KeyPrefixes) == 0 && d.AnyOf.KeySelector != nil {
				return true
			}
		}
	}
	return false
}

// sameDeps reports whether a and b are the same slice (or both empty).
func sameDeps(a, b []api.Dependency) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

func (g *graph) registerDeps(n *node, deps []api.Dependency) {
	for _, d := range deps {
		switch {
		case d.Key != "":
			g.addKeyDep(n, d.Key)
		case len(d.AnyOf.KeyPrefixes) > 0:
			for _, p := range d.AnyOf.KeyPrefixes {
				g.addPrefixDep(n, p)
			}
		case d.AnyOf.KeySelector != nil:
			g.selectorDeps.add(n)
		}
	}
}

func (g *graph) unregisterDeps(n *node, deps []api.Dependency) {
	for _, d := range deps {
		switch {
		case d.Key != "":
			g.removeKeyDep(n, d.Key)
		case len(d.AnyOf.KeyPrefixes) > 0:
			for _, p := range d.AnyOf.KeyPrefixes {
				g.removePrefixDep(n, p)
			}
		case d.AnyOf.KeySelector != nil:
			g.selectorDeps.remove(n)
		}
	}
}

func (g *graph) addKeyDep(n *node, key string) {
	set := g.keyDeps[key]
	if set == nil {
		set = &nodeSet{}
		g.keyDeps[key] = set
	}
	set.add(n)
}

func (g *graph) removeKeyDep(n *node, key string) {
	if set := g.keyDeps[key]; set != nil {
		set.remove(n)
		if set.size() == 0 {
			delete(g.keyDeps, key)
		}
	}
}

func (g *graph) addPrefixDep(n *node, p string) {
	set := g.prefixDeps[p]
	if set == nil {
		set = &nodeSet{}
		g.prefixDeps[p] = set
		g.addPrefixLen(len(p))
	}
	set.add(n)
}

func (g *graph) removePrefixDep(n *node, p string) {
	if set := g.prefixDeps[p]; set != nil {
		set.remove(n)
		if set.size() == 0 {
			delete(g.prefixDeps, p)
			g.dropPrefixLen(len(p))
		}
	}
}

func (g *graph) addPrefixLen(l int) {
	g.prefixLenRefs[l]++
	if g.prefixLenRefs[l] == 1 {
		i := sort.SearchInts(g.prefixLens, l)
		g.prefixLens = append(g.prefixLens, 0)
		copy(g.prefixLens[i+1:], g.prefixLens[i:])
		g.prefixLens[i] = l
	}
}

func (g *graph) dropPrefixLen(l int) {
	g.prefixLenRefs[l]--
	if g.prefixLenRefs[l] > 0 {
		return
	}
	delete(g.prefixLenRefs, l)
	i := sort.SearchInts(g.prefixLens, l)
	if i < len(g.prefixLens) && g.prefixLens[i] == l {
		g.prefixLens = append(g.prefixLens[:i], g.prefixLens[i+1:]...)
	}
}

// setApplied records what is in the dataplane for n and keeps the availability index
// and the descriptor's metadata map in step. The metadata map is not touched while
// simulating: other goroutines read it.
func (g *graph) setApplied(n *node, v proto.Message, meta api.Metadata, origin api.ValueOrigin) {
	oldV, oldMeta, oldOrigin, oldDeps, oldADeps := n.applied, n.metadata, n.origin, n.deps, n.adeps
	if v != oldV || origin != oldOrigin {
		g.reindex(n, n.deps, g.depsOfApplied(n, v, origin))
	}
	g.applyFields(n, v, meta, origin, !g.simulating)
	if g.simulating {
		g.onUndo(func() {
			g.applyFields(n, oldV, oldMeta, oldOrigin, false)
			g.reindex(n, oldDeps, oldADeps)
		})
	}
}

// depsOfApplied returns the dependencies of v as the applied value of n. Values
// the dataplane owns have none the scheduler enforces.
func (g *graph) depsOfApplied(n *node, v proto.Message, origin api.ValueOrigin) []api.Dependency {
	switch {
	case v == nil || origin != api.FromNB:
		return nil
	case v == n.nb:
		return n.deps
	case n.desc == nil || n.desc.Dependencies == nil:
		return nil
	}
	return n.desc.Dependencies(n.key, v)
}

func (g *graph) applyFields(n *node, v proto.Message, meta api.Metadata, origin api.ValueOrigin, withMeta bool) {
	was := n.applied != nil
	if v != n.applied {
		if n.appliedSize > 0 {
			g.replacedSizes.add(n.applied, int(n.appliedSize))
		}
		n.appliedSize = 0
	}
	n.applied, n.metadata, n.origin = v, meta, origin
	switch {
	case !was && v != nil:
		g.avail.insert(n.key)
	case was && v == nil:
		g.avail.remove(n.key)
	}
	if withMeta && n.desc != nil && n.desc.meta != nil {
		if v != nil {
			n.desc.meta.set(n.desc.label(n.key), meta)
		} else {
			n.desc.meta.del(n.desc.label(n.key))
		}
	}
}

// setState changes the state, last operation and last error of n.
func (g *graph) setState(n *node, st api.ValueState, op api.TxnOperation, err error) {
	oldSt, oldOp, oldErr := n.state, n.lastOp, n.lastErr
	g.stateFields(n, st, op, err)
	if g.simulating {
		g.onUndo(func() { g.stateFields(n, oldSt, oldOp, oldErr) })
	}
}

func (g *graph) stateFields(n *node, st api.ValueState, op api.TxnOperation, err error) {
	if n.state == api.StatePending {
		g.pending--
	}
	n.state, n.lastOp, n.lastErr = st, op, err
	if st == api.StatePending {
		g.pending++
	}
}

func (g *graph) setRemoving(n *node, v bool) {
	old := n.removing
	n.removing = v
	if g.simulating {
		g.onUndo(func() { n.removing = old })
	}
}

func (g *graph) setChildren(n *node, children []*node) {
	old := n.children
	n.children = children
	if g.simulating {
		g.onUndo(func() { n.children = old })
	}
}

func (g *graph) setParent(n, parent *node) {
	old := n.parent
	n.parent = parent
	if g.simulating {
		g.onUndo(func() { n.parent = old })
	}
}

func (g *graph) setAdopted(n *node, v bool) {
	old := n.adopted
	n.adopted = v
	if g.simulating {
		g.onUndo(func() { n.adopted = old })
	}
}

// depsSatisfied reports whether every dependency of n's desired value exists.
func (g *graph) depsSatisfied(n *node) bool { return g.allSatisfied(n.deps) }

// canStay reports whether an applied value may stay in the dataplane: the
// dependencies of both its applied and its desired content exist.
func (g *graph) canStay(n *node) bool {
	return g.allSatisfied(n.deps) && (sameDeps(n.adeps, n.deps) || g.allSatisfied(n.adeps))
}

func (g *graph) allSatisfied(deps []api.Dependency) bool {
	for i := range deps {
		if !g.depSatisfied(&deps[i]) {
			return false
		}
	}
	return true
}

func (g *graph) depSatisfied(d *api.Dependency) bool {
	if d.Key == "" && len(d.AnyOf.KeyPrefixes) == 0 && d.AnyOf.KeySelector == nil {
		return true // empty dependency: nothing to wait for
	}
	found := false
	g.eachSatisfier(d, func(string) bool {
		found = true
		return false
	})
	return found
}

// eachSatisfier calls fn with the key of every available value that satisfies d, in key
// order for an AnyOf, until fn returns false. An empty dependency has no satisfier.
func (g *graph) eachSatisfier(d *api.Dependency, fn func(key string) bool) {
	if d.Key != "" {
		if dn := g.nodes[d.Key]; dn != nil && dn.available() {
			fn(d.Key)
		}
		return
	}
	if len(d.AnyOf.KeyPrefixes) == 0 && d.AnyOf.KeySelector == nil {
		return
	}
	more := true
	check := func(k string) bool {
		if d.AnyOf.KeySelector != nil && !d.AnyOf.KeySelector(k) {
			return true
		}
		if dn := g.nodes[k]; dn != nil && dn.available() {
			more = fn(k)
		}
		return more
	}
	if len(d.AnyOf.KeyPrefixes) == 0 {
		g.avail.ascendPrefix("", check)
		return
	}
	for _, p := range d.AnyOf.KeyPrefixes {
		if g.avail.ascendPrefix(p, check); !more {
			return
		}
	}
}

// missingDeps describes the unsatisfied dependencies of n as "<label>: <key>".
func (g *graph) missingDeps(n *node) []string {
	var out []string
	for i := range n.deps {
		d := &n.deps[i]
		if g.depSatisfied(d) {
			continue
		}
		label := d.Label
		if label == "" {
			label = "dependency"
		}
		if d.Key != "" {
			out = append(out, label+": "+d.Key)
		} else if len(d.AnyOf.KeyPrefixes) > 0 {
			out = append(out, label+": any of "+joinQuoted(d.AnyOf.KeyPrefixes))
		} else {
			out = append(out, label+": any key matching the selector")
		}
	}
	return out
}

func joinQuoted(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += s + "*"
	}
	return out
}

// dependentsOf returns the nodes whose dependencies refer to key (directly or by an
// AnyOf that matches it) and that pass filter, sorted by key, without duplicates.
// The cost is proportional to the number of such nodes plus the number of distinct
// AnyOf prefix lengths, independent of the number of values held.
func (g *graph) dependentsOf(key string, filter func(*node) bool) []*node {
	stamp := g.nextStamp()
	var out []*node
	consider := func(n *node) {
		if n.mark == stamp || n.dead || !filter(n) {
			return
		}
		n.mark = stamp
		out = append(out, n)
	}
	var buf [8]*node
	if set := g.keyDeps[key]; set != nil {
		for _, n := range set.appendTo(buf[:0]) {
			consider(n)
		}
	}
	for _, l := range g.prefixLens {
		if l > len(key) {
			break
		}
		set := g.prefixDeps[key[:l]]
		if set == nil {
			continue
		}
		for _, n := range set.appendTo(buf[:0]) {
			if n.mark != stamp && dependsByAnyOf(n, key) {
				consider(n)
			}
		}
	}
	if g.selectorDeps.size() > 0 {
		for _, n := range g.selectorDeps.appendTo(nil) {
			if n.mark != stamp && dependsByAnyOf(n, key) {
				consider(n)
			}
		}
	}
	if len(out) > 1 {
		sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	}
	return out
}

func dependsByAnyOf(n *node, key string) bool {
	return anyOfMatches(n.deps, key) || anyOfMatches(n.adeps, key)
}

func anyOfMatches(deps []api.Dependency, key string) bool {
	for i := range deps {
		d := &deps[i]
		if d.Key == "" && (len(d.AnyOf.KeyPrefixes) > 0 || d.AnyOf.KeySelector != nil) && d.AnyOf.Matches(key) {
			return true
		}
	}
	return false
}

// sizeTable maps values (by pointer) to their encoded sizes: a slice while small (a
// transaction of one value), a map beyond.
type sizeTable struct {
	small []sizedValue
	big   map[proto.Message]int
}

type sizedValue struct {
	m    proto.Message
	size int
}

const sizeTableSmall = 16

func (t *sizeTable) add(m proto.Message, size int) {
	if t.big != nil {
		t.big[m] = size
		return
	}
	if len(t.small) < sizeTableSmall {
		t.small = append(t.small, sizedValue{m, size})
		return
	}
	t.big = make(map[proto.Message]int, 2*sizeTableSmall)
	for _, e := range t.small {
		t.big[e.m] = e.size
	}
	t.big[m] = size
	clear(t.small)
	t.small = t.small[:0]
}

func (t *sizeTable) get(m proto.Message) (int, bool) {
	if t.big != nil {
		size, ok := t.big[m]
		return size, ok
	}
	for _, e := range t.small {
		if e.m == m {
			return e.size, true
		}
	}
	return 0, false
}

func (t *sizeTable) len() int {
	if t.big != nil {
		return len(t.big)
	}
	return len(t.small)
}

// reset empties the table, keeping no value alive.
func (t *sizeTable) reset() {
	clear(t.small)
	t.small, t.big = t.small[:0], nil
}

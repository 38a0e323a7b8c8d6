package cnat

import (
	"slices"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/shares"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// renderedService is what was staged for one service.
type renderedService struct {
	// key is the key of the service's set (TranslationSetKey of "<namespace>/<name>";
	// the label is its suffix, so both cost one string).
	key string
	// set is the set staged, nil when the service owns no translation. Its
	// translations are sorted by identity and never modified: a change stages a new
	// set, which shares the unchanged translations' messages.
	set *vpp_cnat.TranslationSet
	// routes are the reject and drop routes the service wants (reject.go).
	routes []rejects.Route
	// svc is the FlatService last rendered (the processor passes the same pointer
	// while a service is unchanged), nodeGen the generation of the node IPs its
	// node ports were rendered for, complete whether its set holds every translation
	// it wants (none owned by another service): a resync keeps such a set.
	svc      *renderer.FlatService
	nodeGen  uint64
	complete bool
}

// newRecord returns the record of a service that has none (from sl in a resync).
func newRecord(id renderer.ServiceID, sl *slabs) *renderedService {
	r := &sl.records.take(sl.on, 1)[0]
	r.key = vpp_cnat.TranslationSetPrefix + id.Namespace + "/" + id.Name
	return r
}

// label returns the label of the service's set.
func (r *renderedService) label() string { return r.key[len(vpp_cnat.TranslationSetPrefix):] }

// translations returns the translations staged in the service's set (nil: none).
func (r *renderedService) translations() []*vpp_cnat.Translation { return r.set.GetTranslations() }

// stageSet stages the service's set with the translations owned (sorted): a new set
// when they differ from the staged one's messages, the deletion of the set when
// there are none, nothing when they are the staged ones.
func stageSet(txn controller.UpdateOperations, r *renderedService, owned []*vpp_cnat.Translation, sl *slabs) {
	switch {
	case len(owned) == 0:
		if r.set != nil {
			txn.Delete(r.key)
			r.set = nil
		}
	case r.set != nil && slices.Equal(r.set.Translations, owned):
	default:
		r.set = &sl.sets.take(sl.on, 1)[0]
		r.set.Label, r.set.Translations = r.label(), owned
		txn.Put(r.key, r.set)
	}
}

// dropService stages the removal of what was staged for service id (its set and its
// routes' users) and returns the addresses whose routes must be staged again.
func (rndr *Renderer) dropService(txn controller.UpdateOperations, id renderer.ServiceID) (touched []string) {
	r := rndr.rendered[id]
	if r == nil {
		return nil
	}
	delete(rndr.rendered, id)
	touched = rndr.release(id, r.translations(), nil)
	stageSet(txn, r, nil, &slabs{})
	return append(touched, rndr.routeUsers.Update(id, r.routes, nil)...)
}

// stageService renders the service and stages the change from what was staged for
// its ID (nothing for a new one): the new set, sharing the unchanged translations'
// messages, and the routes' users. It returns the addresses whose routes must be
// staged again.
func (rndr *Renderer) stageService(txn controller.UpdateOperations, svc *renderer.FlatService) (touched []string) {
	sl := &slabs{}
	r := rndr.rendered[svc.ID]
	if r == nil {
		r = newRecord(svc.ID, sl)
		rndr.rendered[svc.ID] = r
	}
	prev, wanted := r.translations(), rndr.render(svc, sl)
	n := len(wanted)
	// Released first and claimed again: a translation may change the way it is
	// owned (an external IP that became a node's).
	touched = rndr.release(svc.ID, prev, nil)
	owned, touched := rndr.own(svc, wanted, prev, touched)
	r.svc, r.nodeGen, r.complete = svc, rndr.nodeGen, len(owned) == n
	stageSet(txn, r, owned, sl)
	routes := rndr.wantedRoutes(svc)
	touched = append(touched, rndr.routeUsers.Update(svc.ID, r.routes, routes)...)
	r.routes = routes
	return touched
}

// nodePortEdit is what a change of the node IPs makes of a node-port service's set:
// its staged translations less those of its node ports on the addresses removed
// (kept, dropped), plus those on the addresses added (wanted), and the two merged in
// identity order (the others are the same messages). It is planned apart from the
// ownership, which applying it decides.
type nodePortEdit struct {
	svc                   *renderer.FlatService
	r                     *renderedService
	kept, dropped, wanted []*vpp_cnat.Translation
	merged                []*vpp_cnat.Translation
	renderAnew            bool // no record, or an external IP became or stopped being a node's
}

// parallelEditMin is the smallest share of a node-IP change's node-port services
// that a goroutine of its own plans (shares.Run): an edit costs a few microseconds.
const parallelEditMin = 100

// planNodePorts computes e's kept, dropped and wanted translations and their merge.
// It reads the renderer and e's record and writes only e and sl, so that shares plan
// the edits of a large change in parallel.
func (rndr *Renderer) planNodePorts(e *nodePortEdit, added []renderer.Address, removed map[string]bool, sl *slabs) {
	prev := e.r.translations()
	e.kept = prev
	if len(removed) > 0 {
		// The set is in the order of sets: the translation of each node port on each
		// address gone is found by binary search for its identity.
		var drop []int
		var probe vpp_cnat.Translation
		for a := range removed {
			for k := range e.svc.Ports {
				p := &e.svc.Ports[k].Port
				proto, ok := protocolOf(p.Protocol)
				if !ok || p.NodePort == 0 {
					continue
				}
				probe.VipAddress, probe.VipPort, probe.Protocol = a, uint32(p.NodePort), proto
				if i, found := slices.BinarySearchFunc(prev, &probe, byID); found {
					drop = append(drop, i)
				}
			}
		}
		if len(drop) > 0 {
			slices.Sort(drop)
			drop = slices.Compact(drop) // (two ports of the service with one node port)
			e.kept = make([]*vpp_cnat.Translation, 0, len(prev)-len(drop))
			e.dropped = make([]*vpp_cnat.Translation, 0, len(drop))
			next := 0
			for _, i := range drop {
				e.kept = append(e.kept, prev[next:i]...)
				e.dropped = append(e.dropped, prev[i])
				next = i + 1
			}
			e.kept = append(e.kept, prev[next:]...)
		}
	}
	e.wanted = rndr.nodePortTranslations(e.svc, added, e.kept, sl)
	// kept and wanted are both sorted and disjoint (the wanted ones are on addresses
	// that were no node's): merged, the set is in identity order.
	e.merged = mergeByID(e.kept, e.wanted)
}

// applyNodePorts releases e's dropped translations, claims its wanted ones and stages
// the set of those it owns. It returns the addresses whose routes must be staged
// again.
func (rndr *Renderer) applyNodePorts(txn controller.UpdateOperations, e *nodePortEdit, sl *slabs) (touched []string) {
	touched = rndr.release(e.svc.ID, e.dropped, nil)
	n := len(e.wanted)
	fresh, touched := rndr.own(e.svc, e.wanted, nil, touched)
	r := e.r
	r.svc, r.nodeGen, r.complete = e.svc, rndr.nodeGen, r.complete && len(fresh) == n
	if len(fresh) < n {
		e.merged = mergeByID(e.kept, fresh) // another service owns some
	}
	stageSet(txn, r, e.merged, sl)
	return touched
}

// mergeByID returns a new slice of a and b (both sorted by identity) merged in
// identity order; a and b are not modified (a may be a staged set's). Each of b
// (a node's translations, a few) finds its place in a by binary search, and a is
// copied in runs between them.
func mergeByID(a, b []*vpp_cnat.Translation) []*vpp_cnat.Translation {
	if len(b) == 0 {
		return a
	}
	out := make([]*vpp_cnat.Translation, 0, len(a)+len(b))
	i := 0
	for _, t := range b {
		at, _ := slices.BinarySearchFunc(a[i:], t, byID)
		out = append(append(out, a[i:i+at]...), t)
		i += at
	}
	return append(out, a[i:]...)
}

// renderInputs is what a rendering reads besides the service and the node IPs (this
// node's IPs: the source of masqueraded traffic, node addresses): when it changes, a
// resync renders every service anew.
type renderInputs struct {
	nodeIP4, nodeIP6 string
}

// resyncServices stages the set of every service in their order and makes the
// records and the ownership anew. A service whose record holds its set complete,
// rendered from the same FlatService and for what it depends on (the node IPs when it
// has a node port or an external IP, renderInputs) keeps its set, the same messages
// (the scheduler and the descriptor then compare the set at the cost of a pointer),
// unless a service before it now owns one of its translations. The others are
// rendered in shares (a large resync on several goroutines, each into blocks of its
// own; rendering reads the renderer and writes nothing of it), then claimed and
// staged in their order, as a sequential resync does. It returns the addresses of
// the routes wanted.
func (rndr *Renderer) resyncServices(txn controller.ResyncOperations, services []*renderer.FlatService) (addrs []string) {
	previous := rndr.rendered
	if in := (renderInputs{nodeIP4: rndr.nodeIP4, nodeIP6: rndr.nodeIP6}); in != rndr.renderedWith {
		previous, rndr.renderedWith = nil, in
	}
	rndr.rendered = make(map[renderer.ServiceID]*renderedService, len(services))
	wanted := make([][]*vpp_cnat.Translation, len(services))
	claimed := make([]claims, len(services))
	records := make([]*renderedService, len(services))
	var todo []int // the services to render
	for i, svc := range services {
		if r := previous[svc.ID]; rndr.keeps(r, svc) {
			records[i] = r
			continue
		}
		todo = append(todo, i)
	}
	shares.Run(len(todo), parallelRenderMin, func(_, lo, hi int) {
		sl := &slabs{on: true}
		for _, i := range todo[lo:hi] {
			wanted[i], records[i] = rndr.renderRecord(services[i], sl)
			claimed[i] = claimsOf(services[i], wanted[i])
		}
	})
	// The map of owners gets a key per translation owned by identity, at most one
	// per port of each cluster and external IP: made to size (grown from empty,
	// rehashing it was a third of a resync).
	n := 0
	for _, svc := range services {
		n += (len(svc.ClusterIPs) + len(svc.ExternalIPs)) * len(svc.Ports)
	}
	rndr.ownership.reset(n)
	var firsts []string
	sl := &slabs{on: true}
	for i, svc := range services {
		r := records[i]
		if wanted[i] == nil && !rndr.claimAll(svc, r.translations()) {
			// A service before this one now owns one of its translations.
			wanted[i], r = rndr.renderRecord(svc, sl)
			claimed[i] = claimsOf(svc, wanted[i])
		}
		rndr.rendered[svc.ID] = r
		if wanted[i] != nil {
			// The addresses' first translations need no route staged: the resync
			// stages the routes of the addresses without translation only.
			// Most services claim what no other holds: at the cost of their claims.
			owned, n := wanted[i], len(wanted[i])
			var all bool
			if firsts, all = rndr.ownAll(svc, &claimed[i], firsts[:0]); !all {
				owned, firsts = rndr.own(svc, wanted[i], nil, firsts[:0])
			}
			r.complete = len(owned) == n
			if len(owned) > 0 {
				r.set = &sl.sets.take(true, 1)[0]
				r.set.Label, r.set.Translations = r.label(), owned
			}
		}
		if r.set != nil {
			txn.Put(r.key, r.set)
		}
		addrs = append(addrs, rndr.routeUsers.Update(svc.ID, nil, r.routes)...)
	}
	return addrs
}

// keeps tells whether a resync keeps the record of svc (see resyncServices).
func (rndr *Renderer) keeps(r *renderedService, svc *renderer.FlatService) bool {
	return r != nil && r.svc == svc && r.complete &&
		(r.nodeGen == rndr.nodeGen || (!svc.HasNodePort() && len(svc.ExternalIPs) == 0))
}

// renderRecord renders a service into a new record (its set not made yet): the
// translations it wants (never nil) and its routes.
func (rndr *Renderer) renderRecord(svc *renderer.FlatService, sl *slabs) ([]*vpp_cnat.Translation, *renderedService) {
	r := newRecord(svc.ID, sl)
	r.svc, r.nodeGen, r.routes = svc, rndr.nodeGen, rndr.wantedRoutes(svc)
	wanted := rndr.render(svc, sl)
	if wanted == nil {
		wanted = []*vpp_cnat.Translation{}
	}
	return wanted, r
}

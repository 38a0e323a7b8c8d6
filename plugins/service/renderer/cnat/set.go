package cnat

import (
	"slices"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
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

// own reduces wanted (sorted by identity, the service's own slice) to the
// translations service id may stage, claiming those no service owns: a translation
// whose identity another service owns is left out and logged (VPP keeps one
// translation per VIP, port and protocol: the first service rendered keeps it).
// A translation equal to the one of the same identity in prev (the service's set
// staged before, sorted) is replaced by prev's message, so that an unchanged
// translation is the same message in both sets. It appends the addresses that got
// their first translation to firsts.
func (rndr *Renderer) own(id renderer.ServiceID, wanted, prev []*vpp_cnat.Translation, firsts []string) (owned []*vpp_cnat.Translation, _ []string) {
	owned = wanted[:0]
	j := 0
	for _, t := range wanted {
		tid := idOf(t)
		if owner, taken := rndr.owners[tid]; taken && owner != id {
			rndr.Log.WithField("translation", vpp_cnat.TranslationIDOf(t)).
				Warnf("service %s exposes the address and port of service %s: not rendered", id, owner)
			continue
		} else if !taken {
			rndr.owners[tid] = id
			if rndr.vips[tid.vip]++; rndr.vips[tid.vip] == 1 {
				firsts = append(firsts, tid.vip)
			}
		}
		for j < len(prev) && compareIDs(idOf(prev[j]), tid) < 0 {
			j++
		}
		if j < len(prev) && idOf(prev[j]) == tid && proto.Equal(prev[j], t) {
			t = prev[j]
		}
		owned = append(owned, t)
	}
	return owned, firsts
}

// releaseGone releases the translations of prev (sorted, owned by id) that are not
// in owned (sorted) and returns the addresses left without translation.
func (rndr *Renderer) releaseGone(id renderer.ServiceID, prev, owned []*vpp_cnat.Translation) (lasts []string) {
	j := 0
	for _, t := range prev {
		tid := idOf(t)
		for j < len(owned) && compareIDs(idOf(owned[j]), tid) < 0 {
			j++
		}
		if j < len(owned) && idOf(owned[j]) == tid {
			continue
		}
		if last := rndr.release(id, tid); last != "" {
			lasts = append(lasts, last)
		}
	}
	return lasts
}

// release forgets that service id owns the identity; it returns the address when it
// has no translation left.
func (rndr *Renderer) release(id renderer.ServiceID, tid tid) (lastOf string) {
	if owner, ok := rndr.owners[tid]; !ok || owner != id {
		return ""
	}
	delete(rndr.owners, tid)
	if rndr.vips[tid.vip]--; rndr.vips[tid.vip] > 0 {
		return ""
	}
	delete(rndr.vips, tid.vip)
	return tid.vip
}

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
	touched = rndr.releaseGone(id, r.translations(), nil)
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
	prev := r.translations()
	owned, touched := rndr.own(svc.ID, rndr.render(svc, sl), prev, nil)
	touched = append(touched, rndr.releaseGone(svc.ID, prev, owned)...)
	stageSet(txn, r, owned, sl)
	routes := rndr.wantedRoutes(svc)
	touched = append(touched, rndr.routeUsers.Update(svc.ID, r.routes, routes)...)
	r.routes = routes
	return touched
}

// updateNodePorts stages the set of a node-port service after the node IPs changed:
// its staged translations without those of the node ports on the addresses removed,
// with those on the addresses added (the others are the same messages). It returns
// the addresses whose routes must be staged again.
func (rndr *Renderer) updateNodePorts(txn controller.UpdateOperations, svc *renderer.FlatService, r *renderedService,
	added, removed []renderer.Address) (touched []string) {
	prev := r.translations()
	kept := make([]*vpp_cnat.Translation, 0, len(prev)+len(added)*len(svc.Ports))
	for _, t := range prev {
		if isNodePortOf(svc, t) && slices.ContainsFunc(removed, func(a renderer.Address) bool { return a.Text == t.GetVip().GetAddress() }) {
			if last := rndr.release(svc.ID, idOf(t)); last != "" {
				touched = append(touched, last)
			}
			continue
		}
		kept = append(kept, t)
	}
	fresh, touched := rndr.own(svc.ID, rndr.nodePortTranslations(svc, added, &slabs{}), nil, touched)
	// kept and fresh are both sorted and disjoint (fresh ones are on addresses that
	// were no node's): merged, the set is in identity order.
	stageSet(txn, r, mergeByID(kept, fresh), &slabs{})
	return touched
}

// mergeByID merges b (sorted by identity) into a (sorted, with room for b) in place
// and returns the merged list, sorted: O(len(a)+len(b)).
func mergeByID(a, b []*vpp_cnat.Translation) []*vpp_cnat.Translation {
	n := len(a)
	out := append(a, b...) // grows into a's room: out[:n] is still a
	i, j, k := n-1, len(b)-1, len(out)-1
	for j >= 0 {
		if i >= 0 && byID(out[i], b[j]) > 0 {
			out[k] = out[i]
			i--
		} else {
			out[k] = b[j]
			j--
		}
		k--
	}
	return out
}

package cnatplugin

import (
	"fmt"
	"slices"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// The operations on translation sets are asynchronous (CreateAsync, UpdateAsync,
// DeleteAsync): each sends its requests (cnat_translation_update, cnat_translation_del)
// when the scheduler starts it, and waits for their replies when the scheduler asks
// for its result, after starting the other operations of the transaction. So a burst
// of Services, a node joining (every NodePort set gets a translation) or leaving
// reaches VPP as one pipeline, not one round trip per translation. The synchronous
// forms are the asynchronous ones waited for at once.
//
// All of them share one pipe and one queue of requests in flight, so VPP executes
// them in the order they were sent (VPP handles a client's messages in order): the
// deletion of a translation that frees an id stays before a creation that may reuse
// it, and a set's deletion staged before another set's creation of the same
// translation stays before it.

// inFlight is one request sent on the pipe, its reply not read yet.
type inFlight struct {
	msg   string           // the request's name, for errors
	reply govppapi.Message // filled in by receiveOldest
	err   error
	done  bool
}

// send sends req now (reading the oldest reply first when the window is full),
// tracked in f (the caller's, so that the requests of a set take few allocations),
// which is done at once with the error if req could not be sent.
func (d *translationDescriptor) send(f *inFlight, req, reply govppapi.Message) {
	if d.pipe == nil {
		d.pipe = govppmux.NewPipe(d.Ch)
	}
	if len(d.inflight) >= d.pipe.Window() {
		d.receiveOldest()
	}
	*f = inFlight{msg: req.GetMessageName(), reply: reply}
	if err := d.pipe.Send(req); err != nil {
		f.err, f.done = fmt.Errorf("%s: %w", f.msg, err), true
		return
	}
	d.inflight = append(d.inflight, f)
}

// await reads replies until the one of f is in and returns its error.
func (d *translationDescriptor) await(f *inFlight) error {
	for !f.done {
		d.receiveOldest()
	}
	return f.err
}

// drain reads every reply in flight (each stays in its entry), so that the channel
// may be used for something else, e.g. a dump.
func (d *translationDescriptor) drain() {
	for len(d.inflight) > 0 {
		d.receiveOldest()
	}
}

// receiveOldest reads the reply of the oldest request in flight (VPP answers in
// order).
func (d *translationDescriptor) receiveOldest() {
	f := d.inflight[0]
	d.inflight[0] = nil
	d.inflight = d.inflight[1:]
	if err := d.pipe.Receive(f.reply); err != nil {
		f.err = fmt.Errorf("%s: %w", f.msg, err)
	}
	f.done = true
}

// request is one translation's request of a set operation.
type request struct {
	f     inFlight
	id    identity
	t     *cnatmodel.Translation // the translation sent or deleted (for errors)
	del   bool
	vppID uint32                           // of a deletion
	reply *cnat.CnatTranslationUpdateReply // of an update
}

// batch is the requests of one operation on a set; wait applies their replies to
// the set's metadata. Its requests and messages are carved from slabs sized for the
// set (a NodePort set holds a translation per node IP).
type batch struct {
	d   *translationDescriptor
	op  string
	set *cnatmodel.TranslationSet
	md  *TranslationSetMetadata
	// reqs are the requests, in chunks (the pipe holds pointers into them, so a full
	// chunk is never moved: the next one is allocated).
	reqs [][]request
	// Slabs of the update messages and their replies, and the VPP form of the paths
	// last converted (lastPaths: the model's paths they were converted from).
	updates   []cnat.CnatTranslationUpdate
	replies   []cnat.CnatTranslationUpdateReply
	lastPaths []*cnatmodel.Path
	apiPaths  []cnat.CnatEndpointTuple
	// cmp compares an applied translation with its new value.
	cmp cnatmodel.Comparer
}

// newBatch returns an empty batch for about n requests.
func (d *translationDescriptor) newBatch(op string, set *cnatmodel.TranslationSet, md *TranslationSetMetadata, n int) *batch {
	return &batch{d: d, op: op, set: set, md: md, reqs: [][]request{make([]request, 0, max(n, 1))}}
}

// next returns the batch's next request.
func (b *batch) next() *request {
	last := &b.reqs[len(b.reqs)-1]
	if len(*last) == cap(*last) {
		b.reqs = append(b.reqs, make([]request, 0, min(2*cap(*last), 1024)))
		last = &b.reqs[len(b.reqs)-1]
	}
	*last = (*last)[:len(*last)+1]
	return &(*last)[len(*last)-1]
}

// update sends the cnat_translation_update of t (identity id).
func (b *batch) update(t *cnatmodel.Translation, id identity) {
	if len(b.updates) == 0 {
		last := b.reqs[len(b.reqs)-1]
		n := max(cap(last)-len(last), 1)
		b.updates, b.replies = make([]cnat.CnatTranslationUpdate, n), make([]cnat.CnatTranslationUpdateReply, n)
	}
	req, reply := &b.updates[0], &b.replies[0]
	b.updates, b.replies = b.updates[1:], b.replies[1:]
	at, err := b.translationToAPI(t)
	r := b.next()
	r.id, r.t, r.reply = id, t, reply
	if err != nil {
		r.f = inFlight{msg: "cnat_translation_update", err: err, done: true}
		return
	}
	req.Translation = at
	b.d.send(&r.f, req, reply)
}

// translationToAPI converts t, reusing the VPP form of the paths of the translation
// converted before when t shares its paths (the translations of a node port share
// theirs: converted once for all node IPs; messages are only read once made). Shared
// paths convert the same for both: validation keeps every endpoint of a translation
// in its VIP's family, the one thing a path's conversion takes from the translation.
func (b *batch) translationToAPI(t *cnatmodel.Translation) (cnat.CnatTranslation, error) {
	paths := t.GetPaths()
	if len(paths) > 0 && len(paths) == len(b.lastPaths) && &paths[0] == &b.lastPaths[0] {
		out, _, err := translationHeadToAPI(t, b.d.SwIfIndex)
		out.Paths = b.apiPaths
		return out, err
	}
	out, err := translationToAPI(t, b.d.SwIfIndex)
	if err == nil && len(out.Paths) > 0 {
		b.lastPaths, b.apiPaths = paths, out.Paths
	}
	return out, err
}

// del sends the cnat_translation_del of the translation of identity id, VPP's id
// vppID (t: the translation, for errors; nil when not known).
func (b *batch) del(id identity, vppID uint32, t *cnatmodel.Translation) {
	r := b.next()
	r.id, r.t, r.del, r.vppID = id, t, true, vppID
	b.d.send(&r.f, &cnat.CnatTranslationDel{ID: vppID}, &cnat.CnatTranslationDelReply{})
}

// deleteAll sends the deletion of every translation of the set VPP holds: those of
// set in its order, then any other the metadata has.
func (b *batch) deleteAll(set *cnatmodel.TranslationSet) {
	b.deleteUnwanted(set.GetTranslations(), nil, set.GetTranslations(), true)
}

// deleteUnwanted sends the deletion of the translations of ts VPP holds (the
// metadata) that are not wanted, in ts's order, then, with extras, of the others the
// metadata has (left by a failed operation) that are neither wanted nor in all (of
// which ts is part), in a stable order.
func (b *batch) deleteUnwanted(ts []*cnatmodel.Translation, wanted map[identity]bool, all []*cnatmodel.Translation, extras bool) {
	inVPP := 0 // of ts (which holds an identity once: validated)
	for _, t := range ts {
		id := identityOf(t)
		vppID, in := b.md.ids.get(id)
		if !in {
			continue
		}
		inVPP++
		if !wanted[id] {
			b.del(id, vppID, t)
		}
	}
	if !extras || (len(ts) == len(all) && inVPP == b.md.ids.len()) {
		return // (with extras: every translation VPP holds is one of ts, the usual case)
	}
	of := make(map[identity]bool, len(all))
	for _, t := range all {
		of[identityOf(t)] = true
	}
	var rest []identity
	for _, id := range b.md.ids.identities() {
		if !of[id] && !wanted[id] {
			rest = append(rest, id)
		}
	}
	slices.SortFunc(rest, identity.Compare)
	for _, id := range rest {
		vppID, _ := b.md.ids.get(id)
		b.del(id, vppID, nil)
	}
}

// wait reads the replies of the batch's requests, in order, and applies each to the
// metadata: an update's id kept, a deletion's forgotten. It returns the first error
// (how many failed when several did), the metadata then marked unsure.
func (b *batch) wait() error {
	var first error
	failed := 0
	for _, chunk := range b.reqs {
		for i := range chunk {
			r := &chunk[i]
			if err := b.d.await(&r.f); err != nil {
				if failed == 0 {
					first = b.describe(r, err)
				}
				failed++
				continue
			}
			if r.del {
				b.md.ids.del(r.id)
			} else {
				b.md.ids.set(r.id, r.reply.ID)
			}
		}
	}
	b.reqs = nil
	if failed == 0 {
		return nil
	}
	b.md.unsure = true
	if failed > 1 {
		return fmt.Errorf("%s cnat translation set %s: %d of its requests failed, the first: %w", b.op, b.set.GetLabel(), failed, first)
	}
	return fmt.Errorf("%s cnat translation set %s: %w", b.op, b.set.GetLabel(), first)
}

// describe wraps the error of request r with what it was.
func (b *batch) describe(r *request, err error) error {
	what := "translation"
	if r.t != nil {
		what += " " + cnatmodel.FormatTranslation(r.t)
	} else {
		what += fmt.Sprintf(" %s:%d/%s", r.id.Addr(), r.id.Port(), r.id.Protocol())
	}
	if r.del {
		return fmt.Errorf("delete %s (id %d): %w", what, r.vppID, err)
	}
	return fmt.Errorf("update %s: %w", what, err)
}

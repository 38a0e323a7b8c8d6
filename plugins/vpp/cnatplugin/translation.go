package cnatplugin

import (
	"errors"
	"fmt"
	"slices"

	"go.fd.io/govpp/binapi/cnat"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// TranslationSetDescriptorName names the descriptor of cnat translation sets; its
// metadata map (key label: the set's key) holds *TranslationSetMetadata.
const TranslationSetDescriptorName = "vpp-cnat-translation-set"

// UnownedSetLabel labels the set in which Retrieve reports the translations VPP has
// that no set of NB holds: not wanted, a resync deletes them. (Were NB to use the
// label, they would be reported as that set's and the resync would delete those it
// does not hold.)
const UnownedSetLabel = "unowned-translations"

// DepInterfaceExists waits for an interface a value names.
const DepInterfaceExists = "interface-exists"

// identity is VPP's identity of a translation (the model's, pointer-free).
type identity = cnatmodel.Identity

// identityOf returns the identity of a validated translation.
func identityOf(t *cnatmodel.Translation) identity { return cnatmodel.IdentityOf(t) }

// TranslationSetMetadata is what the scheduler keeps for a set in VPP: the ids VPP
// gave its translations (cnat_translation_del takes the id). The descriptor changes
// it in place as VPP's replies come in, so that it tells which of the set's
// translations VPP holds even after a failed operation (the scheduler keeps the
// metadata of a value whose update or deletion failed).
type TranslationSetMetadata struct {
	ids idTable
	// unsure: an operation on the set failed part-way, so a translation VPP holds may
	// differ from the applied value's: the next Update sends every translation.
	unsure bool
}

func newSetMetadata(n int) *TranslationSetMetadata {
	return &TranslationSetMetadata{ids: newIDTable(n)}
}

// Len returns how many of the set's translations VPP holds.
func (m *TranslationSetMetadata) Len() int { return m.ids.len() }

// ID returns the id VPP gave the set's translation of (vip, port, protocol).
func (m *TranslationSetMetadata) ID(vip string, port uint32, protocol cnatmodel.Protocol) (uint32, bool) {
	a, ok := cnatmodel.ParseAddr(vip)
	if !ok {
		return 0, false
	}
	return m.ids.get(cnatmodel.IdentityAt(a, port, protocol))
}

type translationDescriptor struct {
	vppbase.Descriptor

	pipe     *govppmux.Pipe // of Ch, made by the first request sent on it
	inflight []*inFlight    // sent on pipe, replies not read yet (async.go)
	// accepted is, by key, what validate learned of the last value it accepted (in
	// steady state the value applied): a change that shares most messages with it (a
	// node joining adds one translation to a set of fifty) validates only its new
	// messages. Delete forgets the key.
	accepted map[string]acceptedSet
}

// acceptedSet is the last value validate accepted for a key, and what it found.
type acceptedSet struct {
	value *cnatmodel.TranslationSet
	// noIfaces: none of its endpoints is an interface, so it has no dependency,
	// found without reading its translations again (the renderer's sets never name
	// interfaces).
	noIfaces bool
	// ordered: its translations are in the order of sets (cnatmodel.InSetOrder), so
	// a change of a few messages finds duplicates by the order of its new messages'
	// neighbours.
	ordered bool
}

// NewTranslationSetDescriptor returns the descriptor of cnat translation sets.
func NewTranslationSetDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &translationDescriptor{Descriptor: vppbase.NewDescriptor(deps, TranslationSetDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.TranslationSet, *TranslationSetMetadata]{
		Name:        TranslationSetDescriptorName,
		NBKeyPrefix: cnatmodel.TranslationSetPrefix,
		KeySelector: func(key string) bool {
			_, ok := cnatmodel.ParseTranslationSetKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *cnatmodel.TranslationSet) bool { return sameSet(a, b) },
		Validate:        d.validate,
		Create: func(_ string, v *cnatmodel.TranslationSet) (*TranslationSetMetadata, error) {
			return d.createAsync(v)()
		},
		CreateAsync: func(_ string, v *cnatmodel.TranslationSet) func() (*TranslationSetMetadata, error) {
			return d.createAsync(v)
		},
		Update: func(_ string, old, v *cnatmodel.TranslationSet, md *TranslationSetMetadata) (*TranslationSetMetadata, error) {
			return d.updateAsync(old, v, md)()
		},
		UpdateAsync: func(_ string, old, v *cnatmodel.TranslationSet, md *TranslationSetMetadata) func() (*TranslationSetMetadata, error) {
			return d.updateAsync(old, v, md)
		},
		Delete: func(key string, v *cnatmodel.TranslationSet, md *TranslationSetMetadata) error {
			d.forget(key)
			return d.deleteAsync(v, md)()
		},
		DeleteAsync: func(key string, v *cnatmodel.TranslationSet, md *TranslationSetMetadata) func() error {
			d.forget(key)
			return d.deleteAsync(v, md)
		},
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies:         d.dependencies,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
		WithMetadata:         true,
	})
}

// invalid turns the model's validation error into the scheduler's.
func invalid(err error) error {
	var ie *cnatmodel.InvalidError
	if errors.As(err, &ie) {
		return kvapi.NewInvalidValueError(err, ie.Fields...)
	}
	return err
}

// checked is a descriptor's Validate: the model's validation error (err), else the
// error of a value stored under a key (key; "" when not known) that is not its own
// (want), naming the fields the key is made of.
func checked(err error, what, key, want string, keyFields ...string) error {
	if err != nil {
		return invalid(err)
	}
	if key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("%s key %q does not match its value (want %q)", what, key, want), keyFields...)
	}
	return nil
}

// validate checks a set (cnatmodel.ValidateTranslationSet) and the key it is stored
// under; the messages it shares with the last value accepted for the key are not
// checked again (messages are never modified once given to the scheduler). When that
// value was in the order of sets (cnatmodel.InSetOrder) and the change is of a few
// messages that keep it (orderedAt), only the new messages are read, with their
// neighbours: validating a node's join costs its translations, not the hundred others
// of each set.
func (d *translationDescriptor) validate(key string, v *cnatmodel.TranslationSet) error {
	prev := d.accepted[key]
	ref := prev.value
	var freshAt []int
	few := false
	if ref != nil {
		var at indexes
		_, at, few = diffIndexes(ref.GetTranslations(), v.GetTranslations())
		freshAt = at.list()
	}
	var err error
	next := acceptedSet{value: v}
	if few && prev.ordered && orderedAt(v.GetTranslations(), freshAt) {
		err = cnatmodel.ValidateTranslationSetEdited(v, freshAt)
		next.ordered = true
		next.noIfaces = prev.noIfaces && noIfacesAt(v.GetTranslations(), freshAt)
	} else {
		known := sharedWith(ref, v, freshAt, few)
		// In the order of sets, v has no duplicates, seen by reading it in order
		// (cheaper than a map of its identities: a set of a hundred node IPs is one
		// comparison of texts per translation).
		next.ordered = cnatmodel.InSetOrder(v.GetTranslations())
		if next.ordered {
			err = cnatmodel.ValidateTranslationSetKnowingDistinct(v, known)
		} else {
			err = cnatmodel.ValidateTranslationSetKnowing(v, known)
		}
		// No interface in v: none in the messages it shares with ref when ref had
		// none, and none in the others.
		next.noIfaces = noIfaces(v, prev.noIfaces, known)
	}
	if err = checked(err, "cnat translation set", key, cnatmodel.TranslationSetKey(v.GetLabel()), "label"); err != nil {
		return err
	}
	if key != "" {
		if d.accepted == nil {
			d.accepted = make(map[string]acceptedSet)
		}
		d.accepted[key] = next
	}
	return nil
}

// forget drops what validate remembers of a key.
func (d *translationDescriptor) forget(key string) {
	delete(d.accepted, key)
}

// noIfaces tells whether no endpoint of v is an interface, looking only at the
// translations known (nil: none) does not report when refKnown (the messages known
// are a value's without interfaces).
func noIfaces(v *cnatmodel.TranslationSet, refKnown bool, known func(*cnatmodel.Translation) bool) bool {
	for _, t := range v.GetTranslations() {
		if refKnown && known != nil && known(t) {
			continue
		}
		if hasIface(t) {
			return false
		}
	}
	return true
}

// noIfacesAt tells whether no endpoint of the translations ts[i], i in at, is an
// interface.
func noIfacesAt(ts []*cnatmodel.Translation, at []int) bool {
	for _, i := range at {
		if hasIface(ts[i]) {
			return false
		}
	}
	return true
}

// hasIface tells whether an endpoint of t's paths is an interface.
func hasIface(t *cnatmodel.Translation) bool {
	for _, p := range t.GetPaths() {
		if p.GetDst().GetInterface() != "" || p.GetSrc().GetInterface() != "" {
			return true
		}
	}
	return false
}

// dependencies is setDeps, nothing for a value validate found without interfaces.
func (d *translationDescriptor) dependencies(key string, v *cnatmodel.TranslationSet) []kvapi.Dependency {
	if a := d.accepted[key]; v != nil && a.value == v && a.noIfaces {
		return nil
	}
	return setDeps(key, v)
}

// sharedWith returns whether a translation of v is one of ref's messages (nil when
// there is no ref): after a few edits (few: diffIndexes found v's new messages at
// the indexes freshAt) every other is; else through a map of ref's messages, each
// answering for one translation of v (a message given twice is a duplicate for
// validation to find).
func sharedWith(ref, v *cnatmodel.TranslationSet, freshAt []int, few bool) (known func(*cnatmodel.Translation) bool) {
	if ref == nil {
		return nil
	}
	if few {
		fresh := make([]*cnatmodel.Translation, len(freshAt))
		for k, i := range freshAt {
			fresh[k] = v.GetTranslations()[i]
		}
		return func(t *cnatmodel.Translation) bool { return !slices.Contains(fresh, t) }
	}
	rest := make(map[*cnatmodel.Translation]bool, len(ref.GetTranslations()))
	for _, r := range ref.GetTranslations() {
		rest[r] = true
	}
	return func(t *cnatmodel.Translation) bool {
		if rest[t] {
			delete(rest, t)
			return true
		}
		return false
	}
}

// maxEdits bounds the messages diffByPointer reports.
const maxEdits = 8

// diffByPointer compares two lists of messages that differ by a few insertions,
// removals or replacements (a node's translation merged into a node-port set, one
// taken out): it walks both in order, looking one message ahead, and returns the
// messages of ot it did not pair with the same message of nt (gone) and those of
// nt it did not pair (fresh); ok is false when there are more than maxEdits of them.
// A message moved elsewhere is in both gone and fresh.
func diffByPointer(ot, nt []*cnatmodel.Translation) (gone, fresh []*cnatmodel.Translation, ok bool) {
	goneAt, freshAt, ok := diffIndexes(ot, nt)
	if !ok {
		return nil, nil, false
	}
	for _, i := range goneAt.list() {
		gone = append(gone, ot[i])
	}
	for _, j := range freshAt.list() {
		fresh = append(fresh, nt[j])
	}
	return gone, fresh, true
}

// indexes are at most maxEdits indexes, ascending, kept in the value (diffIndexes
// runs for every set a transaction changes: it allocates nothing).
type indexes struct {
	at [maxEdits]int
	n  int
}

func (x *indexes) add(i int) { x.at[x.n], x.n = i, x.n+1 }

// list returns the indexes.
func (x *indexes) list() []int { return x.at[:x.n] }

// diffIndexes is diffByPointer returning the indexes of the messages gone in ot and
// of the fresh ones in nt.
func diffIndexes(ot, nt []*cnatmodel.Translation) (goneAt, freshAt indexes, ok bool) {
	i, j := 0, 0
	for i < len(ot) || j < len(nt) {
		if i < len(ot) && j < len(nt) && ot[i] == nt[j] {
			i, j = i+1, j+1
			continue
		}
		if goneAt.n+freshAt.n >= maxEdits {
			return indexes{}, indexes{}, false
		}
		switch {
		case i+1 < len(ot) && j < len(nt) && ot[i+1] == nt[j]: // ot[i] removed
			goneAt.add(i)
			i++
		case j+1 < len(nt) && i < len(ot) && ot[i] == nt[j+1]: // nt[j] inserted
			freshAt.add(j)
			j++
		case i < len(ot) && j < len(nt): // replaced
			if goneAt.n+freshAt.n+2 > maxEdits {
				return indexes{}, indexes{}, false
			}
			goneAt.add(i)
			freshAt.add(j)
			i, j = i+1, j+1
		case i < len(ot):
			goneAt.add(i)
			i++
		default:
			freshAt.add(j)
			j++
		}
	}
	return goneAt, freshAt, true
}

// needsRecreate tells whether VPP cannot change old into v in place. VPP sets
// lb_type and flow_hash_config only when it creates a translation
// (cnat_translation_update: an update of an existing key keeps them), and the
// VIP's cnat client keeps the exclusive or interposed mode of is_real_ip it was
// created with (cnat_client_add). So a change of any of them deletes and creates
// the translation. (The client of a VIP address is shared by every translation of
// that address, and lives while any of them or a session does: a renderer gives
// all translations of one address the same is_real_ip.)
func needsRecreate(old, v *cnatmodel.Translation) bool {
	fhc := func(t *cnatmodel.Translation) uint32 {
		if t.GetFlowHashConfig() == 0 {
			return defaultFlowHash
		}
		return t.GetFlowHashConfig()
	}
	return old.GetLbType() != v.GetLbType() || fhc(old) != fhc(v) || old.GetIsRealIp() != v.GetIsRealIp()
}

// defaultFlowHash is VPP's IP_FLOW_HASH_DEFAULT (src and dst address and port,
// protocol), which a flow_hash_config of 0 stands for.
const defaultFlowHash = 0x9f

// setDeps: every interface an endpoint of the set takes its address from must exist.
func setDeps(_ string, v *cnatmodel.TranslationSet) []kvapi.Dependency {
	var deps []kvapi.Dependency
	var seen map[string]bool
	var last []*cnatmodel.Path
	for _, t := range v.GetTranslations() {
		paths := t.GetPaths()
		if len(paths) > 0 && len(paths) == len(last) && &paths[0] == &last[0] {
			continue // (the paths of the translation before: a node port's are shared)
		}
		last = paths
		for _, p := range paths {
			for _, e := range [2]*cnatmodel.Endpoint{p.GetDst(), p.GetSrc()} {
				name := e.GetInterface()
				if name == "" || seen[name] {
					continue
				}
				if seen == nil {
					seen = make(map[string]bool)
				}
				seen[name] = true
				deps = append(deps, kvapi.Dependency{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(name)})
			}
		}
	}
	return deps
}

// sameSet compares two sets: the same label and translations equal by
// sameTranslation, in any order. Sets compared are mostly in the same order (a
// renderer renders a service the same way, Retrieve reports NB's order): that case
// allocates nothing.
func sameSet(a, b *cnatmodel.TranslationSet) bool {
	ta, tb := a.GetTranslations(), b.GetTranslations()
	if a.GetLabel() != b.GetLabel() || len(ta) != len(tb) {
		return false
	}
	var c cnatmodel.Comparer
	i := 0
	for ; i < len(ta); i++ {
		if !c.Same(ta[i], tb[i]) {
			break
		}
	}
	if i == len(ta) {
		return true
	}
	rest := make(map[identity]*cnatmodel.Translation, len(ta)-i)
	for _, t := range ta[i:] {
		rest[identityOf(t)] = t
	}
	for _, t := range tb[i:] {
		u, ok := rest[identityOf(t)]
		if !ok || !c.Same(u, t) {
			return false
		}
	}
	return true
}

// createAsync sends the creation of every translation of v now (VPP's
// cnat_translation_update creates a translation, or updates the one of the same
// identity in place: a create tried again after a failure finds the translations it
// made and keeps their ids) and returns the function that waits for the replies. A
// failed creation deletes the translations it made, so that a set never applied
// leaves nothing behind.
func (d *translationDescriptor) createAsync(v *cnatmodel.TranslationSet) func() (*TranslationSetMetadata, error) {
	md := newSetMetadata(len(v.GetTranslations()))
	b := d.newBatch("create", v, md, len(v.GetTranslations()))
	for _, t := range v.GetTranslations() {
		b.update(t, identityOf(t))
	}
	return func() (*TranslationSetMetadata, error) {
		err := b.wait()
		if err == nil {
			return md, nil
		}
		undo := d.newBatch("undo the failed creation of", v, md, md.Len())
		undo.deleteAll(v)
		if uerr := undo.wait(); uerr != nil {
			d.Log.WithError(uerr).Warnf("cnat translation set %s: %d translations of the failed creation stay in VPP until a resync", v.GetLabel(), md.Len())
		}
		return nil, err
	}
}

// updateAsync sends what changes old (the applied value) into v now and returns the
// function that waits for the replies: the deletion of the translations VPP holds
// (md) that v does not, and the update of each translation of v that is new or
// changed, a deletion first for one VPP cannot change in place (needsRecreate).
// Unchanged translations cost nothing.
//
// The usual update keeps the order of the translations of the same identities (an
// Endpoints change: new paths for each; a node joining: one more at the end; one
// leaving: one fewer): that prefix is walked pairwise, an unchanged message skipped
// without a look (VPP holds it: the last operation on the set succeeded), and only
// what follows is matched by identity. After a failed operation (md.unsure) every
// translation of v is sent and the metadata decides what to delete.
func (d *translationDescriptor) updateAsync(old, v *cnatmodel.TranslationSet, md *TranslationSetMetadata) func() (*TranslationSetMetadata, error) {
	if md == nil { // never expected: Create and Retrieve give metadata
		md = newSetMetadata(len(v.GetTranslations()))
	}
	ot, nt := old.GetTranslations(), v.GetTranslations()
	b := d.newBatch("update", v, md, 4) // (most updates change a few translations, or all: chunks grow)
	i := 0
	if !md.unsure && md.Len() == len(ot) { // md holds exactly old's translations
		for ; i < len(ot) && i < len(nt); i++ {
			if ot[i] == nt[i] {
				continue
			}
			id := identityOf(nt[i])
			if identityOf(ot[i]) != id {
				break
			}
			b.change(ot[i], nt[i], id)
		}
	}
	if i < len(ot) || i < len(nt) {
		if gone, fresh, ok := diffByPointer(ot[i:], nt[i:]); ok && !md.unsure && md.Len() == len(ot) {
			b.changeFew(gone, fresh)
		} else {
			b.changeByIdentity(ot[i:], nt[i:], i == 0)
		}
	}
	return func() (*TranslationSetMetadata, error) {
		if err := b.wait(); err != nil {
			return md, err
		}
		md.unsure = false
		return md, nil
	}
}

// changeByIdentity sends what changes the translations ot into nt, matched by
// identity: the deletion of those of ot VPP holds that nt has not (and, with
// extras, of any other the metadata has that nt has not), then the change of each
// of nt. Unless the metadata is unsure, a message in both is unchanged and in VPP:
// it is recognised by its pointer, without making its identity (a node's
// translation merged into a node-port set leaves the others' messages as they were).
func (b *batch) changeByIdentity(ot, nt []*cnatmodel.Translation, extras bool) {
	var both map[*cnatmodel.Translation]bool
	if !b.md.unsure {
		both = make(map[*cnatmodel.Translation]bool, len(nt))
		for _, t := range nt {
			both[t] = false
		}
		for _, t := range ot {
			if _, in := both[t]; in {
				both[t] = true
			}
		}
	}
	oldOf := make(map[identity]*cnatmodel.Translation)
	for _, t := range ot {
		if !both[t] {
			oldOf[identityOf(t)] = t
		}
	}
	wanted := make(map[identity]bool)
	for _, t := range nt {
		if !both[t] {
			wanted[identityOf(t)] = true
		}
	}
	var gone []*cnatmodel.Translation
	if len(both) > 0 {
		gone = make([]*cnatmodel.Translation, 0, len(oldOf))
		for _, t := range ot {
			if !both[t] {
				gone = append(gone, t)
			}
		}
	} else {
		gone = ot
	}
	// (The messages in both have identities of their own: validation keeps one
	// identity per set, so none of them is in wanted or oldOf.)
	b.deleteUnwanted(gone, wanted, ot, extras)
	for _, t := range nt {
		if both[t] {
			continue
		}
		id := identityOf(t)
		b.change(oldOf[id], t, id)
	}
}

// changeFew sends what changes a set whose other messages stay: gone are the
// messages of the applied value it no longer has, fresh the new ones (a few each,
// matched by identity without maps). The metadata must be sure and hold exactly the
// applied value's translations.
func (b *batch) changeFew(gone, fresh []*cnatmodel.Translation) {
	freshIDs := make([]identity, len(fresh))
	for k, t := range fresh {
		freshIDs[k] = identityOf(t)
	}
	goneIDs := make([]identity, len(gone))
	for k, t := range gone {
		goneIDs[k] = identityOf(t)
		if !slices.Contains(freshIDs, goneIDs[k]) {
			if vppID, in := b.md.ids.get(goneIDs[k]); in {
				b.del(goneIDs[k], vppID, t)
			}
		}
	}
	for k, t := range fresh {
		var prev *cnatmodel.Translation
		if g := slices.Index(goneIDs, freshIDs[k]); g >= 0 {
			prev = gone[g]
		}
		b.change(prev, t, freshIDs[k])
	}
}

// change sends what changes prev (nil: none applied) into t, both of identity id.
func (b *batch) change(prev, t *cnatmodel.Translation, id identity) {
	vppID, inVPP := b.md.ids.get(id)
	switch {
	case inVPP && (prev == nil || needsRecreate(prev, t)):
		// (In VPP but not in the applied value: what an earlier failure left, of
		// unknown lb_type; re-created to be sure.)
		b.del(id, vppID, t)
		b.update(t, id)
	case !inVPP || prev == nil || b.md.unsure || !b.cmp.Same(prev, t):
		b.update(t, id)
	}
}

// deleteAsync sends the deletion of every translation of the set VPP holds now and
// returns the function that waits for the replies. Without metadata (never expected:
// Create and Retrieve give it) it finds the ids in a dump first, after reading the
// replies in flight (a dump needs the channel to itself).
func (d *translationDescriptor) deleteAsync(v *cnatmodel.TranslationSet, md *TranslationSetMetadata) func() error {
	if md == nil {
		d.drain()
		found, err := d.idsInVPP(v)
		if err != nil {
			err = fmt.Errorf("delete cnat translation set %s: %w", v.GetLabel(), err)
			return func() error { return err }
		}
		md = found
	}
	b := d.newBatch("delete", v, md, md.Len())
	b.deleteAll(v)
	return b.wait
}

// idsInVPP dumps the translations and returns the ids of those of v.
func (d *translationDescriptor) idsInVPP(v *cnatmodel.TranslationSet) (*TranslationSetMetadata, error) {
	list, err := govppmux.Dump[cnat.CnatTranslationDetails](d.Ch, &cnat.CnatTranslationDump{})
	if err != nil {
		return nil, fmt.Errorf("dump cnat translations: %w", err)
	}
	want := make(map[identity]bool, len(v.GetTranslations()))
	for _, t := range v.GetTranslations() {
		want[identityOf(t)] = true
	}
	md := newSetMetadata(len(want))
	for _, det := range list {
		if id, ok := dumpedIdentity(det.Translation); ok && want[id] {
			md.ids.set(id, det.Translation.ID)
		}
	}
	return md, nil
}

// retrieve dumps every translation and reports them in sets: each in the NB set
// (correlate) that holds its identity, in that set's order, the others in the set
// UnownedSetLabel. cnat belongs to the agent (nothing else configures it), so a
// resync deletes what NB does not want. VPP does not dump some fields: they are taken
// from the NB translation (translationFromAPI).
func (d *translationDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	list, err := govppmux.Dump[cnat.CnatTranslationDetails](d.Ch, &cnat.CnatTranslationDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve cnat translations: %w", err)
	}
	if len(list) == 0 {
		return nil, nil // (an agent's first start: nothing to index NB's sets for)
	}
	type place struct {
		set   int // index in found + 1 (0: none)
		index int // in the NB set
	}
	type foundSet struct {
		nb    *cnatmodel.TranslationSet
		slots []*cnatmodel.Translation // by NB index; the unowned set appends
		md    *TranslationSetMetadata
	}
	var found []*foundSet
	placeOf := make(map[identity]place)
	for _, kv := range correlate {
		s, ok := kv.Value.(*cnatmodel.TranslationSet)
		if !ok || len(s.GetTranslations()) == 0 {
			continue
		}
		for i, t := range s.GetTranslations() {
			if id := identityOf(t); placeOf[id] == (place{}) {
				placeOf[id] = place{set: len(found) + 1, index: i}
			}
		}
		found = append(found, &foundSet{nb: s})
	}
	unowned := &foundSet{nb: &cnatmodel.TranslationSet{Label: UnownedSetLabel}}
	names := d.IfaceNames()
	for _, det := range list {
		id, ok := dumpedIdentity(det.Translation)
		f, at := unowned, -1
		if p := placeOf[id]; ok && p.set > 0 {
			f, at = found[p.set-1], p.index
		}
		var nbT *cnatmodel.Translation
		if at >= 0 {
			nbT = f.nb.GetTranslations()[at]
		}
		var t *cnatmodel.Translation
		if ok {
			t, ok = translationFromAPI(det.Translation, names, nbT)
		}
		if !ok {
			d.Log.Warnf("cnat translation id %d: VIP or protocol has no identity (%v/%v), skipped", det.Translation.ID, det.Translation.Vip, det.Translation.IPProto)
			continue
		}
		if f.md == nil {
			f.md = newSetMetadata(len(f.nb.GetTranslations()))
			if at >= 0 {
				f.slots = make([]*cnatmodel.Translation, len(f.nb.GetTranslations()))
			}
		}
		f.md.ids.set(id, det.Translation.ID)
		if at >= 0 {
			f.slots[at] = t
		} else {
			f.slots = append(f.slots, t)
		}
	}
	out := make([]kvapi.KVWithMetadata, 0, len(found)+1)
	for _, f := range append(found, unowned) {
		if f.md == nil {
			continue
		}
		v := &cnatmodel.TranslationSet{Label: f.nb.GetLabel(), Translations: make([]*cnatmodel.Translation, 0, f.md.Len())}
		for _, t := range f.slots {
			if t != nil {
				v.Translations = append(v.Translations, t)
			}
		}
		out = append(out, kvapi.KVWithMetadata{Key: cnatmodel.TranslationSetKey(v.Label), Value: v, Metadata: f.md, Origin: kvapi.FromNB})
	}
	return out, nil
}

// dumpedIdentity is the identity of a dumped translation; ok is false for a VIP that
// is an interface or not an address, or a protocol the model has not.
func dumpedIdentity(t cnat.CnatTranslation) (identity, bool) {
	proto, ok := protocolFromAPI(t.IPProto)
	if !ok || uint32(t.Vip.SwIfIndex) != noInterface {
		return identity{}, false
	}
	a, ok := vppbase.AddrFromAPI(t.Vip.Addr)
	if !ok {
		return identity{}, false
	}
	return cnatmodel.IdentityAt(a.Unmap(), uint32(t.Vip.Port), proto), true
}

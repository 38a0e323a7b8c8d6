package natplugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// DNAT44DescriptorName names the descriptor of DNat44 mapping sets.
const DNAT44DescriptorName = "vpp-dnat44"

// ErrDNAT44WithEmptyLabel rejects a DNat44 without label.
var ErrDNAT44WithEmptyLabel = errors.New("DNAT44 with empty label")

// dnatDescriptor implements the callbacks of the DNat44 descriptor (see
// "DNat44 in VPP" in the package documentation).
type dnatDescriptor struct {
	base
	pipe *pipeline // requests of asynchronous creations in flight
	// leftovers are the adds whose undo failed, still in VPP (see finish).
	leftovers map[leftover]mapping
	// parsed keeps what Validate parsed until Create uses it.
	parsed parsedCache
	// seen is validate's map for finding duplicate mappings, empty between calls.
	seen map[mappingID]bool
	// lastValid is, by key, the last value validate accepted (in steady state the value
	// the scheduler holds): a new value is checked against it (validChange), so that
	// a change of a few entries costs those entries. Delete forgets the key.
	lastValid map[string]*nat.DNat44
}

func newDNat44(deps DescriptorDeps) (*kvapi.KVDescriptor, *dnatDescriptor) {
	d := &dnatDescriptor{base: vppbase.NewDescriptor(deps, DNAT44DescriptorName)}
	d.pipe = newPipeline(d.Ch)
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.DNat44, kvapi.Metadata]{
		Name:        DNAT44DescriptorName,
		NBKeyPrefix: nat.DNAT44Prefix,
		KeySelector: func(key string) bool {
			label, ok := nat.ParseDNAT44Key(key)
			return ok && label != ""
		},
		KeyLabel: func(key string) string {
			label, _ := nat.ParseDNAT44Key(key)
			return label
		},
		ValueComparator: func(_ string, a, b *nat.DNat44) bool {
			bParsed, _ := d.parsed.peek(b) // (b is usually the value just validated)
			if equivalentDNat44(a, b, bParsed) {
				d.parsed.drop(b) // nothing will be created from b
				return true
			}
			return false
		},
		Validate: d.validate,
		Create: func(_ string, v *nat.DNat44) (kvapi.Metadata, error) {
			return nil, d.update(nil, v)
		},
		CreateAsync: d.createAsync,
		UpdateAsync: d.updateAsync,
		Update: func(_ string, old, v *nat.DNat44, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.update(old, v)
		},
		Delete: func(key string, v *nat.DNat44, _ kvapi.Metadata) error {
			delete(d.lastValid, key)
			return d.update(v, nil)
		},
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies:         func(_ string, v *nat.DNat44) []kvapi.Dependency { return DNat44Dependencies(v) },
		RetrieveDependencies: []string{ifaceidx.DescriptorName, GlobalDescriptorName},
	}), d
}

// validate is ValidateDNat44 keeping the parsed mappings of a valid value for its
// creation (see parsedCache).
func (d *dnatDescriptor) validate(key string, v *nat.DNat44) error {
	if d.seen == nil {
		d.seen = map[mappingID]bool{}
		d.lastValid = map[string]*nat.DNat44{}
	}
	if ref := d.lastValid[key]; ref != nil {
		if err, decided := validChange(key, ref, v); decided {
			if err == nil {
				d.lastValid[key] = v
			}
			return err
		}
	}
	seen := d.seen
	if len(v.GetStMappings())+len(v.GetIdMappings()) > maxScratchMappings {
		seen = nil // a map of its own: clearing a map grown that large would cost every later call
	}
	ms, err := validDNat44(key, v, seen)
	if err == nil {
		d.parsed.put(v, ms)
		d.lastValid[key] = v
	}
	return err
}

// maxChangedEntries bounds the entries validChange parses: a larger change is checked
// whole (it costs about as much, and the duplicate check stays linear).
const maxChangedEntries = 16

// validChange checks v, a value of key, against ref, a value of the same key that
// validated: the static mappings v has in common with ref (equal field by field) at
// its start and at its end are valid and have distinct external keys, so only the
// entries in between are parsed, checked, and compared with the others for
// duplicates. decided is false when that does not apply (identity mappings, more than
// maxChangedEntries changed, a changed entry that is address-only or names an
// interface, whose duplicates cannot be told by the text of the others): the caller
// checks v whole. The errors name the same fields as a whole check.
//
// Cost: O(entries) comparisons, no parsing of unchanged entries and no allocation for
// them: a node joining changes two entries of each of the 1,000 NodePort values of a
// large cluster, where a whole check parsed ~100 mappings of each.
func validChange(key string, ref, v *nat.DNat44) (err error, decided bool) {
	if len(ref.GetIdMappings()) > 0 || len(v.GetIdMappings()) > 0 || ref.GetLabel() != v.GetLabel() {
		return nil, false
	}
	if v.GetLabel() == "" {
		return nil, false // the whole check names the problem
	}
	if key != "" && (!strings.HasPrefix(key, nat.DNAT44Prefix) || key[len(nat.DNAT44Prefix):] != v.GetLabel()) {
		return nil, false
	}
	a, b := ref.GetStMappings(), v.GetStMappings()
	var c staticComparer
	n := 0
	for n < len(a) && n < len(b) && c.same(a[n], b[n]) {
		n++
	}
	m := 0
	for m < len(a)-n && m < len(b)-n && c.same(a[len(a)-1-m], b[len(b)-1-m]) {
		m++
	}
	changed := b[n : len(b)-m]
	if len(changed) > maxChangedEntries {
		return nil, false
	}
	for _, e := range changed {
		if e.GetExternalPort() == 0 || e.GetExternalInterface() != "" {
			return nil, false
		}
	}
	var p problems
	var memo localsMemo
	parsed := make([]mapping, 0, len(changed))
	entry := make([]*nat.DNat44_StaticMapping, 0, len(changed)) // the entry of each parsed mapping
	for i, e := range changed {
		if pm, ok := parseStatic(&p, fieldPath{"st_mappings", n + i}, e, &memo); ok {
			parsed, entry = append(parsed, pm), append(entry, e)
		}
	}
	// Every entry whose mapping an entry before it has is a duplicate, reported once
	// (as the whole check does): the later ones among the changed entries, and a
	// changed entry that an unchanged one lists too. Valid port mappings of an
	// external IPv4 address have the same ident exactly when their address texts (an
	// IPv4 address has one text that parses), ports and protocols are equal.
	dups := duplicates(parsed, nil)
	unchanged := [2][]*nat.DNat44_StaticMapping{b[:n], b[len(b)-m:]}
	for i, e := range entry {
		dup := len(dups) > 0 && dups[0] == i
		if dup {
			dups = dups[1:]
		}
		for _, us := range unchanged {
			for _, u := range us {
				dup = dup || sameExternal(e, u)
			}
		}
		if dup {
			p.add("st_mappings", "mapping %s is listed twice", parsed[i].id())
		}
	}
	return p.err(), true
}

// sameExternal tells whether static mapping u has the external address, port and
// protocol of e, a port mapping of an external address.
func sameExternal(e, u *nat.DNat44_StaticMapping) bool {
	return u.GetExternalInterface() == "" && u.GetExternalPort() == e.GetExternalPort() &&
		u.GetProtocol() == e.GetProtocol() && u.GetExternalIp() == e.GetExternalIp()
}

// maxScratchMappings bounds the values whose duplicate check reuses the descriptor's
// map (clearing a map costs its largest size).
const maxScratchMappings = 1024

// ValidateDNat44 checks a DNat44 and that key is its key.
func ValidateDNat44(key string, d *nat.DNat44) error {
	_, err := validDNat44(key, d, nil)
	return err
}

// validDNat44 is ValidateDNat44 returning the parsed mappings of a valid value (seen:
// see parseEntries).
func validDNat44(key string, d *nat.DNat44, seen map[mappingID]bool) ([]mapping, error) {
	if d.GetLabel() == "" {
		return nil, kvapi.NewInvalidValueError(ErrDNAT44WithEmptyLabel, "label")
	}
	if key != "" && (!strings.HasPrefix(key, nat.DNAT44Prefix) || key[len(nat.DNAT44Prefix):] != d.GetLabel()) {
		// (compared without building the key: every change of every service is validated)
		return nil, kvapi.NewInvalidValueError(fmt.Errorf("DNAT44 key %q does not match its label (want %q)",
			key, nat.DNAT44Key(d.GetLabel())), "label")
	}
	return parseEntries(d.GetStMappings(), d.GetIdMappings(), seen)
}

// EquivalentDNat44 reports whether a and b program the same mappings, in
// any order, ignoring what VPP ignores.
//
// Cost: O(1) when the numbers of entries differ (every entry of a valid DNat44 is
// one mapping, and values that differ in length are not equal either), O(entries +
// locals) comparisons without parsing or allocation when the entries are equal field
// by field in the same order (an unchanged value rebuilt by the renderer), otherwise
// O(entries + locals) comparisons and the parsing of the entries that differ, without
// formatting.
func EquivalentDNat44(a, b *nat.DNat44) bool { return equivalentDNat44(a, b, nil) }

// equivalentDNat44 is EquivalentDNat44 given, if not nil, the mappings of b as
// validDNat44 parsed them (so b's entries are not parsed again).
func equivalentDNat44(a, b *nat.DNat44, bParsed []mapping) bool {
	if a.GetLabel() != b.GetLabel() ||
		len(a.GetStMappings()) != len(b.GetStMappings()) || len(a.GetIdMappings()) != len(b.GetIdMappings()) {
		return false
	}
	if sameDNat44(a, b) {
		return true
	}
	if firstEntryDiffers(a.GetStMappings(), b.GetStMappings(), bParsed) {
		return false // the usual changed value: decided by one pair of entries
	}
	// entries equal field by field are the same mappings: only the others are parsed
	var c staticComparer
	sa, sb := dropCommon(a.GetStMappings(), b.GetStMappings(), c.same, keyOfStatic)
	ia, ib := dropCommon(a.GetIdMappings(), b.GetIdMappings(), sameIdentity, keyOfIdentity)
	ma, errA := parseEntries(sa, ia, nil)
	mb, errB := parseEntries(sb, ib, nil)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	if len(ma) != len(mb) {
		return false
	}
	// parseEntries refuses two mappings with one ident, so pairing by ident
	// compares the two sets
	byID := make(map[mappingID]*mapping, len(ma))
	for i := range ma {
		byID[ma[i].ident()] = &ma[i]
	}
	for i := range mb {
		if o, ok := byID[mb[i].ident()]; !ok || !o.equal(&mb[i]) {
			return false
		}
	}
	return true
}

// firstEntryDiffers reports whether the first pair of static mappings at one position
// of as and bs (bParsed: the mappings of a valid value listing bs, or nil) that differ
// field by field is, as far as VPP is concerned, one mapping
// changed: both have the same external key (address or interface, port, protocol) and
// parse to different mappings. Two values where that holds are not equivalent: a valid
// value has one mapping per external key, so the two mappings of that key differ; and an
// invalid value is compared field by field, where the pair differs too. False means "not
// decided" (the pair differs in its key or does not parse): the caller compares the sets.
//
// Cost: the comparisons up to the first differing pair and the parsing of that pair: a
// changed NodePort service (one backend replaced in its ~100 mappings) is told apart in
// O(1) mappings instead of parsing every entry of both values.
func firstEntryDiffers(as, bs []*nat.DNat44_StaticMapping, bParsed []mapping) bool {
	var c staticComparer
	for i := range min(len(as), len(bs)) {
		x, y := as[i], bs[i]
		if c.same(x, y) {
			continue
		}
		if keyOfStatic(x) != keyOfStatic(y) {
			return false
		}
		var p problems
		mx, okX := parseStatic(&p, fieldPath{}, x, nil)
		if !okX {
			return false
		}
		if i < len(bParsed) { // parsed when validated: the static mappings come first, in order
			return !mx.equal(&bParsed[i])
		}
		my, okY := parseStatic(&p, fieldPath{}, y, nil)
		return okY && !mx.equal(&my)
	}
	return false
}

// DNat44Dependencies lists what a DNat44 needs: the global NAT44
// configuration (which enables the plugin), the non-zero VRF tables of its
// locals and identity mappings, and the interfaces it takes addresses from.
func DNat44Dependencies(d *nat.DNat44) []kvapi.Dependency {
	deps := make([]kvapi.Dependency, 1, 2)
	deps[0] = kvapi.Dependency{Label: DepNAT44Global, Key: nat.GlobalNAT44Key}
	// a DNat44 has a handful of dependencies: a linear search costs less than a map
	add := func(label, key string) {
		for _, d := range deps {
			if d.Key == key {
				return
			}
		}
		deps = append(deps, kvapi.Dependency{Label: label, Key: key})
	}
	var vrfs []uint32 // the VRFs added, to format the key of each once
	vrf := func(id uint32) {
		if id != 0 && id != noIndex && !slices.Contains(vrfs, id) {
			vrfs = append(vrfs, id)
			add(DepVrfTableExists, l3.VrfTableKey(id, l3.VrfTable_IPV4))
		}
	}
	var prev []*nat.DNat44_StaticMapping_LocalIP
	for _, sm := range d.GetStMappings() {
		// mappings sharing one list of locals (one per port of a service) read it once
		if ls := sm.GetLocalIps(); !sameSlice(ls, prev) {
			for _, l := range ls {
				vrf(l.GetVrfId())
			}
			prev = ls
		}
		if sm.GetExternalInterface() != "" {
			add(DepInterfaceExists, ifmodel.InterfaceKey(sm.GetExternalInterface()))
		}
	}
	for _, im := range d.GetIdMappings() {
		vrf(im.GetVrfId())
		if im.GetInterface() != "" {
			add(DepInterfaceExists, ifmodel.InterfaceKey(im.GetInterface()))
		}
	}
	return deps
}

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

// leftover identifies what an add put into VPP when undoing it failed, so that the
// same add, tried again, can take VPP's "already exists" for done.
type leftover struct {
	tag     string
	id      mappingID
	isLocal bool
	local   local // the local of a local add
}

// leftoverOf returns the leftover key of an add step; ok is false for other steps.
func (s *step) leftoverOf(tag string) (k leftover, ok bool) {
	if !s.do.isAdd {
		return leftover{}, false
	}
	return leftover{tag: tag, id: s.do.m.ident(), isLocal: s.do.isLocal, local: s.do.local}, true
}

// maxLeftovers bounds what the descriptor remembers of failed undos (a handful in
// practice: each one is a failed request followed by a failed undo).
const maxLeftovers = 4096

// createAsync sends the requests that create a DNat44 without waiting for their
// replies; the returned function waits for them and, if some failed, undoes the ones
// that succeeded (as Create does). The scheduler starts many creations before waiting,
// so 10k DNATs go to VPP as one pipeline instead of 10k round trips.
func (d *dnatDescriptor) createAsync(_ string, to *nat.DNat44) func() (kvapi.Metadata, error) {
	return d.startAsync(nil, to)
}

// updateAsync is createAsync for an update (UpdateAsync): a node joining changes every
// NodePort DNat44, and their requests go to VPP as one pipeline.
func (d *dnatDescriptor) updateAsync(_ string, from, to *nat.DNat44, _ kvapi.Metadata) func() (kvapi.Metadata, error) {
	return d.startAsync(from, to)
}

// startAsync sends the requests that move VPP from the mappings of from to those of to
// (nil from: create) through the pipeline; the returned function waits for their
// replies and, if some failed, undoes the ones that succeeded.
func (d *dnatDescriptor) startAsync(from, to *nat.DNat44) func() (kvapi.Metadata, error) {
	label, op := to.GetLabel(), "update"
	if from == nil {
		op = "create"
	}
	steps, err := d.planChange(from, to)
	if err != nil {
		err = fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
		return func() (kvapi.Metadata, error) { return nil, err }
	}
	sent := make([]pending, len(steps)) // one block for the requests of the value
	for i, s := range steps {
		d.pipe.send(&sent[i], s.do)
	}
	return func() (kvapi.Metadata, error) {
		var errs []error // only when some request failed
		for i := range sent {
			if err := d.pipe.wait(&sent[i]); err != nil {
				if errs == nil {
					errs = make([]error, len(sent))
				}
				errs[i] = err
			}
		}
		if errs == nil {
			return nil, nil
		}
		if err := d.finish(Tag(label), steps, errs); err != nil {
			return nil, fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
		}
		return nil, nil
	}
}

// update moves VPP from the mappings of from to those of to (nil from:
// create, nil to: delete), sending only what differs.
func (d *dnatDescriptor) update(from, to *nat.DNat44) error {
	d.pipe.drain() // replies of asynchronous creations must not mix with these
	label := to.GetLabel()
	op := "update"
	switch {
	case from == nil:
		op = "create"
	case to == nil:
		op, label = "delete", from.GetLabel()
	}
	steps, err := d.planChange(from, to)
	if err != nil {
		return fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
	}
	if err := d.run(Tag(label), steps); err != nil {
		return fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
	}
	if len(steps) > 0 && infra.LevelEnabled(d.Log, logrus.DebugLevel) {
		d.Log.WithFields(map[string]any{"label": label, "requests": len(steps)}).Debugf("DNAT44 %s done", op)
	}
	return nil
}

// planChange lists the requests that move VPP from the mappings of from to those of
// to (nil from: create, nil to: delete).
func (d *dnatDescriptor) planChange(from, to *nat.DNat44) ([]step, error) {
	label := to.GetLabel()
	if to == nil {
		label = from.GetLabel()
	}
	validated, parsedTo := d.parsed.take(to)
	if parsedTo && from == nil {
		return d.plan(Tag(label), nil, validated) // parsed when validated
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
	if !parsedTo || len(newSt) != len(to.GetStMappings()) || len(newID) != len(to.GetIdMappings()) {
		// (every entry changed, as when a backend of a service is replaced: what
		// Validate parsed is the new side, in the same order)
		if newM, err = parseMappings(newSt, newID); err != nil {
			return nil, err
		}
	}
	return d.plan(Tag(label), oldM, newM)
}

// plan lists the requests that turn the mappings oldM into newM: deletes of
// the mappings that went away or changed, then adds of the new and changed
// ones; LB mappings that differ only in their locals get local adds, then
// local removals. The mappings are those of validated values (one per ident in each).
//
// Cost: O(mappings) when oldM and newM list the same mappings in the same order (an
// update in place: no map), the differences of the locals computed once for mappings
// sharing their parsed locals (every mapping of a NodePort service's port), and the
// request messages allocated together (see requestBuilder).
func (d *dnatDescriptor) plan(tag string, oldM, newM []mapping) ([]step, error) {
	newOf := pairMappings(oldM, newM) // newOf[i]: the index in newM of oldM[i]'s ident, -1 if none
	paired := make([]bool, len(newM))
	var diffs localsDiffs
	var dels, locals []*mapping // deleted mappings (old); LB mappings whose locals change (new)
	var localOld []*mapping     // the old mapping of each of locals
	nLocalSteps := 0
	for i := range oldM {
		o := &oldM[i]
		j := newOf[i]
		if j < 0 {
			dels = append(dels, o)
			continue
		}
		n := &newM[j]
		paired[j] = true
		switch {
		case n.equal(o):
		case n.sameButLocals(o) && diffs.of(o.locals, n.locals).diffable:
			locals, localOld = append(locals, n), append(localOld, o)
			df := diffs.of(o.locals, n.locals)
			nLocalSteps += len(df.added) + len(df.removed)
		default:
			dels = append(dels, o)
			paired[j] = false // added again below
		}
	}
	var kinds [kindIdentity + 1]int // the mappings deleted and added, by kind
	for _, o := range dels {
		kinds[o.kind]++
	}
	nAdds := 0
	for j := range newM {
		if !paired[j] {
			kinds[newM[j].kind]++
			nAdds++
		}
	}
	steps := make([]step, 0, len(dels)+nAdds+nLocalSteps)
	b := requestBuilder{tag: tag, resolve: d.SwIfIndex}
	b.reserve(kinds[kindStatic], kinds[kindLB])
	for _, o := range dels {
		r, err := b.request(o, false)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{do: r, missingOK: true})
	}
	for j := range newM {
		if paired[j] {
			continue
		}
		r, err := b.request(&newM[j], true)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{do: r})
	}
	b.reserveLocals(nLocalSteps)
	for k, n := range locals {
		o := localOld[k]
		df := diffs.of(o.locals, n.locals)
		// the new locals first: VPP wants at least two at any time
		for _, l := range df.added {
			steps = append(steps, step{do: b.localRequest(n, true, l)})
		}
		for _, l := range df.removed {
			steps = append(steps, step{do: b.localRequest(o, false, l), missingOK: true})
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

// run sends the steps pipelined. If some fail, the ones that succeeded are
// undone, in reverse order, and the error lists the failures (and any undo
// that failed too).
func (d *dnatDescriptor) run(tag string, steps []step) error {
	if len(steps) == 0 {
		return nil
	}
	reqs := make([]request, len(steps))
	for i, s := range steps {
		reqs[i] = s.do
	}
	return d.finish(tag, steps, sendBatch(d.Ch, reqs))
}

// finish collects the outcome of steps sent with errs as their results: when some
// failed, the ones that succeeded are undone, in reverse order, and the error lists
// the failures (and any undo that failed too).
//
// An add failing because VPP already has what it adds counts as done if an earlier
// call's undo of that very add failed (with an error other than BUSY, see leftovers):
// the retried call would otherwise fail with "already exists" for good.
func (d *dnatDescriptor) finish(tag string, steps []step, errs []error) error {
	var failed []error
	for i, err := range errs {
		switch {
		case err == nil:
		case steps[i].missingOK && vppbase.IsRetval(err, govppapi.NO_SUCH_ENTRY):
			// already gone: nothing to undo either
		case vppbase.IsRetval(err, govppapi.VALUE_EXIST) && d.takeLeftover(tag, &steps[i]):
			// what a failed undo left: done (and undone with the others if the call fails)
			errs[i] = nil // (errs is the caller's scratch: it marks the step done)
		default:
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// the undo requests are built only now: most calls succeed
	var undo []request
	var undone []int // the step each undo request undoes
	for i := range steps {
		if errs[i] != nil {
			continue // failed, or already gone
		}
		if u, ok := steps[i].undo(tag, d.SwIfIndex); ok {
			undo = append(undo, u)
			undone = append(undone, i)
		}
	}
	slices.Reverse(undo)
	slices.Reverse(undone)
	d.pipe.drain()
	// An undo left undone makes the retried create fail with "already exists"
	// for good, so undos failing with a transient error are sent again, and what
	// stays undone is remembered.
	for attempt := 1; len(undo) > 0; attempt++ {
		var again []request
		var againSteps []int
		for i, err := range sendBatch(d.Ch, undo) {
			switch {
			case err == nil:
			case attempt < undoAttempts && vppbase.IsRetval(err, govppapi.BUSY):
				again = append(again, undo[i])
				againSteps = append(againSteps, undone[i])
			default:
				failed = append(failed, fmt.Errorf("undo: %w", err))
				d.keepLeftover(tag, &steps[undone[i]])
			}
		}
		undo, undone = again, againSteps
	}
	return errors.Join(failed...)
}

// keepLeftover remembers that the add of step s stayed in VPP (its undo failed).
func (d *dnatDescriptor) keepLeftover(tag string, s *step) {
	k, ok := s.leftoverOf(tag)
	if !ok {
		return
	}
	if len(d.leftovers) >= maxLeftovers {
		d.Log.WithField("count", len(d.leftovers)).Warn("DNAT44: too many mappings left by failed undos to remember; forgetting them (a resync repairs VPP)")
		clear(d.leftovers)
	}
	if d.leftovers == nil {
		d.leftovers = map[leftover]mapping{}
	}
	d.leftovers[k] = *s.do.m
}

// takeLeftover reports whether the add of step s, refused by VPP as existing, put in
// what a failed undo left there (the same mapping, tagged the same, or the same local
// of the same LB mapping), and forgets it.
func (d *dnatDescriptor) takeLeftover(tag string, s *step) bool {
	k, ok := s.leftoverOf(tag)
	if !ok {
		return false
	}
	m, ok := d.leftovers[k]
	if !ok || (!k.isLocal && !m.equal(s.do.m)) {
		return false
	}
	delete(d.leftovers, k)
	return true
}

// undoAttempts bounds the sends of one undo request failing with VPP's BUSY.
const undoAttempts = 5

// retrieve rebuilds DNat44 values from the mapping dumps, grouped by tag.
func (d *dnatDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	nbByTag := make(map[string]*nat.DNat44, len(correlate))
	for _, kv := range correlate {
		v, ok := kv.Value.(*nat.DNat44)
		if !ok {
			continue
		}
		t := Tag(v.GetLabel())
		if prev, ok := nbByTag[t]; !ok || prev.GetLabel() != t {
			nbByTag[t] = v
		}
	}
	groups, order, err := d.dumpMappings()
	if err != nil {
		return nil, fmt.Errorf("retrieve DNAT44: %w", err)
	}
	out := make([]kvapi.KVWithMetadata, 0, len(order)+len(correlate))
	for _, tag := range order {
		v := rebuild(tag, groups[tag], nbByTag[tag])
		out = append(out, kvapi.KVWithMetadata{Key: nat.DNAT44Key(v.GetLabel()), Value: v, Origin: kvapi.FromNB})
	}
	for _, kv := range correlate {
		v, ok := kv.Value.(*nat.DNat44)
		if !ok {
			continue
		}
		if len(v.GetStMappings()) == 0 && len(v.GetIdMappings()) == 0 && groups[Tag(v.GetLabel())] == nil {
			// an empty set of mappings exists as soon as it is asked for
			out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: v, Origin: kvapi.FromNB})
		}
	}
	return out, nil
}

// dumpMappings reads the static, LB and identity mappings with a tag,
// grouped by tag (order: tags in the order first seen).
func (d *dnatDescriptor) dumpMappings() (map[string][]mapping, []string, error) {
	groups := map[string][]mapping{}
	var order []string
	add := func(tag string, m mapping) {
		if tag == "" {
			return
		}
		if _, ok := groups[tag]; !ok {
			order = append(order, tag)
		}
		groups[tag] = append(groups[tag], m)
	}
	names := d.IfaceNames()
	statics, err := govppmux.Dump[nat44_ed.Nat44StaticMappingDetails](d.Ch, &nat44_ed.Nat44StaticMappingDump{})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range statics {
		if m, ok := staticFromDump(s, names); ok {
			add(s.Tag, m)
		}
	}
	lbs, err := govppmux.Dump[nat44_ed.Nat44LbStaticMappingDetails](d.Ch, &nat44_ed.Nat44LbStaticMappingDump{})
	if err != nil {
		return nil, nil, err
	}
	for _, lb := range lbs {
		add(lb.Tag, lbFromDump(lb))
	}
	ids, err := govppmux.Dump[nat44_ed.Nat44IdentityMappingDetails](d.Ch, &nat44_ed.Nat44IdentityMappingDump{})
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if m, ok := identityFromDump(id, names); ok {
			add(id.Tag, m)
		}
	}
	return groups, order, nil
}

// rebuild makes the DNat44 of one tag. Mappings NB has (paired by
// matchKey) are reported as NB wrote them; if all of them match, the NB
// value itself is returned.
func rebuild(tag string, ms []mapping, want *nat.DNat44) *nat.DNat44 {
	nbSt := map[string][]*nat.DNat44_StaticMapping{}
	nbID := map[string][]*nat.DNat44_IdentityMapping{}
	label := tag
	if want != nil {
		label = want.GetLabel()
		for _, sm := range want.GetStMappings() {
			var p problems
			if m, ok := parseStatic(&p, fieldPath{}, sm, nil); ok {
				nbSt[m.matchKey()] = append(nbSt[m.matchKey()], sm)
			}
		}
		for _, im := range want.GetIdMappings() {
			var p problems
			if m, ok := parseIdentity(&p, fieldPath{}, im); ok {
				nbID[m.matchKey()] = append(nbID[m.matchKey()], im)
			}
		}
	}
	v := &nat.DNat44{Label: label}
	matched := 0
	for i := range ms {
		m := &ms[i]
		k := m.matchKey()
		if l := nbSt[k]; len(l) > 0 && m.kind != kindIdentity {
			v.StMappings, nbSt[k] = append(v.StMappings, l[0]), l[1:]
			matched++
			continue
		}
		if l := nbID[k]; len(l) > 0 && m.kind == kindIdentity {
			v.IdMappings, nbID[k] = append(v.IdMappings, l[0]), l[1:]
			matched++
			continue
		}
		st, id, ok := m.toModel()
		switch {
		case !ok:
		case st != nil:
			v.StMappings = append(v.StMappings, st)
		default:
			v.IdMappings = append(v.IdMappings, id)
		}
	}
	if want != nil && matched == len(ms) && matched == len(want.GetStMappings())+len(want.GetIdMappings()) {
		return want
	}
	return v
}

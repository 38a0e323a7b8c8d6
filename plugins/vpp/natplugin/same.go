package natplugin

import (
	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// Comparing the model field by field is much cheaper than parsing it (no address
// parsing, no allocation), and two entries that are the same field by field become the
// same VPP mapping. A node joining a cluster changes 2 of the ~100 mappings of every
// NodePort DNat44: comparing finds the 98 kept ones, and only the changed ones are
// parsed and planned.

// sameStaticButLocals tells whether two static mappings of the model are equal field by
// field, locals aside; unknown fields are ignored, as parsing ignores them.
func sameStaticButLocals(a, b *nat.DNat44_StaticMapping) bool {
	return a.GetExternalIp() == b.GetExternalIp() && a.GetExternalPort() == b.GetExternalPort() &&
		a.GetProtocol() == b.GetProtocol() && a.GetExternalInterface() == b.GetExternalInterface() &&
		a.GetTwiceNat() == b.GetTwiceNat() && a.GetTwiceNatPoolIp() == b.GetTwiceNatPoolIp() &&
		a.GetSessionAffinity() == b.GetSessionAffinity()
}

// staticComparer compares static mappings of the model field by field (locals in
// order), remembering the last two lists of locals it compared:
// the mappings of a service's port share one list of locals in each value, which is
// then compared once, not once per node IP.
type staticComparer struct {
	a, b []*nat.DNat44_StaticMapping_LocalIP
	eq   bool
}

func (c *staticComparer) same(x, y *nat.DNat44_StaticMapping) bool {
	if x == y {
		return true
	}
	if !sameStaticButLocals(x, y) {
		return false
	}
	a, b := x.GetLocalIps(), y.GetLocalIps()
	if c.a == nil || !sameSlice(a, c.a) || !sameSlice(b, c.b) {
		c.a, c.b, c.eq = a, b, sameLocals(a, b)
	}
	return c.eq
}

// sameSlice tells whether a and b are the same slice (same backing array and length).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sameLocals tells whether two lists of locals are equal field by field, in order. Lists
// sharing their backing array (a renderer giving every mapping of a port the same
// locals) compare in O(1).
func sameLocals(a, b []*nat.DNat44_StaticMapping_LocalIP) bool {
	if len(a) != len(b) {
		return false
	}
	if sameSlice(a, b) {
		return true
	}
	for i, x := range a {
		y := b[i]
		if x != y && (x.GetLocalIp() != y.GetLocalIp() || x.GetLocalPort() != y.GetLocalPort() ||
			x.GetVrfId() != y.GetVrfId() || x.GetProbability() != y.GetProbability()) {
			return false
		}
	}
	return true
}

// sameIdentity tells whether two identity mappings of the model are equal field by field.
func sameIdentity(a, b *nat.DNat44_IdentityMapping) bool {
	if a == b {
		return true
	}
	return a.GetIpAddress() == b.GetIpAddress() && a.GetPort() == b.GetPort() && a.GetProtocol() == b.GetProtocol() &&
		a.GetInterface() == b.GetInterface() && a.GetVrfId() == b.GetVrfId()
}

// sameDNat44 tells whether a and b list equal mappings field by field in the same
// order: then they are equivalent without parsing either.
func sameDNat44(a, b *nat.DNat44) bool {
	as, bs := a.GetStMappings(), b.GetStMappings()
	ai, bi := a.GetIdMappings(), b.GetIdMappings()
	if a.GetLabel() != b.GetLabel() || len(as) != len(bs) || len(ai) != len(bi) {
		return false
	}
	var c staticComparer
	for i := range as {
		if !c.same(as[i], bs[i]) {
			return false
		}
	}
	for i := range ai {
		if !sameIdentity(ai[i], bi[i]) {
			return false
		}
	}
	return true
}

// staticKey is the raw form of what identifies a static mapping, to pair the entries of
// two values without parsing them.
type staticKey struct {
	ip, iface string
	port      uint32
	proto     nat.DNat44_Protocol
}

func keyOfStatic(m *nat.DNat44_StaticMapping) staticKey {
	return staticKey{ip: m.GetExternalIp(), iface: m.GetExternalInterface(), port: m.GetExternalPort(), proto: m.GetProtocol()}
}

// identityKey is staticKey for identity mappings.
type identityKey struct {
	staticKey
	vrf uint32
}

func keyOfIdentity(m *nat.DNat44_IdentityMapping) identityKey {
	return identityKey{staticKey: staticKey{ip: m.GetIpAddress(), iface: m.GetInterface(), port: m.GetPort(), proto: m.GetProtocol()},
		vrf: m.GetVrfId()}
}

// dropCommon removes from a and b the entries they have in common (equal field by
// field), returning what remains of each. Entries are paired by position first (the
// common prefix and suffix: the usual case of entries added or removed at one place),
// the rest by key. The entries of a valid value have distinct keys.
//
// Cost: O(len(a) + len(b)) comparisons; no allocation when only the prefix and suffix
// differ, or when the entries in between kept their places and all differ.
func dropCommon[T any, K comparable](a, b []T, same func(x, y T) bool, key func(T) K) ([]T, []T) {
	n := 0
	for n < len(a) && n < len(b) && same(a[n], b[n]) {
		n++
	}
	a, b = a[n:], b[n:]
	m := 0
	for m < len(a) && m < len(b) && same(a[len(a)-1-m], b[len(b)-1-m]) {
		m++
	}
	a, b = a[:len(a)-m], b[:len(b)-m]
	if len(a) == 0 || len(b) == 0 {
		return a, b
	}
	if aligned(a, b, key) {
		// the entries kept their places (entries changed in place): paired by position;
		// when none of them is equal (every mapping of a service changes with its
		// backends), nothing is allocated
		return dropEqualAt(a, b, same)
	}
	index := make(map[K]int, len(a))
	for i, x := range a {
		index[key(x)] = i
	}
	paired := make([]bool, len(a))
	var restB []T
	for _, y := range b {
		if i, ok := index[key(y)]; ok && !paired[i] && same(a[i], y) {
			paired[i] = true
			continue
		}
		restB = append(restB, y)
	}
	var restA []T
	for i, x := range a {
		if !paired[i] {
			restA = append(restA, x)
		}
	}
	return restA, restB
}

// aligned tells whether a and b list entries of the same keys at the same positions.
func aligned[T any, K comparable](a, b []T, key func(T) K) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if key(a[i]) != key(b[i]) {
			return false
		}
	}
	return true
}

// dropEqualAt removes from a and b (of one length) the pairs of entries at one position
// that are equal, returning what remains of each; a and b themselves when no pair is.
func dropEqualAt[T any](a, b []T, same func(x, y T) bool) ([]T, []T) {
	var restA, restB []T
	for i := range a {
		if same(a[i], b[i]) {
			if restA == nil {
				restA, restB = append(make([]T, 0, len(a)), a[:i]...), append(make([]T, 0, len(b)), b[:i]...)
			}
			continue
		}
		if restA != nil {
			restA, restB = append(restA, a[i]), append(restB, b[i])
		}
	}
	if restA == nil {
		return a, b
	}
	return restA, restB
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

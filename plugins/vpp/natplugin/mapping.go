package natplugin

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.fd.io/govpp/binapi/nat_types"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// insideVRF is the inside VRF the plugin enables NAT44-ED with; VPP puts
// static and identity mappings whose VRF is ~0 there.
const insideVRF = 0

// MaxTagLen is the longest tag VPP keeps (string[64] with its terminating
// NUL).
const MaxTagLen = 63

// tagHashLen is how many hex digits of the label's SHA-256 end the tag of a
// label longer than MaxTagLen.
const tagHashLen = 16

// tagSeparator joins a long label's start to its hash in its tag. No Kubernetes
// name (nor so any label the agent derives from one) contains it, so a tag with
// a hash is never the whole label of another value.
const tagSeparator = "~"

// Tag returns the VPP tag of the mappings of a DNat44 label: the label itself
// when it fits in MaxTagLen bytes, else its start (cut at a UTF-8 boundary), "~"
// and the first 16 hex digits of its SHA-256. Labels that share their first 63
// bytes (two Services of a long namespace/name) thus get distinct tags, where a
// plain cut gave them one: VPP then held the mappings of both under one tag and
// a resync took them for one value. A tag of the plain cut that an earlier
// version left in VPP is retrieved as a value of its own, which the resync
// removes as obsolete.
func Tag(label string) string {
	if len(label) <= MaxTagLen {
		return label
	}
	sum := sha256.Sum256([]byte(label))
	cut := MaxTagLen - len(tagSeparator) - tagHashLen
	for cut > 0 && !utf8.RuneStart(label[cut]) {
		cut--
	}
	return label[:cut] + tagSeparator + hex.EncodeToString(sum[:])[:tagHashLen]
}

// mappingKind is the kind of VPP mapping a DNat44 entry becomes.
type mappingKind uint8

const (
	kindStatic   mappingKind = iota // one local: nat44_add_del_static_mapping_v2
	kindLB                          // several locals: nat44_add_del_lb_static_mapping
	kindIdentity                    // nat44_add_del_identity_mapping
)

// local is one local endpoint of a static or LB mapping.
type local struct {
	ip   netip.Addr
	port uint16
	vrf  uint32
	prob uint8 // LB mappings only
}

// mapping is one VPP mapping of a DNat44, in the form VPP keeps it: fields
// VPP ignores are zero (probability and affinity of single-local mappings,
// protocol and ports of address-only ones), locals are sorted.
type mapping struct {
	kind     mappingKind
	proto    uint8      // IP protocol number, 0 for address-only mappings
	extIP    netip.Addr // invalid when extIf is set
	extIf    string
	extPort  uint16
	twice    nat_types.NatConfigFlags // 0, NAT_IS_TWICE_NAT or NAT_IS_SELF_TWICE_NAT
	pool     netip.Addr               // static only: twice-NAT pool address (invalid: any)
	affinity uint32                   // LB only
	vrf      uint32                   // identity only
	locals   []local                  // static: one; LB: two or more, sorted; identity: none
}

// addrOnly tells whether the mapping translates the address only.
func (m *mapping) addrOnly() bool { return m.kind != kindLB && m.extPort == 0 }

// ext names the external side: address or interface, port, protocol.
func (m *mapping) ext() string {
	e := m.extIP.String()
	if m.extIf != "" {
		e = "if:" + m.extIf
	}
	return e + ":" + strconv.Itoa(int(m.extPort)) + "/" + protoName(m.proto)
}

// id is what identifies the mapping in VPP: two mappings with the same id
// cannot coexist. Static and LB mappings share the external key space.
func (m *mapping) id() string {
	if m.kind == kindIdentity {
		return "id " + m.ext() + " vrf " + strconv.FormatUint(uint64(m.vrf), 10)
	}
	return "dnat " + m.ext()
}

// mappingID is id as a comparable value: map keys without formatting.
type mappingID struct {
	identity bool
	extIP    netip.Addr
	extIf    string
	extPort  uint16
	proto    uint8
	vrf      uint32 // identity mappings only
}

// ident returns the mappingID of m (what id names).
func (m *mapping) ident() mappingID {
	id := mappingID{identity: m.kind == kindIdentity, extIP: m.extIP, extIf: m.extIf, extPort: m.extPort, proto: m.proto}
	if id.identity {
		id.vrf = m.vrf
	}
	return id
}

// equal tells whether m and o are the same mapping in every field.
func (m *mapping) equal(o *mapping) bool {
	return m.kind == o.kind && m.proto == o.proto && m.extIP == o.extIP && m.extIf == o.extIf &&
		m.extPort == o.extPort && m.twice == o.twice && m.pool == o.pool && m.affinity == o.affinity &&
		m.vrf == o.vrf && slices.Equal(m.locals, o.locals)
}

// matchKey is the mapping in canonical form without what VPP does not dump (the
// twice-NAT pool address of static mappings); Retrieve pairs dumped and NB
// mappings by it.
func (m *mapping) matchKey() string {
	b := make([]byte, 0, 64+len(m.locals)*32)
	b = append(b, m.id()...)
	b = append(b, " kind "...)
	b = strconv.AppendUint(b, uint64(m.kind), 10)
	b = append(b, " twice "...)
	b = strconv.AppendUint(b, uint64(m.twice), 10)
	b = append(b, " aff "...)
	b = strconv.AppendUint(b, uint64(m.affinity), 10)
	for _, l := range m.locals {
		b = append(b, ' ')
		b = l.ip.AppendTo(b)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(l.port), 10)
		b = append(b, '@')
		b = strconv.AppendUint(b, uint64(l.vrf), 10)
		b = append(b, '*')
		b = strconv.AppendUint(b, uint64(l.prob), 10)
	}
	return string(b)
}

// sameButLocals tells whether two LB mappings differ at most in their locals.
func (m *mapping) sameButLocals(o *mapping) bool {
	return m.kind == kindLB && o.kind == kindLB && m.ident() == o.ident() && m.twice == o.twice && m.affinity == o.affinity
}

// protoName names an IP protocol number in keys and messages.
func protoName(p uint8) string {
	switch p {
	case 6:
		return "TCP"
	case 17:
		return "UDP"
	case 1:
		return "ICMP"
	case 0:
		return "any"
	}
	return strconv.Itoa(int(p))
}

// protoNumber maps the model's protocol to VPP's; ok is false for unknown ones.
func protoNumber(p nat.DNat44_Protocol) (uint8, bool) {
	switch p {
	case nat.DNat44_TCP:
		return 6, true
	case nat.DNat44_UDP:
		return 17, true
	case nat.DNat44_ICMP:
		return 1, true
	}
	return 0, false
}

// protoModel maps VPP's protocol number to the model's; 0 (address-only
// mappings) becomes the model's default. ok is false for other protocols.
func protoModel(p uint8) (nat.DNat44_Protocol, bool) {
	switch p {
	case 6, 0:
		return nat.DNat44_TCP, true
	case 17:
		return nat.DNat44_UDP, true
	case 1:
		return nat.DNat44_ICMP, true
	}
	return 0, false
}

// twiceFlags maps the model's twice-NAT mode to VPP's flag.
func twiceFlags(t nat.DNat44_StaticMapping_TwiceNatMode) nat_types.NatConfigFlags {
	switch t {
	case nat.DNat44_StaticMapping_ENABLED:
		return nat_types.NAT_IS_TWICE_NAT
	case nat.DNat44_StaticMapping_SELF:
		return nat_types.NAT_IS_SELF_TWICE_NAT
	}
	return 0
}

// twiceModel maps VPP's flags to the model's twice-NAT mode.
func twiceModel(f nat_types.NatConfigFlags) nat.DNat44_StaticMapping_TwiceNatMode {
	switch {
	case f&nat_types.NAT_IS_TWICE_NAT != 0:
		return nat.DNat44_StaticMapping_ENABLED
	case f&nat_types.NAT_IS_SELF_TWICE_NAT != 0:
		return nat.DNat44_StaticMapping_SELF
	}
	return nat.DNat44_StaticMapping_NONE
}

// sortLocals orders locals by address, port and VRF.
func sortLocals(ls []local) {
	slices.SortFunc(ls, func(a, b local) int {
		if c := a.ip.Compare(b.ip); c != 0 {
			return c
		}
		if a.port != b.port {
			return int(a.port) - int(b.port)
		}
		return cmp.Compare(a.vrf, b.vrf)
	})
}

// fieldPath names a repeated field of the model and the index of an entry in it; the
// path string is built only when a problem is reported, so valid values cost no
// formatting.
type fieldPath struct {
	name  string
	index int
}

// field returns the path of the entry's field suffix, e.g. "st_mappings[2].protocol".
func (f fieldPath) field(suffix string) string {
	return f.name + "[" + strconv.Itoa(f.index) + "]" + suffix
}

// problems collects validation problems with the fields they concern.
type problems struct {
	msgs, fields []string
}

func (p *problems) add(field, format string, args ...any) {
	p.fields = append(p.fields, field)
	p.msgs = append(p.msgs, fmt.Sprintf(format, args...))
}

func (p *problems) err() error {
	if len(p.msgs) == 0 {
		return nil
	}
	return kvapi.NewInvalidValueError(errors.New(strings.Join(p.msgs, "; ")), p.fields...)
}

// parsePort checks a port number; field names it (called only on error,
// so that valid values cost no formatting).
func parsePort(p *problems, field func() string, v uint32) uint16 {
	if v > 65535 {
		p.add(field(), "port %d is above 65535", v)
	}
	return uint16(v)
}

// parseEntries turns entries of a DNat44 into VPP mappings, checking them (all of a
// value, or the ones of a value that changed; field paths count from the first entry
// given); the error is an *kvapi.InvalidValueError naming every wrong field. Mappings whose
// locals equal those of the mapping parsed before them (every node port of a service
// has the same backends) share that mapping's parsed locals, checked once. seen, if not
// nil, is an empty map to find duplicates with (left empty again), so that checking a
// value allocates no map.
func parseEntries(sts []*nat.DNat44_StaticMapping, ids []*nat.DNat44_IdentityMapping, seen map[mappingID]bool) ([]mapping, error) {
	var p problems
	out := parseInto(&p, sts, ids)
	for _, i := range duplicates(out, seen) {
		p.add("st_mappings", "mapping %s is listed twice", out[i].id())
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// duplicates returns, in ascending order, the indexes of the mappings whose ident an
// earlier mapping of ms has. Mappings of an external IPv4 address (all but those naming
// an interface) are compared as packed integers, sorted: no hashing of strings and
// pointers, which cost more than parsing a mapping. The others go through seen (see
// parseEntries; nil: a map of its own).
func duplicates(ms []mapping, seen map[mappingID]bool) []int {
	var buf [128]packedIdent
	packed := buf[:0]
	var dups []int
	for i := range ms {
		if k, ok := packIdent(&ms[i], i); ok {
			packed = append(packed, k)
			continue
		}
		if seen == nil {
			seen = make(map[mappingID]bool)
		}
		id := ms[i].ident()
		if seen[id] {
			dups = append(dups, i)
		}
		seen[id] = true
	}
	clear(seen)
	slices.SortFunc(packed, func(a, b packedIdent) int {
		if c := cmp.Compare(a.addrPortProto, b.addrPortProto); c != 0 {
			return c
		}
		if c := cmp.Compare(a.vrf, b.vrf); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
	for j := 1; j < len(packed); j++ {
		if packed[j].addrPortProto == packed[j-1].addrPortProto && packed[j].vrf == packed[j-1].vrf {
			dups = append(dups, packed[j].index)
		}
	}
	slices.Sort(dups)
	return dups
}

// packedIdent is the mappingID of a mapping of an external IPv4 address in integers,
// with the mapping's index.
type packedIdent struct {
	addrPortProto uint64 // address << 32 | port << 16 | protocol << 8 | identity
	vrf           uint32 // identity mappings only
	index         int
}

// packIdent packs the ident of m (the index-th mapping); ok is false for a mapping
// naming an interface.
func packIdent(m *mapping, index int) (packedIdent, bool) {
	if m.extIf != "" || !m.extIP.Is4() {
		return packedIdent{}, false
	}
	ip := m.extIP.As4()
	k := packedIdent{addrPortProto: uint64(binary.BigEndian.Uint32(ip[:]))<<32 | uint64(m.extPort)<<16 | uint64(m.proto)<<8,
		index: index}
	if m.kind == kindIdentity {
		k.addrPortProto |= 1
		k.vrf = m.vrf
	}
	return k, true
}

// parseMappings is parseEntries without the check for duplicates: for the entries of
// values Validate accepted (which has checked them).
func parseMappings(sts []*nat.DNat44_StaticMapping, ids []*nat.DNat44_IdentityMapping) ([]mapping, error) {
	var p problems
	out := parseInto(&p, sts, ids)
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseInto parses the entries into mappings, adding what is wrong to p.
func parseInto(p *problems, sts []*nat.DNat44_StaticMapping, ids []*nat.DNat44_IdentityMapping) []mapping {
	var memo localsMemo
	out := make([]mapping, 0, len(sts)+len(ids))
	for i, sm := range sts {
		if m, ok := parseStatic(p, fieldPath{"st_mappings", i}, sm, &memo); ok {
			out = append(out, m)
		}
	}
	for i, im := range ids {
		if m, ok := parseIdentity(p, fieldPath{"id_mappings", i}, im); ok {
			out = append(out, m)
		}
	}
	return out
}

// localsMemo is the last list of locals parseStatic parsed without problems, to share
// its result with the next mappings listing the same locals.
type localsMemo struct {
	raw      []*nat.DNat44_StaticMapping_LocalIP
	addrOnly bool // the checks of local ports depend on it
	locals   []local
}

// parseStatic parses and checks one static mapping. memo (nil: none) carries the
// parsed locals of the mapping before, which a mapping with the same locals shares:
// parsed locals are never modified.
func parseStatic(p *problems, f fieldPath, sm *nat.DNat44_StaticMapping, memo *localsMemo) (mapping, bool) {
	n := len(p.msgs)
	m := mapping{kind: kindStatic, twice: twiceFlags(sm.GetTwiceNat()), extIf: sm.GetExternalInterface()}
	if len(sm.GetLocalIps()) > 1 {
		m.kind = kindLB
	}
	proto, ok := protoNumber(sm.GetProtocol())
	if !ok {
		p.add(f.field(".protocol"), "unknown protocol %d", sm.GetProtocol())
	}
	m.proto = proto
	switch {
	case m.extIf != "" && sm.GetExternalIp() != "":
		p.add(f.field(".external_ip"), "external_ip and external_interface exclude each other")
	case m.extIf == "":
		if m.extIP, ok = parseIPv4(sm.GetExternalIp()); !ok {
			p.add(f.field(".external_ip"), "external_ip %q is not an IPv4 address", sm.GetExternalIp())
		}
	}
	m.extPort = parsePort(p, func() string { return f.field(".external_port") }, sm.GetExternalPort())
	if len(sm.GetLocalIps()) == 0 {
		p.add(f.field(".local_ips"), "a static mapping needs at least one local IP")
	}
	if memo != nil && memo.locals != nil && memo.addrOnly == (m.extPort == 0) && sameLocals(memo.raw, sm.GetLocalIps()) {
		m.locals = memo.locals
	} else {
		before := len(p.msgs)
		m.locals = parseLocals(p, f, sm, &m)
		if memo != nil && len(p.msgs) == before {
			*memo = localsMemo{raw: sm.GetLocalIps(), addrOnly: m.extPort == 0, locals: m.locals}
		}
	}
	if s := sm.GetTwiceNatPoolIp(); s != "" {
		if m.pool, ok = parseIPv4(s); !ok {
			p.add(f.field(".twice_nat_pool_ip"), "twice_nat_pool_ip %q is not an IPv4 address", s)
		}
	}
	if m.extPort == 0 && m.twice != 0 {
		p.add(f.field(".twice_nat"), "VPP does not twice-NAT address-only mappings")
	}
	if m.kind == kindLB {
		if m.extIf != "" {
			p.add(f.field(".external_interface"), "a mapping with several locals needs an external_ip")
		}
		if m.pool.IsValid() {
			p.add(f.field(".twice_nat_pool_ip"), "a mapping with several locals cannot choose its twice-NAT pool address")
		}
		if m.extPort == 0 {
			p.add(f.field(".external_port"), "a mapping with several locals needs ports")
		}
		m.affinity = sm.GetSessionAffinity()
	}
	if m.addrOnly() {
		m.proto = 0
	}
	return m, len(p.msgs) == n
}

// parseLocals parses and checks the locals of static mapping sm (m: what is parsed of
// it so far: kind and external port), sorted for an LB mapping.
func parseLocals(p *problems, f fieldPath, sm *nat.DNat44_StaticMapping, m *mapping) []local {
	locals := make([]local, 0, len(sm.GetLocalIps()))
	for j, l := range sm.GetLocalIps() {
		lf := func(name string) string { return f.field(".local_ips[" + strconv.Itoa(j) + "]." + name) }
		ip, ok := parseIPv4(l.GetLocalIp())
		if !ok {
			p.add(lf("local_ip"), "local_ip %q is not an IPv4 address", l.GetLocalIp())
		}
		lo := local{ip: ip, port: parsePort(p, func() string { return lf("local_port") }, l.GetLocalPort()), vrf: l.GetVrfId()}
		if lo.vrf == noIndex && len(sm.GetLocalIps()) == 1 {
			lo.vrf = insideVRF // what VPP makes of ~0
		}
		if m.extPort == 0 && lo.port != 0 {
			p.add(lf("local_port"), "an address-only mapping (external_port 0) takes no local port")
		}
		if m.extPort != 0 && lo.port == 0 {
			p.add(lf("local_port"), "a port mapping needs a local port")
		}
		if m.kind == kindLB {
			if l.GetProbability() > 255 {
				p.add(lf("probability"), "probability %d is above 255", l.GetProbability())
			}
			lo.prob = uint8(l.GetProbability())
		}
		locals = append(locals, lo)
	}
	if m.kind == kindLB {
		sortLocals(locals)
		for j := 1; j < len(locals); j++ {
			a, b := locals[j-1], locals[j]
			if a.ip == b.ip && a.port == b.port && a.vrf == b.vrf {
				p.add(f.field(".local_ips"), "local %s:%d in VRF %d is listed twice", a.ip, a.port, a.vrf)
			}
		}
	}
	return locals
}

func parseIdentity(p *problems, f fieldPath, im *nat.DNat44_IdentityMapping) (mapping, bool) {
	n := len(p.msgs)
	m := mapping{kind: kindIdentity, extIf: im.GetInterface(), vrf: im.GetVrfId()}
	if m.vrf == noIndex {
		m.vrf = insideVRF // what VPP makes of ~0
	}
	proto, ok := protoNumber(im.GetProtocol())
	if !ok {
		p.add(f.field(".protocol"), "unknown protocol %d", im.GetProtocol())
	}
	m.proto = proto
	switch {
	case m.extIf != "" && im.GetIpAddress() != "":
		p.add(f.field(".ip_address"), "ip_address and interface exclude each other")
	case m.extIf == "":
		if m.extIP, ok = parseIPv4(im.GetIpAddress()); !ok {
			p.add(f.field(".ip_address"), "ip_address %q is not an IPv4 address", im.GetIpAddress())
		}
	}
	m.extPort = parsePort(p, func() string { return f.field(".port") }, im.GetPort())
	if m.addrOnly() {
		m.proto = 0
	}
	return m, len(p.msgs) == n
}

package vppsim

import (
	"net/netip"
	"sort"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// VPP's ACL plugin (plugins/acl of VPP 25.10): ACLs in a pool indexed by
// acl_index (freed indexes reused, last freed first), and per interface the
// ordered input and output ACL lists. An interface's lists are bound to that
// interface object: when the interface is deleted its lists go with it (VPP
// clears them in its interface add/del callback), even if the sw_if_index is
// reused later.

type aclRule struct {
	action         acl_types.ACLAction
	src, dst       netip.Prefix
	proto          uint8
	sportLo, sport uint16 // source port (ICMP type) range
	dportLo, dport uint16 // destination port (ICMP code) range
	flagsMask      uint8
	flagsValue     uint8
}

type aclEntry struct {
	index uint32
	tag   string
	rules []aclRule
}

type aclBinding struct {
	iface   *iface // the interface object the lists belong to
	input   []uint32
	output  []uint32
	touched uint64 // st.seq when the lists last changed
}

// aclSession is a permit+reflect session: the key is the interface, the
// direction and the 5-tuple of the packets it lets pass.
type aclSessionKey struct {
	sw       uint32
	input    bool
	src, dst netip.Addr
	proto    uint8
	sp, dp   uint16
}

type aclSession struct {
	last        time.Time
	established bool
}

// aclState is the ACL plugin's state. Its zero value is ready (maps are
// created on first use), so newState needs no change.
type aclState struct {
	acls     map[uint32]*aclEntry
	free     []uint32
	next     uint32
	bindings map[uint32]*aclBinding
	sessions map[aclSessionKey]*aclSession
	// now is the clock of session timeouts (nil: time.Now).
	now func() time.Time
}

// ACL session timeouts of VPP 25.10 (fa_node.h).
const (
	aclTCPIdle      = 24 * time.Hour
	aclTCPTransient = 120 * time.Second
	aclUDPIdle      = 600 * time.Second
)

func (a *aclState) init() {
	if a.acls == nil {
		a.acls = map[uint32]*aclEntry{}
		a.bindings = map[uint32]*aclBinding{}
		a.sessions = map[aclSessionKey]*aclSession{}
	}
}

func (a *aclState) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// binding returns the live lists of an interface (nil if none or if they
// belonged to a deleted interface with the same index).
func (st *state) aclBinding(sw uint32) *aclBinding {
	st.acl.init()
	b := st.acl.bindings[sw]
	if b == nil {
		return nil
	}
	if st.ifaces[sw] != b.iface {
		st.aclClearSessions(sw)
		delete(st.acl.bindings, sw)
		return nil
	}
	return b
}

// aclInUse tells in which direction an ACL is applied (output first, as VPP
// checks).
func (st *state) aclInUse(idx uint32) int32 {
	inUse := int32(0)
	for sw := range st.acl.bindings {
		b := st.aclBinding(sw)
		if b == nil {
			continue
		}
		for _, x := range b.output {
			if x == idx {
				return int32(api.ACL_IN_USE_OUTBOUND)
			}
		}
		for _, x := range b.input {
			if x == idx {
				inUse = int32(api.ACL_IN_USE_INBOUND)
			}
		}
	}
	return inUse
}

func (st *state) aclClearSessions(sw uint32) {
	for k := range st.acl.sessions {
		if k.sw == sw {
			delete(st.acl.sessions, k)
		}
	}
}

func registerACL(r *registry) {
	on(r, hACLAddReplace)
	on(r, hACLDel)
	on(r, hACLDump)
	on(r, hACLInterfaceSetACLList)
	on(r, hACLInterfaceAddDel)
	on(r, hACLInterfaceListDump)
	on(r, hACLStatsIntfCountersEnable)
	onStateless(r, hACLPluginGetVersion)
}

// hACLStatsIntfCountersEnable switches the per-rule match counters
// (/acl/<i>/matches) on or off; it always succeeds. VPP 25.10 answers it with
// acl_del_reply, not acl_stats_intf_counters_enable_reply (acl.c
// vl_api_acl_stats_intf_counters_enable_t_handler: REPLY_MACRO
// (VL_API_ACL_DEL_REPLY)); the two replies carry only a retval, so a client
// that expects the right reply sees an unexpected message ID while the
// counters are on. The simulator sends what VPP sends.
func hACLStatsIntfCountersEnable(cl *call, m *acl.ACLStatsIntfCountersEnable) {
	if g := cl.st.seg(); g != nil {
		g.EnableACLCounters(m.Enable)
	}
	cl.send(&acl.ACLDelReply{Retval: 0})
}

// hACLPluginGetVersion reports the ACL plugin's API version of VPP 25.10.
func hACLPluginGetVersion(cl *call, _ *acl.ACLPluginGetVersion) {
	cl.send(&acl.ACLPluginGetVersionReply{Major: 1, Minor: 4})
}

// aclRulesFromAPI validates and converts rules as acl_add_list does.
func aclRulesFromAPI(in []acl_types.ACLRule) ([]aclRule, int32) {
	out := make([]aclRule, 0, len(in))
	for _, r := range in {
		src, ok := prefixFromAPI(r.SrcPrefix)
		if !ok || src.Masked() != src {
			return nil, int32(api.INVALID_SRC_ADDRESS)
		}
		dst, ok := prefixFromAPI(r.DstPrefix)
		if !ok || dst.Masked() != dst {
			return nil, int32(api.INVALID_DST_ADDRESS)
		}
		if src.Addr().Is4() != dst.Addr().Is4() {
			return nil, int32(api.INVALID_SRC_ADDRESS)
		}
		if r.SrcportOrIcmptypeFirst > r.SrcportOrIcmptypeLast || r.DstportOrIcmpcodeFirst > r.DstportOrIcmpcodeLast {
			return nil, int32(api.INVALID_VALUE_2)
		}
		if r.IsPermit > acl_types.ACL_ACTION_API_PERMIT_REFLECT {
			return nil, int32(api.INVALID_VALUE)
		}
		out = append(out, aclRule{action: r.IsPermit, src: src, dst: dst, proto: uint8(r.Proto),
			sportLo: r.SrcportOrIcmptypeFirst, sport: r.SrcportOrIcmptypeLast,
			dportLo: r.DstportOrIcmpcodeFirst, dport: r.DstportOrIcmpcodeLast,
			flagsMask: r.TCPFlagsMask, flagsValue: r.TCPFlagsValue})
	}
	return out, 0
}

func aclRulesToAPI(in []aclRule) []acl_types.ACLRule {
	out := make([]acl_types.ACLRule, len(in))
	for i, r := range in {
		out[i] = acl_types.ACLRule{IsPermit: r.action, SrcPrefix: prefixToAPI(r.src), DstPrefix: prefixToAPI(r.dst),
			Proto: ip_types.IPProto(r.proto), SrcportOrIcmptypeFirst: r.sportLo, SrcportOrIcmptypeLast: r.sport,
			DstportOrIcmpcodeFirst: r.dportLo, DstportOrIcmpcodeLast: r.dport,
			TCPFlagsMask: r.flagsMask, TCPFlagsValue: r.flagsValue}
	}
	return out
}

// hACLAddReplace creates an ACL (acl_index ~0) or replaces the rules of an
// existing one in place (its bindings and index stay).
func hACLAddReplace(cl *call, m *acl.ACLAddReplace) {
	st := cl.st
	st.acl.init()
	rules, rv := aclRulesFromAPI(m.R)
	if rv == 0 && m.ACLIndex != noIndex && st.acl.acls[m.ACLIndex] == nil {
		rv = retvalNoSuchEntry
	}
	if rv != 0 {
		cl.send(&acl.ACLAddReplaceReply{ACLIndex: m.ACLIndex, Retval: rv})
		return
	}
	idx := m.ACLIndex
	if idx == noIndex {
		if n := len(st.acl.free); n > 0 {
			idx = st.acl.free[n-1]
			st.acl.free = st.acl.free[:n-1]
		} else {
			idx = st.acl.next
			st.acl.next++
		}
		st.acl.acls[idx] = &aclEntry{index: idx}
	}
	e := st.acl.acls[idx]
	e.tag, e.rules = m.Tag, rules
	st.statsACL(idx, len(rules))
	cl.send(&acl.ACLAddReplaceReply{ACLIndex: idx, Retval: 0})
}

// hACLDel deletes an ACL that no interface uses.
func hACLDel(cl *call, m *acl.ACLDel) {
	st := cl.st
	st.acl.init()
	rv := int32(0)
	switch {
	case st.acl.acls[m.ACLIndex] == nil:
		rv = retvalNoSuchEntry
	default:
		rv = st.aclInUse(m.ACLIndex)
	}
	if rv == 0 {
		delete(st.acl.acls, m.ACLIndex)
		st.acl.free = append(st.acl.free, m.ACLIndex)
	}
	cl.send(&acl.ACLDelReply{Retval: rv})
}

// hACLDump lists one ACL or (acl_index ~0) all of them in index order; an
// unknown index gives no details.
func hACLDump(cl *call, m *acl.ACLDump) {
	st := cl.st
	st.acl.init()
	send := func(e *aclEntry) {
		cl.send(&acl.ACLDetails{ACLIndex: e.index, Tag: e.tag, Count: uint32(len(e.rules)), R: aclRulesToAPI(e.rules)})
	}
	if m.ACLIndex != noIndex {
		if e := st.acl.acls[m.ACLIndex]; e != nil {
			send(e)
		}
		return
	}
	for _, idx := range st.aclIndexes() {
		send(st.acl.acls[idx])
	}
}

func (st *state) aclIndexes() []uint32 {
	idx := make([]uint32, 0, len(st.acl.acls))
	for i := range st.acl.acls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	return idx
}

// aclSetLists replaces both lists of an interface; sessions of the
// interface are cleared when they change (reclassify-sessions is off).
func (st *state) aclSetLists(i *iface, input, output []uint32) {
	b := st.aclBinding(i.idx)
	if b != nil && slicesEqualU32(b.input, input) && slicesEqualU32(b.output, output) {
		return
	}
	st.aclClearSessions(i.idx)
	if len(input) == 0 && len(output) == 0 {
		delete(st.acl.bindings, i.idx)
		return
	}
	st.acl.bindings[i.idx] = &aclBinding{iface: i, input: input, output: output, touched: st.nextSeq()}
}

func slicesEqualU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hACLInterfaceSetACLList sets both lists of an interface at once: the first
// n_input ACLs are input, the rest output.
func hACLInterfaceSetACLList(cl *call, m *acl.ACLInterfaceSetACLList) {
	st := cl.st
	st.acl.init()
	i := st.iface(m.SwIfIndex)
	rv := int32(0)
	switch {
	case i == nil:
		rv = retvalInvalidSwIfIndex
	case int(m.NInput) > len(m.Acls):
		rv = retvalInvalidValue
	}
	if rv == 0 {
		for _, x := range m.Acls {
			if st.acl.acls[x] == nil {
				rv = retvalNoSuchEntry
			}
		}
	}
	var in, out []uint32
	if rv == 0 {
		in = append([]uint32(nil), m.Acls[:m.NInput]...)
		out = append([]uint32(nil), m.Acls[m.NInput:]...)
		if hasDup(in) || hasDup(out) {
			rv = int32(api.ENTRY_ALREADY_EXISTS)
		}
	}
	if rv == 0 {
		st.aclSetLists(i, in, out)
	}
	cl.send(&acl.ACLInterfaceSetACLListReply{Retval: rv})
}

func hasDup(l []uint32) bool {
	seen := map[uint32]bool{}
	for _, x := range l {
		if seen[x] {
			return true
		}
		seen[x] = true
	}
	return false
}

// hACLInterfaceAddDel appends an ACL to, or removes it from, one list of an
// interface.
func hACLInterfaceAddDel(cl *call, m *acl.ACLInterfaceAddDel) {
	st := cl.st
	st.acl.init()
	i := st.iface(m.SwIfIndex)
	rv := int32(0)
	if i == nil {
		rv = retvalInvalidSwIfIndex
	} else if m.IsAdd && st.acl.acls[m.ACLIndex] == nil {
		rv = retvalNoSuchEntry
	}
	if rv == 0 {
		var in, out []uint32
		if b := st.aclBinding(i.idx); b != nil {
			in, out = append([]uint32(nil), b.input...), append([]uint32(nil), b.output...)
		}
		list := &out
		if m.IsInput {
			list = &in
		}
		pos := -1
		for k, x := range *list {
			if x == m.ACLIndex {
				pos = k
			}
		}
		switch {
		case m.IsAdd && pos >= 0:
			rv = retvalValueExist
		case m.IsAdd:
			*list = append(*list, m.ACLIndex)
		case pos < 0:
			rv = retvalNoSuchEntry
		default:
			*list = append((*list)[:pos], (*list)[pos+1:]...)
		}
		if rv == 0 {
			st.aclSetLists(i, in, out)
		}
	}
	cl.send(&acl.ACLInterfaceAddDelReply{Retval: rv})
}

// hACLInterfaceListDump lists the ACLs of one interface, or of every
// interface (~0), including those without ACLs, as VPP does.
func hACLInterfaceListDump(cl *call, m *acl.ACLInterfaceListDump) {
	st := cl.st
	st.acl.init()
	send := func(i *iface) {
		d := &acl.ACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(i.idx)}
		if b := st.aclBinding(i.idx); b != nil {
			d.Acls = append(append([]uint32(nil), b.input...), b.output...)
			d.NInput = uint8(len(b.input))
		}
		d.Count = uint8(len(d.Acls))
		cl.send(d)
	}
	if uint32(m.SwIfIndex) != noIndex {
		if i := st.iface(m.SwIfIndex); i != nil {
			send(i)
		}
		return
	}
	for _, i := range st.sortedIfaces() {
		send(i)
	}
}

package vppsim

import (
	"net/netip"
	"slices"
	"sort"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// NAT44-ED as VPP's nat44-ed plugin keeps it. Static, identity and
// load-balancing static mappings share one table keyed by the external
// (address, port, protocol), like VPP's static_mapping_by_external, and
// mappings that translate inside-to-outside too are also indexed by their
// local (address, port, protocol, VRF), like static_mapping_by_local; a
// second mapping with the same key is VNET_API_ERROR_VALUE_EXIST.

type natKind int

const (
	natStatic natKind = iota
	natIdentity
	natLB
)

// natMappingFlags are the flags a mapping keeps and dumps.
const natMappingFlags = nat_types.NAT_IS_ADDR_ONLY | nat_types.NAT_IS_TWICE_NAT |
	nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY

// natExtKey identifies a mapping by its external side. Address-only
// mappings have port and protocol 0. Mappings whose external address is
// taken from an interface (external_sw_if_index) key on the interface.
type natExtKey struct {
	addr  netip.Addr
	port  uint16
	proto uint8
	sw    uint32
}

// natLocalKey identifies a mapping by its local side.
type natLocalKey struct {
	addr  netip.Addr
	port  uint16
	proto uint8
	vrf   uint32
}

type natLBLocal struct {
	addr netip.Addr
	port uint16
	prob uint8
	vrf  uint32
}

type natMapping struct {
	kind      natKind
	flags     nat_types.NatConfigFlags
	ext       natExtKey
	local     netip.Addr // static
	localPort uint16     // static
	vrf       uint32     // static
	idVRFs    []uint32   // identity: the VRFs it applies in
	locals    []natLBLocal
	affinity  uint32
	tag       string
	matchPool bool
	poolAddr  netip.Addr
	seq       uint64
}

func (m *natMapping) has(f nat_types.NatConfigFlags) bool { return m.flags&f != 0 }

type natAddr struct {
	addr  netip.Addr
	vrf   uint32
	twice bool
}

type natIfAddr struct {
	sw    uint32
	twice bool
}

type natIface struct {
	flags nat_types.NatConfigFlags // NAT_IS_INSIDE | NAT_IS_OUTSIDE
	seq   uint64
}

type natState struct {
	enabled    bool
	insideVRF  uint32
	outsideVRF uint32
	sessionMax uint32
	cfgFlags   nat44_ed.Nat44ConfigFlags
	forwarding bool
	timeouts   nat_types.NatTimeouts
	addrs      []natAddr
	ifAddrs    []natIfAddr
	ifaces     map[uint32]*natIface
	outputIfs  []uint32
	mappings   map[natExtKey]*natMapping
	// ifaceMappings counts the mappings keyed by an external interface (ext.sw set):
	// a lookup by address scans the mappings only when there are some.
	ifaceMappings int
	byLocal       map[natLocalKey]*natMapping
	sess          natSessions
	vrfTables     map[uint32][]uint32
	vrfOrder      []uint32
	limits        map[uint32]uint32
	mssValue      uint16
	mssEnable     bool
	// fibReg counts NAT's local /32 registrations (natfib.go).
	fibReg map[natFibKey]int
}

// reset returns NAT to its disabled start state.
func (n *natState) reset() {
	*n = natState{
		timeouts:  nat_types.NatTimeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60},
		ifaces:    map[uint32]*natIface{},
		mappings:  map[natExtKey]*natMapping{},
		byLocal:   map[natLocalKey]*natMapping{},
		vrfTables: map[uint32][]uint32{},
		limits:    map[uint32]uint32{},
	}
	n.sess.init()
}

// forgetInterface drops NAT's references to a deleted interface.
func (n *natState) forgetInterface(sw uint32) {
	for k := range n.fibReg {
		if k.sw == sw {
			delete(n.fibReg, k)
		}
	}
	delete(n.ifaces, sw)
	n.outputIfs = slices.DeleteFunc(n.outputIfs, func(x uint32) bool { return x == sw })
	n.ifAddrs = slices.DeleteFunc(n.ifAddrs, func(x natIfAddr) bool { return x.sw == sw })
}

func registerNAT(r *registry) {
	on(r, hNat44EdPluginEnableDisable)
	on(r, hNat44ForwardingEnableDisable)
	on(r, hNat44ShowRunningConfig)
	on(r, hNatSetTimeouts)
	on(r, hNat44SetSessionLimit)
	on(r, hNatSetMssClamping)
	on(r, hNatGetMssClamping)
	on(r, hNat44AddDelAddressRange)
	on(r, hNat44AddressDump)
	on(r, hNat44AddDelInterfaceAddr)
	on(r, hNat44InterfaceAddrDump)
	on(r, hNat44InterfaceAddDelFeature)
	on(r, hNat44InterfaceDump)
	on(r, hNat44EdAddDelOutputInterface)
	on(r, hNat44EdOutputInterfaceGet)
	on(r, hNat44AddDelStaticMapping)
	on(r, hNat44AddDelStaticMappingV2)
	on(r, hNat44StaticMappingDump)
	on(r, hNat44AddDelIdentityMapping)
	on(r, hNat44IdentityMappingDump)
	on(r, hNat44AddDelLbStaticMapping)
	on(r, hNat44LbStaticMappingAddDelLocal)
	on(r, hNat44LbStaticMappingDump)
	on(r, hNat44UserDump)
	on(r, hNat44UserSessionDump)
	on(r, hNat44UserSessionV2Dump)
	on(r, hNat44UserSessionV3Dump)
	on(r, hNat44DelSession)
	on(r, hNat44EdAddDelVrfTable)
	on(r, hNat44EdAddDelVrfRoute)
	on(r, hNat44EdVrfTablesDump)
	on(r, hNat44EdVrfTablesV2Dump)
}

// --- plugin and global settings ---

// hNat44EdPluginEnableDisable enables NAT44-ED (locking its inside and
// outside VRFs, which are created if needed) or disables it, which clears
// the whole NAT configuration and all sessions.
func hNat44EdPluginEnableDisable(cl *call, m *nat44_ed.Nat44EdPluginEnableDisable) {
	st := cl.st
	n := &st.nat
	rv := retvalOK
	switch {
	case m.Enable && n.enabled:
		rv = retvalFeatureAlreadyEnabled
	case m.Enable && m.Flags&(nat44_ed.NAT44_IS_STATIC_MAPPING_ONLY|nat44_ed.NAT44_IS_CONNECTION_TRACKING) != 0:
		rv = retvalUnsupported
	case m.Enable:
		n.enabled = true
		n.insideVRF, n.outsideVRF = m.InsideVrf, m.OutsideVrf
		n.sessionMax, n.cfgFlags = m.Sessions, m.Flags
		st.lockTableNAT(n.insideVRF)
		st.lockTableNAT(n.outsideVRF)
		// nat44_plugin_enable: the gauge gets the limit (0 means the
		// default), the session count starts at zero.
		if g := st.seg(); g != nil {
			limit := n.sessionMax
			if limit == 0 {
				limit = natDefaultSessions
			}
			g.SetNATMaxCfgSessions(uint64(limit))
			st.statsNATSessions()
		}
	case !n.enabled:
		rv = retvalFeatureAlreadyDisabled
	default:
		st.natDisable()
	}
	cl.send(&nat44_ed.Nat44EdPluginEnableDisableReply{Retval: rv})
}

// natDisable clears NAT and releases its VRF locks.
func (st *state) natDisable() {
	n := &st.nat
	for _, a := range n.addrs {
		st.unlockTableNAT(a.vrf)
	}
	for _, m := range n.mappings {
		st.unlockMappingVRFs(m)
	}
	st.unlockTableNAT(n.insideVRF)
	st.unlockTableNAT(n.outsideVRF)
	n.reset()
	st.statsNATSessions() // nat44_ed_sessions_clear zeroes it
}

// natDisabled returns the retval for NAT configuration requests while the
// plugin is disabled, or 0. VPP's nat44-ed answers address and mapping
// requests with VNET_API_ERROR_UNSUPPORTED then ("if (!sm->enabled)
// return VNET_API_ERROR_UNSUPPORTED"); the simulator uses the same code for
// the interface, output-interface and VRF-table requests, which VPP guards
// with its fail_if_disabled check. Forwarding, timeouts, MSS clamping,
// session limits and session deletion are not guarded, as in VPP.
func (st *state) natDisabled() int32 {
	if !st.nat.enabled {
		return retvalUnsupported
	}
	return retvalOK
}

// hNat44ForwardingEnableDisable switches forwarding; disabling it deletes
// the forwarding-bypass sessions.
func hNat44ForwardingEnableDisable(cl *call, m *nat44_ed.Nat44ForwardingEnableDisable) {
	st := cl.st
	st.nat.forwarding = m.Enable
	if !m.Enable {
		for _, s := range st.nat.liveSessions() {
			if s.bypass {
				st.natDelSession(s)
			}
		}
	}
	cl.send(&nat44_ed.Nat44ForwardingEnableDisableReply{})
}

func hNat44ShowRunningConfig(cl *call, _ *nat44_ed.Nat44ShowRunningConfig) {
	n := &cl.st.nat
	cl.send(&nat44_ed.Nat44ShowRunningConfigReply{
		InsideVrf:         n.insideVRF,
		OutsideVrf:        n.outsideVRF,
		Sessions:          n.sessionMax,
		ForwardingEnabled: n.forwarding,
		Timeouts:          n.timeouts,
		LogLevel:          nat_types.NAT_LOG_ERROR,
		Flags:             n.cfgFlags,
	})
}

func hNatSetTimeouts(cl *call, m *nat44_ed.NatSetTimeouts) {
	cl.st.nat.timeouts = nat_types.NatTimeouts{UDP: m.UDP, TCPEstablished: m.TCPEstablished, TCPTransitory: m.TCPTransitory, ICMP: m.ICMP}
	cl.send(&nat44_ed.NatSetTimeoutsReply{})
}

func hNat44SetSessionLimit(cl *call, m *nat44_ed.Nat44SetSessionLimit) {
	rv := retvalOK
	if cl.st.table(false, m.VrfID) == nil {
		rv = retvalNoSuchFIB
	} else {
		cl.st.nat.limits[m.VrfID] = m.SessionLimit
	}
	cl.send(&nat44_ed.Nat44SetSessionLimitReply{Retval: rv})
}

func hNatSetMssClamping(cl *call, m *nat44_ed.NatSetMssClamping) {
	cl.st.nat.mssValue, cl.st.nat.mssEnable = m.MssValue, m.Enable
	cl.send(&nat44_ed.NatSetMssClampingReply{})
}

func hNatGetMssClamping(cl *call, _ *nat44_ed.NatGetMssClamping) {
	cl.send(&nat44_ed.NatGetMssClampingReply{MssValue: cl.st.nat.mssValue, Enable: cl.st.nat.mssEnable})
}

// --- address pools ---

// hNat44AddDelAddressRange adds or removes the addresses first..last to or
// from the NAT pool (or the twice-NAT pool). Like VPP it stops at the first
// failing address, leaving the earlier ones changed.
func hNat44AddDelAddressRange(cl *call, m *nat44_ed.Nat44AddDelAddressRange) {
	st := cl.st
	n := &st.nat
	rv := st.natDisabled()
	first, last := netip.AddrFrom4(m.FirstIPAddress), netip.AddrFrom4(m.LastIPAddress)
	twice := m.Flags&nat_types.NAT_IS_TWICE_NAT != 0
	if rv == retvalOK && last.Less(first) {
		rv = retvalInvalidValue
	}
	for a := first; rv == retvalOK; a = a.Next() {
		k := slices.IndexFunc(n.addrs, func(x natAddr) bool { return x.addr == a && x.twice == twice })
		if m.IsAdd {
			if k >= 0 {
				rv = retvalValueExist
				break
			}
			st.lockTableNAT(m.VrfID)
			n.addrs = append(n.addrs, natAddr{addr: a, vrf: m.VrfID, twice: twice})
			if !twice {
				st.natFibRegAddr(a, true)
			}
		} else {
			if k < 0 {
				rv = retvalNoSuchEntry
				break
			}
			st.unlockTableNAT(n.addrs[k].vrf)
			n.addrs = slices.Delete(n.addrs, k, k+1)
			if !twice {
				st.natFibRegAddr(a, false)
			}
		}
		if a == last {
			break
		}
	}
	cl.send(&nat44_ed.Nat44AddDelAddressRangeReply{Retval: rv})
}

func hNat44AddressDump(cl *call, _ *nat44_ed.Nat44AddressDump) {
	for _, twice := range []bool{false, true} {
		for _, a := range cl.st.nat.addrs {
			if a.twice != twice {
				continue
			}
			d := &nat44_ed.Nat44AddressDetails{IPAddress: a.addr.As4(), VrfID: a.vrf}
			if twice {
				d.Flags = nat_types.NAT_IS_TWICE_NAT
			}
			cl.send(d)
		}
	}
}

func hNat44AddDelInterfaceAddr(cl *call, m *nat44_ed.Nat44AddDelInterfaceAddr) {
	st := cl.st
	n := &st.nat
	rv := retvalOK
	twice := m.Flags&nat_types.NAT_IS_TWICE_NAT != 0
	k := slices.IndexFunc(n.ifAddrs, func(x natIfAddr) bool { return x.sw == uint32(m.SwIfIndex) && x.twice == twice })
	switch {
	case st.iface(m.SwIfIndex) == nil:
		rv = retvalInvalidSwIfIndex
	case !n.enabled:
		rv = retvalUnsupported
	case m.IsAdd && k >= 0:
		rv = retvalValueExist
	case m.IsAdd:
		n.ifAddrs = append(n.ifAddrs, natIfAddr{sw: uint32(m.SwIfIndex), twice: twice})
	case k < 0:
		rv = retvalNoSuchEntry
	default:
		n.ifAddrs = slices.Delete(n.ifAddrs, k, k+1)
	}
	cl.send(&nat44_ed.Nat44AddDelInterfaceAddrReply{Retval: rv})
}

func hNat44InterfaceAddrDump(cl *call, _ *nat44_ed.Nat44InterfaceAddrDump) {
	for _, a := range cl.st.nat.ifAddrs {
		d := &nat44_ed.Nat44InterfaceAddrDetails{SwIfIndex: interface_types.InterfaceIndex(a.sw)}
		if a.twice {
			d.Flags = nat_types.NAT_IS_TWICE_NAT
		}
		cl.send(d)
	}
}

// --- interfaces ---

// hNat44InterfaceAddDelFeature enables NAT on an interface as inside (flag
// NAT_IS_INSIDE) or outside (no flag); an interface may be both, and
// enabling a direction twice is accepted as in VPP. An output-feature
// interface cannot also be an inside/outside interface (VALUE_EXIST).
// Removing a direction the interface does not have is NO_SUCH_ENTRY (VPP
// only checks that the interface has NAT at all; the simulator is stricter
// here on purpose).
func hNat44InterfaceAddDelFeature(cl *call, m *nat44_ed.Nat44InterfaceAddDelFeature) {
	st := cl.st
	n := &st.nat
	rv := retvalOK
	sw := uint32(m.SwIfIndex)
	flag := nat_types.NAT_IS_OUTSIDE
	if m.Flags&nat_types.NAT_IS_INSIDE != 0 {
		flag = nat_types.NAT_IS_INSIDE
	}
	ni := n.ifaces[sw]
	switch {
	case st.ifaces[sw] == nil:
		rv = retvalInvalidSwIfIndex
	case !n.enabled:
		rv = retvalUnsupported
	case m.IsAdd && slices.Contains(n.outputIfs, sw):
		rv = retvalValueExist
	case m.IsAdd && ni != nil && ni.flags&flag != 0:
		// Already configured this way: VPP returns success.
	case m.IsAdd:
		if ni == nil {
			ni = &natIface{seq: st.nextSeq()}
			n.ifaces[sw] = ni
			st.statsNATInterface(sw) // nat44_ed_add_interface, new interface
		}
		ni.flags |= flag
		if flag == natOutside {
			st.natFibRegIface(sw, true)
		}
	case ni == nil || ni.flags&flag == 0:
		rv = retvalNoSuchEntry
	default:
		if flag == natOutside {
			st.natFibRegIface(sw, false)
		}
		ni.flags &^= flag
		if ni.flags == 0 {
			delete(n.ifaces, sw)
		}
	}
	cl.send(&nat44_ed.Nat44InterfaceAddDelFeatureReply{Retval: rv})
}

func (n *natState) sortedIfaces() []uint32 {
	out := make([]uint32, 0, len(n.ifaces))
	for sw := range n.ifaces {
		out = append(out, sw)
	}
	sort.Slice(out, func(a, b int) bool { return n.ifaces[out[a]].seq < n.ifaces[out[b]].seq })
	return out
}

func hNat44InterfaceDump(cl *call, _ *nat44_ed.Nat44InterfaceDump) {
	n := &cl.st.nat
	for _, sw := range n.sortedIfaces() {
		cl.send(&nat44_ed.Nat44InterfaceDetails{Flags: n.ifaces[sw].flags, SwIfIndex: interface_types.InterfaceIndex(sw)})
	}
}

func hNat44EdAddDelOutputInterface(cl *call, m *nat44_ed.Nat44EdAddDelOutputInterface) {
	st := cl.st
	n := &st.nat
	rv := retvalOK
	sw := uint32(m.SwIfIndex)
	k := slices.Index(n.outputIfs, sw)
	switch {
	case st.ifaces[sw] == nil:
		rv = retvalInvalidSwIfIndex
	case !n.enabled:
		rv = retvalUnsupported
	case m.IsAdd && (k >= 0 || n.ifaces[sw] != nil):
		rv = retvalValueExist
	case m.IsAdd:
		n.outputIfs = append(n.outputIfs, sw)
		st.natFibRegIface(sw, true)
		st.statsNATInterface(sw) // nat44_ed_add_output_interface
	case k < 0:
		rv = retvalNoSuchEntry
	default:
		st.natFibRegIface(sw, false)
		n.outputIfs = slices.Delete(n.outputIfs, k, k+1)
	}
	cl.send(&nat44_ed.Nat44EdAddDelOutputInterfaceReply{Retval: rv})
}

// hNat44EdOutputInterfaceGet follows VPP's cursor protocol
// (REPLY_AND_DETAILS_MACRO): details from the cursor on, then the reply
// with cursor ~0. A cursor past the last entry - which includes cursor 0
// when there are no output interfaces - is answered with
// VNET_API_ERROR_INVALID_VALUE, exactly as VPP does.
func hNat44EdOutputInterfaceGet(cl *call, m *nat44_ed.Nat44EdOutputInterfaceGet) {
	n := &cl.st.nat
	rep := &nat44_ed.Nat44EdOutputInterfaceGetReply{Cursor: noIndex}
	if int64(m.Cursor) >= int64(len(n.outputIfs)) {
		rep.Retval = retvalInvalidValue
	} else {
		for _, sw := range n.outputIfs[m.Cursor:] {
			cl.send(&nat44_ed.Nat44EdOutputInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(sw)})
		}
	}
	cl.send(rep)
}

// --- static and identity mappings ---

type staticArgs struct {
	isAdd     bool
	flags     nat_types.NatConfigFlags
	local     netip.Addr
	ext       netip.Addr
	proto     uint8
	localPort uint16
	extPort   uint16
	extSw     uint32
	vrf       uint32
	tag       string
	matchPool bool
	poolAddr  netip.Addr
}

func hNat44AddDelStaticMapping(cl *call, m *nat44_ed.Nat44AddDelStaticMapping) {
	rv := cl.st.natStaticAddDel(staticArgs{isAdd: m.IsAdd, flags: m.Flags,
		local: netip.AddrFrom4(m.LocalIPAddress), ext: netip.AddrFrom4(m.ExternalIPAddress), proto: m.Protocol,
		localPort: m.LocalPort, extPort: m.ExternalPort, extSw: uint32(m.ExternalSwIfIndex), vrf: m.VrfID, tag: m.Tag})
	cl.send(&nat44_ed.Nat44AddDelStaticMappingReply{Retval: rv})
}

func hNat44AddDelStaticMappingV2(cl *call, m *nat44_ed.Nat44AddDelStaticMappingV2) {
	rv := cl.st.natStaticAddDel(staticArgs{isAdd: m.IsAdd, flags: m.Flags,
		local: netip.AddrFrom4(m.LocalIPAddress), ext: netip.AddrFrom4(m.ExternalIPAddress), proto: m.Protocol,
		localPort: m.LocalPort, extPort: m.ExternalPort, extSw: uint32(m.ExternalSwIfIndex), vrf: m.VrfID, tag: m.Tag,
		matchPool: m.MatchPool, poolAddr: netip.AddrFrom4(m.PoolIPAddress)})
	cl.send(&nat44_ed.Nat44AddDelStaticMappingV2Reply{Retval: rv})
}

// extKey builds the external key of a mapping.
func extKey(addr netip.Addr, port uint16, proto uint8, sw uint32, addrOnly bool) natExtKey {
	k := natExtKey{addr: addr, port: port, proto: proto, sw: sw}
	if addrOnly {
		k.port, k.proto = 0, 0
	}
	if sw != noIndex {
		k.addr = netip.Addr{}
	}
	return k
}

// natStaticAddDel is nat44_ed_add/del_static_mapping.
func (st *state) natStaticAddDel(a staticArgs) int32 {
	if rv := st.natDisabled(); rv != retvalOK {
		return rv
	}
	n := &st.nat
	addrOnly := a.flags&nat_types.NAT_IS_ADDR_ONLY != 0
	key := extKey(a.ext, a.extPort, a.proto, a.extSw, addrOnly)
	if !a.isAdd {
		m := n.mappings[key]
		if m == nil || m.kind != natStatic {
			return retvalNoSuchEntry
		}
		st.removeMapping(m)
		return retvalOK
	}
	// VPP's nat44_ed_validate_sm_input: twice-NAT needs ports.
	if a.flags&(nat_types.NAT_IS_TWICE_NAT|nat_types.NAT_IS_SELF_TWICE_NAT) != 0 && addrOnly {
		return retvalUnsupported
	}
	vrf := a.vrf
	if vrf == noIndex {
		vrf = n.insideVRF
	}
	if n.mappings[key] != nil {
		return retvalValueExist
	}
	m := &natMapping{kind: natStatic, flags: a.flags & natMappingFlags, ext: key, local: a.local,
		localPort: a.localPort, vrf: vrf, tag: a.tag, matchPool: a.matchPool, poolAddr: a.poolAddr, seq: st.nextSeq()}
	if addrOnly {
		m.localPort = 0
	}
	if !m.has(nat_types.NAT_IS_OUT2IN_ONLY) {
		lk := natLocalKey{addr: a.local, port: m.localPort, proto: key.proto, vrf: vrf}
		if n.byLocal[lk] != nil {
			return retvalValueExist
		}
		n.byLocal[lk] = m
	}
	n.addMapping(key, m)
	st.natFibRegAddr(st.mappingExtAddr(m), true)
	st.lockTableNAT(vrf)
	return retvalOK
}

// addMapping indexes a new mapping by its external key.
func (n *natState) addMapping(key natExtKey, m *natMapping) {
	n.mappings[key] = m
	if key.sw != noIndex {
		n.ifaceMappings++
	}
}

// removeMapping deletes a mapping with its local index entries, VRF locks
// and sessions, and a load-balanced mapping's affinity records
// (nat44_ed_del_lb_static_mapping: nat_affinity_flush_service).
func (st *state) removeMapping(m *natMapping) {
	n := &st.nat
	if m.kind != natLB {
		st.natFibRegAddr(st.mappingExtAddr(m), false)
	}
	delete(n.mappings, m.ext)
	if m.ext.sw != noIndex {
		n.ifaceMappings--
	}
	for _, k := range mappingLocalKeys(m) {
		if n.byLocal[k] == m {
			delete(n.byLocal, k)
		}
	}
	st.unlockMappingVRFs(m)
	now := st.uptime()
	for _, s := range n.liveSessions() {
		if sess := st.toSession(s, now); st.sessionOfMapping(&sess, m) {
			st.natDelSession(s)
		}
	}
	if m.kind == natLB {
		st.natAffinityFlush(m)
	}
}

// mappingLocalKeys returns the local index keys a mapping may own.
func mappingLocalKeys(m *natMapping) []natLocalKey {
	switch m.kind {
	case natStatic:
		return []natLocalKey{{addr: m.local, port: m.localPort, proto: m.ext.proto, vrf: m.vrf}}
	case natIdentity:
		keys := make([]natLocalKey, 0, len(m.idVRFs))
		for _, v := range m.idVRFs {
			keys = append(keys, natLocalKey{addr: m.ext.addr, port: m.ext.port, proto: m.ext.proto, vrf: v})
		}
		return keys
	case natLB:
		keys := make([]natLocalKey, 0, len(m.locals))
		for _, l := range m.locals {
			keys = append(keys, natLocalKey{addr: l.addr, port: l.port, proto: m.ext.proto, vrf: l.vrf})
		}
		return keys
	}
	return nil
}

func (st *state) unlockMappingVRFs(m *natMapping) {
	switch m.kind {
	case natStatic:
		st.unlockTableNAT(m.vrf)
	case natIdentity:
		for _, v := range m.idVRFs {
			st.unlockTableNAT(v)
		}
	case natLB:
		for _, l := range m.locals {
			st.unlockTableNAT(l.vrf)
		}
	}
}

// sessionOfMapping tells whether a session was created by a mapping.
func (st *state) sessionOfMapping(s *Session, m *natMapping) bool {
	if s.OutsideAddr.Addr() != st.mappingExtAddr(m) || (!m.has(nat_types.NAT_IS_ADDR_ONLY) && (s.OutsideAddr.Port() != m.ext.port || s.Protocol != m.ext.proto)) {
		return false
	}
	return s.Static
}

// mappingExtAddr is the external address of a mapping, resolved from the
// interface for mappings that use one.
func (st *state) mappingExtAddr(m *natMapping) netip.Addr {
	if m.ext.sw == noIndex {
		return m.ext.addr
	}
	if i := st.ifaces[m.ext.sw]; i != nil {
		for _, a := range i.addrs {
			if a.Addr().Is4() {
				return a.Addr()
			}
		}
	}
	return netip.IPv4Unspecified()
}

func (n *natState) sortedMappings(kind natKind) []*natMapping {
	var out []*natMapping
	for _, m := range n.mappings {
		if m.kind == kind {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].seq < out[b].seq })
	return out
}

func hNat44StaticMappingDump(cl *call, _ *nat44_ed.Nat44StaticMappingDump) {
	st := cl.st
	for _, m := range st.nat.sortedMappings(natStatic) {
		cl.send(&nat44_ed.Nat44StaticMappingDetails{
			Flags:             m.flags,
			LocalIPAddress:    m.local.As4(),
			ExternalIPAddress: st.mappingExtAddr(m).As4(),
			Protocol:          m.ext.proto,
			LocalPort:         m.localPort,
			ExternalPort:      m.ext.port,
			ExternalSwIfIndex: interface_types.InterfaceIndex(m.ext.sw),
			VrfID:             m.vrf,
			Tag:               m.tag,
		})
	}
}

// hNat44AddDelIdentityMapping adds a VRF to the identity mapping of an
// address (and port), creating it if needed; the same address/port in the
// same VRF twice is VALUE_EXIST.
func hNat44AddDelIdentityMapping(cl *call, m *nat44_ed.Nat44AddDelIdentityMapping) {
	cl.send(&nat44_ed.Nat44AddDelIdentityMappingReply{Retval: cl.st.natIdentityAddDel(m)})
}

func (st *state) natIdentityAddDel(in *nat44_ed.Nat44AddDelIdentityMapping) int32 {
	if rv := st.natDisabled(); rv != retvalOK {
		return rv
	}
	n := &st.nat
	addrOnly := in.Flags&nat_types.NAT_IS_ADDR_ONLY != 0
	addr := netip.AddrFrom4(in.IPAddress)
	key := extKey(addr, in.Port, in.Protocol, uint32(in.SwIfIndex), addrOnly)
	vrf := in.VrfID
	if vrf == noIndex {
		vrf = n.insideVRF
	}
	m := n.mappings[key]
	lk := natLocalKey{addr: key.addr, port: key.port, proto: key.proto, vrf: vrf}
	if !in.IsAdd {
		if m == nil || m.kind != natIdentity || !slices.Contains(m.idVRFs, vrf) {
			return retvalNoSuchEntry
		}
		m.idVRFs = slices.DeleteFunc(m.idVRFs, func(v uint32) bool { return v == vrf })
		delete(n.byLocal, lk)
		st.unlockTableNAT(vrf)
		if len(m.idVRFs) == 0 {
			st.removeMapping(m)
		}
		return retvalOK
	}
	if m != nil && (m.kind != natIdentity || slices.Contains(m.idVRFs, vrf)) {
		return retvalValueExist
	}
	if n.byLocal[lk] != nil {
		return retvalValueExist
	}
	if m == nil {
		m = &natMapping{kind: natIdentity, flags: in.Flags & nat_types.NAT_IS_ADDR_ONLY, ext: key,
			local: key.addr, localPort: key.port, tag: in.Tag, seq: st.nextSeq()}
		n.addMapping(key, m)
		st.natFibRegAddr(st.mappingExtAddr(m), true)
	}
	m.idVRFs = append(m.idVRFs, vrf)
	n.byLocal[lk] = m
	st.lockTableNAT(vrf)
	return retvalOK
}

func hNat44IdentityMappingDump(cl *call, _ *nat44_ed.Nat44IdentityMappingDump) {
	st := cl.st
	for _, m := range st.nat.sortedMappings(natIdentity) {
		for _, vrf := range m.idVRFs {
			cl.send(&nat44_ed.Nat44IdentityMappingDetails{
				Flags:     m.flags,
				IPAddress: st.mappingExtAddr(m).As4(),
				Protocol:  m.ext.proto,
				Port:      m.ext.port,
				SwIfIndex: interface_types.InterfaceIndex(m.ext.sw),
				VrfID:     vrf,
				Tag:       m.tag,
			})
		}
	}
}

// --- load-balancing static mappings ---

// hNat44AddDelLbStaticMapping adds or deletes a load-balancing static
// mapping; VPP requires at least two locals.
func hNat44AddDelLbStaticMapping(cl *call, m *nat44_ed.Nat44AddDelLbStaticMapping) {
	cl.send(&nat44_ed.Nat44AddDelLbStaticMappingReply{Retval: cl.st.natLBAddDel(m)})
}

func (st *state) natLBAddDel(in *nat44_ed.Nat44AddDelLbStaticMapping) int32 {
	if rv := st.natDisabled(); rv != retvalOK {
		return rv
	}
	n := &st.nat
	key := natExtKey{addr: netip.AddrFrom4(in.ExternalAddr), port: in.ExternalPort, proto: in.Protocol, sw: noIndex}
	if !in.IsAdd {
		m := n.mappings[key]
		if m == nil || m.kind != natLB {
			return retvalNoSuchEntry
		}
		st.removeMapping(m)
		return retvalOK
	}
	if n.mappings[key] != nil {
		return retvalValueExist
	}
	if len(in.Locals) < 2 {
		return retvalInvalidValue // "LB static mapping must have at least two local addresses"
	}
	if in.Flags&nat_types.NAT_IS_ADDR_ONLY != 0 {
		return retvalInvalidValue
	}
	m := &natMapping{kind: natLB, flags: in.Flags & natMappingFlags, ext: key, affinity: in.Affinity, tag: in.Tag, seq: st.nextSeq()}
	m.locals = make([]natLBLocal, len(in.Locals))
	for k, l := range in.Locals {
		m.locals[k] = natLBLocal{addr: netip.AddrFrom4(l.Addr), port: l.Port, prob: l.Probability, vrf: l.VrfID}
	}
	for _, l := range m.locals {
		st.lockTableNAT(l.vrf)
		if !m.has(nat_types.NAT_IS_OUT2IN_ONLY) {
			n.byLocal[natLocalKey{addr: l.addr, port: l.port, proto: key.proto, vrf: l.vrf}] = m
		}
	}
	n.addMapping(key, m)
	return retvalOK
}

func hNat44LbStaticMappingAddDelLocal(cl *call, m *nat44_ed.Nat44LbStaticMappingAddDelLocal) {
	cl.send(&nat44_ed.Nat44LbStaticMappingAddDelLocalReply{Retval: cl.st.natLBLocalAddDel(m)})
}

func (st *state) natLBLocalAddDel(in *nat44_ed.Nat44LbStaticMappingAddDelLocal) int32 {
	if rv := st.natDisabled(); rv != retvalOK {
		return rv
	}
	n := &st.nat
	key := natExtKey{addr: netip.AddrFrom4(in.ExternalAddr), port: in.ExternalPort, proto: in.Protocol, sw: noIndex}
	m := n.mappings[key]
	if m == nil || m.kind != natLB {
		return retvalNoSuchEntry
	}
	l := natLBLocal{addr: netip.AddrFrom4(in.Local.Addr), port: in.Local.Port, prob: in.Local.Probability, vrf: in.Local.VrfID}
	k := slices.IndexFunc(m.locals, func(x natLBLocal) bool { return x.addr == l.addr && x.port == l.port && x.vrf == l.vrf })
	lk := natLocalKey{addr: l.addr, port: l.port, proto: key.proto, vrf: l.vrf}
	if in.IsAdd {
		if k >= 0 {
			return retvalValueExist
		}
		m.locals = append(m.locals, l)
		st.lockTableNAT(l.vrf)
		if !m.has(nat_types.NAT_IS_OUT2IN_ONLY) {
			n.byLocal[lk] = m
		}
		return retvalOK
	}
	if k < 0 {
		return retvalNoSuchEntry
	}
	if len(m.locals) < 3 {
		return retvalUnspecified // "at least two local must remain"
	}
	m.locals = slices.Delete(m.locals, k, k+1)
	st.unlockTableNAT(l.vrf)
	if n.byLocal[lk] == m {
		delete(n.byLocal, lk)
	}
	st.natForgetLocal(m, l)
	return retvalOK
}

// natForgetLocal deletes the sessions of a removed LB local and the
// affinity records of its mapping, so no new packet reaches the removed
// backend. VPP 25.10 deletes the sessions but keeps the records
// (nat44_ed_add_del_lb_static_mapping_local), whose backend index then
// names a freed, later reused, element of its locals pool; the simulator
// keeps locals in a slice whose indexes move, so it drops the records.
func (st *state) natForgetLocal(m *natMapping, l natLBLocal) {
	n := &st.nat
	local := l.addr.As4()
	for _, s := range n.liveSessions() {
		if s.static && s.o2i.dst == local && s.o2i.dport == l.port && s.o2iKey.dst == m.ext.addr.As4() && s.o2iKey.dport == m.ext.port {
			st.natDelSession(s)
		}
	}
	st.natAffinityFlush(m)
}

func hNat44LbStaticMappingDump(cl *call, _ *nat44_ed.Nat44LbStaticMappingDump) {
	for _, m := range cl.st.nat.sortedMappings(natLB) {
		d := &nat44_ed.Nat44LbStaticMappingDetails{
			ExternalAddr: m.ext.addr.As4(), ExternalPort: m.ext.port, Protocol: m.ext.proto,
			Flags: m.flags, Affinity: m.affinity, Tag: m.tag, LocalNum: uint32(len(m.locals)),
			Locals: make([]nat44_ed.Nat44LbAddrPort, len(m.locals)),
		}
		for k, l := range m.locals {
			d.Locals[k] = nat44_ed.Nat44LbAddrPort{Addr: l.addr.As4(), Port: l.port, Probability: l.prob, VrfID: l.vrf}
		}
		cl.send(d)
	}
}

// --- sessions ---

// natUser is an inside host with sessions.
type natUser struct {
	addr            netip.Addr
	vrf             uint32
	dynamic, static uint32
}

func (st *state) natUsers() []natUser {
	var out []natUser
	idx := map[natLocalKey]int{}
	now := st.uptime()
	for _, ns := range st.nat.liveSessions() {
		s := st.toSession(ns, now)
		k := natLocalKey{addr: s.InsideAddr.Addr(), vrf: s.InsideVRF}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, natUser{addr: k.addr, vrf: k.vrf})
		}
		if s.Static {
			out[i].static++
		} else {
			out[i].dynamic++
		}
	}
	return out
}

func hNat44UserDump(cl *call, _ *nat44_ed.Nat44UserDump) {
	for _, u := range cl.st.natUsers() {
		cl.send(&nat44_ed.Nat44UserDetails{VrfID: u.vrf, IPAddress: u.addr.As4(), Nsessions: u.dynamic, Nstaticsessions: u.static})
	}
}

// userSessions returns every session whose inside address is addr; like
// VPP 25.10 the dump ignores vrf_id (docs/dev-guide/VPP-FORWARDING.md §7).
func (st *state) userSessions(addr ip_types.IP4Address) []Session {
	a := netip.AddrFrom4(addr)
	var out []Session
	now := st.uptime()
	for _, ns := range st.nat.liveSessions() {
		if s := st.toSession(ns, now); s.InsideAddr.Addr() == a {
			out = append(out, s)
		}
	}
	return out
}

func sessionFlags(s *Session) nat_types.NatConfigFlags {
	f := nat_types.NAT_IS_EXT_HOST_VALID
	if s.Static {
		f |= nat_types.NAT_IS_STATIC
	}
	if s.TwiceNAT {
		f |= nat_types.NAT_IS_TWICE_NAT
	}
	return f
}

func hNat44UserSessionDump(cl *call, m *nat44_ed.Nat44UserSessionDump) {
	for _, s := range cl.st.userSessions(m.IPAddress) {
		cl.send(&nat44_ed.Nat44UserSessionDetails{
			OutsideIPAddress: s.OutsideAddr.Addr().As4(), OutsidePort: s.OutsideAddr.Port(),
			InsideIPAddress: s.InsideAddr.Addr().As4(), InsidePort: s.InsideAddr.Port(),
			Protocol: uint16(s.Protocol), Flags: sessionFlags(&s), LastHeard: s.LastHeard,
			TotalBytes: s.TotalBytes, TotalPkts: s.TotalPkts,
			ExtHostAddress: s.ExtHostAddr.Addr().As4(), ExtHostPort: s.ExtHostAddr.Port(),
			ExtHostNatAddress: s.extNAT().Addr().As4(), ExtHostNatPort: s.extNAT().Port(),
		})
	}
}

func hNat44UserSessionV2Dump(cl *call, m *nat44_ed.Nat44UserSessionV2Dump) {
	for _, s := range cl.st.userSessions(m.IPAddress) {
		cl.send(&nat44_ed.Nat44UserSessionV2Details{
			OutsideIPAddress: s.OutsideAddr.Addr().As4(), OutsidePort: s.OutsideAddr.Port(),
			InsideIPAddress: s.InsideAddr.Addr().As4(), InsidePort: s.InsideAddr.Port(),
			Protocol: uint16(s.Protocol), Flags: sessionFlags(&s), LastHeard: s.LastHeard,
			TotalBytes: s.TotalBytes, TotalPkts: s.TotalPkts,
			ExtHostAddress: s.ExtHostAddr.Addr().As4(), ExtHostPort: s.ExtHostAddr.Port(),
			ExtHostNatAddress: s.extNAT().Addr().As4(), ExtHostNatPort: s.extNAT().Port(),
			IsTimedOut: s.TimedOut,
		})
	}
}

func hNat44UserSessionV3Dump(cl *call, m *nat44_ed.Nat44UserSessionV3Dump) {
	for _, s := range cl.st.userSessions(m.IPAddress) {
		cl.send(&nat44_ed.Nat44UserSessionV3Details{
			OutsideIPAddress: s.OutsideAddr.Addr().As4(), OutsidePort: s.OutsideAddr.Port(),
			InsideIPAddress: s.InsideAddr.Addr().As4(), InsidePort: s.InsideAddr.Port(),
			Protocol: uint16(s.Protocol), Flags: sessionFlags(&s), LastHeard: s.LastHeard,
			TimeSinceLastHeard: s.TimeSinceLastHeard, TotalBytes: s.TotalBytes, TotalPkts: s.TotalPkts,
			ExtHostAddress: s.ExtHostAddr.Addr().As4(), ExtHostPort: s.ExtHostAddr.Port(),
			ExtHostNatAddress: s.extNAT().Addr().As4(), ExtHostNatPort: s.extNAT().Port(),
			IsTimedOut: s.TimedOut,
		})
	}
}

// hNat44DelSession is nat44_ed_del_session (VPP 25.10, nat44_ed.c):
// UNSUPPORTED while the plugin is disabled; otherwise the key (address,
// port -> ext_host, ext_host_port, FIB of vrf_id, protocol) is looked up
// among all flows, either direction, and that session is freed, else
// NO_SUCH_ENTRY. The inside flag is ignored. So a session is deleted by
// its i2o flow (backend -> client; for twice-NAT, ext_host is the
// twice-NAT address) or by its o2i flow (client -> service), and a
// forwarding-bypass session by its one flow (destination -> client)
// (docs/dev-guide/VPP-FORWARDING.md §7).
func hNat44DelSession(cl *call, m *nat44_ed.Nat44DelSession) {
	st := cl.st
	k := natFlowKey{src: m.Address, dst: m.ExtHostAddress, sport: m.Port, dport: m.ExtHostPort, fib: m.VrfID, proto: m.Protocol}
	rv := st.natDisabled()
	if rv == retvalOK {
		if s := st.nat.sess.flows[k]; s == nil {
			rv = retvalNoSuchEntry
		} else {
			st.natDelSession(s)
		}
	}
	cl.send(&nat44_ed.Nat44DelSessionReply{Retval: rv})
}

// --- VRF tables for dynamic translations ---

func hNat44EdAddDelVrfTable(cl *call, m *nat44_ed.Nat44EdAddDelVrfTable) {
	n := &cl.st.nat
	rv := cl.st.natDisabled()
	_, exists := n.vrfTables[m.TableVrfID]
	switch {
	case rv != retvalOK:
	case m.IsAdd && exists:
		rv = retvalValueExist
	case m.IsAdd:
		n.vrfTables[m.TableVrfID] = nil
		n.vrfOrder = append(n.vrfOrder, m.TableVrfID)
	case !exists:
		rv = retvalNoSuchEntry
	default:
		delete(n.vrfTables, m.TableVrfID)
		n.vrfOrder = slices.DeleteFunc(n.vrfOrder, func(v uint32) bool { return v == m.TableVrfID })
	}
	cl.send(&nat44_ed.Nat44EdAddDelVrfTableReply{Retval: rv})
}

func hNat44EdAddDelVrfRoute(cl *call, m *nat44_ed.Nat44EdAddDelVrfRoute) {
	n := &cl.st.nat
	rv := cl.st.natDisabled()
	routes, exists := n.vrfTables[m.TableVrfID]
	k := slices.Index(routes, m.VrfID)
	switch {
	case rv != retvalOK:
	case !exists:
		rv = retvalNoSuchEntry
	case m.IsAdd && k >= 0:
		rv = retvalValueExist
	case m.IsAdd:
		n.vrfTables[m.TableVrfID] = append(routes, m.VrfID)
	case k < 0:
		rv = retvalNoSuchEntry
	default:
		n.vrfTables[m.TableVrfID] = slices.Delete(routes, k, k+1)
	}
	cl.send(&nat44_ed.Nat44EdAddDelVrfRouteReply{Retval: rv})
}

func hNat44EdVrfTablesDump(cl *call, _ *nat44_ed.Nat44EdVrfTablesDump) {
	n := &cl.st.nat
	for _, id := range n.vrfOrder {
		ids := slices.Clone(n.vrfTables[id])
		cl.send(&nat44_ed.Nat44EdVrfTablesDetails{TableVrfID: id, NVrfIds: uint32(len(ids)), VrfIds: ids})
	}
}

func hNat44EdVrfTablesV2Dump(cl *call, _ *nat44_ed.Nat44EdVrfTablesV2Dump) {
	n := &cl.st.nat
	for _, id := range n.vrfOrder {
		ids := slices.Clone(n.vrfTables[id])
		cl.send(&nat44_ed.Nat44EdVrfTablesV2Details{TableVrfID: id, NVrfIds: uint32(len(ids)), VrfIds: ids})
	}
}

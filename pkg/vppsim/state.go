package vppsim

import (
	"net/netip"
	"sort"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/tapv2"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// noIndex is VPP's ~0: "no interface", "no VRF", "all".
const noIndex = ^uint32(0)

// Interface kinds.
type ifKind int

const (
	kindLocal ifKind = iota
	kindNIC
	kindLoopback
	kindTap
	kindAfPacket
	kindVxlan
)

// devType is what sw_interface_details reports as interface_dev_type.
func (k ifKind) devType() string {
	switch k {
	case kindLocal:
		return "local"
	case kindNIC:
		return "dpdk"
	case kindLoopback:
		return "Loopback"
	case kindTap:
		return "virtio"
	case kindAfPacket:
		return "af-packet"
	case kindVxlan:
		return "VXLAN"
	}
	return "unknown"
}

// ethernet tells whether interfaces of this kind are Ethernet interfaces
// (have a MAC, may be a BVI, support hw MTU).
func (k ifKind) ethernet() bool {
	return k == kindNIC || k == kindLoopback || k == kindTap || k == kindAfPacket
}

// Interface MTU limits, as for VPP's Ethernet interfaces.
const (
	defaultMTU = 9000
	minLinkMTU = 64
	maxLinkMTU = 9216
)

// iface is one VPP software interface (all are hardware interfaces here).
type iface struct {
	idx      uint32
	name     string
	kind     ifKind
	mac      [6]byte
	adminUp  bool
	linkMTU  uint32
	mtu      [4]uint32 // L3, IP4, IP6, MPLS
	tag      string
	vrf      [2]uint32      // table ID for IPv4 and IPv6
	addrs    []netip.Prefix // in the order they were added
	unnumOf  uint32         // donor interface, noIndex if numbered
	rxMode   interface_types.RxMode
	rxQueues uint32
	l2       *l2Port
	proxyArp bool
	ip6      *ip6Link // IPv6 enabled (link-local address, ND); nil if not (handlers_ip6.go)

	ctr  ifCounters // packet counters (fwd_trace.go)
	port wirePort   // Linux end moving frames (fwd_io*.go); nil if none

	loopInstance uint32
	tap          *tapInfo
	afp          *afPacketInfo
	vxlan        *vxlanInfo
}

// linkUp is the hardware link state as VPP reports it: NICs and loopbacks
// have link while administratively up, TAP, af_packet and VXLAN interfaces
// get link when created, local0 never.
func (i *iface) linkUp() bool {
	switch i.kind {
	case kindLocal:
		return false
	case kindNIC, kindLoopback:
		return i.adminUp
	}
	return true
}

func (i *iface) flags() interface_types.IfStatusFlags {
	var f interface_types.IfStatusFlags
	if i.adminUp {
		f |= interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	if i.linkUp() {
		f |= interface_types.IF_STATUS_API_FLAG_LINK_UP
	}
	return f
}

type l2Port struct {
	bd       uint32
	shg      uint8
	portType l2.L2PortType
}

type tapInfo struct {
	id         uint32
	flags      tapv2.TapFlags
	rxRing     uint16
	txRing     uint16
	numRx      uint16
	numTx      uint16
	hostIfName string
	hostNS     string
	hostBridge string
	hostMAC    [6]byte
	hostMTU    uint32
	hostIP4    netip.Prefix
	hostIP6    netip.Prefix
	hostIP4GW  netip.Addr
	hostIP6GW  netip.Addr
	host       hostTap // Linux end in linux mode, else nil
}

type afPacketInfo struct {
	hostIfName string
	numRx      uint16
}

type vxlanKey struct {
	src, dst netip.Addr
	vni      uint32
	encapVRF uint32
	dstPort  uint16
}

type vxlanInfo struct {
	instance  uint32
	src, dst  netip.Addr
	srcPort   uint16
	dstPort   uint16
	mcastIf   uint32
	encapVRF  uint32
	decapNext uint32
	vni       uint32
	isL3      bool
}

func (v *vxlanInfo) key() vxlanKey {
	return vxlanKey{src: v.src, dst: v.dst, vni: v.vni, encapVRF: v.encapVRF, dstPort: v.dstPort}
}

// vrfTable is a FIB table. Like in VPP it exists while someone holds a
// lock on it: the API (ip_table_add_del), bound interfaces or NAT.
type vrfTable struct {
	id      uint32
	ipv6    bool
	name    string
	apiLock bool
	ifRefs  int
	natRefs int
	seq     uint64
	routes  map[netip.Prefix]*apiRoute
}

func (t *vrfTable) inUse() bool {
	return t.id == 0 || t.apiLock || t.ifRefs > 0 || t.natRefs > 0
}

// apiRoute is a FIB entry added through the API (FIB_SOURCE_API).
type apiRoute struct {
	prefix netip.Prefix
	paths  []fib_types.FibPath
}

type neighborKey struct {
	sw uint32
	ip netip.Addr
}

type neighbor struct {
	neighborKey
	mac   [6]byte
	flags ip_neighbor.IPNeighborFlags
	seq   uint64
}

type neighborConfig struct {
	maxNumber uint32
	maxAge    uint32
	recycle   bool
}

type proxyArpRange struct {
	vrf    uint32
	lo, hi netip.Addr
}

type bridgeDomain struct {
	id                                             uint32
	flood, uuFlood, forward, learn, arpTerm, arpUf bool
	macAge                                         uint8
	tag                                            string
	members                                        []uint32 // BVI first, then in order of addition
	bvi                                            uint32
	uuFwd                                          uint32
}

type l2fibKey struct {
	bd  uint32
	mac [6]byte
}

type l2fibEntry struct {
	sw                  uint32
	static, filter, bvi bool
	seq                 uint64
}

type dhcpClient struct {
	sw          uint32
	hostname    string
	id          []byte
	wantEvent   bool
	broadcast   bool
	dscp        uint8
	pid         uint32
	clientIndex uint32
	lease       *DHCPLease
}

// state is everything VPP would lose in a restart.
type state struct {
	s *Sim

	ifaces    map[uint32]*iface
	byName    map[string]*iface
	freeIdx   []uint32 // freed sw_if_indexes, reused last-freed first
	nextIdx   uint32
	loopInst  map[uint32]bool
	tapIDs    map[uint32]bool
	vxlanInst map[uint32]bool
	vxlanKeys map[vxlanKey]uint32
	afpHosts  map[string]uint32

	tables      [2]map[uint32]*vrfTable // [0] IPv4, [1] IPv6
	neighbors   map[neighborKey]*neighbor
	neighborCfg [2]neighborConfig
	proxyArps   []proxyArpRange
	bds         map[uint32]*bridgeDomain
	l2fib       map[l2fibKey]*l2fibEntry
	dhcp        map[uint32]*dhcpClient
	ifEventSubs map[uint32]uint32 // client index -> pid
	nat         natState
	acl         aclState  // the ACL plugin (acl*.go)
	stn         stnState  // the STN plugin (stn.go, fwd_stn.go)
	cnat        cnatState // the cnat plugin (cnat*.go, fwd_cnat*.go)
	// nd6Proxy are the IPv6 proxy ND entries (nd6proxy.go).
	nd6Proxy map[nd6ProxyKey]*nd6ProxyEntry

	seq uint64 // insertion order of entries VPP dumps in pool order

	// gen is the configuration generation: every handler run and every
	// data-plane change of the FIB (a learned neighbour) bumps it, and the
	// data plane rebuilds its compiled view when it moved.
	gen     uint64
	started time.Time // when this VPP "started" (uptime, last_heard)
	fwd     fwdState

	// aclFilter is the ACL plugin's classifier (input ACLs before NAT on
	// ip4-unicast, output ACLs after NAT on ip4-output); nil means no ACL
	// plugin state, i.e. permit.
	aclFilter func(swIfIndex uint32, input bool, f *aclFlow) (permit bool, reason string)
}

// fwdState is the data plane's own state.
type fwdState struct {
	view    fwdView
	free    []*pkt
	trace   traceState
	errors  map[errKey]uint64
	arpSent map[neighborKey]time.Duration
	ndSent  map[neighborKey]time.Duration // NS throttle (fwd_nd.go)
	view6   fwdView6                      // compiled IPv6 FIBs (fwd_fib6.go)
	aclFlow aclFlow                       // scratch for the ACL hook (no allocation per packet)
	// errIdx caches the stats segment's index of each error (stats.go).
	errIdx map[errKey]statseg.ErrorIndex
	ipID   uint16
	// nullThrottle and errThrottle are the ICMP rate limits of ip4-null
	// and ip4-icmp-error (fwd_icmp.go).
	nullThrottle icmpThrottle
	errThrottle  icmpThrottle
	// err6Throttle is ip6-icmp-error's (fwd_icmp6.go); ip6-null shares
	// nullThrottle with ip4-null.
	err6Throttle icmpThrottle
}

// newState returns VPP's start state: local0 and the configured NICs, the
// default IPv4 and IPv6 tables, NAT disabled.
func newState(s *Sim) *state {
	st := &state{
		s:           s,
		ifaces:      map[uint32]*iface{},
		byName:      map[string]*iface{},
		loopInst:    map[uint32]bool{},
		tapIDs:      map[uint32]bool{},
		vxlanInst:   map[uint32]bool{},
		vxlanKeys:   map[vxlanKey]uint32{},
		afpHosts:    map[string]uint32{},
		neighbors:   map[neighborKey]*neighbor{},
		bds:         map[uint32]*bridgeDomain{},
		l2fib:       map[l2fibKey]*l2fibEntry{},
		dhcp:        map[uint32]*dhcpClient{},
		ifEventSubs: map[uint32]uint32{},
		started:     s.clock.Now(),
		fwd: fwdState{errors: map[errKey]uint64{}, arpSent: map[neighborKey]time.Duration{},
			nullThrottle: newICMPThrottle(ip4NullWindow, ip4NullBuckets, 1),
			errThrottle:  newICMPThrottle(icmpErrorWindow, icmpErrorBuckets, 2),
			err6Throttle: newICMPThrottle(icmp6ErrorWindow, icmpErrorBuckets, 4),
			ndSent:       map[neighborKey]time.Duration{}},
	}
	for af := range st.tables {
		st.tables[af] = map[uint32]*vrfTable{}
		st.tables[af][0] = &vrfTable{id: 0, ipv6: af == 1, name: defaultTableName(af == 1, 0), routes: map[netip.Prefix]*apiRoute{}}
	}
	for af := range st.neighborCfg {
		st.neighborCfg[af] = neighborConfig{maxNumber: 50000, recycle: false}
	}
	st.nat.reset()
	st.aclFilter = st.aclEvaluate // the ACL plugin (acl_eval.go)
	local := st.newIface("local0", kindLocal)
	local.linkMTU = 0
	local.mtu = [4]uint32{}
	for i, name := range s.nicNames {
		nic := st.newIface(name, kindNIC)
		nic.mac = [6]byte{0x08, 0x00, 0x27, 0x5a, byte(i >> 8), byte(i + 1)}
		nic.rxQueues = 1
	}
	return st
}

func defaultTableName(ipv6 bool, id uint32) string {
	if ipv6 {
		return "ipv6-VRF:" + utoa(id)
	}
	return "ipv4-VRF:" + utoa(id)
}

func (st *state) nextSeq() uint64 {
	st.seq++
	return st.seq
}

// newIface creates an interface with the next free sw_if_index.
func (st *state) newIface(name string, kind ifKind) *iface {
	var idx uint32
	if n := len(st.freeIdx); n > 0 {
		idx = st.freeIdx[n-1]
		st.freeIdx = st.freeIdx[:n-1]
	} else {
		idx = st.nextIdx
		st.nextIdx++
	}
	i := &iface{
		idx:     idx,
		name:    name,
		kind:    kind,
		linkMTU: defaultMTU,
		mtu:     [4]uint32{defaultMTU, 0, 0, 0},
		unnumOf: noIndex,
		rxMode:  interface_types.RX_MODE_API_POLLING,
	}
	st.ifaces[idx] = i
	st.byName[name] = i
	st.tables[0][0].ifRefs++
	st.tables[1][0].ifRefs++
	st.statsAddInterface(i)
	return i
}

// iface returns the interface with the given index, nil if there is none.
func (st *state) iface(idx interface_types.InterfaceIndex) *iface {
	return st.ifaces[uint32(idx)]
}

// deleteIface removes an interface and everything that refers to it, as
// VPP does when an interface is deleted.
func (st *state) deleteIface(cl *call, i *iface) {
	if i.port != nil {
		i.port.close()
		i.port = nil
	}
	if i.l2 != nil {
		st.removeFromBD(i)
	}
	for _, other := range st.ifaces {
		if other.unnumOf == i.idx {
			other.unnumOf = noIndex
		}
	}
	i.addrs = nil
	for af := range i.vrf {
		st.unlockTableIf(af == 1, i.vrf[af])
	}
	for k := range st.neighbors {
		if k.sw == i.idx {
			delete(st.neighbors, k)
		}
	}
	st.nd6ProxyIfDeleted(i.idx)
	for k, e := range st.l2fib {
		if e.sw == i.idx {
			delete(st.l2fib, k)
		}
	}
	delete(st.dhcp, i.idx)
	st.nat.forgetInterface(i.idx)
	delete(st.ifaces, i.idx)
	delete(st.byName, i.name)
	st.freeIdx = append(st.freeIdx, i.idx)
	st.statsDeleteInterface(i)
	if cl != nil {
		st.ifEvent(cl, i, true)
	}
}

// ifEvent notifies the clients that asked for interface events.
func (st *state) ifEvent(cl *call, i *iface, deleted bool) {
	if len(st.ifEventSubs) == 0 {
		return
	}
	clients := make([]uint32, 0, len(st.ifEventSubs))
	for idx := range st.ifEventSubs {
		clients = append(clients, idx)
	}
	sort.Slice(clients, func(a, b int) bool { return clients[a] < clients[b] })
	for _, idx := range clients {
		cl.sendEvent(idx, &interfaces.SwInterfaceEvent{
			PID:       st.ifEventSubs[idx],
			SwIfIndex: interface_types.InterfaceIndex(i.idx),
			Flags:     i.flags(),
			Deleted:   deleted,
		})
	}
}

// forgetClient drops the registrations of a disconnected client.
func (st *state) forgetClient(index uint32) {
	delete(st.ifEventSubs, index)
}

// releaseHost removes the Linux resources created for the state.
func (st *state) releaseHost() {
	for _, i := range st.ifaces {
		if i.port != nil {
			i.port.close()
			i.port = nil
		}
	}
	for _, i := range st.ifaces {
		if i.tap != nil && i.tap.host != nil {
			if err := i.tap.host.Close(); err != nil {
				st.s.log.WithError(err).WithField("tap", i.tap.hostIfName).Warn("cannot remove Linux end of TAP")
			}
			i.tap.host = nil
		}
	}
}

// table returns the FIB table, nil if it does not exist.
func (st *state) table(ipv6 bool, id uint32) *vrfTable {
	return st.tables[afIndex(ipv6)][id]
}

func afIndex(ipv6 bool) int {
	if ipv6 {
		return 1
	}
	return 0
}

// findOrCreateTable returns the table, creating it unlocked if missing.
func (st *state) findOrCreateTable(ipv6 bool, id uint32) *vrfTable {
	m := st.tables[afIndex(ipv6)]
	t := m[id]
	if t == nil {
		t = &vrfTable{id: id, ipv6: ipv6, name: defaultTableName(ipv6, id), seq: st.nextSeq(), routes: map[netip.Prefix]*apiRoute{}}
		m[id] = t
	}
	return t
}

// releaseTable deletes the table when nobody holds it any more.
func (st *state) releaseTable(t *vrfTable) {
	if !t.inUse() {
		delete(st.tables[afIndex(t.ipv6)], t.id)
	}
}

func (st *state) unlockTableIf(ipv6 bool, id uint32) {
	if t := st.table(ipv6, id); t != nil {
		t.ifRefs--
		st.releaseTable(t)
	}
}

// lockTableNAT takes NAT's lock on an IPv4 table, creating it if needed,
// as NAT44-ED does with fib_table_find_or_create_and_lock.
func (st *state) lockTableNAT(id uint32) {
	if id == noIndex {
		return
	}
	st.findOrCreateTable(false, id).natRefs++
}

func (st *state) unlockTableNAT(id uint32) {
	if id == noIndex {
		return
	}
	if t := st.table(false, id); t != nil {
		t.natRefs--
		st.releaseTable(t)
	}
}

// sortedIfaces returns the interfaces in sw_if_index order.
func (st *state) sortedIfaces() []*iface {
	out := make([]*iface, 0, len(st.ifaces))
	for _, i := range st.ifaces {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].idx < out[b].idx })
	return out
}

// ifName returns the name of an interface index for CLI output.
func (st *state) ifName(idx uint32) string {
	if i := st.ifaces[idx]; i != nil {
		return i.name
	}
	return "unknown"
}

// effectiveAddrs returns the addresses an interface uses: its own, or
// those of its donor when it is unnumbered (VPP's "honor unnumbered").
func (st *state) effectiveAddrs(i *iface) []netip.Prefix {
	if i.unnumOf != noIndex {
		if d := st.ifaces[i.unnumOf]; d != nil {
			return d.addrs
		}
		return nil
	}
	return i.addrs
}

func utoa(v uint32) string {
	var b [10]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[n:])
}

package vppsim

import (
	"container/list"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"go.fd.io/govpp/binapi/nat_types"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// NAT44-ED in the graph (docs/dev-guide/VPP-FORWARDING.md §7, §8): nat44-ed-classify, -in2out, -out2in
// on ip4-unicast and nat44-ed-in2out-output on ip4-output. Sessions are
// the sessions of the traffic; the API dumps and deletes them.

const (
	natInside  = nat_types.NAT_IS_INSIDE
	natOutside = nat_types.NAT_IS_OUTSIDE
	// natDefaultSessions is VPP's per-thread session limit when the plugin
	// is enabled with sessions 0.
	natDefaultSessions = 64512
)

// natFlowKey is the 6-tuple of a flow: what a packet must carry to match
// it. For ICMP echo both ports are the identifier.
type natFlowKey struct {
	src, dst     [4]byte
	sport, dport uint16
	fib          uint32
	proto        uint8
}

// natRewrite is what a matching packet becomes; fib is the table of the
// follow-up lookup (noIndex: unchanged).
type natRewrite struct {
	src, dst     [4]byte
	sport, dport uint16
	fib          uint32
}

// TCP states of a session.
const (
	tcpClosed = iota
	tcpEstablished
	tcpClosing
)

// natSess is a NAT44-ED session with its two flows.
type natSess struct {
	i2oKey, o2iKey natFlowKey
	i2o, o2i       natRewrite
	proto          uint8
	static, twice  bool
	bypass         bool // forwarding-bypass session (no translation)
	deleted        bool
	insideVRF      uint32
	outsideVRF     uint32
	lastHeard      time.Duration // uptime of the last packet
	bytes          uint64
	pkts           uint32
	tcpState       uint8
	tcpSeen        [2]uint8 // FIN/SYN/RST/ACK seen per direction: 0 i2o, 1 o2i
	// affinity sessions hold a reference on the affinity record affKey.
	affinity bool
	affKey   natAffKey
	seq      uint64
	// the session's place in the LRU lists (fwd_nat44_sess.go).
	lruList natLRU
	lruElem *list.Element
	lastLRU time.Duration
	// injected sessions (InjectSession) report the given times.
	injected *Session
}

// natSessions is the session table.
type natSessions struct {
	list    []*natSess
	live    int
	flows   map[natFlowKey]*natSess
	aff     map[natAffKey]*natAffinity
	lru     [natLRUCount]*list.List
	nextSeq uint64
}

func (t *natSessions) init() {
	t.flows = map[natFlowKey]*natSess{}
	t.aff = map[natAffKey]*natAffinity{}
}

func (st *state) natAddSession(s *natSess) {
	t := &st.nat.sess
	t.nextSeq++
	s.seq = t.nextSeq
	t.list = append(t.list, s)
	t.live++
	t.flows[s.i2oKey] = s
	t.flows[s.o2iKey] = s
	st.statsNATSessions()
}

// natDelSession frees a session (nat44_ed_free_session_data and
// nat_ed_session_delete): its flows go, an affinity session releases its
// affinity record; the list is compacted lazily.
func (st *state) natDelSession(s *natSess) {
	t := &st.nat.sess
	if s.deleted {
		return
	}
	s.deleted = true
	t.live--
	st.statsNATSessions()
	if t.flows[s.i2oKey] == s {
		delete(t.flows, s.i2oKey)
	}
	if t.flows[s.o2iKey] == s {
		delete(t.flows, s.o2iKey)
	}
	st.natLRURemove(s)
	if s.affinity && !s.bypass {
		st.natAffinityUnlock(s.affKey, st.uptime())
	}
	if len(t.list) > 64 && t.live < len(t.list)/2 {
		out := t.list[:0]
		for _, x := range t.list {
			if !x.deleted {
				out = append(out, x)
			}
		}
		clear(t.list[len(out):])
		t.list = out
	}
}

// liveSessions returns the sessions in creation order.
func (n *natState) liveSessions() []*natSess {
	out := make([]*natSess, 0, n.sess.live)
	for _, s := range n.sess.list {
		if !s.deleted {
			out = append(out, s)
		}
	}
	return out
}

// timeout is the session's idle timeout.
func (st *state) natTimeout(s *natSess) time.Duration {
	t := &st.nat.timeouts
	var sec uint32
	switch s.proto {
	case protoTCP:
		sec = t.TCPTransitory
		if s.tcpState == tcpEstablished {
			sec = t.TCPEstablished
		}
	case protoUDP:
		sec = t.UDP
	case protoICMP:
		sec = t.ICMP
	default:
		sec = t.UDP
	}
	return time.Duration(sec) * time.Second
}

// natExpired tells whether a session's timeout has passed: VPP compares
// now >= last_heard + timeout.
func (st *state) natExpired(s *natSess, now time.Duration) bool {
	return s.injected == nil && now >= s.lastHeard+st.natTimeout(s)
}

// natKey builds the 6-tuple of a packet in a FIB.
func natKey(h []byte, fib uint32) natFlowKey {
	return natFlowKey{src: ip4Src(h), dst: ip4Dst(h), sport: l4SrcPort(h), dport: l4DstPort(h), fib: fib, proto: ip4Proto(h)}
}

// natTranslatable tells whether NAT44-ED handles the packet here: TCP,
// UDP and ICMP echo with their L4 header, and every protocol NAT44-ED
// does not know (fwd_nat44_unk.go). Non-first fragments pass untranslated
// (see doc.go); ICMP errors are translated by the session of the packet
// they carry (natICMPError).
func natTranslatable(h []byte) bool {
	if !l4Complete(h) {
		return false
	}
	switch p := ip4Proto(h); p {
	case protoTCP, protoUDP:
		return true
	case protoICMP:
		return icmpIsEcho(ip4L4(h)[0])
	default:
		return natUnknownProto(p)
	}
}

// natIsOutputIf tells whether the output feature is on interface sw.
func (st *state) natIsOutputIf(sw uint32) bool {
	for _, x := range st.nat.outputIfs {
		if x == sw {
			return true
		}
	}
	return false
}

// natInput runs NAT on ip4-unicast of interface i; false means the packet
// was consumed (dropped).
func (st *state) natInput(p *pkt, i *iface) bool {
	n := &st.nat
	var role nat_types.NatConfigFlags
	if ni := n.ifaces[i.idx]; ni != nil {
		role = ni.flags & (natInside | natOutside)
	}
	outputIf := role == 0 && st.natIsOutputIf(i.idx)
	if role == 0 && !outputIf {
		return true
	}
	h := p.ip()
	if icmpErrorInner(h) != nil {
		st.natICMPError(p, "nat44-ed-icmp-error", true)
		return true
	}
	if !natTranslatable(h) {
		return true
	}
	node := "nat44-ed-in2out"
	in2out := true
	switch {
	case outputIf || role == natOutside:
		node, in2out = "nat44-ed-out2in", false
	case role == natInside|natOutside:
		in2out = st.natClassify(p)
		if !in2out {
			node = "nat44-ed-out2in"
		}
		if p.tr != nil {
			st.tracef(p, "nat44-ed-classify", "next %s", node)
		}
	}
	if ip4TTL(h) == 1 {
		// The NAT nodes answer TTL 1 before the lookup, even for local
		// destinations.
		st.icmpError(p, icmpTimeExceeded, 0, 0)
		st.drop(p, node, "ttl 1 (time exceeded)")
		return false
	}
	k := natKey(h, p.rxVRF)
	now := st.uptime()
	dir := statseg.Out2In
	if in2out {
		dir = statseg.In2Out
	}
	if s := n.sess.flows[k]; s != nil {
		if !st.natExpired(s, now) {
			st.natApply(p, s, k, now)
			st.statsNAT(dir, statseg.FastPath, k.proto, false, i.idx)
			if p.tr != nil {
				st.traceNAT(p, node, "session hit")
			}
			return true
		}
		st.natDelSession(s)
	}
	natted := p.natted
	var ok bool
	switch {
	case natUnknownProto(k.proto) && in2out:
		ok = st.natIn2OutUnknown(p, k, now, false, node)
	case natUnknownProto(k.proto):
		ok = st.natOut2InUnknown(p, k, now)
	case in2out:
		ok = st.natIn2OutSlow(p, i, k, now, false, node)
	default:
		ok = st.natOut2InSlow(p, i, k, now)
	}
	st.statsNATSlow(p, dir, k.proto, ok, natted, i.idx)
	return ok
}

// statsNATSlow counts what a slow path did with a packet: dropped (ok false;
// p is freed then) or translated (p.natted turned on), as the slow-path nodes
// count (nat44_ed_in2out.c, nat44_ed_out2in.c); a packet passed untranslated
// counts nothing.
func (st *state) statsNATSlow(p *pkt, dir statseg.NATDir, proto uint8, ok, nattedBefore bool, sw uint32) {
	switch {
	case !ok:
		st.statsNAT(dir, statseg.SlowPath, proto, true, sw)
	case p.natted && !nattedBefore:
		st.statsNAT(dir, statseg.SlowPath, proto, false, sw)
	}
}

// natClassify decides the direction on an interface with both roles
// (nat44-ed-classify); true means in2out.
func (st *state) natClassify(p *pkt) bool {
	h := p.ip()
	if ip4Proto(h) != protoICMP {
		k := natKey(h, p.rxVRF)
		if s := st.nat.sess.flows[k]; s != nil {
			return s.i2oKey == k
		}
	}
	dst := addr4(ip4Dst(h))
	for _, a := range st.nat.addrs {
		if !a.twice && a.addr == dst {
			return false
		}
	}
	// nat44_ed_classify.c looks the address-only mapping up first, then
	// the port-specific one; a mapping whose local address is its
	// external one (identity) leaves the packet to in2out.
	if m := st.lookupMapping(0, dst, 0); m != nil {
		return st.natMappingIsIdentityLike(m)
	}
	if m := st.lookupMapping(ip4Proto(h), dst, l4DstPort(h)); m != nil {
		return st.natMappingIsIdentityLike(m)
	}
	return true
}

// natMappingIsIdentityLike tells whether a mapping's local address is its
// external address (VPP's classify test m->local_addr ==
// m->external_addr; a load-balanced mapping has no local address).
func (st *state) natMappingIsIdentityLike(m *natMapping) bool {
	switch m.kind {
	case natIdentity:
		return true
	case natStatic:
		return m.local == st.mappingExtAddr(m)
	}
	return false
}

// natApply translates a packet by the flow it matched and accounts it. The
// caller traces the node once, with what it did (traceNAT).
func (st *state) natApply(p *pkt, s *natSess, k natFlowKey, now time.Duration) {
	rw, dir := &s.o2i, 1
	if k == s.i2oKey {
		rw, dir = &s.i2o, 0
	}
	h := p.ip()
	st.natRewritePkt(h, k, rw)
	if rw.fib != noIndex {
		p.vrf = rw.fib
	}
	p.natted = true
	if s.proto == protoTCP {
		st.natTCPState(s, dir, tcpFlags(h), now)
	}
	st.natCount(s, uint64(ip4TotalLen(h)), now)
}

// natCount is nat44_session_update_counters and nat44_session_update_lru:
// every packet refreshes last_heard.
func (st *state) natCount(s *natSess, bytes uint64, now time.Duration) {
	s.lastHeard = now
	s.pkts++
	s.bytes += bytes
	st.natLRUTouch(s)
}

// traceNAT records the one trace line of a NAT node that translated a
// packet: what it did (session hit, new session ...) and the packet it made.
func (st *state) traceNAT(p *pkt, node, what string) {
	h := p.ip()
	st.tracef(p, node, "%s: %s:%d -> %s:%d fib %d", what, addr4(ip4Src(h)), l4SrcPort(h), addr4(ip4Dst(h)), l4DstPort(h), p.vrf)
}

func (st *state) natRewritePkt(h []byte, k natFlowKey, rw *natRewrite) {
	if rw.src != k.src {
		setIP4Src(h, rw.src)
	}
	if rw.dst != k.dst {
		setIP4Dst(h, rw.dst)
	}
	if ip4Proto(h) == protoICMP {
		if rw.sport != k.sport {
			setL4SrcPort(h, rw.sport)
		}
		return
	}
	if rw.sport != k.sport {
		setL4SrcPort(h, rw.sport)
	}
	if rw.dport != k.dport {
		setL4DstPort(h, rw.dport)
	}
}

// natTCPState is nat44_set_tcp_session_state (nat44_ed_inlines.h): the
// FIN, SYN, RST and ACK flags seen are accumulated per direction; CLOSED
// -> ESTABLISHED when the flags seen both ways have exactly SYN and ACK in
// common; ESTABLISHED -> CLOSING when this direction has seen FIN or RST
// (the flags are then forgotten); CLOSING -> ESTABLISHED (reopened, the
// counters restart) like CLOSED. A new state moves the session to the tail
// of its LRU list.
func (st *state) natTCPState(s *natSess, dir int, flags uint8, now time.Duration) {
	old := s.tcpSeen[dir]
	s.tcpSeen[dir] |= flags & (tcpFIN | tcpSYN | tcpRST | tcpACK)
	if s.tcpSeen[dir] == old {
		return
	}
	both := s.tcpSeen[0]&s.tcpSeen[1] == tcpSYN|tcpACK
	switch s.tcpState {
	case tcpClosed:
		if !both {
			return
		}
		s.tcpState = tcpEstablished
	case tcpEstablished:
		if s.tcpSeen[dir]&(tcpFIN|tcpRST) == 0 {
			return
		}
		s.tcpState = tcpClosing
		s.tcpSeen = [2]uint8{}
		s.lastHeard = now
	case tcpClosing:
		if !both {
			return
		}
		s.tcpState = tcpEstablished
		s.pkts, s.bytes = 0, 0
	}
	s.lastLRU = now
	if s.tcpState == tcpEstablished {
		st.natLRUMove(s, lruTCPEstab)
	} else {
		st.natLRUMove(s, lruTCPTrans)
	}
}

// natSynOK is the session-creation check for TCP: SYN without ACK.
func natSynOK(h []byte) bool {
	if ip4Proto(h) != protoTCP {
		return true
	}
	f := tcpFlags(h)
	return f&tcpSYN != 0 && f&tcpACK == 0
}

func (st *state) newSess(h []byte, now time.Duration) *natSess {
	return &natSess{proto: ip4Proto(h), lastHeard: now, i2o: natRewrite{fib: noIndex}, o2i: natRewrite{fib: noIndex}}
}

// natBypass is create_bypass_for_fwd (nat44_ed_out2in.c): with
// forwarding on, a packet no mapping translates passes untranslated and
// is tracked by a forwarding-bypass session, whatever its TCP flags. The
// session has one flow, the reply's (dst:dport -> src:sport, receiving
// FIB); its inside and outside address are the packet's destination. A
// later packet of the same flow finds it by that reversed key and only
// refreshes it; at the session limit none is made.
func (st *state) natBypass(p *pkt, k natFlowKey, now time.Duration, node string) {
	h := p.ip()
	rev := natFlowKey{src: k.dst, dst: k.src, sport: k.dport, dport: k.sport, fib: k.fib, proto: k.proto}
	s := st.nat.sess.flows[rev]
	switch {
	case s != nil:
	case st.natFull():
		if p.tr != nil {
			st.tracef(p, node, "forwarding: pass untranslated (session limit)")
		}
		return
	default:
		s = st.natAlloc(h, now)
		s.bypass = true
		s.i2oKey, s.o2iKey = rev, rev
		s.i2o = natRewrite{src: k.dst, dst: k.src, sport: k.dport, dport: k.sport, fib: k.fib}
		s.o2i = s.i2o
		s.insideVRF, s.outsideVRF = k.fib, k.fib
		st.natAddSession(s)
		if p.tr != nil {
			st.tracef(p, node, "forwarding: bypass session created, pass untranslated")
		}
	}
	if k.proto == protoTCP {
		st.natTCPState(s, 1, tcpFlags(h), now)
	}
	st.natCount(s, 0, now)
}

// natOut2InSlow is the out2in slow path.
func (st *state) natOut2InSlow(p *pkt, i *iface, k natFlowKey, now time.Duration) bool {
	const node = "nat44-ed-out2in"
	n := &st.nat
	h := p.ip()
	dst := addr4(k.dst)
	m := st.lookupMapping(k.proto, dst, k.dport)
	if m != nil && m.kind == natIdentity {
		if p.tr != nil {
			st.tracef(p, node, "identity mapping: pass untranslated")
		}
		return true
	}
	if m == nil {
		if k.proto == protoUDP && k.dport == 68 {
			return true
		}
		if !n.forwarding {
			// VPP's out2in lets ICMP echo requests to its own addresses
			// through to be answered; TCP and UDP are dropped.
			if k.proto == protoICMP {
				if e := st.fibLookup(p.rxVRF, k.dst); e != nil && e.kind == fwdLocal {
					return true
				}
			}
			st.drop(p, node, "no translation")
			return false
		}
		st.natBypass(p, k, now, node)
		return true
	}
	// Backend (snat_static_mapping_match): the affinity record is found
	// or made, and referenced, before the checks below, so a packet they
	// drop leaves its reference behind, as in VPP.
	var local [4]byte
	lport := k.dport
	lvrf := uint32(0)
	affinity := false
	ak := natAffKey{client: k.src, ext: k.dst, proto: k.proto, port: k.dport}
	switch m.kind {
	case natStatic:
		local = m.local.As4()
		if !m.has(nat_types.NAT_IS_ADDR_ONLY) {
			lport = m.localPort
		}
		lvrf = m.vrf
	case natLB:
		idx := -1
		affinity = m.affinity > 0
		if affinity {
			idx = st.natAffinityFindLock(ak, now)
		}
		if idx < 0 || idx >= len(m.locals) {
			idx = natPickLocal(m)
			if idx < 0 {
				st.drop(p, node, "no backend with probability > 0")
				return false
			}
			if affinity {
				st.natAffinityCreateLock(ak, idx, time.Duration(m.affinity)*time.Second)
			}
		}
		l := m.locals[idx]
		local, lport, lvrf = l.addr.As4(), l.port, l.vrf
	}
	if lvrf == noIndex {
		lvrf = n.insideVRF
	}
	if !natSynOK(h) {
		st.drop(p, node, "TCP non-SYN packet cannot create a session")
		return false
	}
	if k.proto == protoICMP {
		t := ip4L4(h)[0]
		if t != icmpEchoReply && !(t == icmpEchoRequest && m.has(nat_types.NAT_IS_ADDR_ONLY)) {
			if p.tr != nil {
				st.tracef(p, node, "ICMP echo to a port mapping: pass untranslated")
			}
			return true
		}
	}
	// create_session_for_static_mapping_ed: no LRU step at the limit.
	if st.natFull() {
		st.drop(p, node, "maximum sessions exceeded")
		return false
	}
	s := st.natAlloc(h, now)
	// Twice-NAT.
	src, sport := k.src, k.sport
	twice := m.has(nat_types.NAT_IS_TWICE_NAT) || (m.has(nat_types.NAT_IS_SELF_TWICE_NAT) && k.src == local)
	if twice {
		var ok bool
		src, sport, ok = st.natTwiceAddr(m, lvrf, local, lport, k)
		if !ok {
			st.natLRURemove(s)
			st.drop(p, node, "out of twice-NAT ports")
			return false
		}
	}
	s.static, s.twice = true, twice
	s.o2iKey = k
	s.o2i = natRewrite{src: src, dst: local, sport: sport, dport: lport, fib: lvrf}
	s.i2oKey = natFlowKey{src: local, dst: src, sport: lport, dport: sport, fib: lvrf, proto: k.proto}
	s.i2o = natRewrite{src: k.dst, dst: k.src, sport: k.dport, dport: k.sport, fib: noIndex}
	if k.proto == protoICMP {
		// ICMP: the identifier is both "ports".
		s.o2i.sport, s.o2i.dport = k.sport, k.sport
		s.i2oKey.sport, s.i2oKey.dport = k.sport, k.sport
		s.i2o.sport, s.i2o.dport = k.sport, k.sport
	}
	s.insideVRF, s.outsideVRF = lvrf, k.fib
	s.affinity, s.affKey = affinity, ak
	st.natAddSession(s)
	st.natApply(p, s, k, now)
	if p.tr != nil {
		st.traceNAT(p, node, fmt.Sprintf("new static session %s:%d -> %s:%d (twice-NAT %v)", addr4(k.dst), k.dport, addr4(local), lport, twice))
	}
	return true
}

// natPickLocal draws a backend by probability: r in 1..total, the first
// local whose running sum reaches r.
func natPickLocal(m *natMapping) int {
	total := 0
	for _, l := range m.locals {
		total += int(l.prob)
	}
	if total == 0 {
		return -1
	}
	r := rand.IntN(total) + 1
	sum := 0
	for k, l := range m.locals {
		sum += int(l.prob)
		if l.prob > 0 && sum >= r {
			return k
		}
	}
	return -1
}

// natTwiceAddr picks the twice-NAT source for a new session: a twice-NAT
// pool address of the local's VRF, else of any VRF (match_pool pins one),
// with a random free port >= 1024.
func (st *state) natTwiceAddr(m *natMapping, lvrf uint32, local [4]byte, lport uint16, k natFlowKey) ([4]byte, uint16, bool) {
	var cands []netip.Addr
	for pass := 0; pass < 2 && len(cands) == 0; pass++ {
		for _, a := range st.nat.addrs {
			if !a.twice || (m.matchPool && a.addr != m.poolAddr) {
				continue
			}
			if (pass == 0 && a.vrf == lvrf) || (pass == 1 && a.vrf == noIndex) {
				cands = append(cands, a.addr)
			}
		}
	}
	for _, a := range cands {
		a4 := a.As4()
		for try := 0; try < 10; try++ {
			port := uint16(1024 + rand.IntN(65536-1024))
			if k.proto == protoICMP {
				port = k.sport
			}
			if st.nat.sess.flows[natFlowKey{src: local, dst: a4, sport: lport, dport: port, fib: lvrf, proto: k.proto}] == nil {
				return a4, port, true
			}
		}
	}
	return [4]byte{}, 0, false
}

// natIn2OutSlow is the in2out slow path, and with output set the slow path
// of the output feature.
func (st *state) natIn2OutSlow(p *pkt, i *iface, k natFlowKey, now time.Duration, output bool, node string) bool {
	n := &st.nat
	h := p.ip()
	dst := addr4(k.dst)
	m := st.lookupMapping(k.proto, dst, k.dport)
	hairpin := m != nil && m.kind == natStatic && !output
	if !output && !hairpin {
		if n.forwarding {
			if p.tr != nil {
				st.tracef(p, node, "forwarding: pass untranslated")
			}
			return true
		}
		if st.isOwnAddr(i, dst) || !st.resolvesViaOutside(p.rxVRF, k.dst) {
			return true
		}
	}
	// slow_path_ed (nat44_ed_in2out.c): at the session limit one expired
	// session may be recycled, else drop; then the static mapping by local
	// (src, sport), whose identity passes before any session check
	// (docs/dev-guide/VPP-FORWARDING.md §7 "Output feature"; §10: the
	// NodePort reply passes the NIC thanks to Contiv's identity mapping of
	// the node IP in the pod VRF); then TCP must be a SYN.
	if st.natFull() && !st.natLRUFreeOne(now) {
		st.drop(p, node, "maximum sessions exceeded")
		return false
	}
	lm := st.natByLocal(k.src, k.sport, k.proto, p.rxVRF)
	if lm != nil && lm.kind == natIdentity {
		if p.tr != nil {
			st.tracef(p, node, "identity mapping: pass untranslated")
		}
		return true
	}
	if !natSynOK(h) {
		st.drop(p, node, "TCP non-SYN packet cannot create a session")
		return false
	}
	s := st.natAlloc(h, now)
	var src [4]byte
	sport := k.sport
	// 1:1 static mapping by local: SNAT to its external address.
	if lm != nil {
		src = st.mappingExtAddr(lm).As4()
		if !lm.has(nat_types.NAT_IS_ADDR_ONLY) {
			sport = lm.ext.port
		}
		s.static = true
	} else {
		var ok bool
		src, sport, ok = st.natDynamicSNAT(i, k, p.rxVRF, output)
		if !ok {
			st.natLRURemove(s)
			st.drop(p, node, "out of ports")
			return false
		}
	}
	ndst, ndport := k.dst, k.dport
	if hairpin {
		ndst = m.local.As4()
		if !m.has(nat_types.NAT_IS_ADDR_ONLY) {
			ndport = m.localPort
		}
	}
	outVRF := noIndex
	if !output {
		outVRF = st.natOutsideVRF(k.dst)
	}
	keyVRF := outVRF
	if output {
		keyVRF = i.vrf[0]
	}
	s.i2oKey = k
	s.i2o = natRewrite{src: src, dst: ndst, sport: sport, dport: ndport, fib: outVRF}
	s.o2iKey = natFlowKey{src: ndst, dst: src, sport: ndport, dport: sport, fib: keyVRF, proto: k.proto}
	s.o2i = natRewrite{src: k.dst, dst: k.src, sport: k.dport, dport: k.sport, fib: k.fib}
	if k.proto == protoICMP {
		s.o2iKey.dport, s.o2iKey.sport = sport, sport
		s.i2o.dport = sport
		s.o2i.sport, s.o2i.dport = k.sport, k.sport
	}
	s.insideVRF, s.outsideVRF = k.fib, keyVRF
	st.natAddSession(s)
	st.natApply(p, s, k, now)
	if output {
		p.vrf = p.rxVRF // the output feature never changes the table
	}
	if p.tr != nil {
		st.traceNAT(p, node, fmt.Sprintf("new session %s:%d -> %s:%d", addr4(k.src), k.sport, addr4(src), sport))
	}
	return true
}

// natByLocal finds a static or identity mapping by its local side, in the
// receiving VRF, then inside_vrf, then outside_vrf.
func (st *state) natByLocal(a [4]byte, port uint16, proto uint8, vrf uint32) *natMapping {
	n := &st.nat
	addr := addr4(a)
	for _, v := range [3]uint32{vrf, n.insideVRF, n.outsideVRF} {
		if m := n.byLocal[natLocalKey{addr: addr, port: port, proto: proto, vrf: v}]; m != nil && m.kind != natLB {
			return m
		}
		if m := n.byLocal[natLocalKey{addr: addr, vrf: v}]; m != nil && m.kind != natLB {
			return m
		}
	}
	return nil
}

// natDynamicSNAT picks the pool address and port: the pool of the VRF,
// else of any VRF (the output feature prefers addresses of its interface);
// the first pick hashed from the source; the source port kept if free,
// else up to 10 random ports in 1024..65535.
func (st *state) natDynamicSNAT(i *iface, k natFlowKey, vrf uint32, output bool) ([4]byte, uint16, bool) {
	var cands [16][4]byte
	nc := 0
	add := func(pred func(a natAddr) bool) {
		for _, a := range st.nat.addrs {
			if !a.twice && nc < len(cands) && pred(a) {
				cands[nc] = a.addr.As4()
				nc++
			}
		}
	}
	if output {
		add(func(a natAddr) bool {
			for _, x := range i.addrs {
				if x.Addr() == a.addr {
					return true
				}
			}
			return false
		})
	}
	if nc == 0 {
		add(func(a natAddr) bool { return a.vrf == vrf })
	}
	if nc == 0 {
		add(func(a natAddr) bool { return a.vrf == noIndex })
	}
	if nc == 0 {
		return [4]byte{}, 0, false
	}
	outFIB := i.vrf[0]
	if !output {
		outFIB = st.natOutsideVRF(k.dst)
	}
	first := int(u32(k.src) % uint32(nc))
	for c := 0; c < nc; c++ {
		a := cands[(first+c)%nc]
		free := func(port uint16) bool {
			ok := st.nat.sess.flows[natFlowKey{src: k.dst, dst: a, sport: k.dport, dport: port, fib: outFIB, proto: k.proto}]
			return ok == nil
		}
		if free(k.sport) {
			return a, k.sport, true
		}
		for try := 0; try < 10; try++ {
			port := uint16(1024 + rand.IntN(65536-1024))
			if free(port) {
				return a, port, true
			}
		}
	}
	return [4]byte{}, 0, false
}

// natOutsideVRF is outside_vrf, or the first VRF of an outside interface
// that resolves the destination.
func (st *state) natOutsideVRF(dst [4]byte) uint32 {
	n := &st.nat
	if e := st.fibLookup(n.outsideVRF, dst); e != nil && e.kind != fwdDrop {
		return n.outsideVRF
	}
	for _, sw := range n.sortedIfaces() {
		if n.ifaces[sw].flags&natOutside == 0 {
			continue
		}
		if i := st.ifaces[sw]; i != nil {
			if e := st.fibLookup(i.vrf[0], dst); e != nil && e.kind != fwdDrop {
				return i.vrf[0]
			}
		}
	}
	return n.outsideVRF
}

// resolvesViaOutside tells whether dst is routed out of a NAT outside
// interface.
func (st *state) resolvesViaOutside(vrf uint32, dst [4]byte) bool {
	e := st.fibLookup(vrf, dst)
	if e == nil || e.kind != fwdPaths {
		return false
	}
	for _, path := range e.paths {
		if ni := st.nat.ifaces[path.SwIfIndex]; ni != nil && ni.flags&natOutside != 0 {
			return true
		}
	}
	return false
}

func (st *state) isOwnAddr(i *iface, a netip.Addr) bool {
	for _, x := range st.effectiveAddrs(i) {
		if x.Addr() == a {
			return true
		}
	}
	return false
}

// natOutputFeature is nat44-ed-in2out-output on egress interface o; false
// means the packet was dropped.
func (st *state) natOutputFeature(p *pkt, o *iface) bool {
	const node = "nat44-ed-in2out-output"
	n := &st.nat
	h := p.ip()
	if icmpErrorInner(h) != nil {
		st.natICMPError(p, node, false)
		return true
	}
	if !natTranslatable(h) {
		return true
	}
	k := natKey(h, p.rxVRF)
	now := st.uptime()
	if s := n.sess.flows[k]; s != nil {
		if !st.natExpired(s, now) {
			if s.bypass {
				return true
			}
			vrf := p.vrf
			st.natApply(p, s, k, now)
			p.vrf = vrf
			st.statsNAT(statseg.In2Out, statseg.FastPath, k.proto, false, o.idx)
			if p.tr != nil {
				st.traceNAT(p, node, "session hit")
			}
			return true
		}
		st.natDelSession(s)
	}
	if natUnknownProto(k.proto) {
		natted := p.natted
		ok := st.natIn2OutUnknown(p, k, now, true, node)
		st.statsNATSlow(p, statseg.In2Out, k.proto, ok, natted, o.idx)
		return ok
	}
	// An SNAT session in the egress VRF: pass untouched.
	ke := k
	ke.fib = o.vrf[0]
	if n.sess.flows[ke] != nil {
		return true
	}
	// A reverse DNAT session in the ingress VRF: pass untouched, unless it is a
	// forwarding bypass session or the packet came in on an output-feature
	// interface (hairpinning); those go on to the slow path and get an SNAT
	// session (nat44_ed_in2out.c nat44_ed_not_translate_output_feature, v25.10:
	// na44_ed_is_fwd_bypass_session returns 0, then the output_feature_interfaces
	// loop, where every output interface is inside and outside).
	// What VPP itself sends (echo replies, ICMP errors) carries local0 as its
	// receive interface (ping.c ip4_icmp_echo_request, icmp4.c ip4_icmp_error).
	rx := p.rx
	if p.localOrig {
		rx = 0
	}
	rev := natFlowKey{src: k.dst, dst: k.src, sport: k.dport, dport: k.sport, fib: p.rxVRF, proto: k.proto}
	if s := n.sess.flows[rev]; s != nil && !s.bypass && !st.natIsOutputIf(rx) {
		return true
	}
	if k.proto == protoUDP && k.dst == [4]byte{255, 255, 255, 255} && k.dport == 67 {
		return true
	}
	natted := p.natted
	ok := st.natIn2OutSlow(p, o, k, now, true, node)
	st.statsNATSlow(p, statseg.In2Out, k.proto, ok, natted, o.idx)
	return ok
}

// --- sessions for the API ---

// toSession exports a session for dumps and tests.
func (st *state) toSession(s *natSess, now time.Duration) Session {
	if s.injected != nil {
		c := *s.injected
		c.TotalPkts += s.pkts
		c.TotalBytes += s.bytes
		return c
	}
	out := Session{
		Protocol:    s.proto,
		InsideAddr:  netip.AddrPortFrom(addr4(s.i2oKey.src), s.i2oKey.sport),
		OutsideAddr: netip.AddrPortFrom(addr4(s.i2o.src), s.i2o.sport),
		ExtHostAddr: netip.AddrPortFrom(addr4(s.i2o.dst), s.i2o.dport),
		InsideVRF:   s.insideVRF,
		OutsideVRF:  s.outsideVRF,
		Static:      s.static,
		TwiceNAT:    s.twice,
		LastHeard:   uint64(s.lastHeard / time.Second),
		TotalBytes:  s.bytes,
		TotalPkts:   s.pkts,
	}
	if s.twice {
		out.ExtHostAddr = netip.AddrPortFrom(addr4(s.o2iKey.src), s.o2iKey.sport)
		out.ExtHostNATAddr = netip.AddrPortFrom(addr4(s.i2oKey.dst), s.i2oKey.dport)
	}
	if natUnknownProto(s.proto) {
		// VPP stores the protocol number as both ports of such a session,
		// in host order in fields the API sends as they are (network
		// order): a little-endian VPP dumps 132 as 0x8400.
		p := uint16(s.proto) << 8
		out.InsideAddr = netip.AddrPortFrom(out.InsideAddr.Addr(), p)
		out.OutsideAddr = netip.AddrPortFrom(out.OutsideAddr.Addr(), p)
	}
	if now >= s.lastHeard {
		out.TimeSinceLastHeard = uint64((now - s.lastHeard) / time.Second)
	}
	out.TimedOut = st.natExpired(s, now)
	return out
}

// natSessFromInjected builds the flows of an injected session.
func natSessFromInjected(c *Session) *natSess {
	in, out, ext, extNAT := c.InsideAddr, c.OutsideAddr, c.ExtHostAddr, c.extNAT()
	s := &natSess{proto: c.Protocol, static: c.Static, twice: c.TwiceNAT, insideVRF: c.InsideVRF, outsideVRF: c.OutsideVRF, injected: c}
	s.i2oKey = natFlowKey{src: in.Addr().As4(), dst: extNAT.Addr().As4(), sport: in.Port(), dport: extNAT.Port(), fib: c.InsideVRF, proto: c.Protocol}
	s.i2o = natRewrite{src: out.Addr().As4(), dst: ext.Addr().As4(), sport: out.Port(), dport: ext.Port(), fib: c.OutsideVRF}
	s.o2iKey = natFlowKey{src: ext.Addr().As4(), dst: out.Addr().As4(), sport: ext.Port(), dport: out.Port(), fib: c.OutsideVRF, proto: c.Protocol}
	s.o2i = natRewrite{src: extNAT.Addr().As4(), dst: in.Addr().As4(), sport: extNAT.Port(), dport: in.Port(), fib: c.InsideVRF}
	return s
}

// icmpErrorInner returns the packet an ICMP error (destination
// unreachable, time exceeded, parameter problem) carries, nil if h is not
// such an error with a whole inner IPv4 header and 8 bytes of L4.
func icmpErrorInner(h []byte) []byte {
	if ip4Proto(h) != protoICMP || !l4Complete(h) {
		return nil
	}
	l4 := ip4L4(h)[:ip4TotalLen(h)-ip4IHL(h)]
	switch l4[0] {
	case icmpUnreach, icmpTimeExceeded, 12:
	default:
		return nil
	}
	in := l4[8:]
	if len(in) < ip4HdrLen || in[0]>>4 != 4 || ip4IHL(in) < ip4HdrLen || len(in) < ip4IHL(in)+8 {
		return nil
	}
	return in
}

// natICMPError translates an ICMP error by the session of the packet it
// carries: that packet went out translated, so the flow matching its
// reverse rewrites the error's destination and the embedded packet back,
// as VPP's NAT does. Without a session it passes untranslated.
func (st *state) natICMPError(p *pkt, node string, setVRF bool) {
	h := p.ip()
	in := icmpErrorInner(h)
	ihl := ip4IHL(in)
	proto := ip4Proto(in)
	var sport, dport uint16
	switch proto {
	case protoTCP, protoUDP:
		sport, dport = be16(in[ihl:]), be16(in[ihl+2:])
	case protoICMP:
		if !icmpIsEcho(in[ihl]) {
			return
		}
		sport = be16(in[ihl+4:])
		dport = sport
	default:
		return
	}
	k := natFlowKey{src: ip4Dst(in), dst: ip4Src(in), sport: dport, dport: sport, fib: p.rxVRF, proto: proto}
	s := st.nat.sess.flows[k]
	if s == nil || s.bypass {
		return
	}
	rw := &s.o2i
	if k == s.i2oKey {
		rw = &s.i2o
	}
	// The embedded packet: its source becomes rw.dst:dport, its
	// destination rw.src:sport.
	oldSrc, oldDst := ip4Src(in), ip4Dst(in)
	copy(in[12:16], rw.dst[:])
	copy(in[16:20], rw.src[:])
	switch proto {
	case protoTCP, protoUDP:
		put16(in[ihl:], rw.dport)
		put16(in[ihl+2:], rw.sport)
		if proto == protoUDP && be16(in[ihl+6:]) != 0 {
			// The UDP checksum is in the 8 bytes carried: keep it right.
			c := in[ihl+6 : ihl+8]
			csumAdjust32(c, oldSrc, rw.dst)
			csumAdjust32(c, oldDst, rw.src)
			csumAdjust(c, sport, rw.dport)
			csumAdjust(c, dport, rw.sport)
		}
	case protoICMP:
		put16(in[ihl+4:], rw.dport)
	}
	ip4SetChecksum(in)
	if ip4Dst(h) == oldSrc {
		setIP4Dst(h, rw.dst)
	}
	if ip4Src(h) == oldDst {
		setIP4Src(h, rw.src)
	}
	setL4Checksum(h)
	if setVRF && rw.fib != noIndex {
		p.vrf = rw.fib
	}
	p.natted = true
	if p.tr != nil {
		st.tracef(p, node, "ICMP error translated by session: inner %s:%d -> %s:%d", addr4(rw.dst), rw.dport, addr4(rw.src), rw.sport)
	}
}

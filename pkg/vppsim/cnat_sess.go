package vppsim

// cnat sessions (cnat_session.c, cnat_node.h; spec vpp-ip6-cnat-stn-stats.md
// §2.4): a forward and a return session per translated flow, sharing one
// timestamp, the source ports allocated from 49152 per protocol, and the
// client references sessions hold.

import (
	"math/bits"
	"net/netip"
	"time"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/ip_types"
)

// Session locations (cnat_session_location_t).
const (
	cnatLocInput  = uint8(0)
	cnatLocOutput = uint8(1)
	cnatLocFIB    = uint8(0xff)
)

// Session lifetimes (cnat_types.c defaults: session-max-age, tcp-max-age)
// and the lifetime of a TCP flow seen closing (cnat_tcp_update_session_lifetime).
const (
	cnatSessionMaxAge = 30 * time.Second
	cnatTCPMaxAge     = 3600 * time.Second
	cnatTCPClosingAge = 5 * time.Second
)

// cnatMinSrcPort is where port allocation starts (MIN_SRC_PORT, 0xC000).
const cnatMinSrcPort = 49152

// cnatSessKey is a session's key (cnat_session_t key): the packet's 5-tuple
// (the family is the addresses') and the location.
type cnatSessKey struct {
	src, dst     netip.Addr
	sport, dport uint16
	proto        uint8
	loc          uint8
}

// cnatSess is one session: its key and the rewrite it applies.
type cnatSess struct {
	key              cnatSessKey
	newSrc, newDst   netip.Addr
	newSport, newDpt uint16
	ts               *cnatTimestamp
	// lb is the translation a forward session load-balances with, printed
	// "lb:<n>" where VPP prints cs_lbi, the backend's forwarding DPO index
	// (the simulator has none); -1 for return and SNAT sessions (INDEX_INVALID).
	lb int64
	// hasSNAT (CNAT_SESSION_FLAG_HAS_SNAT, return sessions): the
	// translated packet is looked up again (its destination changed).
	hasSNAT  bool
	noClient bool // CNAT_SESSION_FLAG_NO_CLIENT: holds no client reference
	// noNAT (CNAT_SESSION_FLAG_NO_NAT, cnat-input's forward sessions of a
	// NO_NAT path): packets go untranslated to the backend newDst.
	noNAT bool
	// allocPort is set when the session's new source port was allocated
	// (CNAT_SESSION_FLAG_ALLOC_PORT): freeing the session frees it.
	allocPort bool
	seq       uint64 // creation order, for dumps
}

// cnatTimestamp is the shared last-seen time and lifetime of a flow's
// sessions (cnat_timestamp_t), freed with its last session.
type cnatTimestamp struct {
	last time.Time
	life time.Duration
	refs int
}

// expiry is when the flow's sessions are freed.
func (t *cnatTimestamp) expiry() time.Time { return t.last.Add(t.life) }

// cnatTCPLifetime is cnat_tcp_update_session_lifetime: a translated TCP
// packet with FIN or RST sets the flow's lifetime to 5 s, one with SYN and
// ACK to tcp-max-age.
func cnatTCPLifetime(ts *cnatTimestamp, flags uint8) {
	if flags&(tcpFIN|tcpRST) != 0 {
		ts.life = cnatTCPClosingAge
	}
	if flags&tcpSYN != 0 && flags&tcpACK != 0 {
		ts.life = cnatTCPMaxAge
	}
}

// cnatSessions is the session table and the port allocators.
type cnatSessions struct {
	m   map[cnatSessKey]*cnatSess
	seq uint64
	// ports are the allocated source ports per IP protocol
	// (cnat_src_port_allocator_t: TCP, UDP and ICMP/ICMP6 have one each).
	ports map[uint8]*portBitmap
	// lastScan is when the scanner last ran (every second, cnat_scanner.c).
	lastScan time.Time
}

// add stores a session, replacing any of the same key.
func (s *cnatSessions) add(se *cnatSess) {
	if s.m == nil {
		s.m = map[cnatSessKey]*cnatSess{}
	}
	s.seq++
	se.seq = s.seq
	if old := s.m[se.key]; old != nil {
		old.ts.refs--
	}
	s.m[se.key] = se
}

// addIfAbsent stores a session unless one with its key exists
// (clib_bihash add "but don't overwrite"); false if it existed.
func (s *cnatSessions) addIfAbsent(se *cnatSess) bool {
	if s.m[se.key] != nil {
		return false
	}
	s.add(se)
	return true
}

// cnatPortAllocatorProto tells whether proto has a port allocator
// (cnat_get_src_port_allocator): TCP, UDP, ICMP and ICMPv6.
func cnatPortAllocatorProto(proto uint8) bool {
	return proto == protoTCP || proto == protoUDP || proto == protoICMP || proto == protoICMP6
}

// allocPort allocates the first free port from 49152 upward for proto
// (cnat_allocate_port with port 0); false when none is left or proto has no
// allocator.
func (s *cnatSessions) allocPort(proto uint8) (uint16, bool) {
	if !cnatPortAllocatorProto(proto) {
		return 0, false
	}
	if s.ports == nil {
		s.ports = map[uint8]*portBitmap{}
	}
	b := s.ports[proto]
	if b == nil {
		b = &portBitmap{}
		s.ports[proto] = b
	}
	// clib_bitmap_next_clear stops below UINT16_MAX: 65535 is never handed out.
	p, ok := b.nextClear(cnatMinSrcPort)
	if !ok || p == 0xffff {
		return 0, false
	}
	b.set(p, true)
	return p, true
}

// portBitmap is a set of ports (VPP's clib_bitmap of the allocator).
type portBitmap [1024]uint64

func (b *portBitmap) set(p uint16, on bool) {
	if on {
		b[p/64] |= 1 << (p % 64)
	} else {
		b[p/64] &^= 1 << (p % 64)
	}
}

// nextClear returns the first port ≥ from not in the set.
func (b *portBitmap) nextClear(from uint16) (uint16, bool) {
	for w := int(from / 64); w < len(b); w++ {
		free := ^b[w]
		if w == int(from/64) {
			free &^= (1 << (from % 64)) - 1
		}
		if free != 0 {
			return uint16(w*64 + bits.TrailingZeros64(free)), true
		}
	}
	return 0, false
}

// free frees one session (cnat_session_free): its allocated port, its
// client reference (the client of its key destination) and its share of the
// timestamp.
func (s *cnatSessions) free(c *cnatState, se *cnatSess) {
	if s.m[se.key] != se {
		return
	}
	delete(s.m, se.key)
	if se.allocPort {
		if b := s.ports[se.key.proto]; b != nil {
			b.set(se.newSport, false)
		}
	}
	if !se.noClient {
		if cc := c.clients[se.key.dst]; cc != nil {
			cc.sessRefs--
			c.clientRelease(cc)
		}
	}
	se.ts.refs--
}

// purge frees every session (cnat_session_purge).
func (s *cnatSessions) purge(c *cnatState) {
	for _, se := range s.sorted() {
		s.free(c, se)
	}
}

// scan frees the sessions expired at now, the forward and return sessions
// of a flow together (cnat_session_scan frees the session and its reverse).
// VPP's scanner runs every second; the simulator scans when the state is
// used (a packet, a dump, a CLI) and at most once per second of the clock,
// with VPP's rule: a session goes once now is past its expiry.
func (s *cnatSessions) scan(c *cnatState, now time.Time) {
	if len(s.m) == 0 || (!s.lastScan.IsZero() && now.Sub(s.lastScan) < time.Second && !now.Before(s.lastScan)) {
		return
	}
	s.lastScan = now
	for _, se := range s.sorted() {
		if now.After(se.ts.expiry()) {
			s.free(c, se)
		}
	}
}

// sorted returns the sessions in creation order.
func (s *cnatSessions) sorted() []*cnatSess {
	return sortedValues(s.m, func(se *cnatSess) uint64 { return se.seq })
}

// hCnatSessionDump lists the sessions as cnat_session_send_details fills
// them: src and dst from the key, new the translated destination, the
// protocol and location; the timestamp is not filled.
func hCnatSessionDump(cl *call, _ *cnat.CnatSessionDump) {
	st := cl.st
	st.cnat.sess.scan(&st.cnat, st.s.clock.Now())
	ep := func(a netip.Addr, port uint16) cnat.CnatEndpoint {
		e := cnat.CnatEndpoint{Addr: addrToAPI(a), SwIfIndex: 0xffffffff, Port: port, IfAf: ip_types.ADDRESS_IP4}
		if a.Is6() {
			e.IfAf = ip_types.ADDRESS_IP6
		}
		return e
	}
	for _, se := range st.cnat.sess.sorted() {
		cl.send(&cnat.CnatSessionDetails{Session: cnat.CnatSession{
			Src:      ep(se.key.src, se.key.sport),
			Dst:      ep(se.key.dst, se.key.dport),
			New:      ep(se.newDst, se.newDpt),
			IPProto:  ip_types.IPProto(se.key.proto),
			Location: se.key.loc,
		}})
	}
}

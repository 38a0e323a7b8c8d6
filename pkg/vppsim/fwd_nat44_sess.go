package vppsim

import (
	"container/list"
	"time"
)

// NAT44-ED session lifetime and ClientIP affinity, as VPP 25.10 keeps them
// (docs/dev-guide/VPP-FORWARDING.md §7 "Session lifetime" and
// "Affinity"). Nothing runs in the background: a session is freed when a
// packet touches it after its timeout, when the API deletes it, when its
// mapping goes, or by the LRU step of every session allocation
// (nat44_ed_inlines.h nat_ed_session_alloc -> nat_lru_free_one), which
// frees at most one expired session: the oldest of the first LRU list,
// in the order TCP transitory, UDP, other protocols, ICMP, TCP
// established, whose oldest session has expired.

// natLRU names the per-thread LRU lists of sessions.
type natLRU uint8

const (
	lruTCPTrans natLRU = iota
	lruUDP
	lruUnknown
	lruICMP
	lruTCPEstab
	natLRUCount
)

// natLRUFor is the list a new session of proto starts in
// (nat_ed_lru_insert): TCP sessions start transitory.
func natLRUFor(proto uint8) natLRU {
	switch proto {
	case protoTCP:
		return lruTCPTrans
	case protoUDP:
		return lruUDP
	case protoICMP:
		return lruICMP
	}
	return lruUnknown
}

// natLRUInsert puts a new session at the tail of its list.
func (st *state) natLRUInsert(s *natSess, now time.Duration) {
	t := &st.nat.sess
	if t.lru[0] == nil {
		for k := range t.lru {
			t.lru[k] = list.New()
		}
	}
	s.lruList = natLRUFor(s.proto)
	s.lruElem = t.lru[s.lruList].PushBack(s)
	s.lastLRU = now
}

// natLRUMove moves a session to the tail of list l.
func (st *state) natLRUMove(s *natSess, l natLRU) {
	t := &st.nat.sess
	if s.lruElem == nil {
		return
	}
	t.lru[s.lruList].Remove(s.lruElem)
	s.lruList = l
	s.lruElem = t.lru[l].PushBack(s)
}

// natLRURemove takes a freed session off its list.
func (st *state) natLRURemove(s *natSess) {
	if s.lruElem != nil {
		st.nat.sess.lru[s.lruList].Remove(s.lruElem)
		s.lruElem = nil
	}
}

// natLRUTouch is nat44_session_update_lru: a session heard from more than
// a second after its last LRU update goes to the tail of its list.
func (st *state) natLRUTouch(s *natSess) {
	if s.lruElem != nil && s.lastHeard > s.lastLRU+time.Second {
		st.natLRUMove(s, s.lruList)
		s.lastLRU = s.lastHeard
	}
}

// natLRUFreeOne is nat_lru_free_one: the oldest session of each list in
// turn, the first that has expired is freed; true if one was.
func (st *state) natLRUFreeOne(now time.Duration) bool {
	t := &st.nat.sess
	if t.lru[0] == nil {
		return false
	}
	for l := range natLRUCount {
		e := t.lru[l].Front()
		if e == nil {
			continue
		}
		s := e.Value.(*natSess)
		if st.natExpired(s, now) {
			st.natDelSession(s)
			return true
		}
		// Not expired: VPP puts it back at the head and tries the next
		// list (nothing to do here).
	}
	return false
}

// natFull tells whether the session table is at its limit
// (nat44_ed_maximum_sessions_exceeded).
func (st *state) natFull() bool {
	limit := int(st.nat.sessionMax)
	if limit == 0 {
		limit = natDefaultSessions
	}
	return st.nat.sess.live >= limit
}

// natAlloc is nat_ed_session_alloc: the LRU step, then a new session of
// the packet's protocol at the tail of its list. The caller fills in the
// flows and adds it (natAddSession).
func (st *state) natAlloc(h []byte, now time.Duration) *natSess {
	st.natLRUFreeOne(now)
	s := st.newSess(h, now)
	st.natLRUInsert(s, now)
	return s
}

// natAffinity is a ClientIP affinity record of a load-balanced mapping
// (nat44_ed_affinity.c): the backend a client is pinned to, how many
// sessions (and failed session creations) hold it, and, once none does,
// when it expires.
type natAffinity struct {
	key    natAffKey
	local  int    // index of the backend in the mapping's locals
	ref    uint32 // u32 in VPP
	expire time.Duration
	sticky time.Duration // the mapping's affinity timeout
}

// natAffKey is what an affinity record is keyed by: client, service
// address, protocol and port.
type natAffKey struct {
	client, ext [4]byte
	proto       uint8
	port        uint16
}

// natAffinityFindLock is nat_affinity_find_and_lock: a record held by no
// session whose expiry has passed (strictly) is deleted and not found;
// otherwise it gains a reference and gives its backend. -1: none.
func (st *state) natAffinityFindLock(k natAffKey, now time.Duration) int {
	t := &st.nat.sess
	a := t.aff[k]
	if a == nil {
		return -1
	}
	if a.ref == 0 && a.expire < now {
		delete(t.aff, k)
		return -1
	}
	a.ref++
	return a.local
}

// natAffinityCreateLock is nat_affinity_create_and_lock: a new record
// with one reference; an existing key is left alone (VPP logs it).
func (st *state) natAffinityCreateLock(k natAffKey, local int, sticky time.Duration) {
	t := &st.nat.sess
	if t.aff[k] != nil {
		return
	}
	t.aff[k] = &natAffinity{key: k, local: local, ref: 1, sticky: sticky}
}

// natAffinityUnlock is nat_affinity_unlock, run when an affinity session
// is freed: the last reference going starts the affinity timeout.
func (st *state) natAffinityUnlock(k natAffKey, now time.Duration) {
	a := st.nat.sess.aff[k]
	if a == nil {
		return
	}
	a.ref--
	if a.ref == 0 {
		a.expire = a.sticky + now
	}
}

// natAffinityFlush is nat_affinity_flush_service: every record of a
// mapping goes.
func (st *state) natAffinityFlush(m *natMapping) {
	ext := m.ext.addr.As4()
	for k := range st.nat.sess.aff {
		if k.ext == ext && k.port == m.ext.port && k.proto == m.ext.proto {
			delete(st.nat.sess.aff, k)
		}
	}
}

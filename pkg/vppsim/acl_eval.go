package vppsim

import (
	"fmt"
	"time"

	"go.fd.io/govpp/binapi/acl_types"
)

// TCP flags the session tracking looks at.
const (
	tcpFlagACK = 0x10
)

// aclEvaluate decides whether the ACL plugin lets a packet pass the input
// (input = true) or output feature of an interface, as VPP 25.10's
// acl-plugin-{in,out}-ip4-fa nodes do:
//
//  1. an interface without ACLs in that direction lets everything pass;
//  2. a packet of an existing session (created by a permit+reflect rule on
//     this interface, either direction) passes;
//  3. otherwise the ACLs of the list are evaluated in order, their rules in
//     order, and the first matching rule decides: deny drops, permit passes,
//     permit+reflect passes and creates a session whose reverse flow passes
//     the same interface in the opposite direction;
//  4. a packet no rule matches is dropped.
//
// reason explains the decision (for counters and traces).
func (st *state) aclEvaluate(swIfIndex uint32, input bool, f *aclFlow) (permit bool, reason string) {
	b := st.aclBinding(swIfIndex)
	var list []uint32
	if b != nil {
		list = b.output
		if input {
			list = b.input
		}
	}
	if len(list) == 0 {
		return true, "no ACL"
	}
	now := st.aclNow()
	key := aclKey(swIfIndex, input, f)
	if s := st.acl.sessions[key]; s != nil {
		if !s.expired(f.Proto, now) {
			s.last = now
			if f.Proto == 6 && f.TCPFlags&tcpFlagACK != 0 {
				s.established = true
			}
			return true, "session"
		}
		delete(st.acl.sessions, key)
		delete(st.acl.sessions, reverseKey(key))
	}
	for _, idx := range list {
		e := st.acl.acls[idx]
		if e == nil {
			continue
		}
		for n, r := range e.rules {
			if !r.matches(f) {
				continue
			}
			// The first match of a packet without a session counts on
			// the rule (dataplane_node.c: is_match &&
			// interface_acl_counters_enabled; a session hit returned
			// above and counts nothing).
			st.statsACLMatch(idx, n, f.Bytes)
			where := fmt.Sprintf("acl %d (%s) rule %d", idx, e.tag, n)
			switch r.action {
			case acl_types.ACL_ACTION_API_DENY:
				return false, where + ": deny"
			case acl_types.ACL_ACTION_API_PERMIT_REFLECT:
				s := &aclSession{last: now}
				st.acl.sessions[key] = s
				st.acl.sessions[reverseKey(key)] = s
				return true, where + ": permit+reflect"
			}
			return true, where + ": permit"
		}
	}
	return false, "no ACL rule matched"
}

// aclNow is the time of session timeouts: the ACL state's own clock if a
// test set one, else the simulator's.
func (st *state) aclNow() time.Time {
	if st.acl.now != nil || st.s == nil {
		return st.acl.clock()
	}
	return st.s.clock.Now()
}

func aclKey(sw uint32, input bool, f *aclFlow) aclSessionKey {
	k := aclSessionKey{sw: sw, input: input, src: f.Src, dst: f.Dst, proto: f.Proto, sp: f.SrcPort, dp: f.DstPort}
	if f.Proto == 1 || f.Proto == 58 {
		k.sp, k.dp = uint16(f.ICMPType), uint16(f.ICMPCode)
	}
	return k
}

func reverseKey(k aclSessionKey) aclSessionKey {
	return aclSessionKey{sw: k.sw, input: !k.input, src: k.dst, dst: k.src, proto: k.proto, sp: k.dp, dp: k.sp}
}

// expired tells whether the session timed out: TCP after 120 s until the
// reverse direction acknowledged, 24 h after; other protocols after 600 s.
func (s *aclSession) expired(proto uint8, now time.Time) bool {
	idle := aclUDPIdle
	if proto == 6 {
		idle = aclTCPTransient
		if s.established {
			idle = aclTCPIdle
		}
	}
	return now.Sub(s.last) > idle
}

// matches tells whether a rule matches a flow: same address family, source
// and destination in the prefixes, and for a rule with a protocol, the same
// protocol, ports (ICMP type and code) in range and, for TCP, the masked
// flags. A non-first fragment carries no L4 header and never matches a rule
// that restricts ports.
func (r *aclRule) matches(f *aclFlow) bool {
	if r.src.Addr().Is4() != f.Src.Is4() || !r.src.Contains(f.Src) || !r.dst.Contains(f.Dst) {
		return false
	}
	if r.proto == 0 {
		return true
	}
	if r.proto != f.Proto {
		return false
	}
	if f.Fragment {
		// l4_match_nonfirst_fragment (on by default, acl.c): a non-first
		// fragment matches on the protocol alone (public_inlines.h
		// single_acl_match_5tuple; the hash lookup does the same).
		return true
	}
	if f.NoL4 {
		return false // l4_valid is 0: a rule with a protocol is skipped
	}
	sp, dp := f.SrcPort, f.DstPort
	if f.Proto == 1 || f.Proto == 58 {
		sp, dp = uint16(f.ICMPType), uint16(f.ICMPCode)
	}
	if sp < r.sportLo || sp > r.sport || dp < r.dportLo || dp > r.dport {
		return false
	}
	if f.Proto == 6 && f.TCPFlags&r.flagsMask != r.flagsValue {
		return false
	}
	return true
}

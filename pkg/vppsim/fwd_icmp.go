package vppsim

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"time"
)

// VPP's two rate limits on ICMP errors (docs/dev-guide/VPP-FORWARDING.md
// §3). Both hash the offending packet's (source, destination) with seeds
// redrawn at random when a window has passed, and let one error through
// per hash bucket and window:
//
//   - ip4-null (dpo/ip_null_dpo.c ip_null_dpo_switch), the node of the
//     ICMP_UNREACH and ICMP_PROHIBIT paths: a window of 0.1 s and a
//     256-bit bitmap of which its index arithmetic (bucket = hash & 255,
//     word = bucket / 64, bit = word) uses 4 bits only, so at most 4
//     errors leave per 0.1 s whatever the addresses, fewer when pairs
//     collide;
//   - ip4-icmp-error (ip/icmp4.c ip4_icmp_error, util/throttle.h), which
//     every ICMP error passes: a window of 10 µs and 512 buckets.
const (
	ip4NullWindow     = 100 * time.Millisecond
	ip4NullBuckets    = 4
	icmpErrorWindow   = 10 * time.Microsecond
	icmpErrorBuckets  = 512
	icmpThrottleWords = icmpErrorBuckets / 64
)

// icmpThrottle is one of VPP's ICMP rate limiters. VPP draws its seeds at
// random; the simulator draws them from a generator of fixed seed, so
// that a run is reproducible (which pairs share a bucket in a window
// depends only on the packets and the clock).
type icmpThrottle struct {
	window  time.Duration
	buckets uint64 // a power of two, at most 64*icmpThrottleWords
	reset   time.Duration
	started bool
	seed    uint64
	seen    [icmpThrottleWords]uint64
	rng     *rand.Rand
}

// newICMPThrottle returns a rate limiter with its own seed generator.
func newICMPThrottle(window time.Duration, buckets uint64, stream uint64) icmpThrottle {
	return icmpThrottle{window: window, buckets: buckets, rng: rand.New(rand.NewPCG(0x1c3a, stream))}
}

// limited tells whether an error about a packet from src to dst must be
// suppressed at uptime now, and records it otherwise. As in VPP, the
// window restarts (new seed, empty bitmap) at the first packet more than
// window after the last restart.
func (t *icmpThrottle) limited(now time.Duration, src, dst [4]byte) bool {
	return t.limitedKey(now, uint64(u32(dst))<<32|uint64(u32(src)))
}

// limitedKey is limited for a key already folded from the addresses (the
// IPv6 throttles fold 128-bit addresses, fwd_icmp6.go).
func (t *icmpThrottle) limitedKey(now time.Duration, key uint64) bool {
	if !t.started || now-t.reset > t.window {
		t.started, t.reset, t.seed = true, now, t.rng.Uint64()
		clear(t.seen[:])
	}
	b := mix64(t.seed^key) & (t.buckets - 1)
	w, m := b/64, uint64(1)<<(b%64)
	was := t.seen[w]&m != 0
	t.seen[w] |= m
	return was
}

// mix64 is a 64-bit finalizer (good avalanche; VPP uses its own hashes,
// whose values do not matter as the seeds are random).
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// ipNull is VPP's ip4-null / ip6-null node for ICMP_UNREACH (prohibit
// false: ICMP 3/1 host unreachable, ICMPv6 1/0 no route) and
// ICMP_PROHIBIT (ICMP 3/10, ICMPv6 1/1 administratively prohibited) paths:
// rate-limited per (src, dst), then an ICMP error; the packet is dropped
// either way. ip4-null and ip6-null share one throttle: it is the static
// state of the inline ip_null_dpo_switch (dpo/ip_null_dpo.c), whose IPv6
// hash reads the whole source but only the first 64 bits of the
// destination.
func (st *state) ipNull(p *pkt, prohibit, v6 bool) {
	h := p.ip()
	node, thr := "ip4-null", &st.fwd.nullThrottle
	key := uint64(u32(ip4Dst(h)))<<32 | uint64(u32(ip4Src(h)))
	if v6 {
		dst := ip6Dst(h)
		node, key = "ip6-null", fold6(ip6Src(h))^binary.BigEndian.Uint64(dst[:8])
	}
	if thr.limitedKey(st.uptime(), key) {
		st.drop(p, node, "ICMP error rate limited")
		return
	}
	action := "send-unreachable"
	if prohibit {
		action = "send-prohibited"
	}
	if p.tr != nil {
		st.tracef(p, node, "%s action:%s", node, action)
	}
	switch {
	case v6 && prohibit:
		st.icmp6Error(p, icmp6DestUnreach, icmp6CodeProhibited, 0)
	case v6:
		st.icmp6Error(p, icmp6DestUnreach, icmp6CodeNoRoute, 0)
	case prohibit:
		st.icmpError(p, icmpUnreach, icmpCodeHostProhibited, 0)
	default:
		st.icmpError(p, icmpUnreach, icmpCodeHostUnreach, 0)
	}
	st.drop(p, node, "destination unreachable")
}

// icmpSourceFor picks the source of an ICMP error sent because of a packet
// received on i, as ip_sas.c ip4_sas_by_sw_if_index does: of the
// interface's addresses (its unnumbered owner's), the one sharing the
// longest prefix with the destination, the first on a tie.
func (st *state) icmpSourceFor(i *iface, dst [4]byte) ([4]byte, bool) {
	var best [4]byte
	bestLen, found := -1, false
	for _, a := range st.effectiveAddrs(i) {
		if !a.Addr().Is4() {
			continue
		}
		cand := a.Addr().As4()
		if l := bits.LeadingZeros32(u32(cand) ^ u32(dst)); l > bestLen {
			best, bestLen, found = cand, l, true
		}
	}
	return best, found
}

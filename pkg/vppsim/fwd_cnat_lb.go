package vppsim

// cnat's load balancing (cnat_node.h cnat_load_balance, cnat_maglev.c,
// ip4_inlines.h / ip6_inlines.h flow hashes): a new flow picks one of the
// translation's active paths, by flow hash modulo the number of active
// paths, or through a Maglev table of cnatMaglevLen entries. Both are
// VPP's own functions, so a simulator and VPP pick the same backend for
// the same flow and the same backends.

import (
	"encoding/binary"
	"math/bits"
	"sort"
)

// cnatMaglevLen is the Maglev table size (cnat_types.c: maglev-len default 1009).
const cnatMaglevLen = 1009

// Flow hash config bits (ip_flow_hash.h).
const (
	fhSrcAddr   = 1 << 0
	fhDstAddr   = 1 << 1
	fhSrcPort   = 1 << 2
	fhDstPort   = 1 << 3
	fhProto     = 1 << 4
	fhReverse   = 1 << 5
	fhSymmetric = 1 << 6
	fhFlowLabel = 1 << 7
)

// cnatPathActive tells whether both endpoints of a path are resolved
// (CNAT_TRK_ACTIVE, cnat_tracker_track).
func (st *state) cnatPathActive(p cnatPath) bool {
	_, ok1 := st.cnatResolve(p.src)
	_, ok2 := st.cnatResolve(p.dst)
	return ok1 && ok2
}

// cnatActive returns the indexes of the translation's active paths, in
// path order (ct_active_paths), rebuilt when the configuration changed
// (VPP restacks a translation when an endpoint's address comes or goes).
func (st *state) cnatActive(tr *cnatTr) []int {
	if tr.lbGen == st.gen && tr.lb != nil {
		return tr.lb
	}
	tr.lb = tr.lb[:0]
	for i, p := range tr.paths {
		if st.cnatPathActive(p) {
			tr.lb = append(tr.lb, i)
		}
	}
	tr.mag = nil
	tr.lbGen = st.gen
	return tr.lb
}

// vipAddrOr returns the VIP address if resolved, else the zero address of
// the VIP's family (for CLI output).
func (tr *cnatTr) vipAddrOr(st *state) interface{ Is4() bool } {
	if a, ok := st.cnatResolve(tr.vip); ok {
		return a
	}
	return familyZero(tr.vip.v6)
}

type fam bool

func (f fam) Is4() bool { return !bool(f) }

func familyZero(v6 bool) fam { return fam(v6) }

// cnatMaglev returns the translation's Maglev table: entry -> index into
// its active paths (cnat_translation_init_maglev), nil without active paths.
func (st *state) cnatMaglev(tr *cnatTr) []int {
	act := st.cnatActive(tr)
	if tr.mag != nil || len(act) == 0 {
		return tr.mag
	}
	type perm struct{ offset, skip, index uint32 }
	perms := make([]perm, 0, len(act))
	for bi, pi := range act {
		d, _ := st.cnatResolve(tr.paths[pi].dst)
		port := uint32(tr.paths[pi].dst.port)
		var h1, h2 uint32
		if d.Is4() {
			b4 := d.As4()
			a, b, c := binary.LittleEndian.Uint32(b4[:]), port, uint32(0)
			a, b, c = v3Mix32(a, b, c)
			_, b, c = v3Final32(a, b, c)
			h1, h2 = c, b
		} else {
			b16 := d.As16()
			a, b, c := binary.LittleEndian.Uint64(b16[:8]), binary.LittleEndian.Uint64(b16[8:]), uint64(port)
			_, b, c = jenkinsMix64(a, b, c)
			h1, h2 = uint32(c), uint32(b)
		}
		perms = append(perms, perm{offset: h1 % cnatMaglevLen, skip: h2%(cnatMaglevLen-1) + 1, index: uint32(bi)})
	}
	// VPP sorts by the first 8 bytes (offset, then skip in the high half),
	// descending. Its comparator returns that u64 difference truncated to
	// an int, so its order for far-apart keys depends on qsort; the
	// simulator sorts by the full key, descending, with the backend index
	// breaking ties (unconfirmed where VPP's truncation would differ).
	sort.SliceStable(perms, func(i, j int) bool {
		ki := uint64(perms[i].skip)<<32 | uint64(perms[i].offset)
		kj := uint64(perms[j].skip)<<32 | uint64(perms[j].offset)
		return ki > kj
	})
	tab := make([]int, cnatMaglevLen)
	for i := range tab {
		tab[i] = -1
	}
	next := make([]uint32, len(perms))
	for done := 0; done < cnatMaglevLen; {
		for i := range perms {
			c := (perms[i].offset + next[i]*perms[i].skip) % cnatMaglevLen
			for tab[c] != -1 {
				next[i]++
				c = (perms[i].offset + next[i]*perms[i].skip) % cnatMaglevLen
			}
			tab[c] = int(perms[i].index)
			next[i]++
			if done++; done == cnatMaglevLen {
				break
			}
		}
	}
	tr.mag = tab
	return tab
}

// cnatPick returns the path index a new flow of packet h takes (v6: an
// IPv6 header), false without an active path (cnat_load_balance).
func (st *state) cnatPick(tr *cnatTr, h []byte, v6 bool) (int, bool) {
	act := st.cnatActive(tr)
	if len(act) == 0 {
		return 0, false
	}
	fhc := tr.fhc
	if fhc == 0 {
		fhc = cnatDefaultFHC
	}
	var hash uint32
	if v6 {
		hash = vppFlowHash6(h, fhc)
	} else {
		hash = vppFlowHash4(h, fhc)
	}
	if tr.lbType == 1 {
		return act[st.cnatMaglev(tr)[hash%cnatMaglevLen]], true
	}
	return act[hash%uint32(len(act))], true
}

// portsLE returns the TCP/UDP source and destination ports of l4 as VPP's
// flow hash reads them: the network-order bytes loaded little-endian.
func portsLE(l4 []byte) (uint32, uint32) {
	if len(l4) < 4 {
		return 0, 0
	}
	return uint32(binary.LittleEndian.Uint16(l4[0:2])), uint32(binary.LittleEndian.Uint16(l4[2:4]))
}

// vppFlowHash4 is ip4_compute_flow_hash (router id 0, no GTP).
func vppFlowHash4(h []byte, fhc uint32) uint32 {
	var a, b, t1, t2 uint32
	if fhc&fhSrcAddr != 0 {
		t1 = binary.LittleEndian.Uint32(h[12:16])
	}
	if fhc&fhDstAddr != 0 {
		t2 = binary.LittleEndian.Uint32(h[16:20])
	}
	a, b = t1, t2
	if fhc&fhReverse != 0 {
		a, b = t2, t1
	}
	proto := ip4Proto(h)
	t1, t2 = 0, 0
	if proto == protoTCP || proto == protoUDP {
		t1, t2 = portsLE(ip4L4(h))
	}
	a, b, c := flowHashTail(a, b, t1, t2, uint32(proto), fhc)
	a, b, c = v3Mix32(a, b, c)
	_, _, c = v3Final32(a, b, c)
	return c
}

// flowHashTail applies the port masks, symmetry, protocol and reverse bits
// shared by both families' flow hashes and returns (a, b, c).
func flowHashTail[T uint32 | uint64](a, b, t1, t2, proto T, fhc uint32) (T, T, T) {
	if fhc&fhSrcPort == 0 {
		t1 = 0
	}
	if fhc&fhDstPort == 0 {
		t2 = 0
	}
	if fhc&fhSymmetric != 0 {
		if b < a {
			a, b = b, a
		}
		if t2 < t1 {
			t1, t2 = t2, t1
		}
	}
	if fhc&fhProto != 0 {
		b ^= proto
	}
	c := t2<<16 | t1
	if fhc&fhReverse != 0 {
		c = t1<<16 | t2
	}
	return a, b, c
}

// vppFlowHash6 is ip6_compute_flow_hash (router id 0, no extension
// headers, no GTP).
func vppFlowHash6(h []byte, fhc uint32) uint32 {
	var t1, t2 uint64
	if fhc&fhSrcAddr != 0 {
		t1 = binary.LittleEndian.Uint64(h[8:16]) ^ binary.LittleEndian.Uint64(h[16:24])
	}
	if fhc&fhDstAddr != 0 {
		t2 = binary.LittleEndian.Uint64(h[24:32]) ^ binary.LittleEndian.Uint64(h[32:40])
	}
	a, b := t1, t2
	if fhc&fhReverse != 0 {
		a, b = t2, t1
	}
	proto := ip6NH(h)
	var p1, p2 uint32
	if proto == protoTCP || proto == protoUDP {
		p1, p2 = portsLE(ip6L4(h))
	}
	a, b, c := flowHashTail(a, b, uint64(p1), uint64(p2), uint64(proto), fhc)
	if fhc&fhFlowLabel != 0 {
		c ^= uint64(binary.LittleEndian.Uint32(h[0:4]) & bits.ReverseBytes32(0x000fffff))
	}
	_, _, c = jenkinsMix64(a, b, c)
	return uint32(c)
}

// v3Mix32 and v3Final32 are hash_v3_mix32 and hash_v3_finalize32 (Bob
// Jenkins' lookup3 mix and final), written as their steps: each step is
// "x -= y; x ^= rotl(y, r); y += z" (mix) or "x ^= y; x -= rotl(y, r)"
// (final) on the registers a=0, b=1, c=2.
type v3Step struct{ x, y, z, r int }

var (
	v3MixSteps   = [...]v3Step{{0, 2, 1, 4}, {1, 0, 2, 6}, {2, 1, 0, 8}, {0, 2, 1, 16}, {1, 0, 2, 19}, {2, 1, 0, 4}}
	v3FinalSteps = [...]v3Step{{2, 1, 0, 14}, {0, 2, 0, 11}, {1, 0, 0, 25}, {2, 1, 0, 16}, {0, 2, 0, 4}, {1, 0, 0, 14}, {2, 1, 0, 24}}
)

func v3Mix32(a, b, c uint32) (uint32, uint32, uint32) {
	v := [3]uint32{a, b, c}
	for _, s := range v3MixSteps {
		v[s.x] -= v[s.y]
		v[s.x] ^= bits.RotateLeft32(v[s.y], s.r)
		v[s.y] += v[s.z]
	}
	return v[0], v[1], v[2]
}

func v3Final32(a, b, c uint32) (uint32, uint32, uint32) {
	v := [3]uint32{a, b, c}
	for _, s := range v3FinalSteps {
		v[s.x] ^= v[s.y]
		v[s.x] -= bits.RotateLeft32(v[s.y], s.r)
	}
	return v[0], v[1], v[2]
}

// jenkinsMix64 is hash_mix64 (Bob Jenkins' 64-bit mix, four steps).
func jenkinsMix64(a, b, c uint64) (uint64, uint64, uint64) {
	step := func(s0, s1, s2 uint) {
		a -= b + c
		a ^= c >> s0
		b -= c + a
		b ^= a << s1
		c -= a + b
		c ^= b >> s2
	}
	step(43, 9, 8)
	step(38, 23, 5)
	step(35, 49, 11)
	step(12, 18, 22)
	return a, b, c
}

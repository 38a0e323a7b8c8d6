package vppsim

import (
	"encoding/binary"
	"net/netip"

	"go.fd.io/govpp/binapi/fib_types"
)

// Compiled IPv6 FIBs (docs/dev-guide/VPP-FORWARDING.md §11.3). They hold
// what fibEntriesFwd computes for the IPv6 tables, compiled like the IPv4
// ones (fwd_fib.go) but in their own view, rebuilt only when an IPv6
// packet needs it after the configuration changed, so IPv4 forwarding
// never pays for IPv6 state. fe80::/10 is the "link-local lookup" entry:
// a destination it covers is looked up in the receiving interface's
// link-local table (ip6ll), not in the VRF.

// fwdLinkLocal is the kind of the fe80::/10 entry of every IPv6 table.
const fwdLinkLocal fwdKind = 100

// fib6 is one compiled IPv6 table: entries by prefix length, keyed by the
// masked address.
type fib6 struct {
	lens  []int
	byLen [129]map[[16]byte]*fibFwd
}

// fwdView6 is the compiled IPv6 view of the configuration.
type fwdView6 struct {
	gen  uint64
	fibs map[uint32]*fib6
}

func (st *state) view6() *fwdView6 {
	v := &st.fwd.view6
	if v.fibs != nil && v.gen == st.gen {
		return v
	}
	v.gen = st.gen
	v.fibs = compileTables(st.tables[1], st.compileFIB6)
	return v
}

func (st *state) compileFIB6(t *vrfTable) *fib6 {
	f := &fib6{}
	for _, e := range st.fibEntriesFwd(t) {
		if !e.prefix.Addr().Is6() {
			continue
		}
		ff := compileEntry(e)
		if e.prefix == linkLocalPrefix && e.src == fibSrcSpecial {
			ff.kind = fwdLinkLocal
		}
		putFwd(f.byLen[:], e.prefix.Addr().As16(), ff)
	}
	for b := 128; b >= 0; b-- {
		if f.byLen[b] != nil {
			f.lens = append(f.lens, b)
		}
	}
	return f
}

// linkLocalPrefix is fe80::/10.
var linkLocalPrefix = netip.MustParsePrefix("fe80::/10")

// lookup is the longest-prefix match of dst.
func (f *fib6) lookup(dst [16]byte) *fibFwd {
	hi, lo := binary.BigEndian.Uint64(dst[:8]), binary.BigEndian.Uint64(dst[8:])
	for _, b := range f.lens {
		var k [16]byte
		mh, ml := mask128(b)
		binary.BigEndian.PutUint64(k[:8], hi&mh)
		binary.BigEndian.PutUint64(k[8:], lo&ml)
		if e := f.byLen[b][k]; e != nil {
			return e
		}
	}
	return nil
}

// mask128 returns the two halves of a /b mask.
func mask128(b int) (hi, lo uint64) {
	switch {
	case b == 0:
		return 0, 0
	case b <= 64:
		return ^uint64(0) << (64 - b), 0
	case b == 128:
		return ^uint64(0), ^uint64(0)
	}
	return ^uint64(0), ^uint64(0) << (128 - b)
}

// fib6Lookup looks dst up in an IPv6 table; nil if the table does not
// exist.
func (st *state) fib6Lookup(vrf uint32, dst [16]byte) *fibFwd {
	f := st.view6().fibs[vrf]
	if f == nil {
		return nil
	}
	return f.lookup(dst)
}

// compileEntry turns a FIB entry into what forwards: its kind and, for
// forwarding entries, the paths of the best (lowest) preference.
func compileEntry(e fibEntry) *fibFwd {
	ff := &fibFwd{prefix: e.prefix, src: e.src, sw: noIndex}
	switch {
	case len(e.paths) == 0:
		ff.kind = fwdDrop
	case e.paths[0].Type == fib_types.FIB_API_PATH_TYPE_LOCAL:
		ff.kind, ff.sw = fwdLocal, e.paths[0].SwIfIndex
	case e.paths[0].Type == fib_types.FIB_API_PATH_TYPE_DROP:
		ff.kind = fwdDrop
	case e.paths[0].Type == fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH:
		ff.kind = fwdUnreach
	case e.paths[0].Type == fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		ff.kind = fwdProhibit
	default:
		ff.kind = fwdPaths
		best := e.paths[0].Preference
		for _, p := range e.paths {
			best = min(best, p.Preference)
		}
		for _, p := range e.paths {
			if p.Preference == best {
				ff.paths = append(ff.paths, p)
				ff.weight += uint32(max(p.Weight, 1))
			}
		}
	}
	return ff
}

// ip6llResult is what a lookup in an interface's link-local table found.
type ip6llResult uint8

const (
	ip6llLocal    ip6llResult = iota // the interface's own link-local address
	ip6llNeighbor                    // a link-local neighbour of the interface
	ip6llGlean                       // fe80::/10 attached: resolve by ND
	ip6llNone                        // IPv6 not enabled: the table is empty
)

// ip6llLookup is the lookup in the link-local table of interface i
// (ip/ip6_ll_table.c): its own link-local /128 (local), its link-local
// neighbours (/128s) and fe80::/10 attached on i itself.
func (st *state) ip6llLookup(i *iface, dst netip.Addr) (ip6llResult, *neighbor) {
	if i.ip6 == nil {
		return ip6llNone, nil
	}
	if dst == i.ip6.ll {
		return ip6llLocal, nil
	}
	if n := st.neighbors[neighborKey{sw: i.idx, ip: dst}]; n != nil {
		return ip6llNeighbor, n
	}
	return ip6llGlean, nil
}

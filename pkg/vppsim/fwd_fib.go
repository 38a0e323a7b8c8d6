package vppsim

import (
	"net/netip"

	"go.fd.io/govpp/binapi/fib_types"
)

// Compiled IPv4 FIBs for the data plane. The FIB content is what
// fibEntries computes for the dumps, restricted to what forwards: entries
// made from interface addresses exist only while the interface is admin-up
// (docs/dev-guide/VPP-FORWARDING.md §3), neighbour /32s only where the covering prefix is attached on
// the same interface (docs/dev-guide/VPP-FORWARDING.md §2), plus the local /32s NAT44-ED adds for its
// pool and static external addresses in the VRFs of NAT outside and
// output-feature interfaces (docs/dev-guide/VPP-FORWARDING.md §2, "nat-low"). A view is rebuilt when the
// configuration generation moved, so lookups on the packet path are plain
// map reads keyed by integers.

// fwdKind is what a FIB entry does with a packet.
type fwdKind uint8

const (
	fwdDrop     fwdKind = iota // drop (special and DROP routes)
	fwdLocal                   // deliver to VPP (ip4-local)
	fwdPaths                   // forward along paths
	fwdUnreach                 // ICMP_UNREACH paths (ip4-null, ICMP 3/1)
	fwdProhibit                // ICMP_PROHIBIT paths (ip4-null, ICMP 3/10)
)

// fibFwd is a compiled FIB entry.
type fibFwd struct {
	prefix netip.Prefix
	kind   fwdKind
	src    uint8
	sw     uint32 // local entries: the interface owning the address (~0: NAT)
	paths  []fib_types.FibPath
	weight uint32 // sum of path weights
}

// fib4 is one compiled IPv4 table.
type fib4 struct {
	lens  []int                  // prefix lengths present, longest first
	byLen [33]map[uint32]*fibFwd // masked address -> entry
}

// fwdView is the data plane's compiled view of the configuration.
type fwdView struct {
	gen  uint64
	fibs map[uint32]*fib4
}

// fibPriority orders FIB sources as VPP's source priorities do (lower
// wins): special 0, interface 0x03, API/DHCP 0x80, adjacency and NAT
// 0xd0, default route 0xfd.
func fibPriority(src uint8) int {
	switch src {
	case fibSrcSpecial:
		return 0
	case fibSrcInterface:
		return 0x03
	case fibSrcAPI, fibSrcDHCP:
		return 0x80
	case fibSrcIP6NDProxy:
		return 0xc0
	case fibSrcAdj, fibSrcNAT:
		return 0xd0
	case fibSrcDefaultRoute:
		return 0xfd
	}
	return 0xff
}

// fibSrcNAT is the NAT44-ED "nat-low" source (compiled FIB only; the
// dumps of the simulator do not list NAT's entries).
const fibSrcNAT uint8 = 40

// view returns the compiled view, rebuilding it if the configuration
// changed since it was built.
func (st *state) view() *fwdView {
	v := &st.fwd.view
	if v.fibs != nil && v.gen == st.gen {
		return v
	}
	v.gen = st.gen
	v.fibs = compileTables(st.tables[0], st.compileFIB)
	return v
}

// compileTables compiles every table of one address family.
func compileTables[F any](tables map[uint32]*vrfTable, compile func(*vrfTable) F) map[uint32]F {
	out := make(map[uint32]F, len(tables))
	for id, t := range tables {
		out[id] = compile(t)
	}
	return out
}

func (st *state) compileFIB(t *vrfTable) *fib4 {
	f := &fib4{}
	put := func(e *fibFwd) { putFwd(f.byLen[:], u32(e.prefix.Addr().As4()), e) }
	for _, e := range st.fibEntriesFwd(t) {
		if !e.prefix.Addr().Is4() {
			continue
		}
		ff := compileEntry(e)
		put(ff)
	}
	for _, a := range st.natLocalAddrs(t.id) {
		put(&fibFwd{prefix: netip.PrefixFrom(a, 32), kind: fwdLocal, src: fibSrcNAT, sw: noIndex})
	}
	for b := 32; b >= 0; b-- {
		if f.byLen[b] != nil {
			f.lens = append(f.lens, b)
		}
	}
	return f
}

// putFwd files a compiled entry under its prefix length and masked
// address k, unless an entry of a better source is there.
func putFwd[K comparable](byLen []map[K]*fibFwd, k K, e *fibFwd) {
	b := e.prefix.Bits()
	m := byLen[b]
	if m == nil {
		m = map[K]*fibFwd{}
		byLen[b] = m
	}
	if cur := m[k]; cur != nil && fibPriority(cur.src) <= fibPriority(e.src) {
		return
	}
	m[k] = e
}

// lookup is the longest-prefix match of dst.
func (f *fib4) lookup(dst uint32) *fibFwd {
	for _, b := range f.lens {
		mask := uint32(0)
		if b > 0 {
			mask = ^uint32(0) << (32 - b)
		}
		if e := f.byLen[b][dst&mask]; e != nil {
			return e
		}
	}
	return nil
}

// fibLookup looks dst up in a table; nil if the table does not exist.
func (st *state) fibLookup(vrf uint32, dst [4]byte) *fibFwd {
	f := st.view().fibs[vrf]
	if f == nil {
		return nil
	}
	return f.lookup(u32(dst))
}

// resolveViaRefused tells why entry e may not resolve a recursive path
// with RESOLVE_VIA_HOST (only host entries) or RESOLVE_VIA_ATTACHED (only
// interface entries); "" if it may.
func resolveViaRefused(path *fib_types.FibPath, e *fibFwd) string {
	if path.Flags&fib_types.FIB_API_PATH_FLAG_RESOLVE_VIA_HOST != 0 && e.prefix.Bits() != e.prefix.Addr().BitLen() {
		return "recursive next hop unresolved (resolve via host)"
	}
	if path.Flags&fib_types.FIB_API_PATH_FLAG_RESOLVE_VIA_ATTACHED != 0 && e.src != fibSrcInterface {
		return "recursive next hop unresolved (resolve via attached)"
	}
	return ""
}

// choosePath picks the path of a multipath entry by flow hash and weight.
func (e *fibFwd) choosePath(hash uint32) *fib_types.FibPath {
	if len(e.paths) == 1 {
		return &e.paths[0]
	}
	r := hash % e.weight
	for k := range e.paths {
		w := uint32(max(e.paths[k].Weight, 1))
		if r < w {
			return &e.paths[k]
		}
		r -= w
	}
	return &e.paths[len(e.paths)-1]
}

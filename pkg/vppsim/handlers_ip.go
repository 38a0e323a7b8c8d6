package vppsim

import (
	"net/netip"
	"slices"
	"sort"

	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
)

func registerIP(r *registry) {
	on(r, hIPTableAddDel)
	on(r, hIPTableAddDelV2)
	on(r, hIPTableDump)
	on(r, hIPRouteAddDel)
	on(r, hIPRouteAddDelV2)
	on(r, hIPRouteDump)
	on(r, hIPRouteV2Dump)
	on(r, hIPAddressDump)
	on(r, hIPUnnumberedDump)
	on(r, hIPNeighborAddDel)
	on(r, hIPNeighborDump)
	on(r, hIPNeighborConfig)
	on(r, hIPNeighborConfigGet)
	on(r, hProxyArpAddDel)
	on(r, hProxyArpIntfcEnableDisable)
	on(r, hProxyArpDump)
	on(r, hProxyArpIntfcDump)
}

// FIB sources as VPP 25.10 numbers its built-in ones (fib_source.h enum
// fib_source_t: INVALID 0, SPECIAL 1, CLASSIFY, PROXY, INTERFACE 4, SR,
// BIER, 6RD, API 8, CLI, LISP, MAP, DHCP 12, IP6_ND_PROXY 13, IP6_ND, ADJ
// 15, MPLS, AE, RR, URPF_EXEMPT, DEFAULT_ROUTE 21, INTERPOSE). They appear
// as "src" in ip_route_v2_details (fib_entry_get_best_source); priorities
// are fibPriority's.
const (
	fibSrcSpecial      uint8 = 1
	fibSrcInterface    uint8 = 4
	fibSrcAPI          uint8 = 8
	fibSrcDHCP         uint8 = 12
	fibSrcIP6NDProxy   uint8 = 13
	fibSrcAdj          uint8 = 15
	fibSrcDefaultRoute uint8 = 21
)

// --- tables ---

func hIPTableAddDel(cl *call, m *ip.IPTableAddDel) {
	cl.send(&ip.IPTableAddDelReply{Retval: cl.st.tableAddDel(m.Table, m.IsAdd)})
}

func hIPTableAddDelV2(cl *call, m *ip.IPTableAddDelV2) {
	cl.send(&ip.IPTableAddDelV2Reply{Retval: cl.st.tableAddDel(m.Table, m.IsAdd)})
}

// tableAddDel is VPP's ip_table_create/ip_table_delete: table 0 cannot be
// touched, a table may be added many times and deleted once, deleting it
// flushes its API routes and releases the API's lock (the table lives on
// while interfaces or NAT hold it), and deleting a missing table is not an
// error.
func (st *state) tableAddDel(in ip.IPTable, isAdd bool) int32 {
	if in.TableID == 0 {
		return retvalOK
	}
	if in.TableID == noIndex {
		return retvalInvalidValue
	}
	if isAdd {
		t := st.findOrCreateTable(in.IsIP6, in.TableID)
		if !t.apiLock && in.Name != "" {
			t.name = in.Name
		}
		t.apiLock = true
		return retvalOK
	}
	if t := st.table(in.IsIP6, in.TableID); t != nil && t.apiLock {
		clear(t.routes)
		t.apiLock = false
		st.releaseTable(t)
	}
	return retvalOK
}

func (st *state) sortedTables() []*vrfTable {
	var out []*vrfTable
	for af := range st.tables {
		for _, t := range st.tables[af] {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].ipv6 != out[b].ipv6 {
			return !out[a].ipv6
		}
		return out[a].id < out[b].id
	})
	return out
}

func hIPTableDump(cl *call, _ *ip.IPTableDump) {
	for _, t := range cl.st.sortedTables() {
		cl.send(&ip.IPTableDetails{Table: ip.IPTable{TableID: t.id, IsIP6: t.ipv6, Name: t.name}})
	}
}

// --- routes ---

func hIPRouteAddDel(cl *call, m *ip.IPRouteAddDel) {
	rv, idx := cl.st.routeAddDel(m.IsAdd, m.IsMultipath, m.Route.TableID, m.Route.Prefix, m.Route.Paths)
	cl.send(&ip.IPRouteAddDelReply{Retval: rv, StatsIndex: idx})
}

func hIPRouteAddDelV2(cl *call, m *ip.IPRouteAddDelV2) {
	rv, idx := cl.st.routeAddDel(m.IsAdd, m.IsMultipath, m.Route.TableID, m.Route.Prefix, m.Route.Paths)
	cl.send(&ip.IPRouteAddDelV2Reply{Retval: rv, StatsIndex: idx})
}

// normalizePath returns the path as VPP stores and dumps it. Special paths
// (drop, ICMP unreachable, ICMP prohibited) are dumped with table 0 and no
// next hop (fib_path.c fib_path_encode, FIB_PATH_TYPE_SPECIAL); the ICMP
// ones also without an interface, which fib_api_path_decode never reads
// for them.
func normalizePath(p fib_types.FibPath) fib_types.FibPath {
	if p.Weight == 0 {
		p.Weight = 1
	}
	switch p.Type {
	case fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		p.SwIfIndex = noIndex
		fallthrough
	case fib_types.FIB_API_PATH_TYPE_DROP:
		p.TableID, p.Nh = 0, fib_types.FibPathNh{}
	}
	return p
}

// samePath tells whether two paths are the same path of a route (VPP's
// fib_route_path_cmp ignores weight and preference).
func samePath(a, b fib_types.FibPath) bool {
	a.Weight, b.Weight = 0, 0
	a.Preference, b.Preference = 0, 0
	return a == b
}

// routeAddDel is VPP's ip_route_add_del with FIB_SOURCE_API:
// is_add && !is_multipath replaces the paths, is_add && is_multipath adds
// them, !is_add && is_multipath removes them and !is_add && !is_multipath
// deletes the route. The table must exist, every path's interface must
// exist, and a path that looks up another table needs that table.
// Deleting a missing route or path is silently accepted, as in VPP.
func (st *state) routeAddDel(isAdd, multipath bool, tableID uint32, pfx ip_types.Prefix, paths []fib_types.FibPath) (int32, uint32) {
	p, ok := prefixFromAPI(pfx)
	if !ok {
		return retvalInvalidValue, 0
	}
	p = p.Masked()
	ipv6 := p.Addr().Is6()
	t := st.table(ipv6, tableID)
	if t == nil {
		return retvalNoSuchFIB, 0
	}
	norm := make([]fib_types.FibPath, 0, len(paths))
	for _, path := range paths {
		path = normalizePath(path)
		if path.SwIfIndex != noIndex {
			if st.ifaces[path.SwIfIndex] == nil {
				return retvalInvalidSwIfIndex, 0
			}
		} else if path.Type == fib_types.FIB_API_PATH_TYPE_NORMAL {
			nhv6 := path.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6
			if st.table(nhv6, path.TableID) == nil {
				return retvalNoSuchFIB, 0
			}
		}
		norm = append(norm, path)
	}
	if len(norm) == 0 && (multipath || isAdd) {
		return retvalNoPathsInRoute, 0
	}
	r := t.routes[p]
	switch {
	case isAdd && !multipath:
		if r == nil {
			r = &apiRoute{prefix: p}
			t.routes[p] = r
		}
		r.paths = norm
	case isAdd:
		if r == nil {
			r = &apiRoute{prefix: p}
			t.routes[p] = r
		}
		for _, np := range norm {
			if k := slices.IndexFunc(r.paths, func(x fib_types.FibPath) bool { return samePath(x, np) }); k >= 0 {
				r.paths[k] = np
			} else {
				r.paths = append(r.paths, np)
			}
		}
	case multipath:
		if r != nil {
			r.paths = slices.DeleteFunc(r.paths, func(x fib_types.FibPath) bool {
				return slices.ContainsFunc(norm, func(np fib_types.FibPath) bool { return samePath(x, np) })
			})
			if len(r.paths) == 0 {
				delete(t.routes, p)
			}
		}
	default:
		delete(t.routes, p)
	}
	if isAdd {
		return retvalOK, st.statsIndex(p)
	}
	return retvalOK, 0
}

// statsIndex returns a stable pseudo stats index for a prefix.
func (st *state) statsIndex(p netip.Prefix) uint32 {
	b := p.Addr().AsSlice()
	h := uint32(2166136261)
	for _, c := range append(b, byte(p.Bits())) {
		h = (h ^ uint32(c)) * 16777619
	}
	return h & 0xffff
}

// fibEntry is one entry of a FIB table as VPP dumps it: the paths of its
// best source.
type fibEntry struct {
	prefix netip.Prefix
	src    uint8
	paths  []fib_types.FibPath
}

func nhProto(ipv6 bool) fib_types.FibPathNhProto {
	if ipv6 {
		return fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	return fib_types.FIB_API_PATH_NH_PROTO_IP4
}

func simplePath(ipv6 bool, typ fib_types.FibPathType, sw uint32, nh netip.Addr) fib_types.FibPath {
	p := fib_types.FibPath{SwIfIndex: sw, Weight: 1, Type: typ, Proto: nhProto(ipv6)}
	if nh.IsValid() {
		p.Nh.Address = addrToAPI(nh).Un
	}
	return p
}

// fibEntries computes the content of a table: the special entries VPP
// creates for every table, the connected and local entries of interface
// addresses, the adjacency entries of neighbors, DHCP default routes and
// the API routes, keeping the best source per prefix.
func (st *state) fibEntries(t *vrfTable) []fibEntry { return st.fibEntriesOpt(t, false) }

// fibEntriesFwd is the content of a table as the data plane sees it:
// entries made from interface addresses only while the interface is
// admin-up, and neighbour /32s only where the neighbour is covered by an
// attached prefix of its interface (docs/dev-guide/VPP-FORWARDING.md §2-3).
func (st *state) fibEntriesFwd(t *vrfTable) []fibEntry { return st.fibEntriesOpt(t, true) }

// fibEntriesOpt computes the entries of a table; fwd selects the data plane's
// view (see fibEntriesFwd). The dumps keep showing interface entries of
// admin-down interfaces, which the agent's tests of the dumps rely on.
func (st *state) fibEntriesOpt(t *vrfTable, fwd bool) []fibEntry {
	best := map[netip.Prefix]fibEntry{}
	put := func(e fibEntry) {
		if cur, ok := best[e.prefix]; !ok || fibPriority(e.src) < fibPriority(cur.src) {
			best[e.prefix] = e
		}
	}
	v6 := t.ipv6
	none := netip.Addr{}
	drop := func(s string, src uint8) {
		put(fibEntry{prefix: netip.MustParsePrefix(s), src: src,
			paths: []fib_types.FibPath{simplePath(v6, fib_types.FIB_API_PATH_TYPE_DROP, noIndex, none)}})
	}
	if v6 {
		drop("::/0", fibSrcDefaultRoute)
		put(fibEntry{prefix: netip.MustParsePrefix("fe80::/10"), src: fibSrcSpecial,
			paths: []fib_types.FibPath{simplePath(true, fib_types.FIB_API_PATH_TYPE_LOCAL, noIndex, none)}})
	} else {
		drop("0.0.0.0/0", fibSrcDefaultRoute)
		drop("0.0.0.0/32", fibSrcSpecial)
		drop("224.0.0.0/4", fibSrcSpecial)
		drop("240.0.0.0/4", fibSrcSpecial)
		drop("255.255.255.255/32", fibSrcSpecial)
	}
	af := afIndex(v6)
	for _, i := range st.ifaces {
		if i.vrf[af] != t.id || (fwd && !i.adminUp) {
			continue
		}
		for _, a := range i.addrs {
			if a.Addr().Is6() != v6 {
				continue
			}
			host := a.Addr().BitLen()
			if a.Bits() < host {
				put(fibEntry{prefix: a.Masked(), src: fibSrcInterface,
					paths: []fib_types.FibPath{simplePath(v6, fib_types.FIB_API_PATH_TYPE_NORMAL, i.idx, none)}})
			}
			if !v6 && a.Bits() < 31 {
				netAddr := a.Masked().Addr()
				put(fibEntry{prefix: netip.PrefixFrom(netAddr, 32), src: fibSrcInterface,
					paths: []fib_types.FibPath{simplePath(false, fib_types.FIB_API_PATH_TYPE_DROP, noIndex, none)}})
				put(fibEntry{prefix: netip.PrefixFrom(lastAddr(a), 32), src: fibSrcInterface,
					paths: []fib_types.FibPath{simplePath(false, fib_types.FIB_API_PATH_TYPE_DROP, noIndex, none)}})
			}
			put(fibEntry{prefix: netip.PrefixFrom(a.Addr(), host), src: fibSrcInterface,
				paths: []fib_types.FibPath{simplePath(v6, fib_types.FIB_API_PATH_TYPE_LOCAL, i.idx, none)}})
		}
	}
	for _, n := range st.neighbors {
		i := st.ifaces[n.sw]
		if i == nil || n.ip.Is6() != v6 || i.vrf[af] != t.id || n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_NO_FIB_ENTRY != 0 {
			continue
		}
		if v6 && n.ip.IsLinkLocalUnicast() {
			continue // in the interface's link-local table instead (ip6_ll_table.c)
		}
		if fwd && !st.attachedOn(i, n.ip) {
			continue
		}
		put(fibEntry{prefix: netip.PrefixFrom(n.ip, n.ip.BitLen()), src: fibSrcAdj,
			paths: []fib_types.FibPath{simplePath(v6, fib_types.FIB_API_PATH_TYPE_NORMAL, n.sw, n.ip)}})
	}
	for _, d := range st.dhcp {
		i := st.ifaces[d.sw]
		if i == nil || v6 || d.lease == nil || !d.lease.Router.IsValid() || i.vrf[0] != t.id {
			continue
		}
		put(fibEntry{prefix: netip.MustParsePrefix("0.0.0.0/0"), src: fibSrcDHCP,
			paths: []fib_types.FibPath{simplePath(false, fib_types.FIB_API_PATH_TYPE_NORMAL, d.sw, d.lease.Router)}})
	}
	for p, r := range t.routes {
		put(fibEntry{prefix: p, src: fibSrcAPI, paths: r.paths})
	}
	if v6 {
		st.nd6ProxyEntries(t.id, put)
	}
	out := make([]fibEntry, 0, len(best))
	for _, e := range best {
		out = append(out, e)
	}
	sort.Slice(out, func(a, b int) bool {
		if c := out[a].prefix.Addr().Compare(out[b].prefix.Addr()); c != 0 {
			return c < 0
		}
		return out[a].prefix.Bits() < out[b].prefix.Bits()
	})
	return out
}

// attachedOn tells whether addr is in a prefix attached on interface i
// (its own or, if unnumbered, its donor's addresses), while i is up.
func (st *state) attachedOn(i *iface, addr netip.Addr) bool {
	if !i.adminUp {
		return false
	}
	for _, a := range st.effectiveAddrs(i) {
		if a.Contains(addr) {
			return true
		}
	}
	return false
}

// lastAddr returns the broadcast address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= (1 << (32 - p.Bits())) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func hIPRouteDump(cl *call, m *ip.IPRouteDump) {
	st := cl.st
	t := st.table(m.Table.IsIP6, m.Table.TableID)
	if t == nil {
		return
	}
	for _, e := range st.fibEntries(t) {
		cl.send(&ip.IPRouteDetails{Route: ip.IPRoute{
			TableID: t.id, StatsIndex: st.statsIndex(e.prefix), Prefix: prefixToAPI(e.prefix),
			NPaths: uint8(len(e.paths)), Paths: e.paths,
		}})
	}
}

// hIPRouteV2Dump is ip_route_dump with the FIB source of each entry; a
// non-zero src dumps only the entries whose best source it is.
func hIPRouteV2Dump(cl *call, m *ip.IPRouteV2Dump) {
	st := cl.st
	t := st.table(m.Table.IsIP6, m.Table.TableID)
	if t == nil {
		return
	}
	for _, e := range st.fibEntries(t) {
		if m.Src != 0 && m.Src != e.src {
			continue
		}
		cl.send(&ip.IPRouteV2Details{Route: ip.IPRouteV2{
			TableID: t.id, StatsIndex: st.statsIndex(e.prefix), Prefix: prefixToAPI(e.prefix),
			NPaths: uint8(len(e.paths)), Src: e.src, Paths: e.paths,
		}})
	}
}

// --- addresses ---

// hIPAddressDump lists the addresses of one family of an interface; an
// unnumbered interface shows its donor's addresses, as in VPP.
func hIPAddressDump(cl *call, m *ip.IPAddressDump) {
	st := cl.st
	i := st.iface(m.SwIfIndex)
	if i == nil {
		return
	}
	for _, a := range st.effectiveAddrs(i) {
		if a.Addr().Is6() != m.IsIPv6 {
			continue
		}
		cl.send(&ip.IPAddressDetails{SwIfIndex: m.SwIfIndex, Prefix: ip_types.AddressWithPrefix(prefixToAPI(a))})
	}
}

func hIPUnnumberedDump(cl *call, m *ip.IPUnnumberedDump) {
	for _, i := range cl.st.sortedIfaces() {
		if i.unnumOf == noIndex || (uint32(m.SwIfIndex) != noIndex && uint32(m.SwIfIndex) != i.idx) {
			continue
		}
		cl.send(&ip.IPUnnumberedDetails{SwIfIndex: interface_types.InterfaceIndex(i.idx), IPSwIfIndex: interface_types.InterfaceIndex(i.unnumOf)})
	}
}

// --- neighbors ---

func hIPNeighborAddDel(cl *call, m *ip_neighbor.IPNeighborAddDel) {
	st := cl.st
	rep := &ip_neighbor.IPNeighborAddDelReply{}
	n := m.Neighbor
	addr, ok := addrFromAPI(n.IPAddress)
	switch {
	case st.iface(n.SwIfIndex) == nil:
		rep.Retval = retvalInvalidSwIfIndex
	case !ok:
		rep.Retval = retvalInvalidValue
	default:
		key := neighborKey{sw: uint32(n.SwIfIndex), ip: addr}
		if m.IsAdd {
			rep.Retval = st.neighborAdd(key, n.MacAddress, n.Flags)
			if rep.Retval == retvalOK {
				rep.StatsIndex = st.statsIndex(netip.PrefixFrom(addr, addr.BitLen()))
			}
		} else if st.neighbors[key] == nil {
			rep.Retval = retvalNoSuchEntry
		} else {
			delete(st.neighbors, key)
		}
	}
	cl.send(rep)
}

// neighborAdd is ip_neighbor_add (ip-neighbor/ip_neighbor.c) for the API:
// a dynamic add never overwrites a static entry - with the same MAC it is
// a no-op, with another MAC VPP answers -2 (the raw return value, which
// the API reports as it is: INVALID_SW_IF_INDEX's code); a static add
// makes a dynamic entry static, never the reverse.
func (st *state) neighborAdd(key neighborKey, mac [6]byte, flags ip_neighbor.IPNeighborFlags) int32 {
	const static = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	e := st.neighbors[key]
	if e == nil {
		st.neighbors[key] = &neighbor{neighborKey: key, mac: mac, flags: flags, seq: st.nextSeq()}
		return retvalOK
	}
	if flags&static == 0 && e.flags&static != 0 {
		if e.mac == mac {
			return retvalOK
		}
		return -2
	}
	e.mac = mac
	e.flags = flags
	return retvalOK
}

func hIPNeighborDump(cl *call, m *ip_neighbor.IPNeighborDump) {
	st := cl.st
	list := make([]*neighbor, 0, len(st.neighbors))
	for _, n := range st.neighbors {
		if uint32(m.SwIfIndex) != noIndex && n.sw != uint32(m.SwIfIndex) {
			continue
		}
		if n.ip.Is6() != (m.Af == ip_types.ADDRESS_IP6) {
			continue
		}
		list = append(list, n)
	}
	sort.Slice(list, func(a, b int) bool { return list[a].seq < list[b].seq })
	for _, n := range list {
		cl.send(&ip_neighbor.IPNeighborDetails{Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: interface_types.InterfaceIndex(n.sw), Flags: n.flags, MacAddress: n.mac, IPAddress: addrToAPI(n.ip),
		}})
	}
}

func hIPNeighborConfig(cl *call, m *ip_neighbor.IPNeighborConfig) {
	rv := retvalOK
	if m.Af != ip_types.ADDRESS_IP4 && m.Af != ip_types.ADDRESS_IP6 {
		rv = retvalInvalidValue
	} else {
		cl.st.neighborCfg[m.Af] = neighborConfig{maxNumber: m.MaxNumber, maxAge: m.MaxAge, recycle: m.Recycle}
	}
	cl.send(&ip_neighbor.IPNeighborConfigReply{Retval: rv})
}

func hIPNeighborConfigGet(cl *call, m *ip_neighbor.IPNeighborConfigGet) {
	rep := &ip_neighbor.IPNeighborConfigGetReply{Af: m.Af}
	if m.Af != ip_types.ADDRESS_IP4 && m.Af != ip_types.ADDRESS_IP6 {
		rep.Retval = retvalInvalidValue
	} else {
		c := cl.st.neighborCfg[m.Af]
		rep.MaxNumber, rep.MaxAge, rep.Recycle = c.maxNumber, c.maxAge, c.recycle
	}
	cl.send(rep)
}

// --- proxy ARP ---

func hProxyArpAddDel(cl *call, m *arp.ProxyArpAddDel) {
	st := cl.st
	rv := retvalOK
	r := proxyArpRange{vrf: m.Proxy.TableID, lo: netip.AddrFrom4(m.Proxy.Low), hi: netip.AddrFrom4(m.Proxy.Hi)}
	k := slices.Index(st.proxyArps, r)
	switch {
	case st.table(false, r.vrf) == nil:
		rv = retvalNoSuchFIB
	case m.IsAdd:
		if k < 0 {
			st.proxyArps = append(st.proxyArps, r)
		}
	case k < 0:
		rv = retvalNoSuchEntry
	default:
		st.proxyArps = slices.Delete(st.proxyArps, k, k+1)
	}
	cl.send(&arp.ProxyArpAddDelReply{Retval: rv})
}

func hProxyArpIntfcEnableDisable(cl *call, m *arp.ProxyArpIntfcEnableDisable) {
	rv := retvalOK
	if i := cl.st.iface(m.SwIfIndex); i == nil {
		rv = retvalInvalidSwIfIndex
	} else {
		i.proxyArp = m.Enable
	}
	cl.send(&arp.ProxyArpIntfcEnableDisableReply{Retval: rv})
}

func hProxyArpDump(cl *call, _ *arp.ProxyArpDump) {
	for _, r := range cl.st.proxyArps {
		cl.send(&arp.ProxyArpDetails{Proxy: arp.ProxyArp{TableID: r.vrf, Low: r.lo.As4(), Hi: r.hi.As4()}})
	}
}

func hProxyArpIntfcDump(cl *call, _ *arp.ProxyArpIntfcDump) {
	for _, i := range cl.st.sortedIfaces() {
		if i.proxyArp {
			cl.send(&arp.ProxyArpIntfcDetails{SwIfIndex: i.idx})
		}
	}
}

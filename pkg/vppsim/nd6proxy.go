package vppsim

// IPv6 proxy ND (VPP 25.10 vnet/ip6-nd/ip6_nd_proxy.c, ip6_nd_api.c,
// ip6_nd.c; docs/dev-guide/VPP-FORWARDING.md §11.6): ip6nd_proxy_add_del
// adds a /128 for the address in the interface's IPv6 table, with the
// FIB source IP6_ND_PROXY and one attached-next-hop path via the
// interface to the address itself, so traffic to it is sent out that
// interface after ND resolves it; and VPP answers neighbour solicitations
// for the address (icmp6-neighbor-solicitation accepts a target whose /128
// is sourced by IP6_ND_PROXY, on any interface of that table).

import (
	"net/netip"
	"slices"
	"sort"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip6_nd"
)

// nd6ProxyKey is one proxied address's FIB entry: the IPv6 table (the
// interface's when the proxy was added) and the address.
type nd6ProxyKey struct {
	vrf  uint32
	addr netip.Addr
}

// nd6ProxyEntry is the entry's paths: the interfaces, in the order they
// were added (a second add of the same path adds nothing, as
// fib_path_list dedups equal paths).
type nd6ProxyEntry struct {
	sws []uint32
}

// hIP6ndProxyAddDel adds or removes a proxied address on an interface: an
// unknown interface is INVALID_SW_IF_INDEX (VALIDATE_SW_IF_INDEX); every
// other request succeeds, deleting an absent one too
// (fib_table_entry_path_remove allows it). A delete also deletes the
// neighbour entry of the address on the interface (ip_neighbor_del).
// ip6_fib_table_get_index_for_sw_if_index gives NO_SUCH_FIB only for an
// index beyond VPP's vector, which an existing interface never is.
func hIP6ndProxyAddDel(cl *call, m *ip6_nd.IP6ndProxyAddDel) {
	st := cl.st
	rep := &ip6_nd.IP6ndProxyAddDelReply{}
	i := st.iface(m.SwIfIndex)
	if i == nil {
		rep.Retval = retvalInvalidSwIfIndex
		cl.send(rep)
		return
	}
	k := nd6ProxyKey{vrf: i.vrf[1], addr: netip.AddrFrom16(m.IP)}
	e := st.nd6Proxy[k]
	switch {
	case m.IsAdd && e == nil:
		if st.nd6Proxy == nil {
			st.nd6Proxy = map[nd6ProxyKey]*nd6ProxyEntry{}
		}
		st.nd6Proxy[k] = &nd6ProxyEntry{sws: []uint32{i.idx}}
	case m.IsAdd:
		if !slices.Contains(e.sws, i.idx) {
			e.sws = append(e.sws, i.idx)
		}
	default:
		if e != nil {
			e.sws = slices.DeleteFunc(e.sws, func(sw uint32) bool { return sw == i.idx })
			if len(e.sws) == 0 {
				delete(st.nd6Proxy, k)
			}
		}
		delete(st.neighbors, neighborKey{sw: i.idx, ip: k.addr})
	}
	cl.send(rep)
}

// hIP6ndProxyDump lists the FIB entries the ND proxy sources, in every
// IPv6 table, sorted by address (fib_entry_cmp_for_sort), with the
// resolving interface (the first path's).
func hIP6ndProxyDump(cl *call, _ *ip6_nd.IP6ndProxyDump) {
	st := cl.st
	keys := make([]nd6ProxyKey, 0, len(st.nd6Proxy))
	for k := range st.nd6Proxy {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if c := keys[a].addr.Compare(keys[b].addr); c != 0 {
			return c < 0
		}
		return keys[a].vrf < keys[b].vrf
	})
	for _, k := range keys {
		cl.send(&ip6_nd.IP6ndProxyDetails{SwIfIndex: interface_types.InterfaceIndex(st.nd6Proxy[k].sws[0]), IP: k.addr.As16()})
	}
}

// nd6ProxyEntries adds the ND proxy's /128s of IPv6 table vrf to a FIB
// computation (fibEntriesOpt).
func (st *state) nd6ProxyEntries(vrf uint32, put func(fibEntry)) {
	for k, e := range st.nd6Proxy {
		if k.vrf != vrf {
			continue
		}
		paths := make([]fib_types.FibPath, 0, len(e.sws))
		for _, sw := range e.sws {
			paths = append(paths, simplePath(true, fib_types.FIB_API_PATH_TYPE_NORMAL, sw, k.addr))
		}
		put(fibEntry{prefix: netip.PrefixFrom(k.addr, 128), src: fibSrcIP6NDProxy, paths: paths})
	}
}

// nd6Proxied tells whether target's /128 in IPv6 table vrf is sourced by
// the ND proxy (fib_entry_is_sourced, whatever its best source).
func (st *state) nd6Proxied(vrf uint32, target [16]byte) bool {
	return st.nd6Proxy[nd6ProxyKey{vrf: vrf, addr: netip.AddrFrom16(target)}] != nil
}

// nd6ProxyIfDeleted removes a deleted interface's paths. VPP keeps a path
// through a deleted interface, unresolved (unconfirmed how its dump shows
// it); the simulator drops it with the interface.
func (st *state) nd6ProxyIfDeleted(sw uint32) {
	for k, e := range st.nd6Proxy {
		e.sws = slices.DeleteFunc(e.sws, func(s uint32) bool { return s == sw })
		if len(e.sws) == 0 {
			delete(st.nd6Proxy, k)
		}
	}
}

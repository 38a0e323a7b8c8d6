package vppsim

import (
	"time"

	"go.fd.io/govpp/binapi/ip_neighbor"
)

// IPv6 neighbour discovery (docs/dev-guide/VPP-FORWARDING.md §11.6):
// icmp6-neighbor-solicitation and icmp6-neighbor-advertisement
// (ip6-nd/ip6_nd.c, ip6_nd_inline.h) and the solicitations ip6-glean and
// ip6-discover-neighbor send (ip-neighbor/ip6_neighbor.c). VPP never runs
// DAD for its own addresses and sends no router advertisements unless
// sw_interface_ip6nd_ra_config turned them on.

// ndThrottle is the NS rate limit per (target, interface): about one per
// millisecond (ip6_neighbor.c nd_throttle).
const ndThrottle = time.Millisecond

// ndLLOption returns the MAC of the options area when it is exactly one
// 8-byte link-layer address option of the given type, the only case VPP
// learns from (and, for an NS, answers with a target link-layer option).
func ndLLOption(opts []byte, typ uint8) ([6]byte, bool) {
	if len(opts) != 8 || opts[0] != typ || opts[1] != 1 {
		return [6]byte{}, false
	}
	return [6]byte(opts[2:8]), true
}

// ndSourceOnLink is the source check of NS and NA: a source that is
// neither :: nor link-local must resolve, in the receiving interface's
// VRF, to an adjacency (neighbour or glean) on the receiving interface.
func (st *state) ndSourceOnLink(p *pkt, i *iface, src [16]byte) bool {
	if src == ([16]byte{}) || isLinkLocal6(src) {
		return true
	}
	e := st.fib6Lookup(p.vrf, src)
	if e == nil || e.kind != fwdPaths {
		return false
	}
	path := e.choosePath(flowHash6(p.ip()))
	return path.SwIfIndex == i.idx
}

// ndSolicitation answers a neighbour solicitation for one of VPP's
// addresses: any address of an interface in the receiving interface's
// VRF (a link-local target: the receiving interface's own), learning the
// solicitor's MAC from a lone source link-layer option; the NS buffer
// becomes the NA and goes straight out the receiving interface (no ip6
// features, no ACL).
func (st *state) ndSolicitation(p *pkt, i *iface) {
	const node = "icmp6-neighbor-solicitation"
	h := p.ip()
	l4 := ip6L4(h)
	src := ip6Src(h)
	target := [16]byte(l4[8:24])
	if !st.ndSourceOnLink(p, i, src) {
		st.drop(p, node, "neighbor solicitations from source not on link")
		return
	}
	mac, hasOpt := ndLLOption(l4[icmp6NSNALen:], icmp6OptSrcLinkLayer)
	if hasOpt && src != ([16]byte{}) {
		st.learnNeighbor6(i, src, mac)
	}
	if !st.ndTargetLocal(p, i, target) {
		st.drop(p, node, "neighbor solicitations for unknown targets")
		return
	}
	// The NA, in place.
	if src == ([16]byte{}) {
		copy(h[24:40], allNodes6[:])
	} else {
		copy(h[24:40], src[:])
	}
	copy(h[8:24], target[:])
	h[7] = ip6NDHopLimit
	l4[0] = icmp6NeighborAdvert
	flags := byte(icmp6NAFlagSolicited | icmp6NAFlagOverride)
	if i.ip6 != nil && i.ip6.raOn {
		flags |= icmp6NAFlagRouter
	}
	l4[4], l4[5], l4[6], l4[7] = flags, 0, 0, 0
	if hasOpt {
		o := l4[icmp6NSNALen:]
		o[0] = icmp6OptTgtLinkLayer
		copy(o[2:8], i.mac[:])
	}
	ip6SetL4Checksum(h)
	f := p.frame()
	copy(f[0:6], f[6:12])
	copy(f[6:12], i.mac[:])
	p.localOrig = true
	st.count(node, "neighbor advertisements sent")
	if p.tr != nil {
		st.tracef(p, node, "NA %s is-at %s to %s", addr6(target), macString(i.mac), addr6(ip6Dst(h)))
	}
	st.interfaceOutput(p, i)
}

// allNodes6 is ff02::1.
var allNodes6 = [16]byte{0xff, 0x02, 15: 1}

// ndTargetLocal tells whether VPP answers an NS for target: an exact /128
// in the receiving interface's VRF that is local from an interface address
// or sourced by the ND proxy (nd6proxy.go; on any interface of the VRF,
// VPP does not check that the proxy is on the receiving one), or, for a
// link-local target, the receiving interface's link-local address.
func (st *state) ndTargetLocal(p *pkt, i *iface, target [16]byte) bool {
	if isLinkLocal6(target) {
		return i.ip6 != nil && i.ip6.ll.As16() == target
	}
	if st.nd6Proxied(i.vrf[1], target) {
		return true
	}
	e := st.fib6Lookup(i.vrf[1], target)
	return e != nil && e.kind == fwdLocal && e.prefix.Bits() == 128 && e.src == fibSrcInterface
}

// ndAdvertisement learns the target's MAC from an NA with a lone target
// link-layer option (solicited or not, new entries included), after the
// same source check as for NS; the NA then goes to ip6-punt.
func (st *state) ndAdvertisement(p *pkt, i *iface) {
	const node = "icmp6-neighbor-advertisement"
	h := p.ip()
	l4 := ip6L4(h)
	if !st.ndSourceOnLink(p, i, ip6Src(h)) {
		st.drop(p, node, "neighbor solicitations from source not on link")
		return
	}
	target := [16]byte(l4[8:24])
	if mac, ok := ndLLOption(l4[icmp6NSNALen:], icmp6OptTgtLinkLayer); ok {
		st.learnNeighbor6(i, target, mac)
		if p.tr != nil {
			st.tracef(p, node, "learned %s is-at %s on %s", addr6(target), macString(mac), i.name)
		}
	}
	st.drop(p, node, "neighbor advertisements received")
}

// learnNeighbor6 records a dynamic IPv6 neighbour (ip_neighbor_learn):
// a static entry keeps its MAC.
func (st *state) learnNeighbor6(i *iface, ip [16]byte, mac [6]byte) {
	k := neighborKey{sw: i.idx, ip: addr6(ip)}
	if n := st.neighbors[k]; n != nil {
		if n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC == 0 {
			n.mac = mac
		}
		return
	}
	if uint32(len(st.neighbors)) >= st.neighborCfg[1].maxNumber {
		st.count("icmp6-neighbor-solicitation", "neighbour limit reached")
		return
	}
	st.neighbors[k] = &neighbor{neighborKey: k, mac: mac, seq: st.nextSeq()}
	st.gen++ // the adjacency /128 changes the FIB
}

// ndDiscover is ip6-glean (glean: an attached prefix) and
// ip6-discover-neighbor (an incomplete neighbour): the packet is dropped
// and, unless throttled per (target, interface), the interface is down or
// has no IPv6 link, an NS for target goes out of o from o's link-local
// address to the target's solicited-node group, with a source link-layer
// option, through ip6-rewrite-mcast (so o's output features, the ACL
// among them, see it).
func (st *state) ndDiscover(p *pkt, o *iface, target [16]byte, glean bool) {
	node := "ip6-discover-neighbor"
	if glean {
		node = "ip6-glean"
	}
	if p.tr != nil {
		st.tracef(p, node, "no neighbour %s on %s", addr6(target), o.name)
	}
	if !throttlePass(st.fwd.ndSent, neighborKey{sw: o.idx, ip: addr6(target)}, st.uptime(), ndThrottle) {
		st.drop(p, node, "throttled")
		return
	}
	if !o.linkUp() || o.ip6 == nil {
		st.drop(p, node, "address overflow drops") // IP6_NEIGHBOR_ERROR_DROP's text
		return
	}
	q := st.newLocalPkt(p, ip6HdrLen+icmp6NSNALen+8)
	q.tr = st.newBufferTrace(p) // its own record: the packet p is dropped
	q.rx, q.rxVRF, q.vrf = o.idx, o.vrf[1], o.vrf[1]
	f := q.buf[q.off:q.end]
	clear(f)
	f[0], f[1], f[2], f[3], f[4], f[5] = 0x33, 0x33, 0xff, target[13], target[14], target[15]
	copy(f[6:12], o.mac[:])
	put16(f[12:14], etherTypeIP6)
	h := f[ethHdrLen:]
	h[0] = 0x60
	put16(h[4:6], icmp6NSNALen+8)
	h[6] = protoICMP6
	h[7] = ip6NDHopLimit
	ll := o.ip6.ll.As16()
	copy(h[8:24], ll[:])
	// ff02::1:ffXX:XXXX, the solicited-node group of the target.
	h[24], h[25], h[35], h[36] = 0xff, 0x02, 0x01, 0xff
	h[37], h[38], h[39] = target[13], target[14], target[15]
	l4 := h[ip6HdrLen:]
	l4[0] = icmp6NeighborSolicit
	copy(l4[8:24], target[:])
	l4[24], l4[25] = icmp6OptSrcLinkLayer, 1
	copy(l4[26:32], o.mac[:])
	ip6SetL4Checksum(h)
	if q.tr != nil {
		st.tracef(q, node, "NS who-has %s tell %s on %s", addr6(target), o.ip6.ll, o.name)
	}
	st.drop(p, node, "neighbor solicitations sent")
	st.ip6Output(q, o)
}

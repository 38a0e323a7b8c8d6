package vppsim

import (
	"encoding/binary"
	"net/netip"

	"go.fd.io/govpp/binapi/fib_types"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// ip6-input, the ip6-unicast and ip6-multicast arcs, ip6-lookup (VRF and
// link-local tables), ip6-rewrite, the ip6-output arc and ip6-local
// (docs/dev-guide/VPP-FORWARDING.md §11). NAT44-ED has no node on any
// IPv6 arc (its features are on ip4-unicast and ip4-output only), so
// IPv6 passes NAT44 untouched; the ACL plugin's acl-plugin-{in,out}-ip6-fa
// run where the IPv4 ones do.

// IPv6 constants.
const (
	ip6HdrLen      = 40
	etherTypeIP6   = 0x86dd
	protoICMP6     = 58
	ip6MinMTU      = 1280 // ip6-rewrite checks only MTUs of at least this; errors are cut to it
	ip6NDHopLimit  = 255
	ip6EchoHopLmt  = 64
	ip6ErrHopLimit = 255
)

// --- IPv6 header access (h is the IPv6 header and what follows) ---

func ip6Src(h []byte) [16]byte    { return [16]byte(h[8:24]) }
func ip6Dst(h []byte) [16]byte    { return [16]byte(h[24:40]) }
func ip6NH(h []byte) uint8        { return h[6] }
func ip6HopLimit(h []byte) int    { return int(h[7]) }
func ip6PayLen(h []byte) int      { return int(be16(h[4:6])) }
func addr6(a [16]byte) netip.Addr { return netip.AddrFrom16(a) }

// ip6L4 is the upper-layer part of a packet (extension headers are not
// parsed: VPP's ip6-local and ACLs read ip->protocol too).
func ip6L4(h []byte) []byte {
	end := min(ip6HdrLen+ip6PayLen(h), len(h))
	return h[ip6HdrLen:end]
}

// ip6Checksum is the ICMPv6/UDP/TCP checksum over the IPv6 pseudo-header
// and l4 (0 when l4 carries a correct checksum).
func ip6Checksum(h, l4 []byte, proto uint8) uint16 {
	var s uint32
	for k := 8; k < 40; k += 2 {
		s += uint32(h[k])<<8 | uint32(h[k+1])
	}
	s += uint32(len(l4)>>16) + uint32(len(l4)&0xffff) + uint32(proto)
	return checksum(l4, s)
}

// ip6SetL4Checksum computes the checksum of an ICMPv6, UDP or TCP packet
// the simulator builds or changes.
func ip6SetL4Checksum(h []byte) {
	l4 := ip6L4(h)
	var c []byte
	switch ip6NH(h) {
	case protoICMP6:
		c = l4[2:4]
	case protoUDP:
		c = l4[6:8]
	case protoTCP:
		c = l4[16:18]
	default:
		return
	}
	c[0], c[1] = 0, 0
	v := ip6Checksum(h, l4, ip6NH(h))
	if v == 0 && ip6NH(h) == protoUDP {
		v = 0xffff
	}
	put16(c, v)
}

// isMulticast6 tells whether a is in ff00::/8.
func isMulticast6(a [16]byte) bool { return a[0] == 0xff }

// isLinkLocal6 tells whether a is in fe80::/10.
func isLinkLocal6(a [16]byte) bool { return a[0] == 0xfe && a[1]&0xc0 == 0x80 }

// ip6Input checks a packet as ip6-input does (ip6_input.h
// ip6_input_check_x1): version 6, hop limit at least 1 (0 -> ICMPv6
// time exceeded), at least 40 bytes, each later check overriding an
// earlier one; the payload length is not compared with the frame here.
// Then the multicast or the unicast arc.
func (st *state) ip6Input(p *pkt, i *iface) {
	st.visit(nodeIP6Input)
	// As ip4-input: VNET_INTERFACE_COUNTER_IP6 for every packet (ip6_input.c).
	st.statsIfSimple(statseg.IfIP6, i.idx)
	h := p.ip()
	reason := ""
	if len(h) >= 1 && h[0]>>4 != 6 {
		reason = "ip6 version != 6"
	}
	if len(h) >= 8 && h[7] == 0 {
		reason = "ip6 ttl <= 1"
	}
	if len(h) < ip6HdrLen {
		reason = "ip6 length < 40 bytes"
	}
	if p.tr != nil && len(h) >= ip6HdrLen {
		st.tracef(p, "ip6-input", "%s: %s -> %s hop-limit %d payload-length %d on %s", protoName(ip6NH(h)),
			addr6(ip6Src(h)), addr6(ip6Dst(h)), ip6HopLimit(h), ip6PayLen(h), i.name)
	}
	switch reason {
	case "":
	case "ip6 ttl <= 1":
		// Straight to ip6-icmp-error, before the ip6-unicast features.
		st.icmp6Error(p, icmp6TimeExceeded, 0, 0)
		st.drop(p, "ip6-input", reason)
		return
	default:
		st.drop(p, "ip6-input", reason)
		return
	}
	if n := ip6HdrLen + ip6PayLen(h); n < len(h) {
		p.end = p.l3 + n // strip Ethernet padding
		h = p.ip()
	}
	// ip6-not-enabled is the first feature of both arcs.
	if !st.ip6Enabled(i) {
		st.drop(p, "ip6-not-enabled", "ip6 not enabled on the interface")
		return
	}
	if isMulticast6(ip6Dst(h)) {
		st.ip6Multicast(p, i)
		return
	}
	if st.cnatFeatureOn(i.idx, cnatInput6) && st.cnatInputNode(p, true) {
		return
	}
	if st.aclFilter != nil && !st.aclCheck6(p, i.idx, true) {
		return
	}
	if st.cnatFeatureOn(i.idx, cnatSNAT6) && !st.cnatSNATNode(p, i, true) {
		return
	}
	st.ip6Lookup(p)
}

// ip6Multicast is the ip6-multicast arc and the mFIB lookup
// (mfib/ip6_mfib.c): every table accepts ff02::1, ff02::2, ff02::16 and
// every solicited-node group ff02::1:ff00:0/104 on IPv6-enabled
// interfaces, for VPP itself; anything else, or an interface whose IPv6
// link is not up (unnumbered only), fails the RPF check.
func (st *state) ip6Multicast(p *pkt, i *iface) {
	h := p.ip()
	d := ip6Dst(h)
	if i.ip6 == nil || !acceptedGroup6(d) {
		st.drop(p, "ip6-mfib-forward-rpf", "Multicast RPF check failed")
		return
	}
	if p.tr != nil {
		st.tracef(p, "ip6-mfib-forward-lookup", "fib %d group %s: accept on %s, for-us", p.vrf, addr6(d), i.name)
	}
	st.ip6Local(p)
}

// acceptedGroup6 tells whether d is one of the groups every IPv6 mFIB
// accepts (ip6_mfib.c ip6_mfib_special_addresses).
func acceptedGroup6(d [16]byte) bool {
	if d[0] != 0xff || d[1] != 0x02 || binary.BigEndian.Uint64(d[2:10]) != 0 {
		return false
	}
	tail := [6]byte(d[10:16])
	switch {
	case tail == [6]byte{0, 0, 0, 0, 0, 1}, tail == [6]byte{0, 0, 0, 0, 0, 2}, tail == [6]byte{0, 0, 0, 0, 0, 0x16}:
		return true
	}
	return tail[0] == 0 && tail[1] == 1 && tail[2] == 0xff
}

// aclCheck6 runs the ACL hook on an IPv6 packet (acl-plugin-in-ip6-fa,
// acl-plugin-out-ip6-fa); false means it was dropped. Rules of the other
// family never match (aclRule.matches).
func (st *state) aclCheck6(p *pkt, sw uint32, input bool) bool {
	h := p.ip()
	f := &st.fwd.aclFlow
	*f = aclFlow{Src: addr6(ip6Src(h)), Dst: addr6(ip6Dst(h)), Proto: ip6NH(h)}
	l4 := ip6L4(h)
	f.NoL4 = len(l4) == 0
	switch f.Proto {
	case protoTCP:
		if len(l4) >= 20 {
			f.SrcPort, f.DstPort, f.TCPFlags = be16(l4[0:2]), be16(l4[2:4]), l4[13]
		}
	case protoUDP:
		if len(l4) >= udpHdrLen {
			f.SrcPort, f.DstPort = be16(l4[0:2]), be16(l4[2:4])
		}
	case protoICMP6:
		if len(l4) >= 2 {
			f.ICMPType, f.ICMPCode = l4[0], l4[1]
			f.SrcPort, f.DstPort = uint16(l4[0]), uint16(l4[1])
		}
	}
	return st.aclApply(p, sw, input, "acl-plugin-in-ip6-fa", "acl-plugin-out-ip6-fa")
}

// ip6Lookup looks the destination up in the packet's IPv6 table (or, for
// fe80::/10, in the receiving interface's link-local table) and forwards.
func (st *state) ip6Lookup(p *pkt) {
	st.visit(nodeIP6Lookup)
	if p.depth++; p.depth > maxGraphDepth {
		st.drop(p, "ip6-lookup", "graph loop")
		return
	}
	h := p.ip()
	dst := ip6Dst(h)
	if cc := st.cnatClientFor(p, addr6(dst)); cc != nil {
		if p.tr != nil {
			st.tracef(p, "ip6-lookup", "fib 0 dpo-idx %s/128: cnat client", cc.addr)
		}
		if st.cnatTx(p, cc, true) {
			return
		}
	}
	p.cnatSkip = false
	e := st.fib6Lookup(p.vrf, dst)
	if e == nil {
		st.drop(p, "ip6-lookup", "no such FIB table")
		return
	}
	if p.tr != nil {
		st.tracef(p, "ip6-lookup", "fib %d dpo-idx %s: %s", p.vrf, e.prefix, fwdKindName6(e.kind))
	}
	st.ip6Forward(p, e, dst, flowHash6(h))
}

// ip6Forward sends a packet on as FIB entry e forwards it; target is the
// address an attached path resolves, hash picks among multiple paths.
func (st *state) ip6Forward(p *pkt, e *fibFwd, target [16]byte, hash uint32) {
	switch e.kind {
	case fwdDrop:
		if e.prefix.Bits() == 0 {
			st.drop(p, "ip6-drop", "ip6 destination lookup miss")
		} else {
			st.drop(p, "ip6-drop", "ip6 drop")
		}
	case fwdLinkLocal:
		st.ip6LinkLocal(p)
	case fwdUnreach, fwdProhibit:
		st.ipNull(p, e.kind == fwdProhibit, true)
	case fwdLocal:
		st.ip6Local(p)
	default:
		st.forwardPath6(p, e.choosePath(hash), target, 0)
	}
}

// ip6LinkLocal is the ip6-link-local node: the lookup in the link-local
// table of the receiving interface, whatever the packet's VRF; a packet
// to another link-local address is resolved by ND and sent back out the
// interface it came in on.
func (st *state) ip6LinkLocal(p *pkt) {
	i := st.ifaces[p.rx]
	if i == nil {
		st.drop(p, "ip6-link-local", "receiving interface gone")
		return
	}
	dst := ip6Dst(p.ip())
	res, n := st.ip6llLookup(i, addr6(dst))
	if p.tr != nil {
		st.tracef(p, "ip6-link-local", "lookup %s in the link-local table of %s", addr6(dst), i.name)
	}
	switch res {
	case ip6llNone:
		st.drop(p, "ip6-link-local", "ip6 destination lookup miss")
	case ip6llLocal:
		st.ip6Local(p)
	case ip6llNeighbor:
		st.ip6Rewrite(p, i, n.mac)
	default:
		st.ndDiscover(p, i, dst, true)
	}
}

// forwardPath6 sends an IPv6 packet along one path of a FIB entry, as
// forwardPath does for IPv4 (docs/dev-guide/VPP-FORWARDING.md §3 applies
// to IPv6 paths unchanged).
func (st *state) forwardPath6(p *pkt, path *fib_types.FibPath, target [16]byte, rdepth int) {
	nh := [16]byte(path.Nh.Address.XXX_UnionData[:16])
	switch {
	case path.Type == fib_types.FIB_API_PATH_TYPE_DROP:
		st.drop(p, "ip6-drop", "ip6 drop")
	case path.SwIfIndex != noIndex:
		o := st.ifaces[path.SwIfIndex]
		if o == nil {
			st.drop(p, "ip6-lookup", "path interface gone")
			return
		}
		if nh != [16]byte{} {
			target = nh
		}
		n := st.neighbors[neighborKey{sw: o.idx, ip: addr6(target)}]
		if n == nil {
			st.ndDiscover(p, o, target, nh == [16]byte{})
			return
		}
		st.ip6Rewrite(p, o, n.mac)
	case nh != [16]byte{}:
		if rdepth > 8 {
			st.drop(p, "ip6-lookup", "recursion loop")
			return
		}
		e := st.fib6Lookup(path.TableID, nh)
		if e == nil || e.kind != fwdPaths {
			if e != nil && e.kind == fwdLocal {
				st.ip6Local(p)
				return
			}
			st.drop(p, "ip6-drop", "recursive next hop unresolved")
			return
		}
		if reason := resolveViaRefused(path, e); reason != "" {
			st.drop(p, "ip6-drop", reason)
			return
		}
		st.forwardPath6(p, e.choosePath(flowHash6(p.ip())), nh, rdepth+1)
	default:
		if p.tr != nil {
			st.tracef(p, "lookup-ip6-dst", "lookup in fib %d", path.TableID)
		}
		p.vrf = path.TableID
		p.interVRF = true
		st.ip6Lookup(p)
	}
}

// ip6Rewrite is ip6-rewrite (ip6_forward.c ip6_rewrite_inline_with_gso):
// the hop limit of a packet not originated by VPP is decremented and one
// reaching 0 gets ICMPv6 time exceeded; the total length is compared with
// the egress IPv6 MTU when that is at least 1280: a forwarded packet too
// big gets ICMPv6 packet too big (IPv6 never fragments forwarded
// packets); then the Ethernet header and the ip6-output arc.
func (st *state) ip6Rewrite(p *pkt, o *iface, dmac [6]byte) {
	st.visit(nodeIP6Rewrite)
	h := p.ip()
	if !p.localOrig {
		if h[7] <= 1 {
			st.icmp6Error(p, icmp6TimeExceeded, 0, 0)
			st.drop(p, "ip6-rewrite", "ip6 ttl <= 1")
			return
		}
		h[7]--
	}
	mtu := o.mtu[2]
	if mtu == 0 {
		mtu = o.mtu[0]
	}
	if mtu >= ip6MinMTU && ip6HdrLen+ip6PayLen(h) > int(mtu) {
		if p.localOrig {
			// VPP fragments what it originates (ip6-frag); the
			// simulator does not build IPv6 fragments.
			st.drop(p, "ip6-frag", "fragmentation of a local IPv6 packet not simulated")
			return
		}
		st.icmp6Error(p, icmp6PacketTooBig, 0, mtu)
		st.drop(p, "ip6-rewrite", "ip6 MTU exceeded")
		return
	}
	p.off = p.l3 - ethHdrLen
	f := p.buf[p.off:]
	copy(f[0:6], dmac[:])
	copy(f[6:12], o.mac[:])
	put16(f[12:14], etherTypeIP6)
	if p.tr != nil {
		st.tracef(p, "ip6-rewrite", "tx %s: %s -> %s hop-limit %d", o.name, macString(o.mac), macString(dmac), h[7])
	}
	st.ip6Output(p, o)
}

// ip6Output runs the ip6-output arc of the egress interface: ACL-out,
// cnat-output, then interface-output (no NAT44 node on IPv6 arcs).
func (st *state) ip6Output(p *pkt, o *iface) {
	if st.aclFilter != nil && !st.aclCheck6(p, o.idx, false) {
		return
	}
	if st.cnatFeatureOn(o.idx, cnatOutput6) && !st.cnatOutputNode(p, o, true) {
		return
	}
	st.interfaceOutput(p, o)
}

// ip6Local delivers a packet to VPP itself (ip6_forward.c
// ip6_local_inline): UDP and ICMPv6 lengths and checksums are checked (a
// UDP checksum of 0 is accepted; TCP is not a built-in protocol of
// ip6-local and is not checked); a packet that is not ICMPv6 and whose
// source is not link-local needs a route to its source in the lookup
// table (loose uRPF); then ICMPv6 -> ip6-icmp-input, UDP -> ip6-udp-lookup,
// everything else -> ip6-punt, which drops unless an STN rule takes the packet
// (ip6Punt, fwd_stn6.go).
func (st *state) ip6Local(p *pkt) {
	st.visit(nodeIP6Local)
	h := p.ip()
	proto := ip6NH(h)
	if ip6HdrLen+ip6PayLen(h) > len(h) {
		st.drop(p, "ip6-local", "ip6 length > l2 length")
		return
	}
	l4 := ip6L4(h)
	src := ip6Src(h)
	switch proto {
	case protoUDP:
		switch {
		case len(l4) < udpHdrLen:
			st.drop(p, "ip6-local", "ip6 length > l2 length")
			return
		case int(be16(l4[4:6])) > len(l4):
			st.drop(p, "ip6-local", "inconsistent udp/ip lengths")
			return
		case be16(l4[6:8]) != 0 && ip6Checksum(h, l4, protoUDP) != 0:
			st.drop(p, "ip6-local", "bad udp checksum")
			return
		}
	case protoICMP6:
		if len(l4) < 4 || ip6Checksum(h, l4, protoICMP6) != 0 {
			st.drop(p, "ip6-local", "bad icmp checksum")
			return
		}
	}
	if proto != protoICMP6 && !isLinkLocal6(src) {
		if se := st.fib6Lookup(p.vrf, src); se == nil || se.kind == fwdDrop {
			st.drop(p, "ip6-local", "ip6 source lookup miss")
			return
		}
	}
	if p.tr != nil {
		st.tracef(p, "ip6-local", "%s: %s -> %s", protoName(proto), addr6(src), addr6(ip6Dst(h)))
	}
	switch proto {
	case protoICMP6:
		st.icmp6Input(p)
	case protoUDP:
		if st.vxlan6PortRegistered(be16(l4[2:4])) {
			st.drop(p, "vxlan6-input", "VXLAN over an IPv6 underlay not simulated")
			return
		}
		if st.udpPuntUnknown() {
			st.ip6Punt(p, "ip6-udp-lookup", "No listener for dst port")
			return
		}
		st.icmp6Error(p, icmp6DestUnreach, icmp6CodePortUnreach, 0)
		st.drop(p, "ip6-udp-lookup", "No listener for dst port")
	default:
		if p.tr != nil {
			st.tracef(p, "ip6-punt", "no handler for protocol %d", proto)
		}
		st.ip6Punt(p, "ip6-local", "unknown ip protocol")
	}
}

// vxlan6PortRegistered tells whether a VXLAN tunnel with an IPv6
// underlay registered the UDP port (vxlan6 ports are registered apart
// from vxlan4 ones).
func (st *state) vxlan6PortRegistered(port uint16) bool {
	for k := range st.vxlanKeys {
		if k.src.Is6() && (k.dstPort == port || (k.dstPort == 0 && port == vxlanPort)) {
			return true
		}
	}
	return false
}

func fwdKindName6(k fwdKind) string {
	switch k {
	case fwdLinkLocal:
		return "ip6-link-local"
	case fwdUnreach:
		return "ip6-null action:send-unreachable"
	case fwdProhibit:
		return "ip6-null action:send-prohibited"
	}
	return fwdKindName(k)
}

// flowHash6 is the per-flow hash of IPv6 load balancing (VPP's default
// flow hash for IPv6 covers src, dst, ports, protocol and flow label).
func flowHash6(h []byte) uint32 {
	x := uint32(0x811c9dc5)
	for _, b := range h[8:40] {
		x = (x ^ uint32(b)) * 16777619
	}
	x ^= binary.BigEndian.Uint32(h[0:4]) & 0xfffff
	x ^= uint32(ip6NH(h))
	if l4 := ip6L4(h); (ip6NH(h) == protoTCP || ip6NH(h) == protoUDP) && len(l4) >= 4 {
		x ^= binary.BigEndian.Uint32(l4[0:4])
	}
	x ^= x >> 15
	x *= 0x2c1b3c6d
	x ^= x >> 12
	return x
}

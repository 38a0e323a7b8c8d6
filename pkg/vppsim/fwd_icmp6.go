package vppsim

import (
	"encoding/binary"
	"math/bits"
	"time"
)

// ICMPv6 as VPP sends and receives it (docs/dev-guide/VPP-FORWARDING.md
// §11.4-11.5): ip6-icmp-input's checks, echo replies, ip6-icmp-error and
// ip6-null.

// ICMPv6 types and codes.
const (
	icmp6DestUnreach      = 1
	icmp6PacketTooBig     = 2
	icmp6TimeExceeded     = 3
	icmp6EchoRequest      = 128
	icmp6EchoReply        = 129
	icmp6RouterSolicit    = 133
	icmp6RouterAdvert     = 134
	icmp6NeighborSolicit  = 135
	icmp6NeighborAdvert   = 136
	icmp6CodeNoRoute      = 0 // ip6-null, ICMP_UNREACH paths
	icmp6CodeProhibited   = 1 // ip6-null, ICMP_PROHIBIT paths
	icmp6CodePortUnreach  = 4 // ip6-udp-lookup, no listener
	icmp6ErrorWindow      = time.Millisecond
	icmp6ErrorMaxLen      = ip6MinMTU
	icmp6ErrHdrLen        = 8
	icmp6NSNALen          = 24 // type, code, checksum, flags/reserved, target
	icmp6OptSrcLinkLayer  = 1
	icmp6OptTgtLinkLayer  = 2
	icmp6NAFlagRouter     = 0x80
	icmp6NAFlagSolicited  = 0x40
	icmp6NAFlagOverride   = 0x20
	icmp6RouterSolicitLen = 8
	icmp6RouterAdvertLen  = 16
	icmp6RedirectLen      = 40
)

// icmp6Handled tells whether a type has a node (ip/icmp6.c
// input_next_index_by_type: ping registers echo request and reply,
// ip6-nd NS and NA, ip6-ra RS and RA); every other type is punted.
func icmp6Handled(typ uint8) bool {
	return typ == icmp6EchoRequest || typ == icmp6EchoReply || (typ >= icmp6RouterSolicit && typ <= icmp6NeighborAdvert)
}

// icmp6Limits are icmp6_init's tables: the highest code of a type (from
// foreach_icmp6_code; 0 for types without codes), the lowest hop limit
// (255 for RS, RA, NS, NA and redirect) and the shortest payload (the
// type's header; 4 bytes by default).
func icmp6Limits(typ uint8) (maxCode uint8, minHop, minLen int) {
	minLen = 4
	switch typ {
	case icmp6DestUnreach:
		maxCode = 6
	case icmp6TimeExceeded:
		maxCode = 1
	case 4: // parameter problem
		maxCode = 3
	case 138, 139, 140: // router renumbering, node information
		maxCode = 2
		if typ == 138 {
			maxCode = 1
		}
	case icmp6RouterSolicit:
		minHop, minLen = ip6NDHopLimit, icmp6RouterSolicitLen
	case icmp6RouterAdvert:
		minHop, minLen = ip6NDHopLimit, icmp6RouterAdvertLen
	case icmp6NeighborSolicit, icmp6NeighborAdvert:
		minHop, minLen = ip6NDHopLimit, icmp6NSNALen
	case 137: // redirect
		minHop, minLen = ip6NDHopLimit, icmp6RedirectLen
	}
	return maxCode, minHop, minLen
}

// icmp6Input is ip6-icmp-input (ip/icmp6.c ip6_icmp_input): a type
// without a node, a code above the type's maximum, a hop limit below 255
// for RS, RA, NS, NA and redirect, a payload shorter than the type's
// header - each later check overriding an earlier one - send the packet
// to ip6-punt (ip6Punt: an STN rule's, else dropped); else it goes to the type's node.
func (st *state) icmp6Input(p *pkt) {
	h := p.ip()
	l4 := ip6L4(h)
	typ, code := l4[0], l4[1]
	reason := ""
	maxCode, minHop, minLen := icmp6Limits(typ)
	if !icmp6Handled(typ) {
		reason = "unknown type"
	}
	if code > maxCode {
		reason = "invalid code for type"
	}
	if ip6HopLimit(h) < minHop {
		reason = "hop_limit != 255"
	}
	if ip6PayLen(h) < minLen {
		reason = "payload length too small for type"
	}
	if reason != "" {
		if p.tr != nil {
			st.tracef(p, "ip6-icmp-input", "ICMPv6 type %d code %d: %s -> ip6-punt", typ, code, reason)
		}
		st.ip6Punt(p, "ip6-icmp-input", reason)
		return
	}
	if p.tr != nil {
		st.tracef(p, "ip6-icmp-input", "ICMPv6 type %d code %d", typ, code)
	}
	i := st.ifaces[p.rx]
	switch typ {
	case icmp6EchoRequest:
		st.icmp6EchoReply(p)
	case icmp6EchoReply:
		// ping.c: a reply no CLI ping waits for goes to ip6-punt.
		st.ip6Punt(p, "ip6-icmp-echo-reply", "ip6 punt")
	case icmp6NeighborSolicit:
		st.ndSolicitation(p, i)
	case icmp6NeighborAdvert:
		st.ndAdvertisement(p, i)
	case icmp6RouterSolicit:
		if i == nil || i.ip6 == nil || !i.ip6.raOn {
			st.drop(p, "icmp6-router-solicitation", "neighbor discovery not configured")
			return
		}
		// VPP would answer with a (rate-limited) RA: not simulated.
		st.drop(p, "icmp6-router-solicitation", "solicited router advertisement not simulated")
	default: // router advertisement
		if !isLinkLocal6(ip6Src(h)) {
			st.drop(p, "icmp6-router-advertisement", "router advertisement source not link local")
			return
		}
		// VPP records it (it configures nothing from it by default).
		st.count("icmp6-router-advertisement", "router advertisements received")
		st.putPkt(p)
	}
}

// icmp6EchoReply answers an echo request in place (ping.c
// ip6-icmp-echo-request): addresses swapped (a request to a multicast
// group is answered from that group: nothing special-cases it), type 129,
// hop limit 64, new checksum; it is locally originated and goes to
// ip6-lookup in the table where the request was delivered (a reply to a
// link-local address through the receiving interface's link-local table).
func (st *state) icmp6EchoReply(p *pkt) {
	h := p.ip()
	src, dst := ip6Src(h), ip6Dst(h)
	copy(h[8:24], dst[:])
	copy(h[24:40], src[:])
	h[7] = ip6EchoHopLmt
	l4 := ip6L4(h)
	l4[0], l4[1] = icmp6EchoReply, 0
	ip6SetL4Checksum(h)
	p.localOrig = true
	p.interVRF = false
	st.count("ip6-icmp-input", "echo replies sent")
	if p.tr != nil {
		st.tracef(p, "ip6-icmp-echo-request", "echo reply %s -> %s", addr6(dst), addr6(src))
	}
	st.ip6Lookup(p)
}

// icmp6Error sends an ICMPv6 error about p (which the caller drops), as
// ip6-icmp-error does (ip/icmp6.c): throttled per (src, dst) of p
// (util/throttle.h, 1 ms windows; a throttled error is counted "error
// message dropped"); a new IPv6 header (hop limit 255) and an 8-byte
// ICMPv6 header (type, code, 32-bit data: the MTU for packet too big)
// before a copy of p, all cut to 1280 bytes; source by ip_sas.c
// ip6_sas_by_sw_if_index on the receiving interface (icmp6SourceFor);
// routed by ip6-lookup in the receiving interface's VRF. VPP sends
// errors about ICMPv6 errors too: nothing in ip6-icmp-error checks.
func (st *state) icmp6Error(p *pkt, typ, code uint8, data uint32) {
	h := p.ip()
	if len(h) < ip6HdrLen {
		return
	}
	if st.fwd.err6Throttle.limitedKey(st.uptime(), fold6(ip6Src(h))^fold6(ip6Dst(h))) {
		st.count("ip6-icmp-error", "error message dropped")
		return
	}
	i := st.ifaces[p.rx]
	if i == nil {
		return
	}
	srcAddr, found := st.icmp6SourceFor(i, ip6Src(h))
	if !found {
		st.count("ip6-icmp-error", "error message dropped")
		if p.tr != nil {
			st.tracef(p, "ip6-icmp-error", "no source address on %s: error dropped", i.name)
		}
		return
	}
	n := min(len(h), icmp6ErrorMaxLen-ip6HdrLen-icmp6ErrHdrLen)
	total := ip6HdrLen + icmp6ErrHdrLen + n
	q := st.newLocalPkt(p, total)
	o := q.buf[q.l3:q.end]
	clear(o[:ip6HdrLen+icmp6ErrHdrLen])
	o[0] = 0x60
	put16(o[4:6], uint16(total-ip6HdrLen))
	o[6] = protoICMP6
	o[7] = ip6ErrHopLimit
	copy(o[8:24], srcAddr[:])
	copy(o[24:40], h[8:24])
	icmp := o[ip6HdrLen:]
	icmp[0], icmp[1] = typ, code
	binary.BigEndian.PutUint32(icmp[4:8], data)
	copy(icmp[icmp6ErrHdrLen:], h[:n])
	ip6SetL4Checksum(o)
	q.rx, q.rxVRF, q.vrf = p.rx, i.vrf[1], i.vrf[1]
	q.tr = p.tr
	st.count("ip6-icmp-error", icmp6SentReason(typ))
	if q.tr != nil {
		st.tracef(q, "ip6-icmp-error", "ICMPv6 type %d code %d to %s", typ, code, addr6(ip6Src(h)))
	}
	st.ip6Lookup(q)
}

// icmp6SentReason is the counter ip6-icmp-error bumps per type
// (icmp6.c icmp6_icmp_type_to_error).
func icmp6SentReason(typ uint8) string {
	switch typ {
	case icmp6DestUnreach:
		return "destination unreachable response sent"
	case icmp6PacketTooBig:
		return "packet too big response sent"
	case icmp6TimeExceeded:
		return "hop limit exceeded response sent"
	}
	return "parameter problem response sent"
}

// icmp6SourceFor is ip_sas.c ip6_sas_by_sw_if_index: to a link-local
// destination or one in ff02::/32, the interface's link-local address;
// otherwise, of the interface's global addresses (its unnumbered donor's),
// the one sharing the longest prefix with the destination, the first on a
// tie; none -> no source (a link-local address alone does not do).
func (st *state) icmp6SourceFor(i *iface, dst [16]byte) ([16]byte, bool) {
	if isLinkLocal6(dst) || (dst[0] == 0xff && dst[1] == 0x02 && dst[2] == 0 && dst[3] == 0) {
		if i.ip6 == nil {
			return [16]byte{}, false
		}
		return i.ip6.ll.As16(), true
	}
	var best [16]byte
	bestLen, found := -1, false
	for _, a := range st.effectiveAddrs(i) {
		if !a.Addr().Is6() {
			continue
		}
		cand := a.Addr().As16()
		if l := commonLen6(cand, dst); l > bestLen {
			best, bestLen, found = cand, l, true
		}
	}
	return best, found
}

// commonLen6 is the length of the common prefix of two addresses.
func commonLen6(a, b [16]byte) int {
	hi := binary.BigEndian.Uint64(a[:8]) ^ binary.BigEndian.Uint64(b[:8])
	if hi != 0 {
		return bits.LeadingZeros64(hi)
	}
	return 64 + bits.LeadingZeros64(binary.BigEndian.Uint64(a[8:])^binary.BigEndian.Uint64(b[8:]))
}

// fold6 folds an IPv6 address into 64 bits for the throttles.
func fold6(a [16]byte) uint64 {
	return binary.BigEndian.Uint64(a[:8])*0x9e3779b97f4a7c15 ^ binary.BigEndian.Uint64(a[8:])
}

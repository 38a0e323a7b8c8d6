package vppsim

import (
	"encoding/binary"
	"net"
	"net/netip"
)

// The forwarding graph (fwd_*.go) moves packets through the state the API
// handlers write, following docs/dev-guide/VPP-FORWARDING.md (VPP 25.10).
//
// Concurrency: a frame is processed whole, depth-first through the nodes,
// with Sim.mu held, exactly like a handler. The graph therefore reads the
// same state the handlers write without copies; what it changes (learned
// neighbours and L2 FIB entries, NAT sessions, counters, traces) is changed
// under the same lock. Derived lookup structures (the compiled FIBs of
// fwd_fib.go) are rebuilt lazily when the configuration generation changes
// (every handler run bumps it).
//
// Buffers: packets come from a free list owned by the state and are
// returned when they leave or are dropped, so the steady state allocates
// nothing per packet. Node names and decisions are formatted only while a
// packet is traced.

// Ethernet and IPv4 constants.
const (
	ethHdrLen     = 14
	ip4HdrLen     = 20
	udpHdrLen     = 8
	vxlanHdrLen   = 8
	vxlanEncapSz  = ip4HdrLen + udpHdrLen + vxlanHdrLen // 36: outer headers before the inner frame
	etherTypeIP4  = 0x0800
	etherTypeARP  = 0x0806
	etherTypeVLN  = 0x8100
	etherTypeQinQ = 0x88a8

	protoICMP uint8 = 1
	protoTCP  uint8 = 6
	protoUDP  uint8 = 17

	vxlanPort = 4789

	// pktHeadroom is the space kept in front of a received frame so that
	// VXLAN encapsulation never copies.
	pktHeadroom = 128
	// pktMaxFrame is the largest frame the simulator handles (9216 link
	// MTU plus headers).
	pktMaxFrame = 9216 + 64
	// maxGraphDepth bounds recursion through loops of the graph (BVI,
	// loopback echo, encapsulation, inter-VRF lookups).
	maxGraphDepth = 32
)

var broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// pkt is a buffer moving through the graph. The frame is buf[off:end];
// l3 is the offset of the IPv4 header in buf while the packet is on the IP
// path.
type pkt struct {
	buf []byte
	off int
	end int
	l3  int

	rx    uint32 // sw_if_index the packet was received on (for L3: the L3 interface, e.g. the BVI)
	rxVRF uint32 // IPv4 table of the receiving interface
	vrf   uint32 // table of the next lookup (VPP's TX-table field)

	natted    bool // NAT translated or classified it (ip4-local source check exempt)
	interVRF  bool // went through an inter-VRF lookup
	localOrig bool // originated by VPP (no TTL decrement, no input features)
	// cnatSkip makes the next table-0 lookup ignore cnat clients (the
	// packet already went through ip4/ip6-cnat-tx and follows the FIB).
	cnatSkip bool
	shg      uint8
	depth    int

	tr *traceRec // nil unless the packet is traced
}

func (p *pkt) frame() []byte { return p.buf[p.off:p.end] }
func (p *pkt) ip() []byte    { return p.buf[p.l3:p.end] }
func (p *pkt) length() int   { return p.end - p.off }

// dstMAC and srcMAC of the frame.
func (p *pkt) dstMAC() (m [6]byte) { copy(m[:], p.buf[p.off:]); return }
func (p *pkt) srcMAC() (m [6]byte) { copy(m[:], p.buf[p.off+6:]); return }

// getPkt returns a free buffer with headroom; the caller fills it.
func (st *state) getPkt() *pkt {
	f := &st.fwd
	if n := len(f.free); n > 0 {
		p := f.free[n-1]
		f.free = f.free[:n-1]
		*p = pkt{buf: p.buf}
		return p
	}
	return &pkt{buf: make([]byte, pktHeadroom+pktMaxFrame+pktHeadroom)}
}

// putPkt returns a buffer to the free list.
func (st *state) putPkt(p *pkt) {
	p.tr = nil
	if len(st.fwd.free) < 256 {
		st.fwd.free = append(st.fwd.free, p)
	}
}

// newLocalPkt returns a buffer for a packet VPP originates because of p
// (an ICMP error, an ARP request, a neighbour solicitation): l3Len bytes
// of L3 behind an Ethernet header's room, locally originated, at p's graph
// depth. The caller sets its trace (p's own record or a new one).
func (st *state) newLocalPkt(p *pkt, l3Len int) *pkt {
	q := st.getPkt()
	q.off = pktHeadroom
	q.l3 = q.off + ethHdrLen
	q.end = q.l3 + l3Len
	q.localOrig = true
	q.depth = p.depth
	return q
}

// clonePkt copies a packet (for flooding).
func (st *state) clonePkt(p *pkt) *pkt {
	q := st.getPkt()
	q.off = pktHeadroom
	q.end = q.off + p.length()
	copy(q.buf[q.off:q.end], p.frame())
	q.l3 = p.l3 - p.off + q.off
	q.rx, q.rxVRF, q.vrf, q.shg, q.depth, q.tr = p.rx, p.rxVRF, p.vrf, p.shg, p.depth, p.tr
	return q
}

// --- IPv4 header access (h is the IPv4 header and what follows) ---

func ip4Src(h []byte) [4]byte    { return [4]byte(h[12:16]) }
func ip4Dst(h []byte) [4]byte    { return [4]byte(h[16:20]) }
func ip4IHL(h []byte) int        { return int(h[0]&0x0f) * 4 }
func ip4Proto(h []byte) uint8    { return h[9] }
func ip4TTL(h []byte) uint8      { return h[8] }
func ip4TotalLen(h []byte) int   { return int(binary.BigEndian.Uint16(h[2:4])) }
func ip4DF(h []byte) bool        { return h[6]&0x40 != 0 }
func ip4FragOff(h []byte) uint16 { return binary.BigEndian.Uint16(h[6:8]) & 0x1fff }
func ip4L4(h []byte) []byte      { return h[ip4IHL(h):] }
func addr4(a [4]byte) netip.Addr { return netip.AddrFrom4(a) }
func u32(a [4]byte) uint32       { return binary.BigEndian.Uint32(a[:]) }
func be16(b []byte) uint16       { return binary.BigEndian.Uint16(b) }
func put16(b []byte, v uint16)   { binary.BigEndian.PutUint16(b, v) }
func isGroupMAC(m [6]byte) bool  { return m[0]&1 != 0 }
func macString(m [6]byte) string { return net.HardwareAddr(m[:]).String() }

// checksum is the Internet checksum of b folded into sum.
func checksum(b []byte, sum uint32) uint16 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ip4SetChecksum recomputes the IPv4 header checksum.
func ip4SetChecksum(h []byte) {
	h[10], h[11] = 0, 0
	put16(h[10:], checksum(h[:ip4IHL(h)], 0))
}

// pseudoSum is the TCP/UDP pseudo-header sum.
func pseudoSum(h []byte, proto uint8, l4len int) uint32 {
	var s uint32
	for k := 12; k < 20; k += 2 {
		s += uint32(h[k])<<8 | uint32(h[k+1])
	}
	return s + uint32(proto) + uint32(l4len)
}

// l4ChecksumOK verifies the TCP or UDP checksum (UDP 0 means none).
func l4ChecksumOK(h []byte) bool {
	proto := ip4Proto(h)
	l4 := h[ip4IHL(h):ip4TotalLen(h)]
	if proto == protoUDP && len(l4) >= udpHdrLen && be16(l4[6:]) == 0 {
		return true
	}
	return checksum(l4, pseudoSum(h, proto, len(l4))) == 0
}

// setL4Checksum computes the TCP/UDP/ICMP checksum of a packet built by
// the simulator.
func setL4Checksum(h []byte) {
	proto := ip4Proto(h)
	l4 := h[ip4IHL(h):ip4TotalLen(h)]
	switch proto {
	case protoICMP:
		l4[2], l4[3] = 0, 0
		put16(l4[2:], checksum(l4, 0))
	case protoTCP:
		l4[16], l4[17] = 0, 0
		put16(l4[16:], checksum(l4, pseudoSum(h, proto, len(l4))))
	case protoUDP:
		l4[6], l4[7] = 0, 0
		c := checksum(l4, pseudoSum(h, proto, len(l4)))
		if c == 0 {
			c = 0xffff
		}
		put16(l4[6:], c)
	}
}

// csumAdjust updates checksum field c (in place) for a 16-bit word
// changing from old to new (RFC 1624).
func csumAdjust(c []byte, old, new uint16) {
	sum := uint32(^be16(c)) + uint32(^old) + uint32(new)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	put16(c, ^uint16(sum))
}

// csumAdjust32 is csumAdjust for a 32-bit value (an address).
func csumAdjust32(c []byte, old, new [4]byte) {
	csumAdjust(c, be16(old[0:2]), be16(new[0:2]))
	csumAdjust(c, be16(old[2:4]), be16(new[2:4]))
}

// l4Csum returns the checksum field of TCP/UDP, nil if there is none to
// update (UDP checksum 0, or other protocols).
func l4Csum(h []byte) []byte {
	l4 := ip4L4(h)
	switch ip4Proto(h) {
	case protoTCP:
		if len(l4) >= 18 {
			return l4[16:18]
		}
	case protoUDP:
		if len(l4) >= 8 && be16(l4[6:]) != 0 {
			return l4[6:8]
		}
	}
	return nil
}

// setIP4Src/Dst rewrite an address, updating the IP and L4 checksums.
func setIP4Src(h []byte, a [4]byte) {
	old := ip4Src(h)
	copy(h[12:16], a[:])
	csumAdjust32(h[10:12], old, a)
	if c := l4Csum(h); c != nil {
		csumAdjust32(c, old, a)
	}
}

func setIP4Dst(h []byte, a [4]byte) {
	old := ip4Dst(h)
	copy(h[16:20], a[:])
	csumAdjust32(h[10:12], old, a)
	if c := l4Csum(h); c != nil {
		csumAdjust32(c, old, a)
	}
}

// l4 ports: for ICMP echo the identifier stands for both ports.
func l4SrcPort(h []byte) uint16 {
	l4 := ip4L4(h)
	switch ip4Proto(h) {
	case protoTCP, protoUDP:
		return be16(l4[0:2])
	case protoICMP:
		if icmpIsEcho(l4[0]) {
			return be16(l4[4:6])
		}
	}
	return 0
}

func l4DstPort(h []byte) uint16 {
	l4 := ip4L4(h)
	switch ip4Proto(h) {
	case protoTCP, protoUDP:
		return be16(l4[2:4])
	case protoICMP:
		if icmpIsEcho(l4[0]) {
			return be16(l4[4:6])
		}
	}
	return 0
}

func setL4SrcPort(h []byte, port uint16) {
	l4 := ip4L4(h)
	switch ip4Proto(h) {
	case protoTCP, protoUDP:
		old := be16(l4[0:2])
		put16(l4[0:2], port)
		if c := l4Csum(h); c != nil {
			csumAdjust(c, old, port)
		}
	case protoICMP:
		old := be16(l4[4:6])
		put16(l4[4:6], port)
		csumAdjust(l4[2:4], old, port)
	}
}

func setL4DstPort(h []byte, port uint16) {
	l4 := ip4L4(h)
	switch ip4Proto(h) {
	case protoTCP, protoUDP:
		old := be16(l4[2:4])
		put16(l4[2:4], port)
		if c := l4Csum(h); c != nil {
			csumAdjust(c, old, port)
		}
	case protoICMP:
		old := be16(l4[4:6])
		put16(l4[4:6], port)
		csumAdjust(l4[2:4], old, port)
	}
}

// ICMP types.
const (
	icmpEchoReply    = 0
	icmpUnreach      = 3
	icmpEchoRequest  = 8
	icmpTimeExceeded = 11
)

// ICMP destination-unreachable codes VPP sends.
const (
	icmpCodeHostUnreach    = 1  // ip4-null, ICMP_UNREACH paths
	icmpCodePortUnreach    = 3  // ip4-local, UDP to a closed port
	icmpCodeFragNeeded     = 4  // ip4-rewrite, DF set and too big
	icmpCodeHostProhibited = 10 // ip4-null, ICMP_PROHIBIT paths
)

func icmpIsEcho(t uint8) bool { return t == icmpEchoRequest || t == icmpEchoReply }

// l4Complete tells whether the L4 header needed for NAT and ACLs is in
// the packet (first fragment, long enough).
func l4Complete(h []byte) bool {
	if ip4FragOff(h) != 0 {
		return false
	}
	l4 := ip4L4(h)
	switch ip4Proto(h) {
	case protoTCP:
		return len(l4) >= 20
	case protoUDP:
		return len(l4) >= 8
	case protoICMP:
		return len(l4) >= 8
	}
	return true
}

// tcpFlags returns the TCP flags byte, 0 for other protocols.
func tcpFlags(h []byte) uint8 {
	if ip4Proto(h) != protoTCP {
		return 0
	}
	return ip4L4(h)[13]
}

// TCP flag bits.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// flowHash is the per-flow hash of (src, dst, proto, sport, dport) VPP's
// load balancing and VXLAN source ports use.
func flowHash(h []byte) uint32 {
	x := u32(ip4Src(h))*0x9e3779b1 ^ u32(ip4Dst(h))*0x85ebca6b ^ uint32(ip4Proto(h))
	if l4Complete(h) {
		x ^= uint32(l4SrcPort(h))<<16 | uint32(l4DstPort(h))
	}
	x ^= x >> 15
	x *= 0x2c1b3c6d
	x ^= x >> 12
	return x
}

package vppsim

// cnat's data-plane nodes (VPP 25.10 cnat_node_vip.c, cnat_node_snat.c,
// cnat_node.h; spec vpp-ip6-cnat-stn-stats.md §2.3-2.5):
//
//	ip4/ip6-lookup in table 0 hits a cnat client (a VIP or a learned return
//	address) -> ip4/ip6-cnat-tx:
//	    session at location FIB? -> rewrite, refresh, forward
//	    no: translation (client, destination port, protocol)? no -> untranslated
//	        (exclusive client: drop; interposed: the normal forwarding)
//	    pick a path (flow hash or Maglev), rewrite, create the forward and
//	    return sessions, count the translation, forward to the backend
//	cnat-snat-ip4/ip6 (feature on ip4/ip6-unicast, after ACL-in and NAT44):
//	    session hit -> rewrite; miss -> the SNAT policy; yes and a SNAT
//	    address of the family -> allocate a port, rewrite the source, create
//	    the forward and return sessions
//
// The rewrite happens after the ip4-unicast arc (the input ACL saw the VIP)
// and the translated packet is looked up again in table 0, so the output
// ACL sees the backend.

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"time"
)

const (
	protoSCTP      uint8 = 132
	cnatErrNoPorts       = "no more free ports"
	cnatTx4              = "ip4-cnat-tx"
	cnatTx6              = "ip6-cnat-tx"
	cnatSNAT4            = "cnat-snat-ip4"
	cnatSNAT6            = "cnat-snat-ip6"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// cnatPktAddrs returns a packet's source and destination addresses.
func cnatPktAddrs(h []byte, v6 bool) (netip.Addr, netip.Addr) {
	if v6 {
		return addr6(ip6Src(h)), addr6(ip6Dst(h))
	}
	return addr4(ip4Src(h)), addr4(ip4Dst(h))
}

// cnatL4 returns the packet's protocol and L4 bytes.
func cnatL4(h []byte, v6 bool) (uint8, []byte) {
	if v6 {
		return ip6NH(h), ip6L4(h)
	}
	return ip4Proto(h), ip4L4(h)[:max(0, min(len(h), ip4TotalLen(h))-ip4IHL(h))]
}

// cnatICMPErrInner returns the packet an ICMP or ICMPv6 error carries (after
// its 8-byte header), nil if h is not an error (icmp_type_is_error_message:
// IPv4 types 3, 4, 5, 11, 12; ICMPv6 types 1-4) carrying a whole IP header
// and 8 bytes of L4.
func cnatICMPErrInner(h []byte, v6 bool) []byte {
	proto, l4 := cnatL4(h, v6)
	if len(l4) < 8 {
		return nil
	}
	var in []byte
	switch {
	case !v6 && proto == protoICMP && (l4[0] == icmpUnreach || l4[0] == 4 || l4[0] == 5 || l4[0] == icmpTimeExceeded || l4[0] == 12):
		in = l4[8:]
		if len(in) < ip4HdrLen || in[0]>>4 != 4 || len(in) < ip4IHL(in)+8 {
			return nil
		}
	case v6 && proto == protoICMP6 && l4[0] >= 1 && l4[0] <= 4:
		in = l4[8:]
		if len(in) < ip6HdrLen+8 || in[0]>>4 != 6 {
			return nil
		}
	}
	return in
}

// cnatKeyOf is cnat_session_make_key: TCP and UDP (and SCTP over IPv4) by
// their ports, ICMP echo by its identifier for both ports; an ICMP error by
// the packet it carries, addresses and ports swapped (so it finds the
// session of the reply to that packet). Other packets get no key (false)
// and are never translated.
func cnatKeyOf(h []byte, v6 bool, loc uint8) (cnatSessKey, bool) {
	if in := cnatICMPErrInner(h, v6); in != nil {
		k, ok := cnatKeyOf(in, v6, loc)
		if !ok || k.proto == protoSCTP {
			return k, false
		}
		k.src, k.dst, k.sport, k.dport = k.dst, k.src, k.dport, k.sport
		return k, true
	}
	src, dst := cnatPktAddrs(h, v6)
	k := cnatSessKey{src: src, dst: dst, loc: loc}
	proto, l4 := cnatL4(h, v6)
	k.proto = proto
	switch {
	case proto == protoTCP || proto == protoUDP || (proto == protoSCTP && !v6):
		if len(l4) < 4 {
			return k, false
		}
		k.sport, k.dport = be16(l4[0:2]), be16(l4[2:4])
	case (proto == protoICMP && !v6 && len(l4) >= 8 && icmpIsEcho(l4[0])) ||
		(proto == protoICMP6 && v6 && len(l4) >= 8 && (l4[0] == icmp6EchoRequest || l4[0] == icmp6EchoReply)):
		k.sport = be16(l4[4:6])
		k.dport = k.sport
	default:
		return k, false
	}
	return k, true
}

// cnatRewrite applies a session's rewrite to the packet (cnat_translation_ip4
// / _ip6): addresses, ports (the echo identifier takes the new source
// port), checksums, and for TCP the flow's lifetime.
func (st *state) cnatRewrite(h []byte, v6 bool, se *cnatSess) {
	if in := cnatICMPErrInner(h, v6); in != nil {
		st.cnatRewriteICMPErr(h, in, v6, se)
		return
	}
	proto, l4 := cnatL4(h, v6)
	if proto == protoTCP && len(l4) >= 14 {
		cnatTCPLifetime(se.ts, l4[13])
	}
	if v6 {
		copy(h[8:24], se.newSrc.AsSlice())
		copy(h[24:40], se.newDst.AsSlice())
		switch proto {
		case protoTCP, protoUDP:
			put16(l4[0:2], se.newSport)
			put16(l4[2:4], se.newDpt)
		case protoICMP6:
			put16(l4[4:6], se.newSport)
		}
		// VPP patches the checksum incrementally; recomputing gives the
		// same result for a packet whose checksum was right.
		ip6SetL4Checksum(h)
		return
	}
	switch proto {
	case protoTCP, protoUDP, protoICMP:
		setL4SrcPort(h, se.newSport)
		if proto != protoICMP {
			setL4DstPort(h, se.newDpt)
		}
		setIP4Src(h, se.newSrc.As4())
		setIP4Dst(h, se.newDst.As4())
	case protoSCTP:
		// cnat_ip4_translate_sctp: with a checksum, only non-zero ports
		// are written and the CRC32c is recomputed.
		if binary.LittleEndian.Uint32(l4[8:12]) == 0 {
			put16(l4[0:2], se.newSport)
			put16(l4[2:4], se.newDpt)
		} else {
			if se.newDpt != 0 {
				put16(l4[2:4], se.newDpt)
			}
			if se.newSport != 0 {
				put16(l4[0:2], se.newSport)
			}
			binary.LittleEndian.PutUint32(l4[8:12], 0)
			binary.LittleEndian.PutUint32(l4[8:12], crc32.Checksum(l4, crc32c))
		}
		setIP4Src(h, se.newSrc.As4())
		setIP4Dst(h, se.newDst.As4())
	}
}

// cnatRewriteICMPErr translates an ICMP error by the session its inner
// packet found (cnat_translation_icmp4_error / _icmp6_error): the outer
// destination takes the session's new destination, the outer source its
// new source only if the error came from the session's key source; the
// inner packet gets the new addresses and ports swapped (it is the packet
// before translation again). Checksums: the inner IP and L4 ones are
// patched, the ICMP one recomputed (VPP patches it to the same value).
func (st *state) cnatRewriteICMPErr(h, in []byte, v6 bool, se *cnatSess) {
	src, _ := cnatPktAddrs(h, v6)
	newOuterSrc := src
	if src == se.key.src {
		newOuterSrc = se.newSrc
	}
	inProto, inL4 := cnatL4(in, v6)
	var csum []byte // the inner L4 checksum, when carried
	switch {
	case inProto == protoUDP && len(inL4) >= 8 && be16(inL4[6:8]) != 0:
		csum = inL4[6:8]
	case inProto == protoTCP && len(inL4) >= 18:
		csum = inL4[16:18]
	case (inProto == protoICMP || inProto == protoICMP6) && len(inL4) >= 4:
		csum = inL4[2:4]
	}
	// setBytes writes an inner address, patching the inner L4 checksum
	// when its pseudo-header covers the address.
	setBytes := func(b, v []byte, pseudo bool) {
		for i := 0; csum != nil && pseudo && i+1 < len(b); i += 2 {
			csumAdjust(csum, be16(b[i:]), be16(v[i:]))
		}
		copy(b, v)
	}
	pseudo := inProto != protoICMP // ICMPv4 has no pseudo-header
	if v6 {
		setBytes(in[8:24], se.newDst.AsSlice(), pseudo)
		setBytes(in[24:40], se.newSrc.AsSlice(), pseudo)
	} else {
		setBytes(in[12:16], se.newDst.AsSlice(), pseudo)
		setBytes(in[16:20], se.newSrc.AsSlice(), pseudo)
		ip4SetChecksum(in)
	}
	setPort := func(b []byte, v uint16) {
		if csum != nil {
			csumAdjust(csum, be16(b), v)
		}
		put16(b, v)
	}
	switch inProto {
	case protoTCP, protoUDP:
		setPort(inL4[0:2], se.newDpt)
		setPort(inL4[2:4], se.newSport)
	case protoICMP, protoICMP6:
		// The echo identifier takes the inner "source" port, which is
		// the session's new destination port (ports swapped).
		setPort(inL4[4:6], se.newDpt)
	}
	if v6 {
		copy(h[8:24], newOuterSrc.AsSlice())
		copy(h[24:40], se.newDst.AsSlice())
		ip6SetL4Checksum(h)
		return
	}
	setIP4Src(h, newOuterSrc.As4())
	setIP4Dst(h, se.newDst.As4())
	l4 := ip4L4(h)[:ip4TotalLen(h)-ip4IHL(h)]
	put16(l4[2:4], 0)
	put16(l4[2:4], checksum(l4, 0))
}

// cnatClientFor returns the cnat client of a table-0 destination, nil if
// there is none.
func (st *state) cnatClientFor(p *pkt, dst netip.Addr) *cnatClient {
	if p.vrf != 0 || p.cnatSkip || len(st.cnat.clients) == 0 {
		return nil
	}
	return st.cnat.clients[dst]
}

// cnatTx is ip4-cnat-tx / ip6-cnat-tx for a packet whose table-0 lookup hit
// client cc. It returns false when the packet is not translated and the
// client is interposed: the caller then forwards it as the FIB would
// without cnat. Otherwise it has forwarded or dropped the packet.
func (st *state) cnatTx(p *pkt, cc *cnatClient, v6 bool) bool {
	node, dropNode, dropWhy := cnatTx4, "ip4-drop", "ip4 adjacency drop"
	if v6 {
		node, dropNode, dropWhy = cnatTx6, "ip6-drop", "ip6 drop"
	}
	h := p.ip()
	c := &st.cnat
	now := st.s.clock.Now()
	c.sess.scan(c, now)
	untranslated := func(why string) bool {
		if cc.exclusive {
			if p.tr != nil {
				st.tracef(p, node, "exclusive VIP %s: %s: not translated", cc.addr, why)
			}
			st.drop(p, dropNode, dropWhy)
			return true
		}
		if p.tr != nil {
			st.tracef(p, node, "interposed %s: %s: follows the FIB", cc.addr, why)
		}
		p.cnatSkip = true
		return false
	}
	k, ok := cnatKeyOf(h, v6, cnatLocFIB)
	if !ok {
		return untranslated("no session key (protocol or ICMP type)")
	}
	if se := c.sess.m[k]; se != nil {
		st.cnatSessionHit(p, node, h, v6, se)
		st.cnatForward(p, !se.hasSNAT || se.lb >= 0, v6)
		return true
	}
	tr, dport := c.findTranslation(cc, h, v6, k.proto)
	if tr == nil {
		return untranslated("no translation for " + ipProtoName(k.proto) + " port " + utoa(uint32(dport)))
	}
	pi, ok := st.cnatPick(tr, h, v6)
	if !ok {
		return untranslated("translation " + utoa(tr.id) + " has no active path")
	}
	path := tr.paths[pi]
	dstAddr, _ := st.cnatResolve(path.dst)
	srcAddr, _ := st.cnatResolve(path.src)
	fwd := &cnatSess{key: k, newDst: dstAddr, newDpt: path.dst.port, newSrc: k.src, newSport: path.src.port, lb: int64(tr.id)}
	hasSNAT := !srcAddr.IsUnspecified()
	if hasSNAT {
		fwd.newSrc = srcAddr
	}
	if fwd.newSport == 0 {
		// cnat_vip_default_source_policy.
		fwd.newSport = k.sport
		if tr.flags&cnatFlagAllocPort != 0 && hasSNAT {
			port, ok := c.sess.allocPort(k.proto)
			if !ok {
				if p.tr != nil {
					st.tracef(p, node, "translation %d: no free source port", tr.id)
				}
				st.drop(p, node, cnatErrNoPorts)
				return true
			}
			fwd.newSport, fwd.allocPort = port, true
		}
	}
	cc.sessRefs++
	fwd.ts = &cnatTimestamp{last: now, life: cnatSessionMaxAge, refs: 1}
	c.sess.add(fwd)
	if tr.flags&cnatFlagNoReturnSession == 0 {
		st.cnatReturnSession(fwd, cnatLocFIB, hasSNAT)
	}
	st.cnatCount(tr.id, p.end-p.l3)
	st.cnatRewrite(h, v6, fwd)
	if p.tr != nil {
		st.tracef(p, node, "translation %d path %d: created session %s => %s;%d -> %s;%d", tr.id, pi,
			cnatKeyString(k), fwd.newSrc, fwd.newSport, fwd.newDst, fwd.newDpt)
	}
	st.cnatForward(p, true, v6)
	return true
}

// findTranslation is cnat_find_translation(client, udp0->dst_port,
// protocol): the port is read where UDP's is, whatever the protocol (for
// ICMP: the checksum). It returns the translation (nil if none) and that
// port.
func (c *cnatState) findTranslation(cc *cnatClient, h []byte, v6 bool, proto uint8) (*cnatTr, uint16) {
	_, l4 := cnatL4(h, v6)
	var dport uint16
	if len(l4) >= 4 {
		dport = be16(l4[2:4])
	}
	return c.byKey[cnatTrKey{addr: cc.addr, sw: noIndex, v6: v6, port: dport, proto: proto}], dport
}

// cnatReturnSession creates the return session of fwd at location loc
// (cnat_rsession_create) unless one with its key exists. At location FIB
// it counts the session on the client of the address replies go to,
// learning that client if needed; the feature nodes' return sessions
// (INPUT, OUTPUT) carry CNAT_SESSION_FLAG_NO_CLIENT and hold none.
func (st *state) cnatReturnSession(fwd *cnatSess, loc uint8, hasSNAT bool) {
	c := &st.cnat
	k := fwd.key
	ret := &cnatSess{
		key:    cnatSessKey{src: fwd.newDst, dst: fwd.newSrc, sport: fwd.newDpt, dport: fwd.newSport, proto: k.proto, loc: loc},
		newSrc: k.dst, newDst: k.src, newSport: k.dport, newDpt: k.sport,
		ts: fwd.ts, lb: -1, hasSNAT: hasSNAT, noClient: loc != cnatLocFIB,
	}
	if !c.sess.addIfAbsent(ret) {
		return
	}
	fwd.ts.refs++
	if loc == cnatLocFIB {
		c.clientAdd(fwd.newSrc, false).sessRefs++
	}
}

// cnatForward sends a translated packet on: looked up again in table 0,
// without cnat clients when the FIB's forwarding is what VPP follows (the
// translation's load balance, or the client's parent), with them when a
// return session changed the destination (CNAT_TRANSLATION_NEXT_LOOKUP).
func (st *state) cnatForward(p *pkt, skipClients, v6 bool) {
	p.vrf = 0
	p.cnatSkip = skipClients
	if v6 {
		st.ip6Lookup(p)
	} else {
		st.ip4Lookup(p)
	}
}

// cnatSNATNode is cnat-snat-ip4 / cnat-snat-ip6 on interface i; false when
// it dropped the packet.
func (st *state) cnatSNATNode(p *pkt, i *iface, v6 bool) bool {
	node := byFamily(v6, cnatSNAT4, cnatSNAT6)
	k, se, ok := st.cnatNodeBegin(p, node, v6, cnatLocFIB)
	if !ok || se != nil {
		return true
	}
	// The egress interface is not known on ip4-unicast: VPP reads
	// sw_if_index[VLIB_TX], ~0 before the lookup.
	return st.cnatSNATMiss(p, k, v6, cnatSNATStep{node: node, dropNode: node, retLoc: cnatLocFIB, in: i.idx, out: noIndex,
		addr: st.cnatSNATAddr})
}

// cnatNodeBegin is the start of every cnat node (cnat_node_inline): the
// scanner's turn, the session key at location loc, and a found session
// applied (a NO_NAT one only refreshed: cnat-input forwards it). It returns
// the key, the session found (nil on a miss) and whether the packet has a
// key at all.
func (st *state) cnatNodeBegin(p *pkt, node string, v6 bool, loc uint8) (cnatSessKey, *cnatSess, bool) {
	c := &st.cnat
	c.sess.scan(c, st.s.clock.Now())
	k, ok := cnatKeyOf(p.ip(), v6, loc)
	if !ok {
		return k, nil, false
	}
	se := c.sess.m[k]
	if se != nil {
		st.cnatSessionHit(p, node, p.ip(), v6, se)
	}
	return k, se, true
}

// cnatSNATStep says where a source-NAT node runs: its name, the node its
// port-exhaustion drop is counted on, the location of the return session,
// the interfaces the policy sees and the SNAT address it uses.
type cnatSNATStep struct {
	node, dropNode string
	retLoc         uint8
	in, out        uint32
	addr           func(v6 bool) (netip.Addr, bool)
}

// cnatSNATMiss is a SNAT node's handling of a new flow with key k (its
// location the node's): the policy, the SNAT address of the family, a
// port, the forward and return sessions and the rewrite. false when it
// dropped the packet (no free port).
func (st *state) cnatSNATMiss(p *pkt, k cnatSessKey, v6 bool, s cnatSNATStep) bool {
	if !st.cnatSNATWants(cnatSNATFlow{src: k.src, dst: k.dst, in: s.in, out: s.out}) {
		if p.tr != nil {
			st.tracef(p, s.node, "policy: no source NAT for %s", cnatKeyString(k))
		}
		return true
	}
	snat, ok := s.addr(v6)
	if !ok {
		if p.tr != nil {
			st.tracef(p, s.node, "no SNAT address of the family: not translated")
		}
		return true
	}
	c := &st.cnat
	port, ok := c.sess.allocPort(k.proto)
	if !ok {
		st.drop(p, s.dropNode, cnatErrNoPorts)
		return false
	}
	fwd := cnatSNATSess(k, snat, port, st.s.clock.Now())
	c.sess.add(fwd)
	st.cnatReturnSession(fwd, s.retLoc, true)
	st.cnatRewrite(p.ip(), v6, fwd)
	if p.tr != nil {
		st.tracef(p, s.node, "created session %s => %s;%d -> %s;%d", cnatKeyString(k), fwd.newSrc, fwd.newSport, fwd.newDst, fwd.newDpt)
	}
	return true
}

// cnatSNATSess is the forward session of a source-NATed flow (cnat-snat,
// cnat-output): the source becomes (snat, port); TCP and UDP keep their
// destination port, for the others (ICMP echo) both ports take the
// allocated one. It holds no client and frees its port.
func cnatSNATSess(k cnatSessKey, snat netip.Addr, port uint16, now time.Time) *cnatSess {
	fwd := &cnatSess{key: k, newSrc: snat, newDst: k.dst, newSport: port, newDpt: port, lb: -1,
		noClient: true, allocPort: true, ts: &cnatTimestamp{last: now, life: cnatSessionMaxAge, refs: 1}}
	if k.proto == protoTCP || k.proto == protoUDP {
		fwd.newDpt = k.dport
	}
	return fwd
}

// byFamily returns n6 for IPv6, else n4 (a node's name per family).
func byFamily(v6 bool, n4, n6 string) string {
	if v6 {
		return n6
	}
	return n4
}

// cnatKeyString formats a session key as the trace and CLI show it.
func cnatKeyString(k cnatSessKey) string {
	return "[" + k.src.String() + ";" + utoa(uint32(k.sport)) + " -> " + k.dst.String() + ";" + utoa(uint32(k.dport)) + ", " + ipProtoName(k.proto) + "]"
}

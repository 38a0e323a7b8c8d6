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

// cnatKeyOf is cnat_session_make_key: TCP and UDP (and SCTP over IPv4) by
// their ports, ICMP echo by its identifier for both ports. Other packets
// get no key (false) and are never translated. ICMP errors, which VPP
// looks up by their inner packet, are not simulated: they get no key.
func cnatKeyOf(h []byte, v6 bool, loc uint8) (cnatSessKey, bool) {
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
		se.ts.last = now
		st.cnatRewrite(h, v6, se)
		if p.tr != nil {
			st.tracef(p, node, "found session %s => %s;%d -> %s;%d", cnatKeyString(k), se.newSrc, se.newSport, se.newDst, se.newDpt)
		}
		st.cnatForward(p, !se.hasSNAT || se.lb >= 0, v6)
		return true
	}
	// cnat_find_translation(client, udp0->dst_port, protocol): the port is
	// read where UDP's is, whatever the protocol (for ICMP: the checksum).
	_, l4 := cnatL4(h, v6)
	var dport uint16
	if len(l4) >= 4 {
		dport = be16(l4[2:4])
	}
	tr := c.byKey[cnatTrKey{addr: cc.addr, sw: noIndex, v6: v6, port: dport, proto: k.proto}]
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
		st.cnatReturnSession(fwd, hasSNAT)
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

// cnatReturnSession creates the return session of fwd (cnat_rsession_create,
// location FIB) unless one with its key exists, and counts it on the client
// of the address replies go to, learning that client if needed.
func (st *state) cnatReturnSession(fwd *cnatSess, hasSNAT bool) {
	c := &st.cnat
	k := fwd.key
	ret := &cnatSess{
		key:    cnatSessKey{src: fwd.newDst, dst: fwd.newSrc, sport: fwd.newDpt, dport: fwd.newSport, proto: k.proto, loc: cnatLocFIB},
		newSrc: k.dst, newDst: k.src, newSport: k.dport, newDpt: k.sport,
		ts: fwd.ts, lb: -1, hasSNAT: hasSNAT,
	}
	if !c.sess.addIfAbsent(ret) {
		return
	}
	fwd.ts.refs++
	c.clientAdd(fwd.newSrc, false).sessRefs++
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
	node := cnatSNAT4
	if v6 {
		node = cnatSNAT6
	}
	h := p.ip()
	c := &st.cnat
	now := st.s.clock.Now()
	c.sess.scan(c, now)
	k, ok := cnatKeyOf(h, v6, cnatLocFIB)
	if !ok {
		return true
	}
	if se := c.sess.m[k]; se != nil {
		se.ts.last = now
		st.cnatRewrite(h, v6, se)
		if p.tr != nil {
			st.tracef(p, node, "found session %s => %s;%d -> %s;%d", cnatKeyString(k), se.newSrc, se.newSport, se.newDst, se.newDpt)
		}
		return true
	}
	// The egress interface is not known on ip4-unicast: VPP reads
	// sw_if_index[VLIB_TX], ~0 before the lookup.
	if !st.cnatSNATWants(cnatSNATFlow{src: k.src, dst: k.dst, in: i.idx, out: noIndex}) {
		if p.tr != nil {
			st.tracef(p, node, "policy: no source NAT for %s", cnatKeyString(k))
		}
		return true
	}
	snat, ok := st.cnatSNATAddr(v6)
	if !ok {
		if p.tr != nil {
			st.tracef(p, node, "no SNAT address of the family: not translated")
		}
		return true
	}
	port, ok := c.sess.allocPort(k.proto)
	if !ok {
		st.drop(p, node, cnatErrNoPorts)
		return false
	}
	fwd := &cnatSess{key: k, newSrc: snat, newDst: k.dst, newSport: port, newDpt: port, lb: -1,
		noClient: true, allocPort: true, ts: &cnatTimestamp{last: now, life: cnatSessionMaxAge, refs: 1}}
	if k.proto == protoTCP || k.proto == protoUDP {
		fwd.newDpt = k.dport
	}
	c.sess.add(fwd)
	st.cnatReturnSession(fwd, true)
	st.cnatRewrite(h, v6, fwd)
	if p.tr != nil {
		st.tracef(p, node, "created session %s => %s;%d -> %s;%d", cnatKeyString(k), fwd.newSrc, fwd.newSport, fwd.newDst, fwd.newDpt)
	}
	return true
}

// cnatKeyString formats a session key as the trace and CLI show it.
func cnatKeyString(k cnatSessKey) string {
	return "[" + k.src.String() + ";" + utoa(uint32(k.sport)) + " -> " + k.dst.String() + ";" + utoa(uint32(k.dport)) + ", " + ipProtoName(k.proto) + "]"
}

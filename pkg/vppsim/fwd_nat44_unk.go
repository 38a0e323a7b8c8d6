package vppsim

import (
	"fmt"
	"time"
)

// NAT44-ED for protocols other than TCP, UDP and ICMP (SCTP among them):
// nat44_ed_is_unk_proto (nat44_ed_inlines.h) sends every other protocol
// to nat44_ed_in2out_slowpath_unknown_proto and
// nat44_ed_out2in_slowpath_unknown_proto. Their packets carry no ports
// for NAT (ip4_get_port returns 0 but for TCP, UDP and ICMP echo), so
// flows are keyed by addresses and protocol only, and sessions record the
// protocol number as both ports (docs/dev-guide/VPP-FORWARDING.md §7
// "Other protocols").

// natUnknownProto tells whether NAT44-ED handles proto as an unknown
// protocol.
func natUnknownProto(proto uint8) bool {
	switch proto {
	case protoTCP, protoUDP, protoICMP, 58:
		return false
	}
	return true
}

// natOut2InUnknown is nat44_ed_out2in_slowpath_unknown_proto: only a
// static mapping of exactly (destination, port 0, this protocol) DNATs
// (an address-only mapping has protocol 0 and a port-specific one a port:
// neither is found), to its local address; a load-balanced mapping has
// no local address. At the session limit or without such a mapping the
// packet is dropped when forwarding is off and passes untranslated,
// without a session, when it is on.
func (st *state) natOut2InUnknown(p *pkt, k natFlowKey, now time.Duration) bool {
	const node = "nat44-ed-out2in"
	n := &st.nat
	var m *natMapping
	if !st.natFull() {
		m = n.mappings[natExtKey{addr: addr4(k.dst), proto: k.proto, sw: noIndex}]
	}
	if m == nil {
		if !n.forwarding {
			st.drop(p, node, "no translation")
			return false
		}
		if p.tr != nil {
			st.tracef(p, node, "protocol %d: no mapping, pass untranslated", k.proto)
		}
		return true
	}
	var local [4]byte
	vrf := uint32(0)
	switch m.kind {
	case natStatic:
		local, vrf = m.local.As4(), m.vrf
	case natIdentity:
		local = addr4(k.dst).As4()
		if len(m.idVRFs) > 0 {
			vrf = m.idVRFs[0]
		}
	}
	if vrf == noIndex {
		vrf = n.insideVRF
	}
	s := st.natAlloc(p.ip(), now)
	s.static = true
	s.o2iKey = k
	s.o2i = natRewrite{src: k.src, dst: local, fib: vrf}
	s.i2oKey = natFlowKey{src: local, dst: k.src, fib: vrf, proto: k.proto}
	s.i2o = natRewrite{src: k.dst, dst: k.src, fib: noIndex}
	s.insideVRF, s.outsideVRF = vrf, k.fib
	st.natAddSession(s)
	st.natApply(p, s, k, now)
	if p.tr != nil {
		st.traceNAT(p, node, fmt.Sprintf("protocol %d: new static session %s -> %s", k.proto, addr4(k.dst), addr4(local)))
	}
	return true
}

// natIn2OutUnknown is nat44_ed_in2out_slowpath_unknown_proto, which runs
// in in2out and in the output feature before any of their checks (the
// forwarding bypass, identity mappings, the destination): at the session
// limit drop; the source is translated to the external address of a
// static mapping of exactly (source, port 0, this protocol) in the
// receiving VRF; else to the outside address of the first session whose
// external host is the destination, if no flow (that address -> the
// destination) of this protocol exists yet; else to the last pool address
// with no such flow; none -> drop. A static mapping of the destination
// (hairpinning) translates it too.
func (st *state) natIn2OutUnknown(p *pkt, k natFlowKey, now time.Duration, output bool, node string) bool {
	n := &st.nat
	if st.natFull() {
		st.drop(p, node, "maximum sessions exceeded")
		return false
	}
	txVRF := st.natOutsideVRF(k.dst)
	free := func(src [4]byte) bool {
		return n.sess.flows[natFlowKey{src: src, dst: k.dst, fib: txVRF, proto: k.proto}] == nil
	}
	var src [4]byte
	found, static := false, false
	if m := n.byLocal[natLocalKey{addr: addr4(k.src), proto: k.proto, vrf: p.rxVRF}]; m != nil && m.kind == natStatic {
		src, found, static = st.mappingExtAddr(m).As4(), true, true
	} else {
		for _, s := range n.liveSessions() {
			if s.bypass || s.i2o.dst != k.dst {
				continue
			}
			if free(s.i2o.src) {
				src, found = s.i2o.src, true
			}
			break
		}
		if !found {
			for _, a := range n.addrs {
				if !a.twice && free(a.addr.As4()) {
					src, found = a.addr.As4(), true
				}
			}
		}
	}
	if !found {
		st.drop(p, node, fmt.Sprintf("protocol %d: no address to translate to", k.proto))
		return false
	}
	dst := k.dst
	if m := n.mappings[natExtKey{addr: addr4(k.dst), proto: k.proto, sw: noIndex}]; m != nil && m.kind == natStatic {
		dst = m.local.As4()
	}
	s := st.natAlloc(p.ip(), now)
	s.static = static
	s.i2oKey = k
	s.i2o = natRewrite{src: src, dst: dst, fib: txVRF}
	s.o2iKey = natFlowKey{src: dst, dst: src, fib: txVRF, proto: k.proto}
	s.o2i = natRewrite{src: k.dst, dst: k.src, fib: p.rxVRF}
	s.insideVRF, s.outsideVRF = p.rxVRF, txVRF
	st.natAddSession(s)
	vrf := p.vrf
	st.natApply(p, s, k, now)
	if output {
		p.vrf = vrf // the output feature never changes the table
	}
	if p.tr != nil {
		st.traceNAT(p, node, fmt.Sprintf("protocol %d: new session %s -> %s", k.proto, addr4(k.src), addr4(src)))
	}
	return true
}

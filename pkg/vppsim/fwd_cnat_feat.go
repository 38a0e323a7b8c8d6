package vppsim

// cnat's interface features (VPP 25.10 cnat_node_feature.c, cnat_node.h;
// spec vpp-ip6-cnat-stn-stats.md §2.3 rule 3), enabled per interface with
// feature_enable_disable:
//
//	ip4/ip6-unicast: cnat-input-ip4/ip6 (before the input ACL)
//	    session at location INPUT? -> rewrite, refresh
//	    no: the destination is a cnat client with a translation of
//	        (destination port, protocol) and an active path? -> DNAT only
//	        (the source is never changed here), forward session at INPUT,
//	        return session at OUTPUT (no client learned)
//	    the packet goes on along the arc (ACL-in sees the backend)
//	ip4/ip6-output: cnat-output-ip4/ip6 (after the output ACL)
//	    session at location OUTPUT? -> rewrite, refresh
//	    no: the SNAT policy, with the egress interface known; yes and a
//	        non-zero SNAT address of the family -> allocate a port, SNAT,
//	        forward session at OUTPUT, return session at INPUT
//	    the packet goes on to interface-output
//
// A flow DNATed by cnat-input is un-DNATed by cnat-output on the interface
// its replies leave by, and a flow SNATed by cnat-output is un-SNATed by
// cnat-input on the interface its replies enter by: each direction needs
// the feature on the interface the other direction's packets use.

import "net/netip"

const (
	cnatInput4  = "cnat-input-ip4"
	cnatInput6  = "cnat-input-ip6"
	cnatOutput4 = "cnat-output-ip4"
	cnatOutput6 = "cnat-output-ip6"
)

// cnatSessionHit applies a found session (cnat_timestamp_update, then the
// translation) and traces it.
func (st *state) cnatSessionHit(p *pkt, node string, h []byte, v6 bool, se *cnatSess) {
	se.ts.last = st.s.clock.Now()
	if !se.noNAT {
		st.cnatRewrite(h, v6, se)
	}
	if p.tr != nil {
		st.tracef(p, node, "found session %s => %s;%d -> %s;%d", cnatKeyString(se.key), se.newSrc, se.newSport, se.newDst, se.newDpt)
	}
}

// cnatInputNode is cnat-input-ip4 / cnat-input-ip6 (cnat_input_feature_fn).
// It returns true when it sent the packet on itself (a NO_NAT path: to the
// backend's forwarding, bypassing the rest of the arc); otherwise the
// packet, translated or not, follows the arc.
func (st *state) cnatInputNode(p *pkt, v6 bool) bool {
	node := byFamily(v6, cnatInput4, cnatInput6)
	k, se, ok := st.cnatNodeBegin(p, node, v6, cnatLocInput)
	if !ok {
		return false
	}
	if se != nil {
		if se.noNAT {
			st.cnatNoNATForward(p, node, se.newDst, v6)
			return true
		}
		return false
	}
	h := p.ip()
	c := &st.cnat
	now := st.s.clock.Now()
	// cnat_client_ip4_find on the destination: any client, a VIP's or
	// a learned one (which has no translation).
	_, dst := cnatPktAddrs(h, v6)
	cc := c.clients[dst]
	if cc == nil {
		return false
	}
	tr, dport := c.findTranslation(cc, h, v6, k.proto)
	if tr == nil {
		if p.tr != nil {
			st.tracef(p, node, "session not found: no translation for %s port %d", ipProtoName(k.proto), dport)
		}
		return false
	}
	// VPP checks the translation's load balance for buckets before it
	// picks one: no active path -> not translated, the arc goes on.
	pi, ok := st.cnatPick(tr, h, v6)
	if !ok {
		if p.tr != nil {
			st.tracef(p, node, "session not found: translation %d has no active path", tr.id)
		}
		return false
	}
	path := tr.paths[pi]
	dstAddr, _ := st.cnatResolve(path.dst)
	// "never source nat in this node": the path's source endpoint and
	// ALLOC_PORT are not used.
	fwd := &cnatSess{key: k, newDst: dstAddr, newDpt: path.dst.port, newSrc: k.src, newSport: k.sport, lb: int64(tr.id),
		ts: &cnatTimestamp{last: now, life: cnatSessionMaxAge, refs: 1}, noNAT: path.flags&cnatTrkFlagNoNAT != 0}
	cc.sessRefs++
	c.sess.add(fwd)
	if tr.flags&cnatFlagNoReturnSession == 0 {
		st.cnatReturnSession(fwd, cnatLocOutput, false)
	}
	if p.tr != nil {
		st.tracef(p, node, "translation %d path %d: created session %s => %s;%d -> %s;%d", tr.id, pi,
			cnatKeyString(k), fwd.newSrc, fwd.newSport, fwd.newDst, fwd.newDpt)
	}
	if fwd.noNAT {
		// Not translated nor counted: straight to the backend.
		st.cnatNoNATForward(p, node, dstAddr, v6)
		return true
	}
	st.cnatRewrite(h, v6, fwd)
	st.cnatCount(tr.id, p.end-p.l3)
	return false
}

// cnatNoNATForward sends an untranslated packet of a NO_NAT path (direct
// server return) to the backend's forwarding in table 0: VPP keeps the
// first bucket of the backend's load balance (it assumes one) and jumps to
// it, past the rest of the ip4/ip6-unicast arc.
func (st *state) cnatNoNATForward(p *pkt, node string, backend netip.Addr, v6 bool) {
	if p.tr != nil {
		st.tracef(p, node, "NO_NAT path: untranslated to the forwarding of %s", backend)
	}
	p.vrf = 0
	if v6 {
		if e := st.fib6Lookup(0, backend.As16()); e != nil {
			st.ip6Forward(p, e, backend.As16(), 0)
		}
		return
	}
	if e := st.fibLookup(0, backend.As4()); e != nil {
		st.ip4Forward(p, e, backend.As4(), 0)
	}
}

// cnatOutputNode is cnat-output-ip4 / cnat-output-ip6
// (cnat_output_feature_fn) on egress interface o; false when it dropped
// the packet (no free port).
func (st *state) cnatOutputNode(p *pkt, o *iface, v6 bool) bool {
	node := byFamily(v6, cnatOutput4, cnatOutput6)
	k, se, ok := st.cnatNodeBegin(p, node, v6, cnatLocOutput)
	if !ok || se != nil {
		return true
	}
	// The policy sees the receiving interface (sw_if_index[VLIB_RX]) and,
	// unlike on ip4-unicast, the real egress interface (VLIB_TX). VPP
	// counts a port exhaustion on cnat-output-ip6 for both families
	// (cnat_output_feature_fn names cnat_output_feature_ip6_node).
	// CNAT_SESSION_RETRY_SNAT (a random port when the return key is
	// taken) is not modelled: the key holds a port just taken from the
	// allocator, and only this node makes INPUT-location sessions
	// towards the SNAT address, so the key is always free here.
	return st.cnatSNATMiss(p, k, v6, cnatSNATStep{node: node, dropNode: cnatOutput6, retLoc: cnatLocInput, in: p.rx, out: o.idx,
		addr: st.cnatSNATAddrOutput})
}

// cnatSNATAddrOutput returns the SNAT address cnat-output uses and
// whether it is usable: the endpoint's ce_ip whether resolved or not (an
// interface's first address of the family, else the literal address
// given; zero before the first cnat_set_snat_addresses), usable when not
// zero (ip_address_is_zero; cnat-snat tests resolution instead). VPP keeps
// an interface's last address when it is removed; the simulator, which
// resolves when used, falls back to the literal one (unconfirmed
// difference, only after an address removal).
func (st *state) cnatSNATAddrOutput(v6 bool) (netip.Addr, bool) {
	s := &st.cnat.snat
	if !s.set {
		return netip.Addr{}, false
	}
	a := s.ip4
	if v6 {
		a = s.ip6
	}
	if s.sw != noIndex {
		if r, ok := st.cnatResolve(cnatEP{sw: s.sw, v6: v6}); ok {
			a = r
		}
	}
	return a, !a.IsUnspecified()
}

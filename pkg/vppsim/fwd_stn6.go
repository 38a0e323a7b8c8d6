package vppsim

// The STN plugin's node on the ip6-punt arc, stn-ip6-punt (spec
// vpp-ip6-cnat-stn-stats.md §3.2, §3.4, §3.5): the IPv6 twin of stn-ip4-punt
// (fwd_stn.go). stn.c enables both features with the first rule, and a rule's address
// is looked up in one table whatever its family (stn_main.rules, keyed by the
// ip46_address_t of the destination).

// ip6Punt is ip6-punt for a packet ip6-local delivered but nothing in VPP consumed:
// stn-ip6-punt sends it to the interface of the rule of its destination, behind an
// Ethernet header of ethertype 0x86DD; without a rule for it the packet is dropped, by
// node with reason, as the arc's next feature (none: error-drop) does.
func (st *state) ip6Punt(p *pkt, node, reason string) {
	st.stnPunt(p, st.stn.rules[addr6(ip6Dst(p.ip()))], node, reason, "stn-ip6-punt", etherTypeIP6)
}

// stnPunt hands a punted packet to rule r's interface (stn.c stn_ip46_punt_fn): an
// Ethernet header of its own (stnHostMAC <- stnLocalMAC, etype), straight to the
// interface's TX, no rewrite (the TTL or hop limit stays), no output features. r nil:
// no rule, the punt drops the packet at node with reason.
func (st *state) stnPunt(p *pkt, r *stnRule, node, reason, stnNode string, etype uint16) {
	if r == nil {
		st.drop(p, node, reason)
		return
	}
	o := st.ifaces[r.sw]
	if p.tr != nil {
		st.tracef(p, node, "%s: punt", reason)
		st.tracef(p, stnNode, "rule %s -> %s", r.addr, st.ifName(r.sw))
	}
	if o == nil {
		st.drop(p, stnNode, "rule interface gone")
		return
	}
	if p.l3 < ethHdrLen {
		st.drop(p, stnNode, "no room for the Ethernet header")
		return
	}
	p.off = p.l3 - ethHdrLen
	h := p.buf[p.off:p.l3]
	copy(h[0:6], stnHostMAC[:])
	copy(h[6:12], stnLocalMAC[:])
	put16(h[12:14], etype)
	st.txWire(p, o)
}

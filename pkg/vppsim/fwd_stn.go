package vppsim

// The punt path of ip4-local and the STN plugin's node on the ip4-punt arc (spec
// vpp-ip6-cnat-stn-stats.md §3.4, §3.5).

// stnHostMAC and stnLocalMAC are the destination and source MACs of the Ethernet
// header stn-ip4-punt puts in front of a punted packet (stn.c: stn_hw_addr_dst,
// stn_hw_addr_local). The host side of the rule's interface must accept the former.
var (
	stnHostMAC  = [6]byte{0, 0, 0, 0, 0, 2}
	stnLocalMAC = [6]byte{0, 0, 0, 0, 0, 1}
)

// ip4Punt is ip4-punt for a packet ip4-local delivered but nothing in VPP consumed:
// the stn-ip4-punt feature (enabled while there is a rule) sends it to the interface
// of the rule of its destination; without a rule for it the packet is dropped, by
// node with reason, as VPP's next punt feature (none: error-drop) does.
func (st *state) ip4Punt(p *pkt, node, reason string) {
	r := st.stn.rules[addr4(ip4Dst(p.ip()))]
	if r == nil {
		st.drop(p, node, reason)
		return
	}
	o := st.ifaces[r.sw]
	if p.tr != nil {
		st.tracef(p, node, "%s: punt", reason)
		st.tracef(p, "stn-ip4-punt", "rule %s -> %s", r.addr, st.ifName(r.sw))
	}
	if o == nil {
		st.drop(p, "stn-ip4-punt", "rule interface gone")
		return
	}
	// Straight to the interface's TX: an Ethernet header of its own, no ip4-rewrite
	// (the TTL stays), no output features.
	if p.l3 < ethHdrLen {
		st.drop(p, "stn-ip4-punt", "no room for the Ethernet header")
		return
	}
	p.off = p.l3 - ethHdrLen
	h := p.buf[p.off:p.l3]
	copy(h[0:6], stnHostMAC[:])
	copy(h[6:12], stnLocalMAC[:])
	put16(h[12:14], etherTypeIP4)
	st.txWire(p, o)
}

// udpPuntUnknown tells whether ip4-udp-lookup punts a packet to a port no
// node is registered for, instead of answering it with ICMP port unreachable:
// after the first STN rule, for ever (stn.c registers udp_punt_unknown and
// tcp_punt_unknown and never withdraws them).
func (st *state) udpPuntUnknown() bool { return st.stn.puntUnknown }

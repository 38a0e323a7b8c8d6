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
// of the rule of its destination (stnPunt, fwd_stn6.go); without a rule for it the
// packet is dropped, by node with reason, as VPP's next punt feature (none: error-drop)
// does.
func (st *state) ip4Punt(p *pkt, node, reason string) {
	st.stnPunt(p, st.stn.rules[addr4(ip4Dst(p.ip()))], node, reason, "stn-ip4-punt", etherTypeIP4)
}

// udpPuntUnknown tells whether ip4-udp-lookup and ip6-udp-lookup punt a packet to a port no
// node is registered for, instead of answering it with ICMP port unreachable:
// after the first STN rule, for ever (stn.c registers udp_punt_unknown and
// tcp_punt_unknown and never withdraws them).
func (st *state) udpPuntUnknown() bool { return st.stn.puntUnknown }

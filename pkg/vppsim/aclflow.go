package vppsim

import "net/netip"

// aclFlow is what the ACL plugin's classifier sees of a packet: the 5-tuple
// and the TCP flags of the packet as it stands at the point where the ACL is
// applied (input ACLs before NAT, output ACLs after NAT output, docs/dev-guide/VPP-FORWARDING.md §8-9).
// The forwarding graph fills it; the ACL state (acl*.go) evaluates it.
type aclFlow struct {
	Src, Dst         netip.Addr
	Proto            uint8 // IP protocol number (1 ICMP, 6 TCP, 17 UDP, 132 SCTP)
	SrcPort, DstPort uint16
	// ICMPType and ICMPCode are set for ICMP; VPP's ACLs match them in the
	// port fields.
	ICMPType, ICMPCode uint8
	TCPFlags           uint8
	// Fragment is true for a non-first fragment (no L4 header).
	Fragment bool
	// NoL4 is true when nothing follows the IP header (VPP's l4_valid is
	// 0). Only TCP, UDP and ICMP have ports (type and code) for ACLs:
	// for every other protocol, SCTP included, both are 0
	// (public_inlines.h acl_fill_5tuple_l4_and_pkt_data).
	NoL4 bool
	// Bytes is the buffer length the ACL node sees, for the rule counters:
	// the IP packet on ip4/ip6-unicast, the frame with its rewrite on
	// ip4/ip6-output (vlib_buffer_length_in_chain from current_data).
	Bytes int
}

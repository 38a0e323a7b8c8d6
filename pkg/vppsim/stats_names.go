package vppsim

import "strings"

// Error counter names in the stats segment.
//
// VPP 25.10 registers every node error with a symbolic name and a description
// (vlib/error.c vlib_register_errors): "show errors" prints the description,
// the stats segment names the counter /err/<node>/<name>. Nodes that declare
// their counters in a .api file (the ip4/ip6 nodes, ICMP, ARP, the neighbour
// nodes, UDP) have short names (time_expired); legacy nodes that only give
// strings (ethernet-input, interface-output, l2-*, vxlan4-*, the NAT44-ED and
// ACL nodes, ...) have the string as both, spaces included
// ("/err/vxlan4-input/no such tunnel packets").
//
// The simulator's counters are keyed by node and description (what its
// "show errors" prints). statsErrorName gives the stats name: the symbolic
// name of the counter set the node registers, or the description itself for
// the legacy nodes and for the simulator's descriptions of events VPP has no
// counter for.

// errCounterSet is a counter set: description -> symbolic name.
type errCounterSet map[string]string

// The counter sets, from VPP 25.10's .api files (vnet/ip/ip.api counters ip4,
// ip6, icmp4, icmp6; vnet/arp/arp.api; vnet/ip-neighbor/ip_neighbor.api;
// vnet/udp/udp_error.def). The simulator's own wording of the same event is
// listed beside VPP's where the two differ (its "show errors" prints it).
var (
	errSetIP4 = errCounterSet{
		"ip4 length < 20 bytes":                  "too_short",
		"ip4 length > l2 length":                 "bad_length",
		"bad ip4 checksum":                       "bad_checksum",
		"ip4 version != 4":                       "version",
		"ip4 options present":                    "options",
		"ip4 fragment offset == 1":               "fragment_offset_one",
		"ip4 ttl <= 1":                           "time_expired",
		"ip4 IHL < 5":                            "hdr_too_short",
		"ip4 MTU exceeded and DF set":            "mtu_exceeded",
		"ip4 destination lookup miss":            "dst_lookup_miss",
		"ip4 source lookup miss":                 "src_lookup_miss",
		"ip4 drop":                               "drop",
		"ip4 punt":                               "punt",
		"unknown ip protocol":                    "unknown_protocol",
		"bad tcp checksum":                       "tcp_checksum",
		"bad udp checksum":                       "udp_checksum",
		"inconsistent udp/ip lengths":            "udp_length",
		"ip4 spoofed local-address packet drops": "spoofed_local_packets",
		"Multicast RPF check failed":             "rpf_failure",
	}
	errSetIP6 = errCounterSet{
		"ip6 length < 40 bytes":                  "too_short",
		"ip6 length > l2 length":                 "bad_length",
		"ip6 version != 6":                       "version",
		"ip6 ttl <= 1":                           "time_expired",
		"ip6 MTU exceeded":                       "mtu_exceeded",
		"ip6 destination lookup miss":            "dst_lookup_miss",
		"ip6 source lookup miss":                 "src_lookup_miss",
		"ip6 drop":                               "drop",
		"ip6 punt":                               "punt",
		"unknown ip protocol":                    "unknown_protocol",
		"bad udp checksum":                       "udp_checksum",
		"bad icmp checksum":                      "icmp_checksum",
		"inconsistent udp/ip lengths":            "udp_length",
		"no listener for udp port":               "unknown_udp_port",
		"ip6 spoofed local-address packet drops": "spoofed_local_packets",
		"Multicast RPF check failed":             "rpf_failure",
	}
	errSetICMP = errCounterSet{
		"unknown type":                                   "unknown_type",
		"invalid code for type":                          "invalid_code_for_type",
		"hop_limit != 255":                               "invalid_hop_limit_for_type",
		"payload length too small for type":              "length_too_small_for_type",
		"echo replies sent":                              "echo_replies_sent",
		"destination unreachable response sent":          "dest_unreach_sent",
		"hop limit exceeded response sent":               "ttl_expire_sent",
		"parameter problem response sent":                "param_problem_sent",
		"packet too big response sent":                   "packet_too_big_sent",
		"error message dropped":                          "drop",
		"ICMP errors rate limited":                       "drop",
		"ICMP error rate limited":                        "drop",
		"neighbor solicitations from source not on link": "neighbor_solicitation_source_not_on_link",
		"neighbor solicitations for unknown targets":     "neighbor_solicitation_source_unknown",
		"neighbor advertisements sent":                   "neighbor_advertisements_tx",
		"neighbor advertisements received":               "neighbor_advertisements_rx",
		"neighbor discovery not configured":              "router_solicitation_radv_not_config",
		"router advertisement source not link local":     "router_advertisement_source_not_link_local",
		"router advertisements received":                 "router_advertisements_rx",
	}
	errSetARP = errCounterSet{
		"ARP replies sent":                               "replies_sent",
		"ARP Disabled":                                   "disabled",
		"ARP Disabled on this interface":                 "disabled",
		"IP4 source address not local to subnet":         "l3_src_address_not_local",
		"IP4 destination address not local to subnet":    "l3_dst_address_not_local",
		"IP4 destination address is unset":               "l3_dst_address_unset",
		"IP4 source address matches local interface":     "l3_src_address_is_local",
		"ARP replies received":                           "replies_received",
		"ARP opcode not request":                         "opcode_not_request",
		"ARP opcode not request or reply":                "opcode_not_request",
		"Proxy ARP replies sent":                         "proxy_arp_replies_sent",
		"ARP hw addr does not match L2 frame src addr":   "l2_address_mismatch",
		"ARP hw address mismatch":                        "l2_address_mismatch",
		"ARP probe or announcement dropped":              "gratuitous_arp",
		"Interface is not mapped to an IP table":         "interface_no_table",
		"Interface is not IP enabled":                    "interface_not_ip_enabled",
		"RX interface is unnumbered to different subnet": "unnumbered_mismatch",
	}
	errSetIP4Neighbor = errCounterSet{
		"ARP requests throttled":            "throttled",
		"ARP requests resolved":             "resolved",
		"ARP requests sent":                 "request_sent",
		"no source address for ARP request": "no_source_address",
	}
	errSetIP6Neighbor = errCounterSet{
		"throttled":                             "throttled",
		"address overflow drops":                "drop",
		"neighbor solicitations sent":           "request_sent",
		"no source address for ND solicitation": "no_source_address",
	}
	errSetUDP = errCounterSet{
		"No listener for dst port":   "no_listener",
		"Packets with length errors": "length_error",
		"short UDP packet":           "length_error",
	}
)

// errSetByNode is the counter set each node registers (ip4_error_counters on
// every ip4 node of ip4_forward.c / ip4_input.c, and so on).
var errSetByNode = map[string]errCounterSet{
	"ip4-input": errSetIP4, "ip4-input-no-checksum": errSetIP4, "ip4-not-enabled": errSetIP4,
	"ip4-lookup": errSetIP4, "ip4-drop": errSetIP4, "ip4-punt": errSetIP4, "ip4-local": errSetIP4,
	"ip4-rewrite": errSetIP4, "ip4-glean": errSetIP4Neighbor, "ip4-arp": errSetIP4Neighbor,
	"ip6-input": errSetIP6, "ip6-not-enabled": errSetIP6, "ip6-lookup": errSetIP6, "ip6-drop": errSetIP6,
	"ip6-punt": errSetIP6, "ip6-local": errSetIP6, "ip6-rewrite": errSetIP6, "ip6-link-local": errSetIP6,
	"ip6-mfib-forward-rpf": errSetIP6, "ip6-glean": errSetIP6Neighbor, "ip6-discover-neighbor": errSetIP6Neighbor,
	"ip4-icmp-input": errSetICMP, "ip4-icmp-echo-request": errSetICMP, "ip4-icmp-error": errSetICMP,
	"ip6-icmp-input": errSetICMP, "ip6-icmp-echo-request": errSetICMP, "ip6-icmp-echo-reply": errSetICMP,
	"ip6-icmp-error": errSetICMP, "icmp6-neighbor-solicitation": errSetICMP,
	"icmp6-neighbor-advertisement": errSetICMP, "icmp6-router-solicitation": errSetICMP,
	"icmp6-router-advertisement": errSetICMP,
	"arp-input":                  errSetARP, "arp-reply": errSetARP, "arp-proxy": errSetARP, "arp-disabled": errSetARP,
	"ip4-udp-lookup": errSetUDP, "ip6-udp-lookup": errSetUDP,
}

// aclDenyError is the error a deny of the ACL plugin's data-plane nodes counts
// (acl/dataplane_node.c: b->error = errors[action], action 0 is ACL_DROP, a
// legacy string). The simulator's "show errors" names the rule instead.
const aclDenyError = "ACL deny packets"

// statsErrorName is the name of the /err/<node>/<name> counter of the
// simulator's error (node, description).
func statsErrorName(node, reason string) string {
	if strings.HasPrefix(node, "acl-plugin-") {
		return aclDenyError
	}
	if set := errSetByNode[node]; set != nil {
		if name, ok := set[reason]; ok {
			return name
		}
	}
	return reason
}

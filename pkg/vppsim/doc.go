// Package vppsim is a VPP simulator: it serves VPP's binary API on a unix
// socket so that tests and the standalone demo can run the agent's real
// govpp code path on machines where VPP cannot run.
//
//	govpp socketclient ──unix socket──> accept ─> conn goroutine (one per client)
//	                                               │ read frame, decode (govpp codec)
//	                                               │ faults: fail / delay
//	                                               ▼
//	                                     handler(msg) under the state lock
//	                                               │ reads/changes state, encodes replies
//	                                               ▼
//	                                     replies batched, written when no more
//	                                     requests are buffered (pipelining)
//
// # What it simulates
//
// The socket protocol is VPP's as govpp's socketclient speaks it: 16-byte
// frame headers, the sockclnt_create handshake on the hard-coded message
// ID 15 answered with the client index and the full message table,
// sockclnt_delete, request contexts echoed in replies, dumps ended by the
// client's control_ping. The table lists every message of every binapi
// package of the pinned govpp (VPP 25.10), with VPP's "<name>_<crc>"
// names, so CRC compatibility checks pass for any of them. Several clients
// may be connected at once; their requests are executed one at a time, as
// VPP's main thread does.
//
// It keeps VPP's state for: interfaces (local0, DPDK-like NICs given in
// Options, loopbacks, TAP v2, af_packet, VXLAN) with admin state, MAC,
// MTUs, tags, rx mode, VRF binding, IPv4/IPv6 addresses and unnumbered
// configuration; FIB tables (with VPP's locking: the API, bound interfaces
// and NAT keep a table alive) and routes, including the special,
// connected, local and neighbor entries VPP shows in its dumps; IP
// neighbors and their config; proxy ARP; bridge domains, their members,
// BVIs and split-horizon groups, and the L2 FIB; NAT44-ED (plugin enable,
// forwarding, address and twice-NAT pools, inside/outside and output
// interfaces, static, identity and load-balancing static mappings,
// sessions); DHCP client configuration; the ACL plugin (acl*.go: ACLs,
// per-interface input/output lists, permit+reflect sessions and the match
// function aclEvaluate); the cnat plugin (cnat*.go: translations, their
// VIP clients, sessions, SNAT addresses and policy) and the cnat features of
// feature_enable_disable (feature.go). Every dump is answered from that
// state, and cli_inband answers a few show commands (interface, interface
// address, ip fib, ip neighbors, nat44 static mappings / interfaces /
// addresses, bridge-domain, acl-plugin acl / interface, version) in VPP's
// layout. Interface events are
// sent to clients that ask for them; DHCP leases are injected through the
// Go API (PushDHCPLease), and NAT sessions, which traffic creates, may be
// injected too (InjectSession).
//
// # How strict it is
//
// A simulator that accepts what VPP rejects hides bugs, so requests are
// checked like VPP checks them and failures carry VPP's own retval codes
// (see retval.go): unknown interfaces, missing VRF tables, duplicate or
// missing entries, NAT configuration while the plugin is disabled, VRF
// changes of interfaces with addresses, overlapping interface addresses,
// a second BVI in a bridge domain, LB mappings with fewer than two
// locals, and so on. A request the simulator does not implement is
// answered with VNET_API_ERROR_UNIMPLEMENTED (-9), a dump it does not
// implement with no details, never with silence. Requests with a
// client_index that is not the client's, malformed requests and unknown
// message IDs are dropped and logged, as VPP does. Where VPP's exact
// behaviour could not be confirmed, the handler's comment says which
// choice was made.
//
// # What it forwards
//
// The simulator is also a data plane following VPP 25.10's forwarding rules
// (docs/dev-guide/VPP-FORWARDING.md), one pipeline in the fwd_*.go files
// reading the state the handlers write, under the same lock:
//
//	device input (virtio-input, af-packet-input, dpdk-input)
//	  -> ethernet-input: L2 members to l2-input; L3: destination-MAC filter,
//	     ethertype dispatch
//	  -> arp-input: arp-reply (owner and unnumbered checks, learning),
//	     arp-proxy, arp-disabled
//	  -> ip4-input checks -> ip4-unicast: ACL-in hook -> NAT44-ED
//	     (classify / in2out / out2in) -> ip4-lookup (per-VRF LPM over
//	     connected, local and glean entries of admin-up interfaces, API
//	     routes with preference and weighted multipath, recursive and
//	     inter-VRF routes, DROP routes, ICMP_UNREACH / ICMP_PROHIBIT routes
//	     (ip4-null, rate-limited), neighbour /32s, NAT's local /32s,
//	     reference-counted per address and interface as nat44_ed.c
//	     registers them, natfib.go)
//	  -> ip4-local (echo replies, port unreachable, VXLAN decap) | ip4-glean /
//	     ip4-arp (ARP request sent, packet dropped) | ip4-rewrite (TTL, MTU
//	     with ip4-frag, MACs) -> ip4-output: NAT in2out-output -> ACL-out hook
//	  -> interface-output: the wire, the BVI into its bridge domain, a
//	     loopback back into its input
//	l2-input: learning, forwarding, BVI, flooding with the flood/uu-flood
//	flags and split horizon, static L2 FIB; vxlan4-encap to the peer
//	  -> ip6-input checks -> ip6-not-enabled -> ip6-multicast (mFIB: the
//	     ND groups) | ip6-unicast: ACL-in hook (no NAT44 node on IPv6
//	     arcs) -> ip6-lookup (per-VRF LPM, fe80::/10 in the receiving
//	     interface's link-local table, ip6-null) -> ip6-local (ICMPv6
//	     checks, echo replies, ND: NS answered, NA learned; UDP port
//	     unreachable) | ip6-glean / ip6-discover-neighbor (NS sent,
//	     packet dropped) | ip6-rewrite (hop limit, packet too big) ->
//	     ip6-output: ACL-out hook -> interface-output; ICMPv6 errors
//	     from ip6-icmp-error (fwd_ip6.go, fwd_fib6.go, fwd_icmp6.go,
//	     fwd_nd.go; IPv6 enablement and link-local addresses in
//	     handlers_ip6.go)
//
// cnat (fwd_cnat*.go, VPP-FORWARDING.md §12): a table-0 lookup that hits a
// cnat client goes through ip4/ip6-cnat-tx (session, else translation and
// path by VPP's flow hash or Maglev, forward and return sessions, the
// translated packet looked up again); cnat-snat-ip4/ip6 run on ip4/ip6-unicast
// after ACL-in and NAT44 where enabled; cnat-input-ip4/ip6 (DNAT, sessions at
// INPUT, before ACL-in) and cnat-output-ip4/ip6 (SNAT policy with the egress
// interface known, sessions at OUTPUT, after ACL-out) where enabled
// (fwd_cnat_feat.go: what makes a pod's hairpin through its Service work).
// "show cnat translation" and "show cnat session" answer through cli_inband.
//
// NAT44-ED keeps real sessions (6-tuple flows both ways, static, LB with
// probabilities and affinity records with VPP's reference counting,
// twice-NAT and self-twice-NAT, identity and out2in-only mappings,
// forwarding on/off and bypass sessions, dynamic SNAT keeping the source
// port, SYN-only creation, TCP state, lazy expiry and the LRU step of
// every session allocation, on the Options.Clock); nat44_user_dump, nat44_user_session*_dump and
// nat44_del_session work on them. Interfaces count rx/tx packets and bytes
// and drops ("show interface", InterfaceCounters; sw_interface_clear_stats
// and "clear interfaces" zero them); "trace add <input-node> <n>", "show
// trace", "clear trace", "show errors", "clear errors" and "show nat44
// sessions" answer through cli_inband. A trace record lists each node a
// packet visits once per visit, in the feature order, with what the node
// decided (a NAT node: the session it hit or created and the packet it
// made; a dropping node: why); a packet a node creates (an ARP request)
// has its own record.
//
// Frames enter with InjectFrame and leave through the TxHook; with
// Options.Linux, TAPs move frames through the device the simulator
// created and af_packet interfaces through a raw socket on the host veth,
// and a NIC given as "NAME=LINUXIF" is bound to that Linux interface with
// a raw socket. MACs are VPP's: a TAP's or af_packet's VPP side is
// a random 02:fe:... with use_random_mac/use_random_hw_addr, else
// mac_address/hw_addr as given, zero included (as VPP 25.10 does); a bound NIC has a MAC of its
// own, 08:00:27 and the last three bytes of its Linux interface's MAC
// (distinct per link like real NICs' burned-in MACs, the same after a
// restart; the Linux interface is made promiscuous), so the Linux stack of
// the simulator's namespace never handles its frames. Packets are processed whole, one at a time; nothing
// is queued (a packet waiting for ARP is dropped, as in VPP).
//
// # What it does not simulate
//
// For IPv6 (docs/dev-guide/VPP-FORWARDING.md §11.9): no router
// advertisements (only their on/off state), SLAAC, MLD, DHCPv6, the mirror
// ND proxy (ip6nd_proxy_enable_disable) or NUD (ip6nd_proxy_add_del and
// its dump are simulated: nd6proxy.go), no IPv6 fragmentation, extension headers or IPv6-underlay
// VXLAN. No IP reassembly (ip4-rewrite fragments oversize packets without DF and
// answers the others with ICMP fragmentation needed, but NAT passes
// non-first fragments untranslated where VPP reassembles), ICMP types
// other than echo and errors in NAT (ICMP errors are translated by the
// session of the packet they carry; other protocols, SCTP among them,
// take VPP's unknown-protocol paths, fwd_nat44_unk.go), per-VRF session
// limits, ARP termination in bridge domains, neighbour ageing, VLAN
// sub-interfaces and TUN-mode TAP I/O. Frames from raw-socket
// ports with a partial checksum are completed and TCP/IPv4 GSO
// super-frames are segmented; other GSO frames are dropped and counted.
// The ACL step is a hook (state.aclFilter) set to the ACL plugin's
// aclEvaluate (acl_eval.go): an interface without ACLs permits everything.
// There is no shared-memory API transport. Sub-interfaces, memif,
// IPsec, SRv6 and the other plugins in the table are not implemented and
// answer UNIMPLEMENTED. VPP 25.10's nat44_ed API has no
// nat44_forwarding_is_enabled; nat44_show_running_config reports the
// forwarding state instead. Without Options.Linux nothing is created in
// Linux: TAP host names and namespaces are recorded but not checked
// against the system. With Options.Linux (root only), a TAP also gets its
// Linux end in the requested namespace with the requested name, MAC, MTU,
// addresses, default routes and bridge, like VPP creates it, and
// af_packet requires the host interface to exist (and follows its admin
// state to it).
//
// # The stats segment
//
// With Options.StatsSocketPath (cmd/vpp-sim: stats.sock beside the API
// socket, as VPP's /run/vpp/stats.sock) the simulator serves VPP 25.10's stats
// segment (package statseg) for govpp's statsclient, and updates it where VPP
// does (stats.go has the table): /if/ rx, tx, drops, ip4, ip6 per interface,
// /err/<node>/<name> for every drop and node counter, /acl/<i>/matches per
// rule (after acl_stats_intf_counters_enable, which VPP 25.10 answers with
// acl_del_reply), and NAT44-ED's session gauge and per-interface translation
// counters. Errors carry VPP's symbolic names in the segment and their
// descriptions in "show errors" (stats_names.go). sw_interface_clear_stats
// zeroes an interface's counters in the segment; "clear errors" does not
// touch it. A Restart serves a new segment, as a restarted VPP does. With
// Options.StatsPerNodeCounters (VPP's statseg { per-node-counters on }, off by
// default) the segment also has /sys/node/* and /nodes/<node>/*: a call and a
// vector for every graph node a packet enters (stats_nodes.go).
//
// # Testing hooks
//
// FailMessage and DelayMessage inject faults per message,
// Options.FailProbability and SetFailProbability fail a seeded random share
// of the state-changing requests (faultspec.go), DropConnections
// and Restart simulate VPP closing the socket and crashing, MessageCount
// counts requests per message (e.g. to measure how many messages
// programming N services takes), SetRequestHook sees each request as it is
// executed (to check the state between two requests of a transaction), and
// Interfaces, InterfaceACLs, Routes, NAT, Sessions, LookupDNAT and Translate
// let tests inspect the state without going through the API. InjectFrame, SetTxHook, InterfaceCounters and ErrorCount
// drive and observe the data plane; Options.Clock makes time injectable.
package vppsim

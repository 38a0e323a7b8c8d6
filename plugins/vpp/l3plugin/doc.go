// Package l3plugin teaches the KV scheduler VPP's L3 configuration: VRF
// tables, static routes, static IP neighbors (ARP/ND), neighbor aging (what
// VPP 19.x called the IP neighbor scan), proxy ARP and IPv6 proxy ND. Each kind of value
// has a descriptor that programs it through the VPP binary API (govpp) and
// reads it back for resync.
//
// Keys owned:
//
//	config/vpp/v2/vrf-table/id/<id>/protocol/<IPV4|IPV6>   VrfTable          vpp-vrf-table
//	config/vpp/v2/route/vrf/<vrf>/dst/<net>/gw/<gw>         Route             vpp-route
//	config/vpp/v2/arp/<interface>/<ip>                      ARPEntry          vpp-arp
//	config/vpp/v2/ipscanneigh-global                        IPScanNeighbor    vpp-ip-scan-neighbor
//	config/vpp/v2/proxyarp-global                           ProxyARP          vpp-proxy-arp
//	vpp/proxyarp/interface/<interface>      (derived)       ProxyARP_Interface vpp-proxy-arp-interface
//	config/vpp/v2/proxynd/<interface>/<ip>                  ProxyNDEntry      vpp-proxy-nd
//
// Dependencies between the values (an arrow reads "waits for"):
//
//	Route ──> config/vpp/v2/interfaces/<outgoing_interface>      (if set)
//	      ──> VrfTable <vrf_id> and, for INTER_VRF, <via_vrf_id> (non-zero IDs only)
//	ARPEntry ──> config/vpp/v2/interfaces/<interface>
//	ProxyARP ──> VrfTable <vrf_id> of each range (non-zero IDs only)
//	  └─ derives vpp/proxyarp/interface/<name> ──> config/vpp/v2/interfaces/<name>
//	ProxyNDEntry ──> config/vpp/v2/interfaces/<interface>
//
// Interface names are turned into sw_if_index through the metadata map of
// the VPP interface descriptor (package ifaceidx); this package never reads
// the interface descriptor's code.
//
// VPP messages used: ip_table_add_del, ip_table_dump, ip_route_add_del,
// ip_route_dump, dhcp_client_dump (to recognise the routes of DHCP leases),
// ip_neighbor_add_del, ip_neighbor_dump, ip_neighbor_config,
// ip_neighbor_config_get, proxy_arp_add_del, proxy_arp_dump,
// proxy_arp_intfc_enable_disable, proxy_arp_intfc_dump, ip6nd_proxy_add_del,
// ip6nd_proxy_dump.
//
// IPv6 proxy ND (VPP 25.10, ip6-nd/ip6_nd_proxy.c and ip6_nd.c): an entry
// (interface, address) says the host at address lives behind interface.
// VPP adds address/128 via address out of interface to the interface's
// IPv6 table (FIB source ip6-nd-proxy), so traffic to it leaves by that
// interface, resolved by ND there; and it answers a neighbour solicitation
// for the address arriving on any interface of that table, the entry's
// own included (VPP checks no covering prefix), with the receiving
// interface's MAC. The solicitation must still pass VPP's source check: a
// source that is neither :: nor link-local must resolve to an adjacency on
// the receiving interface (an address VPP owns does not: its /128 is local).
// ip6nd_proxy_dump lists every entry of every IPv6 table with the interface
// its /128 resolves through; Retrieve keeps those on the agent's
// interfaces. The /128 also shows in ip_route_dump, where the route
// descriptor reads it as a route it did not make (not NB's, left alone).
// Link-local addresses are refused by Validate: VPP looks link-local
// targets up in the receiving interface's link-local table, which proxy
// entries never reach.
//
// IP neighbor scan in VPP 25.10: there is no ip_scan_neighbor_enable_disable
// any more; the periodic scan became per-family neighbor aging, set with
// ip_neighbor_config (max_number, max_age in seconds, recycle). The
// IPScanNeighbor value is mapped onto it per address family:
//
//	family scanned (mode IPV4/IPV6/BOTH)  max_age = stale_threshold × 60 s
//	                                       (stale_threshold 0: 4 × scan_interval;
//	                                       both 0: 4 min, the old scan defaults),
//	                                       recycle = true
//	family not scanned, or DISABLED       max_age = 0 (no aging), recycle = false
//	max_number                            kept as VPP has it (ip_neighbor_config_get)
//
// scan_interval (beyond that fallback), max_proc_time, max_update and
// scan_int_delay have no counterpart and are not applied: VPP probes an
// entry older than max_age and removes it if it does not answer, which is
// what the stale threshold meant, but it decides by itself how often it
// looks. Deleting the value restores "no aging". Read back from VPP, the
// value carries only the mode and stale_threshold (max_age / 60), unless NB
// asks for a value that maps to the same configuration.
//
// A route is one path: INTRA_VRF (via an interface and/or a next hop),
// INTER_VRF (looked up again in another table), DROP, or the reject types
// ICMP_UNREACH and ICMP_PROHIBIT, which make VPP drop the packet and answer
// its sender with ICMP destination unreachable, code 1 (host unreachable)
// or 10 (administratively prohibited), rate-limited by VPP's ip4-null node
// (docs/dev-guide/VPP-FORWARDING.md §3). Linux aborts a TCP connect() on
// either code with EHOSTUNREACH, but reports only code 10 to a connected
// UDP socket (code 1 is a soft error there); a reject route takes no next
// hop and no outgoing interface.
//
// VRF tables carry no metadata: VPP 25.10's API takes table IDs everywhere,
// so there is no table index to remember.
//
// What it does not do: it creates no interfaces, sets no interface
// addresses and does not put interfaces into VRFs (the interface plugin
// does); routes are single-path values (several Route values with the same
// destination and different next hops make an ECMP route, because every
// route is added and removed as one path of a multipath entry); it does not
// clean up routes, neighbors or tables that it cannot tell apart from VPP's
// own (they are retrieved with an unknown origin and left alone unless NB
// asks for them).
//
// Built on plugins/vpp/internal/vppbase like every VPP plugin: its channel (messages
// checked by govppmux, vppbase.ReplyTimeout), descriptor deps, address conversions and
// the one retry rule for VPP errors (vppbase.IsRetriable) come from there.
// The descriptors take typed values through kvapi.Typed (a wrong-typed value is an
// invalid-value error).
package l3plugin

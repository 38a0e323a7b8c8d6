// Package ifplugin configures VPP interfaces through the KV scheduler: it registers
// the descriptors below, opens one govpp channel (govppmux) for them, and follows the
// DHCP leases VPP reports.
//
// Keys owned (see api/models/vpp/interfaces for the builders):
//
//	config/vpp/v2/interfaces/<name>                 Interface           descriptor "vpp-interface"
//	vpp/interface/<name>/address/static/<ip>        derived address     descriptor "vpp-interface-address"
//	vpp/interface/unnumbered/<name>                 derived unnumbered  descriptor "vpp-unnumbered-interface"
//	vpp/interface/dhcp-lease/<name>                 DHCPLease (SB)      descriptor "vpp-dhcp-lease"
//	vpp/interface/<name>/address/dhcp/<ip>          derived from a lease (property, no descriptor)
//	vpp/interface/<name>/vrf/<vrf>/ip-version/<v>   derived VRF membership (property, no descriptor)
//
// Interface life cycle (descriptor "vpp-interface", metadata *ifaceidx.Metadata):
//
//	Dependencies: VRF tables config/vpp/v2/vrf-table/id/<vrf>/protocol/<IPV4|IPV6> of a
//	              non-zero VRF: IPV6 with an IPv6 address of its own, IPV4 with an IPv4
//	              address, a DHCP client or no address (an unnumbered interface binds
//	              neither: it follows its donor, see below); Linux host-name key of an
//	              AF_PACKET's host interface
//	Create:   create_loopback | tap_create_v3 | af_packet_create_v3 | vxlan_add_del_tunnel_v3
//	          (DPDK/VMXNET3: find the NIC by name), then one pipeline: tag = logical name,
//	          MAC (NICs), MTU, VRF (before any address), rx mode, DHCP client, admin up
//	derived:  addresses and the unnumbered setting are created after, deleted before it
//	Update:   in place (admin state, MAC, MTU, VRF, rx mode, DHCP); a new type or link, or
//	          a VRF change VPP refuses with addresses in place, re-creates the interface
//	Delete:   the matching delete; a NIC is only unconfigured (down, untagged, VRF 0)
//	Retrieve: sw_interface_dump + TAP/af_packet/VXLAN/address/unnumbered/DHCP dumps and
//	          sw_interface_get_table (the IPv4 table; the IPv6 one where the IPv4 one is 0
//	          and the interface has IPv6 or is unnumbered: a single-stack IPv6
//	          interface's VRF); tagged = the agent's (FromNB), untagged = FromSB
//	          (local0, NICs NB does not configure); never deletes what it did not tag
//
// Unnumbered life cycle (descriptor "vpp-unnumbered-interface", after its interface and
// an address of the interface it borrows from, the donor):
//
//	Create:   the interface takes the donor's IPv4 and IPv6 tables (sw_interface_set_table:
//	          VPP 25.10 refuses sw_interface_set_unnumbered with UNEXPECTED_INTF_STATE
//	          unless both share their IPv4 and IPv6 tables, and the interface descriptor
//	          binds no table of an unnumbered interface: on a single-stack IPv6 node the
//	          donor's VRF has no IPv4 table, so both stay in IPv4 table 0), IPv6
//	          is enabled on it when the donor has an IPv6 address (unnumbered alone gives
//	          no link-local address, so no neighbour discovery), then the setting itself;
//	          each step is read back first (sw_interface_get_table,
//	          sw_interface_ip6_get_link_local_address), so a retry or a restart never
//	          takes a second IPv6 lock; a failure undoes the steps
//	Delete:   the setting, the one IPv6 enable, tables 0 of both families
//
// Other plugins read interface metadata through GetInterfaceIndex (or the scheduler's
// metadata map named ifaceidx.DescriptorName) and leases through GetDHCPLease.
//
// Not supported: memif, sub-interfaces, VMXNET3 creation (VMXNET3 NICs are treated like
// DPDK NICs), per-queue rx modes, link MTU (hw_interface_set_mtu), reading the rx mode
// back from VPP (VPP has no dump of it that the simulator answers; Retrieve keeps NB's).
//
// Built on plugins/vpp/internal/vppbase like every VPP plugin: its channel (messages
// checked by govppmux, vppbase.ReplyTimeout), descriptor deps, address conversions and
// the one retry rule for VPP errors (vppbase.IsRetriable) come from there.
// The descriptors take typed values through kvapi.Typed (a wrong-typed value is an
// invalid-value error).
package ifplugin

// Package aclplugin teaches the KV scheduler VPP's ACL plugin (VPP 25.10):
// IPv4/IPv6 access lists and the ACL lists of interfaces.
//
// Keys owned:
//
//	config/vpp/acls/v2/acl/<name>             ACL            vpp-acl
//	config/vpp/acls/v2/interface/<interface>  InterfaceACLs  vpp-acl-interface
//
// Dependencies (an arrow reads "waits for"):
//
//	InterfaceACLs ──> config/vpp/v2/interfaces/<interface>
//	              ──> config/vpp/acls/v2/acl/<name> of every listed ACL
//
// VPP messages used: acl_add_replace, acl_del, acl_dump,
// acl_interface_set_acl_list, acl_interface_list_dump,
// acl_stats_intf_counters_enable.
//
// Match counters: VPP counts the matches of every ACL rule in its stats
// segment (/acl/<acl_index>/matches, read by the statscollector) only after
// acl_stats_intf_counters_enable {enable: 1}, a setting of the ACL plugin that
// a VPP restart loses and no message reads back. The ACL descriptor sends it
// before the first ACL it adds or replaces after each Retrieve, i.e. once per
// full resync: the agent's first, and the healing resync that follows a
// reconnect to a (possibly restarted) VPP. A refusal is logged as a warning
// and does not fail the ACL: enforcement never depends on observability.
//
// ACL in VPP: Create sends acl_add_replace with acl_index ~0 and the name as
// tag, and keeps the index VPP returns as metadata (ACLMetadata, in the
// metadata map of vpp-acl by name). Update sends acl_add_replace with that
// index: VPP replaces the rules in place, the interfaces that use the ACL
// keep it. Delete sends acl_del; VPP refuses to delete an ACL an interface
// still uses (ACL_IN_USE_INBOUND/OUTBOUND), which the dependency of
// InterfaceACLs on its ACLs prevents. Replacing ACL A by B on an interface
// never leaves it unfiltered: an ordinary transaction staged in the order new
// ACL, lists, old ACL is atomic, and in a full resync the scheduler rebinds the
// interface to B (created first) before it deletes A
// (TestFullResyncReplacingAnACLNeverLeavesTheInterfaceUnfiltered). Retrieve dumps every ACL (acl_dump
// ~0) and maps each back to its key by tag; untagged ACLs are not the
// agent's and are skipped, tagged ones are reported as the agent's (FromNB),
// so a full resync deletes the ACLs NB no longer has.
//
// InterfaceACLs in VPP: the whole input and output list of the interface is
// set with one acl_interface_set_acl_list (create, update and delete, which
// sets empty lists). Replacing one ACL by another on an interface is thus
// atomic: no packet passes the interface unfiltered in between (upstream
// Contiv/vpp-agent removed and added ACLs one by one with
// acl_interface_add_del). Retrieve reads acl_interface_list_dump and names
// interfaces by the interface descriptor's metadata and ACLs by the ACL
// metadata.
//
// Rules: an empty network is any address of the family of the other side
// (IPv4 when both are empty); an unset port range is 0-65535; protocol 0
// matches every protocol and ignores ports and TCP flags; for ICMP the
// source range is the type range and the destination range the code range.
// Values are compared in that canonical form.
//
// Decisions: ACLs without rules are refused by Validate (VPP would accept
// them, but an empty ACL in a list drops everything, which is never what a
// value means); names are VPP tags, at most 63 bytes.
//
// Built on the shared VPP plugin base (plugins/vpp/internal/vppbase: channel
// with the messages registered, interface index, retry rule) and typed
// descriptors (kvapi.Typed).
//
// What it does not do: MACIP ACLs, the ethertype whitelist, ACL-based
// forwarding, the plugin's session table settings.
package aclplugin

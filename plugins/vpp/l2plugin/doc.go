// Package l2plugin configures VPP bridge domains and static L2 FIB entries through
// the KV scheduler.
//
// Keys owned (builders in api/models/vpp/l2):
//
//	config/vpp/l2/v2/bridge-domain/<bd>      BridgeDomain    descriptor "vpp-bridge-domain" (metadata *BDMetadata)
//	vpp/bd/<bd>/interface/<iface>            derived member  descriptor "vpp-bd-interface"
//	config/vpp/l2/v2/fib/<bd>/mac/<mac>      FIBEntry        descriptor "vpp-l2-fib"
//
// A bridge domain is created with bridge_domain_add_del_v2, VPP allocating the ID
// (kept in BDMetadata, readable with GetBDIndex) and the name stored as its tag. Each
// member is a derived value that waits for its interface (config/vpp/v2/interfaces/<if>)
// and puts it in the bridge domain with sw_interface_set_l2_bridge (BVI port type,
// split-horizon group). A FIB entry waits for its bridge domain and, when it
// forwards, for the membership of its outgoing interface; it is l2fib_add_del.
// Retrieve reads bridge_domain_dump and l2_fib_table_dump; interface names come from
// the interface plugin's metadata (ifaceidx), so both depend on its Retrieve.
//
// Not done: changing the flags or MAC age of an existing bridge domain in place (the
// bridge domain is re-created), ARP termination table entries (bd_ip_mac_add_del),
// L2 cross-connects, bridge domains VPP holds without a tag (left alone, not
// reported).
//
// Built on plugins/vpp/internal/vppbase like every VPP plugin: its channel (messages
// checked by govppmux, vppbase.ReplyTimeout), descriptor deps, address conversions and
// the one retry rule for VPP errors (vppbase.IsRetriable) come from there.
// The descriptors take typed values through kvapi.Typed (a wrong-typed value is an
// invalid-value error).
package l2plugin

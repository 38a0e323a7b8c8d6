// Package l3plugin holds the KV descriptors of Linux static routes
// (linux_l3.Route, config/linux/l3/v2/route/<dst>/<iface>) and static ARP
// entries (linux_l3.ARPEntry, config/linux/l3/v2/arp/<iface>/<ip>), applied
// with netlink in the namespace of their Linux interface.
//
// The interface is named by its logical name; its link and namespace come
// from the ifplugin metadata map, so both descriptors depend on the Linux
// interface key (label "interface-exists") and retrieve after ifplugin.
//
// Routes go to the main table with protocol "static": a destination network
// (0.0.0.0/0 or ::/0 for a default route), an optional gateway, the scope
// (LINK for a route to a directly attached network, GLOBAL or unset for a
// route via a gateway) and the metric. A route changes by delete and create.
//
// A route via a gateway also depends on the gateway being reachable (label
// "gateway-reachable"), satisfied by any one of:
//
//   - the host route to the gateway on the same interface,
//     config/linux/l3/v2/route/<gw>/32/<iface> (or /128), as in a pod: a
//     link-scope /32 to the gateway, then the default route via it;
//   - an address of the same interface whose network (not a host prefix)
//     contains the gateway, linux/interface/<iface>/address/<ip>/<len>.
//
// Routes via an IPv6 link-local gateway need neither.
//
// ARP entries are permanent neighbours (NUD_PERMANENT) for IPv4 or IPv6;
// the MAC changes in place.
//
// Retrieve reads back only the correlated values (what NB asks for), in the
// shape of the NB value; routes and neighbours the agent did not configure
// are never reported, so never deleted.
package l3plugin

// Package ifplugin is the KV descriptor of Linux interfaces
// (linux_interfaces.Interface under config/linux/interfaces/v2/interface/<name>),
// applied with netlink inside the interface's network namespace.
//
// It handles three kinds of interfaces:
//
//   - VETH: one end of a veth pair. Each end is its own value naming the
//     other's logical name in veth.peer_if_name; the ends may be in
//     different namespaces. See "VETH pairs" below.
//   - TAP_TO_VPP: the Linux side of a TAP that VPP created. The descriptor
//     finds it, moves it into the value's namespace under host_if_name and
//     configures it; it never creates or deletes the device. See "TAP_TO_VPP"
//     below.
//   - LOOPBACK: the loopback of a namespace (host_if_name, default "lo"): its
//     addresses are added and it is set up. It is never created or deleted;
//     Delete removes the addresses the value added, except the kernel's own
//     127.0.0.1/8 and ::1/128, and leaves it up.
//
// For all kinds it sets the MAC, the MTU, the IP addresses, the admin state,
// and for VETH the rx/tx checksum offloading (ethtool ioctls).
//
// # VETH pairs
//
// The kernel creates both ends of a pair at once, but each Create sees only
// one value. The pair is therefore built in two steps, ordered by a
// dependency:
//
//   - The primary end, the one whose logical name sorts first, has no
//     dependency on its peer. Its Create makes the pair in the primary's
//     namespace: the primary under its host name, fully configured, and the
//     peer down under a temporary name, "ctvtmp" + 8 hex digits of a hash of
//     the peer's logical name.
//   - The secondary end depends on the primary's key (label
//     "veth-peer-exists"), so it is created after it and deleted before it.
//     Its Create takes the temporary peer from the primary's namespace (known
//     from the primary's metadata), moves it into its own namespace, renames
//     it and configures it.
//   - Deleting the secondary puts the peer back: addresses removed, down,
//     renamed to the temporary name, moved to the primary's namespace. The
//     primary keeps working without a carrier. Deleting the primary deletes
//     the pair (the scheduler has deleted the secondary first).
//
// So a primary wanted without its peer exists with a detached peer; a
// secondary wanted without its primary stays pending.
//
// # TAP_TO_VPP
//
// The value depends on the VPP TAP (label "vpp-tap-exists", key
// config/vpp/v2/interfaces/<tap.vpp_tap_if_name>). Create looks for the
// device, in this order:
//
//  1. under host_if_name in the value's namespace (VPP created it there, with
//     the VPP TAP's host_namespace, or an earlier run moved it);
//  2. where the TapLocator says VPP put it (the VPP side, which knows the name
//     VPP gave the Linux side of the TAP, provides it);
//  3. without a locator, under host_if_name in the agent's namespace: Contiv
//     gives the VPP TAP model the same host_if_name as the Linux value.
//
// The place it was found (the locator's answer if there is one) is its
// origin, kept in the metadata. Create moves it into the value's namespace,
// renames it to host_if_name and configures it; a missing namespace or
// device is a retriable error. Delete removes the value's addresses, sets it
// down and, when the origin is elsewhere, renames it back and moves it back
// there, so a later Create finds it again. VPP deletes the device itself when
// the VPP TAP is deleted (which the scheduler does after the Linux side).
//
// # Derived values and dependencies
//
//   - linux/interface/host-name/<host_if_name>: only for VETH and TAP_TO_VPP
//     values in the agent's namespace (host names repeat across pod
//     namespaces, "eth0" in every pod): what a VPP AF_PACKET depends on.
//   - linux/interface/<name>/address/<ip>/<len>: one per IP address, what
//     routes via a gateway on the interface may depend on.
//
// Both are properties (no descriptor); the interface descriptor applies the
// addresses itself.
//
// # Retrieve
//
// Retrieve looks only for the correlated values (what NB asks for), each in
// its namespace under its host name, and reports the kernel state in the
// shape of the NB value: fields the value leaves to the kernel (MTU 0, no
// MAC, default checksum offloading) are reported unset, addresses in the NB
// order and spelling, kernel-added IPv6 link-local addresses ignored. Links
// the agent did not create are not reported, so they are never deleted.
//
// # Metadata
//
// InterfaceMetadata (link index, host name, namespace, TAP origin) is kept
// under the logical name; the l3plugin reads it to find the link of a route
// or ARP entry.
package ifplugin

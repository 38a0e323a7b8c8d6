// Package stn steals a node's only NIC for VPP and gives it back (STN, "steal the
// NIC"): it records what the host had configured on the NIC (addresses of both
// families, routes including the default route, MTU), persists that record in a file,
// takes the configuration off the NIC so that only VPP uses it, and restores it when
// VPP goes away. It is the host-side half of single-NIC nodes; the agent (plugins/ipnet)
// builds the VPP half (the node IP on VPP's NIC, STN rules toward the host TAP, the
// host's address and routes on the TAP).
//
//	         VPP API socket probe (every Interval)
//	                    │
//	   ┌────── up ──────┴────── down (DownAfter probes in a row) ─────┐
//	   ▼                                                              ▼
//	not stolen: Capture -> Save(file) -> Steal          stolen: Restore -> Remove(file)
//
// The record reaches the disk (written, synced, renamed) before the NIC is touched,
// and it is removed only after the NIC has its configuration back, so a daemon killed
// at any point leaves either an untouched NIC or a record that the next start restores
// (Keeper.Run restores at start when VPP is not up). A node whose namespace is
// recreated (the reboot stand-in) starts with a clean NIC and a stale record file that
// names a link whose configuration is already there: restoring it is idempotent.
//
// What Steal does to the Linux link: it deletes the recorded routes and addresses,
// turns ARP off on it, sets rp_filter to strict and disables IPv6 on it, so that the
// kernel neither answers for the node's address on the wire nor accepts packets from
// it. The link stays up: a DPDK VPP unbinds the NIC from its kernel driver instead
// (out of scope here: no PCI handling), and the simulator (vpp-sim -nic NAME=LINUXIF)
// reads and writes the link through a packet socket. Restore undoes all of it.
//
// What it does not do: it moves nothing onto the host-interconnect TAP (the agent
// configures the TAP's address and routes from the record, Load), and it does not run
// a DHCP client. A DHCP-addressed NIC's address is recorded as dynamic with its
// lifetimes and restored so, with its routes; the host's DHCP client keeps renewing it.
//
// Costs: a probe is one unix-socket connect; a take or give-back is O(addresses +
// routes of the NIC) netlink calls.
package stn

// Package contivconf owns the agent's contiv.conf: it reads the file, fills in the code
// defaults, validates every value and resolves the settings that depend on the node the
// agent runs on. Other plugins read the result through the API interface and never parse
// contiv.conf themselves.
//
//	contiv.conf ──(infra.ConfigLoader)──> Config ──defaults + validation──> IPAMConfig (parsed,
//	                                         │                              contivCIDR dissected)
//	                                         │
//	   Deps.NodeName, nodeConfig[] ──────────┤
//	   Deps.DumpDPDKInterfaces (VPP) ────────┤──resolution──> main/other VPP interfaces, DHCP,
//	   Deps.GetSTNInfo (contiv-stn's record ─┘                node IPs, static default GW, STN
//	     at stnRecordFile, STNRecordSource)
//
// What it does:
//   - Owns every key of contiv.conf: the interface settings (useTAPInterfaces,
//     tapInterfaceVersion, the TAPv2 and vmxnet3 ring sizes, interfaceRxMode,
//     tcpChecksumOffloadDisabled, mtuSize), routing (mainVRFID, podVRFID, useNoOverlay,
//     useSRv6Interconnect, routeServiceCIDRToVPP), IP neighbour scanning (scanIPNeighbors,
//     ipNeighborScanInterval, ipNeighborStaleThreshold), STN (stealFirstNIC,
//     stealInterface, stnVersion, stnRecordFile, the deprecated stnSocketFile),
//     natExternalTraffic, enablePacketTrace,
//     crdNodeConfigurationDisabled, serviceRenderer (nat44 | cnat), ipamConfig (including srv6) and nodeConfig.
//   - Applies the code defaults for keys the file leaves out (booleans that default to true
//     stay true unless the file says false).
//   - Validates all values at Init and reports every problem at once, each naming the key
//     and the offending value; an invalid file stops the agent.
//   - Dissects ipamConfig.contivCIDR into the pod, VPP-host, node-interconnect and VXLAN
//     subnets, so that every consumer sees one effective address plan.
//   - Reads ipamConfig.ipv6, the IPv6 ranges under the top-level key names: beside
//     top-level (IPv4) ranges it is the IPv6 half of a dual-stack plan
//     (IPAMConfig.DualStackIPv6); alone (the file sets no top-level address-plan key)
//     it is a single-stack IPv6 plan, which lands in the top-level ranges as upstream's
//     IPv6 plans do (IPAMConfig.FamilyPlan). IPAMConfig.Plans and Plan(ipv6) give the
//     plan of each family. Validation names the key and the value of every
//     inconsistent combination (dualstack.go).
//   - Resolves this node's settings (DHCP, main VPP interface and its IPs, other VPP
//     interfaces, static default gateway, STN mode, NAT of external traffic) from the
//     global keys, this node's nodeConfig entry, the DPDK interfaces found in VPP and the
//     STN daemon. Init resolves without asking VPP (it may not be connected yet); as the
//     first event handler of the controller, the plugin resolves again on every resync
//     (ReloadNodeInterfaces), then with VPP's NICs; a failure at the start-up resync is
//     fatal.
//
// What it does not do:
//   - Read the NodeConfig CRD (crdNodeConfigurationDisabled=false is accepted but only the
//     nodeConfig list of the file is used) or emit NodeConfigChange events.
//   - Allocate addresses: the per-node address plan (pod subnet of node N, node IP, ...)
//     belongs to the ipam plugin, which starts from GetIPAMConfig.
//   - Configure anything in VPP or Linux: it owns no key-value pairs of the scheduler
//     and handles only resyncs.
//
// The options serviceLocalEndpointWeight, disableNATVirtualReassembly,
// cleanupIdleNATSessions, tcpNATSessionTimeout and otherNATSessionTimeout are not
// contiv.conf keys; they live in service.conf.
package contivconf

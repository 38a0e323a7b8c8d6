// Package ipnet builds the VPP and Linux configuration that gives the pods of this node
// IP connectivity (IPv4, IPv6 or both: see Dual-stack) to each other, to the host stack and to the pods and hosts of the
// other nodes. For each event of the controller it computes key-value pairs (vpp-agent
// models, keys from api/models) with builders that do no I/O, and stages them in the
// event's transaction; the KV scheduler and its descriptors apply them. It is not a pure
// core, though: it reads the host's link addresses and enables IPv6 in a pod's namespace
// (the two callbacks of hostio.go), publishes this node's VPP IPs to etcd through
// nodesync, watches DHCP leases (pushing NodeIPv4Change) and serves GET
// /contiv/v1/ipam. It reads contivconf (configuration), ipam (address plan, pod IPs),
// nodesync (node ID, other nodes) and podmanager (local pods).
//
//	contivconf ─┐                        ┌─> main NIC / loopbackNIC, default route
//	ipam ───────┤                        ├─> VPP-host interconnect (TAP or VETH+AF_PACKET)
//	nodesync ───┼─> IPNet (event loop) ──┼─> VRF tables, inter-VRF and drop routes
//	podmanager ─┤    builders (no I/O)   ├─> IP neighbour scan, podGwLoop
//	DHCP lease ─┘                        ├─> vxlanBVI, vxlanBD, per peer vxlan<ID> + ARP + FIB + routes
//	                                     └─> per pod: interface pair, loopback, ARPs, routes
//
// # Events handled
//
//   - Every resync (DBResync, HealingResync after an error, NodeConfigChange,
//     PodCIDRChange, NodeIPv4Change): the whole configuration is rebuilt and put (the
//     scheduler deletes what is not put again). The local pods are those of
//     podmanager.GetLocalPods that have an IP in the IPAM. This node's VPP IPs are
//     published through nodesync.PublishNodeIPs (a failure is a warning). A
//     NodeIPv4Change carries the node IP from a new DHCP lease.
//   - AddPod: the pod's IPs are allocated (ipam.AllocatePodIPs, one per family), its
//     wiring staged, and the CNI reply data filled in (interface <ifname> with
//     <podIP>/32 and, dual-stack, <podIPv6>/128, each with the pod gateway of its
//     family; routes 0.0.0.0/0 and ::/0 via those gateways). <ifname> is the AddPod's IfName
//     (CNI_IFNAME; eth0 by default), and after a restart the LocalPod's. Revert(AddPod) releases the IP and forgets the
//     pod. Change: "configure IP connectivity".
//   - DeletePod: the pod's keys are deleted and its IP released. Change:
//     "un-configure IP connectivity".
//   - NodeUpdate of another node: only that node's connectivity changes (keys of the old
//     state that the new one lacks are deleted, those of the new state put) and the
//     VXLAN bridge domain is put again. Changes: "connect node ID=<id>", "disconnect
//     node ID=<id>", "update connectivity to node ID=<id>".
//   - Shutdown: in VETH mode the VETH interfaces (VPP-host interconnect and pods) are
//     deleted, since they would outlive VPP; TAPs disappear with VPP.
//
// # Keys owned (N = this node's ID, <cid> = container ID)
//
// Resync, this node:
//
//	config/vpp/v2/interfaces/<main NIC>|loopbackNIC       DPDK (VMXNET3) NIC or loopback, main VRF, node IP;
//	                                                      STN without DPDK: AF_PACKET host-<link> on the stolen link
//	                                                      (DHCP: set_dhcp_client, no IP)
//	config/vpp/v2/interfaces/<other NIC>                  other NICs of nodeConfig
//	config/vpp/v2/route/vrf/<main>/dst/0.0.0.0/0/gw/<gw>  static default route (NIC, no DHCP)
//	config/vpp/v2/interfaces/tap-vpp2                     TAP mode: VPP side, host_if_name vpp1, MAC 34:3c:<N>
//	config/linux/interfaces/v2/interface/tap-vpp1         TAP mode: TAP_TO_VPP, host name vpp1
//	config/linux/interfaces/v2/interface/veth-vpp1|2      VETH mode: the pair (host names vpp1, vpp2)
//	config/vpp/v2/interfaces/afpacket-vpp2                VETH mode: AF_PACKET on vpp2, MAC 34:3c:<N>
//	config/vpp/v2/route/vrf/<main>/dst/<host IP>/32/gw/<Linux end>   one per host IP
//	config/linux/l3/v2/route/<pod cluster subnet>/<tap-vpp1|veth-vpp1>  (+ service CIDR and this node's IP/32
//	                                                      if routeServiceCIDRToVPP: the host's Services and NodePorts)
//	config/vpp/v2/vrf-table/id/<main|pod>/protocol/IPV4   labels mainVRF-IPv4, podVRF-IPv4
//	config/vpp/v2/route/vrf/...                           inter-VRF and drop routes (docs/dev-guide/UPSTREAM.md §2 item 4)
//	config/vpp/v2/ipscanneigh-global                      when scanIPNeighbors
//	config/vpp/stn/v2/rule/<tap-vpp2|afpacket-vpp2>/ip/<node IP>   STN: one per node address (stn.go)
//	config/vpp/stn/v2/host-link/<link>                    STN without DPDK: the stolen link exists
//	config/vpp/v2/arp/<tap-vpp2|afpacket-vpp2>/<node IP>  STN: static, 00:00:00:00:00:02 (the host's end)
//	config/vpp/v2/proxyarp-global                         STN: proxy ARP on VPP's end for the node subnet
//	config/linux/l3/v2/route/0.0.0.0/0/<tap-vpp1|veth-vpp1>   STN: the host's default route via the NIC's gateway
//	config/vpp/v2/route/vrf/<main>/dst/<dst>/gw/<gw|>     STN: the NIC's other routes, out of the NIC
//	config/linux/l3/v2/route/<dst>/<tap-vpp1|veth-vpp1>   STN: the same routes for the host, via VPP
//	config/linux/l3/v2/route/<node IPv6 subnet>/<tap-vpp1|veth-vpp1>  STN, IPv6 plan: via VPP's IPv6 interconnect IP
//	config/linux/l3/v2/arp/<tap-vpp1|veth-vpp1>/<VPP's IPv6 interconnect IP>  STN, IPv6 plan: VPP's MAC, permanent
//	config/vpp/v2/interfaces/podGwLoop                    pod gateway IP, pod VRF
//	config/vpp/v2/interfaces/vxlanBVI                     overlay: VXLAN IP, MAC 12:2b:<N>, pod VRF
//	config/vpp/l2/v2/bridge-domain/vxlanBD                overlay: BVI + tunnels (split horizon 1)
//
// Resync and NodeUpdate, per other node M that has an ID, a VPP IP and a management IP
// (and only while this node has an IP):
//
//	config/vpp/v2/interfaces/vxlan<M>                     overlay: VNI 10, this node IP -> M's VPP IP
//	config/vpp/v2/arp/vxlanBVI/<M's VXLAN IP>             overlay: static, MAC 12:2b:<M>
//	config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:<M>            overlay: static, out vxlan<M>
//	config/vpp/v2/route/vrf/<pod|main>/dst/<net>/gw/<hop> M's pod subnet, VPP-host subnet, management IPs
//	config/vpp/v2/route/vrf/<main>/dst/<mgmt IP>/32/gw/   overlay: inter-VRF main -> pod per management IP
//	config/linux/l3/v2/route/<M's VPP IP>/32/<tap-vpp1|veth-vpp1>  if routeServiceCIDRToVPP: M's NodePorts from the host
//
// Resync and AddPod/DeletePod, per pod (names cut to 63 characters):
//
//	config/vpp/v2/interfaces/vpp-tap-<cid>                TAP mode: pod VRF, unnumbered to podGwLoop,
//	                                                      host_if_name <ifname> created in the pod's netns
//	config/linux/interfaces/v2/interface/linux-tap-<cid>  TAP mode: TAP_TO_VPP <ifname>, <podIP>/32, netns FD
//	config/linux/interfaces/v2/interface/veth1-<cid>      VETH mode: pod end <ifname>, <podIP>/32
//	config/linux/interfaces/v2/interface/veth2-<cid>      VETH mode: host end, host name = cid[:15]
//	config/vpp/v2/interfaces/afpacketveth2-<cid>          VETH mode: AF_PACKET, unnumbered to podGwLoop
//	config/linux/interfaces/v2/interface/linux-loop-<cid> the pod's lo: 127.0.0.1/8, ::1/128
//	config/linux/l3/v2/arp/<pod if>/<gw>                  gateway -> MAC of the VPP side
//	config/linux/l3/v2/route/<gw>/32/<pod if>             link scope
//	config/linux/l3/v2/route/0.0.0.0/0/<pod if>           via the gateway
//	config/vpp/v2/arp/<vpp if>/<podIP>                    pod IP -> MAC of the pod side
//	config/vpp/v2/route/vrf/<pod>/dst/<podIP>/32/gw/<podIP>
//	config/linux/l3/v2/route/<podIP>/32/<tap-vpp1|veth-vpp1>  external IPAM only
//
// MACs of a pod: 02:fe followed by the FNV-32a hash of the container ID on the pod
// side, by its bitwise NOT on the VPP side.
//
// # Host traffic to Services (nodes without kube-proxy)
//
// Contiv-VPP left the host's own traffic to Services (kubelet, host-network pods) to
// kube-proxy, whose iptables rules translate it before routing, so that it reaches VPP
// by the pod subnet route. A node without kube-proxy (as Calico-VPP and Cilium replace
// it) sets routeServiceCIDRToVPP: the host then routes the service CIDR and every node's
// IP (/32, their NodePorts) via VPP, whose NAT44 serves them as it serves the pods.
// With kube-proxy the routes are harmless: kube-proxy translates the packets first.
//
// # DHCP
//
// With DHCP on the main NIC, the NIC gets set_dhcp_client and no address; the node IP
// comes from the lease that the VPP interface plugin reports (Deps.VPPIfPlugin, state
// key vpp/interface/dhcp-lease/<iface>). While there is no lease the node has no IP:
// GetNodeIP returns nil, GET /contiv/v1/ipam answers 500 and no peer connectivity is
// built. A lease that changes the node IP makes ipnet push NodeIPv4Change.
//
// # Differences from upstream Contiv-VPP v3.1.0, on purpose
//
//   - Nodes without an IP are left out of vxlanBD too (upstream put their tunnels in
//     the bridge domain, docs/ARCHITECTURE.md §8, quirk 4).
//   - The VXLAN BVI is not in a split-horizon group (only the tunnels are, group 1):
//     VPP's split horizon would drop BVI-to-tunnel traffic otherwise.
//   - VPP routes to the host's IPs and to other nodes' management IPs are made only for
//     addresses of the cluster's IP family; IPv6 link-local host addresses are skipped.
//     A management IP equal to the node's VPP IP gets no route (with the overlay such a
//     route would send the node's own VXLAN traffic into the tunnel).
//   - Without an IP of its own (DHCP, no lease yet) the node builds no connectivity to
//     other nodes and publishes no VPP IP (the tunnels need a source address).
//   - A NodeUpdate that changes a node's VPP IP also moves its VXLAN tunnel (upstream
//     only replaced the routes).
//   - The pods' VPP TAPs name their Linux side <ifname> and create it in the pod's
//     namespace (TapLink.host_namespace), so the Linux TAP_TO_VPP value finds it where
//     it wants it (see the package doc of plugins/linux/ifplugin).
//   - The CNI reply also carries the MAC of the pod's interface.
//   - The pod's interface is named after CNI_IFNAME (upstream always used eth0).
//
// # Single-NIC nodes (STN: stealFirstNIC, stealInterface)
//
// contivconf reports the stolen NIC's addresses and gateway (from the record of
// pkg/stn); the main NIC gets them, and the host's end of the interconnect gets the
// node's addresses besides its own, and MAC 00:00:00:00:00:02 (where VPP's STN node
// sends what it punts). The host's routes to pods, Services and other nodes stay via
// VPP's end of the interconnect (source: the host's interconnect address, routed back
// through the overlay); its default route goes via the NIC's gateway, which VPP answers
// ARP for on the interconnect (proxy ARP over the node subnet). The STN rules send the
// host whatever VPP delivers to the node IP and does not consume itself (TCP, UDP to
// ports VPP does not use, ...), as upstream did. Upstream made VPP's end unnumbered to
// the NIC and routed the host via the gateway; then a remote pod's reply to the node
// IP leaves its node by the NIC, SNATed, and never matches (seen in the cluster lab).
// The NIC's other recorded routes are mirrored (stnRoutes): VPP routes them out of
// the NIC, the host to VPP, IPv4 gateway routes via their gateway, IPv4 routes on the
// link on the link with their addresses proxy-ARPed, IPv6 ones via VPP's IPv6
// interconnect address. Without a DPDK NIC in VPP the main interface
// is an af_packet on the stolen link (VPP's host-<link>) with the NIC's MAC
// (contivconf decides; docs/CONFIG.md). GetHostIPs names the node's addresses, every
// family, since the host's own links listing leaves out vpp1, where they are; they
// are published to the other nodes by family. IPv6 (stnIPv6): the host's
// solicitations come from the node's own address, which VPP drops as not on link,
// so the host gets its IPv6 node addresses as /128s, a permanent neighbour entry for
// VPP's IPv6 interconnect address and routes through it (node subnet, the NIC's IPv6
// routes, the IPv6 default route); none without an IPv6 address plan. stnVersion 2
// (ip-punt-redirect) is refused by contivconf's validation, naming the key.
//
// # Not supported
//
//   - The SRv6 node interconnect (useSRv6Interconnect): Resync fails with a
//     FatalError naming the key. STN's stnVersion 2: contivconf refuses it.
//   - Custom pod interfaces (annotation contivpp.io/custom-if), memif and the device
//     manager, microservice labels: KubeStateChange of pods is not handled.
//   - The packet trace of enablePacketTrace (a VPP CLI command, not a key-value pair).
//   - IPv6 on pods with an external IPAM (the IPAM refuses it with dual-stack), and
//     with DHCP on the main NIC (no IPv6 node address then). IPv6 on STN nodes needs an
//     IPv6 address plan (VPP's end of the interconnect takes no IPv6 without one).
//
// # Dual-stack (issue 28)
//
// With ipamConfig.ipv6 beside the IPv4 plan, every builder adds the second family
// (IPv6; ipam.ThisNodeAddresses / NodeAddresses) beside the primary one, which the
// IPAM's single-family getters give; a single-stack IPv4 node builds exactly what it
// did before, and a single-stack IPv6 node builds IPv6 through the same getters. The
// IPv6 half:
//
//	main NIC / loopbackNIC   + <node IPv6>/<len> (nodeInterconnectCIDR of ipv6; not with
//	                         configured IPs or DHCP), published with nodesync.IPv6
//	tap-vpp2 | afpacket-vpp2 + VPP end of the IPv6 VPP-host subnet; tap-vpp1 | veth-vpp1 +
//	                         the Linux end; VPP routes to the host's global IPv6 addresses
//	                         via the Linux end; host routes to the IPv6 pod range (and with
//	                         routeServiceCIDRToVPP the IPv6 service range and node IP) via
//	                         the VPP end
//	vrf-table/.../IPV6       main and pod VRF, labels mainVRF-IPv6, podVRF-IPv6, with the
//	                         inter-VRF and drop routes of IPv4 for the IPv6 ranges
//	podGwLoop                + <pod gateway IPv6>/<pod prefix len>
//	vxlanBVI                 + <BVI IPv6>/<len>; per peer a static IPv6 neighbour of its BVI
//	                         (config/vpp/v2/arp/vxlanBVI/<peer BVI IPv6>, MAC 12:2b:<M>:
//	                         the bridge domain floods nothing, so ND cannot cross it) and
//	                         pod VRF routes to its IPv6 pod and VPP-host subnets and IPv6
//	                         management IPs via its BVI IPv6 (without the overlay: main
//	                         VRF via its published IPv6 VPP address, if any)
//	per pod                  + <podIPv6>/128 on the pod's interface; in the pod a static
//	                         neighbour for the IPv6 gateway, a link route to it and ::/0
//	                         via it; in VPP a static neighbour and a /128 route in the
//	                         pod VRF; neighbour scan mode BOTH
//
// The pods' IPv6 default route goes via the global IPv6 of podGwLoop, not a link-local
// gateway: the same model as IPv4 (the VPP side is unnumbered to podGwLoop), and with
// the static neighbour entry the pod never needs neighbour discovery to reach it.
// A link-local gateway would need the TAP's own link-local address, which a TAP only
// has once sw_interface_ip6_enable_disable ran on it (VPP-FORWARDING.md §11.1).
// What this package does not say in its key-value pairs: a pod's VPP interface must sit
// in the IPv6 table of the pod VRF and have IPv6 enabled, because VPP 25.10 refuses
// sw_interface_set_unnumbered with UNEXPECTED_INTF_STATE (-74) when the interface's
// IPv4 or IPv6 FIB differs from the donor's (src/vnet/interface.c,
// vnet_sw_interface_check_table_same), and unnumbered alone gives no link-local address
// (no neighbour discovery). The VPP interface plugin derives both from the unnumbered
// donor (podGwLoop, which has an IPv6 address on a dual-stack node): it binds the
// donor's IPv6 table and enables IPv6 before setting unnumbered, and the simulator
// checks the tables as VPP does.
//
// # Dependencies
//
// Deps declares them all. Compared with upstream, ServiceLabel is NodeName; the host
// I/O is two callbacks (GetHostLinkIPs, EnablePodIPv6) with netlink/sysctl defaults in
// hostio.go, the only I/O of the package; VPPIfPlugin is the small DHCP lease
// interface of this package; DeviceManager, LinuxNsPlugin, GoVPP and RemoteDB are not
// needed (no memif, namespaces are referenced by path, no VPP CLI, no microservice
// config), and there is no package-level DefaultPlugin.
//
// # REST
//
// With Deps.HTTPHandlers set, Init registers GET /contiv/v1/ipam, served by the IPAM's
// IPAMDataHandler with the node IP known to ipnet.
package ipnet

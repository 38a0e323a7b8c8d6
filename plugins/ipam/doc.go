// Package ipam is the address plan of the cluster and the pod IP allocator of this node.
//
// Every address a node uses derives from its node ID N (allocated by nodesync) and the
// effective ipamConfig of contiv.conf (contivCIDR already dissected by contivconf). All
// nodes run the same arithmetic, so each one knows the subnets of the others without
// asking:
//
//	item                     rule                                              node 1, defaults
//	pod subnet of N          podSubnetCIDR cut into /podSubnetOneNodePrefixLen,  10.1.1.0/24
//	                         block N (ID 2^bits wraps to block 0)
//	pod gateway              host #1 of the pod subnet                          10.1.1.1
//	NAT loopback             last address but one of the pod subnet             10.1.1.254
//	pod IPs (/32, /128)      host #2 up, round robin, never the two above       10.1.1.2, ...
//	VPP-host subnet of N     vppHostSubnetCIDR cut the same way, block N        172.30.1.0/24
//	  VPP end / Linux end    host #1 / host #2                                  172.30.1.1 / .2
//	node IP of N             host #N of nodeInterconnectCIDR, +1 when the       192.168.16.1
//	                         static default gateway lies at or below it
//	VXLAN BVI IP of N        host #N of vxlanCIDR                               192.168.30.1
//	node of a pod IP         (ip XOR cluster prefix) >> host bits
//
// Dual-stack (ipamConfig.ipv6 beside IPv4 ranges): the node has a second plan, IPv6,
// computed from the same node ID by the same rules (an addressPlan per family) and a
// second pool. Each pod gets an address of every family in one call (AllocatePodIPs:
// all or none, IPv4 first), ReleasePodIPs frees both, and a resync takes both back from
// the Kubernetes state (pod.AllIPAddresses) and the pod manager's records. The methods
// of the IPv4 era (PodSubnetThisNode, PodGatewayIP, NodeIPAddress, ...) answer for the
// primary family (the top-level ranges: IPv4 on a dual-stack node, IPv6 on a
// single-stack IPv6 one); ThisNodeAddresses and NodeAddresses answer for a given
// Family (pod subnet, gateway, NAT loopback, VPP-host subnet and its ends, VXLAN BVI
// IP, node IP, service range), and Families lists the families, the primary first.
// AllocatePodIP, GetPodFromIP and NodeIDFromPodIP cover every family. Custom interface
// IPs are of the primary family only. Per pod, a dual-stack node costs one more
// host-number entry in the second pool (no string maps beyond the pod index each pool
// has).
//
// The arithmetic (plan.go, netmath.go) and the allocator (pool.go, hostset.go) are
// pure: no I/O, no clocks, no goroutines. The Plugin glues them to the controller's
// events and guards its state with a mutex, because ipnet, podmanager and the REST
// server call the API from their own goroutines.
//
// Allocation: pod IPs are handed out round robin from host #2, continuing after the
// address assigned last, so a released address is reused as late as possible. The used
// host numbers live in a sparse bitmap, which makes an allocation cost O(1 + used/64)
// whatever the size of the subnet (a /16 or a /64 per node costs what a /24 costs).
// AllocatePodIP is idempotent per pod. The allocations are kept in memory only: every
// resync rebuilds them from the Kubernetes pods (an address that the Kubernetes state
// shows in use stays taken) and keeps those this agent made and did not release yet, so
// no address is handed out twice, also not across an agent restart.
//
// Tentative addresses: an address taken from the Kubernetes state for a pod that is not
// local (no CNI ADD recorded by the pod manager, none handled since) is tentative. That
// state may be stale (etcd down, no contiv-ksr leader): it may show a pod whose CNI DEL
// this agent has handled already. A tentative address follows the pod's changes in the
// Kubernetes state, in every family: deleted, moved to another node (no address in this
// node's subnet) or given another address, the pod frees it; every resync takes the
// tentative addresses again from its own state only; a CNI ADD of the pod makes the
// address the pod's like any other (confirmed). A pod that the state shows with an
// address of this node that nobody holds takes it tentatively, from a resync or a
// change (it may run here unknown to the pod manager: its address is not given away).
// Each pool remembers the main address this agent released from each pod (CNI DEL, a
// reverted ADD; at most maxReleasedHints): a state that still shows the pod with it is
// behind the DEL, and the address is not taken again. Following a change costs O(1).
//
//	               resync, not local   ┌───────────┐  CNI ADD (AllocatePodIPs)
//	Kubernetes pod ──────────────────▶ │ tentative │ ─────────────────────────▶ confirmed
//	(change showing it, nobody holds)  └───────────┘                            (local pod)
//	                                     │ change: deleted, moved, other IP;    │ CNI DEL
//	                                     │ a resync whose state lacks it        ▼ (ReleasePodIPs)
//	                                     ▼                                  free + released hint
//	                                    free
//
// External IPAM (ipamConfig.useExternalIPAM): this node's pod subnet is its Kubernetes
// podCIDR (from nodesync), and a pod's IP is the one in the result of the external CNI
// IPAM plugin (ips[0].address of the JSON result passed by the CNI request), checked
// against that subnet. A NodeUpdate that changes this node's podCIDR makes the IPAM
// push a PodCIDRChange event (an UpstreamResync) so that every handler switches over.
//
// Events handled:
//   - every resync (DBResync, HealingResync after error, NodeConfigChange,
//     PodCIDRChange, ...): recompute this node's subnets and rebuild the allocations;
//   - KubeStateChange of a pod: its tentative addresses follow it (see above);
//   - NodeUpdate ("Node Update", matched by name; external IPAM only): detect a new
//     podCIDR of this node and push PodCIDRChange.
//
// AddPod and DeletePod are not handled here: ipnet calls AllocatePodIP and
// ReleasePodIPs while handling them.
//
// REST: GET /contiv/v1/ipam/allocations lists the pods and their IPs (registered when
// Deps.HTTP is set; MainIPs lists both families on a dual-stack node). GET /contiv/v1/ipam belongs to ipnet, which knows the node IP; it
// serves IPAMDataHandler, whose body IPAMData builds.
//
// What it owns: the pod IP allocations of this node. It owns no key-value pairs of the
// scheduler and stages nothing in transactions.
//
// What it does not do:
//   - configure anything (ipnet turns the plan into VPP and Linux configuration);
//   - allocate node IDs (nodesync) or node IPs by DHCP (ipnet);
//   - persist allocations: custom interface IPs (AllocatePodCustomIfIP) are not in the
//     Kubernetes state, so an agent restart forgets them; ipnet allocates them again
//     while it resyncs the local pods, possibly with different addresses;
//   - allocate from networks other than the default pod network (custom networks);
//   - compute SRv6 SIDs and BSIDs (the srv6 prefixes of ipamConfig are parsed by
//     contivconf but not used here yet).
package ipam

// Package nat44 renders Kubernetes services into VPP NAT44 (endpoint-dependent)
// configuration, and manages the SNAT of traffic leaving the cluster.
//
//	processor ──FlatService, node IPs, frontend/backend interfaces, txn──> Renderer
//	                                                                          │ staged into txn, the
//	                                                                          ▼ event's transaction
//	config/vpp/nat/v2/nat44-global             Nat44Global  (one)
//	config/vpp/nat/v2/dnat44/<namespace>/<name> DNat44      (one per service)
//	config/vpp/nat/v2/dnat44/DNAT-identities   DNat44      (identity mappings)
//	config/vpp/v2/route/vrf/<vrf>/dst/<ip>/32/gw/  Route   (reject or drop of a service address)
//	config/vpp/nat/v2/dnat44/DNAT-external-IP-<ip> DNat44  (identities of an external IP, external.go)
//	config/vpp/v2/vrf-table/id/4294967294/protocol/IPV4  VrfTable (the external IPs' pool VRF)
//
// Keys owned: the six above (routes: only those of service addresses, reject.go; the VRF
// table: only externalPoolVRF). Nothing else is staged, and nothing is applied
// directly: the NAT descriptors of the KV scheduler program VPP.
//
// Global configuration (nat44-global), rebuilt whole on every change:
//   - forwarding on (packets matching no mapping pass untranslated);
//   - NAT interfaces: every backend interface "in", every frontend interface "out",
//     the default interface (towards the default gateway) with the output feature
//     instead of "out", listed by interface name;
//   - address pool: the default interface's IP (dynamic SNAT of traffic leaving the
//     cluster), and unless snatOnly the NAT loopback IP of this node's pod subnet as
//     twice-NAT address (self-twice-NAT: a pod reaching itself through a service), and
//     the external IPs in use in externalPoolVRF (below);
//   - with disableNATVirtualReassembly, fragments are dropped;
//   - timeouts {tcp_transitory: 1} while some service has ClientIP affinity and the
//     recipe below runs, none (VPP's defaults) otherwise.
//
// The default interface exists only when contiv.conf enables natExternalTraffic: in
// STN or DHCP mode it is the main interface with the node IP, otherwise the main or
// other VPP interface whose subnet holds the static default gateway. In no-overlay
// mode the main interface is never SNATed: it carries the traffic between nodes.
//
// Per service (DNat44 labelled "<namespace>/<name>"): one static mapping per port and
// exposed IP (cluster IPs and external IPs on the service port, every node IP on the
// node port), TCP or UDP, locals = the port's backends as the processor selected them:
// FlatPort.Backends for the cluster IPs (internal traffic), FlatPort.ExternalBackends
// for external IPs and node ports (external traffic) with weight serviceLocalEndpointWeight for local and 1 for
// remote backends (0 for a single local), the main VRF for this node's own addresses
// and, in no-overlay mode, for everything but this node's pods, the pod VRF otherwise.
// External IPs of cluster-wide services use twice-NAT ENABLED, everything else SELF.
// ClientIP affinity becomes the mapping's session affinity (the timeout minus 2 s, at
// least 1, while the recipe below runs). Mappings without locals
// are left out; IPv6 addresses are ignored. An address of a service with a port that
// has no endpoint anywhere gets a /32 ICMP_PROHIBIT route (rejected at once), one
// with a port that its traffic policy leaves without a backend here a DROP route, in
// the main and the pod VRF (reject.go); node IPs never get one.
//
// Shared messages: the mappings of one port share one locals slice and its LocalIP
// messages (a NodePort port has a mapping per node IP; 1,000 NodePorts at 50 nodes
// would otherwise hold a million LocalIP copies), and during a resync the LocalIP
// messages of equal content (a pod backing several services) are one message (one per
// share when a large resync renders its services in shares on several goroutines,
// internal/shares; the goroutines end before ResyncFlat returns and the DNATs are
// staged in the order of the services, as a sequential resync stages them). Staged
// values are never modified: every change builds new messages, and nothing downstream
// (scheduler, NAT descriptors, Clone/Equal, JSON) writes into a value it was given.
//
// Input: the renderer implements renderer.Renderer, the processor's one renderer
// interface, and renders from the processor's flat form (address texts as given, no
// formatting) into the transaction passed with each call, describing each change on it
// ("add service 'default/web'", "update NAT frontend interfaces"). The seed API
// (renderer.ServiceRendererAPI: AddService, ..., Resync) stays: those methods convert
// the ContivServices to the flat form and stage into the transactions of
// Deps.UpdateTxnFactory and Deps.ResyncTxnFactory (optional otherwise); registered with
// the processor's RegisterRenderer, the renderer is called through a
// renderer.SeedAdapter and uses them. It keeps the DNAT it last
// staged for each FlatService (keyed by pointer; the processor passes the same pointer
// while a service is unchanged): a resync stages the same DNAT again for an unchanged
// service, and a change of the node IPs builds each node-port service's DNAT from the
// previous one (the mappings of the unchanged addresses are the same messages; only the
// new node IPs' mappings are built), a new DNat44 value with a new mapping list, since
// the scheduler compares the old value with the new.
//
// Identity mappings (DNAT-identities, staged on every resync, empty without a default
// interface): UDP 4789 (VXLAN) of the default interface's IP in the main VRF and the
// address itself in the pod and the main VRF, so that traffic between nodes keeps the
// pod source addresses that policies rely on.
//
// External and load balancer ingress IPs (external.go), with a default interface only:
// each IP a service is exposed on gets an address-only identity mapping in the pod VRF
// (DNAT-external-IP-<ip>) and is a NAT pool address of a VRF nothing is
// received in (externalPoolVRF), so that the answers to clients outside the cluster
// pass the default interface's NAT output feature untranslated while pods' packets to
// the IP are still load-balanced. Reference-counted by service: staged with the first
// service on the IP, removed with the last; the global configuration is re-put only
// when the set of IPs changes. An external IP that is a node's IP gets neither these
// values nor a reject or drop route; when the node IPs change, the services exposed on
// an IP that became or stopped being a node's (found through an index by external IP)
// are re-evaluated, at the cost of those services.
//
// Resync recomputes everything into the resync transaction; the incremental methods
// stage only what they change: one DNat44 per added, changed or removed service, the
// DNat44 of every node-port service when the node IPs change (built at the cost of the
// changed mappings plus one pointer per mapping), the global configuration when an
// interface set or the set of external IPs changes (O(external IPs in use): the pool
// is part of that one value). In snatOnly mode services are ignored and only the
// SNAT part (forwarding, pool, output feature, identities) is rendered.
//
// Idle NAT sessions: VPP 19.01 did not time NAT sessions out, so upstream Contiv
// deleted idle ones itself. With cleanupIdleNATSessions in service.conf the session
// goroutine started by AfterInit (stopped by Close) dumps the sessions every
// otherNATSessionTimeout minutes over the GoVPP channel (nat44_user_dump,
// nat44_user_session_v3_dump) and deletes (nat44_del_session) TCP sessions idle longer
// than tcpNATSessionTimeout and others idle longer than otherNATSessionTimeout, idle
// time measured on VPP's clock (see cleanupIdleSessions). A twice-NAT session is
// deleted by the twice-NAT address of its remote end (its inside lookup key); as the
// session dump ignores vrf_id, the sessions of an address that is a NAT user in several
// VRFs are counted once and deleted in the VRF that has them. Metrics, when Deps.Stats is
// set: contiv_nat_sessions{proto}, contiv_nat_sessions_deleted_total{proto},
// contiv_nat_session_delete_errors_total.
//
// Stale UDP sessions (stale.go): an update that changes the endpoints of a UDP port
// (first endpoint, backend removed or replaced, port or service removed) notes the
// port's addresses with its current backends; once the event's transaction is
// committed (Committed, called by the plugin as a controller.CommitObserver), the
// same goroutine dumps the sessions and deletes the UDP ones whose outside end is
// such an address and whose inside end is no current backend, forwarding-bypass
// sessions included, and those whose remote end is such an address (a datagram that
// left untranslated, source-NATed to the node IP by the uplink's output feature
// before the Service had a mapping), as kube-proxy clears conntrack entries by their
// original destination. VPP has no session dump by destination: a purge walks every
// session (O(users x sessions) in VPP); the purges queued while one runs are merged.
//
// ClientIP affinity timeout (affinity.go): VPP keeps an affinity record while any
// session made through it lives, closed TCP sessions 240 s and more, so a timeout T
// holds only with a recipe, run while at least one service has ClientIP affinity
// (unless service.conf's disableAffinityTimeoutEnforcement, or without a GoVPP
// channel): nat44-global's tcp_transitory is 1 s (global to VPP), the session
// goroutine runs a pass every second on Deps.Clock (started with the first such
// service, stopped with the last) that dumps the sessions of those services' backends
// (nat44_user_session_v3_dump) and deletes the ones made through their frontends that
// ended (idle 1 s or more, and timed out or UDP), and the mappings' affinity is T - 2
// s, at least 1. The services' backends and frontends are kept reference-counted,
// changed at the cost of the changed service, read by the pass under a mutex. A pass
// costs one dump per backend and O(their sessions).
//
// The goroutine runs whenever the renderer has a GoVPP channel; it is the renderer's
// only I/O, the rendering itself is pure.
package nat44

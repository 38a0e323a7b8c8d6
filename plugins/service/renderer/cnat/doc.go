// Package cnat renders Kubernetes services into VPP's cnat plugin (the service NAT
// Calico-VPP uses): one translation per exposed (address, port, protocol), staged as
// one translation set per service, the source
// NAT of traffic leaving the cluster, and the reject and drop routes of addresses
// without backends. It serves IPv6 always and IPv4 when contiv.conf says
// serviceRenderer: cnat (then the NAT44 renderer is not registered at all).
//
//	processor ──FlatService, node IPs, frontend/backend interfaces, txn──> Renderer
//	                                                                          │ staged into txn
//	                                                                          ▼
//	config/vpp/cnat/v2/translation-set/<ns>/<name>       TranslationSet (one per service)
//	config/vpp/cnat/v2/snat-addresses                    SnatAddresses (one)
//	config/vpp/cnat/v2/snat-policy                       SnatPolicy K8S (one)
//	config/vpp/cnat/v2/snat-exclude/<prefix>             SnatExcludePrefix (the cluster's ranges)
//	config/vpp/cnat/v2/snat-interface/<if>/table/<T>     SnatPolicyInterface (POD, HOST, INCLUDE_V4/6)
//	config/vpp/cnat/v2/feature/<if>/<NODE>/family/<F>    SnatFeature (cnat-snat, and on pods' interfaces cnat-input and cnat-output)
//	config/vpp/v2/route/vrf/<vrf>/dst/<ip>/<32|128>/gw/  Route (reject or drop of a service address)
//
// Keys owned: the seven above (routes: only those of service addresses of the families
// served; translations, features and tables: only of the families served).
//
// Translations (translation.go), per service port and address of a served family:
//   - cluster IPs on the service port, paths = FlatPort.Backends (internal traffic);
//   - external and load balancer IPs on the service port, and every node IP on the node
//     port, paths = FlatPort.ExternalBackends (external traffic, after
//     externalTrafficPolicy);
//   - node IPs (and an external IP that is a node's) are the node's real addresses:
//     is_real_ip, cnat is interposed in front of their forwarding, traffic matching
//     no translation goes on as without cnat. Other addresses are cnat's own
//     (exclusive): traffic matching no translation is dropped;
//   - a path's backend is an endpoint of the address's family; a port with no such
//     endpoint gets no translation;
//   - external traffic of a cluster-wide service (externalTrafficPolicy Cluster) is
//     source-NATed to this node's IP of the family with a port VPP allocates
//     (alloc_port), as kube-proxy masquerades it: replies come back to this node.
//     Local keeps the client's address (the backends are local);
//   - ClientIP affinity: flow_hash_config 0x01 (the source IP only), so a client's
//     flows hash to the same path while the paths do not change. cnat has no
//     affinity timeout: see SERVICES.md for what differs from kube-proxy;
//   - Deps.Maglev (service.conf serviceLoadBalancing: maglev): the translations of
//     external traffic (external IPs, node ports) are lb_type MAGLEV, whose table
//     depends on the set of backends, not their order (every node picks the same
//     backend for a flow; one backend of 10 removed moves about 11% of the flows
//     instead of about 89%, maglev_test.go). Cluster IPs keep DEFAULT.
//
// Translation sets (set.go): a service's translations are one value, a TranslationSet
// labelled "<namespace>/<name>" (as the NAT44 renderer stages one DNat44 per
// service), sorted by identity (VIP address text, port, protocol); the cnat
// descriptor diffs an old and a new set inside, by identity. A service without
// translation has no set (its set is deleted, never staged empty). Staged sets are
// never modified: a change builds a new set whose unchanged translations are the
// previous set's messages (the descriptor then compares them at the cost of a
// pointer; what it sends to VPP is the changed translations). A service whose ID
// changes has its old set's deletion staged before its new set: the scheduler
// applies a transaction in staging order and VPP knows a translation by VIP, port
// and protocol only, so the old set deleted after the new one is created would
// delete their common translations. A node joining or leaving gives each node-port
// service a new set made of the previous set's translations less those on the
// addresses gone plus those on the addresses new: its other translations are not
// rendered again.
//
// Two services claiming the same (address, port, protocol): the first one rendered
// keeps it in its set, the other's set leaves it out (logged); when the owner lets
// it go, it goes from VPP with the owner's set (the other service takes it at its
// next change or resync) and nothing of the other's set is touched. A node port's
// translations on the node IPs are owned as one, per (port, protocol, family), the
// others one by one; an external IP that is a node's meets a node port of its port
// through a small index (owners.go). Node IPs never get a reject or drop route.
//
// Source NAT (snat.go), K8S policy (cnat_snat_policy_k8s):
//   - SnatAddresses: with natExternalTraffic and a default interface (as the NAT44
//     renderer decides its pool), that interface's IPv4, else this node's IPv4 (when
//     IPv4 is served); this node's IPv6. Always staged when a family has one: the
//     cnat descriptors enable a family's cnat-snat feature only once it has an
//     address (VPP would translate to the zero address otherwise);
//   - excluded prefixes: per family served, the pod, VPP-host, node interconnect and
//     VXLAN ranges of the cluster and the service range: pods reaching them keep
//     their address;
//   - cnat-input and cnat-output of every served family that has a SNAT address on
//     every pod's interface (frontend or backend, not an infrastructure interface):
//     hairpin, below;
//   - the cnat-snat feature of every served family that has a SNAT address on every
//     frontend and backend interface (without an address the descriptor would keep
//     it pending for ever): its session lookup reverse-translates the replies that arrive in the
//     pod VRF (cnat's VIP lookup only sees table 0), its policy source-NATs new flows;
//   - tables: every such interface in POD (so that rule 3, "neither ingress nor
//     egress a pod interface", never fires: the egress is not known at the input
//     feature, and the feature would source-NAT every flow from an uplink), the pod
//     interfaces in INCLUDE_V4/V6 when pods' traffic leaving the cluster is
//     source-NATed (natExternalTraffic and a default interface; rule 2, unless the
//     destination is excluded), the host interconnect in HOST
//     (rule 1).
//
// Hairpin (a pod reaching itself through a Service, Kubernetes e2e "should allow pods
// to hairpin back to themselves through services"): rule 4 of the K8S policy (source
// = destination) can only hold after the DNAT. cnat-snat alone evaluates it before
// the lookup that reaches cnat's VIP and never fires (cnat_node_snat.c). So every
// pod's interface also gets cnat-input (ip4/ip6-unicast: the VIP's DNAT at the pod's
// ingress, in the pod VRF, since its VIP lookup is by cnat client, not by FIB) and
// cnat-output (ip4/ip6-output: rule 4 with the real egress interface after the DNAT,
// SNAT to the SNAT address; it also undoes cnat-input's DNAT on the answer), and
// cnat-input un-SNATs the pod's answer (cnat_node_feature.c). cnat-snat stays: it
// source-NATs pods' traffic leaving the cluster (rule 2) and reverse-translates, in
// the pod VRF, the answers of flows DNATed in table 0 (from the host interconnect and
// the uplinks, which get no cnat-input). VPP declares no order between cnat-snat and
// cnat-input on ip4-unicast; in either order the hairpin SYN is source-NATed once
// (after cnat-input, cnat-snat's own rule 4 does it and cnat-output finds the
// destination no longer equal to the source) and the answer is restored (derived
// from cnat_node_snat.c and cnat_node_feature.c). hairpin_test.go shows it by traffic
// with the renderer's own values; a pod reaching another pod keeps its address.
//
// Rejects and drops (reject.go): a service address whose ports have no endpoint of
// its family anywhere (FlatPort.HasEndpointsOf) gets a /32 or /128 ICMP_PROHIBIT route
// in the main and pod VRF, one whose ports the traffic policies leave without a
// backend here a DROP route, as the NAT44 renderer does, but only while the address
// has no translation at all: cnat owns the /32 of a VIP with a translation (its FIB
// source is above the API's) and drops what matches none of its translations, and a
// route in the pod VRF would take every port of the address away from cnat. An
// interposed VIP (is_real_ip) with a table-0 reject route would refuse a port without
// endpoints while translating the others (portreject_test.go), but VPP fixes a cnat
// client's mode at its creation and keeps the client while sessions use it, so the
// renderer cannot switch a live cluster IP (SERVICES.md, "Per-port rejects with cnat").
//
// Resync stages everything; the incremental methods cost the change: the set of one
// service, the interface keys of the interfaces that changed, the sets of the
// node-port services when the node IPs change (built from their previous sets). A
// resync keeps the set of a service it is given unchanged (the same FlatService, the
// same node IPs when it has a node port or an external IP, its set holding all it
// wants, none of its translations owned by a service before it): the same messages,
// compared by the scheduler and the descriptor at the cost of a pointer. It renders
// the others in shares, a large one on several goroutines
// (internal/shares, ending before ResyncFlat returns), each cutting its messages
// from blocks of its own (slabs: a few hundred allocations for 10,000 services, not
// one per message) and working out what each claims (claims: its node ports with
// their counts, its translations owned by identity); the translations of one port
// share their paths. Ownership is decided and the sets staged in the order of the
// services, as a sequential resync does, at the cost of each service's claims while
// nobody else holds any of them (ownAll), translation by translation otherwise. The
// order of sets is by port first and the node IPs are kept in text order, so that a
// set comes out of rendering in that order most often without a sort; a node IP's
// translations are therefore not one run of a set, and a node leaving finds each of
// its node-port translations by identity. The renderer has no goroutine of its own
// and does no I/O.
//
// Stale UDP sessions are not purged: cnat has no per-session delete
// (cnat_session_purge also deletes every translation), and neither a translation
// update nor its deletion touches the sessions (cnat_translation.c), so a UDP flow
// keeps its removed backend while it sends and moves 30 s after its last datagram
// (session-max-age), stale_test.go.
package cnat

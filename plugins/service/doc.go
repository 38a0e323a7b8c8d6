// Package service is the service plugin: it implements Kubernetes services (ClusterIP,
// NodePort, LoadBalancer, external IPs) in VPP with NAT44 or cnat, and the SNAT of
// traffic leaving the cluster.
//
//	controller event ──> Plugin (EventHandler)
//	   + its txn            │ ResyncInto(kube, txn) / UpdateInto(event, txn) / Revert
//	                        ▼
//	                     processor ──renderer.Renderer: FlatService, interfaces, node IPs, txn──> NAT44 renderer
//	                     (processor/)                                                             (renderer/nat44/)
//	                                                                                      and/or cnat renderer
//	                                                                                          (renderer/cnat/)
//	                                                                                                 │ stages into
//	                                                                                                 ▼
//	                                                                                 the event's transaction
//
// Events handled: every resync (DBResync, after-error healing, NodeIPv4Change,
// PodCIDRChange, ...), KubeStateChange of "service", "endpointslice", "endpoints",
// "servicecidr" and "node" (this node's zone), AddPod (Revert
// too), DeletePod and NodeUpdate (the nodesync type, or any event named "Node Update").
// Shutdown is ignored: the NAT configuration disappears with VPP. The plugin is
// registered after ipnet, so that pod interfaces exist when services look them up.
//
// Keys owned (staged by the NAT44 renderer): config/vpp/nat/v2/nat44-global,
// config/vpp/nat/v2/dnat44/<label> (one per service, labelled "<namespace>/<name>",
// plus "DNAT-identities") and the /32 reject and drop routes of service addresses
// (config/vpp/v2/route/vrf/<vrf>/dst/<ip>/32/gw/). Staged by the firewall of
// loadBalancerSourceRanges (package lbfirewall, from the Service objects):
// config/vpp/acls/v2/acl/contiv-lb-ranges-<hash> (one per filtered Service),
// config/vpp/acls/v2/acl/contiv-lb-permit-rest, and the uplinks' input lists
// config/vpp/acls/v2/interface/<interface>, shared with the policy plugin: the plugin's
// cell provides the ifacls.Lists that merges both plugins' parts. Staged by the health
// check tracker (package healthcheck): config/vpp/nat/v2/dnat44/DNAT-healthcheck/<label>,
// the node IP's health check node port forwarded to the host, where the agent serves it.
//
// Renderers, chosen at Init by contiv.conf's serviceRenderer: with nat44 (default) the
// NAT44 renderer renders IPv4 Services and, on a cluster with an IPv6 plan, the cnat
// renderer the IPv6 ones; with cnat the cnat renderer renders both families and the
// NAT44 renderer is not created (nothing of NAT44 is staged, and the health check
// node ports are mapped with cnat translations). An IPv6-only cluster has the cnat
// renderer only. A change of serviceRenderer takes a restart: the first resync stages
// the chosen renderer's values only, and the scheduler's full resync removes the
// other's. Keys staged by the cnat renderer: see its package documentation
// (config/vpp/cnat/v2/..., and reject and drop routes of its addresses).
//
// One renderer API: the processor renders through renderer.Renderer only, handing each
// renderer the event's transaction as an argument of every call (for an update wrapped
// so that the renderers' change descriptions are collected: Update returns them joined,
// "add service 'default/nginx'", for the event history). On Revert the processor hands
// them a renderer.DiscardTxn (the failed event's transaction is not committed). Each
// renderer gets every service and skips the addresses of a family it does not serve.
// A renderer of the seed API (renderer.ServiceRendererAPI) plugs in through a
// renderer.SeedAdapter.
//
// Configuration: service.conf (package config; flag -service-config, env
// SERVICE_CONFIG) with cleanupIdleNATSessions, tcpNATSessionTimeout,
// otherNATSessionTimeout, serviceLocalEndpointWeight, disableNATVirtualReassembly and
// serviceLoadBalancing (maglev: the cnat renderer's external translations use Maglev).
// The NAT44 renderer's session goroutine (purge of the UDP sessions a change of
// endpoints made stale, after the event's commit: Committed; the idle NAT session
// cleanup when enabled) uses a buffered govpp channel (4096/4096) opened here; it and
// the health check server (package healthcheck: one HTTP server per healthCheckNodePort
// of a LoadBalancer Service with externalTrafficPolicy Local, fed by a renderer that
// stages nothing, plus the retry of ports taken) are the plugin's long-lived goroutines
// and stop on Close (a large resync also parses and renders in shares on GOMAXPROCS
// goroutines that end before the resync returns).
//
// Not done: upstream's ipv6route and SRv6 renderers are not ported (cnat renders IPv6
// Services); an IPv6-only cluster has no health check node ports nor LB source-range
// firewall (both IPv4).
package service

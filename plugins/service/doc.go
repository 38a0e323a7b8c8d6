// Package service is the service plugin: it implements Kubernetes services (ClusterIP,
// NodePort, LoadBalancer, external IPs) in VPP with NAT44, and the SNAT of traffic
// leaving the cluster.
//
//	controller event ──> Plugin (EventHandler)
//	                        │ Resync / Update / Revert
//	                        ▼
//	                     processor ──FlatService, interfaces, node IPs──> nat44 renderer
//	                     (processor/)                                      (renderer/nat44/)
//	                                                                          │ UpdateTxnFactory(change)
//	                                                                          │ ResyncTxnFactory()
//	                                                                          ▼
//	                                                          the event's transaction
//
// Events handled: every resync (DBResync, after-error healing, NodeIPv4Change,
// PodCIDRChange, ...), KubeStateChange of "service" and "endpoints", AddPod (Revert
// too), DeletePod and NodeUpdate (the nodesync type, or any event named "Node Update").
// Shutdown is ignored: the NAT configuration disappears with VPP. The plugin is
// registered after ipnet, so that pod interfaces exist when services look them up.
//
// Keys owned (staged by the NAT44 renderer): config/vpp/nat/v2/nat44-global and
// config/vpp/nat/v2/dnat44/<label> (one per service, labelled "<namespace>/<name>",
// plus "DNAT-identities").
//
// The renderers do not get the transaction directly: UpdateTxnFactory(change) returns
// the current event's transaction and records the change description, and Update
// returns the descriptions joined ("add service 'default/nginx'") for the event
// history. ResyncTxnFactory returns the resync's transaction.
//
// Configuration: service.conf (package config; flag -service-config, env
// SERVICE_CONFIG) with cleanupIdleNATSessions, tcpNATSessionTimeout,
// otherNATSessionTimeout, serviceLocalEndpointWeight and disableNATVirtualReassembly.
// The idle NAT session cleanup runs in the NAT44 renderer over a buffered govpp
// channel (4096/4096) opened here; it is the plugin's only long-lived goroutine and
// stops on Close (a large resync also parses and renders in shares on GOMAXPROCS
// goroutines that end before the resync returns).
//
// Not done: IPv6 clusters (upstream's ipv6route and SRv6 renderers are not ported; the
// plugin warns and renders nothing).
package service

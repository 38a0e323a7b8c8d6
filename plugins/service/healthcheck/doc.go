// Package healthcheck serves the health check node ports of Services, as kube-proxy
// does: for each Service of type LoadBalancer with externalTrafficPolicy Local and a
// healthCheckNodePort, an HTTP server on that port of the node (all its addresses: the
// agent runs on the host network) tells a load balancer whether this node has local
// endpoints for the Service.
//
//	Service (KubeStateChange, resync) ──> Tracker.UpdateService / ResyncServices ──> port per service
//	FlatService (renderer.Renderer)   ──> Tracker.AddFlatService ...            ──> local endpoint count
//	                                                │ open / close listeners     │ stage into the event's txn
//	                                                ▼                            ▼
//	                                        Server: one net/http server   DNat44 node IP:port -> host:port
//	                                        per port
//	                                        GET (any path) -> 200 or 503, JSON
//
// The answer follows kube-proxy (pkg/proxy/healthcheck, service_health.go): any path,
// status 200 when the Service has local endpoints and the agent is healthy, else 503;
// headers Content-Type application/json, X-Content-Type-Options nosniff and
// X-Load-Balancing-Endpoint-Weight (the count); the body
//
//	{"service": {"namespace": "default", "name": "web"}, "localEndpoints": 1, "serviceProxyHealthy": true}
//
// The count is the number of distinct local ready endpoint addresses of external
// traffic (FlatPort.ExternalBackends) over the Service's ports, as kube-proxy's
// LocalReadyEndpoints: serving-and-terminating endpoints (renderer.Endpoint.Terminating,
// the fallback while no endpoint is ready) are not counted, so a node whose local
// endpoints are all terminating answers 503 while it still serves them.
//
// The Tracker is a renderer.Renderer that stages nothing: it is added to the service
// processor next to the NAT44 renderer and only keeps counts. It is called from the
// controller's event loop; the HTTP handlers read the counts under a lock. Costs: a
// Service or rendering change opens or closes at most one listener and touches one
// entry; a resync compares every Service.
//
// A port that cannot be opened (taken by another process) is logged with the Service
// and the port and retried on every tick of the retry interval until it opens or the
// Service goes; that ticker goroutine and the servers stop on Close.
//
// In a Contiv node the node IP (the Node's InternalIP, which load balancers probe)
// belongs to VPP, not to the host: the Tracker also stages, through Mappings, one
// DNat44 per health check port (config/vpp/nat/v2/dnat44/DNAT-healthcheck/<namespace>/<name>)
// that forwards TCP to that port of the node IP to the same port of the Linux end of
// the VPP-host interconnect, twice-NATed so that the answer returns through VPP
// whatever routes the host has towards the prober (Mappings). With serviceRenderer
// cnat (Mappings.CNAT) it is a cnat translation set of one translation instead
// (config/vpp/cnat/v2/translation-set/DNAT-healthcheck/<namespace>/<name>: the node IP
// and port, is_real_ip, source VPP's end of the interconnect).
//
// Not done: IPv6-only binding choices (the listener is "tcp" on all addresses, as
// kube-proxy with no nodePortAddresses); counts follow the rendering when it is
// staged, not when its transaction is committed.
package healthcheck

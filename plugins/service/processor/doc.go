// Package processor turns Kubernetes Services and their EndpointSlices (or, from a
// contiv-ksr older than this agent, their legacy Endpoints) into services in flat form
// (renderer.FlatService: the parsed halves combined without copying the endpoint
// lists) and hands them to the renderers through one interface, renderer.Renderer,
// each call with the transaction of the event to stage into.
//
//	KubeStateChange service ──┐                      ┌──> AddFlatService / UpdateFlatService / DeleteFlatService
//	KubeStateChange endpointslice (index slice -> service)
//	KubeStateChange endpoints ┤                      │
//	KubeStateChange node (this node's zone: the services with topology hints)
//	                          ├─> Service (per ID) ──┤──> UpdateBackendIfs (pods starting or
//	resync (Kubernetes state) ┘   definition +       │    stopping to back a service)
//	                              endpoints ->       │
//	                              FlatService        └──> ResyncFlat (full snapshot)
//	AddPod / DeletePod ──────────> frontend/backend interfaces ──> UpdateFrontendIfs / UpdateBackendIfs
//	NodeUpdate ──────────────────> node IPs ──> UpdateFlatNodePortServices (node-port services only)
//
// One call path per operation: the processor holds a list of renderer.Renderer (added
// with AddRenderer, called in that order with the same values) and passes each the
// transaction given to ResyncInto or UpdateInto (Revert: a renderer.DiscardTxn). The
// seed API stays: RegisterRenderer takes a renderer.ServiceRendererAPI and adds it
// through a renderer.SeedAdapter (ContivServices built from the FlatServices by the
// adapter, for that renderer only), and Resync, Update, ProcessNewPod and
// ProcessDeletingPod are the calls without a transaction (the renderers get a
// renderer.DiscardTxn; a seed renderer stages through its own Deps). A second
// renderer, for IPv6 services for instance, is one more AddRenderer: it gets every
// service and skips the addresses of a family it does not serve.
//
// Events handled (through the service plugin): every resync, KubeStateChange of
// "service", "endpointslice", "endpoints", "servicecidr" and "node" (this node's zone
// only), AddPod, DeletePod (and Revert of AddPod), NodeUpdate.
// The processor owns no keys: the renderers stage the configuration.
//
// Endpoints: every EndpointSlice whose service_name names the service (IPv4 and IPv6
// slices; FQDN ones are ignored), merged with no cap; an endpoint in two slices at
// once is one backend. A service without a slice uses its legacy Endpoints value (the
// rolling upgrade from a contiv-ksr that wrote Endpoints); once it has a slice, the
// slices win. A slice change parses that slice only (an index maps each slice to its
// service) and renders its service again (O(the service's endpoints): the renderer
// stages the service's DNAT whole).
//
// Endpoint selection, per service port and per IP family, as kube-proxy v1.34 with its
// one proxier per family (each reads the EndpointSlices of its address type only:
// pkg/proxy/endpointschangetracker.go; CategorizeEndpoints, see selectEndpoints):
// a family's ready endpoints never take the other family's serving-and-terminating
// fallback, hints or local endpoints away. A FlatPort lists the IPv4 backend groups
// first, then the IPv6 ones, each group of one family (a renderer of one family skips
// the other's); HasEndpoints is true when either family has one, and
// NoIPv4Endpoints / NoIPv6Endpoints name a family that has none (FlatPort.HasEndpointsOf:
// that family's addresses are rejected). Addresses are classified
// against the networks of their family (IPv6: ipam ThisNodeAddresses(IPv6)), and
// each cluster IP is checked against the service CIDR of its family. Per family: ready endpoints, else serving and terminating ones; topology
// hints (node hints, else zone hints, each only when every ready endpoint has one and
// one is for this node); internalTrafficPolicy Local restricts the cluster IPs to this
// node's endpoints; externalTrafficPolicy Local restricts node ports, external IPs and
// load balancer IPs (never the cluster IPs); FlatPort.HasEndpoints tells "no endpoint
// anywhere" (reject) from "none for this policy here" (drop).
//
// A service is rendered from its definition even without any endpoints object (no
// slice, no legacy Endpoints): its ports have no endpoints, so the renderers reject
// its traffic, as kube-proxy does. Services with nothing to proxy are not rendered
// (removed if they were), as kube-proxy's ShouldSkipService decides (notProxied):
// type ExternalName, and headless ones (cluster IP None or none). Services left to
// another proxy: a Service labelled service.kubernetes.io/service-proxy-name (any
// value) or service.kubernetes.io/headless is not rendered (removed if it was). Cluster IPs (spec.clusterIPs) must lie in the
// configured service CIDR or in a ServiceCIDR object's cidrs (cidrs.go); the services
// outside the configured CIDR are indexed, and a ServiceCIDR change re-renders those
// only. Load balancer ingress IPs of ipMode Proxy are not exposed.
//
// Combining a Service with its Endpoints (Service.Refresh):
//   - exposed on the cluster IPs, spec.externalIPs and, for
//     LoadBalancer services, the load balancer ingress IPs; node ports on every node;
//   - externalTrafficPolicy Local makes a NodeLocal service (external traffic keeps
//     the client's address); sessionAffinity ClientIP
//     passes the affinity timeout down;
//   - ports are matched with the endpoint ports by name; TCP and UDP ports are
//     rendered, SCTP ports (VPP NAT44 cannot translate SCTP) and unknown protocols are
//     logged, counted (gauge contiv_service_unsupported_ports) and skipped;
//   - only ready addresses of an Endpoints become backends; a backend is local when it is in this
//     node's pod subnet, a host-network backend when it is outside the cluster's pod
//     subnet (local when it is this node's IP or one of its host IPs);
//   - unparseable IPs are logged, counted (contiv_service_invalid_ips) and skipped;
//   - endpoint addresses that cannot be a backend are logged (service, address,
//     reason), counted (gauge contiv_service_rejected_endpoints{reason}) and skipped
//     (endpointcheck.go): unspecified, loopback, link-local (Kubernetes' own rules),
//     multicast, broadcast, a Service's cluster IP, and a node's address from an
//     endpoint that names no Pod (the API server's default/kubernetes excepted).
//     The cluster IPs and node addresses are kept in indexes updated with each
//     change, and the services with an endpoint outside the pod network are indexed by
//     address: a cluster IP or node address that comes or goes re-renders those
//     services only.
//
// Interfaces: frontends are the interfaces clients come from (VXLAN BVI, main and
// other NICs, the host interconnect, every local pod); backends are those leading to
// service endpoints (VXLAN BVI, host interconnect, the main NIC in no-overlay mode,
// and the pods backing at least one service).
//
// Cost: a change of one Service or Endpoints object costs the re-rendering of that
// one service, whatever the number of services (no scan of all services); a change that
// leaves the rendering unchanged (resource version, not-ready addresses) reaches no
// renderer. A NodeUpdate that changes the node IPs passes the node-port services only,
// found through an index, with their unchanged renderings (the renderer adds and
// removes the mappings of the changed node IPs); one that does not change them does
// nothing. A resync parses only the objects it did not parse before; an Endpoints
// address is parsed once (its text kept for the renderers), and the target reference
// is read only for this node's addresses. A resync reads the objects in the order of
// their addresses (new objects are scattered over the heap: map order made most first
// touches cache misses), and parses and refreshes the services of a large resync (2,000
// and more) in contiguous shares on up to GOMAXPROCS goroutines (internal/shares), each
// share with its own blocks: the result is the one of a sequential resync, and the
// goroutines end before Resync returns. Otherwise the processor does no I/O and starts
// no goroutines.
package processor

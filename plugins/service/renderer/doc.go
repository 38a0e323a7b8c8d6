// Package renderer defines the contract between the service processor and the service
// renderers: the ServiceRendererAPI interface and the data it carries (ContivService,
// ServicePort, ServiceBackend, the IPAddresses and Interfaces sets, ResyncEventData).
//
//	Kubernetes Service + Endpoints ──> processor ──ContivService──> renderer(s) ──> key-value pairs
//	                                  (plugins/service/processor)   (e.g. renderer/nat44)
//
// A ContivService is a Kubernetes service reduced to what a data plane needs: the IPs it
// is exposed on, its ports, and per port the backends with their locality. It has no
// references to other objects, so a renderer needs nothing but it (plus the node IPs and
// the interface sets that the processor passes separately).
//
// The flat form: a renderer that also implements FlatServiceRenderer gets every service
// as a FlatService instead, the processor's parsed form (slices instead of maps, address
// texts kept from the Kubernetes objects, the addresses of an Endpoints subset shared by
// the ports they back); the processor then builds no ContivService for it. Converting
// between the forms: FlatService.ContivService and NewFlatService.
//
// The package holds types only: no logic beyond small set operations, conversions and
// String methods, no state, no dependencies on other plugins. Renderers live in
// sub-packages.
//
// Additions to the seed API: ContivService.ClusterIPs and SessionAffinityTimeout (the
// cluster IP gets a different twice-NAT mode than external IPs, and ClientIP affinity
// must reach the data plane), ServiceID (the KSR service model has no ID type yet),
// IPAddresses.Len and Equal, Interfaces.Sorted, and the optional flat form
// (FlatServiceRenderer, FlatService, FlatResyncEventData): building ContivService maps
// and formatting addresses again was most of the cost of a resync of 10,000 services.
package renderer

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
// The package holds types only: no logic beyond small set operations and String
// methods, no state, no dependencies on other plugins. Renderers live in sub-packages.
//
// Additions to the seed API: ContivService.ClusterIPs and SessionAffinityTimeout (the
// cluster IP gets a different twice-NAT mode than external IPs, and ClientIP affinity
// must reach the data plane), ServiceID (the KSR service model has no ID type yet),
// IPAddresses.Len and Equal, Interfaces.Sorted.
package renderer

// Package renderer defines the contract between the service processor and the service
// renderers: Renderer, the one interface the processor renders through, the transaction
// a renderer stages into (UpdateTxn, or the controller's ResyncOperations for a resync),
// the data passed (FlatService, FlatResyncEventData, the IPAddresses and Interfaces
// sets), and the seed API kept as the public face (ServiceRendererAPI, ContivService,
// ServicePort, ServiceBackend, ResyncEventData) with SeedAdapter joining the two.
//
//	Kubernetes Service ──> processor ──Renderer: FlatService, txn──┬──> NAT44 renderer (renderer/nat44)
//	+ Endpoints            (plugins/service/processor)             │      stages into txn
//	                                                               └──> SeedAdapter ──ContivService──> seed renderer
//	                                                                      keeps txn for the call       stages into txn through
//	                                                                                                   the adapter's factories
//
// One call path: the processor holds a list of Renderers and calls each with the same
// values, passing the transaction of the event being handled as an argument (UpdateTxn
// for updates: the controller's UpdateOperations plus Describe for the event history;
// ResyncOperations for a resync). A renderer keeps no transaction between calls and
// never asks its plugin for one.
//
// A FlatService is a Kubernetes service reduced to what a data plane needs, in the
// processor's parsed form: the IPs it is exposed on, its ports, and per port the
// backends with their locality, as slices, with the address texts kept from the
// Kubernetes objects and the addresses of an Endpoints subset shared by the ports they
// back. It has no references to other objects, so a renderer needs nothing but it
// (plus the node IPs and the interface sets that the processor passes separately).
//
// The seed API: a ServiceRendererAPI renderer gets each service as a ContivService
// (maps instead of slices), built by its SeedAdapter from the FlatService
// (FlatService.ContivService; NewFlatService converts back), and gets its transaction
// through the factories of its own dependencies, which SeedAdapter.UpdateTxnFactory and
// ResyncTxnFactory serve with the transaction of the call in progress.
//
// A second renderer (for instance a cnat renderer of IPv6, or IPv4 and IPv6, services)
// implements Renderer and is added to the processor next to the NAT44 renderer
// (ServiceProcessor.AddRenderer, in the service plugin's Init). Every renderer gets
// every service; one that serves a single address family skips the addresses of the
// other (Address.IsIPv4), as the NAT44 renderer skips IPv6 addresses.
//
// The package holds types, the seed adapter and small conversions, set operations and
// String methods: no other logic, no state beyond the adapter's, and no dependencies
// on other plugins than the controller's API (the transaction types). Renderers live
// in sub-packages.
//
// Additions to the seed API: ContivService.ClusterIPs and SessionAffinityTimeout (the
// cluster IP gets a different twice-NAT mode than external IPs, and ClientIP affinity
// must reach the data plane), ServiceID (the KSR service model has no ID type yet),
// IPAddresses.Len and Equal, Interfaces.Sorted, and the flat form with its interface
// (Renderer, UpdateTxn, DiscardTxn, SeedAdapter, FlatService, FlatResyncEventData):
// building ContivService maps and formatting addresses again was most of the cost of a
// resync of 10,000 services.
package renderer

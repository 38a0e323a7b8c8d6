// Package ksr is contiv-ksr, the Kubernetes State Reflector: it mirrors the Kubernetes
// objects the agents need into etcd, under /vnf-agent/contiv-ksr/, in the layout of
// upstream Contiv-VPP (see api/k8s), where every contiv-agent watches them.
//
//	                campaign (/contiv-ksr/election, etcd lease)
//	                         │ elected
//	                         ▼
//	API server ──list+watch──> informers (one term: started when elected, stopped when not)
//	  Pods, Services, Endpoints, EndpointSlices, Nodes, Namespaces, NetworkPolicies
//	                         │ callbacks only queue "kind + namespace/name"
//	                         ▼
//	                write loop (one goroutine)
//	  resync (after election, after etcd came back, after a failed write; backoff
//	  100 ms → 1 s): mark and sweep every prefix against the informer caches
//	  queued items: convert the cached object (plugins/ksr/convert), write if changed
//	                         │ store.Writer: txn guarded by "my election key still exists"
//	                         ▼
//	                       etcd  k8s/<kind>/..., allocatedIDs/<id>, /vnf-agent/<node>/
//
// Only the elected replica runs informers and writes; every write is an etcd
// transaction conditioned on its election key, so a replica that lost the lease (etcd
// partition, pause) cannot write even before it notices. Losing the election (lease
// expired, key deleted, write refused) ends the term: informers stop and the replica
// campaigns again. Close resigns, so a standby takes over at once.
//
// The Endpoints value of a service comes from its Endpoints object; when a service has
// EndpointSlices but no Endpoints object (clusters that stopped mirroring), the slices
// are merged into the same model. A deleted Node also loses its node ID allocation and
// its /vnf-agent/<node>/ configuration (plugins/ksr/store).
//
// Health: the plugin reports to its health.Reporter (etcd unreachable or resync pending:
// not ready; standby or synced leader: ready), which plugins/rest serves on /readiness
// and /liveness; the counters contiv_ksr_{adds,updates,deletes,resyncs,errors}_total per
// reflector and the gauges contiv_ksr_leader and contiv_ksr_in_sync go to /metrics.
//
// Bad objects (ones the model cannot represent) are logged, counted as "arg" errors and
// left as etcd holds them. The package does not read etcd for the agents nor interpret
// the objects; that is dbwatcher and the agent plugins.
package ksr

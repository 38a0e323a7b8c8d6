// Package ksr is contiv-ksr, the Kubernetes State Reflector: it mirrors the Kubernetes
// objects the agents need into etcd, under /vnf-agent/contiv-ksr/, in the layout of
// upstream Contiv-VPP (see api/k8s), where every contiv-agent watches them.
//
//	                campaign (/contiv-ksr/election, etcd lease)
//	                         │ elected
//	                         ▼
//	API server ──list+watch──> informers (one term: started when elected, stopped when not)
//	  Pods, Services, EndpointSlices, ServiceCIDRs (when served), Nodes, Namespaces,
//	  NetworkPolicies (never v1 Endpoints: deprecated since Kubernetes 1.33)
//	                         │ callbacks only queue "kind + namespace/name"
//	                         ▼
//	                write loop (one goroutine)
//	  resync (after election, after etcd came back, after a failed write; backoff
//	  100 ms → 1 s): mark and sweep every prefix against the informer caches
//	  queued items: convert the cached object (plugins/ksr/convert), write if changed
//	                         │ store.Writer: txn guarded by "my election key still exists"
//	                         ▼
//	                       etcd  k8s/<kind>/..., allocatedIDs/<id>, /vnf-agent/<node>/,
//	                             ksrsync/pod (after each complete resync)
//
// Keys written, relative to /vnf-agent/contiv-ksr/: k8s/{namespace,node,pod,policy,
// service,servicecidr}/..., one k8s/endpointslice/<slice>/namespace/<ns> per slice
// that has the kubernetes.io/service-name label (slices without it belong to no service:
// not written, counted in the gauge contiv_ksr_skipped_objects{reflector="endpointslice"}),
// and, with Deps.LegacyEndpoints (the -legacy-endpoints flag, on by default in this
// release), k8s/endpoints/<service>/namespace/<ns>: the legacy value of each service with
// slices, made of all of them (convert.LegacyEndpoints), which agents of the previous
// release read during a rolling upgrade. With it off, the resync deletes every legacy
// value. Cost: a change of one slice rewrites that slice, and, with legacy values on,
// rebuilds the legacy value of its whole service: O(endpoints of the service), e.g.
// 5,000 for one changed endpoint of a 5,000-endpoint service.
//
// After every complete resync the leader writes the sync marker ksrsync/pod
// (api/k8s/ksrsync): the pods in etcd are complete as of the time taken just before the
// term's informers listed (Deps.Clock), so an agent may take a pod that existed before
// that time and is absent from etcd as deleted, and must not take a pod absent without
// such a marker as deleted (contiv-ksr down, between leaders, lagging). A resync in
// which a pod could not be converted leaves the marker as it is.
//
// ServiceCIDRs (networking.k8s.io/v1, Kubernetes 1.33+) are reflected only when the API
// server serves them (discovery at the start of each term); otherwise their prefix is
// swept, so no informer waits forever for a kind the server lacks.
//
// Only the elected replica runs informers and writes; every write is an etcd
// transaction conditioned on its election key, so a replica that lost the lease (etcd
// partition, pause) cannot write even before it notices. Losing the election (lease
// expired, key deleted, write refused) ends the term: informers stop and the replica
// campaigns again. Close resigns, so a standby takes over at once.
//
// A deleted Node also loses its node ID allocation and its /vnf-agent/<node>/
// configuration (plugins/ksr/store).
//
// Health: the plugin reports to its health.Reporter (etcd unreachable or resync pending:
// not ready; standby or synced leader: ready), which plugins/rest serves on /readiness
// and /liveness; the counters contiv_ksr_{adds,updates,deletes,resyncs,errors}_total per
// reflector and the gauges contiv_ksr_leader, contiv_ksr_in_sync and
// contiv_ksr_skipped_objects go to /metrics.
//
// Pods: every pod IP of every family (ip_addresses, the primary also in ip_address for
// agents of the previous release) and only the annotations agents read
// (pod.AgentAnnotations); the informers' transform drops the others before objects
// enter the cache, and a kept annotation longer than Deps.PodLimits allows is left
// out, logged and counted in contiv_ksr_invalid_fields_total{reflector="pod"}.
//
// Bad objects (ones the model cannot represent) are logged, counted as "arg" errors and
// left as etcd holds them. The package does not read etcd for the agents nor interpret
// the objects; that is dbwatcher and the agent plugins.
package ksr

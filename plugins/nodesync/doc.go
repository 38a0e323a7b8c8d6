// Package nodesync gives this node its cluster-unique node ID and keeps the map of the
// cluster's nodes that the other plugins (ipam, ipnet, the service processor) read.
//
//	etcd /vnf-agent/contiv-ksr/allocatedIDs/<id>  VppNode{id, name, ip_addresses}  (written by nodesync)
//	etcd /vnf-agent/contiv-ksr/k8s/node/<name>    Node{name, pod_CIDR, addresses}  (written by contiv-ksr)
//	        │ dbwatcher: DBResync / KubeStateChange
//	        ▼
//	NodeSync ── node map: name -> Node{ID, VPP IPs, management IPs, pod CIDR}
//	        ├── GetNodeID, GetAllNodes          (any goroutine)
//	        ├── NodeUpdate events ──> event loop (follow-ups, handled by ipnet, ipam, ...)
//	        ├── PublishNodeIPs ──> etcd allocatedIDs/<this node's id>
//	        └── holder goroutine ──> etcd nodeIDHolders/<id> under its lease, renewed;
//	                                 allocatedIDs/<id> re-created while held
//
// Events handled:
//   - every resync: the node map is rebuilt from the "vppnode" and "node" resources of
//     the Kubernetes state. The ID this node knows (the one it held so far in this run,
//     else the one remembered in Deps.IDFile, a small JSON file {"node","id"} in the
//     agent's state directory: the agent's -node-id-file, by default
//     /var/run/contiv/node-id, checked by ValidateIDFile) is kept when the snapshot gives
//     it to this node. When it does not (the record is missing, or undecodable and so
//     skipped by dbwatcher), the record is confirmed in etcd: a missing one is created,
//     a corrupt one (undecodable, or without a name) is repaired, both with a write
//     conditioned on what was read; a valid record of another node under that ID is a
//     refusal (ErrIDTaken, naming the other node and the file): the node never silently
//     moves to another ID, which would renumber the pods it runs. A node that knows no
//     ID and has none in the snapshot gets one allocated in etcd: the IDs in use are
//     read from etcd itself (the snapshot may be stale), the smallest free positive
//     integer is chosen and allocatedIDs/<id> = VppNode{id, name} is written with a
//     put-if-absent transaction (If(CreateRevision(key) == 0) Then(Put)). When another
//     node wins the race the allocation starts over, at most MaxAllocationAttempts
//     times. At the start-up resync a failed allocation or confirmation, or no
//     database, is an api.FatalError: the agent cannot work without an ID and is
//     restarted. A node whose name is already allocated keeps its ID, so a restarted
//     agent keeps its subnets. The ID is saved in the ID file (atomically) whenever it
//     changes; a failed save is an error of the resync (retried by healing).
//   - Ownership (holder.go): a running node holds its ID under an etcd lease (TTL
//     Deps.LeaseTTL, 30 s), in nodeIDHolders/<id> = its name (vppnode.HolderKey), a key contiv-ksr
//     only reads (it keeps a held ID's record when the Node object goes, and releases
//     records that neither a Node nor a holder claims). An allocation takes the IDs held by running nodes as used even without
//     their allocatedIDs record, and claims both keys in one transaction (the record
//     and the holder key, each only if absent). A goroutine renews the lease every
//     third of its TTL (on Deps.Clock) and then holds the ID: the holder key is written
//     again under a new lease when the old one expired, taken over from this node's
//     previous run (same name), and the record re-created (with the published IPs) when
//     it was deleted (contiv-ksr deletes it with the Node object) or repaired when
//     corrupt, each conditioned on this node still holding the ID. It also runs at once
//     when the record is seen deleted and after each resync. Another node holding the
//     ID, or its record naming another node (then the ID is not held either), is a
//     conflict: logged at error level, reported DEGRADED to Deps.Health,
//     contiv_nodesync_node_id_conflict = 1; the node neither takes the ID back nor
//     moves. A reclaim from the ID file at start-up that
//     finds the ID held by another running node is an ErrIDTaken refusal. Close revokes
//     the lease: the record keeps the ID allocated while the node is stopped. Without
//     a database that grants leases (LeaseDB) the node holds nothing.
//   - KubeStateChange of "vppnode" and "node": the node map is updated and a NodeUpdate
//     event is pushed (as a follow-up, through Deps.EventLoop) for every other node whose
//     state changed (its VppNode added, changed or deleted, its Kubernetes addresses or
//     pod CIDR changed), and for this node when its management IPs or pod CIDR changed.
//     A node without an ID (ID 0) is never reported: a state without an ID is given as
//     nil, so PrevState is nil when a node just got its ID and NewState is nil when it
//     lost it.
//
// Management IPs are the Kubernetes Node addresses of type InternalIP and ExternalIP.
// The VPP IPs come from the VppNode's ip_addresses (the obsolete ip_address when that
// list is empty).
//
// Differences from upstream Contiv-VPP v3.1.0, on purpose:
//   - GetAllNodes returns only nodes with an ID (upstream built the filtered map but
//     returned the unfiltered one, docs/ARCHITECTURE.md §8, quirk 6).
//   - A change of a node's pod CIDR also produces a NodeUpdate (upstream only looked at
//     the management IPs), because the IPAM relies on it with external IPAM.
//   - PublishNodeIPs writes with a transaction conditioned on the revision it read, so
//     it never overwrites a record that changed meanwhile.
//
// What it does not do: it stages nothing in the controller's transactions (it owns no
// dataplane configuration), it does not watch etcd (dbwatcher delivers the changes), and
// it does not delete allocations of removed nodes (contiv-ksr does). Its one goroutine
// holds the node ID; Close stops it, revokes the lease and cancels etcd requests in
// flight.
//
// Metrics: contiv_nodesync_node_id_conflict, contiv_nodesync_node_id_reclaims_total.
//
// Wiring the IPAM (which must not depend on this package):
//
//	ipam.NodeSyncFuncs{
//		NodeID: ns.GetNodeID,
//		AllNodes: func() map[string]*ipam.NodeInfo {
//			out := make(map[string]*ipam.NodeInfo)
//			for name, n := range ns.GetAllNodes() {
//				out[name] = &ipam.NodeInfo{ID: n.ID, Name: n.Name, PodCIDR: n.PodCIDR}
//			}
//			return out
//		},
//	}
package nodesync

// Package kvscheduler is the transaction engine between the Contiv plugins and the
// dataplane. Plugins stage key-value pairs (key -> proto.Message) in a transaction;
// the scheduler works out which descriptor owns each key, in which order values must
// be created, updated and deleted so that every value exists only while its
// dependencies exist, and calls the descriptors (which talk to VPP and Linux).
// The contract (KVDescriptor, Txn, options, errors, history records) is in package
// api; this package is the engine. It knows no plugin and no dataplane.
//
// Transaction flow (one transaction at a time, on one goroutine, in commit order):
//
//	Txn.Commit / PushSBNotification / retry timer
//	             │ queue (FIFO, unbounded)
//	             ▼
//	┌──────────────────────────────────────────────────────────────────┐
//	│ stage      keys -> nodes (descriptor looked up once per key)     │
//	│ validate   Validate(); WithRevert: any invalid -> reject all     │
//	│ [resync]   Full/Downstream: Retrieve() in RetrieveDependencies   │
//	│            order, refresh the graph; Full/Upstream: staged       │
//	│            values replace the NB state                           │
//	│ [simulate] enable-txn-simulation: plan on the graph, record,     │
//	│            roll back (undo log)                                  │
//	│ execute    reconcile each changed key in graph order (runs of    │
//	│            independent creations/updates/deletions of one        │
//	│            descriptor with CreateAsync/UpdateAsync/DeleteAsync   │
//	│            are started, then awaited):                           │
//	│              deps missing  -> PENDING (created when they appear) │
//	│              delete        -> dependents, derived values first   │
//	│              create/update -> then derived values, then the      │
//	│                               dependents that were waiting       │
//	│ on failure WithRevert: staged keys get their previous values and │
//	│            every key the txn touched is reconciled again         │
//	│            WithRetry: RETRYING, a timer queues a RetryFailedOps  │
//	│            transaction (period, doubled with exp. backoff); a    │
//	│            txn without a policy (SB notification) retries with  │
//	│            the policy the failed value was staged with           │
//	│ record     RecordedTxn -> history, metrics, summary log; the     │
//	│            record keeps at most transaction-history-max-ops      │
//	│            values and ops, the history max records and bytes     │
//	└──────────────────────────────────────────────────────────────────┘
//	             │
//	             ▼
//	Commit returns (seqNum, *api.TransactionError or nil)
//
// Cost. The graph keeps: key -> node; dependency key -> dependents; AnyOf prefix ->
// dependents, found for a created key by looking up its own prefixes of the
// registered lengths; the keys of existing values in a sorted chunked list (for
// "does any value under this prefix exist"); per-descriptor node sets; a cached
// descriptor per node. An ordinary transaction therefore costs time proportional to
// the values it changes and their neighbours, not to the number of values held; what
// it does besides (staging, the record, undo closures, which exist only while
// simulating) allocates about a dozen small objects, and an update whose value keeps
// its dependencies (a new slice, the same content) touches no index. A
// resync is O(values held) by nature (Retrieve lists everything) but records and
// executes only the differences. A record keeps values of at most RecordContentBudget
// bytes of estimated memory (ValueMemoryFactor times their encoded size) and sizes
// only those; the history counts the values its records keep alive (previous values
// of updates included; a value listed twice in a record counted once) against
// transaction-history-max-bytes; the logged summary formats at most the first
// summaryValueBytes of a value, proto3 values of plain fields directly (prototext only
// for the others), and only when the logger writes it.
//
// Memory at rest: a value is held once (the desired and the applied value are the
// same message once applied); the graph keeps about 380 bytes per value besides it
// (BenchmarkMemoryPerValue); superseded values stay alive only through the history.
//
// Failures. A failed Create leaves the value absent (its dependents stay PENDING); a
// failed Update or Delete leaves the old value in place and assumed unchanged. A
// value is never deleted from under an object that still needs it: if a dependent
// or a derived value cannot be deleted, the value is not deleted either (it is
// FAILED, and the error names the blocking key). The graph indexes the dependencies
// of both the desired and the applied content of a value, so an object left in the
// dataplane by a failed update still protects what it depends on.
//
// Concurrency. Readers (status, dumps, history, metadata maps, REST) may run at any
// time. Descriptor callbacks run on the transaction goroutine; Create, Update,
// Delete and Retrieve run with the graph lock released, so they may read status and
// metadata, and may push SB notifications, but must not Commit (it would wait for
// itself).
//
// What it is not: it does not watch any data store and does not decide what the
// desired state is; the controller does, and commits it.
package kvscheduler

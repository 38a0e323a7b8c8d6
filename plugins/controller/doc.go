// Package controller is the agent's event loop: the one goroutine that owns the state of
// every Contiv plugin, processes one event at a time and turns each event into exactly one
// transaction for the KV scheduler.
//
//	producers                         controller (one goroutine)
//	─────────                         ──────────────────────────
//	dbwatcher: pending DBResync and ─────────┐ an EventSource (AddEventSource), never
//	  changes coalesced per key              │ overflows; pending changes in batches
//	podmanager ── AddPod ───────┐     ┌──────┴───────┐  follow-ups first,
//	           ── DeletePod ────┼───▶ │ event queue  │  then events parked before the
//	nodesync ── NodeUpdate ─────┤     │ (1000) + the │  first DBResync, then the queue
//	handlers ── follow-ups ─────┘     │ follow-ups   │  and the sources, interleaved
//	                                  └──────┬───────┘
//	timers ── HealingResync ─────────────────┤
//	                                         ▼
//	            handlers in registration order (Reverse events: backwards), filtered by
//	            HandlesEvent; Resync(kubeState, txn) or Update(event, txn): they only
//	            stage key-value pairs
//	                                         │  + external config (keys the agent does not own)
//	                                         ▼
//	            one transaction ──▶ kvscheduler.Commit(WithResync | WithRetry | WithRevert)
//	                                         │
//	            RevertOnFailure error ──▶ Revert of the handlers that ran, in reverse
//	            BestEffort error ───────▶ HealingResync(AfterError) after delayAfterErrorHealing,
//	                                      again with backoff while it fails: DEGRADED
//	            fatal / stalled loop ───▶ health ERROR, liveness fails (healing.go)
//	                                         │
//	                                         ▼
//	            event record (history, /controller/event-history), banner in the log,
//	            metrics, event.Done(err) for the producer
//
// Handlers push follow-ups of the event they process through the transaction they are
// given (api.PushFollowUp): the loop knows the event in progress from it, and runs the
// follow-ups first. processEvent (process.go) is a sequence of named phases: update the
// inputs, begin (handlers, record), stage, merge the external configuration, commit,
// revert, record, after-event (abort, healing, health), and Done for the producer.
//
// Kubernetes changes pending at a source together are taken as one batch event (batch.go,
// up to maxBatchedChanges): the handlers see each change as its own KubeStateChange, in
// order, with the cached state as of it, and stage into one transaction, each change in a
// layer of its own (txn.go); a change that stages a key an earlier change of the batch
// staged splits the batch into consecutive events, so that no change's operations are
// merged into another's or reordered; a change whose handlers push follow-ups ends the
// batch after it (the rest waits at the head of the backlog, behind the follow-ups).
//
// Nothing is committed before the first database resync: events that arrive earlier are
// parked and replayed right after it, so the first transaction is a consistent snapshot.
// Without a resync by startupResyncDeadline the agent reports an error. After a full
// resync the memory it used is returned to the system (release.go), so the agent's RSS
// at rest follows what it keeps, not the resync's peak.
//
// The controller does not read etcd (that is dbwatcher), and knows nothing about what the
// handlers configure.
package controller

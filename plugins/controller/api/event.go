package api

import (
	"fmt"
)

// EventMethodType says how the handlers and the scheduler process an event.
type EventMethodType int

const (
	// FullResync: handlers rebuild their whole state and configuration; the scheduler
	// re-reads the dataplane and makes it match.
	FullResync EventMethodType = iota
	// DownstreamResync: handlers are not called; the scheduler re-reads the dataplane and
	// re-applies the last configuration.
	DownstreamResync
	// UpstreamResync: handlers rebuild everything; the scheduler trusts its cached view of
	// the dataplane.
	UpstreamResync
	// Update: handlers apply the change the event describes, incrementally.
	Update
)

// String returns the method name.
func (m EventMethodType) String() string {
	switch m {
	case FullResync:
		return "Full-Resync"
	case DownstreamResync:
		return "Downstream-Resync"
	case UpstreamResync:
		return "Upstream-Resync"
	case Update:
		return "Update"
	}
	return fmt.Sprintf("EventMethodType(%d)", int(m))
}

// MarshalText writes the method name (e.g. in the event history JSON).
func (m EventMethodType) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// IsResync is true for every method but Update.
func (m EventMethodType) IsResync() bool { return m != Update }

// UpdateDirectionType is the order in which handlers see an Update event.
type UpdateDirectionType int

const (
	// Forward: handlers in registration order (dependencies first), e.g. AddPod.
	Forward UpdateDirectionType = iota
	// Reverse: handlers in reverse registration order (dependents first), e.g. DeletePod.
	Reverse
)

// String returns the direction name.
func (d UpdateDirectionType) String() string {
	switch d {
	case Forward:
		return "Forward"
	case Reverse:
		return "Reverse"
	}
	return fmt.Sprintf("UpdateDirectionType(%d)", int(d))
}

// UpdateTransactionType says what a failure during an Update event means.
type UpdateTransactionType int

const (
	// BestEffort: keep going after a non-fatal error and schedule a healing resync.
	BestEffort UpdateTransactionType = iota
	// BestEffortIgnoreErrors: keep going after a non-fatal error, schedule no healing
	// (e.g. DeletePod, which must not fail because of partial errors).
	BestEffortIgnoreErrors
	// RevertOnFailure: stop at the first error, commit nothing, revert the handlers that
	// already ran and the transaction's operations (e.g. AddPod).
	RevertOnFailure
)

// String returns the transaction type name.
func (t UpdateTransactionType) String() string {
	switch t {
	case BestEffort:
		return "BestEffort"
	case BestEffortIgnoreErrors:
		return "BestEffortIgnoreErrors"
	case RevertOnFailure:
		return "RevertOnFailure"
	}
	return fmt.Sprintf("UpdateTransactionType(%d)", int(t))
}

// Event is anything the event loop processes.
type Event interface {
	// GetName returns a short name, the same for every event of a type.
	GetName() string
	// String describes this event for logs and the event history.
	String() string
	// Method says whether the event is a resync (and which) or an update.
	Method() EventMethodType
	// IsBlocking is true when a producer waits for the result through Done.
	IsBlocking() bool
	// Done delivers the processing result; the loop calls it exactly once per event.
	Done(error)
}

// UpdateEvent is an Event whose Method is Update.
type UpdateEvent interface {
	Event
	// TransactionType says what a failure means.
	TransactionType() UpdateTransactionType
	// Direction is the order in which handlers see the event.
	Direction() UpdateDirectionType
}

// EventLoop accepts events for processing.
type EventLoop interface {
	// PushEvent queues the event and returns at once; the result is reported later through
	// the event's Done. It fails when the queue is full or the loop has stopped.
	PushEvent(event Event) error
}

// EventHandler is a plugin that reacts to events by staging configuration.
type EventHandler interface {
	// String names the handler in logs and the event history.
	String() string
	// HandlesEvent selects the events the handler is called for.
	HandlesEvent(event Event) bool
	// Resync rebuilds the handler's whole state from kubeStateData and stages its complete
	// configuration into txn. resyncCount is 1 for the start-up resync.
	Resync(event Event, kubeStateData KubeStateData, resyncCount int, txn ResyncOperations) error
	// Update applies an Update event incrementally, staging only what changes; the
	// returned description says what it did ("" when nothing).
	Update(event Event, txn UpdateOperations) (changeDescription string, err error)
	// Revert undoes the handler's internal state changes made by Update for an event that
	// failed (RevertOnFailure only); the configuration is reverted by the scheduler.
	Revert(event Event) error
}

// EventSource is a producer that keeps its events pending until the event loop takes
// them, one at a time, when it is ready for the next one (instead of pushing them into
// the loop's bounded queue). A source can then coalesce what is still pending, so that
// its backlog is bounded by what it tracks, not by how many changes it saw.
type EventSource interface {
	// Next removes and returns the oldest pending event, or nil when none is pending.
	// It is called from the event loop and must not block.
	Next() Event
}

// EventSourceRegistrar is implemented by event loops that drain EventSources.
type EventSourceRegistrar interface {
	// AddEventSource registers src. The source calls the returned function (from any
	// goroutine; it never blocks) whenever it has new pending events.
	AddEventSource(src EventSource) (wake func())
}

// FollowUpPusher is implemented by the transaction that the event loop hands to a
// handler's Update, Resync: an event pushed through it is a follow-up of the event being
// processed, and runs before any other queued event. Follow-ups must not be blocking
// (the loop would wait for itself).
type FollowUpPusher interface {
	// PushFollowUp queues ev as a follow-up of the event in progress.
	PushFollowUp(ev Event) error
}

// PushFollowUp pushes ev from inside a handler: as a follow-up when txn (the
// UpdateOperations or ResyncOperations the handler was given) is a FollowUpPusher, else
// (e.g. a handler called directly by a test, with no transaction) to loop as an
// ordinary event.
func PushFollowUp(txn any, loop EventLoop, ev Event) error {
	if p, ok := txn.(FollowUpPusher); ok {
		return p.PushFollowUp(ev)
	}
	if loop == nil {
		return fmt.Errorf("push %s: no event loop", ev.GetName())
	}
	return loop.PushEvent(ev)
}

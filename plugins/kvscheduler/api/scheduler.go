package api

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
)

// KVScheduler is what plugins see of the scheduler.
type KVScheduler interface {
	// RegisterKVDescriptor adds descriptors. Register every descriptor before the
	// first transaction that uses its keys; values staged earlier for keys nobody
	// selected stay UNIMPLEMENTED until the next transaction that touches them.
	RegisterKVDescriptor(descriptors ...*KVDescriptor) error

	// StartNBTransaction starts staging a northbound transaction.
	StartNBTransaction() Txn

	// PushSBNotification tells the scheduler that values appeared in (non-nil Value)
	// or disappeared from (nil Value) the dataplane on their own, e.g. a DHCP lease.
	// Values waiting for them as a dependency are then created (or deleted). The
	// notification is queued and applied as a transaction of type SBNotification after
	// the transactions already queued; the call does not wait for it, so it is safe to
	// call from a descriptor callback.
	PushSBNotification(values ...KVWithMetadata) error

	// GetMetadataMap returns the read-only metadata map of the named descriptor, or
	// nil if there is no such descriptor or it was registered without WithMetadata.
	GetMetadataMap(descriptor string) MetadataMap

	// GetValueStatus returns the current status of the value under key; the state is
	// StateNonexistent for keys the scheduler knows nothing about.
	GetValueStatus(key string) *ValueStatus

	// GetTransactionHistory returns the recorded transactions that started within
	// [since, until], oldest first. A zero until means "up to now".
	GetTransactionHistory(since, until time.Time) []*RecordedTxn

	// GetRecordedTransaction returns the transaction with the given sequence number,
	// or nil if it was not recorded or has been trimmed.
	GetRecordedTransaction(seqNum uint64) *RecordedTxn

	// DumpValuesByDescriptor lists the values of one descriptor in the given view,
	// sorted by key. SBView calls Retrieve through the transaction queue, so it must
	// not be used from inside a descriptor callback (NBView and CachedView may).
	DumpValuesByDescriptor(descriptor string, view View) ([]KVWithMetadata, error)
}

// Txn stages changes and commits them as one transaction.
//
// A Txn is not safe for concurrent use; build it in one goroutine and commit it once.
type Txn interface {
	// SetValue stages value under key; a nil value stages a deletion. Staging the
	// same key again replaces the earlier value. It returns the Txn for chaining.
	SetValue(key string, value proto.Message) Txn

	// Commit queues the transaction and waits until it has been executed. The
	// options carried by ctx (WithResync, WithRetry, WithRevert, WithDescription)
	// shape how it runs. seqNum identifies the transaction in the history. err is a
	// *TransactionError when some values could not be applied, ErrClosedScheduler
	// after Close, or ctx.Err() if ctx ended before the transaction started.
	Commit(ctx context.Context) (seqNum uint64, err error)
}

// View selects which state DumpValuesByDescriptor reports.
type View int

const (
	// SBView is the dataplane as Retrieve reads it now (the cached view for
	// descriptors without Retrieve).
	SBView View = iota
	// NBView is what NB asked for (including values derived from NB values).
	NBView
	// CachedView is the scheduler's record of the dataplane, without asking it.
	CachedView
)

// String returns SB, NB or cached (the names the REST API accepts).
func (v View) String() string {
	switch v {
	case SBView:
		return "SB"
	case NBView:
		return "NB"
	case CachedView:
		return "cached"
	}
	return "View(" + itoa(int(v)) + ")"
}

// ParseView parses the view names of String, ignoring case.
func ParseView(s string) (View, error) {
	switch strings.ToLower(s) {
	case "sb":
		return SBView, nil
	case "nb":
		return NBView, nil
	case "cached":
		return CachedView, nil
	}
	return 0, fmt.Errorf("unknown view %q (want NB, SB or cached)", s)
}

// ValueState is where a value stands in its life cycle.
type ValueState int

const (
	// StateNonexistent: the scheduler knows nothing about the key.
	StateNonexistent ValueState = iota
	// StateMissing: NB wants the value and it was applied, but a resync found it gone
	// from the dataplane. Seen in history as the state before it is re-created.
	StateMissing
	// StateUnimplemented: NB wants the value but no descriptor selects its key.
	StateUnimplemented
	// StateRemoved: the value was deleted. Seen in history as the state after a delete.
	StateRemoved
	// StateConfigured: the value was applied as NB asked.
	StateConfigured
	// StateObtained: the value exists on its own in the dataplane (FromSB), learned by
	// a notification or a resync, and NB does not ask for it.
	StateObtained
	// StateDiscovered: a resync found the value in the dataplane, NB does not ask for
	// it and its origin is unknown, so it is left alone.
	StateDiscovered
	// StatePending: NB wants the value but a dependency is missing.
	StatePending
	// StateInvalid: the value failed validation and is not applied.
	StateInvalid
	// StateFailed: the last operation on the value failed and will not be retried.
	StateFailed
	// StateRetrying: the last operation failed and a retry is scheduled.
	StateRetrying
)

var stateNames = [...]string{"NONEXISTENT", "MISSING", "UNIMPLEMENTED", "REMOVED", "CONFIGURED",
	"OBTAINED", "DISCOVERED", "PENDING", "INVALID", "FAILED", "RETRYING"}

// String returns the upper-case name of the state, e.g. CONFIGURED.
func (s ValueState) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "ValueState(" + itoa(int(s)) + ")"
	}
	return stateNames[s]
}

// MarshalText encodes the state by name (used by encoding/json).
func (s ValueState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// TxnOperation is what the scheduler did (or tried to do) with a value.
type TxnOperation int

const (
	// OpUndefined is the zero value: no operation.
	OpUndefined TxnOperation = iota
	// OpCreate created the value.
	OpCreate
	// OpUpdate changed the value in place.
	OpUpdate
	// OpDelete deleted the value.
	OpDelete
	// OpRecreate deleted the value and created it again with the new content.
	OpRecreate
)

var opNames = [...]string{"UNDEFINED", "CREATE", "UPDATE", "DELETE", "RECREATE"}

// String returns CREATE, UPDATE, DELETE, RECREATE or UNDEFINED.
func (o TxnOperation) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "TxnOperation(" + itoa(int(o)) + ")"
	}
	return opNames[o]
}

// MarshalText encodes the operation by name (used by encoding/json).
func (o TxnOperation) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// ValueStatus is the current status of one value.
type ValueStatus struct {
	// Key identifies the value.
	Key string `json:"key"`
	// State is where the value stands.
	State ValueState `json:"state"`
	// Error is the error of the last failed operation or validation ("" if none).
	Error string `json:"error,omitempty"`
	// LastOperation is the last operation executed (or attempted) on the value.
	LastOperation TxnOperation `json:"lastOperation"`
	// Details explains the state: for a PENDING value, the missing dependencies as
	// "<label>: <key>"; for an INVALID value, the invalid fields.
	Details []string `json:"details,omitempty"`
}

func itoa(i int) string { return strconv.Itoa(i) }

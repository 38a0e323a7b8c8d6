package api

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by the scheduler. They are compared with errors.Is; inside a
// *TransactionError they are reachable through its Unwrap.
var (
	// ErrClosedScheduler is returned by every commit after Close.
	ErrClosedScheduler = errors.New("kvscheduler: scheduler was closed")
	// ErrNotInitialized is returned when the scheduler is used before Init.
	ErrNotInitialized = errors.New("kvscheduler: scheduler was not initialized")
	// ErrUnregisteredValue is the status error of a value no descriptor selects. Such
	// values are kept as UNIMPLEMENTED; they do not fail the transaction.
	ErrUnregisteredValue = errors.New("value with unregistered key")
	// ErrCombinedDownstreamResyncWithChange rejects a downstream resync that carries
	// values: a downstream resync re-applies the existing NB state only.
	ErrCombinedDownstreamResyncWithChange = errors.New("downstream resync combined with data change")
	// ErrRevertNotSupportedWithResync rejects WithRevert on a resync transaction.
	ErrRevertNotSupportedWithResync = errors.New("revert is not supported with resync")
	// ErrEmptyKey rejects a value staged under the empty key.
	ErrEmptyKey = errors.New("empty key")
	// ErrUnknownDescriptor is returned for a descriptor name that is not registered.
	ErrUnknownDescriptor = errors.New("unknown descriptor")
	// ErrDescriptorExists rejects registering a second descriptor under a used name.
	ErrDescriptorExists = errors.New("descriptor already registered")
	// ErrInvalidDescriptor rejects a descriptor without Name or KeySelector.
	ErrInvalidDescriptor = errors.New("invalid descriptor")
	// ErrUnimplementedCreate is the error of a value whose descriptor has no Create.
	ErrUnimplementedCreate = errors.New("descriptor does not implement Create")
	// ErrUnimplementedDelete is the error of a value whose descriptor has no Delete.
	ErrUnimplementedDelete = errors.New("descriptor does not implement Delete")
	// ErrRetrieveCycle is reported when RetrieveDependencies form a cycle.
	ErrRetrieveCycle = errors.New("cycle in RetrieveDependencies")
)

// InvalidValueError is what Validate returns to name the fields that are wrong.
type InvalidValueError struct {
	// Err says what is wrong.
	Err error
	// InvalidFields names the offending fields (e.g. "ip_addresses[1]").
	InvalidFields []string
}

// NewInvalidValueError builds an *InvalidValueError.
func NewInvalidValueError(err error, invalidFields ...string) *InvalidValueError {
	return &InvalidValueError{Err: err, InvalidFields: invalidFields}
}

// Error implements error.
func (e *InvalidValueError) Error() string {
	if len(e.InvalidFields) == 0 {
		return fmt.Sprintf("invalid value: %v", e.Err)
	}
	return fmt.Sprintf("invalid value (fields %s): %v", strings.Join(e.InvalidFields, ", "), e.Err)
}

// Unwrap returns the wrapped error.
func (e *InvalidValueError) Unwrap() error { return e.Err }

// KeyWithError is one failed operation of a transaction.
type KeyWithError struct {
	// Key is the value the operation was about.
	Key string
	// Operation is what was attempted (OpCreate for a value rejected by Validate).
	Operation TxnOperation
	// Error is what went wrong; it names the key and the descriptor.
	Error error
}

// TransactionError is the error of a transaction that did not fully apply. It lists
// every failed operation; errors.Is and errors.As see each of them (and TxnError).
type TransactionError struct {
	// SeqNum is the sequence number of the failed transaction.
	SeqNum uint64
	// TxnError is a failure of the transaction as a whole (rejected options, a failed
	// Retrieve); nil when only individual values failed.
	TxnError error
	// KVErrors lists the failed operations in execution order.
	KVErrors []KeyWithError
}

// Error implements error: one line per failure.
func (e *TransactionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transaction #%d failed", e.SeqNum)
	if e.TxnError != nil {
		fmt.Fprintf(&b, ": %v", e.TxnError)
	}
	if len(e.KVErrors) > 0 {
		fmt.Fprintf(&b, " (%d failed operation(s)):", len(e.KVErrors))
		for _, kv := range e.KVErrors {
			fmt.Fprintf(&b, " [%s %s: %v]", kv.Operation, kv.Key, kv.Error)
		}
	}
	return b.String()
}

// Unwrap returns TxnError and the error of every failed operation, so
// errors.Is(err, ErrX) finds any of them.
func (e *TransactionError) Unwrap() []error {
	errs := make([]error, 0, len(e.KVErrors)+1)
	if e.TxnError != nil {
		errs = append(errs, e.TxnError)
	}
	for _, kv := range e.KVErrors {
		errs = append(errs, kv.Error)
	}
	return errs
}

// FailedKeys returns the keys of the failed operations, in order, without repeats.
func (e *TransactionError) FailedKeys() []string {
	seen := make(map[string]bool, len(e.KVErrors))
	var keys []string
	for _, kv := range e.KVErrors {
		if !seen[kv.Key] {
			seen[kv.Key] = true
			keys = append(keys, kv.Key)
		}
	}
	return keys
}

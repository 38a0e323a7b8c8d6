package api

import (
	"errors"
	"fmt"
)

// FatalError wraps an error after which the agent cannot go on: the controller reports
// the agent as failed (so the liveness probe restarts it) and processes no more events.
type FatalError struct {
	err error
}

// NewFatalError marks err as fatal.
func NewFatalError(err error) *FatalError { return &FatalError{err: err} }

// Error describes the failure.
func (e *FatalError) Error() string { return fmt.Sprintf("fatal error: %v", e.err) }

// Unwrap returns the original error.
func (e *FatalError) Unwrap() error { return e.err }

// GetOriginalError returns the original error.
func (e *FatalError) GetOriginalError() error { return e.err }

// AbortEventError wraps an error after which the current event must not be processed any
// further (remaining handlers are skipped, nothing is committed); a healing resync follows.
type AbortEventError struct {
	err error
}

// NewAbortEventError marks err as aborting the current event.
func NewAbortEventError(err error) *AbortEventError { return &AbortEventError{err: err} }

// Error describes the failure.
func (e *AbortEventError) Error() string { return fmt.Sprintf("event aborted: %v", e.err) }

// Unwrap returns the original error.
func (e *AbortEventError) Unwrap() error { return e.err }

// GetOriginalError returns the original error.
func (e *AbortEventError) GetOriginalError() error { return e.err }

// IsFatal reports whether err (or an error it wraps) is a FatalError.
func IsFatal(err error) bool {
	var f *FatalError
	return errors.As(err, &f)
}

// IsAbort reports whether err (or an error it wraps) is an AbortEventError.
func IsAbort(err error) bool {
	var a *AbortEventError
	return errors.As(err, &a)
}

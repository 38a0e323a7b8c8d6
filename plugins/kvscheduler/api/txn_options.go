package api

import (
	"context"
	"time"
)

// ResyncType says whether and how a transaction resynchronizes the dataplane.
type ResyncType int

const (
	// NotResync is an ordinary transaction: only the staged keys change.
	NotResync ResyncType = iota
	// FullResync: the staged values are the whole NB state (keys not staged are
	// deleted); the dataplane is read back with Retrieve and the difference applied.
	FullResync
	// UpstreamResync: like FullResync but compared with the scheduler's record of the
	// dataplane, without calling Retrieve.
	UpstreamResync
	// DownstreamResync: the dataplane is read back with Retrieve and the last NB state
	// is applied again. It must not carry values.
	DownstreamResync
)

var resyncNames = [...]string{"NONE", "FULL", "UPSTREAM", "DOWNSTREAM"}

// String returns NONE, FULL, UPSTREAM or DOWNSTREAM.
func (r ResyncType) String() string {
	if r < 0 || int(r) >= len(resyncNames) {
		return "ResyncType(" + itoa(int(r)) + ")"
	}
	return resyncNames[r]
}

// MarshalText encodes the resync type by name (used by encoding/json).
func (r ResyncType) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

type ctxKey int

const (
	resyncKey ctxKey = iota
	retryKey
	revertKey
	descriptionKey
)

type resyncOpt struct {
	kind    ResyncType
	verbose bool
}

// RetryOpt is the retry policy of a transaction (see WithRetry).
type RetryOpt struct {
	// Period is the delay before the first retry.
	Period time.Duration
	// MaxCount is the number of retries after the first failure.
	MaxCount int
	// ExpBackoff doubles the delay after every retry.
	ExpBackoff bool
}

// WithResync makes the committed transaction a resync of the given kind. verbose
// records every value of the resync in the history (by default only their count).
func WithResync(ctx context.Context, kind ResyncType, verbose bool) context.Context {
	return context.WithValue(ctx, resyncKey, resyncOpt{kind: kind, verbose: verbose})
}

// IsResync returns the resync kind set by WithResync (NotResync if none) and its
// verbosity.
func IsResync(ctx context.Context) (kind ResyncType, verbose bool) {
	o, ok := ctx.Value(resyncKey).(resyncOpt)
	if !ok {
		return NotResync, false
	}
	return o.kind, o.verbose
}

// WithRetry makes the scheduler retry operations of the transaction that fail with a
// retriable error (see KVDescriptor.IsRetriableFailure): after period, then (with
// expBackoff) after twice the previous delay, at most maxCount times. Retries run in
// the background as transactions of type RetryFailedOps.
func WithRetry(ctx context.Context, period time.Duration, maxCount int, expBackoff bool) context.Context {
	return context.WithValue(ctx, retryKey, RetryOpt{Period: period, MaxCount: maxCount, ExpBackoff: expBackoff})
}

// IsWithRetry returns the retry policy set by WithRetry and whether one was set.
func IsWithRetry(ctx context.Context) (opt RetryOpt, ok bool) {
	opt, ok = ctx.Value(retryKey).(RetryOpt)
	return opt, ok
}

// WithRevert makes the transaction all-or-nothing: if any value fails validation
// nothing is applied, and if any operation fails every value the transaction touched
// is restored to its previous content and state before Commit returns the error.
// Not supported with resync.
func WithRevert(ctx context.Context) context.Context {
	return context.WithValue(ctx, revertKey, true)
}

// IsWithRevert reports whether WithRevert was set.
func IsWithRevert(ctx context.Context) bool {
	v, _ := ctx.Value(revertKey).(bool)
	return v
}

// WithDescription attaches a human description to the transaction, shown in the
// history and logs (e.g. the controller event that caused it).
func WithDescription(ctx context.Context, description string) context.Context {
	return context.WithValue(ctx, descriptionKey, description)
}

// IsWithDescription returns the description set by WithDescription and whether one
// was set.
func IsWithDescription(ctx context.Context) (description string, ok bool) {
	description, ok = ctx.Value(descriptionKey).(string)
	return description, ok
}

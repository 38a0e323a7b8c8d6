package govppmux

import (
	"errors"
	"sync"
	"time"

	"go.fd.io/govpp/adapter"
	"k8s.io/utils/clock"
)

// errStopped is what WaitReady returns once the plugin is closing.
var errStopped = errors.New("govppmux: closing")

// Backoff returns the pause before connection attempt n+1 after n failed attempts in a
// row (n >= 1): base doubled for every further failure, capped at max. Pure, so that
// the schedule is tested without a clock.
func Backoff(base, max time.Duration, n int) time.Duration {
	if n <= 0 || base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// attempt describes one failed connection attempt, for the plugin's reports.
type attempt struct {
	// n counts the failures in a row (1 for the first).
	n int
	// err is the failure.
	err error
	// next is the pause before the next attempt.
	next time.Duration
	// everConnected tells whether a connection was ever established.
	everConnected bool
}

// retryingAdapter wraps the socket client that govpp's connection loop drives, so that
// the loop never gives up and waits with capped exponential backoff between attempts.
//
// govpp's loop (core.Connection.connectLoop) calls WaitReady, then Connect, and after
// a failure waits its own fixed interval (set to a negligible value by the plugin) and
// retries, up to a number of attempts the plugin sets beyond reach. This adapter owns
// the schedule instead: WaitReady pauses Backoff(base, max, failures) on the injected
// clock (interruptible by stop), Connect counts the failures in a row and reports each
// one. The first failures of the start-up are counted against the start-up budget:
// once it is spent, exhausted is closed and Init gives up; after a connection was once
// established, attempts go on for as long as the agent runs.
type retryingAdapter struct {
	adapter.VppAPI

	clock     clock.Clock
	base, max time.Duration
	stop      <-chan struct{}
	onFailure func(attempt)
	budget    int // failed attempts allowed before the first connection

	mu            sync.Mutex
	failures      int // failed attempts in a row
	lastErr       error
	everConnected bool
	exhausted     chan struct{}
	exhaustedOnce sync.Once
}

func newRetryingAdapter(inner adapter.VppAPI, clk clock.Clock, base, max time.Duration, budget int,
	stop <-chan struct{}, onFailure func(attempt)) *retryingAdapter {
	return &retryingAdapter{VppAPI: inner, clock: clk, base: base, max: max, budget: budget, stop: stop,
		onFailure: onFailure, exhausted: make(chan struct{})}
}

// WaitReady waits out the backoff of the failures so far. It does not wait for the
// socket file (the inner client would, for seconds, and Close could not interrupt it):
// a missing socket is one more failed attempt.
func (a *retryingAdapter) WaitReady() error {
	a.mu.Lock()
	d := Backoff(a.base, a.max, a.failures)
	a.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := a.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-a.stop:
		return errStopped
	}
}

// Connect tries once and counts the outcome.
func (a *retryingAdapter) Connect() error {
	select {
	case <-a.stop:
		return errStopped
	default:
	}
	err := a.VppAPI.Connect()
	a.mu.Lock()
	if err == nil {
		a.failures, a.everConnected = 0, true
		a.mu.Unlock()
		return nil
	}
	a.failures++
	a.lastErr = err
	at := attempt{n: a.failures, err: err, next: Backoff(a.base, a.max, a.failures), everConnected: a.everConnected}
	spent := !a.everConnected && a.failures > a.budget
	a.mu.Unlock()
	if spent {
		a.exhaustedOnce.Do(func() { close(a.exhausted) })
	}
	if a.onFailure != nil {
		a.onFailure(at)
	}
	return err
}

// lastError returns the error of the last failed attempt.
func (a *retryingAdapter) lastError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr
}

// failuresInRow returns the failed attempts since the last success.
func (a *retryingAdapter) failuresInRow() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failures
}

package govppmux

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/adapter"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux/vppsock"
)

// errStopped is what WaitReady returns once the plugin is closing.
var errStopped = errors.New("govppmux: closing")

// Outcomes of reconnectAfterLoss other than success.
var (
	// errCoreTookOver: govpp's core disconnected the adapter itself (its health
	// probe failed, or Close) while the plugin was reconnecting: core's own loop
	// reconnects (on the same adapter and backoff) and reports Connected.
	errCoreTookOver = errors.New("govppmux: govpp's core took over the reconnect")
	// errTableChanged: VPP came back with another message table, so govpp's core
	// must reconnect itself (it caches message IDs).
	errTableChanged = errors.New("govppmux: VPP came back with another message table")
)

// lossReporter is a transport that reports at once a connection VPP closed (vppsock)
// and tells whether a new connection kept the message table.
type lossReporter interface {
	SetLossCallback(cb vppsock.LossCallback)
	MessageTableDigest() uint64
}

var _ lossReporter = (*vppsock.Client)(nil)

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
// retries, up to a number of attempts the plugin sets beyond reach (R2 in
// govpp_internals.go). This adapter owns
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

	// connMu serialises the connection attempts of govpp's core (Connect) and of
	// the plugin after a loss (reconnectAfterLoss), and Disconnect.
	connMu sync.Mutex
	// disconnects counts the Disconnect calls (govpp's core declaring VPP gone, or
	// Close: R3 in govpp_internals.go); connectedGen is its value at the last
	// successful Connect. When they
	// differ, core disconnected since: core's loop reconnects, and a reconnect
	// after a loss gives way.
	disconnects  atomic.Uint64
	connectedGen atomic.Uint64
	// lost holds the error of the loss being recovered from (nil while connected):
	// sends that fail meanwhile name it.
	lost atomic.Pointer[error]

	mu            sync.Mutex
	digest        uint64 // of the message table at the last successful Connect
	failures      int    // failed attempts in a row
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

// Connect tries once and counts the outcome (govpp's core calls it).
func (a *retryingAdapter) Connect() error {
	a.connMu.Lock()
	defer a.connMu.Unlock()
	return a.connectOnce()
}

// SendMsg sends through the inner client; while a loss is being recovered from, a
// failed send names the loss.
func (a *retryingAdapter) SendMsg(context uint32, data []byte) error {
	err := a.VppAPI.SendMsg(context, data)
	if err == nil {
		return nil
	}
	if lost := a.lost.Load(); lost != nil && !errors.Is(err, *lost) {
		return fmt.Errorf("%w (reconnecting; now: %v)", *lost, err)
	}
	return err
}

// GetMsgID looks the message up in the inner client's table; while a loss is being
// recovered from (the table is unknown), the error names the loss.
func (a *retryingAdapter) GetMsgID(msgName, msgCrc string) (uint16, error) {
	id, err := a.VppAPI.GetMsgID(msgName, msgCrc)
	if err == nil {
		return id, nil
	}
	var unknown *adapter.UnknownMsgError
	if lost := a.lost.Load(); lost != nil && !errors.As(err, &unknown) && !errors.Is(err, *lost) {
		return 0, fmt.Errorf("%w (reconnecting; now: %v)", *lost, err)
	}
	return 0, err
}

// markLost records the loss that sends fail with until the next connection.
func (a *retryingAdapter) markLost(err error) { a.lost.Store(&err) }

// reconnectAfterLoss reconnects the inner client after the transport reported that
// VPP closed the connection, underneath govpp's core, which still believes it is
// connected: the same backoff as core's attempts (WaitReady, connectOnce), and the
// same failure reports. It succeeds only when VPP sent the same message table as
// before (the IDs govpp's core cached stay valid); otherwise it disconnects again
// and returns errTableChanged (core's next health probe fails and core reconnects
// itself). It returns errCoreTookOver when core disconnected the adapter meanwhile
// (core then reconnects and reports Connected), errStopped on Close.
func (a *retryingAdapter) reconnectAfterLoss() error {
	a.mu.Lock()
	before := a.digest
	a.mu.Unlock()
	for {
		if err := a.WaitReady(); err != nil {
			return err
		}
		a.connMu.Lock()
		if a.coreOwns() {
			a.connMu.Unlock()
			return errCoreTookOver
		}
		err := a.connectOnce()
		if err == nil {
			lr, ok := a.VppAPI.(lossReporter)
			if ok && lr.MessageTableDigest() != before {
				_ = a.VppAPI.Disconnect()
				a.connMu.Unlock()
				return errTableChanged
			}
		}
		a.connMu.Unlock()
		if err == nil {
			return nil
		}
		if errors.Is(err, errStopped) {
			return err
		}
	}
}

// connectOnce tries once and counts the outcome; connMu is held.
func (a *retryingAdapter) connectOnce() error {
	select {
	case <-a.stop:
		return errStopped
	default:
	}
	err := a.VppAPI.Connect()
	a.mu.Lock()
	if err == nil {
		a.failures, a.everConnected = 0, true
		if lr, ok := a.VppAPI.(lossReporter); ok {
			a.digest = lr.MessageTableDigest()
		}
		a.connectedGen.Store(a.disconnects.Load())
		a.mu.Unlock()
		a.lost.Store(nil)
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

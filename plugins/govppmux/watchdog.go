package govppmux

import (
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
)

// watchdog turns the VPP health component from INIT (not ready) to ERROR (not alive)
// when VPP stays unanswered longer than liveness-timeout, as Felix's dataplane watchdog
// does: a VPP that hangs with its socket open is never repaired by waiting, and only
// a failing liveness makes the kubelet restart the vswitch container (and VPP with
// it). It sits between the plugin and its health reporter: every report goes through
// it, so the reconnect attempts, which report INIT, cannot hide the verdict.
type watchdog struct {
	clock   clock.Clock
	timeout time.Duration
	socket  string
	log     logrus.FieldLogger
	out     *health.Reporter // nil: reports are dropped
	done    <-chan struct{}  // closed by the plugin's Close
	wg      *sync.WaitGroup  // the plugin's goroutines

	mu        sync.Mutex
	downSince time.Time     // zero while VPP answers
	up        chan struct{} // closed when VPP answers again; one per outage
	expired   bool          // the outage outlasted timeout
	state     health.State  // last state reported by the plugin
	reason    string        // and its reason
}

func newWatchdog(clk clock.Clock, timeout time.Duration, socket string, log logrus.FieldLogger, out *health.Reporter,
	done <-chan struct{}, wg *sync.WaitGroup) *watchdog {
	return &watchdog{clock: clk, timeout: timeout, socket: socket, log: log, out: out, done: done, wg: wg}
}

// down records that VPP stopped answering (a no-op during an outage already recorded)
// and arms the timer of liveness-timeout.
func (w *watchdog) down() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.downSince.IsZero() {
		return
	}
	w.downSince = w.clock.Now()
	w.expired = false
	up := make(chan struct{})
	w.up = up
	timer := w.clock.NewTimer(w.timeout)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer timer.Stop()
		select {
		case <-timer.C():
			w.expire(up)
		case <-up:
		case <-w.done:
		}
	}()
}

// answered records that VPP answers again: the outage (if any) is over.
func (w *watchdog) answered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.up != nil {
		close(w.up)
		w.up = nil
		if w.expired {
			w.log.WithField("down-for", w.clock.Since(w.downSince).Round(time.Millisecond)).Warn("VPP answers again: liveness restored")
		}
	}
	w.downSince = time.Time{}
	w.expired = false
}

// expire marks the outage whose channel is up as too long and reports it.
func (w *watchdog) expire(up chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.up != up {
		return // VPP answered meanwhile
	}
	w.expired = true
	w.log.WithFields(logrus.Fields{"socket": w.socket, "liveness-timeout": w.timeout, "down-since": w.downSince}).
		Error("VPP has not answered for longer than liveness-timeout: liveness fails, the kubelet restarts the vswitch container")
	w.publishLocked()
}

// report records the plugin's state and reason and publishes them, as ERROR when the
// outage outlasted liveness-timeout and the plugin still waits for VPP (INIT).
func (w *watchdog) report(state health.State, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state, w.reason = state, reason
	w.publishLocked()
}

func (w *watchdog) publishLocked() {
	if w.out == nil {
		return
	}
	state, reason := w.state, w.reason
	if w.expired && state == health.Init {
		state = health.Error
		reason = fmt.Sprintf("VPP at %s has not answered for %v, more than liveness-timeout %v: "+
			"failing liveness so that the vswitch container (and VPP) is restarted; last: %s",
			w.socket, w.clock.Since(w.downSince).Round(time.Millisecond), w.timeout, reason)
	}
	w.out.Report(state, reason)
}

package controller

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Health and healing.
//
// A failed event (a handler error, or values the scheduler could not apply) is repaired
// by a healing resync (HealingResync{AfterError}) delayAfterErrorHealing later; the
// scheduler meanwhile retries the failed values itself (enableRetry). A healing resync
// that fails again is retried with exponential backoff, capped at
// maxDelayAfterErrorHealing, for as long as it fails: a flaky VPP or one Service whose
// mapping VPP refuses never stops the node. Events keep being processed meanwhile, so
// pods whose wiring does not depend on the failing values are served.
//
// The controller reports to the health registry:
//   - INIT until the first database resync was processed;
//   - DEGRADED (readiness fails, liveness holds) while values are failing or a healing
//     resync is pending, naming the failing keys (first maxReportedKeys) and the cause;
//     contiv_controller_failed_values counts the keys;
//   - OK otherwise;
//   - ERROR (liveness fails) only when the agent can no longer make progress: a handler
//     returned a fatal error (its state can no longer be trusted and only a restart
//     rebuilds it), no database resync arrived by startupResyncDeadline, or one event
//     has been processed for longer than eventLoopStallTimeout (the loop is stuck, e.g.
//     on a VPP call that never returns). A stall that ends clears the ERROR.

// maxReportedKeys bounds the failing keys named in the health reason.
const maxReportedKeys = 10

// failedValue is a value the scheduler could not apply, as last seen.
type failedValue struct {
	state kvs.ValueState
	err   string
}

// noteFailedValues remembers the keys that failed in a transaction.
func (c *Controller) noteFailedValues(err error) {
	var te *kvs.TransactionError
	if !errors.As(err, &te) {
		return
	}
	for _, kv := range te.KVErrors {
		c.failedValues[kv.Key] = failedValue{state: kvs.StateFailed, err: kv.Error.Error()}
	}
}

// pruneFailedValues asks the scheduler for the status of every failing key and forgets
// the ones that were repaired (by its retries, or since).
func (c *Controller) pruneFailedValues() {
	for key := range c.failedValues {
		st := c.Scheduler.GetValueStatus(key)
		if st == nil {
			delete(c.failedValues, key)
			continue
		}
		switch st.State {
		case kvs.StateFailed, kvs.StateRetrying, kvs.StateInvalid:
			c.failedValues[key] = failedValue{state: st.State, err: st.Error}
		default:
			delete(c.failedValues, key)
		}
	}
	c.metrics.failedValues.Set(float64(len(c.failedValues)))
}

// scheduleHealing arms the after-error healing resync unless one is pending; the delay
// doubles with every consecutive failed healing, up to maxDelayAfterErrorHealing.
func (c *Controller) scheduleHealing(cause error) {
	if c.healingScheduled || c.aborting {
		return
	}
	c.healingScheduled = true
	c.healingErr = cause
	delay := c.healingDelay()
	c.healingDue = c.clock.Now().Add(delay)
	c.Log.WithError(cause).WithField("attempt", c.healingFailures+1).Warnf("healing resync scheduled in %v", delay)
	c.healingTimer = c.clock.NewTimer(delay)
}

// healingDelay is delayAfterErrorHealing doubled per consecutive failed healing, capped.
func (c *Controller) healingDelay() time.Duration {
	delay := time.Duration(c.config.DelayAfterErrorHealing)
	limit := max(time.Duration(c.config.MaxDelayAfterErrorHealing), delay)
	for range c.healingFailures {
		delay *= 2
		if delay >= limit {
			return limit
		}
	}
	return delay
}

// updateHealth reports the controller's state (see the comment at the top of the file).
func (c *Controller) updateHealth() {
	if c.aborting {
		return // abort reported ERROR
	}
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	if c.stalled {
		return // the watchdog reported the stall; the loop clears it when it returns
	}
	switch {
	case c.resyncCount == 0:
		c.report(health.Init, "waiting for the first database resync")
	case len(c.failedValues) > 0 || c.healingScheduled:
		c.report(health.Degraded, c.degradedReason())
	default:
		c.report(health.OK, "")
	}
}

// degradedReason names the failing keys, the healing state and its cause.
func (c *Controller) degradedReason() string {
	var b strings.Builder
	if n := len(c.failedValues); n > 0 {
		keys := make([]string, 0, n)
		for k := range c.failedValues {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%d values failing:", n)
		for i, k := range keys {
			if i == maxReportedKeys {
				fmt.Fprintf(&b, " and %d more", n-i)
				break
			}
			fv := c.failedValues[k]
			fmt.Fprintf(&b, " %s (%s: %s);", k, fv.state, fv.err)
		}
	}
	if c.healingScheduled {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "healing resync in %v", c.healingDue.Sub(c.clock.Now()).Round(time.Millisecond))
		if c.healingFailures > 0 {
			fmt.Fprintf(&b, " (%d failed in a row)", c.healingFailures)
		}
		if c.healingErr != nil {
			fmt.Fprintf(&b, " after: %v", c.healingErr)
		}
	}
	return b.String()
}

// watchStalls is the watchdog goroutine: at every tick it reports ERROR if one event has
// been processed for longer than limit (eventLoopStallTimeout).
func (c *Controller) watchStalls(ticker clock.Ticker, limit time.Duration) {
	defer c.wg.Done()
	defer ticker.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-ticker.C():
		}
		c.checkStall(limit)
	}
}

// checkStall reports a stall of the event in progress, if it lasts longer than limit.
func (c *Controller) checkStall(limit time.Duration) {
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	if c.busyName == "" || c.stalled {
		return
	}
	if busy := c.clock.Since(c.busySince); busy > limit {
		c.stalled = true
		reason := fmt.Sprintf("event loop stalled: event %s has been processed for %v (eventLoopStallTimeout %v)",
			c.busyName, busy.Round(time.Second), limit)
		c.Log.Error(reason)
		c.metrics.stalls.Inc()
		c.report(health.Error, reason)
	}
}

// setBusy records the event in progress (name "" when idle) for the watchdog; a stall
// ends with the event.
func (c *Controller) setBusy(name string) {
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	c.busyName, c.busySince = name, c.clock.Now()
	if name == "" && c.stalled {
		c.stalled = false
		c.Log.Warn("event loop no longer stalled")
	}
}

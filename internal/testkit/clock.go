package testkit

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// Clock is a fake clock for code that takes a k8s.io/utils/clock interface
// (clock.PassiveClock, clock.Clock, clock.WithTicker, clock.WithDelayedExecution): the
// embedded testingclock.FakeClock moves only when the test calls Step or SetTime, and
// Clock adds the waits a test needs between two steps, so that it never sleeps.
//
// A step fires the timers and tickers due by then; whoever reads them does so on its own
// goroutine, later. AwaitWaiters waits until the code under test has armed its timers
// (so the next step reaches them); AwaitTicksTaken waits until it has received the ticks
// of its tickers (so a tick is not still sitting in a channel when the test looks).
type Clock struct {
	*testingclock.FakeClock

	mu      sync.Mutex
	tickers map[*ticker]struct{} // made by NewTicker and not stopped
}

// NewClock returns a fake clock at a fixed time, 2001-09-09 01:46:40 UTC (Unix 1e9).
func NewClock() *Clock { return NewClockAt(time.Unix(1e9, 0)) }

// NewClockAt returns a fake clock at t.
func NewClockAt(t time.Time) *Clock {
	return &Clock{FakeClock: testingclock.NewFakeClock(t), tickers: map[*ticker]struct{}{}}
}

// NewTicker is FakeClock's ticker, remembered until it is stopped so that
// AwaitTicksTaken can tell whether its tick was received.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	t := &ticker{Ticker: c.FakeClock.NewTicker(d), c: c}
	c.mu.Lock()
	c.tickers[t] = struct{}{}
	c.mu.Unlock()
	return t
}

// AwaitWaiters waits until exactly n timers, tickers and After channels wait on the
// clock (a stopped timer no longer counts; a stopped ticker still does, as in
// testingclock), and fails tb after DefaultTimeout.
func (c *Clock) AwaitWaiters(tb T, n int) {
	tb.Helper()
	Eventually(tb, DefaultTimeout, fmt.Sprintf("%d timers on the fake clock", n), func() error {
		if got := c.Waiters(); got != n {
			return fmt.Errorf("%d waiting", got)
		}
		return nil
	})
}

// AwaitWaiting waits until at least one timer, ticker or After channel waits on the
// clock, and fails tb after DefaultTimeout.
func (c *Clock) AwaitWaiting(tb T) {
	tb.Helper()
	EventuallyTrue(tb, DefaultTimeout, "a timer on the fake clock", c.HasWaiters)
}

// AwaitTicksTaken waits until no ticker made by NewTicker (and not stopped) holds a
// tick its reader has not received, and fails tb after DefaultTimeout. It tells that the
// reader took the tick, not that it finished acting on it.
func (c *Clock) AwaitTicksTaken(tb T) {
	tb.Helper()
	Eventually(tb, DefaultTimeout, "the ticks taken by their readers", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		pending := 0
		for t := range c.tickers {
			pending += len(t.C())
		}
		if pending > 0 {
			return fmt.Errorf("%d ticks pending", pending)
		}
		return nil
	})
}

// ticker is a FakeClock ticker that leaves the Clock's record when stopped.
type ticker struct {
	clock.Ticker
	c *Clock
}

// Stop stops the ticker.
func (t *ticker) Stop() {
	t.Ticker.Stop()
	t.c.mu.Lock()
	delete(t.c.tickers, t)
	t.c.mu.Unlock()
}

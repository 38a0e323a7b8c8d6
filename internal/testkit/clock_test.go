package testkit

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// The interfaces of k8s.io/utils/clock the production code takes.
var (
	_ clock.PassiveClock                  = NewClock()
	_ clock.Clock                         = NewClock()
	_ clock.WithTicker                    = NewClock()
	_ clock.WithDelayedExecution          = NewClock()
	_ clock.WithTickerAndDelayedExecution = NewClock()
)

func TestNewClockStartsAtAFixedTime(t *testing.T) {
	if got := NewClock().Now(); !got.Equal(time.Unix(1e9, 0)) {
		t.Errorf("NewClock at %v", got)
	}
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	c := NewClockAt(at)
	c.Step(time.Minute)
	if got := c.Now(); !got.Equal(at.Add(time.Minute)) {
		t.Errorf("after a step of 1m: %v", got)
	}
}

// TestAwaitWaitersSeesATimerArmedByAnotherGoroutine: the step after AwaitWaiters reaches
// the timer, so the goroutine wakes.
func TestAwaitWaitersSeesATimerArmedByAnotherGoroutine(t *testing.T) {
	c := NewClock()
	woke := make(chan time.Time)
	go func() { woke <- <-c.After(time.Hour) }()
	c.AwaitWaiters(t, 1)
	c.AwaitWaiting(t)
	c.Step(time.Hour)
	select {
	case at := <-woke:
		if !at.Equal(time.Unix(1e9, 0).Add(time.Hour)) {
			t.Errorf("woke at %v", at)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the timer did not fire")
	}
}

func TestAwaitWaitersFailsWhenTheCountIsNotReached(t *testing.T) {
	if testing.Short() {
		t.Skip("waits DefaultTimeout")
	}
	c := NewClock()
	c.NewTimer(time.Second)
	ft := &fakeT{}
	c.AwaitWaiters(ft, 2)
	if len(ft.failures) != 1 || ft.failures[0] != "2 timers on the fake clock: not within 5s: 1 waiting" {
		t.Fatalf("failures %q", ft.failures)
	}
}

// TestAwaitTicksTakenReturnsOnlyOnceTheReaderHasTheTick: the reader takes the tick only
// when the test lets it; AwaitTicksTaken must not return before.
func TestAwaitTicksTakenReturnsOnlyOnceTheReaderHasTheTick(t *testing.T) {
	c := NewClock()
	tk := c.NewTicker(time.Second)
	mayRead := make(chan struct{})
	took := make(chan struct{})
	go func() {
		<-mayRead
		<-tk.C()
		close(took)
	}()
	c.AwaitTicksTaken(t) // nothing fired yet
	c.Step(time.Second)
	returned := make(chan struct{})
	go func() {
		c.AwaitTicksTaken(t)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("AwaitTicksTaken returned while the tick was still in the channel")
	case <-time.After(50 * time.Millisecond): // real time: it must not return meanwhile
	}
	close(mayRead)
	<-took
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("AwaitTicksTaken did not return once the tick was taken")
	}
}

// TestAStoppedTickerIsNotAwaited: a tick left in a stopped ticker is nobody's to take.
func TestAStoppedTickerIsNotAwaited(t *testing.T) {
	c := NewClock()
	tk := c.NewTicker(time.Second)
	c.Step(time.Second)
	if len(tk.C()) != 1 {
		t.Fatal("no tick after a step of the period")
	}
	tk.Stop()
	ft := &fakeT{}
	c.AwaitTicksTaken(ft)
	if len(ft.failures) != 0 {
		t.Fatalf("failures %q", ft.failures)
	}
	if c.Waiters() != 1 {
		t.Errorf("waiters %d: the fake clock counts a stopped ticker, as testingclock does", c.Waiters())
	}
}

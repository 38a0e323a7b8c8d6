package govppmux

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux/vppsock"
)

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}
	for n, w := range want {
		if got := Backoff(base, max, n); got != w {
			t.Errorf("Backoff(%v, %v, %d) = %v, want %v", base, max, n, got, w)
		}
	}
	if got := Backoff(base, max, 1<<30); got != max {
		t.Errorf("after very many failures: %v, want the cap %v", got, max)
	}
}

// failingAPI is an adapter whose Connect fails until healed.
type failingAPI struct {
	adapter.VppAPI
	mu     sync.Mutex
	healed bool
	calls  int
}

func (f *failingAPI) Connect() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.healed {
		return nil
	}
	return errors.New("connection refused")
}

// TestRetryingAdapterWaitsOnTheClock drives the adapter as govpp's connect loop does
// (WaitReady, Connect, ...) against a fake clock: the waits follow the capped backoff,
// the start-up budget is spent after the configured failures, attempts go on after
// it, and a success resets the schedule.
func TestRetryingAdapterWaitsOnTheClock(t *testing.T) {
	clk := testkit.NewClockAt(time.Unix(0, 0))
	inner := &failingAPI{}
	stop := make(chan struct{})
	var reports []attempt
	var mu sync.Mutex
	a := newRetryingAdapter(inner, clk, time.Second, 4*time.Second, 2, stop, func(at attempt) {
		mu.Lock()
		reports = append(reports, at)
		mu.Unlock()
	})
	// waitOnce runs WaitReady and returns how long the fake clock had to advance: it
	// steps a second at a time, each step only once WaitReady has returned or waits on
	// its timer (a step before the timer is armed would not count).
	waitOnce := func() time.Duration {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- a.WaitReady() }()
		var waited time.Duration
		for {
			returned, err := false, error(nil)
			testkit.Eventually(t, testkit.DefaultTimeout, "WaitReady returned or waiting on its timer", func() error {
				select {
				case err = <-done:
					returned = true
					return nil
				default:
				}
				if n := clk.Waiters(); n != 1 {
					return fmt.Errorf("%d timers on the clock", n)
				}
				return nil
			})
			if returned {
				if err != nil {
					t.Fatalf("WaitReady: %v", err)
				}
				return waited
			}
			clk.Step(time.Second)
			waited += time.Second
		}
	}
	var waits []time.Duration
	for range 5 {
		waits = append(waits, waitOnce())
		if err := a.Connect(); err == nil {
			t.Fatal("connect succeeded")
		}
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("wait before attempt %d = %v, want %v (all: %v)", i+1, waits[i], want[i], waits)
		}
	}
	select {
	case <-a.exhausted:
	default:
		t.Error("start-up budget of 2 failures not reported as spent after 5")
	}
	mu.Lock()
	if len(reports) != 5 || reports[4].n != 5 || reports[4].next != 4*time.Second || reports[4].everConnected {
		t.Errorf("reports = %+v", reports)
	}
	mu.Unlock()
	inner.mu.Lock()
	inner.healed = true
	inner.mu.Unlock()
	waitOnce()
	if err := a.Connect(); err != nil || a.failuresInRow() != 0 {
		t.Fatalf("Connect after healing = %v, failures %d", err, a.failuresInRow())
	}
	if w := waitOnce(); w != 0 {
		t.Errorf("wait after a success = %v, want none", w)
	}
	// Close interrupts a pending backoff.
	inner.mu.Lock()
	inner.healed = false
	inner.mu.Unlock()
	_ = a.Connect()
	done := make(chan error, 1)
	go func() { done <- a.WaitReady() }()
	close(stop)
	if err := <-done; !errors.Is(err, errStopped) {
		t.Errorf("WaitReady after stop = %v", err)
	}
}

// tableAPI is an adapter that reports a message-table digest and whose Connect
// fails the next fail times.
type tableAPI struct {
	adapter.VppAPI
	mu          sync.Mutex
	digest      uint64
	fail        int
	connects    int
	disconnects int
}

func (f *tableAPI) Connect() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects++
	if f.fail > 0 {
		f.fail--
		return errors.New("connection refused")
	}
	return nil
}

func (f *tableAPI) Disconnect() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disconnects++
	return nil
}

func (f *tableAPI) SetLossCallback(vppsock.LossCallback) {}

func (f *tableAPI) MessageTableDigest() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.digest
}

var _ lossReporter = (*tableAPI)(nil)

// TestReconnectAfterLossKeepsOnlyTheSameMessageTable: the reconnect after a loss
// succeeds when VPP came back with the same message table; with another one it
// disconnects again and leaves the reconnect to govpp's core (errTableChanged).
func TestReconnectAfterLossKeepsOnlyTheSameMessageTable(t *testing.T) {
	inner := &tableAPI{digest: 7}
	a := newRetryingAdapter(inner, testkit.NewClockAt(time.Unix(0, 0)), time.Second, time.Second, 0, make(chan struct{}), nil)
	if err := a.Connect(); err != nil {
		t.Fatal(err)
	}
	a.markLost(errors.New("lost"))
	if err := a.reconnectAfterLoss(); err != nil {
		t.Fatalf("same table: %v", err)
	}
	if a.lost.Load() != nil {
		t.Error("loss still recorded after the reconnect")
	}
	inner.mu.Lock()
	inner.digest = 8
	inner.mu.Unlock()
	if err := a.reconnectAfterLoss(); !errors.Is(err, errTableChanged) {
		t.Fatalf("another table: %v, want errTableChanged", err)
	}
	if inner.disconnects != 1 {
		t.Errorf("%d disconnects after a changed table, want 1", inner.disconnects)
	}
}

// TestReconnectAfterLossGivesWayToCore: when govpp's core disconnects the adapter
// (its health probe failed) while the plugin waits out the backoff of its reconnect
// after a loss, the plugin makes no further attempt: core's loop alone reconnects.
func TestReconnectAfterLossGivesWayToCore(t *testing.T) {
	clk := testkit.NewClockAt(time.Unix(0, 0))
	inner := &tableAPI{digest: 7}
	a := newRetryingAdapter(inner, clk, time.Second, time.Second, 0, make(chan struct{}), nil)
	if err := a.Connect(); err != nil {
		t.Fatal(err)
	}
	inner.mu.Lock()
	inner.fail = 1 // VPP not back yet at the first attempt
	inner.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- a.reconnectAfterLoss() }()
	clk.AwaitWaiting(t)                    // the first attempt failed, the backoff is armed
	if err := a.Disconnect(); err != nil { // core's health probe failed
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if err := <-done; !errors.Is(err, errCoreTookOver) {
		t.Fatalf("reconnectAfterLoss = %v, want errCoreTookOver", err)
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	if inner.connects != 2 {
		t.Errorf("%d Connect calls, want 2 (the start, the failed attempt; none after core took over)", inner.connects)
	}
}

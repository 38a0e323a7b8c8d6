package govppmux

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter"
	clocktesting "k8s.io/utils/clock/testing"
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
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	inner := &failingAPI{}
	stop := make(chan struct{})
	var reports []attempt
	var mu sync.Mutex
	a := newRetryingAdapter(inner, clk, time.Second, 4*time.Second, 2, stop, func(at attempt) {
		mu.Lock()
		reports = append(reports, at)
		mu.Unlock()
	})
	// waitOnce runs WaitReady and returns how long the fake clock had to advance.
	waitOnce := func() time.Duration {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- a.WaitReady() }()
		var waited time.Duration
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("WaitReady: %v", err)
				}
				return waited
			default:
			}
			if clk.HasWaiters() {
				clk.Step(time.Second)
				waited += time.Second
				continue
			}
			runtime.Gosched() // let the goroutine reach its timer or return
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

package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeT records what Eventually reports instead of ending the test.
type fakeT struct{ failures []string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func TestWaitReturnsOnceTheCheckPasses(t *testing.T) {
	calls := 0
	err := Wait(context.Background(), time.Second, "the third call", func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Wait = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestWaitNamesWhatWasAwaitedAndTheLastError(t *testing.T) {
	last := errors.New("socket absent")
	start := time.Now()
	err := Wait(context.Background(), 30*time.Millisecond, "the agent's socket", func() error { return last })
	if took := time.Since(start); took < 30*time.Millisecond || took > 2*time.Second {
		t.Errorf("gave up after %v, want the 30ms timeout", took)
	}
	if !errors.Is(err, last) {
		t.Errorf("error %v does not wrap the last error", err)
	}
	if want := "the agent's socket: not within 30ms: socket absent"; err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestWaitStopsAtAPermanentError(t *testing.T) {
	exited := errors.New("exited with status 1")
	calls := 0
	err := Wait(context.Background(), time.Minute, "vpp ready", func() error {
		calls++
		return Permanent(exited)
	})
	if calls != 1 || !errors.Is(err, exited) || err.Error() != "vpp ready: exited with status 1" {
		t.Fatalf("Wait = %v after %d calls, want the permanent error at once", err, calls)
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Wait(ctx, time.Minute, "never", func() error {
		calls++
		if calls == 2 {
			cancel()
		}
		return errors.New("not yet")
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not yet") || calls != 2 {
		t.Fatalf("Wait = %v after %d calls, want canceled naming the last error after 2", err, calls)
	}
}

// TestWaitPausesGrowWithTheTimeWaited: a check that never passes is called often at
// first, then every 200 ms at most, never in a busy loop.
func TestWaitPausesGrowWithTheTimeWaited(t *testing.T) {
	var at []time.Duration
	start := time.Now()
	_ = Wait(context.Background(), 600*time.Millisecond, "never", func() error {
		at = append(at, time.Since(start))
		return errors.New("no")
	})
	if len(at) < 10 || len(at) > 60 {
		t.Errorf("%d checks in 600ms, want between 10 and 60: %v", len(at), at)
	}
	if at[1] > 50*time.Millisecond {
		t.Errorf("second check after %v, want it within a few ms", at[1])
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap > 400*time.Millisecond {
			t.Errorf("pause of %v between checks %d and %d, want at most ~200ms", gap, i-1, i)
		}
	}
}

func TestEventuallyFailsTheTestWithWaitsError(t *testing.T) {
	ft := &fakeT{}
	Eventually(ft, 10*time.Millisecond, "the route", func() error { return errors.New("no route to 10.1.1.2") })
	if len(ft.failures) != 1 || ft.failures[0] != "the route: not within 10ms: no route to 10.1.1.2" {
		t.Fatalf("failures %q", ft.failures)
	}
	ft = &fakeT{}
	Eventually(ft, time.Second, "nothing", func() error { return nil })
	EventuallyTrue(ft, time.Second, "true", func() bool { return true })
	if len(ft.failures) != 0 {
		t.Fatalf("failures %q for checks that pass", ft.failures)
	}
}

func TestEventuallyTrueCallsTheConditionUntilItHolds(t *testing.T) {
	calls := 0
	EventuallyTrue(t, time.Second, "the third call", func() bool {
		calls++
		return calls == 3
	})
	if calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}
}

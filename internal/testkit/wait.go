package testkit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout is the timeout of the Clock's waits, and the one tests use unless they
// have a reason for another: long enough for a loaded machine
// running the tests of several packages at once, short enough for a failing test to
// end soon.
const DefaultTimeout = 5 * time.Second

// The pause between two checks grows with the time already waited (a quarter of it),
// between these bounds: a condition that holds soon is seen within a millisecond or
// two, one that takes seconds (a process starting) is checked five times a second, and
// a wait ends at most a quarter later than its condition came true.
const (
	minPause = time.Millisecond
	maxPause = 200 * time.Millisecond
)

// T is the part of testing.TB the kit uses; *testing.T and *testing.B satisfy it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// permanentError is an error that waiting does not cure.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that waiting does not cure (the process being waited for
// exited, say): Wait returns it at once instead of checking again. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Wait calls check until it returns nil, then returns nil. It gives up and returns an
// error naming what was awaited and wrapping check's last error when check returns a
// Permanent error, when timeout has passed since the call, or when ctx ends. check is
// called at once, then after pauses that grow from a millisecond to 200 ms; it runs on
// the caller's goroutine, so it may use the caller's state without locking.
func Wait(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p := (permanentError{}); errors.As(err, &p) {
			return fmt.Errorf("%s: %w", what, p.err)
		}
		now := time.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("%s: not within %v: %w", what, timeout, err)
		}
		pause := min(max(now.Sub(start)/4, minPause), maxPause, deadline.Sub(now))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w after %v (last: %w)", what, ctx.Err(),
				time.Since(start).Round(time.Millisecond), err)
		case <-t.C:
		}
	}
}

// Eventually waits as Wait does, for at most timeout, and fails tb with Wait's error
// when check does not come to return nil. Call it from the test's goroutine.
func Eventually(tb T, timeout time.Duration, what string, check func() error) {
	tb.Helper()
	if err := Wait(context.Background(), timeout, what, check); err != nil {
		tb.Fatalf("%v", err)
	}
}

// EventuallyTrue waits as Eventually does for cond to hold, and fails tb if it does not
// within timeout. what says what cond means ("the retry timer armed").
func EventuallyTrue(tb T, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	Eventually(tb, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("still false")
	})
}

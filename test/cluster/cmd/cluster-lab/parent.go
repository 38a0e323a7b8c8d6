package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fatalSignals are the signals whose handling by the parent tells that it is stopping.
var fatalSignals = []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM}

// parentPoll is how often watchParent looks at the parent.
const parentPoll = 200 * time.Millisecond

// stopWithParent makes the lab stop when its parent process stops (make, or the shell
// that ran it), so `make cluster` stopped by a signal sent to make's process alone stops
// the lab too:
//   - the kernel sends SIGTERM to this process when the parent dies (parent-death
//     signal);
//   - make handles SIGINT (and SIGHUP) by resetting the signal's handler and then
//     waiting for its children, without signalling them (it counts on the terminal
//     having signalled the whole process group): the watcher stops the lab (cancel)
//     when the parent no longer catches a fatal signal it caught at start.
//
// It fails when the parent has already gone. The watcher ends with ctx.
func stopWithParent(ctx context.Context, cancel context.CancelFunc) error {
	parent := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return fmt.Errorf("the parent process (pid %d) is gone", parent)
	}
	caught, err := caughtSignals(parent)
	if err != nil {
		return err
	}
	watched := caught & fatalMask()
	if watched == 0 {
		return nil
	}
	go func() {
		// Ends when the parent stops (cancel) or with ctx.
		_ = wait.PollUntilContextCancel(ctx, parentPoll, false, func(context.Context) (bool, error) {
			now, err := caughtSignals(parent)
			if err != nil || now&watched != watched {
				cancel() // the parent is gone or handles a fatal signal
				return true, nil
			}
			return false, nil
		})
	}()
	return nil
}

// fatalMask is the SigCgt bit mask of fatalSignals.
func fatalMask() uint64 {
	var m uint64
	for _, s := range fatalSignals {
		m |= 1 << (uint(s) - 1)
	}
	return m
}

// caughtSignals returns the mask of the signals the process catches (SigCgt of
// /proc/<pid>/status).
func caughtSignals(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("parent process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("parent process %d: SigCgt %q: %w", pid, v, err)
			}
			return m, nil
		}
	}
	return 0, fmt.Errorf("parent process %d: no SigCgt in its status", pid)
}

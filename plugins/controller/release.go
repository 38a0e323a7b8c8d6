package controller

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// memoryReleaser returns the memory of a full resync to the operating system once the
// resync is done. A full resync of a large cluster allocates hundreds of MB that are
// garbage once it is committed (listings, decoded snapshots, rendered values, VPP
// requests); Go's runtime keeps the heap near its last peak and returns the rest to
// the system slowly, so without this the agent's RSS at rest stays near that peak
// for minutes. It runs on its own goroutine: a forced collection of a 100 MB heap
// takes tens of ms of CPU, which the event loop does not wait for. Requests made
// while one release runs are coalesced into one more.
type memoryReleaser struct {
	release   func() // debug.FreeOSMemory outside tests
	wake      chan struct{}
	wg        sync.WaitGroup
	requested atomic.Int64 // requests made, coalesced or not
}

func newMemoryReleaser(release func()) *memoryReleaser {
	if release == nil {
		release = debug.FreeOSMemory
	}
	return &memoryReleaser{release: release, wake: make(chan struct{}, 1)}
}

// start runs the releasing goroutine until ctx is done.
func (m *memoryReleaser) start(ctx context.Context) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-m.wake:
				m.release()
			}
		}
	}()
}

// request asks for a release without waiting for it (nothing when the controller
// was never started).
func (m *memoryReleaser) request() {
	if m == nil {
		return
	}
	m.requested.Add(1)
	select {
	case m.wake <- struct{}{}:
	default: // one is already pending
	}
}

// wait waits for the goroutine to stop (after ctx is done).
func (m *memoryReleaser) wait() {
	if m != nil {
		m.wg.Wait()
	}
}

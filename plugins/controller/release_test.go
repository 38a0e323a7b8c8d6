package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// A full resync returns its memory to the system; ordinary events do not (a forced
// collection per event would cost more than the events).
func TestFullResyncReleasesMemoryAndUpdatesDoNot(t *testing.T) {
	var releases atomic.Int32
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}, EventHandlers: []api.EventHandler{&fakeHandler{name: "a", j: &journal{}}},
		Config: configLoader{nil}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	c.releaser = newMemoryReleaser(func() { releases.Add(1) })
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	resyncNow(t, c)
	waitFor(t, "a release after the first resync", func() bool { return releases.Load() == 1 })
	for i := range 20 {
		ev := newTestEvent("Update", true, api.BestEffort, api.Forward)
		if err := c.PushEvent(ev); err != nil {
			t.Fatal(err)
		}
		if err := <-ev.WaitChan(); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	time.Sleep(20 * time.Millisecond) // a release would run on its own goroutine
	if n := releases.Load(); n != 1 {
		t.Errorf("%d releases after 20 updates, want still 1", n)
	}
	resyncNow(t, c)
	waitFor(t, "a release after the second resync", func() bool { return releases.Load() == 2 })
}

// Requests made while a release runs are coalesced into one more, and Close stops the
// goroutine.
func TestMemoryReleasesAreCoalesced(t *testing.T) {
	started, unblock := make(chan struct{}, 10), make(chan struct{})
	var releases atomic.Int32
	m := newMemoryReleaser(func() {
		releases.Add(1)
		started <- struct{}{}
		<-unblock
	})
	ctx, cancel := context.WithCancel(context.Background())
	m.start(ctx)
	m.request()
	<-started // the first release runs and blocks
	for range 5 {
		m.request()
	}
	close(unblock)
	<-started // one more for the five requests
	waitFor(t, "two releases", func() bool { return releases.Load() == 2 })
	time.Sleep(20 * time.Millisecond)
	if n := releases.Load(); n != 2 {
		t.Errorf("%d releases, want 2", n)
	}
	cancel()
	m.wait()
}

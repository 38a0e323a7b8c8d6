package controller

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
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
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "a release after the first resync", func() bool { return releases.Load() == 1 })
	for i := range 20 {
		ev := newTestEvent("Update", true, api.BestEffort, api.Forward)
		if err := c.PushEvent(ev); err != nil {
			t.Fatal(err)
		}
		if err := <-ev.WaitChan(); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	// requests are made before an event is reported done
	if n := c.releaser.requested.Load(); n != 1 {
		t.Errorf("%d release requests after a resync and 20 updates, want 1", n)
	}
	resyncNow(t, c)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "a release after the second resync", func() bool { return releases.Load() == 2 })
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
	<-started // one more for the five requests, and none pending after it
	if n := len(m.wake); n != 0 || releases.Load() != 2 {
		t.Errorf("%d releases and %d pending after 6 requests, want 2 and 0", releases.Load(), n)
	}
	cancel()
	m.wait()
}

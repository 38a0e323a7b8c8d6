package controller

import (
	"fmt"
	"sync"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// listSource is an api.EventSource over a list of events.
type listSource struct {
	mu  sync.Mutex
	evs []api.Event
}

func (s *listSource) Next() api.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.evs) == 0 {
		return nil
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev
}

func (s *listSource) add(evs ...api.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, evs...)
}

func TestEventSourcesAreDrainedInOrderInterleavedWithTheQueue(t *testing.T) {
	j := &journal{}
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}, EventHandlers: []api.EventHandler{&fakeHandler{name: "a", j: j}}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	src := &listSource{}
	wake := c.AddEventSource(src)
	resync := api.NewDBResync()
	resync.KubeState = api.NewKubeStateData("pod")
	src.add(resync)
	const n = 3 * queueSize // more than the queue holds: a source has no such limit
	for i := range n {
		src.add(newTestEvent(fmt.Sprint("S", i), false, api.BestEffort, api.Forward))
	}
	wake()
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// A blocking event pushed meanwhile is served while the source is still pending.
	blocking := newTestEvent("Blocking", true, api.BestEffort, api.Forward)
	if err := pushAndWait(t, c, blocking); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "every source event", func() bool { return len(j.get()) == n+2 })
	calls := j.get()
	if calls[0] != "a.Resync(Database Resync,1)" {
		t.Errorf("first call %s, want the resync", calls[0])
	}
	next, blockingAt := 0, -1
	for i, call := range calls[1:] {
		if call == "a.Update(Blocking)" {
			blockingAt = i
			continue
		}
		if want := fmt.Sprintf("a.Update(S%d)", next); call != want {
			t.Fatalf("call %d = %s, want %s", i+1, call, want)
		}
		next++
	}
	if blockingAt < 0 || blockingAt >= n {
		t.Errorf("the blocking event ran at %d, want before the source was drained (%d events)", blockingAt, n)
	}
}

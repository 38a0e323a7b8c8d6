package controller

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func resyncNow(t *testing.T, c *Controller) {
	t.Helper()
	ev := api.NewDBResync()
	ev.KubeState = api.NewKubeStateData("pod")
	if err := c.PushEvent(ev); err != nil {
		t.Fatal(err)
	}
}

func pushAndWait(t *testing.T, c *Controller, ev *testEvent) error {
	t.Helper()
	if err := c.PushEvent(ev); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ev.WaitChan():
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("event %s not processed", ev.name)
	}
	return nil
}

func TestEventsWaitForTheFirstDatabaseResync(t *testing.T) {
	j := &journal{}
	sched := &fakeScheduler{}
	c := startController(t, sched, nil, &fakeHandler{name: "a", j: j})
	early := newTestEvent("Early", true, api.BestEffort, api.Forward)
	if err := c.PushEvent(early); err != nil {
		t.Fatal(err)
	}
	// The loop has taken the event from its queue; had it processed it rather than park
	// it, the handler would have been called by now.
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the early event taken from the queue", func() bool { return len(c.eventQueue) == 0 })
	if len(j.get()) != 0 {
		t.Fatalf("an event was processed before the first resync: %v", j.get())
	}
	resyncNow(t, c)
	if err := <-early.WaitChan(); err != nil {
		t.Fatal(err)
	}
	want := []string{"a.Resync(Database Resync,1)", "a.Update(Early)"}
	if got := j.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	// The update staged nothing, so only the resync was committed.
	commits := sched.all()
	if len(commits) != 1 || commits[0].resync != kvs.FullResync || !commits[0].verbose || !commits[0].retry {
		t.Errorf("commits = %+v", commits)
	}
}

func TestStartupResyncDeadlineAbortsTheLoop(t *testing.T) {
	reg := health.NewRegistry()
	fc := testkit.NewClock()
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}, Health: reg.Reporter("controller"), Clock: fc,
		Config: configLoader{func(cfg *Config) { cfg.StartupResyncDeadline = Duration(30 * time.Second) }}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	parked := newTestEvent("Parked", true, api.BestEffort, api.Forward)
	if err := c.PushEvent(parked); err != nil {
		t.Fatal(err)
	}
	fc.AwaitWaiters(t, loopTimers)
	fc.Step(30*time.Second - time.Nanosecond)
	select {
	case err := <-parked.WaitChan():
		t.Fatalf("parked event answered (%v) before the deadline", err)
	default:
	}
	fc.Step(time.Nanosecond)
	if err := <-parked.WaitChan(); !errors.Is(err, ErrEventLoopIsAborting) {
		t.Fatalf("parked event result = %v", err)
	}
	later := newTestEvent("Later", true, api.BestEffort, api.Forward)
	if err := pushAndWait(t, c, later); !errors.Is(err, ErrEventLoopIsAborting) {
		t.Fatalf("later event result = %v", err)
	}
	st := reg.Status()
	if st.State != health.Error || !strings.Contains(st.Components["controller"].Reason, "no database resync before the start-up deadline") {
		t.Errorf("health = %+v", st)
	}
}

func TestHandlerOrderFollowsDirection(t *testing.T) {
	j := &journal{}
	c := startController(t, &fakeScheduler{}, nil,
		&fakeHandler{name: "a", j: j}, &fakeHandler{name: "b", j: j},
		&fakeHandler{name: "c", j: j, handles: func(ev api.Event) bool { return ev.GetName() != "Skip" }})
	resyncNow(t, c)
	for _, ev := range []*testEvent{
		newTestEvent("Fwd", true, api.BestEffort, api.Forward),
		newTestEvent("Rev", true, api.BestEffortIgnoreErrors, api.Reverse),
		newTestEvent("Skip", true, api.BestEffort, api.Reverse),
	} {
		if err := pushAndWait(t, c, ev); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"a.Resync(Database Resync,1)", "b.Resync(Database Resync,1)", "c.Resync(Database Resync,1)",
		"a.Update(Fwd)", "b.Update(Fwd)", "c.Update(Fwd)",
		"c.Update(Rev)", "b.Update(Rev)", "a.Update(Rev)",
		"b.Update(Skip)", "a.Update(Skip)",
	}
	if got := j.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls =\n%v\nwant\n%v", got, want)
	}
}

func TestRevertOnFailureRevertsHandlersThatRanInReverse(t *testing.T) {
	boom := errors.New("no IP left")
	tests := []struct {
		name        string
		failHandler string // handler failing the event
		failCommit  bool
		wantCalls   []string
		wantCommits int
	}{
		{
			name:        "handler error: earlier handlers revert, nothing committed",
			failHandler: "c",
			wantCalls: []string{"a.Update(AddPod)", "b.Update(AddPod)", "c.Update(AddPod)",
				"b.Revert(AddPod)", "a.Revert(AddPod)"},
			wantCommits: 1, // the resync only
		},
		{
			name:       "commit error: every handler reverts",
			failCommit: true,
			wantCalls: []string{"a.Update(AddPod)", "b.Update(AddPod)", "c.Update(AddPod)",
				"c.Revert(AddPod)", "b.Revert(AddPod)", "a.Revert(AddPod)"},
			wantCommits: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &journal{}
			sched := &fakeScheduler{}
			var hs []api.EventHandler
			for _, n := range []string{"a", "b", "c"} {
				n := n
				h := &fakeHandler{name: n, j: j, failWith: map[string]error{}, onUpdate: func(ev api.Event, txn api.UpdateOperations) {
					txn.Put("config/pod/"+n, wrapperspb.String("x"))
				}}
				if n == tc.failHandler {
					h.failWith["AddPod"] = boom
				}
				hs = append(hs, h)
			}
			c := startController(t, sched, nil, hs...)
			resyncNow(t, c)
			testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync", func() bool { return len(sched.all()) == 1 })
			j.lines = nil
			if tc.failCommit {
				sched.setFailKey("config/pod/b")
			}
			err := pushAndWait(t, c, newTestEvent("AddPod", true, api.RevertOnFailure, api.Forward))
			if err == nil {
				t.Fatal("AddPod succeeded")
			}
			if tc.failHandler != "" && !errors.Is(err, boom) {
				t.Errorf("error %v does not carry the handler's error", err)
			}
			if got := j.get(); !reflect.DeepEqual(got, tc.wantCalls) {
				t.Errorf("calls = %v\nwant    %v", got, tc.wantCalls)
			}
			commits := sched.all()
			if len(commits) != tc.wantCommits {
				t.Fatalf("commits = %d, want %d", len(commits), tc.wantCommits)
			}
			if tc.failCommit && !commits[1].revert {
				t.Error("the AddPod transaction was committed without WithRevert")
			}
			// RevertOnFailure events do not heal: the failure was undone.
			if c.healingScheduledForTest() {
				t.Error("healing scheduled after a reverted event")
			}
		})
	}
}

func TestBestEffortFailureHealsWithFullResync(t *testing.T) {
	j := &journal{}
	sched := &fakeScheduler{}
	h := &fakeHandler{name: "a", j: j, failWith: map[string]error{"Change": errors.New("transient")}}
	fc := testkit.NewClock()
	c := startControllerWithClock(t, sched, fc, func(cfg *Config) { cfg.DelayAfterErrorHealing = Duration(10 * time.Second) }, h)
	resyncNow(t, c)
	if err := pushAndWait(t, c, newTestEvent("Change", true, api.BestEffort, api.Forward)); err == nil {
		t.Fatal("no error")
	}
	fc.AwaitWaiters(t, loopTimers+1) // the healing timer is armed before Done
	fc.Step(10 * time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "healing resync", func() bool {
		calls := j.get()
		return len(calls) == 3 && calls[2] == "a.Resync(Healing Resync,2)"
	})
	commits := sched.all()
	if last := commits[len(commits)-1]; last.resync != kvs.FullResync {
		t.Errorf("healing committed with resync %v, want full", last.resync)
	}
}

func TestIgnoreErrorsEventDoesNotHeal(t *testing.T) {
	j := &journal{}
	h := &fakeHandler{name: "a", j: j, failWith: map[string]error{"DeletePod": errors.New("gone already")}}
	fc := testkit.NewClock()
	c := startControllerWithClock(t, &fakeScheduler{}, fc, nil, h)
	resyncNow(t, c)
	if err := pushAndWait(t, c, newTestEvent("DeletePod", true, api.BestEffortIgnoreErrors, api.Reverse)); err == nil {
		t.Fatal("error not reported to the producer")
	}
	// A healing would be armed before Done: only the loop's own timers are there.
	if n := fc.Waiters(); n != loopTimers {
		t.Errorf("%d timers, want the loop's %d (no healing armed)", n, loopTimers)
	}
	if got := j.get(); len(got) != 2 {
		t.Errorf("calls = %v, want no healing resync", got)
	}
}

func TestFailedHealingIsRetriedWithBackoffWhileOtherEventsAreServed(t *testing.T) {
	j := &journal{}
	reg := health.NewRegistry()
	sched := &fakeScheduler{}
	fc := testkit.NewClock()
	// The Service's mapping is staged by every resync and by the change; VPP refuses it.
	svcKey := "config/vpp/nat/v2/dnat44/svc"
	stageSvc := func(txn interface{ Put(string, proto.Message) }) { txn.Put(svcKey, wrapperspb.String("svc")) }
	h := &fakeHandler{name: "a", j: j,
		onResync: func(_ api.Event, _ api.KubeStateData, _ int, txn api.ResyncOperations) { stageSvc(txn) },
		onUpdate: func(ev api.Event, txn api.UpdateOperations) {
			if ev.GetName() == "Change" {
				stageSvc(txn)
			} else {
				txn.Put("config/pod/"+ev.GetName(), wrapperspb.String(ev.GetName()))
			}
		}}
	c := NewController(Deps{Log: quietLog(), Scheduler: sched, EventHandlers: []api.EventHandler{h},
		Health: reg.Reporter("controller"), Clock: fc,
		Config: configLoader{func(cfg *Config) {
			cfg.DelayAfterErrorHealing = Duration(5 * time.Second)
			cfg.MaxDelayAfterErrorHealing = Duration(20 * time.Second)
			cfg.StartupResyncDeadline = Duration(24 * time.Hour) // its timer stays armed
		}}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resyncNow(t, c)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the start-up resync", func() bool { return reg.Status().State == health.OK })

	sched.setFailKey(svcKey)
	if err := pushAndWait(t, c, newTestEvent("Change", true, api.BestEffort, api.Forward)); err == nil {
		t.Fatal("the failed change reported no error")
	}
	healings := func() int {
		n := 0
		for _, call := range j.get() {
			if strings.HasPrefix(call, "a.Resync(Healing Resync") {
				n++
			}
		}
		return n
	}
	// Each failed healing resync doubles the delay of the next one, up to the cap.
	for attempt, delay := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 20 * time.Second} {
		want := fmt.Sprintf("healing resync in %v", delay)
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, want, func() bool { return strings.Contains(reg.Status().Components["controller"].Reason, want) })
		st := reg.Status()
		if st.State != health.Degraded {
			t.Fatalf("attempt %d: state %s, want DEGRADED (alive, not ready)", attempt, st.State)
		}
		if reason := st.Components["controller"].Reason; !strings.Contains(reason, "1 values failing: "+svcKey+" (FAILED: injected failure of "+svcKey+")") {
			t.Errorf("attempt %d: reason %q does not name the failing key", attempt, reason)
		}
		if n := testutil.ToFloat64(c.metrics.failedValues); n != 1 {
			t.Errorf("failed values metric = %v, want 1", n)
		}
		// A pod whose wiring does not need the Service is served meanwhile.
		pod := fmt.Sprintf("AddPod%d", attempt)
		if err := pushAndWait(t, c, newTestEvent(pod, true, api.RevertOnFailure, api.Forward)); err != nil {
			t.Fatalf("%s while degraded: %v", pod, err)
		}
		fc.AwaitWaiters(t, loopTimers+1) // the healing timer
		fc.Step(delay - time.Millisecond)
		if n := fc.Waiters(); n != loopTimers+1 {
			t.Fatalf("the healing timer fired before its delay of %v (%d timers left)", delay, n)
		}
		fc.Step(time.Millisecond)
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the healing resync", func() bool { return healings() == attempt+1 })
	}
	if n := testutil.ToFloat64(c.metrics.healing.WithLabelValues("error")); n < 3 {
		t.Errorf("failed healing resyncs counted %v, want at least 3", n)
	}
	// VPP accepts the mapping again: the next healing resync succeeds. The fourth healing
	// must have failed and armed its timer before the clock moves, or the step would be
	// lost on a timer not yet created.
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the fifth healing armed", func() bool {
		return strings.Contains(reg.Status().Components["controller"].Reason, "healing resync in 20s (4 failed in a row)")
	})
	sched.setFailKey("")
	fc.AwaitWaiters(t, loopTimers+1)
	fc.Step(20 * time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "OK after the healing", func() bool { return reg.Status().State == health.OK })
	if n := testutil.ToFloat64(c.metrics.failedValues); n != 0 {
		t.Errorf("failed values metric = %v after the repair, want 0", n)
	}
}

func TestValuesRepairedByRetriesClearDegraded(t *testing.T) {
	reg := health.NewRegistry()
	sched := &fakeScheduler{}
	fc := testkit.NewClock()
	h := &fakeHandler{name: "a", j: &journal{}, onUpdate: func(ev api.Event, txn api.UpdateOperations) {
		txn.Put("config/"+ev.GetName(), wrapperspb.String("x"))
	}}
	c := NewController(Deps{Log: quietLog(), Scheduler: sched, EventHandlers: []api.EventHandler{h},
		Health: reg.Reporter("controller"), Clock: fc})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resyncNow(t, c)
	sched.setFailKey("config/X")
	_ = pushAndWait(t, c, newTestEvent("X", true, api.BestEffort, api.Forward))
	if st := reg.Status(); st.State != health.Degraded || !strings.Contains(st.Components["controller"].Reason, "config/X") {
		t.Fatalf("status %+v, want DEGRADED naming config/X", st)
	}
	// The scheduler's retry repaired the value (here: a later commit of it succeeded).
	sched.setFailKey("")
	_ = pushAndWait(t, c, newTestEvent("X", true, api.BestEffort, api.Forward))
	if reason := reg.Status().Components["controller"].Reason; strings.Contains(reason, "values failing") {
		t.Errorf("reason %q still names repaired values", reason)
	}
}

func TestStalledEventFailsLivenessUntilItReturns(t *testing.T) {
	reg := health.NewRegistry()
	fc := testkit.NewClock()
	release := make(chan struct{})
	entered := make(chan struct{})
	h := &fakeHandler{name: "a", j: &journal{}, onUpdate: func(ev api.Event, _ api.UpdateOperations) {
		if ev.GetName() == "Stuck" {
			close(entered)
			<-release
		}
	}}
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}, EventHandlers: []api.EventHandler{h},
		Health: reg.Reporter("controller"), Clock: fc,
		Config: configLoader{func(cfg *Config) { cfg.EventLoopStallTimeout = Duration(time.Minute) }}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resyncNow(t, c)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "OK", func() bool { return reg.Status().State == health.OK })
	stuck := newTestEvent("Stuck", true, api.BestEffort, api.Forward)
	if err := c.PushEvent(stuck); err != nil {
		t.Fatal(err)
	}
	<-entered
	fc.Step(45 * time.Second) // three watchdog ticks, under the timeout
	fc.AwaitTicksTaken(t)
	if st := reg.Status(); st.State != health.OK {
		t.Fatalf("state %s before the stall timeout, want OK", st.State)
	}
	fc.Step(30 * time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "ERROR for the stall", func() bool { return reg.Status().State == health.Error })
	if reason := reg.Status().Components["controller"].Reason; !strings.Contains(reason, "event loop stalled: event Stuck") {
		t.Errorf("reason %q", reason)
	}
	close(release)
	if err := <-stuck.WaitChan(); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "OK after the stall", func() bool { return reg.Status().State == health.OK })
}

func TestFatalHandlerErrorStopsTheLoop(t *testing.T) {
	j := &journal{}
	fatal := api.NewFatalError(errors.New("node ID allocation failed"))
	c := startController(t, &fakeScheduler{}, nil,
		&fakeHandler{name: "a", j: j, failWith: map[string]error{"Database Resync": fatal}},
		&fakeHandler{name: "b", j: j})
	resyncNow(t, c)
	err := pushAndWait(t, c, newTestEvent("X", true, api.BestEffort, api.Forward))
	if !errors.Is(err, ErrEventLoopIsAborting) {
		t.Fatalf("err = %v", err)
	}
	if got := j.get(); !reflect.DeepEqual(got, []string{"a.Resync(Database Resync,1)"}) {
		t.Errorf("handlers after the fatal error ran: %v", got)
	}
}

func TestAbortEventErrorStopsTheEventAndHeals(t *testing.T) {
	j := &journal{}
	sched := &fakeScheduler{}
	fc := testkit.NewClock()
	c := startControllerWithClock(t, sched, fc, nil,
		&fakeHandler{name: "a", j: j, failWith: map[string]error{"X": api.NewAbortEventError(errors.New("stale"))}},
		&fakeHandler{name: "b", j: j})
	resyncNow(t, c)
	if err := pushAndWait(t, c, newTestEvent("X", true, api.BestEffort, api.Forward)); !api.IsAbort(err) {
		t.Fatalf("err = %v", err)
	}
	fc.AwaitWaiters(t, loopTimers+1)
	fc.Step(time.Duration(DefaultConfig().DelayAfterErrorHealing))
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "healing", func() bool { return len(j.get()) >= 5 })
	got := j.get()
	want := []string{"a.Resync(Database Resync,1)", "b.Resync(Database Resync,1)", "a.Update(X)",
		"a.Resync(Healing Resync,2)", "b.Resync(Healing Resync,2)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v\nwant    %v", got, want)
	}
	if n := len(sched.all()); n != 2 {
		t.Errorf("commits = %d, want 2 (the aborted event commits nothing)", n)
	}
}

func TestFollowUpEventsRunBeforeQueuedEvents(t *testing.T) {
	j := &journal{}
	var c *Controller
	var pushErr error
	var once sync.Once
	h := &fakeHandler{name: "a", j: j, onUpdate: func(ev api.Event, txn api.UpdateOperations) {
		if ev.GetName() == "First" {
			once.Do(func() {
				// Through the transaction: a follow-up. Through PushEvent: an
				// ordinary event, queued behind the others.
				pushErr = api.PushFollowUp(txn, c, newTestEvent("FollowUp", false, api.BestEffort, api.Forward))
				pushErr = errors.Join(pushErr, c.PushEvent(newTestEvent("Plain", false, api.BestEffort, api.Forward)))
				if err := api.PushFollowUp(txn, c, newTestEvent("Blocking", true, api.BestEffort, api.Forward)); !errors.Is(err, ErrBlockingFollowUp) {
					pushErr = errors.Join(pushErr, errors.New("blocking follow-up accepted"))
				}
			})
		}
	}}
	c = startController(t, &fakeScheduler{}, nil, h)
	first := newTestEvent("First", false, api.BestEffort, api.Forward)
	second := newTestEvent("Second", false, api.BestEffort, api.Forward)
	_ = c.PushEvent(first)
	_ = c.PushEvent(second) // both parked until the resync, then replayed in order
	resyncNow(t, c)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "every event", func() bool { return len(j.get()) == 5 })
	if pushErr != nil {
		t.Fatal(pushErr)
	}
	want := []string{"a.Resync(Database Resync,1)", "a.Update(First)", "a.Update(FollowUp)", "a.Update(Second)", "a.Update(Plain)"}
	if got := j.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v\nwant    %v", got, want)
	}
	var followUp *EventRecord
	for _, r := range c.history.snapshot() {
		if r.Name == "FollowUp" {
			followUp = r
		}
	}
	if followUp == nil || !followUp.IsFollowUp || followUp.FollowUpTo != 1 {
		t.Errorf("follow-up record = %+v", followUp)
	}
}

func TestQueueFullIsReported(t *testing.T) {
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	// The loop is not started, so nothing drains the queue.
	for i := 0; i < queueSize; i++ {
		if err := c.PushEvent(&api.KubeStateChange{}); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if err := c.PushEvent(&api.KubeStateChange{}); !errors.Is(err, ErrEventQueueFull) {
		t.Fatalf("push beyond capacity = %v", err)
	}
}

func TestClosedControllerRefusesEvents(t *testing.T) {
	j := &journal{}
	c := startController(t, &fakeScheduler{}, nil, &fakeHandler{name: "a", j: j})
	resyncNow(t, c)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync", func() bool { return len(j.get()) == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := j.get(); !reflect.DeepEqual(got, []string{"a.Resync(Database Resync,1)", "a.Update(Shutdown)"}) {
		t.Errorf("calls = %v, want the Shutdown event handled on Close", got)
	}
	if err := c.PushEvent(&api.KubeStateChange{}); !errors.Is(err, ErrClosedController) {
		t.Errorf("push after close = %v", err)
	}
}

func TestKubeStateIsCachedAndPassedToResyncs(t *testing.T) {
	j, seen := &journal{}, &journal{}
	h := &fakeHandler{name: "a", j: j, onResync: func(ev api.Event, ks api.KubeStateData, _ int, _ api.ResyncOperations) {
		for k := range ks["pod"] {
			seen.add("%s:%s", ev.GetName(), k)
		}
	}}
	c := startController(t, &fakeScheduler{}, func(cfg *Config) { cfg.DelayAfterErrorHealing = Duration(time.Millisecond) }, h)
	resyncNow(t, c)
	_ = c.PushEvent(&api.KubeStateChange{Resource: "pod", Key: "k8s/pod/a/namespace/default", NewValue: wrapperspb.String("a")})
	_ = c.PushEvent(&api.KubeStateChange{Resource: "pod", Key: "k8s/pod/b/namespace/default", NewValue: wrapperspb.String("b")})
	_ = c.PushEvent(&api.KubeStateChange{Resource: "pod", Key: "k8s/pod/a/namespace/default", PrevValue: wrapperspb.String("a")})
	ev := api.NewExternalConfigResync("test", false)
	_ = c.PushEvent(ev)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync", func() bool { return len(j.get()) == 5 })
	if got := seen.get(); !reflect.DeepEqual(got, []string{"External Config Resync:k8s/pod/b/namespace/default"}) {
		t.Errorf("resync saw %v", got)
	}
}

func TestExternalConfigNeverOverridesTheAgentsValues(t *testing.T) {
	j := &journal{}
	sched := &fakeScheduler{}
	reg := health.NewRegistry()
	h := &fakeHandler{name: "a", j: j, onResync: func(_ api.Event, _ api.KubeStateData, _ int, txn api.ResyncOperations) {
		txn.Put("config/shared", wrapperspb.String("internal"))
	}}
	c := NewController(Deps{Log: quietLog(), Scheduler: sched, EventHandlers: []api.EventHandler{h}, Health: reg.Reporter("controller")})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db := api.NewDBResync()
	db.ExternalConfig["config/external-only"] = wrapperspb.String("ext")
	db.ExternalConfig["config/shared"] = wrapperspb.String("external")
	_ = c.PushEvent(db)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync", func() bool { return len(sched.all()) == 1 })
	got := sched.all()[0].values
	if v := got["config/shared"].(*wrapperspb.StringValue).GetValue(); v != "internal" {
		t.Errorf("value of a key both external and the agent's = %q, want the agent's", v)
	}
	if got["config/external-only"] == nil || got["config/a"] == nil {
		t.Errorf("values = %s", sortedKeys(got))
	}
	conflicts := func() (now, total float64) {
		return testutil.ToFloat64(c.metrics.extConflicts), testutil.ToFloat64(c.metrics.extConflictsTotal)
	}
	if now, total := conflicts(); now != 1 || total != 1 {
		t.Errorf("conflicts = %v (total %v), want 1 (1)", now, total)
	}
	// A change of the external value is still ignored, and not counted again; a
	// resync finds the same conflict, not a new one. Nothing of it is an error.
	change := api.NewExternalConfigChange("db", false)
	change.UpdatedKVs["config/shared"] = wrapperspb.String("external-2")
	_ = c.PushEvent(change)
	_ = c.PushEvent(&api.HealingResync{Type: api.AfterError})
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the change and the resync", func() bool { return len(sched.all()) == 2 })
	if v := sched.all()[1].values["config/shared"].(*wrapperspb.StringValue).GetValue(); v != "internal" {
		t.Errorf("value after the resync = %q, want the agent's", v)
	}
	if now, total := conflicts(); now != 1 || total != 1 {
		t.Errorf("conflicts = %v (total %v), want 1 (1)", now, total)
	}
	if st := reg.Status(); st.State != health.OK {
		t.Errorf("state %s (%v), want OK: a conflict is not an error", st.State, st.Problems())
	}
	// Removing the external values: the agent's stays, the external-only one goes.
	change = api.NewExternalConfigChange("db", false)
	change.UpdatedKVs["config/shared"] = nil
	change.UpdatedKVs["config/external-only"] = nil
	_ = c.PushEvent(change)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "change", func() bool { return len(sched.all()) == 3 })
	upd := sched.all()[2].values
	if sortedKeys(upd) != "-config/external-only,config/shared" {
		t.Fatalf("update values = %s", sortedKeys(upd))
	}
	if v := upd["config/shared"].(*wrapperspb.StringValue).GetValue(); v != "internal" {
		t.Errorf("restored value = %q", v)
	}
	if now, _ := conflicts(); now != 0 {
		t.Errorf("conflicts now = %v after the external value was removed, want 0", now)
	}
}

func TestDownstreamHealingCallsNoHandler(t *testing.T) {
	j := &journal{}
	sched := &fakeScheduler{}
	fc := testkit.NewClock()
	c := startControllerWithClock(t, sched, fc, func(cfg *Config) {
		cfg.EnablePeriodicHealing = true
		cfg.PeriodicHealingInterval = Duration(10 * time.Second)
	}, &fakeHandler{name: "a", j: j})
	resyncNow(t, c)
	fc.AwaitWaiters(t, loopTimers+1) // the periodic ticker starts after the first resync
	for i := range 2 {
		fc.Step(10 * time.Second)
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "periodic healing", func() bool { return len(sched.all()) >= 2+i })
	}
	if got := j.get(); len(got) != 1 {
		t.Errorf("handlers called by downstream healing: %v", got)
	}
	c2 := sched.all()[1]
	if c2.resync != kvs.DownstreamResync || len(c2.values) != 0 {
		t.Errorf("periodic healing commit = %+v", c2)
	}
}

func TestEventHistoryREST(t *testing.T) {
	j := &journal{}
	c := startController(t, &fakeScheduler{}, nil, &fakeHandler{name: "a", j: j})
	resyncNow(t, c)
	for _, n := range []string{"E1", "E2", "E3"} {
		_ = pushAndWait(t, c, newTestEvent(n, true, api.BestEffort, api.Forward))
	}
	mux := http.NewServeMux()
	c.registerHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		query    string
		wantCode int
		want     []string // event names in the answer
		wantText string
	}{
		{query: "", wantCode: 200, want: []string{"Database Resync", "E1", "E2", "E3"}},
		{query: "?seq-num=2", wantCode: 200, want: []string{"E2"}},
		{query: "?seq-num=42", wantCode: 404, wantText: "no event #42"},
		{query: "?from=1&to=2", wantCode: 200, want: []string{"E1", "E2"}},
		{query: "?from=1", wantCode: 400, wantText: "from and to must be given together"},
		{query: "?first=2", wantCode: 200, want: []string{"Database Resync", "E1"}},
		{query: "?last=1", wantCode: 200, want: []string{"E3"}},
		{query: "?last=10", wantCode: 200, want: []string{"Database Resync", "E1", "E2", "E3"}},
		{query: "?since=0", wantCode: 200, want: []string{"Database Resync", "E1", "E2", "E3"}},
		{query: "?until=1", wantCode: 200, want: []string{}},
		{query: "?first=two", wantCode: 400, wantText: `first: \"two\" is not a non-negative integer`},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			resp, err := http.Get(srv.URL + EventHistoryPath + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantText != "" && !strings.Contains(string(body), tc.wantText) {
				t.Errorf("body lacks %q: %s", tc.wantText, body)
			}
			for _, name := range tc.want {
				if !strings.Contains(string(body), `"Name": "`+name+`"`) {
					t.Errorf("body lacks event %s", name)
				}
			}
			if tc.want != nil && strings.Count(string(body), `"Name": `) != len(tc.want) {
				t.Errorf("body has %d events, want %d", strings.Count(string(body), `"Name": `), len(tc.want))
			}
		})
	}
}

// fakeResyncer counts resync requests.
type fakeResyncer struct {
	mu sync.Mutex
	n  int
}

func (f *fakeResyncer) RequestResync() { f.mu.Lock(); f.n++; f.mu.Unlock() }

func TestResyncREST(t *testing.T) {
	w := &fakeResyncer{}
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}, DBWatcher: w})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.registerHandlers(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", ResyncPath, nil))
	if rec.Code != 200 || w.n != 1 {
		t.Errorf("code %d, requests %d", rec.Code, w.n)
	}
}

func TestHistoryTrimKeepsInitPeriodAndRecentEvents(t *testing.T) {
	start := time.Unix(0, 0)
	cfg := DefaultConfig()
	cfg.EventHistoryAgeLimit, cfg.PermanentlyRecordedInitPeriod = 10, 5
	h := newEventHistory(cfg, start)
	for _, minute := range []int{1, 4, 6, 20, 29} {
		h.add(&EventRecord{Name: time.Duration(minute).String(), ProcessingStart: start.Add(time.Duration(minute) * time.Minute)})
	}
	h.trim(start.Add(30 * time.Minute))
	var kept []string
	for _, r := range h.snapshot() {
		kept = append(kept, r.Name)
	}
	if want := []string{"1ns", "4ns", "20ns", "29ns"}; !reflect.DeepEqual(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.DelayRetry = 0 }, "delayRetry: 0s must be positive"},
		{func(c *Config) { c.MaxRetryAttempts = 0 }, "maxRetryAttempts: 0 must be at least 1 when enableRetry is set"},
		{func(c *Config) { c.EnablePeriodicHealing = true; c.PeriodicHealingInterval = -1 }, "periodicHealingInterval: -1ns must be positive"},
		{func(c *Config) { c.StartupResyncDeadline = 0 }, "startupResyncDeadline: 0s must be positive"},
		{func(c *Config) { c.EventHistoryAgeLimit = 0 }, "eventHistoryAgeLimit: 0 must be at least 1 minute"},
		{func(c *Config) { c.MaxBatchedChanges = 0 }, "maxBatchedChanges: 0 must be at least 1 (1: no batching)"},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		tc.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if DefaultConfig().PeriodicHealingInterval != Duration(30*time.Second) {
		t.Error("periodic healing default is not the documented 30s")
	}
}

func TestDurationAcceptsNanosecondsAndStrings(t *testing.T) {
	for in, want := range map[string]time.Duration{`1000000000`: time.Second, `"5s"`: 5 * time.Second} {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err != nil || time.Duration(d) != want {
			t.Errorf("%s -> %v, %v", in, time.Duration(d), err)
		}
	}
	var d Duration
	if err := d.UnmarshalJSON([]byte(`"soon"`)); err == nil || !strings.Contains(err.Error(), `"soon" is not a duration`) {
		t.Errorf("err = %v", err)
	}
}

func TestEventBannersAreLogged(t *testing.T) {
	var buf syncBuffer
	log := logrus.New()
	log.SetOutput(&buf)
	j := &journal{}
	c := NewController(Deps{Log: log, Scheduler: &fakeScheduler{}, EventHandlers: []api.EventHandler{
		&fakeHandler{name: "a", j: j, failWith: map[string]error{"Bad": errors.New("boom")}}}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resyncNow(t, c)
	_ = pushAndWait(t, c, newTestEvent("Bad", true, api.BestEffortIgnoreErrors, api.Forward))
	out := buf.String()
	for _, want := range []string{
		`msg=">>>>>>>>>> NEW EVENT #0: Database Resync (remote DB)"`, `details="* pod: 0"`, `handlers=a`,
		`msg="<<<<<<<<<< FINALIZED EVENT #1: Bad"`, `error="a: boom"`, `level=error`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the loop goroutine to write while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConfigIsLoadedFromTheFile(t *testing.T) {
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}, Config: configLoader{func(cfg *Config) {
		cfg.DelayLocalResync = Duration(7 * time.Second)
		cfg.RemoteDBProbingInterval = Duration(time.Second)
	}}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	d, p := c.DBWatcherTiming()
	if d != 7*time.Second || p != time.Second || c.Config().MaxRetryAttempts != 3 {
		t.Errorf("timing %v/%v, config %+v", d, p, c.Config())
	}
}

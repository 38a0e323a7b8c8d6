package kvscheduler

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// asyncSetup registers "a/" values that can be created asynchronously (dependencies
// from their content) and "v/" values that cannot.
func asyncSetup(t *testing.T) (*Scheduler, *fakeDP) {
	t.Helper()
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "a", prefix: "a/", deps: depsFromValue, async: true}),
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue}),
	)
	return s, dp
}

// startsAndWaits keeps the start/wait calls of the fake, in order.
func startsAndWaits(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "start") || strings.HasPrefix(c, "wait") {
			out = append(out, c)
		}
	}
	return out
}

func TestIndependentValuesAreCreatedAsOnePipeline(t *testing.T) {
	s, dp := asyncSetup(t)
	// The three values wait for v/root; when it appears they are all started before
	// the first is waited for.
	mustCommit(t, s, set("a/1", "1;dep=v/root"), set("a/2", "2;dep=v/root"), set("a/3", "3;dep=v/root"), set("v/root", "r"))
	got := startsAndWaits(dp.takeCalls())
	want := []string{"start a/1", "start a/2", "start a/3", "wait a/1", "wait a/2", "wait a/3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	for _, k := range []string{"a/1", "a/2", "a/3"} {
		wantState(t, s, k, api.StateConfigured)
	}
}

func TestAValueOthersDependOnIsNotCreatedAsynchronously(t *testing.T) {
	s, dp := asyncSetup(t)
	// a/base has a dependent (a/top): it is created on its own, and a/top after it.
	mustCommit(t, s, set("a/base", "b"), set("a/top", "t;dep=a/base"), set("a/other", "o"))
	calls := dp.takeCalls()
	for _, c := range startsAndWaits(calls) {
		if strings.HasSuffix(c, "a/base") {
			t.Errorf("a/base, which a/top depends on, was created asynchronously: %v", calls)
		}
	}
	wantOrder(t, calls, "create a/base", "create a/top")
	for _, k := range []string{"a/base", "a/top", "a/other"} {
		wantState(t, s, k, api.StateConfigured)
	}
}

func TestFailedAsynchronousCreationFailsOnlyItsValue(t *testing.T) {
	s, dp := asyncSetup(t)
	dp.failOn("a/2", api.OpCreate, 1, false)
	_, err := commitCtx(t.Context(), s, set("a/1", "1;dep=v/root"), set("a/2", "2;dep=v/root"), set("a/3", "3;dep=v/root"), set("v/root", "r"))
	var te *api.TransactionError
	if !errors.As(err, &te) || len(te.FailedKeys()) != 1 || te.FailedKeys()[0] != "a/2" {
		t.Fatalf("commit error = %v, want a/2 failed", err)
	}
	wantState(t, s, "a/1", api.StateConfigured)
	wantState(t, s, "a/3", api.StateConfigured)
	if st := s.GetValueStatus("a/2"); st.State != api.StateFailed {
		t.Errorf("a/2 state = %v", st.State)
	}
	if !dp.has("a/1") || !dp.has("a/3") || dp.has("a/2") {
		t.Errorf("dataplane = %v", dp.state())
	}
}

// TestAsyncCreationsRecordTheirStart: creations run together record the time their start
// took (here all of it) as well as the time waited for them.
func TestAsyncCreationsRecordTheirStart(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil, dp.register(fakeDesc{name: "v", prefix: "v/", async: true,
		onCreate: func(string, proto.Message) error {
			time.Sleep(3 * time.Millisecond) // real time: the duration to be recorded
			return nil
		}}))
	seq := mustCommit(t, s, set("v/a", "a"), set("v/b", "b"), set("v/c", "c"))
	if calls := dp.takeCalls(); indexOf(calls, "start v/c") > indexOf(calls, "wait v/a") {
		t.Fatalf("not run together: %v", calls)
	}
	for _, op := range s.GetRecordedTransaction(seq).Executed {
		if op.Duration < 3*time.Millisecond {
			t.Errorf("%s recorded %v, want at least the 3ms its start took", op.Key, op.Duration)
		}
	}
}

// TestChangedValuesAreUpdatedAsOnePipeline: updates of independent values (a node
// joining changes every NodePort DNAT) are all started before the first is waited for;
// a value staged unchanged among them does not break the run and is not touched.
func TestChangedValuesAreUpdatedAsOnePipeline(t *testing.T) {
	s, dp := asyncSetup(t)
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"), set("a/4", "4"))
	dp.takeCalls()
	seq := mustCommit(t, s, set("a/1", "1b"), set("a/2", "2"), set("a/3", "3b"), set("a/4", "4b"))
	got := startsAndWaits(dp.takeCalls())
	want := []string{"start-update a/1", "start-update a/3", "start-update a/4",
		"wait-update a/1", "wait-update a/3", "wait-update a/4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	for k, v := range map[string]string{"a/1": "1b", "a/2": "2", "a/3": "3b", "a/4": "4b"} {
		wantState(t, s, k, api.StateConfigured)
		if dp.value(k) != v {
			t.Errorf("%s = %q in the dataplane, want %q", k, dp.value(k), v)
		}
	}
	var ops []string
	for _, op := range s.GetRecordedTransaction(seq).Executed {
		ops = append(ops, op.Operation.String()+" "+op.Key+" "+text(op.PrevValue)+" -> "+text(op.Value))
	}
	wantOps := []string{"UPDATE a/1 1 -> 1b", "UPDATE a/3 3 -> 3b", "UPDATE a/4 4 -> 4b"}
	if !reflect.DeepEqual(ops, wantOps) {
		t.Errorf("recorded %v, want %v", ops, wantOps)
	}
}

// TestCreationsAndUpdatesShareOnePipeline: new and changed values of one descriptor
// staged together are started together.
func TestCreationsAndUpdatesShareOnePipeline(t *testing.T) {
	s, dp := asyncSetup(t)
	mustCommit(t, s, set("a/1", "1"))
	dp.takeCalls()
	mustCommit(t, s, set("a/1", "1b"), set("a/2", "2"))
	got := startsAndWaits(dp.takeCalls())
	want := []string{"start-update a/1", "start a/2", "wait-update a/1", "wait a/2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
}

// TestFailedAsynchronousUpdateKeepsTheOldValueAndIsRetried: an update run together with
// others fails alone, the old value counts as applied (as with Update), and the retry
// applies the new one.
func TestFailedAsynchronousUpdateKeepsTheOldValueAndIsRetried(t *testing.T) {
	fc := testkit.NewClock()
	dp := newFakeDP()
	s := newTestSchedulerWithClock(t, nil, fc, dp.register(fakeDesc{name: "a", prefix: "a/", deps: depsFromValue, async: true}))
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"))
	dp.failOn("a/2", api.OpUpdate, 1, true)
	ctx := api.WithRetry(context.Background(), time.Second, 3, false)
	_, err := commitCtx(ctx, s, set("a/1", "1b"), set("a/2", "2b"), set("a/3", "3b"))
	var te *api.TransactionError
	if !errors.As(err, &te) || len(te.FailedKeys()) != 1 || te.FailedKeys()[0] != "a/2" {
		t.Fatalf("commit error = %v, want a/2 failed", err)
	}
	wantState(t, s, "a/1", api.StateConfigured)
	wantState(t, s, "a/3", api.StateConfigured)
	wantState(t, s, "a/2", api.StateRetrying)
	if dp.value("a/2") != "2" || dp.value("a/1") != "1b" || dp.value("a/3") != "3b" {
		t.Fatalf("dataplane = %v", dp.state())
	}
	fc.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "a/2 retried", func() bool { return stateOf(s, "a/2") == api.StateConfigured })
	if dp.value("a/2") != "2b" {
		t.Fatalf("a/2 = %q after the retry, want 2b", dp.value("a/2"))
	}
}

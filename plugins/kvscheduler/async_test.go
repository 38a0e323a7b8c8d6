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

// TestIndependentValuesAreDeletedAsOnePipeline: a node leaving deletes the NodePort
// translations of its address; the deletions are all started before the first is
// waited for, and each value is gone, metadata included, once its wait succeeded.
func TestIndependentValuesAreDeletedAsOnePipeline(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil, dp.register(fakeDesc{name: "a", prefix: "a/", async: true, withMeta: true}))
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"))
	dp.takeCalls()
	seq := mustCommit(t, s, del("a/1"), del("a/2"), del("a/3"))
	got := startsAndWaits(dp.takeCalls())
	want := []string{"start-delete a/1", "start-delete a/2", "start-delete a/3",
		"wait-delete a/1", "wait-delete a/2", "wait-delete a/3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	for _, k := range []string{"a/1", "a/2", "a/3"} {
		wantState(t, s, k, api.StateNonexistent)
		if dp.has(k) {
			t.Errorf("%s still in the dataplane", k)
		}
	}
	if names := s.GetMetadataMap("a").ListAllNames(); len(names) != 0 {
		t.Errorf("metadata left for %v", names)
	}
	wantOps := []string{"DELETE a/1 CONFIGURED -> REMOVED", "DELETE a/2 CONFIGURED -> REMOVED", "DELETE a/3 CONFIGURED -> REMOVED"}
	if ops := opLines(s.GetRecordedTransaction(seq)); !reflect.DeepEqual(ops, wantOps) {
		t.Errorf("recorded %v, want %v", ops, wantOps)
	}
}

// TestFullResyncDeletesObsoleteValuesAsOnePipeline: values a full resync finds in the
// dataplane but no longer in NB go as one pipeline too.
func TestFullResyncDeletesObsoleteValuesAsOnePipeline(t *testing.T) {
	s, dp := asyncSetup(t)
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"))
	dp.takeCalls()
	mustCommitCtx(t, api.WithResync(context.Background(), api.FullResync, false), s, set("a/2", "2"))
	got := startsAndWaits(dp.takeCalls())
	want := []string{"start-delete a/1", "start-delete a/3", "wait-delete a/1", "wait-delete a/3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if st := dp.state(); !reflect.DeepEqual(st, map[string]string{"a/2": "2"}) {
		t.Errorf("dataplane = %v", st)
	}
}

// TestValuesWithDependentsOrDerivedValuesAreDeletedAfterThem: in one transaction, a
// value something depends on is deleted (synchronously) only after its dependent,
// whether the dependent went first in a pipeline or is deleted by the value's own
// deletion; a value with derived values after them; the independent values around
// them are pipelined. The strict fake dataplane refuses any other order.
func TestValuesWithDependentsOrDerivedValuesAreDeletedAfterThem(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "a", prefix: "a/", deps: depsFromValue, derived: derivedFromValue("a/", "d/"), async: true}),
		dp.register(fakeDesc{name: "d", prefix: "d/", deps: depsFromValue}),
	)
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/base", "b"), set("a/top", "t;dep=a/base"),
		set("a/base2", "b2"), set("a/top2", "t2;dep=a/base2"), set("a/p", "p;der=x:1"), set("a/3", "3"), set("a/4", "4"))
	dp.takeCalls()
	mustCommit(t, s, del("a/1"), del("a/2"), del("a/top"), del("a/base"), del("a/base2"), del("a/top2"),
		del("a/p"), del("a/3"), del("a/4"))
	calls := dp.takeCalls()
	got := startsAndWaits(calls)
	want := []string{"start-delete a/1", "start-delete a/2", "start-delete a/top",
		"wait-delete a/1", "wait-delete a/2", "wait-delete a/top",
		"start-delete a/3", "start-delete a/4", "wait-delete a/3", "wait-delete a/4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want pipelines %v", calls, want)
	}
	wantOrder(t, calls, "wait-delete a/top", "delete a/base", "delete a/top2", "delete a/base2",
		"delete d/p/x", "delete a/p", "start-delete a/3")
	if st := dp.state(); len(st) != 0 {
		t.Errorf("dataplane = %v, want empty", st)
	}
	for _, k := range []string{"a/base", "a/top2", "a/p", "d/p/x"} {
		wantState(t, s, k, api.StateNonexistent)
	}
}

// TestSynchronousAndAsynchronousDescriptorsInOneTransaction: deletions of a descriptor
// without DeleteAsync end a pipeline and go one by one, in staging order; a creation
// shares a pipeline with the deletions around it.
func TestSynchronousAndAsynchronousDescriptorsInOneTransaction(t *testing.T) {
	s, dp := asyncSetup(t)
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"), set("a/4", "4"), set("v/1", "1"), set("v/2", "2"))
	dp.takeCalls()
	mustCommit(t, s, del("a/1"), del("a/2"), del("v/1"), set("a/5", "5"), del("a/3"), del("a/4"), del("v/2"))
	calls := dp.takeCalls()
	var got []string
	for _, c := range calls {
		if strings.HasPrefix(c, "start") || strings.HasPrefix(c, "wait") || strings.HasPrefix(c, "delete v/") {
			got = append(got, c)
		}
	}
	want := []string{"start-delete a/1", "start-delete a/2", "wait-delete a/1", "wait-delete a/2",
		"delete v/1",
		"start a/5", "start-delete a/3", "start-delete a/4", "wait a/5", "wait-delete a/3", "wait-delete a/4",
		"delete v/2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
	if st := dp.state(); !reflect.DeepEqual(st, map[string]string{"a/5": "5"}) {
		t.Errorf("dataplane = %v", st)
	}
	wantState(t, s, "a/5", api.StateConfigured)
}

// deleteOutcome is what a transaction of deletions left, compared between a
// descriptor with DeleteAsync and the same one without.
type deleteOutcome struct {
	err       string
	ops       []string
	states    map[string]api.ValueState
	dataplane map[string]string
	metadata  []string
}

func outcomeOf(s *Scheduler, dp *fakeDP, seq uint64, err error, keys ...string) deleteOutcome {
	o := deleteOutcome{ops: opLines(s.GetRecordedTransaction(seq)), states: map[string]api.ValueState{},
		dataplane: dp.state(), metadata: s.GetMetadataMap("a").ListAllNames()}
	if err != nil {
		o.err = err.Error()
	}
	for _, k := range keys {
		o.states[k] = stateOf(s, k)
	}
	return o
}

// wantPipelined checks that the deletions of a/1, a/2 and a/3 were started together
// (all started before the first was awaited) when async, and not otherwise.
func wantPipelined(t *testing.T, async bool, calls []string) {
	t.Helper()
	start, wait := indexOf(calls, "start-delete a/3"), indexOf(calls, "wait-delete a/1")
	if pipelined := start >= 0 && wait > start; pipelined != async {
		t.Fatalf("deletions pipelined = %v, want %v: %v", pipelined, async, calls)
	}
}

// opLines formats the executed operations of rec, one line each.
func opLines(rec *api.RecordedTxn) []string {
	if rec == nil {
		return nil
	}
	var out []string
	for _, op := range rec.Executed {
		line := op.Operation.String() + " " + op.Key + " " + op.PrevState.String() + " -> " + op.NewState.String()
		if op.Error != "" {
			line += " error " + op.Error
		}
		if op.IsRetry {
			line += " (retry)"
		}
		if op.IsRevert {
			line += " (revert)"
		}
		out = append(out, line)
	}
	return out
}

// TestFailedAsynchronousDeleteIsRetriedAsASynchronousOne: a deletion run together with
// others fails alone; the value stays in the dataplane with its metadata, RETRYING,
// and the retry deletes it: the same operations, states and errors as with Delete.
func TestFailedAsynchronousDeleteIsRetriedAsASynchronousOne(t *testing.T) {
	run := func(t *testing.T, async bool) (first, retried deleteOutcome) {
		fc := testkit.NewClock()
		dp := newFakeDP()
		s := newTestSchedulerWithClock(t, nil, fc, dp.register(fakeDesc{name: "a", prefix: "a/", async: async, withMeta: true}))
		mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"))
		dp.failOn("a/2", api.OpDelete, 1, true)
		dp.takeCalls()
		seq, err := commitCtx(api.WithRetry(context.Background(), time.Second, 3, false), s, del("a/1"), del("a/2"), del("a/3"))
		wantPipelined(t, async, dp.takeCalls())
		first = outcomeOf(s, dp, seq, err, "a/1", "a/2", "a/3")
		fc.Step(time.Second)
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "a/2 retried", func() bool { return stateOf(s, "a/2") != api.StateRetrying })
		retried = outcomeOf(s, dp, seq+1, nil, "a/2")
		return first, retried
	}
	syncFirst, syncRetried := run(t, false)
	asyncFirst, asyncRetried := run(t, true)
	if !reflect.DeepEqual(asyncFirst, syncFirst) {
		t.Errorf("failed transaction with DeleteAsync:\n%+v\nwith Delete:\n%+v", asyncFirst, syncFirst)
	}
	if !reflect.DeepEqual(asyncRetried, syncRetried) {
		t.Errorf("retry with DeleteAsync:\n%+v\nwith Delete:\n%+v", asyncRetried, syncRetried)
	}
	// and what that is:
	if !strings.Contains(asyncFirst.err, "delete a/2") || asyncFirst.states["a/2"] != api.StateRetrying ||
		asyncFirst.states["a/1"] != api.StateNonexistent || asyncFirst.states["a/3"] != api.StateNonexistent {
		t.Errorf("after the failure: %+v", asyncFirst)
	}
	if !reflect.DeepEqual(asyncFirst.dataplane, map[string]string{"a/2": "2"}) || !reflect.DeepEqual(asyncFirst.metadata, []string{"2"}) {
		t.Errorf("after the failure a/2 alone should stay, with its metadata: %+v", asyncFirst)
	}
	if len(asyncRetried.dataplane) != 0 || len(asyncRetried.metadata) != 0 || asyncRetried.states["a/2"] != api.StateNonexistent ||
		!reflect.DeepEqual(asyncRetried.ops, []string{"DELETE a/2 RETRYING -> REMOVED (retry)"}) {
		t.Errorf("after the retry: %+v", asyncRetried)
	}
}

// TestFailedAsynchronousDeleteIsRevertedAsASynchronousOne: WithRevert, a deletion of a
// pipeline fails; the values deleted before and after it are created again, and
// everything is recorded as with Delete.
func TestFailedAsynchronousDeleteIsRevertedAsASynchronousOne(t *testing.T) {
	run := func(t *testing.T, async bool) deleteOutcome {
		dp := newFakeDP()
		s := newTestScheduler(t, nil, dp.register(fakeDesc{name: "a", prefix: "a/", async: async, withMeta: true}))
		mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"))
		dp.failOn("a/2", api.OpDelete, 1, false)
		dp.takeCalls()
		seq, err := commitCtx(api.WithRevert(context.Background()), s, del("a/1"), del("a/2"), del("a/3"))
		wantPipelined(t, async, dp.takeCalls())
		return outcomeOf(s, dp, seq, err, "a/1", "a/2", "a/3")
	}
	syncOut, asyncOut := run(t, false), run(t, true)
	if !reflect.DeepEqual(asyncOut, syncOut) {
		t.Errorf("with DeleteAsync:\n%+v\nwith Delete:\n%+v", asyncOut, syncOut)
	}
	if !reflect.DeepEqual(asyncOut.dataplane, map[string]string{"a/1": "1", "a/2": "2", "a/3": "3"}) || asyncOut.err == "" {
		t.Errorf("not reverted: %+v", asyncOut)
	}
	for k, st := range asyncOut.states {
		if st != api.StateConfigured {
			t.Errorf("%s is %v after the revert", k, st)
		}
	}
}

// TestAsynchronousDeleteWaitsWithTheMetadataInPlace: while a deletion is awaited, the
// value's metadata is still in the descriptor's map (other values may need it until
// VPP confirms); it goes once the wait succeeded.
func TestAsynchronousDeleteWaitsWithTheMetadataInPlace(t *testing.T) {
	dp := newFakeDP()
	kd := dp.register(fakeDesc{name: "a", prefix: "a/", async: true, withMeta: true})
	var s *Scheduler
	var during []string
	startDelete := kd.DeleteAsync
	kd.DeleteAsync = func(key string, v proto.Message, md api.Metadata) func() error {
		wait := startDelete(key, v, md)
		return func() error {
			during = s.GetMetadataMap("a").ListAllNames()
			return wait()
		}
	}
	s = newTestScheduler(t, nil, kd)
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"))
	mustCommit(t, s, del("a/1"), del("a/2"))
	if !reflect.DeepEqual(during, []string{"2"}) {
		t.Errorf("metadata while a/2's deletion was awaited = %v, want [2]", during)
	}
	if names := s.GetMetadataMap("a").ListAllNames(); len(names) != 0 {
		t.Errorf("metadata left for %v", names)
	}
}

// TestBrokenDeleteAsyncFailsItsValueOnly: a DeleteAsync that panics or returns no wait
// function fails the deletion of its value, which stays; the others of the pipeline
// are deleted.
func TestBrokenDeleteAsyncFailsItsValueOnly(t *testing.T) {
	dp := newFakeDP()
	kd := dp.register(fakeDesc{name: "a", prefix: "a/", async: true})
	startDelete := kd.DeleteAsync
	kd.DeleteAsync = func(key string, v proto.Message, md api.Metadata) func() error {
		switch key {
		case "a/2":
			return nil
		case "a/3":
			panic("boom")
		}
		return startDelete(key, v, md)
	}
	s := newTestScheduler(t, nil, kd)
	mustCommit(t, s, set("a/1", "1"), set("a/2", "2"), set("a/3", "3"), set("a/4", "4"))
	_, err := commitCtx(context.Background(), s, del("a/1"), del("a/2"), del("a/3"), del("a/4"))
	var te *api.TransactionError
	if !errors.As(err, &te) || !reflect.DeepEqual(te.FailedKeys(), []string{"a/2", "a/3"}) {
		t.Fatalf("commit error = %v, want a/2 and a/3 failed", err)
	}
	for _, want := range []string{"DeleteAsync returned no wait function", "descriptor panicked: boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if st := dp.state(); !reflect.DeepEqual(st, map[string]string{"a/2": "2", "a/3": "3"}) {
		t.Errorf("dataplane = %v", st)
	}
	wantState(t, s, "a/2", api.StateFailed)
	wantState(t, s, "a/3", api.StateFailed)
}

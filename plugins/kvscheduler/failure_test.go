package kvscheduler

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func TestFailedOperationWithoutRetryStaysFailed(t *testing.T) {
	fc := testkit.NewClock()
	s, dp := basicSetupWithClock(t, nil, fc)
	dp.failOn("v/a", api.OpCreate, 1, true)
	_, err := commitCtx(context.Background(), s, set("v/a", "a"), set("v/b", "b;dep=v/a"), set("v/c", "c"))
	var te *api.TransactionError
	if !errors.As(err, &te) || len(te.KVErrors) != 1 {
		t.Fatalf("err = %v", err)
	}
	if ke := te.KVErrors[0]; ke.Key != "v/a" || ke.Operation != api.OpCreate || !errors.Is(ke.Error, errInjected) {
		t.Fatalf("KVError = %+v", ke)
	}
	if !errors.Is(err, errInjected) {
		t.Fatal("errors.Is does not see the descriptor error through TransactionError")
	}
	st := s.GetValueStatus("v/a")
	if st.State != api.StateFailed || st.LastOperation != api.OpCreate || st.Error == "" {
		t.Fatalf("status = %+v", st)
	}
	wantState(t, s, "v/b", api.StatePending) // its dependency failed
	wantState(t, s, "v/c", api.StateConfigured)
	if n := fc.Waiters(); n != 0 {
		t.Fatalf("%d timers armed, want none: nobody retries", n)
	}
	fc.Step(time.Hour)
	syncQueue(t, s)
	wantState(t, s, "v/a", api.StateFailed)
	// the next change of the value tries again
	mustCommit(t, s, set("v/a", "a2"))
	wantState(t, s, "v/b", api.StateConfigured)
}

func TestRetryWithExponentialBackoff(t *testing.T) {
	fc := testkit.NewClock()
	s, dp := basicSetupWithClock(t, nil, fc)
	dp.failOn("v/a", api.OpCreate, 3, true)
	ctx := api.WithRetry(context.Background(), 2*time.Second, 5, true)
	seq, err := commitCtx(ctx, s, set("v/a", "a"), set("v/b", "b;dep=v/a"))
	if err == nil {
		t.Fatal("first attempt should fail")
	}
	if st := stateOf(s, "v/a"); st != api.StateRetrying {
		t.Fatalf("state after failure = %v, want RETRYING", st)
	}
	// backoff: 2s, 4s, 8s after each failure, not a nanosecond earlier
	dp.takeCalls()
	for i, delay := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
		fc.AwaitWaiters(t, 1)
		fc.Step(delay - time.Nanosecond)
		syncQueue(t, s)
		if n := len(dp.takeCalls()); n != 0 {
			t.Fatalf("retry %d ran before its delay of %v", i+1, delay)
		}
		fc.Step(time.Nanosecond)
		syncQueue(t, s)
		if calls := dp.takeCalls(); indexOf(calls, "create v/a") < 0 {
			t.Fatalf("retry %d did not run after %v: %v", i+1, delay, calls)
		}
	}
	wantState(t, s, "v/b", api.StateConfigured)
	wantState(t, s, "v/a", api.StateConfigured)

	var retries []*api.RecordedTxn
	for _, r := range s.GetTransactionHistory(time.Time{}, time.Time{}) {
		if r.TxnType == api.RetryFailedOps {
			retries = append(retries, r)
		}
	}
	if len(retries) != 3 {
		t.Fatalf("want 3 retry transactions, got %d", len(retries))
	}
	for i, r := range retries {
		if !r.Executed[0].IsRetry || r.Executed[0].Key != "v/a" {
			t.Fatalf("retry %d ops = %+v", i, r.Executed)
		}
	}
	// the records carry the clock's times
	prev := s.GetRecordedTransaction(seq).Stop
	for i, r := range retries {
		if gap, want := r.Start.Sub(prev), 2*time.Second<<i; gap != want {
			t.Fatalf("retry %d recorded %v after the previous failure, want %v", i+1, gap, want)
		}
		prev = r.Stop
	}
	if !retries[2].Executed[0].IsRetry || retries[2].Executed[0].Error != "" {
		t.Fatalf("last retry should succeed: %+v", retries[2].Executed[0])
	}
	// the dependent was created by the successful retry
	if indexOf(opsKeys(retries[2]), "v/b") < 0 {
		t.Fatalf("dependent not created in the successful retry: %v", opsKeys(retries[2]))
	}
}

func opsKeys(r *api.RecordedTxn) []string {
	var keys []string
	for _, op := range r.Executed {
		keys = append(keys, op.Key)
	}
	return keys
}

func TestRetryGivesUpAfterMaxCount(t *testing.T) {
	fc := testkit.NewClock()
	s, dp := basicSetupWithClock(t, nil, fc)
	dp.failOn("v/a", api.OpCreate, -1, true)
	ctx := api.WithRetry(context.Background(), time.Second, 2, false)
	if _, err := commitCtx(ctx, s, set("v/a", "a")); err == nil {
		t.Fatal("want failure")
	}
	for range 2 {
		fc.AwaitWaiters(t, 1)
		fc.Step(time.Second)
		syncQueue(t, s)
	}
	wantState(t, s, "v/a", api.StateFailed)
	if n := fc.Waiters(); n != 0 {
		t.Fatalf("%d timers armed after the last retry, want none", n)
	}
	n := 0
	for _, c := range dp.takeCalls() {
		if c == "create v/a" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("create attempted %d times, want 1 + 2 retries", n)
	}
}

func TestNonRetriableFailureIsNotRetried(t *testing.T) {
	fc := testkit.NewClock()
	s, dp := basicSetupWithClock(t, nil, fc)
	dp.failOn("v/a", api.OpCreate, 1, false)
	ctx := api.WithRetry(context.Background(), time.Millisecond, 5, false)
	if _, err := commitCtx(ctx, s, set("v/a", "a")); !errors.Is(err, errFatal) {
		t.Fatalf("err = %v", err)
	}
	wantState(t, s, "v/a", api.StateFailed)
	if n := fc.Waiters(); n != 0 {
		t.Fatalf("%d retry timers armed for a non-retriable failure", n)
	}
	fc.Step(time.Hour)
	syncQueue(t, s)
	wantState(t, s, "v/a", api.StateFailed)
	if dp.has("v/a") {
		t.Fatal("non-retriable failure was retried")
	}
}

func TestRetryIsDroppedWhenTheValueChangedMeanwhile(t *testing.T) {
	fc := testkit.NewClock()
	s, dp := basicSetupWithClock(t, nil, fc)
	dp.failOn("v/a", api.OpCreate, 1, true)
	ctx := api.WithRetry(context.Background(), 20*time.Millisecond, 3, false)
	if _, err := commitCtx(ctx, s, set("v/a", "a")); err == nil {
		t.Fatal("want failure")
	}
	mustCommit(t, s, del("v/a"))
	fc.Step(20 * time.Millisecond) // the retry is queued now, and finds the value changed
	syncQueue(t, s)
	if dp.has("v/a") {
		t.Fatal("stale retry re-created a deleted value")
	}
	wantState(t, s, "v/a", api.StateNonexistent)
}

func TestRevertRestoresThePreviousDataplane(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a1"), set("v/b", "b1;dep=v/a"), set("v/c", "c1"),
		set("v/if", "if;der=ip:1.1.1.1"), set("v/old", "old"))
	before := dp.state()
	statusBefore := map[string]api.ValueState{}
	for k := range before {
		statusBefore[k] = stateOf(s, k)
	}
	// a mixed transaction: update, recreate-through-derived change, create, delete;
	// the last create fails after everything else succeeded
	dp.failOn("v/zz-new2", api.OpCreate, 1, true)
	_, err := commitCtx(api.WithRevert(context.Background()), s,
		set("v/a", "a2"), set("v/if", "if;der=ip:2.2.2.2"), del("v/old"), set("v/c", "c2"),
		set("v/new", "new;dep=v/a"), set("v/zz-new2", "x"))
	var te *api.TransactionError
	if !errors.As(err, &te) || te.KVErrors[0].Key != "v/zz-new2" {
		t.Fatalf("err = %v", err)
	}
	if after := dp.state(); !maps.Equal(before, after) {
		t.Fatalf("dataplane not reverted:\n before %v\n after  %v", before, after)
	}
	for k, st := range statusBefore {
		wantState(t, s, k, st)
	}
	wantState(t, s, "v/new", api.StateNonexistent)
	wantState(t, s, "v/zz-new2", api.StateNonexistent)
	// the revert operations are recorded as such
	rec := s.GetRecordedTransaction(te.SeqNum)
	reverts := 0
	for _, op := range rec.Executed {
		if op.IsRevert {
			reverts++
		}
	}
	if reverts == 0 || !rec.WithRevert {
		t.Fatalf("no revert ops recorded:\n%s", rec)
	}
	// the NB state is the old one too: an upstream resync changes nothing
	dp.takeCalls()
	ctx := api.WithResync(context.Background(), api.UpstreamResync, false)
	mustCommitCtx(t, ctx, s, set("v/a", "a1"), set("v/b", "b1;dep=v/a"), set("v/c", "c1"),
		set("v/if", "if;der=ip:1.1.1.1"), set("v/old", "old"))
	if calls := dp.takeCalls(); len(calls) != 0 {
		t.Fatalf("graph differs from the reverted NB state: %v", calls)
	}
}

func mustCommitCtx(tb testing.TB, ctx context.Context, s *Scheduler, kvs ...kv) uint64 {
	tb.Helper()
	seq, err := commitCtx(ctx, s, kvs...)
	if err != nil {
		tb.Fatalf("commit: %v", err)
	}
	return seq
}

func TestRevertWithInvalidValueAppliesNothing(t *testing.T) {
	dp := newFakeDP()
	validate := func(key string, v proto.Message) error {
		if text(v) == "bad" {
			return errors.New("bad value")
		}
		return nil
	}
	s := newTestScheduler(t, nil, dp.register(fakeDesc{name: "v", prefix: "v/", validate: validate}))
	mustCommit(t, s, set("v/a", "a"))
	dp.takeCalls()
	_, err := commitCtx(api.WithRevert(context.Background()), s, set("v/a", "a2"), set("v/b", "bad"), set("v/c", "c"))
	var te *api.TransactionError
	if !errors.As(err, &te) || len(te.KVErrors) != 1 || te.KVErrors[0].Key != "v/b" {
		t.Fatalf("err = %v", err)
	}
	if calls := dp.takeCalls(); len(calls) != 0 {
		t.Fatalf("all-or-nothing transaction touched the dataplane: %v", calls)
	}
	wantState(t, s, "v/a", api.StateConfigured)
	wantState(t, s, "v/b", api.StateNonexistent)
	wantState(t, s, "v/c", api.StateNonexistent)
}

func TestRevertIsRejectedWithResync(t *testing.T) {
	s, _ := basicSetup(t, nil)
	ctx := api.WithRevert(api.WithResync(context.Background(), api.FullResync, false))
	if _, err := commitCtx(ctx, s, set("v/a", "a")); !errors.Is(err, api.ErrRevertNotSupportedWithResync) {
		t.Fatalf("err = %v", err)
	}
}

func TestRevertAfterFailedRecreateRestoresDependents(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "base", prefix: "base/", noUpdate: true}),
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue}))
	mustCommit(t, s, set("base/x", "1"), set("v/user", "u;dep=base/x"))
	before := dp.state()
	dp.failOn("base/x", api.OpCreate, 1, true) // the create half of the recreate fails
	_, err := commitCtx(api.WithRevert(context.Background()), s, set("base/x", "2"))
	if err == nil {
		t.Fatal("want failure")
	}
	if after := dp.state(); !maps.Equal(before, after) {
		t.Fatalf("not reverted:\n before %v\n after  %v", before, after)
	}
	wantState(t, s, "v/user", api.StateConfigured)
	wantState(t, s, "base/x", api.StateConfigured)
}

func TestFailedDeleteKeepsTheValue(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"), set("v/b", "b;dep=v/a"))
	dp.failOn("v/a", api.OpDelete, 1, true)
	if _, err := commitCtx(context.Background(), s, del("v/a")); err == nil {
		t.Fatal("want failure")
	}
	st := s.GetValueStatus("v/a")
	if st.State != api.StateFailed || st.LastOperation != api.OpDelete {
		t.Fatalf("status = %+v", st)
	}
	// still in the dataplane, so its dependent is too (deleted, then re-created)
	if !dp.has("v/a") || !dp.has("v/b") {
		t.Fatalf("dataplane = %v", dp.state())
	}
	wantState(t, s, "v/b", api.StateConfigured)
	// a full resync completes the delete
	mustCommitCtx(t, api.WithResync(context.Background(), api.FullResync, false), s, set("v/b", "b;dep=v/a"))
	if dp.has("v/a") || dp.has("v/b") {
		t.Fatalf("dataplane = %v", dp.state())
	}
	wantState(t, s, "v/b", api.StatePending)
}

func TestRevertRestoresDependentsTouchedOnTheWay(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"), set("v/b", "b;dep=v/a"))
	before := dp.state()
	// deleting a: b is deleted first, then a's Delete fails, and putting b back fails
	// too. b was not staged, but the transaction touched it: revert must restore it.
	dp.failOn("v/a", api.OpDelete, 1, true)
	dp.failOn("v/b", api.OpCreate, 1, true)
	_, err := commitCtx(api.WithRevert(context.Background()), s, del("v/a"))
	if err == nil {
		t.Fatal("want failure")
	}
	if after := dp.state(); !maps.Equal(before, after) {
		t.Fatalf("not reverted:\n before %v\n after  %v", before, after)
	}
	wantState(t, s, "v/b", api.StateConfigured)
}

func TestFailureCausedByAnSBNotificationIsRetriedWithTheValuesPolicy(t *testing.T) {
	fc := testkit.NewClock()
	dp := newFakeDP()
	s := newTestSchedulerWithClock(t, nil, fc,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue}),
		dp.register(fakeDesc{name: "s", prefix: "s/"}),
	)
	ctx := api.WithRetry(context.Background(), time.Second, 3, false)
	if _, err := commitCtx(ctx, s, set("v/a", "a;dep=s/0")); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "v/a", api.StatePending)
	// The dependency appears on its own; creating the value then fails once.
	dp.failOn("v/a", api.OpCreate, 1, true)
	dp.plant("s/0", str("sb"), api.FromSB)
	if err := s.PushSBNotification(api.KVWithMetadata{Key: "s/0", Value: str("sb")}); err != nil {
		t.Fatal(err)
	}
	syncQueue(t, s)
	wantState(t, s, "v/a", api.StateRetrying)
	fc.Step(time.Second)
	syncQueue(t, s)
	wantState(t, s, "v/a", api.StateConfigured)
	if !dp.has("v/a") {
		t.Fatal("v/a not created by the retry")
	}
}

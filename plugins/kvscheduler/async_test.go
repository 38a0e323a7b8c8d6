package kvscheduler

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

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
		if strings.HasPrefix(c, "start ") || strings.HasPrefix(c, "wait ") {
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
			time.Sleep(3 * time.Millisecond)
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

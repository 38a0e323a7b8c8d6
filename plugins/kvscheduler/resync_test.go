package kvscheduler

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func resyncCtx(kind api.ResyncType) context.Context {
	return api.WithResync(context.Background(), kind, false)
}

func TestFullResyncAgainstTheDataplane(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/keep", "k"), set("v/drift", "d1"), set("v/lost", "l"),
		set("v/user-of-lost", "u;dep=v/lost"), set("v/dropped", "x"))
	// the dataplane changes behind the scheduler's back
	dp.plant("v/drift", str("d-changed"), api.FromNB)
	dp.remove("v/lost")
	dp.plant("v/sb-only", str("s"), api.FromSB)        // exists on its own: kept
	dp.plant("v/stale-nb", str("z"), api.FromNB)       // ours from an earlier life: deleted
	dp.plant("v/unknown", str("?"), api.UnknownOrigin) // nobody knows: left alone
	dp.plant("d/orphan/x", str("o"), api.FromNB)       // derived descriptor's leftover: deleted
	dp.takeCalls()

	desired := []kv{set("v/keep", "k"), set("v/drift", "d1"), set("v/lost", "l"),
		set("v/user-of-lost", "u;dep=v/lost"), set("v/new", "n;dep=v/sb-only")}
	mustCommitCtx(t, resyncCtx(api.FullResync), s, desired...)

	want := map[string]string{
		"v/keep": "k", "v/drift": "d1", "v/lost": "l", "v/user-of-lost": "u;dep=v/lost",
		"v/new": "n;dep=v/sb-only", "v/sb-only": "s", "v/unknown": "?",
	}
	if got := dp.state(); !maps.Equal(got, want) {
		t.Fatalf("dataplane after full resync:\n got  %v\n want %v", got, want)
	}
	calls := dp.takeCalls()
	for _, c := range []string{"create v/keep", "update v/keep", "delete v/keep"} {
		if indexOf(calls, c) >= 0 {
			t.Fatalf("unchanged value touched (%s): %v", c, calls)
		}
	}
	wantState(t, s, "v/sb-only", api.StateObtained)
	wantState(t, s, "v/unknown", api.StateDiscovered)
	wantState(t, s, "v/stale-nb", api.StateNonexistent)
	wantState(t, s, "v/dropped", api.StateNonexistent)
	wantState(t, s, "v/new", api.StateConfigured)

	// the lost value was MISSING before its re-creation
	rec := lastTxn(t, s)
	found := false
	for _, op := range rec.Executed {
		if op.Key == "v/lost" && op.Operation == api.OpCreate && op.PrevState == api.StateMissing {
			found = true
		}
	}
	if !found {
		t.Fatalf("no CREATE of v/lost from MISSING in\n%s", rec)
	}
	if rec.ValueCount != len(desired) || len(rec.Values) != 0 {
		t.Fatalf("non-verbose resync recorded values: count %d, values %d", rec.ValueCount, len(rec.Values))
	}

	// a second full resync with the same state does nothing
	mustCommitCtx(t, resyncCtx(api.FullResync), s, desired...)
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"retrieve v", "retrieve d"}) {
		t.Fatalf("no-change resync made calls: %v", calls)
	}
}

func TestFullResyncAdoptsExistingValuesAfterRestart(t *testing.T) {
	dp := newFakeDP()
	// first agent life
	s1 := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue, derived: derivedFromValue("v/", "d/")}),
		dp.register(fakeDesc{name: "d", prefix: "d/", noRetrieve: true}))
	desired := []kv{set("v/if", "if;der=ip:1.1.1.1"), set("v/route", "r;dep=d/if/ip")}
	mustCommitCtx(t, resyncCtx(api.FullResync), s1, desired...)
	before := dp.state()
	_ = s1.Close()
	dp.takeCalls()

	// second life: empty graph, same dataplane. The derived value has no Retrieve:
	// it is known through its parent.
	dp2 := dp
	dp2.descs = nil
	s2 := newTestScheduler(t, nil,
		dp2.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue, derived: derivedFromValue("v/", "d/")}),
		dp2.register(fakeDesc{name: "d", prefix: "d/", noRetrieve: true}))
	mustCommitCtx(t, resyncCtx(api.FullResync), s2, desired...)
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"retrieve v"}) {
		t.Fatalf("restart resync made calls: %v", calls)
	}
	if after := dp.state(); !maps.Equal(before, after) {
		t.Fatalf("dataplane changed: %v -> %v", before, after)
	}
	for _, k := range []string{"v/if", "d/if/ip", "v/route"} {
		wantState(t, s2, k, api.StateConfigured)
	}
	// and the adopted derived value is managed: removing the address deletes it
	mustCommit(t, s2, set("v/if", "if"))
	if dp.has("d/if/ip") || dp.has("v/route") {
		t.Fatalf("derived value or its dependent kept: %v", dp.state())
	}
}

func lastTxn(tb testing.TB, s *Scheduler) *api.RecordedTxn {
	tb.Helper()
	h := s.GetTransactionHistory(time.Time{}, time.Time{})
	if len(h) == 0 {
		tb.Fatal("empty history")
	}
	return h[len(h)-1]
}

func TestUpstreamResyncUsesTheCacheOnly(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"), set("v/b", "b"), set("v/c", "c;dep=v/b"))
	dp.remove("v/a") // invisible to an upstream resync
	dp.takeCalls()
	mustCommitCtx(t, resyncCtx(api.UpstreamResync), s, set("v/a", "a"), set("v/c", "c2;dep=v/b"), set("v/b", "b"), set("v/d", "d"))
	calls := dp.takeCalls()
	if slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "retrieve") }) {
		t.Fatalf("upstream resync called Retrieve: %v", calls)
	}
	if !slices.Equal(calls, []string{"update v/c", "create v/d"}) {
		t.Fatalf("calls = %v", calls)
	}
	// keys missing from the staged state are deleted
	mustCommitCtx(t, resyncCtx(api.UpstreamResync), s, set("v/a", "a"), set("v/c", "c2;dep=v/b"))
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"delete v/c", "delete v/b", "delete v/d"}) {
		t.Fatalf("calls = %v", calls)
	}
	wantState(t, s, "v/c", api.StatePending)
}

func TestDownstreamResyncReappliesTheNBState(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"), set("v/b", "b;dep=v/a"), set("v/if", "i;der=ip:1"))
	want := dp.state()
	dp.remove("v/a")
	dp.plant("v/b", str("tampered;dep=v/a"), api.FromNB)
	dp.remove("d/if/ip")
	dp.plant("v/junk", str("j"), api.FromNB)
	dp.plant("v/sb", str("s"), api.FromSB)
	mustCommitCtx(t, resyncCtx(api.DownstreamResync), s)
	want["v/sb"] = "s"
	if got := dp.state(); !maps.Equal(got, want) {
		t.Fatalf("after downstream resync:\n got  %v\n want %v", got, want)
	}
	_, err := commitCtx(resyncCtx(api.DownstreamResync), s, set("v/x", "x"))
	if !errors.Is(err, api.ErrCombinedDownstreamResyncWithChange) {
		t.Fatalf("downstream resync with values: err = %v", err)
	}
	if dp.has("v/x") {
		t.Fatal("rejected transaction applied a value")
	}
}

func TestRetrieveOrderFollowsRetrieveDependencies(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "route", prefix: "route/", retrieveDeps: []string{"iface", "vrf"}}),
		dp.register(fakeDesc{name: "iface", prefix: "iface/", retrieveDeps: []string{"vrf"}}),
		dp.register(fakeDesc{name: "vrf", prefix: "vrf/"}),
		dp.register(fakeDesc{name: "nodump", prefix: "nd/", noRetrieve: true}),
	)
	mustCommitCtx(t, resyncCtx(api.FullResync), s)
	if got := dp.takeCalls(); !slices.Equal(got, []string{"retrieve vrf", "retrieve iface", "retrieve route"}) {
		t.Fatalf("retrieve order = %v", got)
	}
}

func TestRetrieveCycleIsReported(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "a", prefix: "a/", retrieveDeps: []string{"b"}}),
		dp.register(fakeDesc{name: "b", prefix: "b/", retrieveDeps: []string{"a"}}))
	_, err := commitCtx(resyncCtx(api.FullResync), s, set("a/1", "x"))
	if !errors.Is(err, api.ErrRetrieveCycle) {
		t.Fatalf("err = %v", err)
	}
	if !dp.has("a/1") {
		t.Fatal("resync not applied despite the cycle")
	}
}

func TestFailedRetrieveIsReportedAndItsValuesTrusted(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"))
	dp.remove("v/a")
	dp.failOn("v", api.OpUndefined, 1, true) // Retrieve of descriptor "v" fails
	_, err := commitCtx(resyncCtx(api.FullResync), s, set("v/a", "a"), set("v/b", "b"))
	if err == nil || !strings.Contains(err.Error(), "retrieve v") {
		t.Fatalf("err = %v", err)
	}
	if !dp.has("v/b") {
		t.Fatal("resync not applied")
	}
	if dp.has("v/a") {
		t.Fatal("value re-created although the dataplane could not be read")
	}
}

func TestSBNotificationResolvesPendingDependency(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue}),
		dp.register(fakeDesc{name: "lease", prefix: "lease/", derived: func(key string, v proto.Message) []api.KeyValuePair {
			return []api.KeyValuePair{{Key: "prop/" + key + "/bound", Value: str("ok")}}
		}}),
	)
	mustCommit(t, s, set("v/route", "r;dep=lease/eth0"), set("v/nat", "n;dep=prop/lease/eth0/bound"))
	wantState(t, s, "v/route", api.StatePending)
	dp.plant("lease/eth0", str("10.1.1.5"), api.FromSB) // the dataplane gets a lease...
	if err := s.PushSBNotification(api.KVWithMetadata{Key: "lease/eth0", Value: str("10.1.1.5")}); err != nil {
		t.Fatal(err)
	}
	syncQueue(t, s)
	wantState(t, s, "lease/eth0", api.StateObtained)
	wantState(t, s, "v/route", api.StateConfigured)
	wantState(t, s, "v/nat", api.StateConfigured)
	calls := dp.takeCalls()
	if indexOf(calls, "create lease/eth0") >= 0 {
		t.Fatalf("SB value was created through its descriptor: %v", calls)
	}
	// the lease is lost: its dependents go back to pending
	dp.remove("lease/eth0")
	if err := s.PushSBNotification(api.KVWithMetadata{Key: "lease/eth0"}); err != nil {
		t.Fatal(err)
	}
	syncQueue(t, s)
	wantState(t, s, "v/route", api.StatePending)
	wantState(t, s, "v/nat", api.StatePending)
	wantState(t, s, "lease/eth0", api.StateNonexistent)
	if dp.has("v/route") || dp.has("v/nat") {
		t.Fatalf("dependents kept: %v", dp.state())
	}
	var last *api.RecordedTxn
	for _, r := range s.GetTransactionHistory(time.Time{}, time.Time{}) {
		if r.TxnType == api.SBNotification {
			last = r
		}
	}
	if last == nil || last.Values[0].Key != "lease/eth0" {
		t.Fatalf("SB notification not recorded: %v", last)
	}
	// an SB value is never deleted by a resync
	dp.plant("lease/eth1", str("x"), api.FromSB)
	if err := s.PushSBNotification(api.KVWithMetadata{Key: "lease/eth1", Value: str("x")}); err != nil {
		t.Fatal(err)
	}
	mustCommitCtx(t, resyncCtx(api.UpstreamResync), s)
	wantState(t, s, "lease/eth1", api.StateObtained)
	mustCommitCtx(t, resyncCtx(api.FullResync), s)
	wantState(t, s, "lease/eth1", api.StateObtained)
	if !dp.has("lease/eth1") {
		t.Fatal("full resync deleted an SB value")
	}
}

func TestSBNotificationFromInsideACallbackDoesNotDeadlock(t *testing.T) {
	dp := newFakeDP()
	var s *Scheduler
	s = newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue, onCreate: func(key string, v proto.Message) error {
			if key == "v/dhcp" {
				dp.plant("lease/x", str("l"), api.FromSB)
				return s.PushSBNotification(api.KVWithMetadata{Key: "lease/x", Value: str("l")})
			}
			return nil
		}}),
		dp.register(fakeDesc{name: "lease", prefix: "lease/"}))
	mustCommit(t, s, set("v/dhcp", "d"), set("v/user", "u;dep=lease/x"))
	syncQueue(t, s)
	wantState(t, s, "v/user", api.StateConfigured)
}

package kvscheduler

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// basicSetup registers "v/" values with dependencies read from their content and
// "d/" values derived from them (also with dependencies from their content).
func basicSetup(t *testing.T, cfg *Config) (*Scheduler, *fakeDP) {
	t.Helper()
	return basicSetupWithClock(t, cfg, nil)
}

// basicSetupWithClock is basicSetup with the given clock (nil: real).
func basicSetupWithClock(t *testing.T, cfg *Config, clk clock.WithDelayedExecution) (*Scheduler, *fakeDP) {
	t.Helper()
	dp := newFakeDP()
	s := newTestSchedulerWithClock(t, cfg, clk,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue, derived: derivedFromValue("v/", "d/")}),
		dp.register(fakeDesc{name: "d", prefix: "d/", deps: depsFromValue}),
	)
	return s, dp
}

func TestChainIsCreatedInDependencyOrderWhateverTheStagingOrder(t *testing.T) {
	s, dp := basicSetup(t, nil)
	// c needs b needs a; staged backwards
	mustCommit(t, s, set("v/c", "c;dep=v/b"), set("v/b", "b;dep=v/a"), set("v/a", "a"))
	wantOrder(t, dp.takeCalls(), "create v/a", "create v/b", "create v/c")
	for _, k := range []string{"v/a", "v/b", "v/c"} {
		wantState(t, s, k, api.StateConfigured)
	}
	// deleting the root deletes the chain top-down, dependents first
	mustCommit(t, s, del("v/a"))
	wantOrder(t, dp.takeCalls(), "delete v/c", "delete v/b", "delete v/a")
	wantState(t, s, "v/a", api.StateNonexistent)
	wantState(t, s, "v/b", api.StatePending)
	wantState(t, s, "v/c", api.StatePending)
	// the root comes back: the chain is rebuilt bottom-up
	mustCommit(t, s, set("v/a", "a2"))
	wantOrder(t, dp.takeCalls(), "create v/a", "create v/b", "create v/c")
	if got := dp.value("v/a"); got != "a2" {
		t.Fatalf("v/a = %q, want a2", got)
	}
}

// TestValueWhoseNewDependencyAppearsWhileItIsDeletedIsCreatedAgain: a value's new
// content needs a value staged after it in the same transaction, so its old content
// is deleted first; deleting it moves a dependent to its own new content, which creates
// that very value. The value's new content then goes in within the transaction instead
// of staying PENDING with every dependency present (found by
// TestRandomTransactionsConvergeUnderRandomFailures, seed 1795661764685133057).
func TestValueWhoseNewDependencyAppearsWhileItIsDeletedIsCreatedAgain(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/base", "base"), set("v/a", "a;dep=v/base"), set("v/dep", "d;dep=v/a"))
	dp.takeCalls()
	// v/a now also needs v/new; v/dep moves from v/a to v/new
	mustCommit(t, s, set("v/a", "a2;dep=v/base,v/new"), set("v/new", "n"), set("v/dep", "d2;dep=v/new"))
	wantOrder(t, dp.takeCalls(), "create v/new", "delete v/a", "create v/a")
	for _, k := range []string{"v/a", "v/new", "v/dep"} {
		wantState(t, s, k, api.StateConfigured)
	}
	if got := dp.value("v/a"); got != "a2;dep=v/base,v/new" {
		t.Fatalf("v/a = %q in the dataplane, want its new content", got)
	}
}

func TestDiamondDependencies(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/top", "top;dep=v/left,v/right"), set("v/left", "l;dep=v/root"),
		set("v/right", "r;dep=v/root"), set("v/root", "root"))
	calls := dp.takeCalls()
	wantOrder(t, calls, "create v/root", "create v/left", "create v/top")
	wantOrder(t, calls, "create v/root", "create v/right", "create v/top")
	if n := len(calls); n != 4 {
		t.Fatalf("want 4 creates, got %v", calls)
	}

	mustCommit(t, s, del("v/root"))
	calls = dp.takeCalls()
	wantOrder(t, calls, "delete v/top", "delete v/left", "delete v/root")
	wantOrder(t, calls, "delete v/top", "delete v/right", "delete v/root")
	for _, k := range []string{"v/top", "v/left", "v/right"} {
		wantState(t, s, k, api.StatePending)
	}
	st := s.GetValueStatus("v/left")
	if !slices.Equal(st.Details, []string{"needs-v/root: v/root"}) {
		t.Fatalf("pending details = %v, want the missing v/root", st.Details)
	}

	// one side only: top must stay pending
	mustCommit(t, s, set("v/right", "r"))
	wantState(t, s, "v/right", api.StateConfigured)
	wantState(t, s, "v/top", api.StatePending)
	if st := s.GetValueStatus("v/top"); !slices.Equal(st.Details, []string{"needs-v/left: v/left"}) {
		t.Fatalf("top details = %v", st.Details)
	}
	mustCommit(t, s, set("v/root", "root"))
	wantState(t, s, "v/top", api.StateConfigured)
	if !dp.has("v/top") || !dp.has("v/left") {
		t.Fatalf("diamond not rebuilt: %v", dp.state())
	}
}

func TestPendingValueIsCreatedWhenItsDependencyArrivesLater(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/route", "r;dep=v/iface"))
	wantState(t, s, "v/route", api.StatePending)
	if dp.has("v/route") {
		t.Fatal("pending value reached the dataplane")
	}
	if got := s.GetValueStatus("v/route").Details; len(got) != 1 || !strings.Contains(got[0], "v/iface") {
		t.Fatalf("details %v do not name the missing dependency", got)
	}
	mustCommit(t, s, set("v/other", "x"))
	wantState(t, s, "v/route", api.StatePending)
	mustCommit(t, s, set("v/iface", "i"))
	wantState(t, s, "v/route", api.StateConfigured)
	wantOrder(t, dp.takeCalls(), "create v/iface", "create v/route")
}

func TestDependencyRemovedByUpdateOfTheDependent(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"), set("v/b", "b;dep=v/a"))
	// b changes to need a missing value: it must leave the dataplane
	mustCommit(t, s, set("v/b", "b;dep=v/zzz"))
	wantState(t, s, "v/b", api.StatePending)
	if dp.has("v/b") {
		t.Fatal("v/b kept although its new dependency is missing")
	}
	// and back
	mustCommit(t, s, set("v/b", "b2;dep=v/a"))
	wantState(t, s, "v/b", api.StateConfigured)
	if got := dp.value("v/b"); got != "b2;dep=v/a" {
		t.Fatalf("v/b = %q", got)
	}
}

func TestAnyOfDependency(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/user", "u;any=v/net/"))
	wantState(t, s, "v/user", api.StatePending)
	mustCommit(t, s, set("v/net/1", "n1"), set("v/net/2", "n2"))
	wantState(t, s, "v/user", api.StateConfigured)
	mustCommit(t, s, del("v/net/1"))
	wantState(t, s, "v/user", api.StateConfigured) // v/net/2 still there
	dp.takeCalls()
	mustCommit(t, s, del("v/net/2"))
	wantOrder(t, dp.takeCalls(), "delete v/user", "delete v/net/2")
	wantState(t, s, "v/user", api.StatePending)
	mustCommit(t, s, set("v/netX", "not under the prefix"))
	wantState(t, s, "v/user", api.StatePending)
	mustCommit(t, s, set("v/net/3", "n3"))
	wantState(t, s, "v/user", api.StateConfigured)
}

func TestAnyOfWithSelector(t *testing.T) {
	dp := newFakeDP()
	even := func(k string) bool { return strings.HasSuffix(k, "0") || strings.HasSuffix(k, "2") }
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "n", prefix: "n/"}),
		dp.register(fakeDesc{name: "u", prefix: "u/", deps: func(string, proto.Message) []api.Dependency {
			return []api.Dependency{{Label: "even", AnyOf: api.AnyOfDependency{KeyPrefixes: []string{"n/"}, KeySelector: even}}}
		}}),
		dp.register(fakeDesc{name: "w", prefix: "w/", deps: func(string, proto.Message) []api.Dependency {
			// selector only, no prefix
			return []api.Dependency{{Label: "any-n1", AnyOf: api.AnyOfDependency{KeySelector: func(k string) bool { return k == "n/1" }}}}
		}}),
	)
	mustCommit(t, s, set("u/x", "x"), set("w/x", "x"), set("n/1", "1"))
	wantState(t, s, "u/x", api.StatePending)
	wantState(t, s, "w/x", api.StateConfigured)
	mustCommit(t, s, set("n/2", "2"))
	wantState(t, s, "u/x", api.StateConfigured)
	mustCommit(t, s, del("n/1"))
	wantState(t, s, "w/x", api.StatePending)
	if dp.has("w/x") {
		t.Fatal("w/x kept without n/1")
	}
}

func TestDependencyCycleStaysPending(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a;dep=v/b"), set("v/b", "b;dep=v/a"))
	wantState(t, s, "v/a", api.StatePending)
	wantState(t, s, "v/b", api.StatePending)
	if len(dp.state()) != 0 {
		t.Fatalf("cycle reached the dataplane: %v", dp.state())
	}
}

func TestDerivedValuesFollowTheirParent(t *testing.T) {
	s, dp := basicSetup(t, nil)
	// parent derives d/if1/ip1 (needs v/vrf) and d/if1/ip2 (no deps)
	mustCommit(t, s, set("v/if1", "if;der=ip1:10.0.0.1+dep=v/vrf|ip2:10.0.0.2"))
	wantOrder(t, dp.takeCalls(), "create v/if1", "create d/if1/ip2")
	wantState(t, s, "d/if1/ip1", api.StatePending)
	wantState(t, s, "d/if1/ip2", api.StateConfigured)
	if got := dp.value("d/if1/ip2"); got != "10.0.0.2" {
		t.Fatalf("derived value = %q", got)
	}

	// the derived value's own dependency arrives
	mustCommit(t, s, set("v/vrf", "vrf"))
	wantOrder(t, dp.takeCalls(), "create v/vrf", "create d/if1/ip1")

	// parent update: ip2 dropped (before Update), ip3 added (after), ip1 unchanged
	mustCommit(t, s, set("v/if1", "if2;der=ip1:10.0.0.1+dep=v/vrf|ip3:10.0.0.3"))
	calls := dp.takeCalls()
	wantOrder(t, calls, "delete d/if1/ip2", "update v/if1", "create d/if1/ip3")
	if indexOf(calls, "delete d/if1/ip1") >= 0 || indexOf(calls, "create d/if1/ip1") >= 0 {
		t.Fatalf("unchanged derived value touched: %v", calls)
	}
	wantState(t, s, "d/if1/ip2", api.StateNonexistent)

	// derived value content change -> update of the derived value
	mustCommit(t, s, set("v/if1", "if2;der=ip1:10.0.0.9+dep=v/vrf|ip3:10.0.0.3"))
	wantOrder(t, dp.takeCalls(), "update v/if1", "update d/if1/ip1")

	// parent deleted: derived values go first
	mustCommit(t, s, del("v/if1"))
	calls = dp.takeCalls()
	wantOrder(t, calls, "delete d/if1/ip1", "delete v/if1")
	wantOrder(t, calls, "delete d/if1/ip3", "delete v/if1")
	for _, k := range []string{"d/if1/ip1", "d/if1/ip3"} {
		wantState(t, s, k, api.StateNonexistent)
	}

	// a derived key cannot be set by NB
	mustCommit(t, s, set("v/if1", "if;der=ip1:x"))
	_, err := commitCtx(context.Background(), s, set("d/if1/ip1", "y"))
	var te *api.TransactionError
	if !errors.As(err, &te) || te.KVErrors[0].Key != "d/if1/ip1" {
		t.Fatalf("setting a derived key: err = %v", err)
	}
	if got := dp.value("d/if1/ip1"); got != "x" {
		t.Fatalf("derived value overwritten by NB: %q", got)
	}
}

// TestUpdateTouchesOnlyTheDerivedValuesThatChange: an update of a parent with many
// derived values validates and applies only the derived values that are new or
// different; the others are not even validated again. A derived value that failed is
// still retried by the update.
func TestUpdateTouchesOnlyTheDerivedValuesThatChange(t *testing.T) {
	dp := newFakeDP()
	validated := map[string]int{}
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue, derived: derivedFromValue("v/", "d/")}),
		dp.register(fakeDesc{name: "d", prefix: "d/", deps: depsFromValue, validate: func(key string, _ proto.Message) error {
			validated[key]++
			return nil
		}}),
	)
	mustCommit(t, s, set("v/if", "if;der=a:1|b:2|c:3"))
	dp.takeCalls()
	clear(validated)

	mustCommit(t, s, set("v/if", "if;der=a:1|b:2|c:3|d:4"))
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"update v/if", "create d/if/d"}) {
		t.Errorf("adding one derived value: calls %v", calls)
	}
	if !maps.Equal(validated, map[string]int{"d/if/d": 1}) {
		t.Errorf("adding one derived value validated %v", validated)
	}

	clear(validated)
	mustCommit(t, s, set("v/if", "if;der=a:1|b:9|c:3|d:4"))
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"update v/if", "update d/if/b"}) {
		t.Errorf("changing one derived value: calls %v", calls)
	}
	if !maps.Equal(validated, map[string]int{"d/if/b": 1}) {
		t.Errorf("changing one derived value validated %v", validated)
	}

	// c fails (not retriable); the next update of the parent tries it again although
	// its content is the same.
	mustCommit(t, s, set("v/if", "if;der=a:1|b:9|d:4"))
	dp.failOn("d/if/c", api.OpCreate, 1, false)
	if _, err := commitCtx(context.Background(), s, set("v/if", "if;der=a:1|b:9|c:3|d:4")); err == nil {
		t.Fatal("the injected failure did not fail the commit")
	}
	if st := stateOf(s, "d/if/c"); st == api.StateConfigured {
		t.Fatalf("d/if/c is %v although its creation failed", st)
	}
	dp.takeCalls()
	mustCommit(t, s, set("v/if", "if2;der=a:1|b:9|c:3|d:4"))
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"update v/if", "create d/if/c"}) {
		t.Errorf("update after a failure: calls %v", calls)
	}
	wantState(t, s, "d/if/c", api.StateConfigured)
}

func TestDependencyOnDerivedValueAndProperty(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "if", prefix: "if/", derived: func(key string, v proto.Message) []api.KeyValuePair {
			// a property (no descriptor selects "prop/") saying the interface has an IP
			if strings.Contains(text(v), "ip") {
				return []api.KeyValuePair{{Key: "prop/" + key + "/has-ip", Value: str("yes")}}
			}
			return nil
		}}),
		dp.register(fakeDesc{name: "unnum", prefix: "unnum/", deps: depsFromValue}),
	)
	mustCommit(t, s, set("unnum/x", "u;dep=prop/if/eth0/has-ip"), set("if/eth0", "noaddr"))
	wantState(t, s, "unnum/x", api.StatePending)
	mustCommit(t, s, set("if/eth0", "ip"))
	wantState(t, s, "unnum/x", api.StateConfigured)
	// property gone with the address: dependent deleted before the interface update
	dp.takeCalls()
	mustCommit(t, s, set("if/eth0", "none"))
	wantOrder(t, dp.takeCalls(), "delete unnum/x", "update if/eth0")
	wantState(t, s, "unnum/x", api.StatePending)
}

func TestUpdateVersusRecreate(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "upd", prefix: "upd/"}),
		dp.register(fakeDesc{name: "norm", prefix: "norm/", noUpdate: true}),
		dp.register(fakeDesc{name: "rec", prefix: "rec/", recreate: func(_ string, o, n proto.Message) bool {
			return strings.HasPrefix(text(n), "type2")
		}}),
		dp.register(fakeDesc{name: "cmp", prefix: "cmp/", comparator: func(_ string, a, b proto.Message) bool {
			return strings.EqualFold(text(a), text(b))
		}}),
		dp.register(fakeDesc{name: "dep", prefix: "dep/", deps: depsFromValue}),
	)
	mustCommit(t, s, set("upd/1", "a"), set("norm/1", "a"), set("rec/1", "type1"), set("cmp/1", "abc"),
		set("dep/on-norm", "x;dep=norm/1"), set("dep/on-rec", "x;dep=rec/1"), set("dep/on-upd", "x;dep=upd/1"))
	dp.takeCalls()

	tests := []struct {
		name      string
		change    kv
		wantCalls []string
		wantOp    api.TxnOperation
	}{
		{"Update in place keeps dependents", set("upd/1", "b"), []string{"update upd/1"}, api.OpUpdate},
		{"no Update: dependents deleted first, re-created after", set("norm/1", "b"),
			[]string{"delete dep/on-norm", "delete norm/1", "create norm/1", "create dep/on-norm"}, api.OpRecreate},
		{"UpdateWithRecreate false: Update", set("rec/1", "type1-x"), []string{"update rec/1"}, api.OpUpdate},
		{"UpdateWithRecreate true: recreate", set("rec/1", "type2"),
			[]string{"delete dep/on-rec", "delete rec/1", "create rec/1", "create dep/on-rec"}, api.OpRecreate},
		{"comparator says equal: nothing", set("cmp/1", "ABC"), nil, api.OpCreate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustCommit(t, s, tc.change)
			if got := dp.takeCalls(); !slices.Equal(got, tc.wantCalls) {
				t.Fatalf("calls = %v, want %v", got, tc.wantCalls)
			}
			if got := s.GetValueStatus(tc.change.key).LastOperation; got != tc.wantOp {
				t.Fatalf("last op = %v, want %v", got, tc.wantOp)
			}
		})
	}
	wantState(t, s, "dep/on-norm", api.StateConfigured)
	wantState(t, s, "dep/on-rec", api.StateConfigured)
}

func TestUnregisteredKeyIsUnimplementedNotAnError(t *testing.T) {
	s, _ := basicSetup(t, nil)
	mustCommit(t, s, set("nobody/x", "x"), set("v/dep", "y;dep=nobody/x"))
	st := s.GetValueStatus("nobody/x")
	if st.State != api.StateUnimplemented || st.Error != api.ErrUnregisteredValue.Error() {
		t.Fatalf("status = %+v", st)
	}
	wantState(t, s, "v/dep", api.StatePending)
}

func TestValidationFailure(t *testing.T) {
	dp := newFakeDP()
	validate := func(key string, v proto.Message) error {
		if strings.Contains(text(v), "bad") {
			return api.NewInvalidValueError(errors.New("bad content"), "value")
		}
		return nil
	}
	s := newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "v", prefix: "v/", validate: validate, deps: depsFromValue}))
	mustCommit(t, s, set("v/a", "good"), set("v/b", "b;dep=v/a"))

	_, err := commitCtx(context.Background(), s, set("v/a", "bad"), set("v/c", "fine"))
	var te *api.TransactionError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a TransactionError", err)
	}
	if len(te.KVErrors) != 1 || te.KVErrors[0].Key != "v/a" {
		t.Fatalf("KVErrors = %+v", te.KVErrors)
	}
	var ive *api.InvalidValueError
	if !errors.As(err, &ive) || !strings.Contains(err.Error(), "v/a") {
		t.Fatalf("error %v does not carry the InvalidValueError and the key", err)
	}
	st := s.GetValueStatus("v/a")
	if st.State != api.StateInvalid || !slices.Equal(st.Details, []string{"value"}) || st.Error == "" {
		t.Fatalf("status = %+v", st)
	}
	// the previous valid version is removed along with its dependent; the rest applied
	if dp.has("v/a") || dp.has("v/b") {
		t.Fatalf("invalid value's old version or dependent left: %v", dp.state())
	}
	wantState(t, s, "v/b", api.StatePending)
	wantState(t, s, "v/c", api.StateConfigured)
	// fixed
	mustCommit(t, s, set("v/a", "good2"))
	wantState(t, s, "v/b", api.StateConfigured)
}

func TestMetadataMapIsReadableByOtherDescriptors(t *testing.T) {
	dp := newFakeDP()
	var s *Scheduler
	var seen []any
	routes := dp.register(fakeDesc{name: "route", prefix: "route/", deps: depsFromValue,
		onCreate: func(key string, v proto.Message) error {
			md, ok := s.GetMetadataMap("iface").GetValue("eth0")
			if !ok {
				return errors.New("interface metadata missing")
			}
			seen = append(seen, md)
			// reading the status from a callback must not deadlock
			_ = s.GetValueStatus("iface/eth0")
			return nil
		}})
	s = newTestScheduler(t, nil,
		dp.register(fakeDesc{name: "iface", prefix: "iface/", withMeta: true}), routes)
	if s.GetMetadataMap("route") != nil || s.GetMetadataMap("nope") != nil {
		t.Fatal("metadata map for a descriptor without WithMetadata")
	}
	mustCommit(t, s, set("route/r1", "r;dep=iface/eth0"), set("iface/eth0", "e"))
	wantState(t, s, "route/r1", api.StateConfigured)
	mm := s.GetMetadataMap("iface")
	if got := mm.ListAllNames(); !slices.Equal(got, []string{"eth0"}) {
		t.Fatalf("names = %v", got)
	}
	md, _ := mm.GetValue("eth0")
	if len(seen) != 1 || seen[0] != md || md == nil {
		t.Fatalf("route saw metadata %v, map holds %v", seen, md)
	}
	mustCommit(t, s, del("iface/eth0"))
	if _, ok := mm.GetValue("eth0"); ok {
		t.Fatal("metadata kept after delete")
	}
}

func TestRepeatedKeyInOneTxnLastValueWins(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "1"), set("v/a", "2"), del("v/b"), set("v/a", "3"))
	if got := dp.value("v/a"); got != "3" {
		t.Fatalf("v/a = %q", got)
	}
	if calls := dp.takeCalls(); !slices.Equal(calls, []string{"create v/a"}) {
		t.Fatalf("calls = %v", calls)
	}
	_, err := commitCtx(context.Background(), s, set("", "x"))
	if !errors.Is(err, api.ErrEmptyKey) {
		t.Fatalf("empty key: err = %v", err)
	}
}

// A full resync in which a dependent (an interface bound to ACL a) is rebound to a new
// value (ACL x) and the old one goes away: the dependent is updated in place, after x
// is created and before a is deleted, whatever the order of the keys. It never leaves
// the dataplane in between (an interface without its ACLs would be unfiltered).
func TestFullResyncMovesADependentToItsNewDependencyBeforeDeletingTheOld(t *testing.T) {
	for _, c := range []struct{ old, new string }{{"v/a", "v/x"}, {"v/x", "v/a"}} {
		t.Run(c.old+"->"+c.new, func(t *testing.T) {
			s, dp := basicSetup(t, nil)
			mustCommit(t, s, set(c.old, "acl"), set("v/i", "i;dep="+c.old))
			dp.takeCalls()
			mustCommitCtx(t, api.WithResync(context.Background(), api.FullResync, false), s,
				set(c.new, "acl"), set("v/i", "i;dep="+c.new))
			calls := dp.takeCalls()
			wantOrder(t, calls, "create "+c.new, "update v/i", "delete "+c.old)
			for _, call := range calls {
				if call == "delete v/i" || call == "create v/i" {
					t.Fatalf("the dependent left the dataplane: %v", calls)
				}
			}
			wantState(t, s, "v/i", api.StateConfigured)
			if got := dp.value("v/i"); got != "i;dep="+c.new {
				t.Fatalf("v/i = %q", got)
			}
		})
	}
}

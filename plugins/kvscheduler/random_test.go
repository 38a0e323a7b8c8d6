package kvscheduler

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

var seedFlag = flag.Int64("seed", 0, "seed of TestRandomTransactions (0: from KVSCHED_SEED or the clock)")

func randomSeed(t *testing.T) int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if env := os.Getenv("KVSCHED_SEED"); env != "" {
		v, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			t.Fatalf("KVSCHED_SEED=%q: %v", env, err)
		}
		return v
	}
	return time.Now().UnixNano()
}

// TestRandomTransactions applies thousands of random transactions (random values
// with random dependencies and derived values over a bounded key space, deletes,
// SB notifications, resyncs of all kinds, tampering with the dataplane, injected
// failures with and without revert) and checks after each step that:
//   - every failure reported was injected (a wrong operation order would make the
//     strict fake dataplane refuse an operation);
//   - every object in the dataplane has its dependencies and parent there;
//   - the scheduler's cached view equals the dataplane;
//   - while no injected failure has fired since the last heal, the dataplane is
//     exactly the model: every desired value whose dependencies exist
//     (transitively), nothing else but SB values;
//   - a reverted transaction leaves the dataplane as it was;
//   - with simulation on, the plan equals the execution of every clean transaction.
//
// Heal steps clear the injected failures and run a full resync, after which the
// exact check must hold again.
func TestRandomTransactions(t *testing.T) {
	seed := randomSeed(t)
	t.Logf("seed %d (rerun with: go test ./plugins/kvscheduler/ -run TestRandomTransactions -seed=%d)", seed, seed)
	steps := 6000
	if testing.Short() {
		steps = 500
	}
	variants := []struct {
		name            string
		simulate        bool
		derivedRetrieve bool
		async           bool
	}{
		{"derived-with-retrieve", false, true, false},
		{"derived-follow-parent+simulation", true, false, false},
		{"async", false, true, true},
	}
	for vi, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newRandWorld(t, seed+int64(vi), v.simulate, v.derivedRetrieve, v.async)
			for i := 0; i < steps; i++ {
				w.step(i)
				if t.Failed() {
					t.Fatalf("failed at step %d (seed %d)", i, seed)
				}
			}
			w.heal(steps)
			t.Logf("%d steps: %d txns failed as injected, %d reverted, %d resyncs, %d heals",
				steps, w.stats.failed, w.stats.reverted, w.stats.resyncs, w.stats.heals)
		})
	}
}

// TestRandomTransactionsConvergeUnderRandomFailures runs the same random transactions
// (changes, SB notifications, full resyncs) against two dataplanes: one that never
// fails, and one where 10% of all create, update and delete operations fail
// transiently, with the scheduler retrying (WithRetry; its timers on a fake clock that
// advances one second per step). The invariants hold at every step; once the retries
// are done, the failing dataplane holds exactly what the clean one holds, which is the
// model, and no value is left FAILED or RETRYING.
func TestRandomTransactionsConvergeUnderRandomFailures(t *testing.T) {
	seed := randomSeed(t)
	t.Logf("seed %d (rerun with: go test ./plugins/kvscheduler/ -run TestRandomTransactionsConvergeUnderRandomFailures -seed=%d)", seed, seed)
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	for vi, v := range []struct {
		name                   string
		derivedRetrieve, async bool
	}{
		{"derived-with-retrieve", true, false},
		{"derived-follow-parent", false, false},
		{"async", true, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			fc := testkit.NewClock()
			clean := newRandWorld(t, seed+int64(vi), false, v.derivedRetrieve, v.async)
			faulty := newRandWorldWithClock(t, seed+int64(vi), false, v.derivedRetrieve, v.async, fc)
			failRng := rand.New(rand.NewSource(seed - int64(vi)))
			faulty.dp.randomFail = func() bool { return failRng.Intn(10) == 0 }
			retry := func(ctx context.Context) context.Context {
				return api.WithRetry(ctx, time.Second, 30, false)
			}
			for i := 0; i < steps; i++ {
				for _, w := range []*randWorld{clean, faulty} {
					w.failureStep(i, retry)
				}
				fc.Step(time.Second)
				syncQueue(t, clean.s)
				syncQueue(t, faulty.s)
				clean.checkInvariants(i)
				faulty.checkInvariants(i)
				if t.Failed() {
					t.Fatalf("failed at step %d (seed %d)", i, seed)
				}
			}
			for n := 0; fc.Waiters() > 0; n++ {
				if n == 100 {
					t.Fatalf("retries still scheduled after 100 more rounds (seed %d)", seed)
				}
				fc.Step(time.Minute)
				syncQueue(t, faulty.s)
			}
			got, want := faulty.normalize(faulty.dp.state()), faulty.normalize(clean.dp.state())
			if !maps.Equal(got, want) {
				t.Fatalf("after the retries, the failing dataplane differs from the clean one (seed %d)\n%s\nstatus: %s\n%s",
					seed, diffMaps(got, want), faulty.statusOf(got, want), faulty.timelines(got, want))
			}
			if model := faulty.normalize(faulty.expected()); !maps.Equal(got, model) {
				t.Fatalf("after the retries, dataplane != model (seed %d)\n%s", seed, diffMaps(got, model))
			}
			for _, st := range faulty.s.AllValueStatuses("") {
				if st.State == api.StateFailed || st.State == api.StateRetrying {
					t.Errorf("%s left %v: %s", st.Key, st.State, st.Error)
				}
			}
			t.Logf("%d steps: %d operations failed at random and were retried", steps, faulty.dp.firedCount())
		})
	}
}

// timelines lists the recorded operations on the keys where got and want differ.
func (w *randWorld) timelines(got, want map[string]string) string {
	var out []string
	keys := map[string]bool{}
	for k := range want {
		keys[k] = got[k] != want[k]
	}
	for k := range got {
		keys[k] = keys[k] || got[k] != want[k]
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !keys[k] {
			continue
		}
		for _, e := range w.s.KeyTimeline(k) {
			out = append(out, fmt.Sprintf("  #%d %v %s %s -> %v err %q retry %v", e.SeqNum, e.TxnType, e.Op.Operation, k, e.Op.NewState, e.Op.Error, e.Op.IsRetry))
		}
	}
	return strings.Join(out, "\n")
}

// failureStep is one step of TestRandomTransactionsConvergeUnderRandomFailures: the
// random choices depend only on w.rng, so two worlds with one seed take the same steps.
func (w *randWorld) failureStep(i int, retry func(context.Context) context.Context) {
	switch x := w.rng.Intn(100); {
	case x < 85:
		kvs := w.randChanges()
		_, err := commitCtx(retry(context.Background()), w.s, kvs...)
		w.checkErr(i, err)
		applyModel(w.nb, kvs)
	case x < 95:
		k := fmt.Sprintf("s/%d", w.rng.Intn(randSB))
		var v proto.Message
		if _, ok := w.sb[k]; ok {
			w.dp.remove(k)
			delete(w.sb, k)
		} else {
			c := fmt.Sprintf("sb%d", w.rng.Intn(2))
			w.dp.plant(k, str(c), api.FromSB)
			w.sb[k] = c
			v = str(c)
		}
		if err := w.s.PushSBNotification(api.KVWithMetadata{Key: k, Value: v}); err != nil {
			w.t.Fatal(err)
		}
	default:
		_, err := commitCtx(retry(api.WithResync(context.Background(), api.FullResync, false)), w.s, modelKVs(w.nb)...)
		w.checkErr(i, err)
	}
}

const (
	randKeys = 24
	randSB   = 4
)

type randWorld struct {
	t        *testing.T
	rng      *rand.Rand
	s        *Scheduler
	dp       *fakeDP
	simulate bool
	// derivedRetrieve: "d/" values have their own Retrieve; otherwise they are known
	// through their parent's Retrieve only.
	derivedRetrieve bool

	nb map[string]string // model: desired NB values
	sb map[string]string // model: SB values present

	healthy  bool // no injected failure fired since the last heal
	lastFire int
	stats    struct{ failed, reverted, resyncs, heals int }
}

func newRandWorld(t *testing.T, seed int64, simulate, derivedRetrieve, async bool) *randWorld {
	return newRandWorldWithClock(t, seed, simulate, derivedRetrieve, async, nil)
}

// newRandWorldWithClock is newRandWorld whose scheduler runs on clk (nil: real).
func newRandWorldWithClock(t *testing.T, seed int64, simulate, derivedRetrieve, async bool, clk clock.WithDelayedExecution) *randWorld {
	dp := newFakeDP()
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	cfg.EnableTxnSimulation = simulate
	vDerived := derivedFromValue("v/", "d/")
	s := newTestSchedulerWithClock(t, &cfg, clk,
		dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue, retrieveDerived: !derivedRetrieve, async: async,
			recreate: func(_ string, _, n proto.Message) bool { return strings.HasPrefix(text(n), "R") },
			derived: func(key string, v proto.Message) []api.KeyValuePair {
				out := vDerived(key, v)
				if strings.Contains(text(v), ";prop") {
					out = append(out, api.KeyValuePair{Key: "p/" + key + "/prop", Value: str("p")})
				}
				return out
			}}),
		dp.register(fakeDesc{name: "d", prefix: "d/", deps: depsFromValue, noRetrieve: !derivedRetrieve}),
		dp.register(fakeDesc{name: "s", prefix: "s/"}),
	)
	return &randWorld{t: t, rng: rand.New(rand.NewSource(seed)), s: s, dp: dp, simulate: simulate,
		derivedRetrieve: derivedRetrieve, nb: map[string]string{}, sb: map[string]string{}, healthy: true}
}

func vkey(i int) string { return fmt.Sprintf("v/%02d", i) }

// randValue builds a value for v/i whose dependencies point only to lower indexes
// (or SB values), so the dependency graph is acyclic and its stable state unique.
func (w *randWorld) randValue(i int) string {
	r := w.rng
	var parts []string
	content := fmt.Sprintf("c%d", r.Intn(3))
	if r.Intn(7) == 0 {
		content = "R" + content // changing to this needs a re-create
	}
	parts = append(parts, content)
	var deps []string
	for n := r.Intn(3); n > 0 && i > 0; n-- {
		j := r.Intn(i)
		switch x := r.Intn(20); {
		case x < 12:
			deps = append(deps, vkey(j))
		case x < 15:
			deps = append(deps, "p/"+vkey(j)+"/prop")
		case x < 18:
			deps = append(deps, fmt.Sprintf("s/%d", r.Intn(randSB)))
		default:
			deps = append(deps, fmt.Sprintf("d/%02d/x", j))
		}
	}
	if len(deps) > 0 {
		parts = append(parts, "dep="+strings.Join(deps, ","))
	}
	if r.Intn(10) == 0 {
		if i >= 10 {
			parts = append(parts, "any=v/0")
		} else {
			parts = append(parts, "any=s/")
		}
	}
	if r.Intn(2) == 0 {
		parts = append(parts, "prop")
	}
	if r.Intn(5) < 2 {
		var items []string
		for _, name := range []string{"x", "y"} {
			if r.Intn(3) == 0 {
				continue
			}
			item := fmt.Sprintf("%s:e%d", name, r.Intn(2))
			if i > 0 && r.Intn(3) == 0 {
				item += "+dep=" + vkey(r.Intn(i))
			} else if r.Intn(6) == 0 {
				item += fmt.Sprintf("+dep=s/%d", r.Intn(randSB))
			}
			items = append(items, item)
		}
		if len(items) > 0 {
			parts = append(parts, "der="+strings.Join(items, "|"))
		}
	}
	return strings.Join(parts, ";")
}

// randChanges picks 1-4 random sets/deletes.
func (w *randWorld) randChanges() []kv {
	var kvs []kv
	for n := 1 + w.rng.Intn(4); n > 0; n-- {
		i := w.rng.Intn(randKeys)
		if w.rng.Intn(4) == 0 {
			kvs = append(kvs, del(vkey(i)))
		} else {
			kvs = append(kvs, set(vkey(i), w.randValue(i)))
		}
	}
	return kvs
}

func applyModel(nb map[string]string, kvs []kv) {
	for _, p := range kvs {
		if p.val == nil {
			delete(nb, p.key)
		} else {
			nb[p.key] = text(p.val)
		}
	}
}

func (w *randWorld) injectFailures() {
	if w.rng.Intn(4) != 0 {
		return
	}
	ops := []api.TxnOperation{api.OpCreate, api.OpUpdate, api.OpDelete}
	for n := 1 + w.rng.Intn(2); n > 0; n-- {
		i := w.rng.Intn(randKeys)
		key := vkey(i)
		if w.rng.Intn(3) == 0 {
			key = fmt.Sprintf("d/%02d/%s", i, []string{"x", "y"}[w.rng.Intn(2)])
		}
		w.dp.failOn(key, ops[w.rng.Intn(len(ops))], 1, w.rng.Intn(2) == 0)
	}
}

func (w *randWorld) step(i int) {
	t := w.t
	switch x := w.rng.Intn(100); {
	case x < 72:
		w.injectFailures()
		kvs := w.randChanges()
		revert := w.rng.Intn(6) == 0
		ctx := context.Background()
		if revert {
			ctx = api.WithRevert(ctx)
		}
		healthyBefore := w.healthy
		before := w.dp.state()
		seq, err := commitCtx(ctx, w.s, kvs...)
		w.checkErr(i, err)
		rec := w.s.GetRecordedTransaction(seq)
		switch {
		case err == nil:
			applyModel(w.nb, kvs)
		case revert:
			w.stats.reverted++
			revertClean := true
			for _, op := range rec.Executed {
				if op.IsRevert && op.Error != "" {
					revertClean = false
				}
			}
			if revertClean && healthyBefore {
				if after := w.dp.state(); !maps.Equal(before, after) {
					t.Fatalf("step %d: reverted txn #%d changed the dataplane:\n before %v\n after  %v\n%s", i, seq, before, after, rec)
				}
			}
		default:
			applyModel(w.nb, kvs)
		}
		if err != nil {
			w.stats.failed++
		}
		if w.simulate && err == nil {
			w.checkPlan(i, rec)
		}
	case x < 80:
		// an SB value appears or disappears
		k := fmt.Sprintf("s/%d", w.rng.Intn(randSB))
		var v proto.Message
		if _, ok := w.sb[k]; ok {
			w.dp.remove(k)
			delete(w.sb, k)
		} else {
			c := fmt.Sprintf("sb%d", w.rng.Intn(2))
			w.dp.plant(k, str(c), api.FromSB)
			w.sb[k] = c
			v = str(c)
		}
		if err := w.s.PushSBNotification(api.KVWithMetadata{Key: k, Value: v}); err != nil {
			t.Fatal(err)
		}
		syncQueue(t, w.s)
	case x < 92:
		w.stats.resyncs++
		w.injectFailures()
		kinds := []api.ResyncType{api.FullResync, api.UpstreamResync, api.DownstreamResync}
		kind := kinds[w.rng.Intn(len(kinds))]
		if kind != api.UpstreamResync && w.rng.Intn(2) == 0 && w.healthy {
			w.tamper()
		}
		newNB := maps.Clone(w.nb)
		var kvs []kv
		if kind != api.DownstreamResync {
			if w.rng.Intn(2) == 0 {
				applyModel(newNB, w.randChanges())
			}
			kvs = modelKVs(newNB)
		}
		_, err := commitCtx(api.WithResync(context.Background(), kind, false), w.s, kvs...)
		w.checkErr(i, err)
		w.nb = newNB
	default:
		if !w.healthy || w.rng.Intn(4) == 0 {
			w.heal(i)
		}
	}
	w.checkInvariants(i)
}

// tamper changes the dataplane behind the scheduler's back (followed immediately by a
// Full or Downstream resync, which must repair it).
func (w *randWorld) tamper() {
	st := w.dp.state()
	keys := slices.Sorted(maps.Keys(st))
	if len(keys) > 0 {
		k := keys[w.rng.Intn(len(keys))]
		// values without Retrieve cannot be seen changing: leave them alone
		visible := strings.HasPrefix(k, "v/") || (strings.HasPrefix(k, "d/") && w.derivedRetrieve)
		if visible {
			if w.rng.Intn(2) == 0 {
				w.dp.removeTree(k)
			} else {
				w.dp.plant(k, str("T"+st[k]), api.FromNB)
			}
		}
	}
	// a leftover of ours and one that exists on its own
	w.dp.plant(fmt.Sprintf("v/%02d", randKeys+w.rng.Intn(3)), str("stale"), api.FromNB)
}

func modelKVs(nb map[string]string) []kv {
	var kvs []kv
	for _, k := range slices.Sorted(maps.Keys(nb)) {
		kvs = append(kvs, set(k, nb[k]))
	}
	return kvs
}

// heal clears the injected failures and runs a full resync; afterwards the
// dataplane must equal the model exactly.
func (w *randWorld) heal(i int) {
	w.stats.heals++
	w.dp.clearFailures()
	_, err := commitCtx(api.WithResync(context.Background(), api.FullResync, false), w.s, modelKVs(w.nb)...)
	if err != nil {
		w.t.Fatalf("step %d: heal resync failed: %v", i, err)
	}
	w.lastFire = w.dp.firedCount()
	w.healthy = true
	w.checkInvariants(i)
	if got, want := w.dp.state(), w.expected(); !maps.Equal(w.normalize(got), w.normalize(want)) {
		w.t.Fatalf("step %d: after heal, dataplane != model\n%s", i, diffMaps(got, want))
	}
}

func (w *randWorld) checkErr(i int, err error) {
	if err == nil {
		return
	}
	var te *api.TransactionError
	if !errors.As(err, &te) {
		w.t.Fatalf("step %d: unexpected error type: %v", i, err)
	}
	if te.TxnError != nil {
		w.t.Fatalf("step %d: transaction-level error: %v", i, te.TxnError)
	}
	for _, ke := range te.KVErrors {
		if !errors.Is(ke.Error, errInjected) {
			w.t.Fatalf("step %d: failure not injected by the test: %s %s: %v\n%s", i, ke.Operation, ke.Key, ke.Error,
				w.s.GetRecordedTransaction(te.SeqNum))
		}
	}
}

func (w *randWorld) checkPlan(i int, rec *api.RecordedTxn) {
	sum := func(ops []api.RecordedOp) []string {
		var out []string
		for _, op := range ops {
			out = append(out, op.Operation.String()+" "+op.Key+" -> "+op.NewState.String())
		}
		return out
	}
	if p, e := sum(rec.Planned), sum(rec.Executed); !slices.Equal(p, e) {
		w.t.Fatalf("step %d: plan != execution\n planned  %v\n executed %v", i, p, e)
	}
}

func (w *randWorld) checkInvariants(i int) {
	t := w.t
	if fired := w.dp.firedCount(); fired != w.lastFire {
		w.healthy = false
		w.lastFire = fired
	}
	state := w.dp.state()
	// 1. every object has its dependencies and its parent in the dataplane
	exists := func(k string) bool {
		if strings.HasPrefix(k, "p/") { // property of v/NN: exists with its parent's prop flag
			parent := strings.TrimSuffix(strings.TrimPrefix(k, "p/"), "/prop")
			v, ok := state[parent]
			return ok && strings.Contains(v, ";prop")
		}
		_, ok := state[k]
		return ok
	}
	for k, v := range state {
		if strings.HasPrefix(k, "s/") {
			continue
		}
		if strings.HasPrefix(k, "v/") && text(str(v)) == "stale" {
			continue
		}
		if st := stateOf(w.s, k); st == api.StateFailed || st == api.StateRetrying {
			continue // a failed delete under a vanished SB value: the scheduler knows
		}
		for _, d := range depsFromValue(k, str(v)) {
			ok := false
			if d.Key != "" {
				ok = exists(d.Key)
			} else {
				for k2 := range state {
					if d.AnyOf.Matches(k2) {
						ok = true
					}
				}
			}
			if !ok {
				t.Fatalf("step %d: %s=%q is in the dataplane without its dependency %+v\n%s\nlast txn:\n%s",
					i, k, v, d, w.debugNode(k), lastTxn(t, w.s))
			}
		}
		if strings.HasPrefix(k, "d/") {
			parent := "v/" + strings.Split(k, "/")[1]
			if _, ok := state[parent]; !ok {
				t.Fatalf("step %d: derived %s in the dataplane without its parent %s", i, k, parent)
			}
		}
	}
	// 2. the scheduler's cached view is the dataplane
	cached := map[string]string{}
	for _, d := range []string{"v", "d", "s"} {
		kvs, err := w.s.DumpValuesByDescriptor(d, api.CachedView)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			cached[kv.Key] = text(kv.Value)
		}
	}
	if !maps.Equal(w.normalize(cached), w.normalize(state)) {
		t.Fatalf("step %d: cached view != dataplane\n%s", i, diffMaps(cached, state))
	}
	// 3. exact model while no failure fired
	if w.healthy {
		if want := w.expected(); !maps.Equal(w.normalize(state), w.normalize(want)) {
			t.Fatalf("step %d: dataplane != model\n%s\nstatus: %s\nlast txn:\n%s", i, diffMaps(state, want),
				w.statusOf(state, want), lastTxn(t, w.s))
		}
		for k := range w.nb {
			if st := stateOf(w.s, k); st == api.StateFailed || st == api.StateRetrying {
				t.Fatalf("step %d: %s is %v without an injected failure", i, k, st)
			}
		}
	}
	// 4. the pending gauge counts the PENDING values
	pending := 0
	for _, st := range w.s.AllValueStatuses("") {
		if st.State == api.StatePending {
			pending++
			if len(st.Details) == 0 {
				t.Fatalf("step %d: %s is PENDING with every dependency present\n%s\nlast txn:\n%s", i, st.Key,
					w.debugNode(st.Key), lastTxn(t, w.s))
			}
		}
	}
	w.s.mu.RLock()
	gauge := w.s.g.pending
	w.s.mu.RUnlock()
	if gauge != pending {
		t.Fatalf("step %d: pending counter %d, %d values PENDING", i, gauge, pending)
	}
	// 5. the dependency indexes are what the dependencies of the nodes make
	w.s.mu.RLock()
	err := checkIndexes(w.s.g)
	w.s.mu.RUnlock()
	if err != nil {
		t.Fatalf("step %d: %v\nlast txn:\n%s", i, err, lastTxn(t, w.s))
	}
}

// checkIndexes rebuilds the dependency indexes of g from the desired and applied
// dependencies of its nodes and compares them with the ones g keeps up to date.
func checkIndexes(g *graph) error {
	want := newGraph()
	for _, n := range g.nodes {
		want.registerDeps(n, n.deps)
		want.registerDeps(n, n.adeps)
	}
	members := func(s *nodeSet) []string {
		var keys []string
		for _, n := range s.appendTo(nil) {
			keys = append(keys, n.key)
		}
		slices.Sort(keys)
		return keys
	}
	index := func(m map[string]*nodeSet) map[string]string {
		out := map[string]string{}
		for k, s := range m {
			out[k] = strings.Join(members(s), " ")
		}
		return out
	}
	if got, exp := index(g.keyDeps), index(want.keyDeps); !maps.Equal(got, exp) {
		return fmt.Errorf("key dependency index %v, the nodes make %v", got, exp)
	}
	if got, exp := index(g.prefixDeps), index(want.prefixDeps); !maps.Equal(got, exp) {
		return fmt.Errorf("prefix dependency index %v, the nodes make %v", got, exp)
	}
	if !slices.Equal(g.prefixLens, want.prefixLens) {
		return fmt.Errorf("prefix lengths %v, the nodes make %v", g.prefixLens, want.prefixLens)
	}
	if got, exp := members(&g.selectorDeps), members(&want.selectorDeps); !slices.Equal(got, exp) {
		return fmt.Errorf("selector dependents %v, the nodes make %v", got, exp)
	}
	return nil
}

// expected computes the dataplane the model asks for: the least fixed point of
// "a desired value exists when its dependencies exist", plus SB values.
func (w *randWorld) expected() map[string]string {
	exists := maps.Clone(w.sb)
	props := map[string]bool{}
	has := func(k string) bool {
		if strings.HasPrefix(k, "p/") {
			return props[k]
		}
		_, ok := exists[k]
		return ok
	}
	depsOK := func(v string) bool {
		for _, d := range depsFromValue("", str(v)) {
			if d.Key != "" {
				if !has(d.Key) {
					return false
				}
				continue
			}
			ok := false
			for k := range exists {
				if d.AnyOf.Matches(k) {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
		return true
	}
	derive := derivedFromValue("v/", "d/")
	keys := slices.Sorted(maps.Keys(w.nb))
	for changed := true; changed; {
		changed = false
		for _, k := range keys {
			v := w.nb[k]
			if _, ok := exists[k]; !ok {
				if !depsOK(v) {
					continue
				}
				exists[k] = v
				changed = true
			}
			if strings.Contains(v, ";prop") && !props["p/"+k+"/prop"] {
				props["p/"+k+"/prop"] = true
				changed = true
			}
			for _, d := range derive(k, str(v)) {
				if _, ok := exists[d.Key]; !ok && depsOK(text(d.Value)) {
					exists[d.Key] = text(d.Value)
					changed = true
				}
			}
		}
	}
	return exists
}

func diffMaps(got, want map[string]string) string {
	var lines []string
	for k, v := range got {
		if w, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("  extra   %s=%q", k, v))
		} else if w != v {
			lines = append(lines, fmt.Sprintf("  differs %s=%q, want %q", k, v, w))
		}
	}
	for k, v := range want {
		if _, ok := got[k]; !ok {
			lines = append(lines, fmt.Sprintf("  missing %s=%q", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// statusOf describes the scheduler status of the keys where got and want differ.
func (w *randWorld) statusOf(got, want map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range got {
			if want[k] != got[k] && !yield(k, true) {
				return
			}
		}
		for k := range want {
			if want[k] != got[k] && !yield(k, true) {
				return
			}
		}
	}))) {
		st := w.s.GetValueStatus(k)
		out = append(out, fmt.Sprintf("%s=%v(op %v, err %q, details %v)", k, st.State, st.LastOperation, st.Error, st.Details))
	}
	return strings.Join(out, "; ")
}

// normalize drops the derived-value claims from "v/" values when derived values are
// known only through their parent: the dataplane reports a parent with the derived
// values that exist, which are compared on their own.
func (w *randWorld) normalize(m map[string]string) map[string]string {
	if w.derivedRetrieve {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if strings.HasPrefix(k, "v/") {
			parts := strings.Split(v, ";")
			parts = slices.DeleteFunc(parts, func(p string) bool { return strings.HasPrefix(p, "der=") })
			v = strings.Join(parts, ";")
		}
		out[k] = v
	}
	return out
}

// debugNode dumps the scheduler's node of key.
func (w *randWorld) debugNode(key string) string {
	w.s.mu.RLock()
	defer w.s.mu.RUnlock()
	n := w.s.g.nodes[key]
	if n == nil {
		return key + ": no node"
	}
	parent := ""
	if n.parent != nil {
		parent = n.parent.key
	}
	var kids []string
	for _, c := range n.children {
		kids = append(kids, c.key)
	}
	return fmt.Sprintf("%s: state %v nb %v applied %v origin %v parent %q children %v deps %v adeps %v removing %v failedIn %d",
		key, n.state, n.nb, n.applied, n.origin, parent, kids, n.deps, n.adeps, n.removing, n.failedIn)
}

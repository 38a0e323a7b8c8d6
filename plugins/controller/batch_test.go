package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// batchRig is a controller whose one source holds a resync and then whatever a test
// adds before start; its handler stages the keys each change names.
type batchRig struct {
	c     *Controller
	sched *fakeScheduler
	src   *listSource
	wake  func()
	j     *journal
	// stages maps a change's key to the keys its Update stages (default: "config/<key>").
	stages map[string][]string
	// seen records, per change, which changed keys the cached Kubernetes state held
	// when the handler saw the change.
	seen []string
	// committed records the changes the handler heard the commit of, with the error.
	committed []string
	failOn    map[string]error
	// followUp names the changes whose Update pushes a follow-up ("F-<key>"), which
	// stages "followup/<key>".
	followUp map[string]bool
}

func newBatchRig(t *testing.T, maxBatched int) *batchRig {
	t.Helper()
	r := &batchRig{sched: &fakeScheduler{}, src: &listSource{}, j: &journal{}, stages: map[string][]string{}, failOn: map[string]error{}, followUp: map[string]bool{}}
	h := &batchHandler{r: r}
	r.c = NewController(Deps{Log: quietLog(), Scheduler: r.sched, EventHandlers: []api.EventHandler{h},
		Config: configLoader{func(c *Config) { c.MaxBatchedChanges = maxBatched }}})
	if err := r.c.Init(); err != nil {
		t.Fatal(err)
	}
	r.wake = r.c.AddEventSource(r.src)
	resync := api.NewDBResync()
	resync.KubeState = api.NewKubeStateData("pod")
	r.src.add(resync)
	return r
}

// start starts the loop once the test queued its events, and waits until the source
// is drained and n transactions were committed (the resync's included).
func (r *batchRig) start(t *testing.T, n int) []committedTxn {
	t.Helper()
	r.wake()
	if err := r.c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.c.Close() })
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, fmt.Sprintf("%d commits", n), func() bool { return len(r.sched.all()) >= n })
	// A probe queued after everything is done once the loop finished the last event.
	probe := newTestEvent("Probe", true, api.BestEffort, api.Forward)
	if err := pushAndWait(t, r.c, probe); err != nil {
		t.Fatal(err)
	}
	commits := r.sched.all()
	if len(commits) != n {
		t.Fatalf("%d transactions committed, want %d", len(commits), n)
	}
	return commits[1:] // without the resync
}

func change(key string) *api.KubeStateChange {
	return &api.KubeStateChange{Key: key, Resource: "pod", NewValue: wrapperspb.String(key)}
}

// changes adds KubeStateChanges of the given keys to the source.
func (r *batchRig) changes(keys ...string) {
	for _, k := range keys {
		r.src.add(change(k))
	}
}

// batchHandler stages, for each KubeStateChange, the keys the rig says.
type batchHandler struct{ r *batchRig }

func (h *batchHandler) String() string { return "batch" }

func (h *batchHandler) HandlesEvent(ev api.Event) bool {
	switch e := ev.(type) {
	case *api.KubeStateChange:
		return true
	case *testEvent:
		return strings.HasPrefix(e.name, "F-")
	}
	return ev.Method().IsResync()
}

func (h *batchHandler) Resync(api.Event, api.KubeStateData, int, api.ResyncOperations) error {
	return nil
}

func (h *batchHandler) Update(ev api.Event, txn api.UpdateOperations) (string, error) {
	if f, ok := ev.(*testEvent); ok {
		key := strings.TrimPrefix(f.name, "F-")
		txn.Put("followup/"+key, wrapperspb.String(key))
		return "followed up " + key, nil
	}
	ch := ev.(*api.KubeStateChange)
	if h.r.followUp[ch.Key] {
		if err := api.PushFollowUp(txn, nil, newTestEvent("F-"+ch.Key, false, api.BestEffort, api.Forward)); err != nil {
			return "", err
		}
	}
	var known []string
	for k := range h.r.c.kubeState["pod"] {
		known = append(known, k)
	}
	slices.Sort(known)
	h.r.seen = append(h.r.seen, ch.Key+":"+strings.Join(known, ","))
	keys, ok := h.r.stages[ch.Key]
	if !ok {
		keys = []string{"config/" + ch.Key}
	}
	for _, k := range keys {
		txn.Put(k, wrapperspb.String(ch.Key))
	}
	return "staged " + ch.Key, h.r.failOn[ch.Key]
}

func (h *batchHandler) Revert(api.Event) error { return nil }

func (h *batchHandler) Committed(ev api.Event, err error) {
	if ch, ok := ev.(*api.KubeStateChange); ok {
		h.r.committed = append(h.r.committed, fmt.Sprintf("%s:%v", ch.Key, err))
	}
}

// stagedBy renders a transaction as key=change-that-staged-it, in commit order.
func stagedBy(txn committedTxn) string {
	var out []string
	for _, k := range txn.order {
		v := txn.values[k]
		if v == nil {
			out = append(out, "-"+k)
			continue
		}
		out = append(out, k+"="+v.(*wrapperspb.StringValue).GetValue())
	}
	return strings.Join(out, " ")
}

func TestPendingChangesAreOneTransactionEachSeenWithTheStateAsOfIt(t *testing.T) {
	r := newBatchRig(t, 64)
	r.changes("a", "b", "c")
	commits := r.start(t, 2)
	if got, want := stagedBy(commits[0]), "config/a=a config/b=b config/c=c"; got != want {
		t.Errorf("transaction %q, want %q", got, want)
	}
	if want := []string{"a:a", "b:a,b", "c:a,b,c"}; !slices.Equal(r.seen, want) {
		t.Errorf("the handler saw the state %q, want %q (each change with the state as of it)", r.seen, want)
	}
	if want := []string{"a:<nil>", "b:<nil>", "c:<nil>"}; !slices.Equal(r.committed, want) {
		t.Errorf("commit observed for %q, want every change of the batch", r.committed)
	}
	var batches []*EventRecord
	for _, rec := range r.c.history.snapshot() {
		if rec.Name == "Kubernetes State Changes" {
			batches = append(batches, rec)
		}
	}
	if len(batches) != 1 || len(batches[0].Handlers) != 3 || !strings.HasPrefix(batches[0].Description, "Kubernetes State Changes: 3 changes\n") {
		t.Fatalf("history holds %d batch records (%+v), want one of 3 changes", len(batches), batches)
	}
}

// batchHistogram returns the count and the sum of contiv_controller_batch_changes.
func batchHistogram(t *testing.T, c *Controller) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := c.metrics.batchChanges.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestBatchSizeIsBoundedAndOneMeansEveryChangeAlone(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []string
	}{
		{1, []string{"config/a=a", "config/b=b", "config/c=c", "config/d=d", "config/e=e"}},
		{2, []string{"config/a=a config/b=b", "config/c=c config/d=d", "config/e=e"}},
	} {
		t.Run(fmt.Sprint("max ", tc.max), func(t *testing.T) {
			r := newBatchRig(t, tc.max)
			r.changes("a", "b", "c", "d", "e")
			commits := r.start(t, len(tc.want)+1)
			for i, txn := range commits {
				if got := stagedBy(txn); got != tc.want[i] {
					t.Errorf("transaction %d: %q, want %q", i, got, tc.want[i])
				}
			}
			if events, changes := batchHistogram(t, r.c); events != uint64(len(tc.want)) || changes != 5 {
				t.Errorf("contiv_controller_batch_changes: %d events of %v changes, want %d of 5", events, changes, len(tc.want))
			}
		})
	}
}

func TestChangeStagingAKeyOfAnEarlierChangeSplitsTheBatch(t *testing.T) {
	r := newBatchRig(t, 64)
	// c stages x again: merged with a's, a's operation on x would be lost and c's
	// would run where a put it. The batch splits before c.
	r.stages["a"] = []string{"x", "config/a"}
	r.stages["c"] = []string{"config/c", "x"}
	r.changes("a", "b", "c", "d")
	commits := r.start(t, 3)
	if got, want := stagedBy(commits[0]), "x=a config/a=a config/b=b"; got != want {
		t.Errorf("first part %q, want %q", got, want)
	}
	if got, want := stagedBy(commits[1]), "config/c=c x=c config/d=d"; got != want {
		t.Errorf("second part %q, want %q", got, want)
	}
	if want := []string{"a:<nil>", "b:<nil>", "c:<nil>", "d:<nil>"}; !slices.Equal(r.committed, want) {
		t.Errorf("commit observed for %q, want every change once", r.committed)
	}
	if n := testutil.ToFloat64(r.c.metrics.batchSplits); n != 1 {
		t.Errorf("contiv_controller_batch_splits_total = %v, want 1", n)
	}
	if events, changes := batchHistogram(t, r.c); events != 2 || changes != 4 {
		t.Errorf("contiv_controller_batch_changes: %d events of %v changes, want 2 of 4", events, changes)
	}
	var parts []string
	for _, rec := range r.c.history.snapshot() {
		if rec.Name != "Kubernetes State Changes" {
			continue
		}
		var handled []string
		for _, h := range rec.Handlers {
			handled = append(handled, h.Change)
		}
		parts = append(parts, strings.SplitN(rec.Description, "\n", 2)[0]+" ["+strings.Join(handled, ", ")+"]")
	}
	want := []string{
		"Kubernetes State Changes: 2 changes [staged a, staged b]",
		"Kubernetes State Changes: 2 changes [staged c, staged d]",
	}
	if !slices.Equal(parts, want) {
		t.Errorf("history %q, want %q", parts, want)
	}
}

func TestEventOfAnotherKindEndsTheBatchInSourceOrder(t *testing.T) {
	r := newBatchRig(t, 64)
	r.changes("a", "b")
	ext := api.NewExternalConfigChange("db", false)
	ext.UpdatedKVs["ext/key"] = wrapperspb.String("external")
	r.src.add(ext)
	r.changes("c")
	commits := r.start(t, 4)
	got := []string{stagedBy(commits[0]), stagedBy(commits[1]), stagedBy(commits[2])}
	want := []string{"config/a=a config/b=b", "ext/key=external", "config/c=c"}
	if !slices.Equal(got, want) {
		t.Errorf("transactions %q, want %q", got, want)
	}
}

func TestErrorsInABatch(t *testing.T) {
	t.Run("a failing change heals and the others are committed", func(t *testing.T) {
		r := newBatchRig(t, 64)
		r.failOn["b"] = errors.New("b is bad")
		r.changes("a", "b", "c")
		commits := r.start(t, 2)
		if got, want := stagedBy(commits[0]), "config/a=a config/b=b config/c=c"; got != want {
			t.Errorf("transaction %q, want %q", got, want)
		}
		if !r.c.healingScheduledForTest() {
			t.Error("no healing resync scheduled after a handler error")
		}
		if want := []string{"a:<nil>", "c:<nil>"}; !slices.Equal(r.committed, want) {
			t.Errorf("commit observed for %q, want the changes whose handler succeeded", r.committed)
		}
	})
	t.Run("an abort stops the batch; the state follows every change", func(t *testing.T) {
		r := newBatchRig(t, 64)
		r.failOn["b"] = api.NewAbortEventError(errors.New("b needs a resync"))
		r.changes("a", "b", "c")
		ext := api.NewExternalConfigChange("db", false) // committed: the loop goes on
		ext.UpdatedKVs["ext/key"] = wrapperspb.String("external")
		r.src.add(ext)
		commits := r.start(t, 2)
		if got, want := stagedBy(commits[0]), "ext/key=external"; got != want {
			t.Errorf("only transaction after the resync %q, want %q (the aborted batch commits nothing)", got, want)
		}
		if !r.c.healingScheduledForTest() {
			t.Error("no healing resync scheduled after an abort")
		}
		// The healing resync rebuilds from the cached state: it must hold c too.
		var state []string
		r.c.inLoopForTest(func() {
			for k := range r.c.kubeState["pod"] {
				state = append(state, k)
			}
		})
		slices.Sort(state)
		if want := []string{"a", "b", "c"}; !slices.Equal(state, want) {
			t.Errorf("cached state %q after the abort, want %q", state, want)
		}
	})
}

func TestBatchTransactionDescriptionNamesTheFirstChanges(t *testing.T) {
	r := newBatchRig(t, 64)
	var keys []string
	for i := range describedChanges + 4 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	r.changes(keys...)
	commits := r.start(t, 2)
	desc := commits[0].description
	if !strings.HasPrefix(desc, "Kubernetes State Changes: batch: staged k00; batch: staged k01;") ||
		!strings.HasSuffix(desc, fmt.Sprintf("batch: staged k%02d; ... and 4 more", describedChanges-1)) {
		t.Errorf("description %q, want the first %d changes and how many more", desc, describedChanges)
	}
}

func TestFollowUpsOfAChangeRunBeforeTheRestOfItsBatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stages map[string][]string
		want   []string
	}{
		{"the batch ends after the change", nil, []string{
			"config/a=a config/b=b", "followup/b=b", "config/c=c config/d=d"}},
		{"the change also splits the batch", map[string][]string{"a": {"x"}, "b": {"x"}}, []string{
			"x=a", "x=b", "followup/b=b", "config/c=c config/d=d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBatchRig(t, 64)
			r.followUp["b"] = true
			maps.Copy(r.stages, tc.stages)
			r.changes("a", "b", "c", "d")
			commits := r.start(t, len(tc.want)+1)
			var got []string
			for _, txn := range commits {
				got = append(got, stagedBy(txn))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("transactions %q, want %q", got, tc.want)
			}
		})
	}
}

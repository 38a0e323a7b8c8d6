package kvscheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func TestHistoryRecordsOperationsAndStatus(t *testing.T) {
	s, dp := basicSetup(t, nil)
	dp.failOn("v/bad", api.OpCreate, 1, false)
	ctx := api.WithDescription(context.Background(), "pod web-1 added")
	seq, err := commitCtx(ctx, s, set("v/a", "a"), set("v/b", "b;dep=v/a"), set("v/p", "p;dep=v/none"), set("v/bad", "x"))
	if err == nil {
		t.Fatal("want failure")
	}
	rec := s.GetRecordedTransaction(seq)
	if rec == nil {
		t.Fatal("transaction not recorded")
	}
	if rec.Description != "pod web-1 added" || rec.TxnType != api.NBTransaction || len(rec.Values) != 4 {
		t.Fatalf("record = %+v", rec)
	}
	type opSum struct {
		key       string
		op        api.TxnOperation
		prev, now api.ValueState
		failed    bool
	}
	var got []opSum
	for _, op := range rec.Executed {
		got = append(got, opSum{op.Key, op.Operation, op.PrevState, op.NewState, op.Error != ""})
	}
	want := []opSum{
		{"v/a", api.OpCreate, api.StateNonexistent, api.StateConfigured, false},
		{"v/b", api.OpCreate, api.StateNonexistent, api.StateConfigured, false},
		{"v/bad", api.OpCreate, api.StateNonexistent, api.StateFailed, true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("executed ops:\n got  %+v\n want %+v", got, want)
	}
	if rec.Error == "" || !strings.Contains(rec.Error, "v/bad") {
		t.Fatalf("record error = %q", rec.Error)
	}
	str := rec.String()
	for _, frag := range []string{fmt.Sprintf("txn #%d NB", seq), "pod web-1 added", "CREATE v/a NONEXISTENT -> CONFIGURED",
		"CREATE v/bad NONEXISTENT -> FAILED", "error:"} {
		if !strings.Contains(str, frag) {
			t.Fatalf("String() lacks %q:\n%s", frag, str)
		}
	}
	if s.GetRecordedTransaction(seq+100) != nil {
		t.Fatal("unknown seq found")
	}
	// time window
	all := s.GetTransactionHistory(time.Time{}, time.Time{})
	if len(all) != 1 || all[0] != rec {
		t.Fatalf("history = %v", all)
	}
	if h := s.GetTransactionHistory(rec.Start.Add(time.Second), time.Time{}); len(h) != 0 {
		t.Fatalf("window after the txn returned %d", len(h))
	}
	if h := s.GetTransactionHistory(time.Time{}, rec.Start.Add(-time.Second)); len(h) != 0 {
		t.Fatalf("window before the txn returned %d", len(h))
	}
	// status of every value
	statuses := s.AllValueStatuses("")
	var keys []string
	for _, st := range statuses {
		keys = append(keys, st.Key+"="+st.State.String())
	}
	if !slices.Equal(keys, []string{"v/a=CONFIGURED", "v/b=CONFIGURED", "v/bad=FAILED", "v/p=PENDING"}) {
		t.Fatalf("statuses = %v", keys)
	}
	// key timeline
	mustCommit(t, s, del("v/a"))
	var tl []string
	for _, e := range s.KeyTimeline("v/b") {
		tl = append(tl, e.Op.Operation.String()+":"+e.Op.NewState.String())
	}
	if !slices.Equal(tl, []string{"CREATE:CONFIGURED", "DELETE:PENDING"}) {
		t.Fatalf("timeline = %v", tl)
	}
}

func TestHistoryTrimmingKeepsTheInitPeriod(t *testing.T) {
	var h history
	cfg := DefaultConfig()
	cfg.TransactionHistoryAgeLimit = 10
	cfg.PermanentlyRecordedInitPeriod = 1
	start := time.Unix(1000, 0)
	h.init(cfg, start)
	at := func(seq uint64, d time.Duration) *api.RecordedTxn {
		return &api.RecordedTxn{SeqNum: seq, Start: start.Add(d)}
	}
	h.add(at(1, 0))
	h.add(at(2, 30*time.Second))
	h.add(at(3, 2*time.Minute))
	h.add(at(4, 5*time.Minute))
	h.add(at(5, 13*time.Minute)) // trims #3 (older than 10 minutes), keeps the init period
	var seqs []uint64
	for _, r := range h.between(time.Time{}, time.Time{}) {
		seqs = append(seqs, r.SeqNum)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 4, 5}) {
		t.Fatalf("kept %v", seqs)
	}
	if h.get(3) != nil || h.get(1) == nil || h.get(4) == nil {
		t.Fatal("get does not match the kept set")
	}

	cfg.RecordTransactionHistory = false
	var off history
	off.init(cfg, start)
	off.add(at(1, 0))
	if off.get(1) != nil {
		t.Fatal("recorded with record-transaction-history off")
	}
}

func TestCloseStopsTheSchedulerAndRetries(t *testing.T) {
	fc := testkit.NewClock()
	s, dp := basicSetupWithClock(t, nil, fc)
	dp.failOn("v/a", api.OpCreate, -1, true)
	ctx := api.WithRetry(context.Background(), 5*time.Millisecond, 100, false)
	if _, err := commitCtx(ctx, s, set("v/a", "a")); err == nil {
		t.Fatal("want failure")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dp.takeCalls()
	if n := fc.Waiters(); n != 0 {
		t.Fatalf("%d retry timers still armed after Close", n)
	}
	fc.Step(time.Hour)
	if calls := dp.takeCalls(); len(calls) != 0 {
		t.Fatalf("retries ran after Close: %v", calls)
	}
	if _, err := commitCtx(context.Background(), s, set("v/b", "b")); !errors.Is(err, api.ErrClosedScheduler) {
		t.Fatalf("commit after close: err = %v", err)
	}
	if err := s.PushSBNotification(api.KVWithMetadata{Key: "x", Value: str("x")}); !errors.Is(err, api.ErrClosedScheduler) {
		t.Fatalf("push after close: err = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close failed")
	}
}

func TestCancelledContextBeforeStart(t *testing.T) {
	dp := newFakeDP()
	block := make(chan struct{})
	started := make(chan struct{})
	s := newTestScheduler(t, nil, dp.register(fakeDesc{name: "v", prefix: "v/", onCreate: func(key string, _ proto.Message) error {
		if key == "v/slow" {
			close(started)
			<-block
		}
		return nil
	}}))
	go func() { _, _ = commitCtx(context.Background(), s, set("v/slow", "x")) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := commitCtx(ctx, s, set("v/queued", "x"))
		done <- err
	}()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the second transaction queued", func() bool { return queued(s) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	close(block)
	syncQueue(t, s)
	if dp.has("v/queued") {
		t.Fatal("cancelled transaction ran")
	}
}

func TestConcurrentCommitsAreSerialized(t *testing.T) {
	s, dp := basicSetup(t, nil)
	var wg sync.WaitGroup
	seqs := make(chan uint64, 200)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				k := fmt.Sprintf("v/%d-%d", g, i)
				seq, err := commitCtx(context.Background(), s, set(k, "x;dep=v/base"))
				if err != nil {
					t.Error(err)
				}
				seqs <- seq
				_ = s.GetValueStatus(k)
				_, _ = s.DumpValuesByDescriptor("v", api.CachedView)
			}
		}()
	}
	mustCommit(t, s, set("v/base", "b"))
	wg.Wait()
	close(seqs)
	seen := map[uint64]bool{}
	for q := range seqs {
		if seen[q] {
			t.Fatalf("sequence number %d returned twice", q)
		}
		seen[q] = true
	}
	if n := len(dp.state()); n != 201 {
		t.Fatalf("dataplane holds %d values, want 201", n)
	}
}

func TestMetrics(t *testing.T) {
	dp := newFakeDP()
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	s, err := NewScheduler(Deps{Log: quietLogger(), Config: staticConfig(cfg), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RegisterKVDescriptor(dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue})); err != nil {
		t.Fatal(err)
	}
	dp.failOn("v/f", api.OpCreate, 1, false)
	mustCommit(t, s, set("v/a", "a"), set("v/p", "p;dep=v/x"), set("v/q", "q;dep=v/x"))
	_, _ = commitCtx(context.Background(), s, set("v/f", "f"))

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	value := func(name string, labels map[string]string) float64 {
		f := byName[name]
		if f == nil {
			t.Fatalf("metric %s missing", name)
		}
	next:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
		t.Fatalf("metric %s%v missing", name, labels)
		return 0
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"contiv_kvscheduler_transactions_total", map[string]string{"type": "NB", "outcome": "ok"}, 1},
		{"contiv_kvscheduler_transactions_total", map[string]string{"type": "NB", "outcome": "failed"}, 1},
		{"contiv_kvscheduler_transaction_duration_seconds", map[string]string{"type": "NB"}, 2},
		{"contiv_kvscheduler_failed_operations_total", map[string]string{"descriptor": "v"}, 1},
		{"contiv_kvscheduler_pending_values", nil, 2},
		{"contiv_kvscheduler_operation_duration_seconds", map[string]string{"descriptor": "v", "operation": "create"}, 2},
	}
	for _, c := range checks {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// a second scheduler on the same registry is refused with a clear error
	if _, err := NewScheduler(Deps{Log: quietLogger(), Registerer: reg}); err == nil {
		t.Fatal("double registration accepted")
	}
}

func TestSimulationPlansWhatIsExecuted(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EnableTxnSimulation = true
	cfg.PrintTxnSummary = false
	s, dp := basicSetup(t, &cfg)
	mustCommit(t, s, set("v/a", "a"), set("v/if", "i;der=ip:1;dep=v/a"))
	seq := mustCommit(t, s, set("v/a", "a2"), set("v/b", "b;dep=v/if"), del("v/zz"))
	rec := s.GetRecordedTransaction(seq)
	if len(rec.Planned) == 0 || !slices.EqualFunc(rec.Planned, rec.Executed, func(a, b api.RecordedOp) bool {
		return a.Key == b.Key && a.Operation == b.Operation && a.NewState == b.NewState
	}) {
		t.Fatalf("plan differs from execution:\n%s", rec)
	}
	// the simulation left no trace: a no-op upstream resync changes nothing
	dp.takeCalls()
	mustCommitCtx(t, resyncCtx(api.UpstreamResync), s, set("v/a", "a2"), set("v/if", "i;der=ip:1;dep=v/a"), set("v/b", "b;dep=v/if"))
	if calls := dp.takeCalls(); len(calls) != 0 {
		t.Fatalf("calls = %v", calls)
	}
	if rec := lastTxn(t, s); len(rec.Planned) != 0 || len(rec.Executed) != 0 {
		t.Fatalf("no-op resync planned/executed ops:\n%s", rec)
	}
}

func TestDumpViews(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("v/a", "a"), set("v/p", "p;dep=v/none"))
	dp.plant("v/sb", str("s"), api.FromSB)
	keys := func(kvs []api.KVWithMetadata) []string {
		var out []string
		for _, kv := range kvs {
			out = append(out, kv.Key+"="+text(kv.Value))
		}
		return out
	}
	tests := []struct {
		view api.View
		want []string
	}{
		{api.NBView, []string{"v/a=a", "v/p=p;dep=v/none"}},
		{api.CachedView, []string{"v/a=a"}},
		{api.SBView, []string{"v/a=a", "v/sb=s"}},
	}
	for _, tc := range tests {
		got, err := s.DumpValuesByDescriptor("v", tc.view)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys(got), tc.want) {
			t.Errorf("%v view = %v, want %v", tc.view, keys(got), tc.want)
		}
	}
	if _, err := s.DumpValuesByDescriptor("nope", api.NBView); !errors.Is(err, api.ErrUnknownDescriptor) {
		t.Fatalf("err = %v", err)
	}
}

func TestRegisterDescriptorErrors(t *testing.T) {
	s, _ := basicSetup(t, nil)
	tests := []struct {
		name string
		d    *api.KVDescriptor
		want error
	}{
		{"nil", nil, api.ErrInvalidDescriptor},
		{"no name", &api.KVDescriptor{KeySelector: func(string) bool { return true }}, api.ErrInvalidDescriptor},
		{"no selector", &api.KVDescriptor{Name: "x"}, api.ErrInvalidDescriptor},
		{"duplicate", &api.KVDescriptor{Name: "v", KeySelector: func(string) bool { return true }}, api.ErrDescriptorExists},
	}
	for _, tc := range tests {
		if err := s.RegisterKVDescriptor(tc.d); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	var zero Scheduler
	if _, err := zero.StartNBTransaction().Commit(context.Background()); !errors.Is(err, api.ErrNotInitialized) {
		t.Fatalf("commit on uninitialized scheduler: %v", err)
	}
}

func TestLateDescriptorRegistration(t *testing.T) {
	s, dp := basicSetup(t, nil)
	mustCommit(t, s, set("late/x", "x"))
	wantState(t, s, "late/x", api.StateUnimplemented)
	if err := s.RegisterKVDescriptor(dp.register(fakeDesc{name: "late", prefix: "late/"})); err != nil {
		t.Fatal(err)
	}
	mustCommitCtx(t, resyncCtx(api.UpstreamResync), s, set("late/x", "x"))
	wantState(t, s, "late/x", api.StateConfigured)
	if !dp.has("late/x") {
		t.Fatal("late value not applied")
	}
}

// blockingHook holds every log entry that contains match until release is closed.
type blockingHook struct {
	match   string
	seen    chan string
	release chan struct{}
}

func (h *blockingHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *blockingHook) Fire(e *logrus.Entry) error {
	if strings.Contains(e.Message, h.match) {
		h.seen <- e.Level.String() + " " + e.Message
		<-h.release
	}
	return nil
}

// TestTxnSummaryIsLoggedAfterTheCommitterIsAnswered: the summary of every transaction
// is logged (WARN when it failed), but a commit does not wait for it.
func TestTxnSummaryIsLoggedAfterTheCommitterIsAnswered(t *testing.T) {
	dp := newFakeDP()
	hook := &blockingHook{match: "txn #", seen: make(chan string, 4), release: make(chan struct{})}
	log := quietLogger()
	log.AddHook(hook)
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = true
	s, err := NewScheduler(Deps{Log: log, Config: staticConfig(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	released := false
	release := func() {
		if !released {
			close(hook.release)
			released = true
		}
	}
	defer release()
	if err := s.RegisterKVDescriptor(dp.register(fakeDesc{name: "v", prefix: "v/"})); err != nil {
		t.Fatal(err)
	}

	// The first summary blocks in the hook: the commit has returned all the same.
	committed := make(chan error, 1)
	go func() {
		_, err := commitCtx(context.Background(), s, set("v/a", "1"))
		committed <- err
	}()
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the commit waited for its summary to be logged")
	}
	select {
	case got := <-hook.seen:
		if !strings.HasPrefix(got, "info txn #1 NB") || !strings.Contains(got, "CREATE v/a") {
			t.Errorf("summary = %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no summary logged")
	}
	release()

	dp.failOn("v/b", api.OpCreate, 1, false)
	if _, err := commitCtx(context.Background(), s, set("v/b", "1")); err == nil {
		t.Fatal("the injected failure did not fail the commit")
	}
	select {
	case got := <-hook.seen:
		if !strings.HasPrefix(got, "warning txn #2 NB") || !strings.Contains(got, "v/b") {
			t.Errorf("summary of the failed transaction = %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no summary logged for the failed transaction")
	}
}

// TestOperationDurationsAreRecorded: each executed operation carries the time spent in
// its descriptor callbacks, in the transaction record, its JSON and its summary.
func TestOperationDurationsAreRecorded(t *testing.T) {
	dp := newFakeDP()
	s := newTestScheduler(t, nil, dp.register(fakeDesc{name: "v", prefix: "v/", onCreate: func(key string, _ proto.Message) error {
		if key == "v/slow" {
			time.Sleep(5 * time.Millisecond) // real time: the duration to be recorded
		}
		return nil
	}}))
	seq := mustCommit(t, s, set("v/fast", "f"), set("v/slow", "s"))
	rec := s.GetRecordedTransaction(seq)
	if rec == nil {
		t.Fatal("no record")
	}
	durations := map[string]time.Duration{}
	for _, op := range rec.Executed {
		durations[op.Key] = op.Duration
	}
	if d := durations["v/slow"]; d < 5*time.Millisecond {
		t.Errorf("v/slow took %v, want at least the 5ms its Create slept", d)
	}
	if d := durations["v/fast"]; d <= 0 {
		t.Errorf("v/fast took %v, want the time of its own Create", d)
	}
	data, err := json.Marshal(rec.Executed)
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Key      string `json:"key"`
		Duration string `json:"duration"`
	}
	if err := json.Unmarshal(data, &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		want := durations[op.Key]
		if want >= time.Microsecond {
			want = want.Round(time.Microsecond)
		}
		if d, err := time.ParseDuration(op.Duration); err != nil || d != want {
			t.Errorf("JSON duration of %s = %q (%v), want %v", op.Key, op.Duration, err, want)
		}
	}
	if sum := rec.Summary(0); !strings.Contains(sum, "CREATE v/slow NONEXISTENT -> CONFIGURED (") {
		t.Errorf("summary lacks the duration of v/slow:\n%s", sum)
	}
}

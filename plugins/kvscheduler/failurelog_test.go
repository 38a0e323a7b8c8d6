package kvscheduler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"

	"github.com/sirupsen/logrus"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func TestFailureLogWarnsOncePerIntervalAndCountsTheRepetitions(t *testing.T) {
	var f failureLog
	t0 := time.Unix(1e9, 0)
	steps := []struct {
		key, err     string
		at           time.Duration
		warn         bool
		wantRepeated int
	}{
		{"k", "e1", 0, true, 0},
		{"k", "e1", time.Second, false, 0},
		{"k", "e1", 30 * time.Second, false, 0},
		{"other", "e1", 31 * time.Second, true, 0},                        // keys are independent
		{"k", "e2", 32 * time.Second, true, 0},                            // another error warns at once
		{"k", "e2", 33 * time.Second, false, 0},                           // and is then limited itself
		{"k", "e2", 32*time.Second + RepeatedFailureLogInterval, true, 1}, // an interval after its warning
		{"k", "e2", 33*time.Second + RepeatedFailureLogInterval, false, 0},
	}
	for i, s := range steps {
		warn, repeated := f.warn(s.key, s.err, t0.Add(s.at))
		if warn != s.warn || repeated != s.wantRepeated {
			t.Errorf("step %d (%s %s at %v): warn %v repeated %d, want %v %d", i, s.key, s.err, s.at, warn, repeated, s.warn, s.wantRepeated)
		}
	}
}

// entries records the log entries of a logger.
type entries struct {
	mu  sync.Mutex
	all []*logrus.Entry
}

func (h *entries) Levels() []logrus.Level { return logrus.AllLevels }
func (h *entries) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all = append(h.all, e)
	return nil
}

// count counts the entries at level whose message starts with prefix.
func (h *entries) count(level logrus.Level, prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.all {
		if e.Level == level && strings.HasPrefix(e.Message, prefix) {
			n++
		}
	}
	return n
}

func TestAValueThatKeepsFailingWarnsOnceThenLogsItsRetriesAtDebug(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Unix(1e9, 0))
	log := quietLogger()
	log.SetLevel(logrus.DebugLevel)
	hook := &entries{}
	log.AddHook(hook)
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = true
	s, err := NewScheduler(Deps{Log: log, Config: staticConfig(cfg), Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	dp := newFakeDP()
	if err := s.RegisterKVDescriptor(dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue})); err != nil {
		t.Fatal(err)
	}
	dp.failOn("v/a", api.OpCreate, 3, true)
	if _, err := commitCtx(api.WithRetry(context.Background(), time.Second, 5, true), s, set("v/a", "a")); err == nil {
		t.Fatal("the first attempt succeeded, want the injected failure")
	}
	for _, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the retry timer", func() bool { return fc.Waiters() == 1 })
		fc.Step(delay)
		syncQueue(t, s)
	}
	wantState(t, s, "v/a", api.StateConfigured)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the summaries of the retries", func() bool { return hook.count(logrus.InfoLevel, "txn #") >= 1 })

	if n := hook.count(logrus.WarnLevel, "operation failed"); n != 1 {
		t.Errorf("%d warnings \"operation failed\", want 1 (the first failure)", n)
	}
	if n := hook.count(logrus.DebugLevel, "operation failed again"); n != 2 {
		t.Errorf("%d debug lines \"operation failed again\", want 2 (the failed retries)", n)
	}
	if n := hook.count(logrus.WarnLevel, "txn #"); n != 1 {
		t.Errorf("%d transaction summaries logged as warnings, want 1 (the first transaction)", n)
	}
	if n := hook.count(logrus.DebugLevel, "txn #"); n != 2 {
		t.Errorf("%d transaction summaries at debug, want 2 (the failed retries)", n)
	}
}

package controller

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// committedTxn is what the fake scheduler saw of one commit.
type committedTxn struct {
	values      map[string]proto.Message
	order       []string // keys in the order they were set
	resync      kvs.ResyncType
	isResync    bool
	verbose     bool
	revert      bool
	retry       bool
	description string
}

// fakeScheduler records commits and fails them on demand.
type fakeScheduler struct {
	mu      sync.Mutex
	commits []committedTxn
	failKey string // a commit containing this key fails
	seq     uint64
	failed  map[string]bool // keys whose last commit failed
}

type fakeTxn struct {
	s      *fakeScheduler
	values map[string]proto.Message
	order  []string
}

func (s *fakeScheduler) StartNBTransaction() kvs.Txn {
	return &fakeTxn{s: s, values: make(map[string]proto.Message)}
}

// GetValueStatus reports FAILED for a key whose last commit failed, else CONFIGURED.
func (s *fakeScheduler) GetValueStatus(key string) *kvs.ValueStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed[key] {
		return &kvs.ValueStatus{Key: key, State: kvs.StateFailed, Error: "injected failure of " + key}
	}
	return &kvs.ValueStatus{Key: key, State: kvs.StateConfigured}
}

func (s *fakeScheduler) GetRecordedTransaction(seq uint64) *kvs.RecordedTxn {
	return &kvs.RecordedTxn{SeqNum: seq}
}

func (t *fakeTxn) SetValue(key string, value proto.Message) kvs.Txn {
	t.values[key] = value
	t.order = append(t.order, key)
	return t
}

func (t *fakeTxn) Commit(ctx context.Context) (uint64, error) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := committedTxn{values: t.values, order: t.order, revert: kvs.IsWithRevert(ctx)}
	c.resync, c.verbose = kvs.IsResync(ctx)
	c.isResync = c.resync != kvs.NotResync
	_, c.retry = kvs.IsWithRetry(ctx)
	c.description, _ = kvs.IsWithDescription(ctx)
	s.commits = append(s.commits, c)
	seq := s.seq
	s.seq++
	if s.failed == nil {
		s.failed = make(map[string]bool)
	}
	for k := range t.values {
		delete(s.failed, k)
	}
	if s.failKey != "" {
		if _, ok := t.values[s.failKey]; ok {
			s.failed[s.failKey] = true
			return seq, &kvs.TransactionError{SeqNum: seq, KVErrors: []kvs.KeyWithError{{Key: s.failKey, Operation: kvs.OpCreate, Error: fmt.Errorf("injected failure of %s", s.failKey)}}}
		}
	}
	return seq, nil
}

func (s *fakeScheduler) all() []committedTxn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]committedTxn(nil), s.commits...)
}

func (s *fakeScheduler) setFailKey(k string) {
	s.mu.Lock()
	s.failKey = k
	s.mu.Unlock()
}

// journal records every handler call of a test, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// fakeHandler stages one key per event and fails on demand.
type fakeHandler struct {
	name     string
	j        *journal
	handles  func(api.Event) bool
	failWith map[string]error // event name -> error
	onUpdate func(ev api.Event, txn api.UpdateOperations)
	onResync func(ev api.Event, ks api.KubeStateData, count int, txn api.ResyncOperations)
}

func (h *fakeHandler) String() string { return h.name }

func (h *fakeHandler) HandlesEvent(ev api.Event) bool {
	if h.handles == nil {
		return true
	}
	return h.handles(ev)
}

func (h *fakeHandler) Resync(ev api.Event, ks api.KubeStateData, count int, txn api.ResyncOperations) error {
	h.j.add("%s.Resync(%s,%d)", h.name, ev.GetName(), count)
	txn.Put("config/"+h.name, wrapperspb.String(fmt.Sprintf("resync-%d", count)))
	if h.onResync != nil {
		h.onResync(ev, ks, count, txn)
	}
	return h.failWith[ev.GetName()]
}

func (h *fakeHandler) Update(ev api.Event, txn api.UpdateOperations) (string, error) {
	h.j.add("%s.Update(%s)", h.name, ev.GetName())
	if h.onUpdate != nil {
		h.onUpdate(ev, txn)
	}
	if err := h.failWith[ev.GetName()]; err != nil {
		return "", err
	}
	return "updated by " + h.name, nil
}

func (h *fakeHandler) Revert(ev api.Event) error {
	h.j.add("%s.Revert(%s)", h.name, ev.GetName())
	return nil
}

// testEvent is a configurable Update event.
type testEvent struct {
	api.Result
	name     string
	blocking bool
	txnType  api.UpdateTransactionType
	dir      api.UpdateDirectionType
}

func newTestEvent(name string, blocking bool, txnType api.UpdateTransactionType, dir api.UpdateDirectionType) *testEvent {
	return &testEvent{Result: api.NewResult(), name: name, blocking: blocking, txnType: txnType, dir: dir}
}

func (e *testEvent) GetName() string                            { return e.name }
func (e *testEvent) String() string                             { return "test event " + e.name }
func (e *testEvent) Method() api.EventMethodType                { return api.Update }
func (e *testEvent) IsBlocking() bool                           { return e.blocking }
func (e *testEvent) TransactionType() api.UpdateTransactionType { return e.txnType }
func (e *testEvent) Direction() api.UpdateDirectionType         { return e.dir }

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// configLoader hands the controller a fixed configuration.
type configLoader struct{ mutate func(*Config) }

func (l configLoader) LoadConfig(out any) (bool, error) {
	if l.mutate != nil {
		l.mutate(out.(*Config))
	}
	return true, nil
}

// startController builds and starts a controller; it is closed at test end.
func startController(t *testing.T, sched *fakeScheduler, mutate func(*Config), handlers ...api.EventHandler) *Controller {
	t.Helper()
	return startControllerWithClock(t, sched, nil, mutate, handlers...)
}

// startControllerWithClock is startController with the given clock (nil: real).
func startControllerWithClock(t *testing.T, sched *fakeScheduler, clk clock.WithTicker, mutate func(*Config), handlers ...api.EventHandler) *Controller {
	t.Helper()
	c := NewController(Deps{Log: quietLog(), Scheduler: sched, EventHandlers: handlers, Config: configLoader{mutate}, Clock: clk})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// loopTimers is how many timers the running loop always holds: the start-up deadline,
// the history trim ticker and the stall watchdog's ticker.
const loopTimers = 3

func sortedKeys(m map[string]proto.Message) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v == nil {
			k = "-" + k
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

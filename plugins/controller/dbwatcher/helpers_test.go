package dbwatcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Short intervals keep the whole package well under a minute.
const (
	testProbe      = 50 * time.Millisecond
	testLocalDelay = 200 * time.Millisecond
	testOpTimeout  = 300 * time.Millisecond
	waitTimeout    = 15 * time.Second
	testNode       = "node1"
)

// kv writes to etcd through a client.
type kv struct {
	t *testing.T
	c *clientv3.Client
}

func (k kv) put(key string, data []byte) int64 {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := k.c.Put(ctx, key, string(data))
	if err != nil {
		k.t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// putKube writes a Kubernetes value under the KSR prefix (rel is relative to it).
func (k kv) putKube(rel string, v proto.Message) int64 {
	k.t.Helper()
	data, err := dbresources.Marshal(v)
	if err != nil {
		k.t.Fatal(err)
	}
	return k.put(ksrkey.KsrPrefix+rel, data)
}

func (k kv) del(key string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := k.c.Delete(ctx, key); err != nil {
		k.t.Fatalf("delete %s: %v", key, err)
	}
}

// fakeLoop is an api.EventLoop that records the events. Fail, when set, decides whether
// a push is refused; Gate, when set, is waited on before a KubeStateChange is taken.
type fakeLoop struct {
	mu     sync.Mutex
	events []api.Event
	fail   func(api.Event) error
	gate   chan struct{}
	// waiting counts the pushes waiting on the gate.
	waiting atomic.Int32
	// pushed is signalled after every recorded event (waitFor waits on it).
	pushed chan struct{}
}

// newFakeLoop returns an empty fake event loop.
func newFakeLoop() *fakeLoop { return &fakeLoop{pushed: make(chan struct{}, 1)} }

func (f *fakeLoop) PushEvent(ev api.Event) error {
	f.mu.Lock()
	gate, fail := f.gate, f.fail
	f.mu.Unlock()
	if _, isChange := ev.(*api.KubeStateChange); isChange && gate != nil {
		f.waiting.Add(1)
		<-gate
		f.waiting.Add(-1)
	}
	if fail != nil {
		if err := fail(ev); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.mu.Unlock()
	select {
	case f.pushed <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeLoop) setFail(fn func(api.Event) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}

// snapshot returns the events received so far.
func (f *fakeLoop) snapshot() []api.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Event(nil), f.events...)
}

// waitFor checks cond over the events after every new event until it holds.
func (f *fakeLoop) waitFor(t *testing.T, what string, cond func([]api.Event) bool) []api.Event {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		evs := f.snapshot()
		if cond(evs) {
			return evs
		}
		select {
		case <-f.pushed:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s; events:\n%s", what, describe(f.snapshot()))
		}
	}
}

// barrier writes a pod of its own and waits for its event: the events of the watched
// KSR changes written before it were delivered by then (one watch delivers in
// revision order), so what was not delivered before the barrier never will be. It
// returns the events before the barrier's.
func (h *harness) barrier(t *testing.T, db kv, name string) []api.Event {
	t.Helper()
	db.putKube(podKey(name), testPod(name, "10.1.255.1"))
	evs := h.loop.waitFor(t, "the barrier "+name, func(evs []api.Event) bool {
		return len(evs) > 0 && isChangeOf(evs[len(evs)-1], podKey(name))
	})
	return evs[:len(evs)-1]
}

// isChangeOf tells whether ev is the KubeStateChange of key.
func isChangeOf(ev api.Event, key string) bool {
	c, ok := ev.(*api.KubeStateChange)
	return ok && c.Key == key
}

// waitForCount waits until at least n events arrived.
func (f *fakeLoop) waitForCount(t *testing.T, n int) []api.Event {
	t.Helper()
	return f.waitFor(t, fmt.Sprintf("%d events", n), func(evs []api.Event) bool { return len(evs) >= n })
}

// resyncs returns the DB resyncs among evs.
func resyncs(evs []api.Event) []*api.DBResync {
	var out []*api.DBResync
	for _, ev := range evs {
		if r, ok := ev.(*api.DBResync); ok {
			out = append(out, r)
		}
	}
	return out
}

// countResyncs counts the DB resyncs of the given locality.
func countResyncs(evs []api.Event, local bool) int {
	n := 0
	for _, r := range resyncs(evs) {
		if r.Local == local {
			n++
		}
	}
	return n
}

func describe(evs []api.Event) string {
	var b strings.Builder
	for i, ev := range evs {
		fmt.Fprintf(&b, "  %d: %s\n", i, ev.String())
	}
	return b.String()
}

// model replays events the way the controller applies them and checks that every
// change starts from the state the previous events left: a replayed or lost change
// shows up as a PrevValue that does not match.
type model struct {
	kube     api.KubeStateData
	external api.KeyValuePairs
}

func replay(t *testing.T, evs []api.Event) model {
	t.Helper()
	m := model{kube: api.NewKubeStateData(dbresources.Keywords()...), external: api.KeyValuePairs{}}
	for i, ev := range evs {
		switch e := ev.(type) {
		case *api.DBResync:
			m.kube = api.NewKubeStateData(dbresources.Keywords()...)
			for res, kvs := range e.KubeState {
				for k, v := range kvs {
					m.kube[res][k] = v
				}
			}
			if !e.Local {
				m.external = api.KeyValuePairs{}
				for k, v := range e.ExternalConfig {
					m.external[k] = v
				}
			}
		case *api.KubeStateChange:
			cur := m.kube[e.Resource][e.Key]
			if !equalOrNil(cur, e.PrevValue) {
				t.Errorf("event %d (%s): PrevValue %v, but the state held %v", i, e, e.PrevValue, cur)
			}
			if e.NewValue == nil {
				delete(m.kube[e.Resource], e.Key)
			} else {
				m.kube[e.Resource][e.Key] = e.NewValue
			}
		case *api.ExternalConfigChange:
			for k, v := range e.UpdatedKVs {
				if v == nil {
					delete(m.external, k)
				} else {
					m.external[k] = v
				}
			}
		}
	}
	return m
}

// assertKubeState compares state with want (resource -> rel key -> value); resources
// missing from want must be empty.
func assertKubeState(t *testing.T, what string, state api.KubeStateData, want map[string]map[string]proto.Message) {
	t.Helper()
	for _, res := range dbresources.Keywords() {
		got := state[res]
		if got == nil {
			t.Errorf("%s: resource %s missing", what, res)
			continue
		}
		w := want[res]
		if len(got) != len(w) {
			t.Errorf("%s: %s has keys %v, want %v", what, res, sortedKeys(got), sortedKeys(w))
			continue
		}
		for k, v := range w {
			if !equalOrNil(got[k], v) {
				t.Errorf("%s: %s %s = %v, want %v", what, res, k, got[k], v)
			}
		}
	}
	for res := range state {
		if _, known := want[res]; !known && len(state[res]) > 0 && !contains(dbresources.Keywords(), res) {
			t.Errorf("%s: unexpected resource %s", what, res)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// loader is an infra.ConfigLoader parsing YAML text the way configuration files are.
type loader string

func (l loader) LoadConfig(out any) (bool, error) {
	return true, infra.ParseConfig([]byte(l), out, true, nil)
}

// missingFile is an infra.ConfigLoader for an optional file that does not exist.
type missingFile struct{}

func (missingFile) LoadConfig(any) (bool, error) { return false, nil }

// etcdConf returns an etcd.conf for the endpoint with the test timeouts.
func etcdConf(endpoint string, delayedStart bool) loader {
	return loader(fmt.Sprintf("endpoints: [%q]\ninsecure-transport: true\ndial-timeout: 1s\noperation-timeout: %d\nallow-delayed-start: %v\n",
		endpoint, testOpTimeout.Nanoseconds(), delayedStart))
}

// slowEtcdConf returns an etcd.conf for the endpoint with timeouts long enough for a
// loaded machine (etcd must be up at Init).
func slowEtcdConf(endpoint string) loader {
	return loader(fmt.Sprintf("endpoints: [%q]\ninsecure-transport: true\ndial-timeout: 5s\noperation-timeout: 5s\n", endpoint))
}

// boltConf returns a bolt.conf for a file in dir.
func boltConf(dir string) loader {
	return loader(fmt.Sprintf("db-path: %s\nfile-mode: 432\nlock-timeout: 1s\n", filepath.Join(dir, "bolt", "bolt.db")))
}

// testCodec decodes external configuration under config/test/ into StringValues; a
// value starting with "!" is refused, other keys are not configuration.
func testCodec(key string, data []byte) (proto.Message, error) {
	if !strings.HasPrefix(key, "config/test/") {
		return nil, nil
	}
	if strings.HasPrefix(string(data), "!") {
		return nil, errors.New("test codec: refused value")
	}
	return wrapperspb.String(string(data)), nil
}

// statusLog records what the watcher reports through StatusReporter.
type statusLog struct {
	mu      sync.Mutex
	reports []bool
}

func (s *statusLog) report(connected bool, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports = append(s.reports, connected)
}

func (s *statusLog) get() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.reports...)
}

// harness is one watcher under test with its fakes.
type harness struct {
	w      *DBWatcher
	loop   *fakeLoop
	status *statusLog
	logs   *test.Hook
	reg    *prometheus.Registry
}

// newHarness builds and initialises a watcher; etcd may be nil (disabled). The watcher
// is closed at the end of the test and its goroutines are checked to be gone.
func newHarness(t *testing.T, etcd infra.ConfigLoader, boltDir string, adjust ...func(*Deps)) *harness {
	t.Helper()
	h := &harness{w: nil, loop: newFakeLoop(), status: &statusLog{}, reg: prometheus.NewRegistry()}
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	h.logs = hook
	deps := Deps{
		Log:                     log,
		NodeName:                testNode,
		EventLoop:               h.loop,
		EtcdConfig:              etcd,
		BoltConfig:              boltConf(boltDir),
		ExternalConfigCodec:     testCodec,
		Registerer:              h.reg,
		StatusReporter:          h.status.report,
		DelayLocalResync:        testLocalDelay,
		RemoteDBProbingInterval: testProbe,
	}
	for _, a := range adjust {
		a(&deps)
	}
	h.w = NewDBWatcher(deps)
	if err := h.w.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() {
		if err := h.w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		assertNoWatcherGoroutines(t)
	})
	return h
}

func (h *harness) start(t *testing.T) {
	t.Helper()
	if err := h.w.AfterInit(); err != nil {
		t.Fatalf("AfterInit: %v", err)
	}
}

// assertNoWatcherGoroutines fails when a goroutine of a watcher still runs.
func assertNoWatcherGoroutines(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, "no watcher goroutine left", func() error {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "dbwatcher.(*DBWatcher)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) > 0 {
			return fmt.Errorf("%d watcher goroutines still running:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		return nil
	})
}

// logged reports whether an entry at level with the given message and key was logged.
func (h *harness) logged(level logrus.Level, msg, key string) bool {
	for _, e := range h.logs.AllEntries() {
		if e.Level == level && e.Message == msg && (key == "" || e.Data["key"] == key) {
			return true
		}
	}
	return false
}

package kvscheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// ConfigLoader reads the plugin configuration (kvscheduler.conf) into out, a pointer
// to Config pre-filled with defaults. found is false when there is no file.
type ConfigLoader interface {
	LoadConfig(out any) (found bool, err error)
}

// Deps lists what the scheduler needs from the agent.
type Deps struct {
	// Log receives the scheduler's logs. Optional (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Config loads kvscheduler.conf. Optional (defaults apply).
	Config ConfigLoader
	// Registerer receives the scheduler's Prometheus metrics. Optional.
	Registerer prometheus.Registerer
	// Clock drives the retry timers and stamps the recorded transactions (their ages
	// trim the history). Optional (the real clock).
	Clock clock.WithDelayedExecution
}

// Config is the content of kvscheduler.conf.
type Config struct {
	// RecordTransactionHistory keeps executed transactions for GetTransactionHistory
	// and the REST API.
	RecordTransactionHistory bool `json:"record-transaction-history"`
	// TransactionHistoryAgeLimit is how long (minutes) a transaction stays recorded.
	TransactionHistoryAgeLimit uint32 `json:"transaction-history-age-limit"`
	// PermanentlyRecordedInitPeriod is how long (minutes) after start transactions
	// are recorded for good, regardless of the age limit.
	PermanentlyRecordedInitPeriod uint32 `json:"permanently-recorded-init-period"`
	// EnableTxnSimulation plans every transaction before executing it and records the
	// plan (RecordedTxn.Planned).
	EnableTxnSimulation bool `json:"enable-txn-simulation"`
	// PrintTxnSummary logs every transaction that changed something or failed.
	PrintTxnSummary bool `json:"print-txn-summary"`
	// TransactionHistoryMaxRecords bounds the recorded transactions (the oldest go
	// first, recent ones before those of the init period); 0 means no bound.
	TransactionHistoryMaxRecords int `json:"transaction-history-max-records"`
	// TransactionHistoryMaxBytes bounds the approximate memory of the recorded
	// transactions (api.RecordedTxn.ApproxMemory, which counts the heap of the values
	// they keep alive, the previous values of updates included); 0 means no bound.
	TransactionHistoryMaxBytes int `json:"transaction-history-max-bytes"`
	// TransactionHistoryMaxOps bounds the values and operations one record keeps
	// (api.RecordedTxn.Bound): a resync of 100k values keeps a bounded record, not a
	// copy of every value; 0 means no bound.
	TransactionHistoryMaxOps int `json:"transaction-history-max-ops"`
}

// DefaultConfig returns the configuration used when kvscheduler.conf is absent.
func DefaultConfig() Config {
	return Config{
		RecordTransactionHistory:      true,
		TransactionHistoryAgeLimit:    24 * 60,
		PermanentlyRecordedInitPeriod: 60,
		EnableTxnSimulation:           false,
		PrintTxnSummary:               true,
		TransactionHistoryMaxRecords:  10000,
		TransactionHistoryMaxBytes:    64 << 20,
		TransactionHistoryMaxOps:      1000,
	}
}

// Scheduler is the KV scheduler plugin: it implements api.KVScheduler.
//
// Create it with NewScheduler, or set Deps on a zero Scheduler and call Init. All
// transactions run on one internal goroutine in the order they were committed; Close
// stops it.
type Scheduler struct {
	Deps

	log     logrus.FieldLogger
	config  Config
	metrics *metrics
	clock   clock.WithDelayedExecution

	// mu guards the graph. The transaction goroutine holds it while it works, and
	// releases it around descriptor calls that touch the dataplane.
	mu sync.RWMutex
	g  *graph
	// retrieveOrder caches the Retrieve order of descriptors (nil: recompute).
	retrieveOrder []*descriptor
	retrieveErr   error

	seq  uint64 // last sequence number (transaction goroutine only)
	q    queue
	wg   sync.WaitGroup
	hist history
	// unlogged are finished transactions whose summary the transaction goroutine logs
	// once it has answered their committer (guarded by mu).
	unlogged []unloggedTxn

	timersMu sync.Mutex
	timers   map[clock.Timer]struct{}

	// failLog rate-limits the warnings of values that keep failing the same way.
	failLog failureLog

	initialized atomic.Bool
	closed      atomic.Bool
	closeOnce   sync.Once
}

var _ api.KVScheduler = (*Scheduler)(nil)

// NewScheduler builds and initializes a scheduler (Init included).
func NewScheduler(deps Deps) (*Scheduler, error) {
	s := &Scheduler{Deps: deps}
	if err := s.Init(); err != nil {
		return nil, err
	}
	return s, nil
}

// String returns the plugin name.
func (s *Scheduler) String() string { return "kvscheduler" }

// Init loads the configuration, registers the metrics and starts the transaction
// goroutine.
func (s *Scheduler) Init() error {
	if s.initialized.Load() {
		return nil
	}
	s.log = infra.LoggerOr(s.Log, s.String())
	s.config = DefaultConfig()
	if s.Config != nil {
		if _, err := s.Config.LoadConfig(&s.config); err != nil {
			return fmt.Errorf("kvscheduler: load config: %w", err)
		}
	}
	s.metrics = newMetrics()
	if s.Registerer != nil {
		if err := s.metrics.register(s.Registerer); err != nil {
			return fmt.Errorf("kvscheduler: register metrics: %w", err)
		}
	}
	s.mu.Lock()
	if s.g == nil {
		s.g = newGraph()
	}
	s.mu.Unlock()
	s.clock = s.Clock
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	s.hist.init(s.config, s.clock.Now())
	s.timers = make(map[clock.Timer]struct{})
	s.q.init()
	s.wg.Add(1)
	go s.run()
	s.initialized.Store(true)
	return nil
}

// AfterInit does nothing; it exists for the plugin life cycle.
func (s *Scheduler) AfterInit() error { return nil }

// Close stops the transaction goroutine and the retry timers. Transactions still
// queued and every later commit fail with api.ErrClosedScheduler. Close waits for the
// running transaction to finish.
func (s *Scheduler) Close() error {
	if !s.initialized.Load() {
		return nil
	}
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.timersMu.Lock()
		for t := range s.timers {
			t.Stop()
		}
		s.timers = nil
		s.timersMu.Unlock()
		for _, r := range s.q.close() {
			r.err = api.ErrClosedScheduler
			if r.done != nil {
				close(r.done)
			}
		}
		s.wg.Wait()
	})
	return nil
}

// RegisterKVDescriptor implements api.KVScheduler.
func (s *Scheduler) RegisterKVDescriptor(descriptors ...*api.KVDescriptor) error {
	if !s.initialized.Load() {
		return api.ErrNotInitialized
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, kd := range descriptors {
		if kd == nil || kd.Name == "" || kd.KeySelector == nil {
			return fmt.Errorf("register descriptor %v: %w (Name and KeySelector are required)", descName(kd), api.ErrInvalidDescriptor)
		}
		if _, ok := s.g.descByName[kd.Name]; ok {
			return fmt.Errorf("register descriptor %s: %w", kd.Name, api.ErrDescriptorExists)
		}
		d := &descriptor{KVDescriptor: kd, nodes: make(map[*node]struct{}), opTime: s.metrics.opObservers(kd.Name)}
		if kd.WithMetadata {
			d.meta = &metadataMap{m: make(map[string]api.Metadata)}
		}
		s.g.descs = append(s.g.descs, d)
		s.g.descByName[kd.Name] = d
		s.retrieveOrder, s.retrieveErr = nil, nil
		// values staged before the descriptor existed now have one
		for _, n := range s.g.nodes {
			if n.desc == nil && n.parent == nil && kd.KeySelector(n.key) {
				n.desc = d
				d.nodes[n] = struct{}{}
				var deps []api.Dependency
				if n.nb != nil && kd.Dependencies != nil {
					deps = kd.Dependencies(n.key, n.nb)
				}
				var nbErr error
				if n.nb != nil && kd.Validate != nil {
					nbErr = kd.Validate(n.key, n.nb)
				}
				s.g.setNB(n, n.nb, nbErr, deps)
			}
		}
		s.log.WithField("descriptor", kd.Name).Debug("descriptor registered")
	}
	return nil
}

func descName(kd *api.KVDescriptor) string {
	if kd == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", kd.Name)
}

// StartNBTransaction implements api.KVScheduler.
func (s *Scheduler) StartNBTransaction() api.Txn { return &txn{s: s} }

// txn is the staging area of one NB transaction.
type txn struct {
	s      *Scheduler
	values []api.KeyValuePair
}

// SetValue implements api.Txn. Repeated keys are resolved at commit (last wins).
func (t *txn) SetValue(key string, value proto.Message) api.Txn {
	t.values = append(t.values, api.KeyValuePair{Key: key, Value: value})
	return t
}

// Commit implements api.Txn.
func (t *txn) Commit(ctx context.Context) (uint64, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	req := &request{kind: reqNB, ctx: ctx, values: t.values, done: make(chan struct{})}
	return t.s.submit(ctx, req)
}

// submit queues req and waits for its execution, or for ctx to end while it is
// still queued.
func (s *Scheduler) submit(ctx context.Context, req *request) (uint64, error) {
	if !s.initialized.Load() {
		return 0, api.ErrNotInitialized
	}
	if s.closed.Load() || !s.q.push(req) {
		return 0, api.ErrClosedScheduler
	}
	select {
	case <-req.done:
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqQueued, reqCancelled) {
			return 0, fmt.Errorf("transaction not started: %w", ctx.Err())
		}
		<-req.done
	}
	return req.seq, req.err
}

// PushSBNotification implements api.KVScheduler.
func (s *Scheduler) PushSBNotification(values ...api.KVWithMetadata) error {
	if !s.initialized.Load() {
		return api.ErrNotInitialized
	}
	if len(values) == 0 {
		return nil
	}
	for _, kv := range values {
		if kv.Key == "" {
			return fmt.Errorf("SB notification: %w", api.ErrEmptyKey)
		}
	}
	vals := append([]api.KVWithMetadata(nil), values...)
	if s.closed.Load() || !s.q.push(&request{kind: reqSB, sb: vals}) {
		return api.ErrClosedScheduler
	}
	return nil
}

// GetMetadataMap implements api.KVScheduler.
func (s *Scheduler) GetMetadataMap(descriptor string) api.MetadataMap {
	if !s.initialized.Load() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.g.descByName[descriptor]
	if d == nil || d.meta == nil {
		return nil
	}
	return d.meta
}

// GetValueStatus implements api.KVScheduler.
func (s *Scheduler) GetValueStatus(key string) *api.ValueStatus {
	st := &api.ValueStatus{Key: key, State: api.StateNonexistent}
	if !s.initialized.Load() {
		return st
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.g.nodes[key]; n != nil {
		s.fillStatus(n, st)
	}
	return st
}

// AllValueStatuses returns the status of every value the scheduler knows, sorted by
// key.
func (s *Scheduler) AllValueStatuses(keyPrefix string) []*api.ValueStatus {
	if !s.initialized.Load() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*api.ValueStatus, 0, len(s.g.nodes))
	for k, n := range s.g.nodes {
		if !strings.HasPrefix(k, keyPrefix) {
			continue
		}
		st := &api.ValueStatus{Key: k}
		s.fillStatus(n, st)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (s *Scheduler) fillStatus(n *node, st *api.ValueStatus) {
	st.State = n.state
	st.LastOperation = n.lastOp
	if n.lastErr != nil {
		st.Error = n.lastErr.Error()
	}
	switch n.state {
	case api.StatePending:
		st.Details = s.g.missingDeps(n)
		if n.parent != nil && !n.parent.available() {
			st.Details = append(st.Details, "parent: "+n.parent.key)
		}
	case api.StateInvalid:
		var ive *api.InvalidValueError
		if errors.As(n.nbErr, &ive) {
			st.Details = append(st.Details, ive.InvalidFields...)
		}
	}
}

// GetTransactionHistory implements api.KVScheduler.
func (s *Scheduler) GetTransactionHistory(since, until time.Time) []*api.RecordedTxn {
	return s.hist.between(since, until)
}

// GetRecordedTransaction implements api.KVScheduler.
func (s *Scheduler) GetRecordedTransaction(seqNum uint64) *api.RecordedTxn {
	return s.hist.get(seqNum)
}

// DumpValuesByDescriptor implements api.KVScheduler.
func (s *Scheduler) DumpValuesByDescriptor(descriptor string, view api.View) ([]api.KVWithMetadata, error) {
	if !s.initialized.Load() {
		return nil, api.ErrNotInitialized
	}
	s.mu.RLock()
	d := s.g.descByName[descriptor]
	s.mu.RUnlock()
	if d == nil {
		return nil, fmt.Errorf("dump %q: %w", descriptor, api.ErrUnknownDescriptor)
	}
	switch view {
	case api.NBView, api.CachedView:
		s.mu.RLock()
		defer s.mu.RUnlock()
		return dumpGraph(d, view), nil
	case api.SBView:
		if d.Retrieve == nil {
			s.mu.RLock()
			defer s.mu.RUnlock()
			return dumpGraph(d, api.CachedView), nil
		}
		req := &request{kind: reqDump, dumpDesc: d, done: make(chan struct{})}
		if _, err := s.submit(context.Background(), req); err != nil {
			return nil, err
		}
		return req.dump, nil
	}
	return nil, fmt.Errorf("dump %s: unknown view %v", descriptor, view)
}

// dumpGraph lists the NB or cached values of d, sorted by key (caller holds mu).
func dumpGraph(d *descriptor, view api.View) []api.KVWithMetadata {
	out := make([]api.KVWithMetadata, 0, len(d.nodes))
	for n := range d.nodes {
		switch {
		case view == api.NBView && n.nb != nil:
			out = append(out, api.KVWithMetadata{Key: n.key, Value: n.nb, Metadata: n.metadata, Origin: api.FromNB})
		case view == api.CachedView && n.applied != nil:
			out = append(out, api.KVWithMetadata{Key: n.key, Value: n.applied, Metadata: n.metadata, Origin: n.origin})
		}
	}
	sortKVs(out)
	return out
}

func sortKVs(kvs []api.KVWithMetadata) {
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
}

// DescriptorNames lists the registered descriptors in registration order.
func (s *Scheduler) DescriptorNames() []string {
	if !s.initialized.Load() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, len(s.g.descs))
	for i, d := range s.g.descs {
		names[i] = d.Name
	}
	return names
}

// scheduleRetry arms a timer that queues a RetryFailedOps transaction.
func (s *Scheduler) scheduleRetry(r retryReq) {
	delay := r.opt.Period
	if r.opt.ExpBackoff {
		for i := 1; i < r.attempt; i++ {
			delay *= 2
		}
	}
	s.timersMu.Lock()
	defer s.timersMu.Unlock()
	if s.timers == nil { // closed
		return
	}
	var t clock.Timer
	t = s.clock.AfterFunc(delay, func() {
		s.timersMu.Lock()
		if s.timers == nil {
			s.timersMu.Unlock()
			return
		}
		delete(s.timers, t)
		s.timersMu.Unlock()
		s.q.push(&request{kind: reqRetry, retry: r})
	})
	s.timers[t] = struct{}{}
}

package kvscheduler

import (
	"context"
	"fmt"
	"math"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// summaryLimit bounds the lines per list in the logged transaction summary; the REST
// history keeps every operation.
const summaryLimit = 50

// execNB executes one NB transaction (transaction goroutine).
func (s *Scheduler) execNB(ctx context.Context, values []api.KeyValuePair) (uint64, error) {
	start := s.clock.Now()
	kind, verbose := api.IsResync(ctx)
	retryOpt, withRetry := api.IsWithRetry(ctx)
	revert := api.IsWithRevert(ctx)
	description, _ := api.IsWithDescription(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec := &api.RecordedTxn{SeqNum: s.seq, TxnType: api.NBTransaction, ResyncType: kind,
		Description: description, WithRevert: revert, Start: start, ValueCount: len(values)}
	if kind == api.NotResync || verbose {
		rec.Values = recordValues(values)
	}
	t := &txnExec{s: s, g: s.g, seq: s.seq, withRevert: revert}
	if withRetry {
		opt := retryOpt
		rec.Retry, t.retry = &opt, &opt
	}

	var txnErr error
	switch {
	case kind == api.DownstreamResync && len(values) > 0:
		txnErr = api.ErrCombinedDownstreamResyncWithChange
	case revert && kind != api.NotResync:
		txnErr = api.ErrRevertNotSupportedWithResync
	case kind == api.NotResync:
		s.runChange(t, rec, values)
	default:
		txnErr = s.runResync(t, rec, kind, values)
	}
	return s.finish(t, rec, txnErr)
}

func recordValues(values []api.KeyValuePair) []api.RecordedKVPair {
	out := make([]api.RecordedKVPair, len(values))
	for i, kv := range values {
		out[i] = api.RecordedKVPair{Key: kv.Key, Value: kv.Value, Origin: api.FromNB}
	}
	return out
}

// stage resolves the staged values to nodes: one entry per key (the last staged
// value wins, at the position of its last staging), empty keys and NB values under
// derived keys reported as errors. Deletions of unknown keys are dropped.
func (t *txnExec) stage(values []api.KeyValuePair, stamp uint64) ([]*node, []proto.Message) {
	g := t.g
	var nodes []*node
	var vals []proto.Message
	if len(values) <= len(t.stageBuf.nodes) {
		nodes, vals = t.stageBuf.nodes[:0], t.stageBuf.vals[:0] // a small transaction allocates nothing here
	} else {
		nodes, vals = make([]*node, 0, len(values)), make([]proto.Message, 0, len(values))
	}
	for i := len(values) - 1; i >= 0; i-- {
		kv := values[i]
		if kv.Key == "" {
			t.errs = append(t.errs, api.KeyWithError{Operation: api.OpCreate, Error: fmt.Errorf("staged value: %w", api.ErrEmptyKey)})
			t.failures++
			continue
		}
		n := g.getOrCreate(kv.Key) // also for a delete: it marks the key as staged
		if n.staged == stamp {
			continue
		}
		n.staged = stamp
		if n.parent != nil {
			t.errs = append(t.errs, api.KeyWithError{Key: kv.Key, Operation: api.OpCreate,
				Error: fmt.Errorf("value %s: key is a derived value of %s and cannot be set by NB", kv.Key, n.parent.key)})
			t.failures++
			continue
		}
		n.retry = t.retry
		nodes = append(nodes, n)
		vals = append(vals, kv.Value)
	}
	for i, j := 0, len(nodes)-1; i < j; i, j = i+1, j-1 {
		nodes[i], nodes[j] = nodes[j], nodes[i]
		vals[i], vals[j] = vals[j], vals[i]
	}
	return nodes, vals
}

// runChange executes an ordinary (non-resync) transaction.
func (s *Scheduler) runChange(t *txnExec, rec *api.RecordedTxn, values []api.KeyValuePair) {
	nodes, vals := t.stage(values, s.g.nextStamp())
	if t.withRevert {
		if t.prevalidate(nodes, vals); len(t.errs) > 0 {
			// all or nothing: nothing was applied
			for _, n := range nodes {
				if n.nb == nil && n.applied == nil && len(n.children) == 0 {
					s.g.removeNode(n)
				}
			}
			return
		}
	}
	if s.config.EnableTxnSimulation {
		rec.Planned = s.simulate(t, func(sim *txnExec) { sim.applyChange(nodes, vals) })
	}
	prev := t.applyChange(nodes, vals)
	if t.withRevert && t.failures > 0 {
		t.revert(nodes, prev)
	}
	for _, n := range nodes {
		if n.nb == nil && n.applied == nil && !n.dead {
			t.settle(n) // e.g. the delete of a key that did not exist
		}
	}
}

// simulate runs plan on a simulating copy of t and rolls the graph back; it returns
// the planned operations.
func (s *Scheduler) simulate(t *txnExec, plan func(sim *txnExec)) []api.RecordedOp {
	sim := &txnExec{s: s, g: s.g, seq: t.seq, sim: true, retry: t.retry, attempt: t.attempt,
		isRetry: t.isRetry, withRevert: t.withRevert}
	s.g.simulating = true
	plan(sim)
	s.g.rollback()
	s.g.simulating = false
	return sim.ops
}

// prevalidate validates every staged value up front (WithRevert transactions).
func (t *txnExec) prevalidate(nodes []*node, vals []proto.Message) {
	for i, n := range nodes {
		if vals[i] == nil || n.desc == nil {
			continue
		}
		if err := t.validate(n, vals[i]); err != nil {
			t.errs = append(t.errs, api.KeyWithError{Key: n.key, Operation: api.OpCreate,
				Error: fmt.Errorf("validate %s (descriptor %s): %w", n.key, n.desc.Name, err)})
		}
	}
}

// applyChange sets the new desired values, then reconciles them in staging order.
// It returns the previous desired values (for revert; nil without WithRevert).
func (t *txnExec) applyChange(nodes []*node, vals []proto.Message) []proto.Message {
	var prev []proto.Message
	if t.withRevert {
		prev = make([]proto.Message, len(nodes))
	}
	for i, n := range nodes {
		if prev != nil {
			prev[i] = n.nb
		}
		t.setNB(n, vals[i])
	}
	t.reconcileAll(nodes)
	return prev
}

// revert restores the previous desired values of the staged keys and reconciles
// them, then reconciles every other value the forward phase touched (dependents,
// derived values), undoing whatever the transaction changed. Operations that failed
// in the forward phase may be tried again here.
func (t *txnExec) revert(nodes []*node, prev []proto.Message) {
	forward := t.ops
	t.reverting = true
	defer func() { t.reverting = false }()
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.dead {
			if prev[i] == nil {
				continue
			}
			n = t.g.getOrCreate(n.key)
			nodes[i] = n
		}
		t.setNB(n, prev[i])
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		t.reconcile(nodes[i])
	}
	for i := len(forward) - 1; i >= 0; i-- {
		if n := t.g.nodes[forward[i].Key]; n != nil {
			t.reconcile(n)
		}
	}
}

// execSB applies an SB notification (transaction goroutine).
func (s *Scheduler) execSB(values []api.KVWithMetadata) {
	start := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec := &api.RecordedTxn{SeqNum: s.seq, TxnType: api.SBNotification, Start: start, ValueCount: len(values)}
	rec.Values = make([]api.RecordedKVPair, len(values))
	for i, kv := range values {
		rec.Values[i] = api.RecordedKVPair{Key: kv.Key, Value: kv.Value, Origin: api.FromSB}
	}
	t := &txnExec{s: s, g: s.g, seq: s.seq}
	apply := func(t *txnExec) {
		for _, kv := range values {
			n := t.g.nodes[kv.Key]
			if kv.Value == nil {
				if n != nil && n.parent == nil {
					if n.applied != nil {
						t.vanish(n)
					} else {
						t.settle(n)
					}
				}
				continue
			}
			if n == nil {
				n = t.g.getOrCreate(kv.Key)
			}
			if n.parent != nil {
				t.s.log.WithField("key", kv.Key).Warn("SB notification for a derived value ignored")
				continue
			}
			origin := api.FromSB
			if n.nb != nil {
				origin = api.FromNB
			}
			t.sbSet(n, kv.Value, kv.Metadata, origin)
		}
	}
	if s.config.EnableTxnSimulation {
		rec.Planned = s.simulate(t, apply)
	}
	apply(t)
	_, _ = s.finish(t, rec, nil)
}

// execRetry retries failed operations (transaction goroutine).
func (s *Scheduler) execRetry(r retryReq) {
	start := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var todo []*node
	for _, rk := range r.keys {
		n := s.g.nodes[rk.key]
		if n != nil && n.failGen == rk.failGen && n.state == api.StateRetrying {
			todo = append(todo, n)
		}
	}
	if len(todo) == 0 {
		return // everything was resolved in the meantime: nothing to record
	}
	s.seq++
	opt := r.opt
	rec := &api.RecordedTxn{SeqNum: s.seq, TxnType: api.RetryFailedOps, Start: start, Retry: &opt,
		Description: fmt.Sprintf("retry #%d of txn #%d", r.attempt, r.origSeq), ValueCount: len(todo)}
	for _, n := range todo {
		rec.Values = append(rec.Values, api.RecordedKVPair{Key: n.key, Value: n.nb, Origin: api.FromNB})
	}
	t := &txnExec{s: s, g: s.g, seq: s.seq, retry: &opt, attempt: r.attempt, isRetry: true}
	t.origSeq = r.origSeq
	apply := func(t *txnExec) {
		for _, n := range todo {
			t.reconcile(n)
		}
	}
	if s.config.EnableTxnSimulation {
		rec.Planned = s.simulate(t, apply)
	}
	apply(t)
	_, _ = s.finish(t, rec, nil)
}

// execDumpSB runs Retrieve of one descriptor for DumpValuesByDescriptor(SBView).
func (s *Scheduler) execDumpSB(d *descriptor) ([]api.KVWithMetadata, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var corr []api.KVWithMetadata
	for n := range d.nodes {
		if n.nb != nil {
			corr = append(corr, api.KVWithMetadata{Key: n.key, Value: n.nb, Metadata: n.metadata, Origin: api.FromNB})
		}
	}
	sortKVs(corr)
	t := &txnExec{s: s, g: s.g}
	out, err := t.callRetrieve(d, corr)
	if err != nil {
		return nil, fmt.Errorf("dump %s: retrieve: %w", d.Name, err)
	}
	sortKVs(out)
	return out, nil
}

// finish records the transaction, updates metrics, schedules retries and builds the
// error returned to the committer. Called with mu held.
func (s *Scheduler) finish(t *txnExec, rec *api.RecordedTxn, txnErr error) (uint64, error) {
	rec.Stop = s.clock.Now()
	rec.Executed = t.ops
	var err error
	if txnErr != nil || len(t.errs) > 0 {
		te := &api.TransactionError{SeqNum: rec.SeqNum, TxnError: txnErr, KVErrors: t.errs}
		rec.Error = te.Error()
		err = te
	}
	s.metrics.txnDone(rec, err != nil, s.g.pending)
	s.boundRecord(rec)
	s.hist.add(rec)
	s.scheduleRetries(t, rec.SeqNum)
	if s.config.PrintTxnSummary && (len(rec.Executed) > 0 || err != nil) {
		repeated := txnErr == nil && len(t.errs) > 0 && len(t.errs) == t.repeatedFailures
		s.unlogged = append(s.unlogged, unloggedTxn{rec: rec, failed: err != nil, repeated: repeated})
	}
	return rec.SeqNum, err
}

// boundRecord bounds rec (api.RecordedTxn.BoundSized) with the sizes the nodes know of
// the values the transaction replaced, and lets the nodes know the sizes of the values
// now applied: an update of a large value sizes the new value only, not the old one
// again.
func (s *Scheduler) boundRecord(rec *api.RecordedTxn) {
	g := s.g
	var computed sizeTable
	rec.BoundSized(s.config.TransactionHistoryMaxOps, g.replacedSizes.get, computed.add)
	g.replacedSizes.reset()
	if computed.len() == 0 {
		return
	}
	for _, op := range rec.Executed {
		if op.Value == nil {
			continue
		}
		if n := g.nodes[op.Key]; n != nil && n.applied == op.Value {
			if size, ok := computed.get(op.Value); ok && size <= math.MaxInt32 {
				n.appliedSize = int32(size)
			}
		}
	}
}

// scheduleRetries arms the retries of the failures of t: under the transaction's own
// policy, or (a transaction without one) under the policy each value was staged with.
func (s *Scheduler) scheduleRetries(t *txnExec, seq uint64) {
	if len(t.retryKeys) == 0 {
		return
	}
	if t.retry != nil {
		orig := seq
		if t.isRetry {
			orig = t.origSeq
		}
		s.scheduleRetry(retryReq{keys: t.retryKeys, attempt: t.attempt + 1, opt: *t.retry, origSeq: orig})
		return
	}
	byPolicy := make(map[api.RetryOpt][]retryKey)
	var order []api.RetryOpt
	for _, rk := range t.retryKeys {
		if _, ok := byPolicy[*rk.opt]; !ok {
			order = append(order, *rk.opt)
		}
		byPolicy[*rk.opt] = append(byPolicy[*rk.opt], rk)
	}
	for _, opt := range order {
		s.scheduleRetry(retryReq{keys: byPolicy[opt], attempt: 1, opt: opt, origSeq: seq})
	}
}

// unloggedTxn is a finished transaction whose summary is still to be logged.
type unloggedTxn struct {
	rec    *api.RecordedTxn
	failed bool
	// repeated: every failure repeats one logged as a warning less than
	// RepeatedFailureLogInterval ago; the summary is logged at debug level.
	repeated bool
}

// logSummaries logs the summaries of the transactions finished since the last call. The
// transaction goroutine calls it after it has answered the committer: formatting every
// value of a transaction takes a while and the committer need not wait for it.
func (s *Scheduler) logSummaries() {
	s.mu.Lock()
	pending := s.unlogged
	s.unlogged = nil
	s.mu.Unlock()
	for _, u := range pending {
		switch {
		case u.failed && u.repeated:
			if infra.LevelEnabled(s.log, logrus.DebugLevel) {
				s.log.Debug(u.rec.Summary(summaryLimit))
			}
		case u.failed:
			s.log.Warn(u.rec.Summary(summaryLimit))
		case infra.LevelEnabled(s.log, logrus.InfoLevel):
			s.log.Info(u.rec.Summary(summaryLimit))
		}
	}
}

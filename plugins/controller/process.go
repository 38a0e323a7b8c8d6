package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Banner marks that open and close the log lines of every event, easy to search for.
const (
	bannerOpen  = ">>>>>>>>>>"
	bannerClose = "<<<<<<<<<<"
)

// eventRun is one event on its way through the phases of processEvent.
type eventRun struct {
	queued   api.Event // as received (a follow-up keeps its wrapper)
	ev       api.Event // the event itself
	method   api.EventMethodType
	update   api.UpdateEvent // nil for resyncs
	txnType  api.UpdateTransactionType
	handlers []api.EventHandler
	rec      *EventRecord
	txn      *schedulerTxn

	ran          []handlerRun // handlers whose Update/Resync succeeded, with the event each saw
	changes      []string     // "handler: change" descriptions
	errs         []error
	stopped      bool // a handler stopped processing (revert, fatal or abort)
	needsHealing bool
	fatalErr     error
	txnErr       error
	reverted     bool // the transaction was reverted by the scheduler

	// staged is how many changes of a batch event were staged before the event
	// began (the first one, carried over from the part before a split).
	staged int
	// next is the rest of a batch that was split, to process once this part is done.
	next *eventRun
	// followUps counts the follow-ups the handlers pushed.
	followUps int
}

// handlerRun is a handler that ran successfully and the event it saw (a batch's
// handlers see each of its changes).
type handlerRun struct {
	h  api.EventHandler
	ev api.Event
}

// revertsOnFailure is true for an update whose failure undoes it (AddPod).
func (r *eventRun) revertsOnFailure() bool {
	return r.txnType == api.RevertOnFailure && !r.method.IsResync()
}

// processEvent runs one event through its phases: update the inputs, let the handlers
// stage, merge the external configuration, commit, revert a failed RevertOnFailure
// event, record, take care of what follows (abort, health, healing), and last tell the
// producer the result.
//
// A batch that splits (see stageBatch) is processed as consecutive events, each with
// its own record and transaction.
func (c *Controller) processEvent(queued api.Event) {
	r, ok := c.updateInputs(queued)
	if !ok {
		return
	}
	for {
		c.setBusy(r.ev.GetName())
		c.begin(r)
		c.stage(r)
		c.mergeExternalConfig(r.ev, r.txn)
		c.commit(r)
		c.revert(r)
		c.notifyCommitted(r)
		err := c.record(r)
		c.setBusy("")
		c.afterEvent(r, err)
		if r.next == nil || c.aborting {
			queued.Done(err)
			return
		}
		r = r.next
	}
}

// updateInputs keeps the controller's own view of the inputs (Kubernetes state,
// external configuration) current and classifies the event.
func (c *Controller) updateInputs(queued api.Event) (*eventRun, bool) {
	ev := unwrapFollowUp(queued)
	r := &eventRun{queued: queued, ev: ev, method: ev.Method(), txnType: api.BestEffort}
	if r.method.IsResync() {
		c.resyncCount++
		switch e := ev.(type) {
		case *api.DBResync:
			c.kubeState = e.KubeState
			if c.kubeState == nil {
				c.kubeState = make(api.KubeStateData)
			}
			c.externalConfig["db"] = e.ExternalConfig
		case *api.ExternalConfigResync:
			c.externalConfig[e.Source] = e.ExternalConfig
		case *api.HealingResync:
			if e.Type == api.AfterError {
				c.healingScheduled = false
			}
		}
		return r, true
	}
	upd, ok := ev.(api.UpdateEvent)
	if !ok {
		err := fmt.Errorf("event %s has method Update but does not implement UpdateEvent", ev.GetName())
		c.Log.Error(err)
		ev.Done(err)
		return nil, false
	}
	r.update, r.txnType = upd, upd.TransactionType()
	switch e := ev.(type) {
	case *api.KubeStateChange:
		c.applyKubeStateChange(e)
	case *api.ExternalConfigChange:
		c.applyExternalChange(e)
	}
	return r, true
}

// begin selects the handlers, numbers the event, opens its record and announces it.
func (c *Controller) begin(r *eventRun) {
	if _, batch := r.ev.(*changeBatch); !batch {
		r.handlers = c.selectHandlers(r.ev, r.update)
	}
	c.currentSeq = c.seqNum
	c.seqNum++
	carried := r.rec // the part of a split batch carries the records of its first change
	r.rec = &EventRecord{
		SeqNum:          c.currentSeq,
		ProcessingStart: c.clock.Now(),
		Name:            r.ev.GetName(),
		Description:     r.ev.String(),
		Method:          r.method,
	}
	if carried != nil {
		r.rec.Handlers = carried.Handlers
	}
	if f, ok := r.queued.(*followUp); ok {
		r.rec.IsFollowUp, r.rec.FollowUpTo = true, f.to
	}
	seq := c.currentSeq
	pushFollowUp := func(ev api.Event) error {
		err := c.pushFollowUp(ev, seq)
		if err == nil {
			r.followUps++
		}
		return err
	}
	if r.txn == nil {
		r.txn = newSchedulerTxn(pushFollowUp)
	} else {
		r.txn.followUp = pushFollowUp
	}
	c.logNewEvent(r.rec, r.handlers)
}

// stage lets the handlers stage their configuration, in order, until one stops the event.
// A batch runs them over each of its changes in turn, with the cached Kubernetes state
// as of that change.
func (c *Controller) stage(r *eventRun) {
	if b, ok := r.ev.(*changeBatch); ok {
		c.stageBatch(r, b)
		return
	}
	for _, h := range r.handlers {
		if c.runHandler(r, h, r.ev) {
			return
		}
	}
}

// stageBatch lets the handlers stage each change of a batch in turn, every change in
// a layer of its own (see schedulerTxn.endChange). A change that stages a key an
// earlier change of the batch staged splits the batch: this event ends before that
// change, and r.next, the rest of the batch, starts with what that change staged, its
// handler records and errors. A change whose handlers push follow-ups ends the batch
// after it: the rest waits at the head of the backlog, so that the follow-ups run
// right after the change that called for them, as they would without batches.
func (c *Controller) stageBatch(r *eventRun, b *changeBatch) {
	defer func() { r.txn.layer = nil }()
	for i := r.staged; i < len(b.changes); i++ {
		ch := b.changes[i]
		c.applyKubeStateChange(ch)
		marks := r.marks()
		pushed := r.followUps
		r.txn.beginChange()
		for _, h := range c.selectHandlers(ch, ch) {
			if c.runHandler(r, h, ch) {
				// The handlers see no more of the batch (the healing resync or the
				// abort takes over), but the cached state follows every change taken.
				for _, rest := range b.changes[i+1:] {
					c.applyKubeStateChange(rest)
				}
				return
			}
		}
		followedUp := r.followUps > pushed
		if !r.txn.endChange() {
			r.next = r.splitAt(b, i, marks)
			if followedUp {
				c.deferChanges(r.next, b.changes, i+1)
			}
			return
		}
		if followedUp {
			c.deferChanges(r, b.changes, i+1)
			return
		}
	}
}

// deferChanges ends the batch of r after changes[:end] and puts the rest at the head of
// the backlog (the follow-ups pushed meanwhile run first).
func (c *Controller) deferChanges(r *eventRun, changes []*api.KubeStateChange, end int) {
	if end == len(changes) {
		return
	}
	var rest api.Event = &changeBatch{changes: changes[end:]}
	if end+1 == len(changes) {
		rest = changes[end]
	}
	c.backlog = slices.Insert(c.backlog, 0, rest)
	cur := r.ev.(*changeBatch).changes
	r.ev = &changeBatch{changes: cur[:len(cur)-(len(changes)-end)]}
	if r.rec != nil {
		r.rec.Description = r.ev.String()
	}
}

// runMarks are the lengths of what an event run collects, before one change of a batch.
type runMarks struct {
	handlers, ran, changes, errs int
	needsHealing                 bool
}

func (r *eventRun) marks() runMarks {
	return runMarks{handlers: len(r.rec.Handlers), ran: len(r.ran), changes: len(r.changes), errs: len(r.errs), needsHealing: r.needsHealing}
}

// splitAt ends r's batch before change i and returns the run of the rest, which
// takes over change i's staged values and what its handlers recorded (collected
// since m).
func (r *eventRun) splitAt(b *changeBatch, i int, m runMarks) *eventRun {
	next := &eventRun{
		queued:  r.queued,
		ev:      &changeBatch{changes: b.changes[i:]},
		method:  r.method,
		update:  r.update,
		txnType: r.txnType,
		staged:  1,
		txn:     r.txn.splitLayer(),
		rec:     &EventRecord{Handlers: slices.Clone(r.rec.Handlers[m.handlers:])},
		ran:     slices.Clone(r.ran[m.ran:]),
		changes: slices.Clone(r.changes[m.changes:]),
		errs:    slices.Clone(r.errs[m.errs:]),
	}
	next.needsHealing = len(next.errs) > 0
	r.rec.Handlers, r.ran, r.changes, r.errs = r.rec.Handlers[:m.handlers], r.ran[:m.ran], r.changes[:m.changes], r.errs[:m.errs]
	r.needsHealing = m.needsHealing
	r.ev = &changeBatch{changes: b.changes[:i]}
	r.rec.Description = r.ev.String()
	return next
}

// runHandler lets one handler process ev (Resync or Update) and records the outcome;
// it returns true when the handler's error stops the event.
func (c *Controller) runHandler(r *eventRun, h api.EventHandler, ev api.Event) (stop bool) {
	var (
		change string
		err    error
	)
	if r.method.IsResync() {
		err = h.Resync(ev, c.kubeState, c.resyncCount, r.txn)
	} else {
		change, err = h.Update(ev, r.txn)
	}
	hr := HandlerRecord{Handler: h.String(), Change: change}
	if change != "" {
		r.changes = append(r.changes, h.String()+": "+change)
	}
	if err != nil {
		hr.Error, hr.ErrorStr = err, err.Error()
		r.errs = append(r.errs, fmt.Errorf("%s: %w", h, err))
	}
	r.rec.Handlers = append(r.rec.Handlers, hr)
	if err == nil {
		r.ran = append(r.ran, handlerRun{h: h, ev: ev})
		return false
	}
	switch {
	case api.IsFatal(err):
		r.fatalErr, r.stopped = err, true
	case api.IsAbort(err):
		r.needsHealing, r.stopped = true, true
	case r.revertsOnFailure():
		r.stopped = true
	case r.txnType != api.BestEffortIgnoreErrors || r.method.IsResync():
		r.needsHealing = true
	}
	return r.stopped
}

// commit sends the staged values to the scheduler in one transaction (none for an
// update that staged nothing) and records which values failed.
func (c *Controller) commit(r *eventRun) {
	if r.stopped || (r.method == api.Update && r.txn.isEmpty()) {
		return
	}
	ctx := c.txnContext(r.ev, r.method, r.txnType, r.changes)
	seq, err := r.txn.commit(ctx, c.Scheduler)
	if rt := c.Scheduler.GetRecordedTransaction(seq); rt != nil {
		r.rec.Txn = rt
	}
	if err != nil {
		r.txnErr = err
		r.rec.TxnError, r.rec.TxnErrorStr = err, err.Error()
		r.errs = append(r.errs, fmt.Errorf("transaction: %w", err))
		if r.revertsOnFailure() {
			r.reverted = true
		} else {
			c.noteFailedValues(err)
			if !c.onlyExternalKeysFailed(err, r.txn) {
				r.needsHealing = true
			}
		}
	}
	if !r.reverted {
		c.updateInternalConfig(r.method, r.txn)
	}
}

// revert undoes the internal state of the handlers that ran, in reverse, when a
// RevertOnFailure event failed (the scheduler reverted the configuration).
func (c *Controller) revert(r *eventRun) {
	if !r.revertsOnFailure() || len(r.errs) == 0 || r.fatalErr != nil {
		return
	}
	for i := len(r.ran) - 1; i >= 0; i-- {
		h, ev := r.ran[i].h, r.ran[i].ev
		rr := HandlerRecord{Handler: h.String(), Revert: true}
		if err := h.Revert(ev); err != nil {
			rr.Error, rr.ErrorStr = err, err.Error()
			r.needsHealing = true
			c.Log.WithError(err).WithField("handler", h.String()).Error("revert failed")
		}
		r.rec.Handlers = append(r.rec.Handlers, rr)
	}
}

// record finishes the event's record (history, log banner, metrics) and returns the
// event's error (reported to the producer once the event is fully processed).
func (c *Controller) record(r *eventRun) error {
	eventErr := errors.Join(r.errs...)
	r.rec.ProcessingEnd = c.clock.Now()
	c.history.add(r.rec)
	c.logFinalizedEvent(r.rec, eventErr)
	c.metrics.observe(r.rec.Name, outcome(eventErr, r.fatalErr), r.rec.ProcessingEnd.Sub(r.rec.ProcessingStart))
	switch e := r.ev.(type) {
	case *changeBatch:
		c.metrics.batchChanges.Observe(float64(len(e.changes)))
	case *api.KubeStateChange:
		c.metrics.batchChanges.Observe(1)
	}
	if r.next != nil {
		c.metrics.batchSplits.Inc()
	}
	return eventErr
}

// afterEvent stops the loop after a fatal error; otherwise it keeps the healing state
// (backoff of failed healing resyncs, failing values) and the health report current,
// and schedules the healing resync that repairs what failed.
func (c *Controller) afterEvent(r *eventRun, eventErr error) {
	if r.fatalErr != nil {
		c.abort(r.fatalErr)
		return
	}
	if h, ok := r.ev.(*api.HealingResync); ok && h.Type == api.AfterError {
		outcome := "ok"
		if eventErr != nil {
			outcome = "error"
			c.healingFailures++
			c.Log.WithError(eventErr).WithField("consecutive-failures", c.healingFailures).
				Warn("healing resync failed: retried with backoff")
		}
		c.metrics.healing.WithLabelValues(outcome).Inc()
	}
	if r.method.IsResync() && eventErr == nil {
		clear(c.failedValues)
		if r.method != api.DownstreamResync {
			c.healingFailures = 0
		}
	}
	if r.method == api.FullResync {
		c.releaser.request()
	}
	if r.needsHealing {
		cause := eventErr
		if cause == nil {
			cause = r.txnErr
		}
		c.scheduleHealing(cause)
	}
	c.pruneFailedValues()
	c.updateHealth()
}

func outcome(err, fatal error) string {
	switch {
	case fatal != nil:
		return "fatal"
	case err != nil:
		return "error"
	}
	return "ok"
}

// selectHandlers returns the handlers interested in ev, in the order they run.
func (c *Controller) selectHandlers(ev api.Event, upd api.UpdateEvent) []api.EventHandler {
	if ev.Method() == api.DownstreamResync {
		return nil
	}
	all := c.EventHandlers
	reverse := upd != nil && upd.Direction() == api.Reverse
	out := make([]api.EventHandler, 0, len(all))
	for i := range all {
		h := all[i]
		if reverse {
			h = all[len(all)-1-i]
		}
		if h.HandlesEvent(ev) {
			out = append(out, h)
		}
	}
	return out
}

// onlyExternalKeysFailed is true when every failed key of err comes from external
// configuration only: those failures are the external source's business, not a reason
// to heal the agent.
func (c *Controller) onlyExternalKeysFailed(err error, txn *schedulerTxn) bool {
	var te *kvs.TransactionError
	if !errors.As(err, &te) || te.TxnError != nil {
		return false
	}
	keys := te.FailedKeys()
	if len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		if _, internal := txn.values[k]; internal {
			return false
		}
		if _, internal := c.internalConfig[k]; internal {
			return false
		}
		if c.externalValue(k) == nil {
			return false
		}
	}
	return true
}

// updateInternalConfig keeps the cache of handler-staged configuration current.
func (c *Controller) updateInternalConfig(method api.EventMethodType, txn *schedulerTxn) {
	switch {
	case method == api.Update:
		for k, v := range txn.values {
			if v == nil {
				delete(c.internalConfig, k)
			} else {
				c.internalConfig[k] = v
			}
		}
	case method != api.DownstreamResync:
		c.internalConfig = make(api.KeyValuePairs, len(txn.values))
		for k, v := range txn.values {
			if v != nil {
				c.internalConfig[k] = v
			}
		}
	}
}

// describedChanges is how many handler changes a transaction's description names (a
// batch has one or more per change).
const describedChanges = 16

// txnContext builds the scheduler options of an event's transaction.
func (c *Controller) txnContext(ev api.Event, method api.EventMethodType, txnType api.UpdateTransactionType, changes []string) context.Context {
	ctx := context.Background()
	desc := ev.GetName()
	if len(changes) > describedChanges {
		desc += fmt.Sprintf(": %s; ... and %d more", strings.Join(changes[:describedChanges], "; "), len(changes)-describedChanges)
	} else if len(changes) > 0 {
		desc += ": " + strings.Join(changes, "; ")
	}
	ctx = kvs.WithDescription(ctx, desc)
	if c.config.EnableRetry {
		ctx = kvs.WithRetry(ctx, time.Duration(c.config.DelayRetry), c.config.MaxRetryAttempts, c.config.EnableExpBackoffRetry)
	}
	switch method {
	case api.FullResync:
		ctx = kvs.WithResync(ctx, kvs.FullResync, c.resyncCount == 1)
	case api.UpstreamResync:
		ctx = kvs.WithResync(ctx, kvs.UpstreamResync, c.resyncCount == 1)
	case api.DownstreamResync:
		ctx = kvs.WithResync(ctx, kvs.DownstreamResync, false)
	case api.Update:
		if txnType == api.RevertOnFailure {
			ctx = kvs.WithRevert(ctx)
		}
	}
	return ctx
}

// logNewEvent writes the opening banner of an event: one line, details in fields.
func (c *Controller) logNewEvent(rec *EventRecord, handlers []api.EventHandler) {
	if !infra.LevelEnabled(c.Log, logrus.InfoLevel) {
		return
	}
	names := make([]string, len(handlers))
	for i, h := range handlers {
		names[i] = h.String()
	}
	title, details, _ := strings.Cut(rec.Description, "\n")
	handled := orNone(names)
	if rec.Name == batchName {
		handled = "those of each change"
	}
	entry := c.Log.WithField("seq", rec.SeqNum).WithField("method", rec.Method.String()).
		WithField("handlers", handled)
	if rec.IsFollowUp {
		entry = entry.WithField("followUpTo", rec.FollowUpTo)
	}
	if details != "" {
		entry = entry.WithField("details", strings.ReplaceAll(strings.TrimSpace(details), "\n", ";"))
	}
	entry.Infof("%s NEW EVENT #%d: %s", bannerOpen, rec.SeqNum, title)
}

// logFinalizedEvent writes the closing banner: what each handler did, the transaction,
// the errors and the duration.
func (c *Controller) logFinalizedEvent(rec *EventRecord, err error) {
	if err == nil && !infra.LevelEnabled(c.Log, logrus.InfoLevel) {
		return
	}
	var handled []string
	for _, h := range rec.Handlers {
		entry := h.Handler
		if h.Revert {
			entry += " (revert)"
		}
		if h.Change != "" {
			entry += " [" + h.Change + "]"
		}
		handled = append(handled, entry)
	}
	entry := c.Log.WithField("seq", rec.SeqNum).WithField("handledBy", orNone(handled)).
		WithField("duration", rec.ProcessingEnd.Sub(rec.ProcessingStart).Round(time.Microsecond))
	if rec.Txn != nil {
		entry = entry.WithField("txn", rec.Txn.SeqNum)
	}
	if err != nil {
		entry.WithError(err).Errorf("%s FINALIZED EVENT #%d: %s", bannerClose, rec.SeqNum, rec.Name)
		return
	}
	entry.Infof("%s FINALIZED EVENT #%d: %s", bannerClose, rec.SeqNum, rec.Name)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "<none>"
	}
	return strings.Join(s, ", ")
}

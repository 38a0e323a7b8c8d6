package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Banner marks that open and close the log lines of every event, easy to search for.
const (
	bannerOpen  = ">>>>>>>>>>"
	bannerClose = "<<<<<<<<<<"
)

// processEvent runs one event through the handlers and commits its transaction.
func (c *Controller) processEvent(queued api.Event) {
	ev := unwrapFollowUp(queued)
	method := ev.Method()
	start := time.Now()

	// 1-2: update the controller's own view of the input.
	var updateEv api.UpdateEvent
	if method.IsResync() {
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
	} else {
		var ok bool
		updateEv, ok = ev.(api.UpdateEvent)
		if !ok {
			err := fmt.Errorf("event %s has method Update but does not implement UpdateEvent", ev.GetName())
			c.Log.Error(err)
			ev.Done(err)
			return
		}
		switch e := ev.(type) {
		case *api.KubeStateChange:
			c.applyKubeStateChange(e)
		case *api.ExternalConfigChange:
			c.applyExternalChange(e)
		}
	}

	// 3-4: the handlers for this event, in its order.
	handlers := c.selectHandlers(ev, updateEv)

	// 5-6: record and announce.
	c.currentSeq = c.seqNum
	c.seqNum++
	rec := &EventRecord{
		SeqNum:          c.currentSeq,
		ProcessingStart: start,
		Name:            ev.GetName(),
		Description:     ev.String(),
		Method:          method,
	}
	if f, ok := queued.(*followUp); ok {
		rec.IsFollowUp, rec.FollowUpTo = true, f.to
	}
	c.logNewEvent(rec, handlers)

	// 7: let the handlers stage their configuration.
	txn := newSchedulerTxn()
	var (
		errs         []error
		changes      []string
		needsHealing bool
		stopped      bool // processing stopped early (revert, fatal or abort)
		fatalErr     error
		ran          []api.EventHandler // handlers whose Update/Resync succeeded
	)
	txnType := api.BestEffort
	if updateEv != nil {
		txnType = updateEv.TransactionType()
	}
	for _, h := range handlers {
		var (
			change string
			err    error
		)
		if method.IsResync() {
			err = h.Resync(ev, c.kubeState, c.resyncCount, txn)
		} else {
			change, err = h.Update(ev, txn)
		}
		hr := HandlerRecord{Handler: h.String(), Change: change}
		if change != "" {
			changes = append(changes, h.String()+": "+change)
		}
		if err != nil {
			hr.Error, hr.ErrorStr = err, err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", h, err))
		}
		rec.Handlers = append(rec.Handlers, hr)
		if err == nil {
			ran = append(ran, h)
			continue
		}
		switch {
		case api.IsFatal(err):
			fatalErr, stopped = err, true
		case api.IsAbort(err):
			needsHealing, stopped = true, true
		case txnType == api.RevertOnFailure && !method.IsResync():
			stopped = true
		case txnType != api.BestEffortIgnoreErrors || method.IsResync():
			needsHealing = true
		}
		if stopped {
			break
		}
	}

	// 8: merge the external configuration over the handlers' values.
	c.mergeExternalConfig(ev, txn)

	// 9: commit.
	var txnErr error
	committed := false
	reverted := false
	if !stopped && !(method == api.Update && txn.isEmpty()) {
		ctx := c.txnContext(ev, method, txnType, changes)
		seq, err := txn.commit(ctx, c.Scheduler)
		committed = true
		if rt := c.Scheduler.GetRecordedTransaction(seq); rt != nil {
			rec.Txn = rt
		}
		if err != nil {
			txnErr = err
			rec.TxnError, rec.TxnErrorStr = err, err.Error()
			errs = append(errs, fmt.Errorf("transaction: %w", err))
			if txnType == api.RevertOnFailure && !method.IsResync() {
				reverted = true
			} else if !c.onlyExternalKeysFailed(err, txn) {
				needsHealing = true
			}
		}
	}
	if committed && !reverted {
		c.updateInternalConfig(method, txn)
	}

	// 10: a failed RevertOnFailure event: undo the handlers' internal state.
	if txnType == api.RevertOnFailure && !method.IsResync() && len(errs) > 0 && fatalErr == nil {
		for i := len(ran) - 1; i >= 0; i-- {
			h := ran[i]
			rr := HandlerRecord{Handler: h.String(), Revert: true}
			if err := h.Revert(ev); err != nil {
				rr.Error, rr.ErrorStr = err, err.Error()
				needsHealing = true
				c.Log.WithError(err).WithField("handler", h.String()).Error("revert failed")
			}
			rec.Handlers = append(rec.Handlers, rr)
		}
	}

	// 11: finish the record and report the result.
	eventErr := errors.Join(errs...)
	rec.ProcessingEnd = time.Now()
	c.history.add(rec)
	c.logFinalizedEvent(rec, eventErr)
	c.metrics.observe(rec.Name, outcome(eventErr, fatalErr), rec.ProcessingEnd.Sub(start))
	queued.Done(eventErr)

	// 12: a fatal error, or a failed after-error healing, stops the loop.
	if fatalErr != nil {
		c.abort(fatalErr)
		return
	}
	if h, ok := ev.(*api.HealingResync); ok && h.Type == api.AfterError && eventErr != nil {
		c.abort(api.NewFatalError(fmt.Errorf("healing resync failed: %w", eventErr)))
		return
	}
	if method.IsResync() && method != api.DownstreamResync {
		if eventErr == nil {
			c.report(health.OK, "")
		} else if c.resyncCount == 1 {
			c.report(health.Init, "start-up resync failed, healing scheduled: "+eventErr.Error())
		}
	}

	// 13: anything else that failed is repaired by a full resync a little later.
	if needsHealing {
		cause := eventErr
		if cause == nil {
			cause = txnErr
		}
		c.scheduleHealing(cause)
	}
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

// mergeExternalConfig stages external values over the handlers' ones: all of them for a
// resync, only the keys touched by this event for an update.
func (c *Controller) mergeExternalConfig(ev api.Event, txn *schedulerTxn) {
	if ev.Method() == api.DownstreamResync {
		return
	}
	if ev.Method().IsResync() {
		for _, src := range c.externalConfig {
			for key := range src {
				if _, done := txn.merged[key]; done {
					continue
				}
				txn.merged[key] = mergeOver(txn.values[key], c.externalValue(key))
			}
		}
		return
	}
	touched := make(map[string]struct{})
	for key := range txn.values {
		touched[key] = struct{}{}
	}
	if e, ok := ev.(*api.ExternalConfigChange); ok {
		for key := range e.UpdatedKVs {
			touched[key] = struct{}{}
		}
	}
	for key := range touched {
		ext := c.externalValue(key)
		internal, staged := txn.values[key]
		if !staged {
			internal = c.internalConfig[key]
		}
		switch {
		case ext != nil && internal != nil:
			txn.merged[key] = mergeOver(internal, ext)
		case ext != nil:
			txn.merged[key] = ext
		case !staged:
			// External value removed: fall back to the internal one (or delete).
			txn.merged[key] = internal
		}
	}
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

// txnContext builds the scheduler options of an event's transaction.
func (c *Controller) txnContext(ev api.Event, method api.EventMethodType, txnType api.UpdateTransactionType, changes []string) context.Context {
	ctx := context.Background()
	desc := ev.GetName()
	if len(changes) > 0 {
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
	names := make([]string, len(handlers))
	for i, h := range handlers {
		names[i] = h.String()
	}
	title, details, _ := strings.Cut(rec.Description, "\n")
	entry := c.Log.WithField("seq", rec.SeqNum).WithField("method", rec.Method.String()).
		WithField("handlers", orNone(names))
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

package controller

import "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"

// notifyCommitted tells the handlers that ran the update and observe commits
// (api.CommitObserver) how the transaction of the event ended.
func (c *Controller) notifyCommitted(r *eventRun) {
	if r.stopped || r.method.IsResync() {
		return
	}
	for _, run := range r.ran {
		if o, ok := run.h.(api.CommitObserver); ok {
			o.Committed(run.ev, r.txnErr)
		}
	}
}

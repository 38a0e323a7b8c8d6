package natplugin

import (
	"fmt"

	govppapi "go.fd.io/govpp/api"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// pipeline keeps requests in flight on one channel across descriptor calls (the
// DNat44 descriptor's CreateAsync): requests are sent at once, with at most
// govppmux.Window(ch) outstanding, and their replies, which arrive in order, are read as late as possible.
// It is used from the scheduler's goroutine only.
type pipeline struct {
	ch       govppapi.Channel
	inflight []*pending // sent, reply not read yet, in send order
	peak     int        // the most requests ever in flight at once
}

// pending is one request of the pipeline and, once read, its outcome.
type pending struct {
	ctx  govppapi.RequestCtx
	r    request
	err  error
	done bool
}

// send sends r, tracked in pd (the caller's, so that the requests of a value take one
// allocation), first reading the oldest reply if the window is full.
func (p *pipeline) send(pd *pending, r request) {
	if len(p.inflight) >= govppmux.Window(p.ch) {
		p.receiveOne()
	}
	*pd = pending{ctx: p.ch.SendRequest(r.req), r: r}
	p.inflight = append(p.inflight, pd)
	p.peak = max(p.peak, len(p.inflight))
}

// receiveOne reads the reply of the oldest request in flight.
func (p *pipeline) receiveOne() {
	pd := p.inflight[0]
	p.inflight[0] = nil
	p.inflight = p.inflight[1:]
	if err := pd.ctx.ReceiveReply(pd.r.reply); err != nil {
		pd.err = fmt.Errorf("%s: %s: %w", pd.r.what(), pd.r.req.GetMessageName(), err)
	}
	pd.done = true
}

// wait reads replies until pd's has arrived and returns its error.
func (p *pipeline) wait(pd *pending) error {
	for !pd.done {
		p.receiveOne()
	}
	return pd.err
}

// drain reads every reply still in flight, so the channel can be used for ordinary
// request/reply again.
func (p *pipeline) drain() {
	for len(p.inflight) > 0 {
		p.receiveOne()
	}
}

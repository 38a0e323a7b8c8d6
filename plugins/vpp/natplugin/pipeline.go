package natplugin

import (
	"fmt"

	govppapi "go.fd.io/govpp/api"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// pipeline keeps requests in flight on one channel across descriptor calls (the
// DNat44 descriptor's CreateAsync): requests are sent at once, with at most the
// window of the channel's govppmux.Pipe outstanding, and their replies, which arrive
// in order, are read as late as possible. It is used from the scheduler's goroutine
// only.
type pipeline struct {
	pipe     *govppmux.Pipe
	inflight []*pending // sent, reply not read yet, in send order
	peak     int        // the most requests ever in flight at once
}

func newPipeline(ch govppapi.Channel) *pipeline { return &pipeline{pipe: govppmux.NewPipe(ch)} }

// pending is one request of the pipeline and, once read, its outcome.
type pending struct {
	r    request
	err  error
	done bool
}

// send sends r, tracked in pd (the caller's, so that the requests of a value take one
// allocation), first reading the oldest reply if the window is full.
func (p *pipeline) send(pd *pending, r request) {
	if len(p.inflight) >= p.pipe.Window() {
		p.receiveOne()
	}
	*pd = pending{r: r}
	if err := p.pipe.Send(r.req); err != nil {
		pd.err, pd.done = fmt.Errorf("%s: %w", r.what(), err), true
		return
	}
	p.inflight = append(p.inflight, pd)
	p.peak = max(p.peak, len(p.inflight))
}

// receiveOne reads the reply of the oldest request in flight.
func (p *pipeline) receiveOne() {
	pd := p.inflight[0]
	p.inflight[0] = nil
	p.inflight = p.inflight[1:]
	if err := p.pipe.Receive(pd.r.reply); err != nil {
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

package controller

import "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"

// probeEvent reads loop-owned state from inside the loop: its Done runs on the loop
// goroutine. As a downstream resync it calls no handler.
type probeEvent struct {
	c    *Controller
	done chan bool
}

func (p *probeEvent) GetName() string             { return "Probe" }
func (p *probeEvent) String() string              { return "Probe" }
func (p *probeEvent) Method() api.EventMethodType { return api.DownstreamResync }
func (p *probeEvent) IsBlocking() bool            { return false }
func (p *probeEvent) Done(error)                  { p.done <- p.c.healingScheduled }

// healingScheduledForTest reports whether an after-error healing resync is pending.
func (c *Controller) healingScheduledForTest() bool {
	done := make(chan bool, 1)
	_ = c.PushEvent(&probeEvent{done: done, c: c})
	return <-done
}

// loopProbe runs a function on the loop goroutine from its Done. It is an Update of a
// name no test handler handles, so it stages and commits nothing.
type loopProbe struct {
	f    func()
	done chan struct{}
}

func (p *loopProbe) GetName() string                            { return "Loop Probe" }
func (p *loopProbe) String() string                             { return "Loop Probe" }
func (p *loopProbe) Method() api.EventMethodType                { return api.Update }
func (p *loopProbe) IsBlocking() bool                           { return false }
func (p *loopProbe) TransactionType() api.UpdateTransactionType { return api.BestEffort }
func (p *loopProbe) Direction() api.UpdateDirectionType         { return api.Forward }
func (p *loopProbe) Done(error)                                 { p.f(); close(p.done) }

// inLoopForTest runs f on the loop goroutine, after the events queued before it.
func (c *Controller) inLoopForTest(f func()) {
	p := &loopProbe{f: f, done: make(chan struct{})}
	if err := c.PushEvent(p); err != nil {
		panic(err)
	}
	<-p.done
}

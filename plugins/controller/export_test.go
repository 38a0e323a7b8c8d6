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

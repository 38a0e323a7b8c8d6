package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/plugins/tracer"
)

// decide sets the verdict from the probe's last packet on every node (the sender's
// retransmissions show the state now: the first packet may have been dropped while
// VPP resolved a neighbour): a policy deny, no endpoints, no route or a VPP drop
// decides, in that order; else delivery to a pod; else what the sender saw.
func (r *traceReport) decide() {
	var last []*tracer.Explained
	for i := range r.Nodes {
		if p := r.Nodes[i].Packets; len(p) > 0 {
			last = append(last, &p[len(p)-1])
		}
	}
	for _, o := range []struct {
		v       tracer.Verdict
		verdict string
	}{
		{tracer.DeniedByPolicy, verdictDenied},
		{tracer.NoEndpoints, verdictNoEndpoints},
		{tracer.NoRoute, verdictNoRoute},
		{tracer.DroppedByVPP, verdictDropped},
		{tracer.Delivered, verdictAllowed},
	} {
		for _, e := range last {
			if e.Verdict != o.v {
				continue
			}
			r.Verdict, r.Reason, r.Decisive = o.verdict, e.Reason, e
			if o.v == tracer.Delivered && e.Service == "" {
				if s := r.serviceOnPath(); s != nil {
					r.Reason += fmt.Sprintf(" (Service %s, backend %s)", s.Service, s.Backend)
				}
			}
			return
		}
	}
	r.Verdict = verdictUnknown
	r.Reason = fmt.Sprintf("the trace does not show where the probe went (sender: %s)", r.Probe.Outcome)
	if r.Probe.Outcome == tracer.OutcomeConnected || r.Probe.Outcome == tracer.OutcomeAnswered {
		r.Verdict, r.Reason = verdictAllowed, "the probe was answered ("+r.Probe.Outcome+"), though no traced node delivered it to a pod"
	}
}

// serviceOnPath returns the packet that a Service's NAT mapping translated.
func (r *traceReport) serviceOnPath() *tracer.Explained {
	for i := range r.Nodes {
		for j := range r.Nodes[i].Packets {
			if e := &r.Nodes[i].Packets[j]; e.Service != "" {
				return e
			}
		}
	}
	return nil
}

// text renders the report for a terminal: the probe, each node's first packet of
// the probe (and any later one that ended differently), the verdict last.
func (r *traceReport) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s -> %s\n", r.Source, r.Destination)
	dst := r.Probed.Dst
	if r.Probed.Port != 0 {
		dst += fmt.Sprintf(":%d", r.Probed.Port)
	}
	from := "node " + r.plan.SrcNode.Name
	if r.plan.SrcPod != "" {
		from = "pod " + r.plan.SrcPod + " on " + from
	}
	fmt.Fprintf(&b, "probe: %s %s -> %s from %s: %s\n", r.Probed.Proto, r.Probe.Src, dst, from, r.Probe.Outcome)
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "\nnode %s (%d packets traced, %d of the probe)\n", n.Node, n.Traced, len(n.Packets))
		var shown []tracer.Verdict
		for _, e := range n.Packets {
			if slices.Contains(shown, e.Verdict) {
				continue
			}
			shown = append(shown, e.Verdict)
			fmt.Fprintf(&b, "  packet %d: %s %s -> %s\n", e.Packet, e.Proto, e.Src, e.Dst)
			for _, h := range e.Hops {
				fmt.Fprintf(&b, "    %-24s %s\n", h.Node, h.What)
			}
			fmt.Fprintf(&b, "    => %s: %s\n", e.Verdict, e.Reason)
		}
	}
	fmt.Fprintf(&b, "\nverdict: %s: %s\n", r.Verdict, r.Reason)
	return b.String()
}

package natplugin

import (
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// noIndex is VPP's ~0: "no interface", "any VRF".
const noIndex = ^uint32(0)

// window is the number of requests kept in flight on a channel of unknown reply
// buffer (the tests' channels, opened on govpp's core); channels of govppmux take
// govppmux.Window(ch), 256.
const window = govppmux.DefaultWindow

// request is one request of a batch: the add or delete of mapping m, or (isLocal) the
// add or removal of one local of LB mapping m. What it does is kept as data, and
// described (what) only when it fails: no closure per request.
type request struct {
	req     govppapi.Message
	reply   govppapi.Message
	m       *mapping
	isAdd   bool
	isLocal bool
	local   local
}

// what names the request in errors, e.g. "add static mapping 10.96.0.1:80/TCP ->
// 10.1.1.2:8080".
func (r *request) what() string {
	m := r.m
	switch {
	case r.isLocal:
		op := "remove"
		if r.isAdd {
			op = "add"
		}
		l := r.local
		return fmt.Sprintf("%s local %s:%d (VRF %d) of load-balancing mapping %s", op, l.ip, l.port, l.vrf, m.ext())
	}
	op := "delete"
	if r.isAdd {
		op = "add"
	}
	switch m.kind {
	case kindStatic:
		return fmt.Sprintf("%s static mapping %s -> %s:%d", op, m.ext(), m.locals[0].ip, m.locals[0].port)
	case kindLB:
		return fmt.Sprintf("%s load-balancing mapping %s (%d locals)", op, m.ext(), len(m.locals))
	}
	return fmt.Sprintf("%s identity mapping %s in VRF %d", op, m.ext(), m.vrf)
}

// sendBatch sends the requests pipelined (govppmux.PipelineEach: at most
// govppmux.Window(ch) in flight, in order, as VPP executes them) and returns the
// error of each, naming the request (nil: done). It costs one round trip per window
// instead of one per request.
func sendBatch(ch govppapi.Channel, reqs []request) []error {
	calls := make([]govppmux.Call, len(reqs))
	for i, r := range reqs {
		calls[i] = govppmux.Call{Request: r.req, Reply: r.reply}
	}
	errs := govppmux.PipelineEach(ch, 0, calls) // govppmux.Window(ch) in flight
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("%s: %s: %w", reqs[i].what(), reqs[i].req.GetMessageName(), err)
		}
	}
	return errs
}

// parseIPv4 parses an IPv4 address (IPv4-mapped IPv6 accepted).
func parseIPv4(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	a = a.Unmap()
	return a, a.Is4()
}

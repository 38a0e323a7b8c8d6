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

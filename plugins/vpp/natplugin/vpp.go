package natplugin

import (
	"errors"
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// noIndex is VPP's ~0: "no interface", "any VRF".
const noIndex = ^uint32(0)

// window is the largest number of requests a batch keeps in flight. Replies
// wait in the channel's reply buffer (100 by default) until read; a full
// buffer makes govpp drop replies, so the window stays below it.
const window = 64

// call sends one request and waits for its reply; a non-zero retval comes
// back as a govppapi.VPPApiError.
func call(ch govppapi.Channel, req, reply govppapi.Message) error {
	if err := ch.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return nil
}

// dump runs a dump request and returns every details message.
func dump[D any, PD interface {
	*D
	govppapi.Message
}](ch govppapi.Channel, req govppapi.Message) ([]*D, error) {
	rc := ch.SendMultiRequest(req)
	var out []*D
	for {
		d := PD(new(D))
		last, err := rc.ReceiveReply(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", req.GetMessageName(), err)
		}
		if last {
			return out, nil
		}
		out = append(out, (*D)(d))
	}
}

// request is one request of a batch.
type request struct {
	req   govppapi.Message
	reply govppapi.Message
	// what names the request in errors, e.g. "add static mapping
	// 10.96.0.1:80/TCP"; it is called only when the request fails.
	what func() string
}

// sendBatch sends the requests pipelined - at most window in flight, in
// order, as VPP executes them - and returns the error of each (nil: done).
// It costs one round trip per window instead of one per request.
func sendBatch(ch govppapi.Channel, reqs []request) []error {
	errs := make([]error, len(reqs))
	ctxs := make([]govppapi.RequestCtx, len(reqs))
	recv := func(i int) {
		if err := ctxs[i].ReceiveReply(reqs[i].reply); err != nil {
			errs[i] = fmt.Errorf("%s: %s: %w", reqs[i].what(), reqs[i].req.GetMessageName(), err)
		}
	}
	next := 0
	for i := range reqs {
		if i-next >= window {
			recv(next)
			next++
		}
		ctxs[i] = ch.SendRequest(reqs[i].req)
	}
	for ; next < len(reqs); next++ {
		recv(next)
	}
	return errs
}

// isRetval tells whether err is a VPP error with the given retval.
func isRetval(err error, code govppapi.VPPApiError) bool {
	var e govppapi.VPPApiError
	return errors.As(err, &e) && e == code
}

// isRetriable reports whether an operation that failed with err may succeed
// when tried again: invalid values never do; VPP errors might.
func isRetriable(err error) bool {
	var inv *kvapi.InvalidValueError
	return !errors.As(err, &inv)
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

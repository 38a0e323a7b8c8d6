package govppmux

import (
	"context"
	"errors"
	"fmt"
	"time"

	govppapi "go.fd.io/govpp/api"
)

// DefaultWindow is the window for a channel whose reply buffer is unknown (one not
// handed out by this plugin, e.g. opened on govpp's core directly). It stays below
// govpp's default reply buffer (100): govpp's core drops a reply that finds the
// channel's reply buffer full for core.ReplyChannelTimeout (100 ms), so a pipeline
// that reads its replies late must never have more in flight than the buffer holds.
const DefaultWindow = 64

// ChannelWindow is the window for channels of NewAPIChannel, whose request and reply
// buffers hold 2*ChannelWindow messages. With the vppsock transport 256 requests in
// flight carry about 1.6x the messages per second of 64, at 25-35% less CPU per
// message (docs/PERFORMANCE.md, "VPP API transport").
const ChannelWindow = 256

// sizedChannel is a channel handed out by the plugin: its reply buffer is known, and
// its Pipe sends over a stream of the plugin's connection (opener; nil: over the
// channel).
type sizedChannel struct {
	govppapi.Channel
	replyBuf int
	opener   streamOpener
	// base returns the context the pipe's stream is opened under: the plugin's
	// connection context, cancelled (with the cause) when the connection to VPP is
	// lost, so that the replies in flight fail at once. nil: context.Background.
	base    func() context.Context
	timeout time.Duration // the channel's reply timeout, for its pipe's stream too
	pipe    *Pipe         // created by the first NewPipe
}

// SetReplyTimeout sets the reply timeout of the channel and of its pipe.
func (sc *sizedChannel) SetReplyTimeout(timeout time.Duration) {
	sc.timeout = timeout
	if sc.pipe != nil && sc.pipe.st != nil {
		sc.pipe.st.timeout = timeout
	}
	sc.Channel.SetReplyTimeout(timeout)
}

// Close closes the channel and the stream of its pipe.
func (sc *sizedChannel) Close() {
	if sc.pipe != nil && sc.pipe.st != nil {
		sc.pipe.st.close()
	}
	sc.Channel.Close()
}

// Window returns how many requests a pipeline may keep in flight on ch: for channels
// of NewAPIChannel ChannelWindow, for those of NewAPIChannelBuffered at most their
// reply buffer (and ChannelWindow), for any other channel DefaultWindow.
func Window(ch govppapi.Channel) int {
	if sc, ok := ch.(*sizedChannel); ok {
		return max(1, min(ChannelWindow, sc.replyBuf))
	}
	return DefaultWindow
}

// dumpWindow is how many dumps DumpEach keeps in flight: a dump may have many replies.
const dumpWindow = 8

// Call is one request of a pipeline and the reply message its answer is decoded into.
type Call struct {
	// Request is the message sent to VPP.
	Request govppapi.Message
	// Reply receives the answer; its retval is turned into the call's error.
	Reply govppapi.Message
}

// PipelineEach sends the calls over ch keeping at most window requests in flight
// (window <= 0 means Window(ch)) and returns one error per call, nil for success.
// VPP executes the requests of one client in order, so a request sees the effect of
// the ones before it; a failed request does not stop those after it. Every reply is
// read, so the channel stays usable. It sends through the channel's Pipe, which must
// have nothing in flight.
func PipelineEach(ch govppapi.Channel, window int, calls []Call) []error {
	p := NewPipe(ch)
	if window <= 0 {
		window = p.Window()
	}
	errs := make([]error, len(calls))
	if n := p.InFlight(); n > 0 {
		// Their replies come first: they are another pipeline's to read.
		for i, c := range calls {
			errs[i] = fmt.Errorf("govppmux: %s not sent: %d requests of the channel's pipe still in flight", c.Request.GetMessageName(), n)
		}
		return errs
	}
	sent := make([]int, 0, len(calls)) // indexes of the calls sent, in order
	head := 0                          // sent[:head] are answered
	for next := 0; next < len(calls) || head < len(sent); {
		for ; next < len(calls) && len(sent)-head < window; next++ {
			if err := p.Send(calls[next].Request); err != nil {
				errs[next] = err
				continue
			}
			sent = append(sent, next)
		}
		if head < len(sent) {
			i := sent[head]
			head++
			errs[i] = p.Receive(calls[i].Reply)
		}
	}
	return errs
}

// Pipeline is PipelineEach with the channel's window (Window); the error joins every
// failed call, each prefixed with the name of its request.
func Pipeline(ch govppapi.Channel, calls ...Call) error {
	return JoinErrors(calls, PipelineEach(ch, 0, calls))
}

// JoinErrors joins the non-nil errors of errs (as returned by PipelineEach for
// calls), each prefixed with the name of its request; nil if all succeeded.
func JoinErrors(calls []Call, errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Errorf("%s: %w", calls[i].Request.GetMessageName(), err))
		}
	}
	return errors.Join(out...)
}

// Dump sends the dump request req and returns every details message of type D.
func Dump[D any, PD interface {
	*D
	govppapi.Message
}](ch govppapi.Channel, req govppapi.Message) ([]PD, error) {
	return receiveDump[D, PD](ch.SendMultiRequest(req), req)
}

func receiveDump[D any, PD interface {
	*D
	govppapi.Message
}](ctx govppapi.MultiRequestCtx, req govppapi.Message) ([]PD, error) {
	var out []PD
	var firstErr error
	for {
		d := PD(new(D))
		last, err := ctx.ReceiveReply(d)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", req.GetMessageName(), err)
			}
			if isFatalDumpError(err) {
				return out, firstErr
			}
			continue
		}
		if last {
			return out, firstErr
		}
		out = append(out, d)
	}
}

// isFatalDumpError tells whether no more replies of a dump can be expected after err
// (a timeout or a broken connection); other errors concern one reply only.
func isFatalDumpError(err error) bool {
	var vppErr govppapi.VPPApiError
	return !errors.As(err, &vppErr)
}

// DumpEach sends every dump request of reqs (of the same details type D), keeping a
// few in flight, and returns the details of each request and one error per request.
func DumpEach[D any, PD interface {
	*D
	govppapi.Message
}](ch govppapi.Channel, reqs []govppapi.Message) ([][]PD, []error) {
	out := make([][]PD, len(reqs))
	errs := make([]error, len(reqs))
	pending := make([]govppapi.MultiRequestCtx, 0, min(dumpWindow, len(reqs)))
	next := 0
	for next < len(reqs) || len(pending) > 0 {
		for next < len(reqs) && len(pending) < dumpWindow {
			pending = append(pending, ch.SendMultiRequest(reqs[next]))
			next++
		}
		first := next - len(pending)
		out[first], errs[first] = receiveDump[D, PD](pending[0], reqs[first])
		pending = pending[1:]
	}
	return out, errs
}

package govppmux

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
)

// Pipe keeps requests in flight on one channel: Send sends a request at once, Receive
// reads the reply of the oldest request still in flight (VPP answers the requests of a
// client in order). The caller keeps at most Window requests in flight and uses the
// channel for nothing else while some are (read them all first). Like the channel, a
// Pipe is used by one goroutine at a time.
//
// On the channels this plugin hands out, a Pipe sends over a stream of govpp's core
// opened for the channel: the request is written by the caller's goroutine (a
// channel hands it to a goroutine of its own first) and one watchdog bounds the wait
// for each reply (a channel arms two timers per reply). That is about half the CPU and
// a third of the allocations per message of the channel's request/reply
// (BenchmarkTransportPipeline). On any other channel it sends with SendRequest and
// reads with ReceiveReply.
type Pipe struct {
	ch       govppapi.Channel
	window   int
	st       *channelStream        // non-nil on the plugin's channels
	requests []govppapi.RequestCtx // in flight, channel path
}

// NewPipe returns the pipe of ch: the channels of this plugin have one (shared by every
// NewPipe of the channel, so that requests in flight are counted once), others get a
// new one.
func NewPipe(ch govppapi.Channel) *Pipe {
	if sc, ok := ch.(*sizedChannel); ok {
		if sc.pipe == nil {
			sc.pipe = &Pipe{ch: sc, window: Window(sc)}
			if sc.opener != nil {
				sc.pipe.st = &channelStream{opener: sc.opener, base: sc.base, replyBuf: sc.replyBuf, timeout: sc.timeout}
			}
		}
		return sc.pipe
	}
	return &Pipe{ch: ch, window: Window(ch)}
}

// Window is how many requests the pipe may have in flight (Window of its channel).
func (p *Pipe) Window() int { return p.window }

// InFlight is the number of requests sent whose replies were not read yet.
func (p *Pipe) InFlight() int {
	if p.st != nil {
		return p.st.inflight
	}
	return len(p.requests)
}

// Send sends req. An error means it was not sent (no reply will be read for it); on
// the channel path sending cannot fail here, its errors come with the reply.
func (p *Pipe) Send(req govppapi.Message) error {
	if p.st != nil {
		return p.st.send(req)
	}
	p.requests = append(p.requests, p.ch.SendRequest(req))
	return nil
}

// Receive reads the reply of the oldest request in flight into reply; a retval other
// than 0 becomes the error, as on a channel (govppapi.VPPApiError).
func (p *Pipe) Receive(reply govppapi.Message) error {
	if p.st != nil {
		return p.st.receive(reply)
	}
	if len(p.requests) == 0 {
		return errors.New("govppmux: no request in flight")
	}
	rc := p.requests[0]
	p.requests[0] = nil
	p.requests = p.requests[1:]
	return rc.ReceiveReply(reply)
}

// errWatchdog is the cause with which the watchdog of a channelStream cancels it.
var errWatchdog = errors.New("govppmux: reply timeout")

// streamOpener opens streams of govpp's core (a *core.Connection).
type streamOpener interface {
	NewStream(ctx context.Context, options ...govppapi.StreamOption) (govppapi.Stream, error)
}

// channelStream is the stream a Pipe of one of the plugin's channels sends over. It is
// opened at the first Send and kept; a reply that does not come within the channel's
// reply timeout breaks it (the replies of the requests still in flight are then lost:
// they fail with the timeout) and the next Send after them opens a new one. The loss
// of the connection to VPP (base cancelled with ErrConnectionLost) breaks it at once,
// and the replies in flight fail with that cause.
type channelStream struct {
	opener   streamOpener
	base     func() context.Context // nil: context.Background
	replyBuf int
	timeout  time.Duration

	s        govppapi.Stream
	ctx      context.Context
	cancel   context.CancelCauseFunc
	watchdog *time.Timer // cancels the stream when a reply takes longer than timeout
	inflight int
	broken   error // set when the stream timed out; the requests in flight fail with it
	// retvals caches, by reply type, the index of its Retval field (-1: none).
	retvals map[reflect.Type]int
}

func (c *channelStream) send(req govppapi.Message) error {
	if c.s != nil && c.inflight == 0 && c.ctx.Err() != nil {
		c.close() // the connection it was opened on was lost: open one on the new
	}
	if c.s == nil {
		if c.inflight > 0 {
			return fmt.Errorf("govppmux: %s not sent: %d requests of a failed stream still unanswered", req.GetMessageName(), c.inflight)
		}
		if err := c.open(); err != nil {
			return err
		}
	}
	if err := c.s.SendMsg(req); err != nil {
		return fmt.Errorf("govppmux: send %s: %w", req.GetMessageName(), err)
	}
	c.inflight++
	return nil
}

// open opens the stream: replies are buffered up to the channel's reply buffer and
// waited for without a timer of govpp's (the watchdog bounds the wait).
func (c *channelStream) open() error {
	base := context.Background()
	if c.base != nil {
		base = c.base()
	}
	if err := context.Cause(base); err != nil {
		return fmt.Errorf("govppmux: open a stream: %w", err)
	}
	ctx, cancel := context.WithCancelCause(base)
	s, err := c.opener.NewStream(ctx, core.WithReplyTimeout(0), core.WithRequestSize(1), core.WithReplySize(c.replyBuf))
	if err != nil {
		cancel(nil)
		return fmt.Errorf("govppmux: open a stream: %w", err)
	}
	c.s, c.ctx, c.cancel, c.broken = s, ctx, cancel, nil
	c.watchdog = time.AfterFunc(time.Hour, func() { cancel(errWatchdog) })
	c.watchdog.Stop()
	if c.retvals == nil {
		c.retvals = make(map[reflect.Type]int)
	}
	return nil
}

func (c *channelStream) receive(reply govppapi.Message) error {
	if c.inflight == 0 {
		return errors.New("govppmux: no request in flight")
	}
	c.inflight--
	if c.broken != nil {
		return c.broken
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = DefaultReplyTimeout
	}
	c.watchdog.Reset(timeout)
	msg, err := c.s.RecvMsg()
	c.watchdog.Stop()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// The watchdog fired, or the connection to VPP was lost: this reply and
			// those of the requests still in flight are lost with the stream.
			if cause := context.Cause(c.ctx); cause != nil && !errors.Is(cause, errWatchdog) {
				c.broken = fmt.Errorf("govppmux: waiting for %s: %w", reply.GetMessageName(), cause)
			} else {
				c.broken = fmt.Errorf("%w %v (govppmux stream)", core.ErrReplyTimeout, timeout)
			}
			c.close()
			return c.broken
		}
		return fmt.Errorf("govppmux: receive the reply to %s: %w", reply.GetMessageName(), err)
	}
	return c.decode(msg, reply)
}

// decode copies the received msg into reply and turns its retval into the error.
func (c *channelStream) decode(msg, reply govppapi.Message) error {
	dst, src := reflect.ValueOf(reply), reflect.ValueOf(msg)
	if dst.Type() != src.Type() || dst.Kind() != reflect.Pointer {
		return fmt.Errorf("govppmux: received %s where %s was expected", msg.GetMessageName(), reply.GetMessageName())
	}
	dst.Elem().Set(src.Elem())
	i, ok := c.retvals[dst.Type()]
	if !ok {
		i = -1
		if strings.HasSuffix(reply.GetMessageName(), "_reply") {
			if f, found := dst.Type().Elem().FieldByName("Retval"); found && len(f.Index) == 1 && f.Type.Kind() == reflect.Int32 {
				i = f.Index[0]
			}
		}
		c.retvals[dst.Type()] = i
	}
	if i < 0 {
		return nil
	}
	return govppapi.RetvalToVPPApiError(int32(dst.Elem().Field(i).Int()))
}

// close releases the stream (a new one is opened when needed).
func (c *channelStream) close() {
	if c.s == nil {
		return
	}
	c.watchdog.Stop()
	c.cancel(nil)
	_ = c.s.Close()
	c.s = nil
}

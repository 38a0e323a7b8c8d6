package vppsim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/api"
)

// Wire format of VPP's socket API, as govpp's socketclient speaks it: every
// message is a 16-byte frame header, whose bytes 8..11 hold the big-endian
// payload length and whose other bytes are zero, followed by the payload:
// the big-endian message ID, the message header (client_index and/or
// context, depending on the message) and the binapi-encoded message.
const (
	frameHeaderLen = 16
	// maxFrameLen bounds a request; VPP's own limit is similar in spirit.
	maxFrameLen = 16 << 20
	// flushThreshold makes a connection write its pending replies even
	// when more requests are already buffered.
	flushThreshold = 256 << 10
	// writeTimeout bounds a write to a client that does not read.
	writeTimeout = 30 * time.Second
	// sockRegHandleBit marks socket client indexes in VPP
	// (SOCK_API_REG_HANDLE_BIT): the index announced in
	// sockclnt_create_reply is the registration pool index with bit 31 set.
	sockRegHandleBit = 1 << 31
)

// handler executes one implemented request.
type handler struct {
	fn func(cl *call, m api.Message)
	// stateless handlers (control_ping, show_version, ...) run without the
	// state lock.
	stateless bool
	// readOnly handlers (dumps, gets, shows, the CLI, fibNeutral
	// requests) do not change the configuration the data plane compiles
	// (state.gen).
	readOnly bool
}

// unmarshaler is implemented by every generated binapi message.
type unmarshaler interface {
	Unmarshal([]byte) error
}

// marshaler is implemented by every generated binapi message.
type marshaler interface {
	Size() int
	Marshal([]byte) ([]byte, error)
}

type resetter interface{ Reset() }

// conn is one client connection. Its goroutine reads requests, executes
// them in order and collects the replies in out, which it writes when it
// has no more buffered requests (so pipelined requests are answered in
// batches) or when out grows large.
type conn struct {
	s     *Sim
	nc    *net.UnixConn
	rd    *bufio.Reader
	index uint32 // client index announced to the client
	epoch uint64
	name  atomic.Pointer[string] // client name from sockclnt_create

	hdr  [frameHeaderLen]byte
	in   []byte        // current request payload
	out  []byte        // encoded replies not yet written; owned by the goroutine
	msgs []api.Message // decoded-request cache by message ID
	cl   call          // the request being executed, reused

	wmu    sync.Mutex // serialises writes to nc
	closed atomic.Bool
}

func (s *Sim) acceptLoop(ln *net.UnixListener) {
	defer s.wg.Done()
	var poolIndex uint32
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.WithError(err).Warn("accept failed")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.connMu.Lock()
		if s.closed {
			s.connMu.Unlock()
			_ = nc.Close()
			return
		}
		poolIndex = s.nextClient
		s.nextClient++
		c := &conn{
			s:     s,
			nc:    nc,
			rd:    bufio.NewReaderSize(nc, 64<<10),
			index: poolIndex | sockRegHandleBit,
			epoch: s.epoch.Load(),
			msgs:  make([]api.Message, len(s.table.byID)),
		}
		s.conns[c] = struct{}{}
		s.byIndex[c.index] = c
		s.wg.Add(1)
		s.connMu.Unlock()
		go c.serve()
	}
}

// clientConn returns the live connection with the given client index.
func (s *Sim) clientConn(index uint32) *conn {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.byIndex[index]
}

func (c *conn) close() {
	if c.closed.CompareAndSwap(false, true) {
		_ = c.nc.Close()
	}
}

func (c *conn) logger() logrus.FieldLogger {
	name := ""
	if p := c.name.Load(); p != nil {
		name = *p
	}
	return c.s.log.WithFields(logrus.Fields{"client": c.index, "name": name})
}

func (c *conn) serve() {
	s := c.s
	defer s.wg.Done()
	defer func() {
		c.close()
		s.connMu.Lock()
		delete(s.conns, c)
		delete(s.byIndex, c.index)
		s.connMu.Unlock()
		s.mu.Lock()
		s.st.forgetClient(c.index)
		s.mu.Unlock()
	}()
	for {
		payload, err := c.readFrame()
		if err != nil {
			if !c.closed.Load() && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.logger().WithError(err).Debug("client connection failed")
			}
			return
		}
		if err := c.dispatch(payload); err != nil {
			c.logger().WithError(err).Debug("closing client connection")
			return
		}
		if len(c.out) >= flushThreshold {
			if err := c.flush(); err != nil {
				return
			}
		}
	}
}

// readFrame reads the next request. Pending replies are written first
// whenever the read could block, so a client never waits for replies the
// simulator holds back.
func (c *conn) readFrame() ([]byte, error) {
	if c.rd.Buffered() < frameHeaderLen {
		if err := c.flush(); err != nil {
			return nil, err
		}
	}
	if _, err := io.ReadFull(c.rd, c.hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(c.hdr[8:12]))
	if n > maxFrameLen {
		return nil, fmt.Errorf("request of %d bytes exceeds the limit of %d", n, maxFrameLen)
	}
	if cap(c.in) < n {
		c.in = make([]byte, n, max(n, 4096))
	}
	c.in = c.in[:n]
	if c.rd.Buffered() < n {
		if err := c.flush(); err != nil {
			return nil, err
		}
	}
	if _, err := io.ReadFull(c.rd, c.in); err != nil {
		return nil, err
	}
	return c.in, nil
}

// flush writes the pending replies.
func (c *conn) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	err := c.write(c.out)
	if cap(c.out) > 4*flushThreshold {
		c.out = nil // do not keep the buffer of a huge dump
	} else {
		c.out = c.out[:0]
	}
	return err
}

// write writes complete frames to the client.
func (c *conn) write(frames []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return net.ErrClosed
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := c.nc.Write(frames)
	return err
}

// appendFrame encodes msg as a complete frame at the end of buf. index is
// written into the client_index field of messages that have one, context
// into the context field.
func appendFrame(buf []byte, info *msgInfo, index, context uint32, msg api.Message) ([]byte, error) {
	m, ok := msg.(marshaler)
	if !ok {
		return buf, fmt.Errorf("message %s cannot be encoded", info.name)
	}
	hl := info.headerLen()
	size := m.Size()
	start := len(buf)
	total := frameHeaderLen + hl + size
	if cap(buf)-start < total {
		nb := make([]byte, start, 2*cap(buf)+total)
		copy(nb, buf)
		buf = nb
	}
	buf = buf[:start+total]
	frame := buf[start:]
	clear(frame)
	binary.BigEndian.PutUint32(frame[8:12], uint32(hl+size))
	p := frame[frameHeaderLen:]
	binary.BigEndian.PutUint16(p[0:2], info.id)
	switch info.typ {
	case api.RequestMessage:
		binary.BigEndian.PutUint32(p[2:6], index)
		binary.BigEndian.PutUint32(p[6:10], context)
	case api.ReplyMessage:
		binary.BigEndian.PutUint32(p[2:6], context)
	case api.EventMessage:
		binary.BigEndian.PutUint32(p[2:6], index)
	}
	if _, err := m.Marshal(p[hl:]); err != nil {
		return buf[:start], fmt.Errorf("encode %s: %w", info.name, err)
	}
	return buf, nil
}

// decode fills msg from the payload of a request, turning the panics of
// generated decoders on truncated input into errors.
func decode(info *msgInfo, payload []byte, msg api.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed %s (%d bytes): %v", info.name, len(payload), r)
		}
	}()
	u, ok := msg.(unmarshaler)
	if !ok {
		return fmt.Errorf("message %s cannot be decoded", info.name)
	}
	return u.Unmarshal(payload[info.headerLen():])
}

// dispatch executes one request. It returns an error only when the
// connection must be closed.
func (c *conn) dispatch(payload []byte) error {
	s := c.s
	if len(payload) < 2 {
		c.logger().Warn("dropping message shorter than its ID")
		return nil
	}
	id := binary.BigEndian.Uint16(payload[0:2])
	if int(id) >= len(s.table.byID) || s.table.byID[id] == nil {
		// VPP logs "no handler for msg id" and drops the message.
		c.logger().WithField("msgID", id).Warn("dropping message with unknown ID")
		return nil
	}
	info := s.table.byID[id]
	s.counters[id].Add(1)
	if len(payload) < info.headerLen() {
		c.logger().WithField("msg", info.name).Warn("dropping truncated message")
		return nil
	}
	var context uint32
	switch info.typ {
	case api.RequestMessage:
		if ci := binary.BigEndian.Uint32(payload[2:6]); ci != c.index {
			// VPP looks the registration up by client_index and answers
			// nobody when it does not belong to this socket.
			c.logger().WithFields(logrus.Fields{"msg": info.name, "clientIndex": ci}).
				Warn("dropping request with a client_index that is not this client's")
			return nil
		}
		context = binary.BigEndian.Uint32(payload[6:10])
	case api.ReplyMessage:
		context = binary.BigEndian.Uint32(payload[2:6])
	}
	if !isClientRequest(info) {
		c.logger().WithField("msg", info.name).Debug("ignoring non-request message")
		return nil
	}

	retval, fail, delay := s.takeFault(id)
	if !fail {
		retval, fail = s.takeRandomFault(info)
	}
	if delay > 0 {
		if err := c.flush(); err != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return net.ErrClosed
		}
	}

	cl := &c.cl
	*cl = call{s: s, c: c, req: info, ctx: context, after: cl.after[:0]}
	h := s.handlers[id]
	if fail || h == nil {
		if fail {
			c.logger().WithFields(logrus.Fields{"msg": info.name, "retval": retval}).Debug("injected failure")
		} else {
			c.logger().WithField("msg", info.name).Warn("unimplemented message answered with VNET_API_ERROR_UNIMPLEMENTED")
			retval = retvalUnimplemented
		}
		cl.replyRetval(retval)
		return cl.err
	}

	msg := c.msgs[id]
	if msg == nil {
		msg = info.newMsg()
		c.msgs[id] = msg
	} else if r, ok := msg.(resetter); ok {
		r.Reset()
	}
	if err := decode(info, payload, msg); err != nil {
		// VPP drops messages that fail its length checks.
		c.logger().WithError(err).Warn("dropping malformed message")
		return nil
	}

	if h.stateless {
		h.fn(cl, msg)
	} else {
		s.mu.Lock()
		if c.epoch != s.epoch.Load() {
			s.mu.Unlock()
			return net.ErrClosed
		}
		cl.st = s.st
		h.fn(cl, msg)
		if !h.readOnly {
			s.st.gen++
		}
		s.mu.Unlock()
	}
	for _, fn := range cl.after {
		fn()
	}
	clear(cl.after)
	if h := s.reqHook.Load(); h != nil {
		(*h)(info.name)
	}
	if cl.close {
		if err := c.flush(); err != nil {
			return err
		}
		return errors.New("client unregistered")
	}
	return cl.err
}

// call is the context of one request being executed.
type call struct {
	s   *Sim
	st  *state // nil for stateless handlers
	c   *conn
	req *msgInfo
	ctx uint32
	// after holds work to do once the state lock is released, such as
	// sending events to other clients.
	after []func()
	// close makes the connection close after the replies are written.
	close bool
	err   error
}

// send queues a reply, details or event message to the calling client.
func (cl *call) send(msg api.Message) {
	if cl.err != nil {
		return
	}
	info := cl.s.table.byType[reflect.TypeOf(msg).Elem()]
	if info == nil {
		cl.err = fmt.Errorf("message %s is not in the message table", msg.GetMessageName())
		return
	}
	var index uint32
	if info.typ == api.EventMessage {
		index = cl.c.index
	}
	cl.c.out, cl.err = appendFrame(cl.c.out, info, index, cl.ctx, msg)
}

// replyRetval answers the request with its reply carrying only retval. A
// dump has no reply and gets nothing; the client's control_ping ends it.
func (cl *call) replyRetval(retval int32) {
	rep := cl.req.reply
	if rep == nil {
		return
	}
	msg := rep.newMsg()
	v := reflect.ValueOf(msg).Elem()
	if rep.hasRetval {
		v.FieldByName("Retval").SetInt(int64(retval))
	} else if f := v.FieldByName("Response"); f.IsValid() && f.Kind() == reflect.Int32 {
		f.SetInt(int64(retval)) // sockclnt_create/delete report errors this way
	}
	cl.send(msg)
}

// later runs fn after the state lock is released.
func (cl *call) later(fn func()) { cl.after = append(cl.after, fn) }

// sendEvent sends an event message to another client (or this one) once
// the state lock is released.
func (cl *call) sendEvent(clientIndex uint32, msg api.Message) {
	s := cl.s
	cl.later(func() { s.sendEvent(clientIndex, msg) })
}

// sendEvent sends an event to a client if it is still connected.
func (s *Sim) sendEvent(clientIndex uint32, msg api.Message) {
	c := s.clientConn(clientIndex)
	if c == nil {
		return
	}
	info := s.table.byType[reflect.TypeOf(msg).Elem()]
	if info == nil {
		return
	}
	frame, err := appendFrame(nil, info, clientIndex, 0, msg)
	if err != nil {
		s.log.WithError(err).Warn("cannot encode event")
		return
	}
	if err := c.write(frame); err != nil {
		c.logger().WithError(err).Debug("cannot deliver event")
	}
}

package vppsock

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
	"k8s.io/utils/clock"
)

// Wire constants of VPP's socket API.
const (
	// frameHeaderLen is the length of the frame header preceding every message;
	// bytes 8..11 hold the big-endian payload length, the others are zero.
	frameHeaderLen = 16
	// requestHeaderLen is msg_id (2) + client_index (4) + context (4).
	requestHeaderLen = 10
	// sockclntCreateID is the message ID every socket client uses for
	// sockclnt_create: the message table is not known before it.
	sockclntCreateID = 15
	// createContext and deleteContext mark the handshake messages.
	createContext = 0x7b
	deleteContext = 0x7c
	// maxFrameLen bounds a message read from VPP (a corrupt length must not make
	// the reader allocate gigabytes).
	maxFrameLen = 64 << 20
	// maxScratchKept is the largest scratch buffer the reader keeps for the next
	// oversized message.
	maxScratchKept = 4 << 20
)

// Defaults of Options.
const (
	// DefaultClientName is the name registered with VPP when Options.ClientName is empty.
	DefaultClientName = "vppsock"
	// DefaultConnectTimeout bounds the dial and the handshake.
	DefaultConnectTimeout = 3 * time.Second
	// DefaultDisconnectTimeout bounds the wait for VPP to close after sockclnt_delete.
	DefaultDisconnectTimeout = 200 * time.Millisecond
	// DefaultWaitReadyTimeout bounds WaitReady.
	DefaultWaitReadyTimeout = 10 * time.Second
	// DefaultReadBufferSize is the size of the reader's buffer: replies VPP sends in
	// one write are parsed from one read.
	DefaultReadBufferSize = 256 << 10
	// DefaultMaxPendingBytes bounds the frames waiting for the writer.
	DefaultMaxPendingBytes = 1 << 20
	// waitReadyPoll is how often WaitReady looks for the socket file.
	waitReadyPoll = 50 * time.Millisecond
)

// Errors returned by the client (wrapped with the socket path).
var (
	// ErrNotConnected is returned by SendMsg before Connect and after Disconnect.
	ErrNotConnected = errors.New("not connected")
	// ErrClosed is returned to senders waiting for room when Disconnect closes the
	// connection.
	ErrClosed = errors.New("connection closed by Disconnect")
	// ErrConnectionLost is wrapped by the error of a connection that VPP closed or
	// reset (or that failed to read) while the client did not disconnect: the error
	// passed to the loss callback and returned by every later SendMsg until the next
	// Connect.
	ErrConnectionLost = errors.New("connection to VPP lost")
)

// LossCallback is called once per connection, from the reader goroutine, when the
// connection to VPP breaks under the client (VPP closed or reset the socket, or a read
// failed) and Disconnect was not called. err wraps ErrConnectionLost and the read
// error. The callback must not block for long and must not call Connect or Disconnect
// itself (they wait for the reader).
type LossCallback func(err error)

// Options configure a Client. Zero values mean the defaults above.
type Options struct {
	// SocketPath is VPP's binary API socket; required.
	SocketPath string
	// ClientName is the name registered with VPP (sockclnt_create).
	ClientName string
	// ConnectTimeout bounds one Connect: the dial and the handshake.
	ConnectTimeout time.Duration
	// DisconnectTimeout bounds the wait for VPP to close the socket after
	// sockclnt_delete.
	DisconnectTimeout time.Duration
	// WaitReadyTimeout bounds WaitReady.
	WaitReadyTimeout time.Duration
	// ReadBufferSize is the size of the reader's buffer.
	ReadBufferSize int
	// MaxPendingBytes bounds the bytes of frames waiting for the writer; a sender
	// blocks while the bound is reached. A single frame larger than the bound is
	// accepted when nothing else waits.
	MaxPendingBytes int
	// Clock paces WaitReady (nil: the real clock).
	Clock clock.Clock
}

// Client implements adapter.VppAPI over VPP's socket. Create it with New. It may be
// connected again after a Disconnect (govpp's core does so after VPP restarts).
type Client struct {
	opts Options

	cb   atomic.Pointer[adapter.MsgCallback]
	loss atomic.Pointer[LossCallback]

	mu   sync.Mutex // guards sess and the table (Connect/Disconnect/GetMsgID)
	sess atomic.Pointer[session]
}

var _ adapter.VppAPI = (*Client)(nil)

// New returns a client for the socket at opts.SocketPath (not connected).
func New(opts Options) (*Client, error) {
	if opts.SocketPath == "" {
		return nil, errors.New("vppsock: socket path is empty")
	}
	if opts.ClientName == "" {
		opts.ClientName = DefaultClientName
	}
	if len(opts.ClientName) >= 64 {
		return nil, fmt.Errorf("vppsock: client name %q is longer than VPP's 63 characters", opts.ClientName)
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.DisconnectTimeout <= 0 {
		opts.DisconnectTimeout = DefaultDisconnectTimeout
	}
	if opts.WaitReadyTimeout <= 0 {
		opts.WaitReadyTimeout = DefaultWaitReadyTimeout
	}
	if opts.ReadBufferSize < 4096 {
		opts.ReadBufferSize = DefaultReadBufferSize
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Client{opts: opts}, nil
}

// SocketPath returns the socket the client connects to.
func (c *Client) SocketPath() string { return c.opts.SocketPath }

// SetMsgCallback implements adapter.VppAPI: cb receives every message from VPP, in
// the reader goroutine; data is valid only until cb returns.
func (c *Client) SetMsgCallback(cb adapter.MsgCallback) { c.cb.Store(&cb) }

// SetLossCallback sets the function told when a connection breaks under the client
// (see LossCallback); nil removes it. Our own Disconnect, and the Connect that
// replaces a connection, are never reported.
func (c *Client) SetLossCallback(cb LossCallback) {
	if cb == nil {
		c.loss.Store(nil)
		return
	}
	c.loss.Store(&cb)
}

// WaitReady implements adapter.VppAPI: it waits until the socket file exists, at most
// Options.WaitReadyTimeout.
func (c *Client) WaitReady() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return c.WaitReadyContext(ctx)
}

// WaitReadyContext waits until the socket file exists, until ctx ends or at most
// Options.WaitReadyTimeout.
func (c *Client) WaitReadyContext(ctx context.Context) error {
	path := c.opts.SocketPath
	deadline := c.opts.Clock.NewTimer(c.opts.WaitReadyTimeout)
	defer deadline.Stop()
	for {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("vppsock: VPP API socket %s: %w", path, err)
		}
		tick := c.opts.Clock.NewTimer(waitReadyPoll)
		select {
		case <-tick.C():
		case <-deadline.C():
			tick.Stop()
			return fmt.Errorf("vppsock: VPP API socket %s did not appear within %v", path, c.opts.WaitReadyTimeout)
		case <-ctx.Done():
			tick.Stop()
			return fmt.Errorf("vppsock: waiting for VPP API socket %s: %w", path, ctx.Err())
		}
	}
}

// Connect implements adapter.VppAPI: it dials the socket, registers the client and
// learns the message table, then starts the reader goroutine. A connection still
// open is closed first.
func (c *Client) Connect() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.sess.Load(); old != nil {
		old.close(c.opts.DisconnectTimeout)
		c.sess.Store(nil)
	}
	s, err := c.dial()
	if err != nil {
		return fmt.Errorf("vppsock: connect to VPP at %s: %w", c.opts.SocketPath, err)
	}
	c.sess.Store(s)
	go s.readLoop(&c.cb, &c.loss)
	go s.flushLoop()
	return nil
}

// dial opens the socket and performs the handshake.
func (c *Client) dial() (*session, error) {
	d := net.Dialer{Timeout: c.opts.ConnectTimeout}
	nc, err := d.Dial("unix", c.opts.SocketPath)
	if err != nil {
		return nil, err
	}
	uc := nc.(*net.UnixConn)
	s := newSession(c.opts, uc)
	if err := s.handshake(c.opts.ClientName, c.opts.ConnectTimeout); err != nil {
		_ = uc.Close()
		return nil, err
	}
	return s, nil
}

// Disconnect implements adapter.VppAPI: it unregisters the client, closes the socket
// and waits for the reader goroutine. Calling it again, or before Connect, does
// nothing.
func (c *Client) Disconnect() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sess.Swap(nil)
	if s == nil {
		return nil
	}
	s.close(c.opts.DisconnectTimeout)
	return nil
}

// GetMsgID implements adapter.VppAPI from the message table of the last Connect.
func (c *Client) GetMsgID(msgName, msgCrc string) (uint16, error) {
	s := c.sess.Load()
	if s == nil {
		return 0, fmt.Errorf("vppsock: %s: message table unknown: %w", c.opts.SocketPath, ErrNotConnected)
	}
	if id, ok := s.table[msgKey{msgName, msgCrc}]; ok {
		return id, nil
	}
	return 0, &adapter.UnknownMsgError{MsgName: msgName, MsgCrc: msgCrc}
}

// SendMsg implements adapter.VppAPI: data is the encoded request (message ID, client
// index, context, fields); the client index and context are set in the copy that is
// sent. See the package doc for when the frame is written.
func (c *Client) SendMsg(context uint32, data []byte) error {
	s := c.sess.Load()
	if s == nil {
		return fmt.Errorf("vppsock: send to %s: %w", c.opts.SocketPath, ErrNotConnected)
	}
	return s.send(context, data)
}

// MessageTableDigest returns a digest of the message table VPP sent at the last
// Connect (0 when not connected): equal digests of two connections mean VPP uses
// the same message IDs on both, so a user of the client that cached IDs (govpp's
// core does) may keep them across the reconnect.
func (c *Client) MessageTableDigest() uint64 {
	if s := c.sess.Load(); s != nil {
		return s.digest
	}
	return 0
}

// ClientIndex returns the index VPP assigned at the last Connect (0 when not
// connected).
func (c *Client) ClientIndex() uint32 {
	if s := c.sess.Load(); s != nil {
		return s.index
	}
	return 0
}

// Stats counts the writes of the current connection.
type Stats struct {
	// Messages is the number of frames handed to write syscalls.
	Messages uint64
	// Writes is the number of write syscalls (one per batch), counted when they
	// start.
	Writes uint64
	// FlusherWrites is the part of Writes made by the flusher goroutine for
	// pipelined senders; the others were made by a sender in its own goroutine.
	FlusherWrites uint64
}

// Stats returns the write counters of the current connection (zero when not
// connected).
func (c *Client) Stats() Stats {
	s := c.sess.Load()
	if s == nil {
		return Stats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// session is one connection: from a successful handshake until it is closed.
type session struct {
	path    string
	nc      *net.UnixConn
	rd      *bufio.Reader
	maxPend int

	index    uint32            // client index from sockclnt_create_reply
	table    map[msgKey]uint16 // name and CRC -> ID; read-only after the handshake
	digest   uint64            // of the table (MessageTableDigest)
	deleteID uint16            // sockclnt_delete
	delRepID uint16            // sockclnt_delete_reply, not passed to the callback

	mu      sync.Mutex
	room    sync.Cond // signalled when pending shrinks or the session fails
	pending []byte    // frames waiting for the writer
	queued  int       // number of frames in pending
	spare   []byte    // the writer's previous buffer, reused
	writing bool      // a sender is writing
	err     error     // sticky: the connection is broken
	closing bool      // Disconnect started: refuse new frames
	// leaving is set first thing by close (before sockclnt_delete, whose reply makes
	// VPP close the socket): the reader's failure is then ours, not a loss.
	leaving atomic.Bool
	stats   Stats

	// outstanding approximates the requests sent whose reply was not read yet: +1
	// per frame sent, -1 per message read, never below 0 (a dump's many replies
	// clamp it). A send that finds it above 0 belongs to a pipeline (its sender did
	// not wait for the previous reply) and leaves the write to the flusher.
	outstanding atomic.Int64
	kick        chan struct{} // capacity 1: wakes the flusher
	stop        chan struct{} // closed by close: the flusher returns
	flusherDone chan struct{}
	readerDone  chan struct{}
}

func newSession(opts Options, nc *net.UnixConn) *session {
	s := &session{
		path:        opts.SocketPath,
		nc:          nc,
		rd:          bufio.NewReaderSize(nc, opts.ReadBufferSize),
		maxPend:     opts.MaxPendingBytes,
		kick:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		flusherDone: make(chan struct{}),
		readerDone:  make(chan struct{}),
	}
	s.room.L = &s.mu
	return s
}

// handshake sends sockclnt_create and reads its reply, before the reader starts.
func (s *session) handshake(name string, timeout time.Duration) error {
	if err := s.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	req, err := codec.DefaultCodec.EncodeMsg(&memclnt.SockclntCreate{Name: name}, sockclntCreateID)
	if err != nil {
		return fmt.Errorf("encode sockclnt_create: %w", err)
	}
	binary.BigEndian.PutUint32(req[2:6], createContext) // reply-style header: context
	frame := appendFrame(nil, req)
	if _, err := s.nc.Write(frame); err != nil {
		return fmt.Errorf("send sockclnt_create: %w", err)
	}
	payload, err := s.readFrame(nil)
	if err != nil {
		return fmt.Errorf("read sockclnt_create_reply: %w", err)
	}
	var reply memclnt.SockclntCreateReply
	if err := codec.DefaultCodec.DecodeMsg(payload, &reply); err != nil {
		return fmt.Errorf("decode sockclnt_create_reply (%d bytes): %w", len(payload), err)
	}
	if reply.Response != 0 {
		return fmt.Errorf("sockclnt_create refused: response %d", reply.Response)
	}
	s.index = reply.Index
	s.table = make(map[msgKey]uint16, len(reply.MessageTable))
	for _, e := range reply.MessageTable {
		s.table[msgKeyOf(e.Name)] = e.Index
	}
	s.digest = tableDigest(reply.MessageTable)
	var ok bool
	del, delRep := &memclnt.SockclntDelete{}, &memclnt.SockclntDeleteReply{}
	if s.deleteID, ok = s.table[msgKey{del.GetMessageName(), del.GetCrcString()}]; !ok {
		return fmt.Errorf("message table of %d entries lacks %s_%s", len(s.table), del.GetMessageName(), del.GetCrcString())
	}
	s.delRepID = s.table[msgKey{delRep.GetMessageName(), delRep.GetCrcString()}]
	return s.nc.SetDeadline(time.Time{})
}

// tableDigest hashes the entries of a message table, in any order: two tables
// with the same digest map the same names to the same IDs (barring a collision of
// 64-bit hashes).
func tableDigest(entries []memclnt.MessageTableEntry) uint64 {
	var sum uint64
	for _, e := range entries {
		h := fnv.New64a()
		_, _ = h.Write([]byte(e.Name))
		// mix the ID in non-linearly (splitmix64's finaliser), so that swapping the
		// IDs of two entries changes the sum
		v := h.Sum64() ^ uint64(e.Index)*0x9e3779b97f4a7c15
		v = (v ^ v>>30) * 0xbf58476d1ce4e5b9
		v = (v ^ v>>27) * 0x94d049bb133111eb
		sum += v ^ v>>31 // a sum: the order of the entries does not matter
	}
	return sum ^ uint64(len(entries))
}

// msgKey identifies a message of the table by name and CRC: GetMsgID looks it up
// without building the table's "name_crc" string (one allocation per request).
type msgKey struct{ name, crc string }

// msgKeyOf splits an entry of VPP's message table, "<name>_<crc>", at its last
// underscore (names contain underscores, CRCs do not).
func msgKeyOf(nameCrc string) msgKey {
	i := strings.LastIndexByte(nameCrc, '_')
	if i < 0 {
		return msgKey{name: nameCrc}
	}
	return msgKey{nameCrc[:i], nameCrc[i+1:]}
}

// appendFrame appends the frame header and payload to buf.
func appendFrame(buf, payload []byte) []byte {
	var hdr [frameHeaderLen]byte
	binary.BigEndian.PutUint32(hdr[8:12], uint32(len(payload)))
	buf = append(buf, hdr[:]...)
	return append(buf, payload...)
}

// readFrame reads one message and returns its payload: in place in the reader's
// buffer when it fits (valid until the next read), else in scratch (grown as
// needed).
func (s *session) readFrame(scratch *[]byte) ([]byte, error) {
	hdr, err := s.rd.Peek(frameHeaderLen)
	if err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[8:12]))
	if n > maxFrameLen {
		return nil, fmt.Errorf("message of %d bytes exceeds the limit of %d", n, maxFrameLen)
	}
	total := frameHeaderLen + n
	if total <= s.rd.Size() {
		frame, err := s.rd.Peek(total)
		if err != nil {
			return nil, err
		}
		// Discard only moves the read position: frame stays valid until the next read.
		_, _ = s.rd.Discard(total)
		return frame[frameHeaderLen:], nil
	}
	_, _ = s.rd.Discard(frameHeaderLen)
	var buf []byte
	if scratch != nil {
		if cap(*scratch) < n {
			*scratch = make([]byte, n)
		}
		buf = (*scratch)[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(s.rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readLoop hands every message to the callback until the connection fails or closes.
// A failure that close did not cause is a loss: it is reported to the loss callback.
func (s *session) readLoop(cb *atomic.Pointer[adapter.MsgCallback], loss *atomic.Pointer[LossCallback]) {
	defer close(s.readerDone)
	var scratch []byte
	for {
		payload, err := s.readFrame(&scratch)
		if err != nil {
			if s.leaving.Load() {
				s.fail(fmt.Errorf("vppsock: read from %s: %w", s.path, err))
				return
			}
			lost := fmt.Errorf("vppsock: %w at %s: %s: %w", ErrConnectionLost, s.path, readFailure(err), err)
			s.fail(lost)
			if f := loss.Load(); f != nil && *f != nil {
				(*f)(lost)
			}
			return
		}
		if len(payload) < 2 {
			continue // VPP never sends these; nothing to dispatch on
		}
		for v := s.outstanding.Load(); v > 0 && !s.outstanding.CompareAndSwap(v, v-1); v = s.outstanding.Load() {
		}
		id := binary.BigEndian.Uint16(payload[0:2])
		if id == s.delRepID && s.delRepID != 0 {
			continue // our own sockclnt_delete: govpp's core does not know it
		}
		if f := cb.Load(); f != nil && *f != nil {
			(*f)(id, payload)
		}
		if cap(scratch) > maxScratchKept { // do not keep the buffer of a huge message
			scratch = nil
		}
	}
}

// readFailure describes a read error for the loss report.
func readFailure(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "VPP closed the socket"
	case errors.Is(err, syscall.ECONNRESET):
		return "VPP reset the connection"
	}
	return "read failed"
}

// fail marks the session broken (the first error wins) and wakes blocked senders.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.pending, s.queued = s.pending[:0], 0
	s.room.Broadcast()
	s.mu.Unlock()
}

// send queues one request and, unless a write is in progress, writes.
func (s *session) send(context uint32, data []byte) error {
	if len(data) < requestHeaderLen {
		return fmt.Errorf("vppsock: send to %s: request of %d bytes is shorter than its header (%d)", s.path, len(data), requestHeaderLen)
	}
	size := frameHeaderLen + len(data)
	s.mu.Lock()
	for s.err == nil && !s.closing && len(s.pending) > 0 && len(s.pending)+size > s.maxPend {
		s.room.Wait()
	}
	if err := s.refusal(); err != nil {
		s.mu.Unlock()
		return err
	}
	start := len(s.pending)
	s.pending = appendFrame(s.pending, data)
	s.queued++
	p := s.pending[start+frameHeaderLen:]
	binary.BigEndian.PutUint32(p[2:6], s.index)
	binary.BigEndian.PutUint32(p[6:10], context)
	pipelined := s.outstanding.Add(1) > 1
	if s.writing {
		s.mu.Unlock()
		return nil
	}
	if pipelined {
		s.mu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default: // already kicked: the flusher will find this frame too
		}
		return nil
	}
	err := s.writeLocked()
	s.mu.Unlock()
	return err
}

// flushLoop writes the frames of pipelined senders: woken by a kick, it writes
// everything pending (and whatever is queued while it writes) in as few syscalls as
// the senders allow.
func (s *session) flushLoop() {
	defer close(s.flusherDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		s.mu.Lock()
		if !s.writing {
			w := s.stats.Writes
			_ = s.writeLocked() // the error is sticky: later senders get it
			s.stats.FlusherWrites += s.stats.Writes - w
		}
		s.mu.Unlock()
	}
}

// refusal returns why a frame cannot be queued now, or nil.
func (s *session) refusal() error {
	switch {
	case s.err != nil:
		return s.err
	case s.closing:
		return fmt.Errorf("vppsock: send to %s: %w", s.path, ErrClosed)
	}
	return nil
}

// writeLocked writes the pending frames, and those queued while it writes, until none
// is left or a write fails. s.mu is held on entry and exit, released while writing.
func (s *session) writeLocked() error {
	s.writing = true
	defer func() { s.writing = false }()
	for len(s.pending) > 0 && s.err == nil {
		out := s.pending
		s.pending = s.spare[:0]
		s.spare = nil
		// counted before the syscall: a reply may be read before it returns
		s.stats.Writes++
		s.stats.Messages += uint64(s.queued)
		s.queued = 0
		s.room.Broadcast()
		s.mu.Unlock()
		_, err := s.nc.Write(out)
		s.mu.Lock()
		if err != nil {
			err = fmt.Errorf("vppsock: write to %s: %w", s.path, err)
			if s.err == nil {
				s.err = err
			}
			s.pending, s.queued = s.pending[:0], 0
			s.room.Broadcast()
			return s.err
		}
		if cap(out) <= 2*s.maxPend {
			s.spare = out[:0]
		}
	}
	return s.err
}

// close unregisters the client (best effort), closes the socket and waits for the
// reader.
func (s *session) close(timeout time.Duration) {
	s.leaving.Store(true)
	s.mu.Lock()
	if !s.closing && s.err == nil {
		// sockclnt_delete goes behind the pending frames; the writer in progress,
		// if any, sends it, else we do.
		del, err := codec.DefaultCodec.EncodeMsg(&memclnt.SockclntDelete{Index: s.index}, s.deleteID)
		if err == nil {
			binary.BigEndian.PutUint32(del[2:6], s.index)
			binary.BigEndian.PutUint32(del[6:10], deleteContext)
			s.pending = appendFrame(s.pending, del)
			s.queued++
			if !s.writing {
				_ = s.nc.SetWriteDeadline(time.Now().Add(timeout))
				_ = s.writeLocked()
			}
		}
	}
	s.closing = true
	s.room.Broadcast()
	s.mu.Unlock()
	// VPP closes the socket after its sockclnt_delete_reply; give it that long.
	t := time.NewTimer(timeout)
	select {
	case <-s.readerDone:
	case <-t.C:
	}
	t.Stop()
	close(s.stop)
	_ = s.nc.Close()
	<-s.readerDone
	<-s.flusherDone
	s.mu.Lock()
	if s.err == nil {
		s.err = fmt.Errorf("vppsock: send to %s: %w", s.path, ErrClosed)
	}
	s.room.Broadcast()
	s.mu.Unlock()
}

package unarygrpc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strconv"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// clientPreface starts every HTTP/2 connection of a client (RFC 9113 §3.4).
const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Frame types (RFC 9113 §6).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9
)

// Frame flags.
const (
	flagEndStream  = 0x1 // DATA, HEADERS
	flagAck        = 0x1 // SETTINGS, PING
	flagEndHeaders = 0x4 // HEADERS, CONTINUATION
	flagPadded     = 0x8 // DATA, HEADERS
	flagPriority   = 0x20
)

// Settings (RFC 9113 §6.5.2) this client looks at or sends.
const (
	settingEnablePush        = 0x2
	settingInitialWindowSize = 0x4
	settingMaxFrameSize      = 0x5
)

// Error codes of RST_STREAM and GOAWAY (RFC 9113 §7) that change the outcome.
const (
	errCodeRefusedStream = 0x7
	errCodeCancel        = 0x8
)

const (
	frameHeaderLen = 9
	// streamID is the only stream a call uses.
	streamID = 1
	// defaultWindow is the initial flow-control window of a connection and
	// of a stream, before SETTINGS_INITIAL_WINDOW_SIZE changes the latter.
	defaultWindow = 65535
	// maxWindow is the largest legal flow-control window.
	maxWindow = 1<<31 - 1
	// defaultMaxFrameSize is the largest frame payload until the peer allows
	// more; it is also the largest this client accepts, as it never raises
	// its own SETTINGS_MAX_FRAME_SIZE.
	defaultMaxFrameSize = 16384
	// maxFrameSizeLimit is the largest legal SETTINGS_MAX_FRAME_SIZE.
	maxFrameSizeLimit = 1<<24 - 1
	// headerTableSize is the size of the HPACK dynamic table of the
	// response decoder: the HTTP/2 default, which this client keeps.
	headerTableSize = 4096
	// maxHeaderListSize bounds the decoded size of one header block of the
	// response (names + values + 32 bytes per field, as RFC 9113 counts it).
	maxHeaderListSize = 64 << 10
	// maxReplySize is the largest response message accepted, grpc-go's
	// default receive limit.
	maxReplySize = 4 << 20
	// msgPrefixLen is the length of the gRPC message prefix: the compressed
	// flag and the 4-byte length.
	msgPrefixLen = 5
	// maxDebugData bounds the GOAWAY debug data quoted in an error.
	maxDebugData = 256
	// userAgent is sent with every call.
	userAgent = "contiv-unarygrpc"
)

// call is the state of one exchange on a connection, driven by a single
// goroutine.
type call struct {
	// onServerPreface, if set, is called once, when the server's first SETTINGS
	// frame (its connection preface) has arrived; sawServerPreface records it.
	onServerPreface  func()
	sawServerPreface bool

	conn    net.Conn
	br      *bufio.Reader
	out     []byte // frames to write at the next flush
	hdr     [frameHeaderLen]byte
	payload []byte // buffer of the frame being handled

	// Send side.
	pending    []byte // framed request bytes not sent yet
	connWin    int64  // connection send window
	streamWin  int64  // stream send window; may go negative on a SETTINGS change
	initialWin int64  // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame   int    // the peer's SETTINGS_MAX_FRAME_SIZE

	// Receive side.
	dec        *hpack.Decoder
	block      headerBlock
	inBlock    bool   // a header block awaits its CONTINUATION frames
	blockSID   uint32 // stream of the open header block
	blockEnd   bool   // the open header block ends its stream
	gotHeaders bool   // the response headers of stream 1 have arrived
	msg        msgReader
}

// headerBlock holds the fields of one decoded header block that matter.
type headerBlock struct {
	size          int
	tooLarge      bool
	hasStatus     bool
	status        string
	contentType   string
	hasGRPCStatus bool
	grpcStatus    string
	grpcMessage   string
}

func newCall(conn net.Conn, body []byte) *call {
	c := &call{
		conn:       conn,
		br:         bufio.NewReader(conn),
		pending:    body,
		connWin:    defaultWindow,
		streamWin:  defaultWindow,
		initialWin: defaultWindow,
		maxFrame:   defaultMaxFrameSize,
	}
	c.dec = hpack.NewDecoder(headerTableSize, c.onField)
	c.dec.SetMaxStringLength(maxHeaderListSize)
	return c
}

// run sends the request and reads the response into reply. It returns nil,
// an *Error, or a *transportError.
func (c *call) run(authority, method, timeout string, reply proto.Message) error {
	c.writeRequest(authority, method, timeout)
	if err := c.flush(); err != nil {
		return err
	}
	for {
		done, err := c.readAndHandle()
		if err != nil {
			return err
		}
		if done {
			return c.result(reply)
		}
		c.queueData()
	}
}

// writeRequest queues the client preface, SETTINGS, the request HEADERS and
// as much request DATA as the initial windows allow, for one write.
func (c *call) writeRequest(authority, method, timeout string) {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := [...]hpack.HeaderField{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: method},
		{Name: ":authority", Value: authority},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"},
		{Name: "user-agent", Value: userAgent},
		{Name: "grpc-timeout", Value: timeout},
	}
	n := len(fields)
	if timeout == "" {
		n--
	}
	for _, f := range fields[:n] {
		// Writing to a bytes.Buffer cannot fail.
		_ = enc.WriteField(f)
	}
	hb := block.Bytes()

	firstData := min(len(c.pending), defaultWindow)
	size := len(clientPreface) + frameHeaderLen + 6 +
		len(hb) + frameHeaderLen*(1+len(hb)/defaultMaxFrameSize) +
		firstData + frameHeaderLen*(1+firstData/defaultMaxFrameSize)
	c.out = make([]byte, 0, size)
	c.out = append(c.out, clientPreface...)
	c.out = appendFrameHeader(c.out, 6, frameSettings, 0, 0)
	c.out = append(c.out, 0, settingEnablePush, 0, 0, 0, 0)

	typ := byte(frameHeaders)
	for {
		k := min(len(hb), c.maxFrame)
		var flags byte
		if k == len(hb) {
			flags = flagEndHeaders
		}
		c.out = appendFrameHeader(c.out, k, typ, flags, streamID)
		c.out = append(c.out, hb[:k]...)
		hb = hb[k:]
		if len(hb) == 0 {
			break
		}
		typ = frameContinuation
	}
	c.queueData()
}

// queueData queues DATA frames for as much of the pending request as the
// windows and the peer's maximum frame size allow.
func (c *call) queueData() {
	for len(c.pending) > 0 {
		k := min(int64(len(c.pending)), int64(c.maxFrame), c.connWin, c.streamWin)
		if k <= 0 {
			return
		}
		var flags byte
		if k == int64(len(c.pending)) {
			flags = flagEndStream
		}
		c.out = appendFrameHeader(c.out, int(k), frameData, flags, streamID)
		c.out = append(c.out, c.pending[:k]...)
		c.pending = c.pending[k:]
		c.connWin -= k
		c.streamWin -= k
	}
}

// flush writes the queued frames.
func (c *call) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.conn.Write(c.out)
	c.out = c.out[:0]
	if err != nil {
		return &transportError{op: "writing to the server", err: err}
	}
	return nil
}

// readFrame reads the next frame, first writing the queued frames if the
// read may block. The payload is valid until the next call.
func (c *call) readFrame() (typ, flags byte, sid uint32, p []byte, err error) {
	if len(c.out) > 0 && c.br.Buffered() < frameHeaderLen {
		if err := c.flush(); err != nil {
			return 0, 0, 0, nil, err
		}
	}
	if _, err := io.ReadFull(c.br, c.hdr[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, 0, nil, &transportError{op: "reading the response (connection closed before the call completed)", err: err}
	}
	n := int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
	typ, flags = c.hdr[3], c.hdr[4]
	sid = binary.BigEndian.Uint32(c.hdr[5:]) & (1<<31 - 1)
	if n > defaultMaxFrameSize {
		return 0, 0, 0, nil, protocolError("frame of type %d with %d bytes exceeds the maximum frame size %d", typ, n, defaultMaxFrameSize)
	}
	if len(c.out) > 0 && c.br.Buffered() < n {
		if err := c.flush(); err != nil {
			return 0, 0, 0, nil, err
		}
	}
	if cap(c.payload) < n {
		c.payload = make([]byte, max(n, 2*cap(c.payload), 512))
	}
	p = c.payload[:n]
	if _, err := io.ReadFull(c.br, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, 0, nil, &transportError{op: "reading the response (connection closed before the call completed)", err: err}
	}
	return typ, flags, sid, p, nil
}

// readAndHandle reads and handles one frame. done is true when the call has
// its outcome: the trailers of stream 1 have been decoded into c.block.
func (c *call) readAndHandle() (done bool, err error) {
	typ, flags, sid, p, err := c.readFrame()
	if err != nil {
		return false, err
	}
	if c.inBlock && typ != frameContinuation {
		return false, protocolError("frame of type %d in the middle of a header block of stream %d", typ, c.blockSID)
	}
	switch typ {
	case frameData:
		return c.handleData(flags, sid, p)
	case frameHeaders:
		return c.handleHeaders(flags, sid, p)
	case framePriority:
		if sid == streamID && len(p) != 5 {
			return false, protocolError("PRIORITY frame of %d bytes", len(p))
		}
	case frameRSTStream:
		return c.handleRSTStream(sid, p)
	case frameSettings:
		return false, c.handleSettings(flags, sid, p)
	case framePushPromise:
		return false, protocolError("PUSH_PROMISE received although push is disabled")
	case framePing:
		if sid != 0 {
			return false, protocolError("PING frame on stream %d", sid)
		}
		if len(p) != 8 {
			return false, protocolError("PING frame of %d bytes", len(p))
		}
		if flags&flagAck == 0 {
			c.out = appendFrameHeader(c.out, 8, framePing, flagAck, 0)
			c.out = append(c.out, p...)
		}
	case frameGoAway:
		return false, c.handleGoAway(sid, p)
	case frameWindowUpdate:
		return false, c.handleWindowUpdate(sid, p)
	case frameContinuation:
		if !c.inBlock {
			return false, protocolError("CONTINUATION frame without a preceding HEADERS")
		}
		if sid != c.blockSID {
			return false, protocolError("CONTINUATION frame on stream %d in a header block of stream %d", sid, c.blockSID)
		}
		return c.blockFragment(p, flags&flagEndHeaders != 0)
	}
	// Unknown frame types are ignored (RFC 9113 §4.1).
	return false, nil
}

// handleData handles a DATA frame.
func (c *call) handleData(flags byte, sid uint32, p []byte) (bool, error) {
	if sid == 0 {
		return false, protocolError("DATA frame on stream 0")
	}
	data, err := unpad("DATA", flags, p)
	if err != nil {
		return false, err
	}
	// The whole payload, padding included, counts against the windows:
	// give it back at once so the server can send replies of any size.
	if len(p) > 0 {
		c.out = appendWindowUpdate(c.out, 0, len(p))
		if sid == streamID {
			c.out = appendWindowUpdate(c.out, streamID, len(p))
		}
	}
	if sid != streamID {
		return false, nil
	}
	if !c.gotHeaders {
		return false, protocolError("DATA frame before the response headers")
	}
	if err := c.msg.write(data); err != nil {
		return false, err
	}
	if flags&flagEndStream != 0 {
		return false, errorf(codes.Internal, "server closed the stream without sending trailers")
	}
	return false, nil
}

// handleHeaders handles a HEADERS frame.
func (c *call) handleHeaders(flags byte, sid uint32, p []byte) (bool, error) {
	if sid == 0 {
		return false, protocolError("HEADERS frame on stream 0")
	}
	frag, err := unpad("HEADERS", flags, p)
	if err != nil {
		return false, err
	}
	if flags&flagPriority != 0 {
		if len(frag) < 5 {
			return false, protocolError("HEADERS frame too short for its priority fields")
		}
		frag = frag[5:]
	}
	c.block = headerBlock{}
	c.dec.SetEmitEnabled(true)
	c.inBlock = true
	c.blockSID = sid
	c.blockEnd = flags&flagEndStream != 0
	return c.blockFragment(frag, flags&flagEndHeaders != 0)
}

// blockFragment decodes a fragment of the open header block and, at its end,
// acts on the block.
func (c *call) blockFragment(frag []byte, end bool) (bool, error) {
	if _, err := c.dec.Write(frag); err != nil {
		return false, protocolError("decoding a header block: %v", err)
	}
	if c.block.tooLarge {
		return false, errorf(codes.Internal, "response header list larger than %d bytes", maxHeaderListSize)
	}
	if !end {
		return false, nil
	}
	c.inBlock = false
	if err := c.dec.Close(); err != nil {
		return false, protocolError("decoding a header block: %v", err)
	}
	if c.blockSID != streamID {
		// Decoded only to keep the HPACK table in step.
		return false, nil
	}
	if !c.gotHeaders {
		c.gotHeaders = true
		if err := c.block.checkResponse(); err != nil {
			return false, err
		}
		// With END_STREAM this is a trailers-only response.
		return c.blockEnd, nil
	}
	if !c.blockEnd {
		return false, protocolError("second header block of the response without END_STREAM")
	}
	return true, nil
}

// onField collects the fields of the header block being decoded.
func (c *call) onField(f hpack.HeaderField) {
	b := &c.block
	b.size += len(f.Name) + len(f.Value) + 32
	if b.size > maxHeaderListSize {
		b.tooLarge = true
		c.dec.SetEmitEnabled(false)
		return
	}
	switch f.Name {
	case ":status":
		b.hasStatus, b.status = true, f.Value
	case "content-type":
		b.contentType = f.Value
	case "grpc-status":
		b.hasGRPCStatus, b.grpcStatus = true, f.Value
	case "grpc-message":
		b.grpcMessage = f.Value
	}
}

// checkResponse checks the first header block of the response: HTTP status
// 200 and a gRPC content type.
func (b *headerBlock) checkResponse() error {
	if !b.hasStatus {
		return errorf(codes.Internal, "malformed response headers: missing :status")
	}
	status, err := strconv.Atoi(b.status)
	if err != nil {
		return errorf(codes.Internal, "malformed response headers: :status %q", b.status)
	}
	if status != 200 {
		return errorf(httpStatusCode(status), "unexpected HTTP status code received from server: %d (content-type %q)", status, b.contentType)
	}
	if !isGRPCContentType(b.contentType) {
		return errorf(codes.Unknown, "unexpected content-type %q received from server", b.contentType)
	}
	return nil
}

// result is the outcome of the call given its trailers, in c.block.
func (c *call) result(reply proto.Message) error {
	b := &c.block
	if !b.hasGRPCStatus {
		return errorf(codes.Internal, "server ended the stream without grpc-status")
	}
	code, err := strconv.ParseUint(b.grpcStatus, 10, 32)
	if err != nil {
		return errorf(codes.Internal, "malformed grpc-status %q", b.grpcStatus)
	}
	if code != uint64(codes.OK) {
		return &Error{Code: codes.Code(code), Message: decodeGRPCMessage(b.grpcMessage)}
	}
	switch {
	case c.msg.partial():
		return errorf(codes.Internal, "response ended in the middle of a message")
	case c.msg.count == 0:
		return errorf(codes.Internal, "server sent no response message with status OK")
	case c.msg.count > 1:
		return errorf(codes.Internal, "server sent %d response messages to a unary call", c.msg.count)
	}
	if err := proto.Unmarshal(c.msg.first, reply); err != nil {
		return errorf(codes.Internal, "decoding the response message: %v", err)
	}
	return nil
}

// handleRSTStream handles a RST_STREAM frame.
func (c *call) handleRSTStream(sid uint32, p []byte) (bool, error) {
	if sid == 0 {
		return false, protocolError("RST_STREAM frame on stream 0")
	}
	if len(p) != 4 {
		return false, protocolError("RST_STREAM frame of %d bytes", len(p))
	}
	if sid != streamID {
		return false, nil
	}
	switch code := binary.BigEndian.Uint32(p); code {
	case errCodeRefusedStream:
		return false, errorf(codes.Unavailable, "stream refused by the server (RST_STREAM REFUSED_STREAM)")
	case errCodeCancel:
		return false, errorf(codes.Canceled, "stream canceled by the server (RST_STREAM CANCEL)")
	default:
		return false, errorf(codes.Internal, "stream reset by the server (RST_STREAM error code %d)", code)
	}
}

// handleSettings applies a SETTINGS frame and queues its acknowledgement.
func (c *call) handleSettings(flags byte, sid uint32, p []byte) error {
	if sid != 0 {
		return protocolError("SETTINGS frame on stream %d", sid)
	}
	if flags&flagAck != 0 {
		if len(p) != 0 {
			return protocolError("SETTINGS acknowledgement with %d bytes of payload", len(p))
		}
		return nil
	}
	if len(p)%6 != 0 {
		return protocolError("SETTINGS frame of %d bytes, not a multiple of 6", len(p))
	}
	for ; len(p) > 0; p = p[6:] {
		id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
		switch id {
		case settingEnablePush:
			if v > 1 {
				return protocolError("SETTINGS_ENABLE_PUSH of %d", v)
			}
		case settingInitialWindowSize:
			if v > maxWindow {
				return protocolError("SETTINGS_INITIAL_WINDOW_SIZE of %d exceeds 2^31-1", v)
			}
			c.streamWin += int64(v) - c.initialWin
			c.initialWin = int64(v)
			if c.streamWin > maxWindow {
				return protocolError("SETTINGS_INITIAL_WINDOW_SIZE of %d overflows the stream window", v)
			}
		case settingMaxFrameSize:
			if v < defaultMaxFrameSize || v > maxFrameSizeLimit {
				return protocolError("SETTINGS_MAX_FRAME_SIZE of %d is outside [%d, %d]", v, defaultMaxFrameSize, maxFrameSizeLimit)
			}
			c.maxFrame = int(v)
		}
		// The other settings do not matter to a client that has already sent
		// its only header block and never accepts pushes.
	}
	c.out = appendFrameHeader(c.out, 0, frameSettings, flagAck, 0)
	if !c.sawServerPreface {
		c.sawServerPreface = true
		if c.onServerPreface != nil {
			c.onServerPreface()
		}
	}
	return nil
}

// handleGoAway handles a GOAWAY frame: the call fails only if the server
// will not process stream 1; otherwise the server finishes it first.
func (c *call) handleGoAway(sid uint32, p []byte) error {
	if sid != 0 {
		return protocolError("GOAWAY frame on stream %d", sid)
	}
	if len(p) < 8 {
		return protocolError("GOAWAY frame of %d bytes", len(p))
	}
	last := binary.BigEndian.Uint32(p) & (1<<31 - 1)
	if last >= streamID {
		return nil
	}
	debug := p[8:]
	if len(debug) > maxDebugData {
		debug = debug[:maxDebugData]
	}
	return errorf(codes.Unavailable, "server is going away without processing the call (GOAWAY error code %d, debug data %q)",
		binary.BigEndian.Uint32(p[4:]), debug)
}

// handleWindowUpdate handles a WINDOW_UPDATE frame.
func (c *call) handleWindowUpdate(sid uint32, p []byte) error {
	if len(p) != 4 {
		return protocolError("WINDOW_UPDATE frame of %d bytes", len(p))
	}
	inc := int64(binary.BigEndian.Uint32(p) & (1<<31 - 1))
	var win *int64
	switch sid {
	case 0:
		win = &c.connWin
	case streamID:
		win = &c.streamWin
	default:
		return nil
	}
	if inc == 0 {
		return protocolError("WINDOW_UPDATE with increment 0 on stream %d", sid)
	}
	*win += inc
	if *win > maxWindow {
		return protocolError("WINDOW_UPDATE overflows the flow-control window of stream %d", sid)
	}
	return nil
}

// unpad strips the padding of a DATA or HEADERS frame payload.
func unpad(frame string, flags byte, p []byte) ([]byte, error) {
	if flags&flagPadded == 0 {
		return p, nil
	}
	if len(p) == 0 {
		return nil, protocolError("padded %s frame without a pad length", frame)
	}
	pad := int(p[0])
	if pad >= len(p) {
		return nil, protocolError("padded %s frame with %d bytes of padding in a %d-byte payload", frame, pad, len(p))
	}
	return p[1 : len(p)-pad], nil
}

// appendFrameHeader appends a frame header to b.
func appendFrameHeader(b []byte, length int, typ, flags byte, sid uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(sid>>24), byte(sid>>16), byte(sid>>8), byte(sid))
}

// appendWindowUpdate appends a WINDOW_UPDATE frame of inc bytes for sid.
func appendWindowUpdate(b []byte, sid uint32, inc int) []byte {
	b = appendFrameHeader(b, 4, frameWindowUpdate, 0, sid)
	return binary.BigEndian.AppendUint32(b, uint32(inc))
}

// msgReader splits the DATA of the response into gRPC messages, keeping the
// first one.
type msgReader struct {
	prefix [msgPrefixLen]byte
	nPre   int    // bytes of the current message prefix received
	need   int    // bytes of the current message body still to come
	first  []byte // body of the first message
	count  int    // complete messages
}

// write consumes DATA payload bytes.
func (m *msgReader) write(p []byte) error {
	for len(p) > 0 {
		if m.nPre < msgPrefixLen {
			k := copy(m.prefix[m.nPre:], p)
			m.nPre += k
			p = p[k:]
			if m.nPre < msgPrefixLen {
				return nil
			}
			switch m.prefix[0] {
			case 0:
			case 1:
				return errorf(codes.Internal, "compressed response message although no compression was negotiated")
			default:
				return errorf(codes.Internal, "response message with invalid compressed flag %d", m.prefix[0])
			}
			n := binary.BigEndian.Uint32(m.prefix[1:])
			if n > maxReplySize {
				return errorf(codes.ResourceExhausted, "received message larger than max (%d vs. %d)", n, maxReplySize)
			}
			m.need = int(n)
			if m.count == 0 {
				// Grow with what arrives rather than trust the length.
				m.first = make([]byte, 0, min(m.need, 64<<10))
			}
		} else {
			k := min(m.need, len(p))
			if m.count == 0 {
				m.first = append(m.first, p[:k]...)
			}
			m.need -= k
			p = p[k:]
		}
		if m.need == 0 {
			m.count++
			m.nPre = 0
		}
	}
	return nil
}

// partial reports whether a message has begun but not ended.
func (m *msgReader) partial() bool { return m.nPre > 0 }

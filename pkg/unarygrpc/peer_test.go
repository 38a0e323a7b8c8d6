package unarygrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// This file tests the client against a scripted server speaking raw HTTP/2
// frames over net.Pipe, for what grpc-go servers do not send.

// frame is an HTTP/2 frame the client sent.
type frame struct {
	typ, flags byte
	sid        uint32
	p          []byte
}

// peer is the server end of a net.Pipe whose client end runs exchange.
type peer struct {
	t    testing.TB
	conn net.Conn
	enc  *hpack.Encoder
	ebuf bytes.Buffer

	// first is what the client wrote in its first write; valid after
	// firstDone is closed.
	first     []byte
	firstDone chan struct{}
	// frames are the frames the client sent after the preface, in order;
	// closed when the connection is.
	frames chan frame
	// onFrame, if set before read starts, sees each client frame before
	// it is put in frames, in the reading goroutine.
	onFrame func(frame)
	// readDone is closed when the reading goroutine ends.
	readDone chan struct{}
}

func newPeer(t testing.TB, conn net.Conn) *peer {
	p := &peer{
		t:         t,
		conn:      conn,
		firstDone: make(chan struct{}),
		frames:    make(chan frame, 4096),
		readDone:  make(chan struct{}),
	}
	p.enc = hpack.NewEncoder(&p.ebuf)
	return p
}

// read reads what the client sends until the connection is closed.
func (p *peer) read() {
	defer close(p.readDone)
	defer close(p.frames)
	buf := make([]byte, 1<<20)
	n, err := p.conn.Read(buf)
	if err != nil {
		close(p.firstDone)
		return
	}
	p.first = buf[:n]
	close(p.firstDone)
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(buf[:n]), p.conn))
	pre := make([]byte, len(clientPreface))
	if _, err := io.ReadFull(r, pre); err != nil || string(pre) != clientPreface {
		p.t.Errorf("client preface %q, want %q", pre, clientPreface)
		return
	}
	for {
		var h [frameHeaderLen]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		f := frame{typ: h[3], flags: h[4], sid: binary.BigEndian.Uint32(h[5:]) & (1<<31 - 1)}
		f.p = make([]byte, int(h[0])<<16|int(h[1])<<8|int(h[2]))
		if _, err := io.ReadFull(r, f.p); err != nil {
			return
		}
		if p.onFrame != nil {
			p.onFrame(f)
		}
		p.frames <- f
	}
}

// expect returns the next client frame for which match is true, skipping
// others; false if there is none within a few seconds.
func (p *peer) expect(match func(frame) bool) (frame, bool) {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-p.frames:
			if !ok {
				return frame{}, false
			}
			if match(f) {
				return f, true
			}
		case <-timeout:
			return frame{}, false
		}
	}
}

// write writes raw bytes to the client; errors are ignored, as the client
// may rightly have stopped reading.
func (p *peer) write(b []byte) { _, _ = p.conn.Write(b) }

// frame writes a frame.
func (p *peer) frame(typ, flags byte, sid uint32, payload []byte) {
	p.write(rawFrame(typ, flags, sid, payload))
}

// block HPACK-encodes the name/value pairs kv with the connection's encoder.
func (p *peer) block(kv ...string) []byte {
	p.ebuf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		_ = p.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(p.ebuf.Bytes())
}

// headers writes a HEADERS frame with END_HEADERS and the fields kv.
func (p *peer) headers(sid uint32, flags byte, kv ...string) {
	p.frame(frameHeaders, flags|flagEndHeaders, sid, p.block(kv...))
}

// settings writes a SETTINGS frame with id/value pairs.
func (p *peer) settings(kv ...uint32) {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = binary.BigEndian.AppendUint16(b, uint16(kv[i]))
		b = binary.BigEndian.AppendUint32(b, kv[i+1])
	}
	p.frame(frameSettings, 0, 0, b)
}

// respond writes a complete OK response with reply.
func (p *peer) respond(reply proto.Message) {
	p.headers(1, 0, okHeaders...)
	p.frame(frameData, 0, 1, grpcMessage(reply))
	p.headers(1, flagEndStream, okTrailers...)
}

var (
	okHeaders  = []string{":status", "200", "content-type", "application/grpc"}
	okTrailers = []string{"grpc-status", "0", "grpc-message", ""}
)

// rawFrame is an encoded frame.
func rawFrame(typ, flags byte, sid uint32, payload []byte) []byte {
	b := appendFrameHeader(nil, len(payload), typ, flags, sid)
	return append(b, payload...)
}

// grpcMessage is m as a length-prefixed gRPC message.
func grpcMessage(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(b))), b...)
}

// u32 is v in 4 big-endian bytes.
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// padded is the payload of a PADDED frame: pad length, data, padding.
func padded(data []byte, pad int) []byte {
	b := append([]byte{byte(pad)}, data...)
	return append(b, make([]byte, pad)...)
}

// runPeer runs exchange for req against script, with a context timeout, and
// returns its outcome. The script runs in its own goroutine and may report
// failures with p.t.Errorf.
func runPeer(t *testing.T, req *cni.CNIRequest, timeout time.Duration, script func(p *peer)) (*cni.CNIReply, error) {
	t.Helper()
	return runPeerWith(t, req, timeout, nil, script)
}

// runPeerWith is runPeer with an onFrame hook for the peer.
func runPeerWith(t *testing.T, req *cni.CNIRequest, timeout time.Duration, onFrame func(frame), script func(p *peer)) (*cni.CNIReply, error) {
	t.Helper()
	cli, srv := net.Pipe()
	p := newPeer(t, srv)
	p.onFrame = onFrame
	go p.read()
	scriptDone := make(chan struct{})
	go func() {
		defer close(scriptDone)
		script(p)
	}()
	body, err := frameRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	reply := &cni.CNIReply{}
	callErr := exchange(ctx, cli, "localhost", "/cni.RemoteCNI/Add", body, reply)
	// exchange has closed cli, which ends the script's writes and the reader.
	srv.Close()
	waitClosed(t, scriptDone, "the script")
	waitClosed(t, p.readDone, "the reader")
	return reply, callErr
}

// TestScripted runs calls against scripted servers.
func TestScripted(t *testing.T) {
	req := testRequest("scripted", modeEcho)
	want := replyFor(req)
	msg := grpcMessage(want)

	tests := []struct {
		name    string
		script  func(p *peer)
		timeout time.Duration // default 5 s
		code    codes.Code
		msg     string // substring of the error message
	}{
		{name: "plain response", script: func(p *peer) {
			p.settings()
			p.respond(want)
		}},
		{name: "no server preface", script: func(p *peer) {
			p.respond(want)
		}},
		{name: "settings acknowledged", script: func(p *peer) {
			p.settings(settingMaxFrameSize, 1<<20, 0x99, 7)
			if f, ok := p.expect(func(f frame) bool { return f.typ == frameSettings && f.flags&flagAck != 0 }); !ok || len(f.p) != 0 || f.sid != 0 {
				p.t.Errorf("no SETTINGS ACK, got %+v", f)
			}
			p.respond(want)
		}},
		{name: "ping answered", script: func(p *peer) {
			data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
			p.frame(framePing, 0, 0, data)
			p.frame(framePing, flagAck, 0, []byte{9, 9, 9, 9, 9, 9, 9, 9}) // an ACK is not answered
			f, ok := p.expect(func(f frame) bool { return f.typ == framePing })
			if !ok || f.flags != flagAck || f.sid != 0 || !bytes.Equal(f.p, data) {
				p.t.Errorf("PING answered with %+v, want an ACK of %v", f, data)
			}
			p.respond(want)
			if f, ok := p.expect(func(f frame) bool { return f.typ == framePing }); ok {
				p.t.Errorf("second PING frame %+v", f)
			}
		}},
		{name: "padded frames", script: func(p *peer) {
			p.settings()
			prio := []byte{0x80, 0, 0, 3, 200} // exclusive dependency on stream 3, weight 200
			p.frame(frameHeaders, flagEndHeaders|flagPadded|flagPriority, 1, padded(append(prio, p.block(okHeaders...)...), 10))
			p.frame(frameData, flagPadded, 1, padded(msg[:7], 7))
			p.frame(frameData, flagPadded, 1, padded(nil, 20))
			p.frame(frameData, flagPadded, 1, padded(msg[7:], 255))
			p.frame(frameHeaders, flagEndHeaders|flagEndStream|flagPadded, 1, padded(p.block(okTrailers...), 3))
		}},
		{name: "continuation", script: func(p *peer) {
			b := p.block(append(okHeaders, "x-extra", strings.Repeat("x", 100))...)
			p.frame(frameHeaders, 0, 1, b[:5])
			p.frame(frameContinuation, 0, 1, b[5:20])
			p.frame(frameContinuation, 0, 1, nil)
			p.frame(frameContinuation, flagEndHeaders, 1, b[20:])
			p.frame(frameData, 0, 1, msg)
			b = p.block(okTrailers...)
			p.frame(frameHeaders, flagEndStream|flagPadded, 1, padded(b[:1], 2))
			p.frame(frameContinuation, flagEndHeaders, 1, b[1:])
		}},
		{name: "message split over frames", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			for i := range msg {
				p.frame(frameData, 0, 1, msg[i:i+1])
			}
			p.frame(frameData, 0, 1, nil)
			p.headers(1, flagEndStream, okTrailers...)
		}},
		{name: "other streams and unknown frames ignored", script: func(p *peer) {
			p.frame(0xfa, 0xff, 0, []byte("unknown"))
			p.frame(0xfa, 0, 1, []byte("unknown on stream 1"))
			// This block fills the HPACK dynamic table with the entries the
			// blocks of stream 1 then refer to.
			p.headers(3, 0, append(okHeaders, okTrailers...)...)
			p.frame(frameData, flagEndStream, 3, []byte("data of another stream"))
			p.frame(framePriority, 0, 3, []byte{0, 0, 0, 1, 16})
			p.frame(framePriority, 0, 1, []byte{0, 0, 0, 0, 16})
			p.frame(frameRSTStream, 0, 3, u32(2))
			p.frame(frameWindowUpdate, 0, 3, u32(0))
			p.frame(frameGoAway, 0, 0, append(u32(1), u32(0)...))
			p.respond(want)
		}},
		{name: "GOAWAY after stream 1", script: func(p *peer) {
			p.frame(frameGoAway, 0, 0, append(append(u32(1), u32(0)...), "bye"...))
			p.respond(want)
		}},
		{name: "trailers-only", code: codes.NotFound, msg: "not found: ü", script: func(p *peer) {
			p.headers(1, flagEndStream, append(okHeaders, "grpc-status", "5", "grpc-message", "not%20found%3A%20%C3%BC")...)
		}},
		{name: "status with message", code: codes.FailedPrecondition, msg: "100% sure", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, msg) // messages are ignored when the status is not OK
			p.headers(1, flagEndStream, "grpc-status", "9", "grpc-message", "100%25 sure")
		}},
		{name: "RST_STREAM REFUSED_STREAM", code: codes.Unavailable, msg: "REFUSED_STREAM", script: func(p *peer) {
			p.frame(frameRSTStream, 0, 1, u32(7))
		}},
		{name: "RST_STREAM CANCEL", code: codes.Canceled, msg: "CANCEL", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameRSTStream, 0, 1, u32(8))
		}},
		{name: "RST_STREAM NO_ERROR", code: codes.Internal, msg: "error code 0", script: func(p *peer) {
			p.frame(frameRSTStream, 0, 1, u32(0))
		}},
		{name: "RST_STREAM PROTOCOL_ERROR", code: codes.Internal, msg: "error code 1", script: func(p *peer) {
			p.frame(frameRSTStream, 0, 1, u32(1))
		}},
		{name: "GOAWAY 0", code: codes.Unavailable, msg: `"shutting down"`, script: func(p *peer) {
			p.settings()
			p.frame(frameGoAway, 0, 0, append(append(u32(0), u32(0)...), "shutting down"...))
		}},
		{name: "HTTP 503", code: codes.Unavailable, msg: "503", script: func(p *peer) {
			p.headers(1, 0, ":status", "503", "content-type", "text/html")
			p.frame(frameData, flagEndStream, 1, []byte("<html>unavailable</html>"))
		}},
		{name: "HTTP 400", code: codes.Internal, msg: "400", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "400")
		}},
		{name: "HTTP 401", code: codes.Unauthenticated, msg: "401", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "401")
		}},
		{name: "HTTP 403", code: codes.PermissionDenied, msg: "403", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "403")
		}},
		{name: "HTTP 404", code: codes.Unimplemented, msg: "404", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "404", "content-type", "application/grpc")
		}},
		{name: "HTTP 429", code: codes.Unavailable, msg: "429", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "429")
		}},
		{name: "HTTP 502", code: codes.Unavailable, msg: "502", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "502")
		}},
		{name: "HTTP 504", code: codes.Unavailable, msg: "504", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "504")
		}},
		{name: "HTTP 500", code: codes.Unknown, msg: "500", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "500", "grpc-status", "0")
		}},
		{name: "HTTP 200 not gRPC", code: codes.Unknown, msg: "text/html", script: func(p *peer) {
			p.headers(1, 0, ":status", "200", "content-type", "text/html")
		}},
		{name: "no content-type", code: codes.Unknown, msg: "content-type", script: func(p *peer) {
			p.headers(1, flagEndStream, ":status", "200", "grpc-status", "0")
		}},
		{name: "no :status", code: codes.Internal, msg: ":status", script: func(p *peer) {
			p.headers(1, 0, "content-type", "application/grpc")
		}},
		{name: "malformed :status", code: codes.Internal, msg: ":status", script: func(p *peer) {
			p.headers(1, 0, ":status", "2OO", "content-type", "application/grpc")
		}},
		{name: "compressed message", code: codes.Internal, msg: "compressed", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			m := bytes.Clone(msg)
			m[0] = 1
			p.frame(frameData, 0, 1, m)
			p.headers(1, flagEndStream, okTrailers...)
		}},
		{name: "bad compressed flag", code: codes.Internal, msg: "compressed flag 2", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, []byte{2, 0, 0, 0, 0})
		}},
		{name: "message too large", code: codes.ResourceExhausted, msg: "larger than max", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, append([]byte{0}, u32(maxReplySize+1)...))
		}},
		{name: "missing grpc-status", code: codes.Internal, msg: "grpc-status", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, msg)
			p.headers(1, flagEndStream, "grpc-message", "no status")
		}},
		{name: "malformed grpc-status", code: codes.Internal, msg: "grpc-status", script: func(p *peer) {
			p.headers(1, flagEndStream, append(okHeaders, "grpc-status", "-1")...)
		}},
		{name: "no message", code: codes.Internal, msg: "no response message", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.headers(1, flagEndStream, okTrailers...)
		}},
		{name: "two messages", code: codes.Internal, msg: "2 response messages", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, append(bytes.Clone(msg), msg...))
			p.headers(1, flagEndStream, okTrailers...)
		}},
		{name: "truncated message", code: codes.Internal, msg: "middle of a message", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, msg[:len(msg)-1])
			p.headers(1, flagEndStream, okTrailers...)
		}},
		{name: "undecodable message", code: codes.Internal, msg: "decoding the response", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, []byte{0, 0, 0, 0, 2, 0xff, 0xff})
			p.headers(1, flagEndStream, okTrailers...)
		}},
		{name: "END_STREAM on DATA", code: codes.Internal, msg: "without sending trailers", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, flagEndStream, 1, msg)
		}},
		{name: "closed after headers", code: codes.Unavailable, script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, msg)
			p.conn.Close()
		}},
		{name: "closed mid-frame", code: codes.Unavailable, msg: "unexpected EOF", script: func(p *peer) {
			p.write(rawFrame(frameData, 0, 1, msg)[:7])
			p.conn.Close()
		}},
		{name: "stalled server", timeout: 200 * time.Millisecond, code: codes.DeadlineExceeded, script: func(p *peer) {
			p.settings()
			p.headers(1, 0, okHeaders...)
		}},

		// Protocol errors.
		{name: "HEADERS on stream 0", code: codes.Internal, msg: "HEADERS frame on stream 0", script: func(p *peer) {
			p.headers(0, 0, okHeaders...)
		}},
		{name: "DATA on stream 0", code: codes.Internal, msg: "DATA frame on stream 0", script: func(p *peer) {
			p.frame(frameData, 0, 0, msg)
		}},
		{name: "DATA before HEADERS", code: codes.Internal, msg: "before the response headers", script: func(p *peer) {
			p.frame(frameData, 0, 1, msg)
		}},
		{name: "frame too large", code: codes.Internal, msg: "exceeds the maximum frame size", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, 0, 1, make([]byte, defaultMaxFrameSize+1))
		}},
		{name: "SETTINGS of bad length", code: codes.Internal, msg: "SETTINGS frame of 5 bytes", script: func(p *peer) {
			p.frame(frameSettings, 0, 0, make([]byte, 5))
		}},
		{name: "SETTINGS on stream 1", code: codes.Internal, msg: "SETTINGS frame on stream 1", script: func(p *peer) {
			p.frame(frameSettings, 0, 1, nil)
		}},
		{name: "SETTINGS ACK with payload", code: codes.Internal, msg: "acknowledgement", script: func(p *peer) {
			p.frame(frameSettings, flagAck, 0, make([]byte, 6))
		}},
		{name: "SETTINGS_MAX_FRAME_SIZE too small", code: codes.Internal, msg: "SETTINGS_MAX_FRAME_SIZE", script: func(p *peer) {
			p.settings(settingMaxFrameSize, 16383)
		}},
		{name: "SETTINGS_MAX_FRAME_SIZE too large", code: codes.Internal, msg: "SETTINGS_MAX_FRAME_SIZE", script: func(p *peer) {
			p.settings(settingMaxFrameSize, 1<<24)
		}},
		{name: "SETTINGS_INITIAL_WINDOW_SIZE too large", code: codes.Internal, msg: "SETTINGS_INITIAL_WINDOW_SIZE", script: func(p *peer) {
			p.settings(settingInitialWindowSize, 1<<31)
		}},
		{name: "SETTINGS_ENABLE_PUSH 2", code: codes.Internal, msg: "SETTINGS_ENABLE_PUSH", script: func(p *peer) {
			p.settings(settingEnablePush, 2)
		}},
		{name: "WINDOW_UPDATE 0", code: codes.Internal, msg: "increment 0", script: func(p *peer) {
			p.frame(frameWindowUpdate, 0, 0, u32(0))
		}},
		{name: "WINDOW_UPDATE overflow", code: codes.Internal, msg: "overflows", script: func(p *peer) {
			p.frame(frameWindowUpdate, 0, 1, u32(1<<31-1))
		}},
		{name: "WINDOW_UPDATE of bad length", code: codes.Internal, msg: "WINDOW_UPDATE frame of 3 bytes", script: func(p *peer) {
			p.frame(frameWindowUpdate, 0, 0, []byte{0, 0, 1})
		}},
		{name: "PING of bad length", code: codes.Internal, msg: "PING frame of 7 bytes", script: func(p *peer) {
			p.frame(framePing, 0, 0, make([]byte, 7))
		}},
		{name: "PING on stream 1", code: codes.Internal, msg: "PING frame on stream 1", script: func(p *peer) {
			p.frame(framePing, 0, 1, make([]byte, 8))
		}},
		{name: "GOAWAY too short", code: codes.Internal, msg: "GOAWAY frame of 4 bytes", script: func(p *peer) {
			p.frame(frameGoAway, 0, 0, u32(0))
		}},
		{name: "RST_STREAM on stream 0", code: codes.Internal, msg: "RST_STREAM frame on stream 0", script: func(p *peer) {
			p.frame(frameRSTStream, 0, 0, u32(0))
		}},
		{name: "RST_STREAM of bad length", code: codes.Internal, msg: "RST_STREAM frame of 2 bytes", script: func(p *peer) {
			p.frame(frameRSTStream, 0, 1, []byte{0, 8})
		}},
		{name: "PRIORITY of bad length", code: codes.Internal, msg: "PRIORITY frame of 4 bytes", script: func(p *peer) {
			p.frame(framePriority, 0, 1, u32(0))
		}},
		{name: "PUSH_PROMISE", code: codes.Internal, msg: "PUSH_PROMISE", script: func(p *peer) {
			p.frame(framePushPromise, flagEndHeaders, 1, append(u32(2), p.block(":method", "GET")...))
		}},
		{name: "CONTINUATION without HEADERS", code: codes.Internal, msg: "without a preceding HEADERS", script: func(p *peer) {
			p.frame(frameContinuation, flagEndHeaders, 1, p.block(okHeaders...))
		}},
		{name: "CONTINUATION on another stream", code: codes.Internal, msg: "CONTINUATION frame on stream 3", script: func(p *peer) {
			b := p.block(okHeaders...)
			p.frame(frameHeaders, 0, 1, b[:1])
			p.frame(frameContinuation, flagEndHeaders, 3, b[1:])
		}},
		{name: "other frame inside a header block", code: codes.Internal, msg: "middle of a header block", script: func(p *peer) {
			b := p.block(okHeaders...)
			p.frame(frameHeaders, 0, 1, b[:1])
			p.frame(framePing, 0, 0, make([]byte, 8))
		}},
		{name: "padding too long", code: codes.Internal, msg: "padding", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.frame(frameData, flagPadded, 1, []byte{4, 1, 2, 3})
		}},
		{name: "padded without pad length", code: codes.Internal, msg: "pad length", script: func(p *peer) {
			p.frame(frameHeaders, flagPadded|flagEndHeaders, 1, nil)
		}},
		{name: "priority fields missing", code: codes.Internal, msg: "priority", script: func(p *peer) {
			p.frame(frameHeaders, flagPriority|flagEndHeaders, 1, []byte{0, 0, 0})
		}},
		{name: "bad HPACK", code: codes.Internal, msg: "header block", script: func(p *peer) {
			p.frame(frameHeaders, flagEndHeaders, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
		}},
		{name: "truncated HPACK", code: codes.Internal, msg: "header block", script: func(p *peer) {
			b := p.block(okHeaders...)
			p.frame(frameHeaders, flagEndHeaders, 1, b[:len(b)-1])
		}},
		{name: "dynamic table size above the limit", code: codes.Internal, msg: "header block", script: func(p *peer) {
			p.frame(frameHeaders, flagEndHeaders, 1, []byte{0x3f, 0xe2, 0x1f}) // size update to 4097
		}},
		{name: "header list too large", code: codes.Internal, msg: "header list larger than", script: func(p *peer) {
			b := p.block(append(okHeaders, "x-big", strings.Repeat("a", maxHeaderListSize))...)
			typ := byte(frameHeaders)
			for len(b) > 0 {
				k := min(len(b), defaultMaxFrameSize)
				var flags byte
				if k == len(b) {
					flags = flagEndHeaders
				}
				p.frame(typ, flags, 1, b[:k])
				b, typ = b[k:], frameContinuation
			}
		}},
		{name: "second HEADERS without END_STREAM", code: codes.Internal, msg: "without END_STREAM", script: func(p *peer) {
			p.headers(1, 0, okHeaders...)
			p.headers(1, 0, okHeaders...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			reply, err := runPeer(t, req, timeout, tt.script)
			checkErr(t, err, tt.code, tt.msg)
			if tt.code == codes.OK && !proto.Equal(reply, want) {
				t.Errorf("reply\n%v\nwant\n%v", reply, want)
			}
		})
	}
}

// TestScriptedCancel checks that cancelling the context unblocks a call
// waiting for a server that does not answer.
func TestScriptedCancel(t *testing.T) {
	cli, srv := net.Pipe()
	p := newPeer(t, srv)
	go p.read()
	defer srv.Close()
	body, _ := frameRequest(testRequest("x", modeEcho))
	// The timeout only bounds a call that ignores the cancellation.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err := exchange(ctx, cli, "localhost", "/cni.RemoteCNI/Add", body, &cni.CNIReply{})
	checkErr(t, err, codes.Canceled, "context canceled")
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the canceled call took %v", took)
	}
}

// TestRequestFrames checks what the client sends, and that it sends the
// preface, SETTINGS, HEADERS and the DATA within the initial window in one
// write.
func TestRequestFrames(t *testing.T) {
	small := testRequest("frames", modeEcho)
	big := testRequest("frames-big", modeEcho)
	big.ExtraNwConfig = bigString(100 << 10)
	longMethod := "/cni.RemoteCNI/" + strings.Repeat("M", 20000)

	tests := []struct {
		name      string
		req       *cni.CNIRequest
		method    string
		authority string
		timeout   time.Duration // 0: no deadline
	}{
		{"small request", small, "/cni.RemoteCNI/Add", "localhost", 1500 * time.Millisecond},
		{"no deadline", small, "/cni.RemoteCNI/Check", "10.0.0.1:9111", 0},
		{"request beyond the window", big, "/cni.RemoteCNI/Delete", "localhost", time.Hour},
		{"header block beyond a frame", small, longMethod, "localhost", time.Minute},
	}
	timeoutRE := regexp.MustCompile(`^([0-9]{1,8})([HMSmun])$`)
	units := map[string]time.Duration{"H": time.Hour, "M": time.Minute, "S": time.Second, "m": time.Millisecond, "u": time.Microsecond, "n": 1}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := frameRequest(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			cli, srv := net.Pipe()
			defer srv.Close()
			p := newPeer(t, srv)
			go p.read()
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			callDone := make(chan error, 1)
			go func() {
				callDone <- exchange(ctx, cli, tt.authority, tt.method, body, &cni.CNIReply{})
			}()

			waitClosed(t, p.firstDone, "the first write")
			// The frames of the first write, after the preface.
			var frames []frame
			rest := p.first
			if !bytes.HasPrefix(rest, []byte(clientPreface)) {
				t.Fatalf("first write does not start with the preface: %q", rest[:min(len(rest), 30)])
			}
			rest = rest[len(clientPreface):]
			for len(rest) >= frameHeaderLen {
				n := int(rest[0])<<16 | int(rest[1])<<8 | int(rest[2])
				if len(rest) < frameHeaderLen+n {
					t.Fatalf("first write ends in the middle of a frame")
				}
				frames = append(frames, frame{typ: rest[3], flags: rest[4], sid: binary.BigEndian.Uint32(rest[5:]), p: rest[9 : 9+n]})
				rest = rest[9+n:]
			}
			if len(rest) != 0 {
				t.Fatalf("first write ends in the middle of a frame header")
			}

			// SETTINGS with ENABLE_PUSH 0.
			if len(frames) == 0 {
				t.Fatal("no frames in the first write")
			}
			if f := frames[0]; f.typ != frameSettings || f.flags != 0 || f.sid != 0 || !bytes.Equal(f.p, []byte{0, 2, 0, 0, 0, 0}) {
				t.Errorf("first frame %+v, want SETTINGS with ENABLE_PUSH 0", f)
			}
			frames = frames[1:]

			// HEADERS and CONTINUATION.
			var block []byte
			for i := 0; ; i++ {
				if len(frames) == 0 {
					t.Fatal("first write ends in the middle of the header block")
				}
				f := frames[0]
				frames = frames[1:]
				wantTyp := byte(frameHeaders)
				if i > 0 {
					wantTyp = frameContinuation
				}
				if f.typ != wantTyp || f.sid != 1 || f.flags&^flagEndHeaders != 0 || len(f.p) > defaultMaxFrameSize {
					t.Fatalf("header frame %d: type %d, flags %#x, stream %d, %d bytes", i, f.typ, f.flags, f.sid, len(f.p))
				}
				block = append(block, f.p...)
				if f.flags&flagEndHeaders != 0 {
					break
				}
			}
			var fields []hpack.HeaderField
			dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { fields = append(fields, f) })
			if _, err := dec.Write(block); err != nil {
				t.Fatal(err)
			}
			wantFields := []hpack.HeaderField{
				{Name: ":method", Value: "POST"},
				{Name: ":scheme", Value: "http"},
				{Name: ":path", Value: tt.method},
				{Name: ":authority", Value: tt.authority},
				{Name: "content-type", Value: "application/grpc"},
				{Name: "te", Value: "trailers"},
				{Name: "user-agent", Value: "contiv-unarygrpc"},
			}
			if tt.timeout > 0 {
				if len(fields) != len(wantFields)+1 || fields[len(fields)-1].Name != "grpc-timeout" {
					t.Fatalf("header fields %v, want grpc-timeout last", fields)
				}
				m := timeoutRE.FindStringSubmatch(fields[len(fields)-1].Value)
				if m == nil {
					t.Fatalf("malformed grpc-timeout %q", fields[len(fields)-1].Value)
				}
				var v time.Duration
				for _, c := range m[1] {
					v = v*10 + time.Duration(c-'0')
				}
				if got := v * units[m[2]]; got > tt.timeout || got < tt.timeout-time.Second {
					t.Errorf("grpc-timeout %q is %v, want about %v", m[0], got, tt.timeout)
				}
				fields = fields[:len(fields)-1]
			}
			if len(fields) != len(wantFields) {
				t.Fatalf("header fields %v, want %v", fields, wantFields)
			}
			for i := range fields {
				if fields[i].Name != wantFields[i].Name || fields[i].Value != wantFields[i].Value {
					t.Errorf("header field %d is %s: %.40q, want %s: %.40q", i, fields[i].Name, fields[i].Value, wantFields[i].Name, wantFields[i].Value)
				}
			}

			// DATA up to the initial window, END_STREAM on the last.
			var data []byte
			for i, f := range frames {
				if f.typ != frameData || f.sid != 1 || len(f.p) > defaultMaxFrameSize {
					t.Fatalf("frame %+v after the headers, want DATA of stream 1", f)
				}
				last := i == len(frames)-1
				if (f.flags == flagEndStream) != (last && len(body) <= defaultWindow) || f.flags&^flagEndStream != 0 {
					t.Errorf("DATA frame %d of %d has flags %#x", i, len(frames), f.flags)
				}
				data = append(data, f.p...)
			}
			if wantData := body[:min(len(body), defaultWindow)]; !bytes.Equal(data, wantData) {
				t.Errorf("first write has %d bytes of DATA, want the %d first bytes of the request", len(data), len(wantData))
			}

			srv.Close()
			select {
			case err := <-callDone:
				checkErr(t, err, codes.Unavailable, "")
			case <-time.After(5 * time.Second):
				t.Fatal("the call did not end")
			}
		})
	}
}

// TestSendFlowControl checks that the client sends no more than the windows
// and the maximum frame size allow, through a SETTINGS change and
// WINDOW_UPDATEs.
func TestSendFlowControl(t *testing.T) {
	req := testRequest("flow", modeEcho)
	req.ExtraNwConfig = bigString(200 << 10)
	body, _ := frameRequest(req)
	want := replyFor(req)

	var (
		mu          sync.Mutex
		connLimit   int64 = defaultWindow
		streamLimit int64 = defaultWindow
		maxFrame          = defaultMaxFrameSize
		sent        []byte
		endStream   bool
		largest     int
		acks        int
	)
	grant := func(conn, stream int64) {
		mu.Lock()
		connLimit += conn
		streamLimit += stream
		mu.Unlock()
	}
	sentLen := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(sent)
	}
	waitSent := func(p *peer, n int) {
		if err := testkit.Wait(context.Background(), 5*time.Second, fmt.Sprintf("%d bytes of DATA", n), func() error {
			if got := sentLen(); got != n {
				return fmt.Errorf("the client sent %d", got)
			}
			return nil
		}); err != nil {
			p.t.Error(err)
			return
		}
		// Give a client that wrongly sends more a chance to do so.
		time.Sleep(20 * time.Millisecond) // real time: nothing more may be sent meanwhile
		if got := sentLen(); got != n {
			p.t.Errorf("the client sent %d bytes of DATA, want %d", got, n)
		}
	}

	onFrame := func(f frame) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case f.typ == frameSettings && f.flags == flagAck:
			// From here on the client uses the new settings.
			acks++
			streamLimit += 100 - defaultWindow
			maxFrame = 20000
		case f.typ == frameData:
			if endStream {
				t.Errorf("DATA after END_STREAM")
			}
			if len(f.p) > maxFrame {
				t.Errorf("DATA frame of %d bytes, maximum %d", len(f.p), maxFrame)
			}
			sent = append(sent, f.p...)
			if int64(len(sent)) > connLimit || int64(len(sent)) > streamLimit {
				t.Errorf("the client sent %d bytes of DATA, windows allow %d and %d", len(sent), connLimit, streamLimit)
			}
			largest = max(largest, len(f.p))
			endStream = f.flags&flagEndStream != 0
		}
	}
	_, err := runPeerWith(t, req, 10*time.Second, onFrame, func(p *peer) {
		waitSent(p, defaultWindow)
		p.settings(settingInitialWindowSize, 100, settingMaxFrameSize, 20000)
		// The stream window is now 100 - 65535 + 65535 = 100, the connection
		// window 0: nothing may be sent.
		grant(0, defaultWindow)
		p.frame(frameWindowUpdate, 0, 1, u32(defaultWindow))
		waitSent(p, defaultWindow)
		// The connection window opens: 100 bytes may be sent.
		grant(1<<20, 0)
		p.frame(frameWindowUpdate, 0, 0, u32(1<<20))
		waitSent(p, defaultWindow+100)
		// The stream window opens: the rest is sent, in frames of up to
		// 20000 bytes.
		grant(0, 1<<20)
		p.frame(frameWindowUpdate, 0, 1, u32(1<<20))
		waitSent(p, len(body))
		p.respond(want)
	})
	checkErr(t, err, codes.OK, "")
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Equal(sent, body) {
		t.Errorf("the server received %d bytes of DATA, not the %d-byte request", len(sent), len(body))
	}
	if !endStream {
		t.Error("no END_STREAM on the last DATA frame")
	}
	if acks != 1 {
		t.Errorf("%d SETTINGS ACKs, want 1", acks)
	}
	if largest <= defaultMaxFrameSize {
		t.Errorf("largest DATA frame %d bytes: SETTINGS_MAX_FRAME_SIZE 20000 not used", largest)
	}
}

// TestReceiveFlowControl checks that the client gives back the window of the
// DATA it receives, so that a server respecting flow control can send a
// reply beyond the initial 64 KiB window.
func TestReceiveFlowControl(t *testing.T) {
	req := testRequest("recv", modeEcho)
	want := replyFor(req)
	want.Error = bigString(300 << 10)
	msg := grpcMessage(want)

	reply, err := runPeer(t, req, 10*time.Second, func(p *peer) {
		var connWin, streamWin int64 = defaultWindow, defaultWindow
		p.headers(1, 0, okHeaders...)
		for rest := msg; len(rest) > 0; {
			for connWin < 12 || streamWin < 12 {
				f, ok := p.expect(func(f frame) bool { return f.typ == frameWindowUpdate })
				if !ok {
					p.t.Errorf("no WINDOW_UPDATE with %d bytes still to send", len(rest))
					return
				}
				inc := int64(binary.BigEndian.Uint32(f.p))
				switch f.sid {
				case 0:
					connWin += inc
				case 1:
					streamWin += inc
				default:
					p.t.Errorf("WINDOW_UPDATE for stream %d", f.sid)
				}
			}
			// Padding counts against the windows too.
			k := int(min(int64(len(rest)), defaultMaxFrameSize-11, connWin-11, streamWin-11))
			p.frame(frameData, flagPadded, 1, padded(rest[:k], 10))
			connWin -= int64(k + 11)
			streamWin -= int64(k + 11)
			rest = rest[k:]
		}
		p.headers(1, flagEndStream, okTrailers...)
	})
	checkErr(t, err, codes.OK, "")
	if !proto.Equal(reply, want) {
		t.Errorf("reply with an Error of %d bytes, want %d", len(reply.Error), len(want.Error))
	}
}

// validResponse is a valid server side of an exchange: SETTINGS, response
// headers, the message and the trailers, with some frames split and padded
// as the options say.
func validResponse(padding, continuation, ping bool) []byte {
	var ebuf bytes.Buffer
	enc := hpack.NewEncoder(&ebuf)
	block := func(kv ...string) []byte {
		ebuf.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return bytes.Clone(ebuf.Bytes())
	}
	var out []byte
	out = append(out, rawFrame(frameSettings, 0, 0, []byte{0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 0x40, 0})...)
	out = append(out, rawFrame(frameWindowUpdate, 0, 0, u32(1<<20))...)
	if ping {
		out = append(out, rawFrame(framePing, 0, 0, []byte("pingpong"))...)
	}
	h := block(okHeaders...)
	switch {
	case continuation:
		out = append(out, rawFrame(frameHeaders, 0, 1, h[:2])...)
		out = append(out, rawFrame(frameContinuation, flagEndHeaders, 1, h[2:])...)
	case padding:
		out = append(out, rawFrame(frameHeaders, flagEndHeaders|flagPadded|flagPriority, 1, padded(append([]byte{0, 0, 0, 0, 1}, h...), 4))...)
	default:
		out = append(out, rawFrame(frameHeaders, flagEndHeaders, 1, h)...)
	}
	msg := grpcMessage(replyFor(testRequest("fuzz", modeEcho)))
	if padding {
		out = append(out, rawFrame(frameData, flagPadded, 1, padded(msg, 3))...)
	} else {
		out = append(out, rawFrame(frameData, 0, 1, msg)...)
	}
	out = append(out, rawFrame(frameHeaders, flagEndHeaders|flagEndStream, 1, block(okTrailers...))...)
	return out
}

// TestValidResponse checks the seeds of FuzzResponse: they must succeed.
func TestValidResponse(t *testing.T) {
	for _, in := range [][]byte{validResponse(false, false, false), validResponse(true, false, true), validResponse(false, true, false)} {
		if err := fuzzOne(t, in); err != nil {
			t.Errorf("valid response failed: %v", err)
		}
	}
}

// fuzzOne runs a call against a server that sends in, then closes the
// connection, and returns the outcome. It fails t if the call hangs or
// returns an error that is not an *Error.
func fuzzOne(t *testing.T, in []byte) error {
	cli, srv := net.Pipe()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(io.Discard, srv)
	}()
	go func() {
		defer wg.Done()
		_, _ = srv.Write(in)
		srv.Close()
	}()
	body, _ := frameRequest(testRequest("fuzz", modeEcho))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- exchange(ctx, cli, "localhost", "/cni.RemoteCNI/Add", body, &cni.CNIReply{})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("call hangs on input %q", in)
	}
	srv.Close()
	wg.Wait()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Code == codes.OK {
			t.Fatalf("error %v (%T) is not an *Error with a code", err, err)
		}
	}
	return err
}

// FuzzResponse feeds arbitrary server bytes to a call: it must never panic
// or hang, and fail only with *Error values.
func FuzzResponse(f *testing.F) {
	f.Add(validResponse(false, false, false))
	f.Add(validResponse(true, false, true))
	f.Add(validResponse(false, true, false))
	f.Add([]byte{})
	f.Add(rawFrame(frameGoAway, 0, 0, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, in []byte) {
		_ = fuzzOne(t, in)
	})
}

package unarygrpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Error is the failure of a call, with its gRPC status code.
//
// Every non-nil error returned by [Call] is an *Error. Code is the status the
// server returned in its trailers, or the code this package chose for a
// failure on the client side or in the transport (for example
// codes.Unavailable when the server cannot be reached).
type Error struct {
	// Code is the gRPC status code of the failure; it is never codes.OK.
	Code codes.Code
	// Message is the status message: the server's grpc-message, percent-decoded,
	// or a description of what went wrong locally.
	Message string
}

// Error formats e like the errors of grpc-go's status package do.
func (e *Error) Error() string {
	return "rpc error: code = " + e.Code.String() + " desc = " + e.Message
}

// Code returns the gRPC code of err: codes.OK for nil, e.Code for an *Error
// (found with errors.As), codes.Unknown otherwise.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e.Code
	}
	return codes.Unknown
}

// Call makes one unary call of method (e.g. "/cni.RemoteCNI/Add") on a new
// connection to address over network ("unix" or "tcp"), sends req and decodes
// the response into reply. The connection is closed before Call returns.
//
// The deadline of ctx bounds the whole call and is sent to the server as
// grpc-timeout; cancelling ctx aborts the call. Every error returned is an
// [*Error]: use [Code] or errors.As to get its gRPC code.
func Call(ctx context.Context, network, address, method string, req, reply proto.Message) error {
	if err := ctx.Err(); err != nil {
		return contextError(err)
	}
	if method == "" || method[0] != '/' {
		return errorf(codes.Internal, "malformed method name %q: it must be of the form /package.Service/Method", method)
	}
	if reply == nil {
		return errorf(codes.Internal, "nil reply message")
	}
	body, err := frameRequest(req)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return contextError(ctxErr)
		}
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Err != nil {
			err = opErr.Err
		}
		return errorf(codes.Unavailable, "cannot connect to %s %s: %v", network, address, err)
	}
	return exchange(ctx, conn, authority(network, address), method, body, reply)
}

// authority is the :authority of a call to address over network: the address
// for an IP network, "localhost" for a unix socket.
func authority(network, address string) string {
	if strings.HasPrefix(network, "unix") {
		return "localhost"
	}
	return address
}

// frameRequest encodes req as a gRPC length-prefixed message: a zero
// compressed flag, the 4-byte big-endian length and the protobuf bytes.
func frameRequest(req proto.Message) ([]byte, error) {
	buf := make([]byte, msgPrefixLen, msgPrefixLen+proto.Size(req))
	// proto.Size has just cached the sizes MarshalAppend needs.
	buf, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, req)
	if err != nil {
		return nil, errorf(codes.Internal, "encoding the request: %v", err)
	}
	n := len(buf) - msgPrefixLen
	if uint64(n) > math.MaxUint32 {
		return nil, errorf(codes.ResourceExhausted, "request message of %d bytes is too large", n)
	}
	buf[0] = 0
	buf[1], buf[2], buf[3], buf[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return buf, nil
}

// exchange makes the call on conn, which it closes before returning. body is
// the framed request message.
func exchange(ctx context.Context, conn net.Conn, authority, method string, body []byte, reply proto.Message) error {
	defer conn.Close()
	return exchangeWithin(ctx, conn, authority, method, body, reply, handshakeTimeout)
}

// handshakeTimeout bounds the wait for the server's HTTP/2 preface (its first SETTINGS
// frame). A socket that accepts connections but is not served (a server that opened
// its listener and has not started serving yet, or is stuck) answers with
// codes.Unavailable after it, rather than holding the call until its deadline.
const handshakeTimeout = 5 * time.Second

func exchangeWithin(ctx context.Context, conn net.Conn, authority, method string, body []byte, reply proto.Message, handshake time.Duration) error {
	timeout := ""
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		left := time.Until(deadline)
		if left <= 0 {
			return contextError(context.DeadlineExceeded)
		}
		timeout = encodeTimeout(left)
	}
	// Reads wait for the server's preface at most handshake, then until the deadline
	// of ctx; writes until the deadline of ctx. An error here means conn is already
	// unusable, which the first write will report.
	prefaceBy := time.Now().Add(handshake)
	if hasDeadline && deadline.Before(prefaceBy) {
		prefaceBy = deadline
	}
	_ = conn.SetWriteDeadline(deadline)
	_ = conn.SetReadDeadline(prefaceBy)
	// Unblock any read or write in progress when ctx is cancelled; the
	// deadlines above already cover its expiry, this covers cancellation.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(longAgo) })
	defer stop()

	c := newCall(conn, body)
	c.onServerPreface = func() {
		_ = conn.SetReadDeadline(deadline)
		if ctx.Err() != nil { // cancelled meanwhile: do not undo the AfterFunc
			_ = conn.SetDeadline(longAgo)
		}
	}
	err := c.run(authority, method, timeout, reply)
	var ioErr *transportError
	if !errors.As(err, &ioErr) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return contextError(ctxErr)
	}
	if errors.Is(ioErr.err, os.ErrDeadlineExceeded) && !c.sawServerPreface && (!hasDeadline || time.Now().Before(deadline)) {
		return errorf(codes.Unavailable, "the server accepted the connection but sent no HTTP/2 preface within %v (not serving yet?)", handshake)
	}
	if errors.Is(ioErr.err, os.ErrDeadlineExceeded) {
		// The socket deadline is the deadline of ctx, which has passed even if
		// ctx has not noticed yet.
		return contextError(context.DeadlineExceeded)
	}
	return errorf(codes.Unavailable, "%s", ioErr.Error())
}

// longAgo is a deadline in the past: setting it makes blocked I/O return.
var longAgo = time.Unix(1, 0)

// contextError is the *Error of a call ended by its context.
func contextError(err error) *Error {
	code := codes.Canceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = codes.DeadlineExceeded
	}
	return &Error{Code: code, Message: err.Error()}
}

// errorf returns an *Error with code and a formatted message.
func errorf(code codes.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// protocolError is the *Error of a peer that broke the HTTP/2 or gRPC rules.
func protocolError(format string, args ...any) *Error {
	return &Error{Code: codes.Internal, Message: "protocol error: " + fmt.Sprintf(format, args...)}
}

// transportError is a failed read or write on the connection; exchange turns
// it into an *Error.
type transportError struct {
	op  string
	err error
}

func (e *transportError) Error() string { return e.op + ": " + e.err.Error() }

// timeoutUnits are the units of grpc-timeout, finest first.
var timeoutUnits = [...]struct {
	d    time.Duration
	unit byte
}{
	{time.Nanosecond, 'n'},
	{time.Microsecond, 'u'},
	{time.Millisecond, 'm'},
	{time.Second, 'S'},
	{time.Minute, 'M'},
	{time.Hour, 'H'},
}

// maxTimeoutValue is the largest value of grpc-timeout: at most 8 digits.
const maxTimeoutValue = 99999999

// encodeTimeout formats d (> 0) as a grpc-timeout value: at most 8 digits in
// the finest unit they fit, rounded up so the server never gets less time
// than the client waits.
func encodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "1n"
	}
	for _, u := range timeoutUnits {
		v := d / u.d
		if d%u.d != 0 {
			v++
		}
		if v <= maxTimeoutValue {
			return strconv.FormatInt(int64(v), 10) + string(u.unit)
		}
	}
	return strconv.Itoa(maxTimeoutValue) + "H"
}

// decodeGRPCMessage undoes the percent-encoding of grpc-message; a '%' not
// followed by two hex digits is kept as it is.
func decodeGRPCMessage(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// unhex is the value of the hex digit c.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// httpStatusCode maps an HTTP status other than 200 to a gRPC code, as the
// gRPC HTTP-to-gRPC status mapping says.
func httpStatusCode(status int) codes.Code {
	switch status {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}

// isGRPCContentType reports whether ct is application/grpc, possibly with a
// subtype ("+proto") or parameters.
func isGRPCContentType(ct string) bool {
	const base = "application/grpc"
	if len(ct) < len(base) || !strings.EqualFold(ct[:len(base)], base) {
		return false
	}
	return len(ct) == len(base) || ct[len(base)] == '+' || ct[len(base)] == ';'
}

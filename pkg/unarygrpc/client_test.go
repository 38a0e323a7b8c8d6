package unarygrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// Modes of fakeAgent, chosen by the request's IpamType.
const (
	modeEcho     = "echo"     // reply with replyFor(req)
	modePlain    = "plain"    // reply with replyFor(req) without recording the call
	modeStatus   = "status"   // fail with the code in ExtraArguments and the message in IpamData
	modeBigReply = "bigreply" // reply with replyFor(req) and a 300 KiB Error
	modeSleep    = "sleep"    // wait for the context to end
	modeSlow     = "slow"     // reply with replyFor(req) after half a second
)

// bigSize is the size of the large request and reply fields: well beyond the
// 64 KiB initial flow-control windows.
const bigSize = 300 << 10

// fakeAgent is a RemoteCNI server that records what it saw, per ContainerId.
type fakeAgent struct {
	cni.UnimplementedRemoteCNIServer
	mu    sync.Mutex
	calls map[string]*seenCall
}

// seenCall is what the handler of one call saw; its fields are valid once
// started is closed.
type seenCall struct {
	started     chan struct{}
	ended       chan struct{} // closed when the handler returns
	req         *cni.CNIRequest
	hasDeadline bool
	timeLeft    time.Duration // until the deadline, when the handler started
	authority   []string
	userAgent   []string
	ctxDone     bool // the handler's context ended before it returned
}

// call returns the record of the call with container ID id, creating it.
func (a *fakeAgent) call(id string) *seenCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls == nil {
		a.calls = make(map[string]*seenCall)
	}
	sc, ok := a.calls[id]
	if !ok {
		sc = &seenCall{started: make(chan struct{}), ended: make(chan struct{})}
		a.calls[id] = sc
	}
	return sc
}

func (a *fakeAgent) Add(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	return a.handle(ctx, req)
}

func (a *fakeAgent) Delete(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	return a.handle(ctx, req)
}

func (a *fakeAgent) Check(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	return a.handle(ctx, req)
}

func (a *fakeAgent) handle(ctx context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	if req.IpamType == modePlain {
		return replyFor(req), nil
	}
	sc := a.call(req.ContainerId)
	defer close(sc.ended)
	sc.req = proto.Clone(req).(*cni.CNIRequest)
	if dl, ok := ctx.Deadline(); ok {
		sc.hasDeadline, sc.timeLeft = true, time.Until(dl)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	sc.authority, sc.userAgent = md.Get(":authority"), md.Get("user-agent")
	close(sc.started)
	switch req.IpamType {
	case modeEcho:
		return replyFor(req), nil
	case modeStatus:
		code, _ := strconv.Atoi(req.ExtraArguments)
		return nil, status.Error(codes.Code(code), req.IpamData)
	case modeBigReply:
		r := replyFor(req)
		r.Error = bigString(bigSize)
		return r, nil
	case modeSlow:
		time.Sleep(500 * time.Millisecond) // real time: an answer later than the client's handshake timeout
		return replyFor(req), nil
	case modeSleep:
		select {
		case <-ctx.Done():
			// grpc-go turns this into DeadlineExceeded or Canceled.
			sc.ctxDone = true
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, status.Error(codes.Aborted, "slept")
		}
	}
	return nil, status.Error(codes.InvalidArgument, "unknown mode "+req.IpamType)
}

// replyFor is a reply with every field set, some from req.
func replyFor(req *cni.CNIRequest) *cni.CNIReply {
	return &cni.CNIReply{
		Result: 3,
		Error:  "extra: " + req.ExtraArguments,
		Interfaces: []*cni.CNIReply_Interface{{
			Name:    req.InterfaceName,
			Mac:     "02:fe:12:34:56:78",
			Sandbox: req.NetworkNamespace,
			IpAddresses: []*cni.CNIReply_Interface_IP{
				{Version: cni.CNIReply_Interface_IP_IPV4, Address: "10.1.1.2/24", Gateway: "10.1.1.1"},
				{Version: cni.CNIReply_Interface_IP_IPV6, Address: "fd00::2/64", Gateway: "fd00::1"},
			},
		}},
		Routes: []*cni.CNIReply_Route{{Dst: "0.0.0.0/0", Gw: "10.1.1.1"}, {Dst: "::/0", Gw: "fd00::1"}},
		Dns: []*cni.CNIReply_DNS{{
			Domain:      "cluster.local",
			Nameservers: []string{"10.96.0.10"},
			Search:      []string{"default.svc.cluster.local", "svc.cluster.local"},
			Options:     []string{"ndots:5"},
		}},
	}
}

// testRequest is a request with every field set.
func testRequest(id, mode string) *cni.CNIRequest {
	return &cni.CNIRequest{
		Version:          "1.1.0",
		ContainerId:      id,
		NetworkNamespace: "/var/run/netns/" + id,
		InterfaceName:    "eth0",
		ExtraNwConfig:    `{"cniVersion":"1.1.0","name":"k8s-pod-network","type":"contiv-cni"}`,
		ExtraArguments:   "K8S_POD_NAME=pod;K8S_POD_NAMESPACE=default",
		IpamType:         mode,
		IpamData:         "ünïcode",
	}
}

// bigString is n bytes of varying text, so that a misplaced chunk shows.
func bigString(n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%07d,", i)
	}
	return b.String()[:n]
}

// startAgent serves a fakeAgent with grpc-go on network ("unix" or "tcp")
// and returns it and its address.
func startAgent(tb testing.TB, network string, opts ...grpc.ServerOption) (*fakeAgent, string) {
	tb.Helper()
	var addr string
	switch network {
	case "unix":
		// t.TempDir is short for a top-level test with a short name; unix
		// socket paths are limited to 108 bytes.
		addr = filepath.Join(tb.TempDir(), "s")
		if len(addr) > 100 {
			tb.Fatalf("socket path %s too long", addr)
		}
	case "tcp":
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	agent := &fakeAgent{}
	srv := grpc.NewServer(opts...)
	cni.RegisterRemoteCNIServer(srv, agent)
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	return agent, lis.Addr().String()
}

// checkErr fails t unless err has code want and, if msg is not empty, a
// message containing msg. Every error must be an *Error.
func checkErr(t *testing.T, err error, want codes.Code, msg string) {
	t.Helper()
	if want == codes.OK {
		if err != nil {
			t.Fatalf("call failed: %v", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error, want code %v", err, err, want)
	}
	if e.Code != want {
		t.Fatalf("code %v (%v), want %v", e.Code, err, want)
	}
	if !strings.Contains(e.Message, msg) {
		t.Fatalf("message %q does not contain %q", e.Message, msg)
	}
}

// waitClosed fails t unless ch is closed within a few seconds.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestGRPCGo runs calls against a grpc-go server, on a unix socket and on TCP.
func TestGRPCGo(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		agent, addr := startAgent(t, network)
		wantAuthority := "localhost"
		if network == "tcp" {
			wantAuthority = addr
		}
		t.Run(network, func(t *testing.T) {
			testGRPCGo(t, agent, network, addr, wantAuthority)
		})
	}
}

func testGRPCGo(t *testing.T, agent *fakeAgent, network, addr, wantAuthority string) {
	const add = "/cni.RemoteCNI/Add"
	var n int
	id := func() string { n++; return network + "-" + strconv.Itoa(n) }

	t.Run("round trip", func(t *testing.T) {
		for _, method := range []string{"/cni.RemoteCNI/Add", "/cni.RemoteCNI/Delete", "/cni.RemoteCNI/Check"} {
			req := testRequest(id(), modeEcho)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			reply := &cni.CNIReply{Error: "stale"}
			err := Call(ctx, network, addr, method, req, reply)
			cancel()
			checkErr(t, err, codes.OK, "")
			if want := replyFor(req); !proto.Equal(reply, want) {
				t.Errorf("%s: reply\n%v\nwant\n%v", method, reply, want)
			}
			sc := agent.call(req.ContainerId)
			waitClosed(t, sc.started, "the handler")
			if !proto.Equal(sc.req, req) {
				t.Errorf("%s: server saw\n%v\nwant\n%v", method, sc.req, req)
			}
			if len(sc.authority) != 1 || sc.authority[0] != wantAuthority {
				t.Errorf(":authority %q, want %q", sc.authority, wantAuthority)
			}
			if len(sc.userAgent) != 1 || !strings.HasPrefix(sc.userAgent[0], userAgent) {
				t.Errorf("user-agent %q, want %q", sc.userAgent, userAgent)
			}
			if !sc.hasDeadline || sc.timeLeft > 10*time.Second || sc.timeLeft < 5*time.Second {
				t.Errorf("server deadline: %v in %v, want about 10s", sc.hasDeadline, sc.timeLeft)
			}
		}
	})

	t.Run("no deadline", func(t *testing.T) {
		req := testRequest(id(), modeEcho)
		reply := &cni.CNIReply{}
		checkErr(t, Call(context.Background(), network, addr, add, req, reply), codes.OK, "")
		sc := agent.call(req.ContainerId)
		waitClosed(t, sc.started, "the handler")
		if sc.hasDeadline {
			t.Errorf("the server has a deadline (%v) although the call has none", sc.timeLeft)
		}
	})

	t.Run("status", func(t *testing.T) {
		const msg = "msg with ünïcode % and \n"
		for _, code := range []codes.Code{codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition,
			codes.Internal, codes.Unavailable, codes.PermissionDenied, codes.ResourceExhausted, codes.Code(42)} {
			req := testRequest(id(), modeStatus)
			req.ExtraArguments, req.IpamData = strconv.Itoa(int(code)), msg
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := Call(ctx, network, addr, add, req, &cni.CNIReply{})
			cancel()
			var e *Error
			if !errors.As(err, &e) || e.Code != code || e.Message != msg {
				t.Errorf("error %#v, want code %v and message %q", err, code, msg)
			}
		}
	})

	t.Run("unimplemented", func(t *testing.T) {
		for _, method := range []string{"/cni.RemoteCNI/Nope", "/nope.Service/Add"} {
			err := Call(context.Background(), network, addr, method, testRequest(id(), modeEcho), &cni.CNIReply{})
			checkErr(t, err, codes.Unimplemented, "")
		}
	})

	t.Run("big request", func(t *testing.T) {
		req := testRequest(id(), modeEcho)
		req.ExtraNwConfig = bigString(bigSize)
		reply := &cni.CNIReply{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		checkErr(t, Call(ctx, network, addr, add, req, reply), codes.OK, "")
		sc := agent.call(req.ContainerId)
		waitClosed(t, sc.started, "the handler")
		if sc.req.ExtraNwConfig != req.ExtraNwConfig {
			t.Errorf("server saw an ExtraNwConfig of %d bytes, not the %d sent", len(sc.req.ExtraNwConfig), len(req.ExtraNwConfig))
		}
		if !proto.Equal(reply, replyFor(req)) {
			t.Errorf("wrong reply %v", reply)
		}
	})

	t.Run("big reply", func(t *testing.T) {
		req := testRequest(id(), modeBigReply)
		reply := &cni.CNIReply{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		checkErr(t, Call(ctx, network, addr, add, req, reply), codes.OK, "")
		want := replyFor(req)
		want.Error = bigString(bigSize)
		if !proto.Equal(reply, want) {
			t.Errorf("reply with an Error of %d bytes, want %d", len(reply.Error), len(want.Error))
		}
	})

	t.Run("deadline", func(t *testing.T) {
		const timeout = 300 * time.Millisecond
		req := testRequest(id(), modeSleep)
		start := time.Now() // before the deadline is set: the call cannot end earlier than timeout after it
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := Call(ctx, network, addr, add, req, &cni.CNIReply{})
		took := time.Since(start)
		checkErr(t, err, codes.DeadlineExceeded, "")
		if took < timeout || took > 3*time.Second {
			t.Errorf("call took %v with a timeout of %v", took, timeout)
		}
		sc := agent.call(req.ContainerId)
		waitClosed(t, sc.started, "the handler")
		if !sc.hasDeadline || sc.timeLeft <= 0 || sc.timeLeft > timeout {
			t.Errorf("server deadline: %v in %v, want within %v", sc.hasDeadline, sc.timeLeft, timeout)
		}
		waitClosed(t, sc.ended, "the handler to end")
		if !sc.ctxDone {
			t.Error("the handler's context did not end")
		}
	})

	t.Run("cancel", func(t *testing.T) {
		req := testRequest(id(), modeSleep)
		sc := agent.call(req.ContainerId)
		// The timeout only bounds a call that ignores the cancellation.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		go func() {
			<-sc.started
			cancel()
		}()
		start := time.Now()
		err := Call(ctx, network, addr, add, req, &cni.CNIReply{})
		checkErr(t, err, codes.Canceled, "")
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the canceled call took %v", took)
		}
		// The connection is closed, so the server cancels the handler.
		waitClosed(t, sc.ended, "the handler to end")
		if !sc.ctxDone {
			t.Error("the handler's context did not end")
		}
	})
}

// TestGRPCGoMaxRecvMsgSize checks a request larger than the server accepts.
func TestGRPCGoMaxRecvMsgSize(t *testing.T) {
	_, addr := startAgent(t, "unix", grpc.MaxRecvMsgSize(1024))
	for _, size := range []int{4 << 10, bigSize} {
		req := testRequest("max-"+strconv.Itoa(size), modeEcho)
		req.ExtraNwConfig = bigString(size)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := Call(ctx, "unix", addr, "/cni.RemoteCNI/Add", req, &cni.CNIReply{})
		cancel()
		checkErr(t, err, codes.ResourceExhausted, "")
	}
	// A request within the limit still works.
	req := testRequest("small", modeEcho)
	checkErr(t, Call(context.Background(), "unix", addr, "/cni.RemoteCNI/Add", req, &cni.CNIReply{}), codes.OK, "")
}

// TestUnreachable checks servers that are not there or do not answer.
func TestUnreachable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")

	// A TCP port with nothing listening.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := lis.Addr().String()
	lis.Close()

	// Servers that accept a connection and close it at once.
	closing := func(network, addr string) string {
		lis, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return lis.Addr().String()
	}
	closingUnix := closing("unix", filepath.Join(dir, "c"))
	closingTCP := closing("tcp", "127.0.0.1:0")

	tests := []struct {
		name, network, addr string
		want                codes.Code
		msg                 string
	}{
		{"no socket", "unix", missing, codes.Unavailable, missing},
		{"connection refused", "tcp", closedPort, codes.Unavailable, closedPort},
		{"unix server closes", "unix", closingUnix, codes.Unavailable, ""},
		{"tcp server closes", "tcp", closingTCP, codes.Unavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := Call(ctx, tt.network, tt.addr, "/cni.RemoteCNI/Add", testRequest("x", modeEcho), &cni.CNIReply{})
			checkErr(t, err, tt.want, tt.msg)
		})
	}
}

// TestContextDoneBeforeCall checks that a call with a context already done
// fails with the context's code.
func TestContextDoneBeforeCall(t *testing.T) {
	_, addr := startAgent(t, "unix")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tt := range []struct {
		ctx  context.Context
		want codes.Code
	}{{canceled, codes.Canceled}, {expired, codes.DeadlineExceeded}} {
		err := Call(tt.ctx, "unix", addr, "/cni.RemoteCNI/Add", testRequest("x", modeEcho), &cni.CNIReply{})
		checkErr(t, err, tt.want, "")
	}
}

// TestBadArguments checks the arguments Call rejects without connecting.
func TestBadArguments(t *testing.T) {
	for _, tt := range []struct {
		name, method string
		reply        proto.Message
	}{
		{"empty method", "", &cni.CNIReply{}},
		{"relative method", "cni.RemoteCNI/Add", &cni.CNIReply{}},
		{"nil reply", "/cni.RemoteCNI/Add", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Call(context.Background(), "unix", "/nonexistent/socket", tt.method, testRequest("x", modeEcho), tt.reply)
			checkErr(t, err, codes.Internal, "")
		})
	}
}

func TestCode(t *testing.T) {
	e := &Error{Code: codes.NotFound, Message: "gone"}
	for _, tt := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"Error", e, codes.NotFound},
		{"wrapped Error", fmt.Errorf("adding: %w", e), codes.NotFound},
		{"other error", errors.New("boom"), codes.Unknown},
		{"context error", context.Canceled, codes.Unknown},
	} {
		if got := Code(tt.err); got != tt.want {
			t.Errorf("%s: Code = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got, want := e.Error(), "rpc error: code = NotFound desc = gone"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestEncodeTimeout(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "1n"},
		{1, "1n"},
		{99999999, "99999999n"},
		{100000000, "100000u"},
		{100000001, "100001u"}, // rounded up
		{1500 * time.Millisecond, "1500000u"},
		{90 * time.Second, "90000000u"},
		{100 * time.Second, "100000m"},
		{time.Hour, "3600000m"},
		{30 * time.Hour, "108000S"},
		{5000 * time.Hour, "18000000S"},
		{50000 * time.Hour, "3000000M"},
		{2000000 * time.Hour, "2000000H"},
	} {
		got := encodeTimeout(tt.d)
		if got != tt.want {
			t.Errorf("encodeTimeout(%v) = %q, want %q", tt.d, got, tt.want)
		}
		if len(got) > 9 {
			t.Errorf("encodeTimeout(%v) = %q has more than 8 digits", tt.d, got)
		}
	}
}

func TestDecodeGRPCMessage(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"msg with %C3%BCn%C3%AFcode %25 and %0A", "msg with ünïcode % and \n"},
		{"%e2%82%ac", "€"},
		{"100%", "100%"},
		{"%4", "%4"},
		{"%zz%41", "%zzA"},
	} {
		if got := decodeGRPCMessage(tt.in); got != tt.want {
			t.Errorf("decodeGRPCMessage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHTTPStatusCode(t *testing.T) {
	for status, want := range map[int]codes.Code{
		400: codes.Internal, 401: codes.Unauthenticated, 403: codes.PermissionDenied,
		404: codes.Unimplemented, 429: codes.Unavailable, 502: codes.Unavailable,
		503: codes.Unavailable, 504: codes.Unavailable, 500: codes.Unknown, 302: codes.Unknown,
	} {
		if got := httpStatusCode(status); got != want {
			t.Errorf("httpStatusCode(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestIsGRPCContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/grpc": true, "application/grpc+proto": true, "application/grpc; charset=utf-8": true,
		"Application/GRPC": true, "application/grpcx": false, "application/json": false, "": false,
	} {
		if got := isGRPCContentType(ct); got != want {
			t.Errorf("isGRPCContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestUnservedSocketIsUnavailableAfterTheHandshakeTimeout: a socket whose server
// listens but does not serve (yet) accepts the connection in the kernel and never
// answers. The call fails with Unavailable once the handshake timeout has passed,
// not at its (much later) deadline.
func TestUnservedSocketIsUnavailableAfterTheHandshakeTimeout(t *testing.T) {
	dir, err := os.MkdirTemp("", "ug") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	addr := filepath.Join(dir, "s")
	lis, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close() // never accepted: the kernel queues the connection
	conn, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := frameRequest(testRequest("unserved", modePlain))
	start := time.Now()
	err = exchangeWithin(ctx, conn, "localhost", "/cni.RemoteCNI/Check", body, &cni.CNIReply{}, 200*time.Millisecond)
	if Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no HTTP/2 preface within 200ms") {
		t.Fatalf("err = %v, want Unavailable naming the missing preface", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failed after %v, want about the 200ms handshake timeout", d)
	}
}

// TestHandshakeTimeoutDoesNotLimitTheCall: once the server's preface has arrived the
// call may take as long as its deadline allows.
func TestHandshakeTimeoutDoesNotLimitTheCall(t *testing.T) {
	_, addr := startAgent(t, "unix")
	conn, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := testRequest("slow", modeSlow)
	body, _ := frameRequest(req)
	reply := &cni.CNIReply{}
	if err := exchangeWithin(ctx, conn, "localhost", "/cni.RemoteCNI/Check", body, reply, 100*time.Millisecond); err != nil {
		t.Fatalf("a call answered after 500ms with a 100ms handshake timeout: %v", err)
	}
	if !proto.Equal(reply, replyFor(req)) {
		t.Errorf("reply = %v", reply)
	}
}

package rest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// The node in these tests is 127.0.0.1; 127.0.0.2, .3, ... are other clients (pods,
// other hosts): Linux answers on all of 127.0.0.0/8.
const nodeIP = "127.0.0.1"

// startLimited starts the plugin on 127.0.0.1 with cfg, taking only 127.0.0.1 as
// the node itself; listen, when set, opens the listener.
func startLimited(t *testing.T, cfg Config, log logrus.FieldLogger, deps Deps,
	listen func(network, address string) (net.Listener, error)) (p *Plugin, addr string) {
	t.Helper()
	cfg.Endpoint = nodeIP + ":0"
	if log == nil {
		log = quiet()
	}
	deps.Log, deps.Config = log, fakeLoader{cfg: cfg}
	p = NewPlugin(deps)
	p.fromNode = func(c net.Conn) bool { return remoteIP(c).String() == nodeIP }
	if listen != nil {
		p.listen = listen
	}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p, p.Addr().String()
}

// dialFrom opens a TCP connection to addr from the address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: testkit.DefaultTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clientFrom is an HTTP client whose connections leave from src.
func clientFrom(t *testing.T, src string) *http.Client {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: testkit.DefaultTimeout}
}

// keepAliveGet sends GET path on c (HTTP/1.1, so c stays open afterwards) and returns
// the status code. A connection the server closed gives an error, at once; waiting
// for a server that neither answers nor closes gives a timeout error.
func keepAliveGet(c net.Conn, r *bufio.Reader, path string) (int, error) {
	c.SetDeadline(time.Now().Add(testkit.DefaultTimeout))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, nodeIP); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// closedByServer fails t unless the server closes c (EOF or reset) before
// testkit.DefaultTimeout.
// It returns what the server sent before closing.
func closedByServer(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testkit.DefaultTimeout))
	var got strings.Builder
	_, err := io.Copy(&got, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open", what)
	}
	return got.String()
}

func TestIdleKeepAliveConnectionsOfOneClientAreCutToThePerClientBound(t *testing.T) {
	_, addr := startLimited(t, Config{MaxConnections: 8, MaxConnectionsPerClient: 4}, nil, Deps{}, nil)
	const attacker = "127.0.0.2"
	served := 0
	for i := 0; i < 10; i++ {
		c := dialFrom(t, attacker, addr)
		code, err := keepAliveGet(c, bufio.NewReader(c), LivenessPath)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("connection %d: neither served nor closed: %v", i, err)
		case err == nil && code == 200:
			served++ // and left open, idle
		}
	}
	if served != 4 {
		t.Errorf("%d keep-alive connections of one client served and held, want 4 (max-connections-per-client)", served)
	}
	if code, _ := do(t, clientFrom(t, "127.0.0.3"), "GET", "http://"+addr+LivenessPath, "", ""); code != 200 {
		t.Errorf("liveness from another client = %d, want 200", code)
	}
	_, metrics := get(t, "http://"+addr+MetricsPath)
	for _, want := range []string{
		`contiv_rest_connections_rejected_total{reason="per-client"} 6`,
		`contiv_rest_connections_rejected_total{reason="total"} 0`,
		`contiv_rest_connections_open{client="remote"} 5`, // the 4 held and the other client's
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestProbesFromTheNodeAnswerWhenOtherClientsFillTheTotalBound(t *testing.T) {
	_, addr := startLimited(t, Config{MaxConnections: 4, MaxConnectionsPerClient: 2, MaxLocalConnections: 2}, nil, Deps{}, nil)
	var held []net.Conn
	for _, src := range []string{"127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"} {
		c := dialFrom(t, src, addr)
		if code, err := keepAliveGet(c, bufio.NewReader(c), ReadinessPath); err != nil || code != 200 {
			t.Fatalf("connection from %s within the bounds: %d %v", src, code, err)
		}
		held = append(held, c)
	}
	late := dialFrom(t, "127.0.0.4", addr)
	closedByServer(t, late, "a fifth remote client over max-connections 4")

	node := clientFrom(t, nodeIP)
	for _, path := range []string{LivenessPath, ReadinessPath} {
		if code, _ := do(t, node, "GET", "http://"+addr+path, "", ""); code != 200 {
			t.Errorf("%s from the node with the remote pool full = %d, want 200", path, code)
		}
	}

	// A connection closed makes room again.
	held[0].Close()
	testkit.Eventually(t, testkit.DefaultTimeout, "a remote client admitted after one closed", func() error {
		c := dialFrom(t, "127.0.0.4", addr)
		defer c.Close()
		_, err := keepAliveGet(c, bufio.NewReader(c), LivenessPath)
		return err
	})
}

func TestNodeConnectionsHaveABoundOfTheirOwn(t *testing.T) {
	_, addr := startLimited(t, Config{MaxLocalConnections: 2}, nil, Deps{}, nil)
	for i := 0; i < 2; i++ {
		c := dialFrom(t, nodeIP, addr)
		if code, err := keepAliveGet(c, bufio.NewReader(c), LivenessPath); err != nil || code != 200 {
			t.Fatalf("node connection %d: %d %v", i, code, err)
		}
	}
	closedByServer(t, dialFrom(t, nodeIP, addr), "a third node connection over max-local-connections 2")
	if code, _ := do(t, clientFrom(t, "127.0.0.2"), "GET", "http://"+addr+LivenessPath, "", ""); code != 200 {
		t.Errorf("liveness from a remote client with the node's pool full = %d, want 200", code)
	}
}

func TestIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout(t *testing.T) {
	_, addr := startLimited(t, Config{IdleTimeout: infra.Duration(100 * time.Millisecond)}, nil, Deps{}, nil)
	c := dialFrom(t, "127.0.0.2", addr)
	if code, err := keepAliveGet(c, bufio.NewReader(c), LivenessPath); err != nil || code != 200 {
		t.Fatalf("GET = %d %v", code, err)
	}
	closedByServer(t, c, "an idle keep-alive connection, idle-timeout 100ms")
}

func TestSlowHeadersAreCutAtTheHeaderTimeout(t *testing.T) {
	_, addr := startLimited(t, Config{ReadHeaderTimeout: infra.Duration(100 * time.Millisecond)}, nil, Deps{}, nil)
	start := time.Now() // before the dial: the server may accept before dialFrom returns
	c := dialFrom(t, "127.0.0.2", addr)
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nX-Slow: ", LivenessPath, nodeIP); err != nil {
		t.Fatal(err)
	}
	got := closedByServer(t, c, "headers never finished, read-header-timeout 100ms")
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("closed after %v, before the header timeout (sent %q)", d, got)
	}
}

func TestEndlessHeadersAreBounded(t *testing.T) {
	_, addr := startLimited(t, Config{MaxHeaderBytes: 4096}, nil, Deps{}, nil)
	req, _ := http.NewRequest("GET", "http://"+addr+LivenessPath, nil)
	req.Header.Set("X-Pad", strings.Repeat("a", 64<<10))
	resp, err := clientFrom(t, "127.0.0.2").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers, max-header-bytes 4096: %d, want 431", resp.StatusCode)
	}

	// A client that never stops sending header lines is answered 431 and cut.
	c := dialFrom(t, "127.0.0.2", addr)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n", LivenessPath, nodeIP)
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(c, "X-Endless-%d: %s\r\n", i, strings.Repeat("b", 100)); err != nil {
				return // the server closed the connection
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(testkit.DefaultTimeout))
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	wg.Wait()
	if err != nil {
		t.Fatalf("endless headers: no answer: %v", err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("endless headers: %d, want 431", resp.StatusCode)
	}
}

// failingListener fails the next fail calls of Accept with EMFILE, as accept(2) does
// when the process is out of file descriptors.
type failingListener struct {
	net.Listener
	fail atomic.Int32
}

func (f *failingListener) Accept() (net.Conn, error) {
	for n := f.fail.Load(); n > 0; n = f.fail.Load() {
		if f.fail.CompareAndSwap(n, n-1) {
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: f.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
		}
	}
	return f.Listener.Accept()
}

func TestOutOfDescriptorsIsLoggedOncePerIntervalAndServingGoesOn(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	clk := testkit.NewClock()
	var fl *failingListener
	listen := func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		fl = &failingListener{Listener: ln}
		fl.fail.Store(3)
		return fl, nil
	}
	_, addr := startLimited(t, Config{}, log, Deps{Clock: clk}, listen)
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testkit.DefaultTimeout}
	live := func() int {
		t.Helper()
		code, _ := do(t, fresh, "GET", "http://"+addr+LivenessPath, "", "")
		return code
	}
	errorLines := func() (lines []*logrus.Entry) {
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.ErrorLevel {
				lines = append(lines, e)
			}
		}
		return lines
	}
	// burst makes the accept after the next connection fail three times, and checks
	// that the server answers again afterwards.
	burst := func() {
		t.Helper()
		fl.fail.Store(3)
		live() // accepted; the next accepts fail
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "three accept failures", func() bool { return fl.fail.Load() == 0 })
		if code := live(); code != 200 {
			t.Fatalf("liveness after accept failures = %d", code)
		}
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the start-up accept failures", func() bool { return fl.fail.Load() == 0 })
	if code := live(); code != 200 {
		t.Fatalf("liveness after accept failures = %d", code)
	}
	burst()
	lines := errorLines()
	if len(lines) != 1 {
		t.Fatalf("%d error lines for 6 accept failures within a minute, want 1", len(lines))
	}
	for _, want := range []string{"out of file descriptors", "RLIMIT_NOFILE"} {
		if !strings.Contains(lines[0].Message, want) {
			t.Errorf("error line %q does not say %q", lines[0].Message, want)
		}
	}
	if !regexp.MustCompile(`; [1-9][0-9]* descriptors open\)`).MatchString(lines[0].Message) {
		t.Errorf("error line %q does not count the open descriptors", lines[0].Message)
	}

	clk.Step(warnInterval)
	burst()
	lines = errorLines()
	if len(lines) != 2 {
		t.Fatalf("%d error lines after a minute more of failures, want 2", len(lines))
	}
	if got := lines[1].Data["failed-since-last-error"]; got != 5 {
		t.Errorf("failed-since-last-error = %v, want 5", got)
	}
}

// TestCloseStopsTheServerWithConnectionsHeld: connections held open by clients do not
// keep Close from returning, and their counts do not leak.
func TestCloseStopsTheServerWithConnectionsHeld(t *testing.T) {
	p, addr := startLimited(t, Config{}, nil, Deps{}, nil)
	for i := 0; i < 3; i++ {
		c := dialFrom(t, "127.0.0.2", addr)
		if _, err := keepAliveGet(c, bufio.NewReader(c), LivenessPath); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.DefaultTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return with idle connections held")
	}
}

// addrConn is a connection with given addresses, for localConn.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func TestConnectionsFromTheNodeAreLoopbackOrFromTheAddressConnectedTo(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tc := range []struct {
		name, local, remote string
		want                bool
	}{
		{"loopback", "127.0.0.1:9999", "127.0.0.1:40000", true},
		{"another loopback address", "127.0.0.1:9999", "127.0.0.5:40000", true},
		{"IPv6 loopback", "[::1]:9999", "[::1]:40000", true},
		{"the kubelet probing the node IP", "10.20.0.10:9999", "10.20.0.10:40000", true},
		{"IPv4-mapped on a dual-stack listener", "[::ffff:10.20.0.10]:9999", "10.20.0.10:40000", true},
		{"a pod", "10.20.0.10:9999", "10.1.1.7:40000", false},
		{"another node", "10.20.0.10:9999", "10.20.0.11:40000", false},
		{"a pod through the node's other address", "192.168.16.1:9999", "10.1.1.7:40000", false},
	} {
		if got := localConn(addrConn{local: tcp(tc.local), remote: tcp(tc.remote)}); got != tc.want {
			t.Errorf("%s (%s from %s): from the node = %v, want %v", tc.name, tc.local, tc.remote, got, tc.want)
		}
	}
}

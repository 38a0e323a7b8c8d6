package vppsock

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

// TestMain silences govpp's package-global logger.
func TestMain(m *testing.M) {
	core.SetLogLevel(logrus.PanicLevel)
	os.Exit(m.Run())
}

func startSim(t testing.TB) (*vppsim.Sim, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	l := logrus.New()
	l.SetOutput(io.Discard)
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, Log: l})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, sock
}

func newClient(t testing.TB, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect() })
	return c
}

func TestGovppCoreTalksToTheSimulatorThroughTheClient(t *testing.T) {
	_, sock := startSim(t)
	c := newClient(t, Options{SocketPath: sock, ClientName: "vppsock-test"})
	conn, err := core.Connect(c)
	if err != nil {
		t.Fatalf("core.Connect: %v", err)
	}
	defer conn.Disconnect()
	if c.ClientIndex()&(1<<31) == 0 {
		t.Errorf("client index %#x lacks VPP's socket-client bit", c.ClientIndex())
	}
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ch.SetReplyTimeout(2 * time.Second)
	var ver vpe.ShowVersionReply
	if err := ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(&ver); err != nil || ver.Version != vppsim.VPPVersion {
		t.Fatalf("show_version = %+v, %v", ver, err)
	}
	if err := ch.SendRequest(&memclnt.ControlPing{}).ReceiveReply(&memclnt.ControlPingReply{}); err != nil {
		t.Fatalf("control_ping: %v", err)
	}
	if _, err := c.GetMsgID("control_ping", (&memclnt.ControlPing{}).GetCrcString()); err != nil {
		t.Errorf("GetMsgID(control_ping): %v", err)
	}
	var unknown *adapter.UnknownMsgError
	if _, err := c.GetMsgID("no_such_message", "deadbeef"); !errors.As(err, &unknown) {
		t.Errorf("GetMsgID of an unknown message = %v, want *adapter.UnknownMsgError", err)
	}
	if _, err := c.GetMsgID("control_ping", "deadbeef"); !errors.As(err, &unknown) {
		t.Errorf("GetMsgID of a known name with another CRC = %v, want *adapter.UnknownMsgError", err)
	}
	// govpp asks for the ID of every request it sends.
	crc := (&nat44_ed.Nat44LbStaticMappingAddDelLocal{}).GetCrcString()
	if n := testing.AllocsPerRun(100, func() { _, _ = c.GetMsgID("nat44_lb_static_mapping_add_del_local", crc) }); n != 0 {
		t.Errorf("GetMsgID allocates %v times per call, want 0", n)
	}
}

func TestMessageTableEntriesSplitAtTheLastUnderscore(t *testing.T) {
	for in, want := range map[string]msgKey{
		"nat44_lb_static_mapping_add_del_local_7ca1ff0e": {"nat44_lb_static_mapping_add_del_local", "7ca1ff0e"},
		"control_ping_51077d14":                          {"control_ping", "51077d14"},
		"noseparator":                                    {name: "noseparator"},
	} {
		if got := msgKeyOf(in); got != want {
			t.Errorf("msgKeyOf(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestConnectErrorNamesTheSocketPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.sock")
	c := newClient(t, Options{SocketPath: path, ConnectTimeout: time.Second})
	err := c.Connect()
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Connect = %v, want an error naming %s", err, path)
	}
	if err := c.SendMsg(1, make([]byte, 10)); !errors.Is(err, ErrNotConnected) {
		t.Errorf("SendMsg before a connection = %v, want ErrNotConnected", err)
	}
	if _, err := c.GetMsgID("control_ping", "51077d14"); !errors.Is(err, ErrNotConnected) {
		t.Errorf("GetMsgID before a connection = %v, want ErrNotConnected", err)
	}
	if err := c.Disconnect(); err != nil {
		t.Errorf("Disconnect without a connection = %v", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("empty socket path accepted")
	}
	if _, err := New(Options{SocketPath: "/x", ClientName: strings.Repeat("n", 64)}); err == nil || !strings.Contains(err.Error(), "nnnn") {
		t.Errorf("64-character client name: %v", err)
	}
}

func TestWaitReadyWaitsForTheSocketFileOnTheClock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "api.sock")
	clk := testkit.NewClockAt(time.Unix(0, 0))
	c := newClient(t, Options{SocketPath: path, WaitReadyTimeout: time.Second, Clock: clk})

	done := make(chan error, 1)
	go func() { done <- c.WaitReady() }()
	clk.AwaitWaiters(t, 2) // the deadline and the first poll
	clk.Step(waitReadyPoll)
	clk.AwaitWaiters(t, 2) // no file: the next poll is armed
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Step(waitReadyPoll) // the next poll finds the file
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitReady = %v", err)
		}
	case <-time.After(testkit.DefaultTimeout):
		t.Fatal("WaitReady did not return once the file appeared")
	}
	_ = os.Remove(path)
	go func() { done <- c.WaitReady() }()
	clk.AwaitWaiting(t)
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "did not appear") {
				t.Fatalf("WaitReady without a socket = %v", err)
			}
			// and a cancelled context ends the wait at once
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := c.WaitReadyContext(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("WaitReadyContext(cancelled) = %v", err)
			}
			return
		default:
		}
		clk.Step(waitReadyPoll)
		runtime.Gosched()
	}
}

// rawClient connects c to the fake peer with cb as the callback.
func rawConnect(t *testing.T, c *Client, cb adapter.MsgCallback) {
	t.Helper()
	c.SetMsgCallback(cb)
	if err := c.Connect(); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if c.ClientIndex() != fakeClientIndex {
		t.Fatalf("client index %#x, want %#x", c.ClientIndex(), fakeClientIndex)
	}
}

// echoRequest builds a request payload of the fake echo message with a body of n
// bytes filled with fill.
func echoRequest(n int, fill byte) []byte {
	b := make([]byte, requestHeaderLen+n)
	binary.BigEndian.PutUint16(b[0:2], fakeEchoID)
	for i := requestHeaderLen; i < len(b); i++ {
		b[i] = fill
	}
	return b
}

// TestFramingOfMessagesLargerThanTheReadBuffer sends and receives messages of many
// sizes around and well above the reader's buffer; each arrives whole, in order,
// with the client index and the context set.
func TestFramingOfMessagesLargerThanTheReadBuffer(t *testing.T) {
	peer := newFakePeer(t, false)
	c := newClient(t, Options{SocketPath: peer.path, ClientName: "fake-test", ReadBufferSize: 4096, MaxPendingBytes: 8192})
	var mu sync.Mutex
	var got [][]byte
	rawConnect(t, c, func(id uint16, data []byte) {
		mu.Lock()
		got = append(got, append([]byte(nil), data...))
		mu.Unlock()
	})
	sizes := []int{0, 1, 4096 - frameHeaderLen - requestHeaderLen, 4096, 4097, 10000, 1 << 20, 3}
	for i, n := range sizes {
		if err := c.SendMsg(uint32(i+1), echoRequest(n, byte(i))); err != nil {
			t.Fatalf("SendMsg of %d bytes: %v", n, err)
		}
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "every echo", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == len(sizes) })
	if in := peer.received(); len(in) != len(sizes) || len(in[6]) != requestHeaderLen+1<<20 {
		t.Fatalf("the peer received %d messages, want %d whole", len(in), len(sizes))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, n := range sizes {
		m := got[i]
		if len(m) != requestHeaderLen+n {
			t.Fatalf("message %d: %d bytes, want %d", i, len(m), requestHeaderLen+n)
		}
		if ci, ctx := binary.BigEndian.Uint32(m[2:6]), binary.BigEndian.Uint32(m[6:10]); ci != fakeClientIndex || ctx != uint32(i+1) {
			t.Errorf("message %d: client index %#x context %d", i, ci, ctx)
		}
		if !bytes.Equal(m[requestHeaderLen:], bytes.Repeat([]byte{byte(i)}, n)) {
			t.Errorf("message %d: body corrupted", i)
		}
	}
}

// TestConcurrentSendersAreBatchedAndKeepTheirOrder runs many senders at once (run it
// with -race): every message arrives once, each sender's in its order, and the
// writes were fewer than the messages (group commit).
func TestConcurrentSendersAreBatchedAndKeepTheirOrder(t *testing.T) {
	peer := newFakePeer(t, false)
	c := newClient(t, Options{SocketPath: peer.path, ClientName: "fake-test", MaxPendingBytes: 16 << 10})
	const senders, each = 16, 500
	var mu sync.Mutex
	next := make([]int, senders)
	var bad []string
	received := 0
	rawConnect(t, c, func(id uint16, data []byte) {
		ctx := binary.BigEndian.Uint32(data[6:10])
		s, seq := int(ctx>>16), int(ctx&0xffff)
		mu.Lock()
		defer mu.Unlock()
		received++
		if s >= senders || seq != next[s] {
			bad = append(bad, fmt.Sprintf("sender %d: got %d, want %d", s, seq, next[s]))
			return
		}
		next[s]++
	})
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := c.SendMsg(uint32(s<<16|i), echoRequest(40, byte(s))); err != nil {
					t.Errorf("sender %d: %v", s, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "every echo", func() bool { mu.Lock(); defer mu.Unlock(); return received == senders*each })
	mu.Lock()
	if len(bad) > 0 {
		t.Fatalf("out of order: %v", bad[:min(5, len(bad))])
	}
	mu.Unlock()
	st := c.Stats()
	if st.Messages != senders*each {
		t.Errorf("Stats.Messages = %d, want %d", st.Messages, senders*each)
	}
	t.Logf("%d messages in %d writes", st.Messages, st.Writes)
	if st.Writes >= st.Messages {
		t.Errorf("%d writes for %d messages: no batching", st.Writes, st.Messages)
	}
}

// pendingBytes returns the bytes queued for the writer.
func pendingBytes(c *Client) int {
	s := c.sess.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// TestPeerThatStopsReadingBlocksSendersWithBoundedMemory: with a peer that reads
// nothing, senders fill the socket and then the pending buffer up to its bound and
// block there; Disconnect releases them with an error, and the goroutines end.
func TestPeerThatStopsReadingBlocksSendersWithBoundedMemory(t *testing.T) {
	base := runtime.NumGoroutine()
	peer := newFakePeer(t, true)
	const bound = 64 << 10
	c := newClient(t, Options{SocketPath: peer.path, ClientName: "fake-test", MaxPendingBytes: bound, DisconnectTimeout: 50 * time.Millisecond})
	rawConnect(t, c, func(uint16, []byte) {})
	const senders = 4
	var sent [senders]int
	var mu sync.Mutex
	errs := make(chan error, senders)
	for s := range senders {
		go func() {
			for {
				if err := c.SendMsg(uint32(s), echoRequest(1000, 1)); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				sent[s]++
				mu.Unlock()
			}
		}()
	}
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, v := range sent {
			n += v
		}
		return n
	}
	// wait until the senders are stuck: the count stops moving
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "senders blocked", func() bool {
		a := total()
		time.Sleep(50 * time.Millisecond) // real time: what is tested is that nothing moves
		return a > 0 && total() == a && pendingBytes(c) > bound/2
	})
	if p := pendingBytes(c); p > bound {
		t.Fatalf("pending %d bytes, above the bound %d", p, bound)
	}
	select {
	case err := <-errs:
		t.Fatalf("a sender failed while the peer stalled: %v", err)
	default:
	}
	t.Logf("%d messages accepted before the senders blocked", total())
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	for range senders {
		select {
		case err := <-errs:
			if err == nil {
				t.Error("sender released without an error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a sender stayed blocked after Disconnect")
		}
	}
	if err := c.SendMsg(1, echoRequest(1, 1)); !errors.Is(err, ErrNotConnected) {
		t.Errorf("SendMsg after Disconnect = %v", err)
	}
	peer.close()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

// TestDisconnectWhileSendsArePending disconnects while many senders are busy; every
// SendMsg returns (nil or an error), Disconnect returns, no goroutine is left, and
// a second Disconnect is a no-op.
func TestDisconnectWhileSendsArePending(t *testing.T) {
	_, sock := startSim(t)
	base := runtime.NumGoroutine()
	c := newClient(t, Options{SocketPath: sock, MaxPendingBytes: 4096})
	conn, err := core.Connect(c)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var batches atomic.Int32
	stop := make(chan struct{})
	for range 8 {
		ch, err := conn.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		ch.SetReplyTimeout(500 * time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ch.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var ctxs []govppapi.RequestCtx
				for range 32 {
					ctxs = append(ctxs, ch.SendRequest(&memclnt.ControlPing{}))
				}
				for _, rc := range ctxs {
					_ = rc.ReceiveReply(&memclnt.ControlPingReply{})
				}
				batches.Add(1)
			}
		}()
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "traffic on the channels", func() bool { return batches.Load() >= 16 })
	done := make(chan struct{})
	go func() {
		_ = c.Disconnect()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Disconnect hung with sends pending")
	}
	if err := c.Disconnect(); err != nil {
		t.Errorf("second Disconnect = %v", err)
	}
	close(stop)
	wg.Wait()
	conn.Disconnect()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

// TestReconnectAfterSimulatorRestart: the restart breaks the connection (sends
// fail), Disconnect + Connect (what govpp's core does) registers again with a new
// index and works.
func TestReconnectAfterSimulatorRestart(t *testing.T) {
	sim, sock := startSim(t)
	c := newClient(t, Options{SocketPath: sock})
	replies := make(chan uint16, 16)
	c.SetMsgCallback(func(id uint16, _ []byte) { replies <- id })
	if err := c.Connect(); err != nil {
		t.Fatal(err)
	}
	pingID, err := c.GetMsgID("control_ping", (&memclnt.ControlPing{}).GetCrcString())
	if err != nil {
		t.Fatal(err)
	}
	ping, _ := encodePing(pingID)
	if err := c.SendMsg(1, ping); err != nil {
		t.Fatal(err)
	}
	<-replies
	first := c.ClientIndex()
	sim.Restart()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the broken connection to be noticed", func() bool { return c.SendMsg(2, ping) != nil })
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if c.ClientIndex() == first {
		t.Errorf("same client index %#x after the restart", first)
	}
	if err := c.SendMsg(3, ping); err != nil {
		t.Fatal(err)
	}
	select {
	case <-replies:
	case <-time.After(5 * time.Second):
		t.Fatal("no reply after reconnecting")
	}
}

func encodePing(id uint16) ([]byte, error) {
	b := make([]byte, requestHeaderLen)
	binary.BigEndian.PutUint16(b[0:2], id)
	return b, nil
}

// TestLoneRequestsAreWrittenByTheCaller: a sender that waits for every reply (no
// request outstanding) writes in its own goroutine, one syscall per request; the
// flusher writes nothing.
func TestLoneRequestsAreWrittenByTheCaller(t *testing.T) {
	_, sock := startSim(t)
	c := newClient(t, Options{SocketPath: sock})
	conn, err := core.Connect(c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ch.SetReplyTimeout(2 * time.Second)
	before := c.Stats()
	const n = 50
	for range n {
		if err := ch.SendRequest(&memclnt.ControlPing{}).ReceiveReply(&memclnt.ControlPingReply{}); err != nil {
			t.Fatal(err)
		}
	}
	st := c.Stats()
	if w, m := st.Writes-before.Writes, st.Messages-before.Messages; m != n || w != n {
		t.Errorf("%d requests in %d writes of %d messages, want one write each", n, w, m)
	}
	if st.FlusherWrites != before.FlusherWrites {
		t.Errorf("the flusher wrote %d times for lone requests", st.FlusherWrites-before.FlusherWrites)
	}
}

// TestOnePipelinedSenderIsBatched: a single goroutine (as govpp's core sends a
// channel's requests) keeping many requests in flight gets them written several per
// syscall, in order.
func TestOnePipelinedSenderIsBatched(t *testing.T) {
	peer := newFakePeer(t, false)
	c := newClient(t, Options{SocketPath: peer.path, ClientName: "fake-test"})
	const n, window = 5000, 64
	replies := make(chan uint32, window)
	rawConnect(t, c, func(_ uint16, data []byte) { replies <- binary.BigEndian.Uint32(data[6:10]) })
	inflight, want := 0, uint32(0)
	receive := func() {
		if got := <-replies; got != want {
			t.Fatalf("reply %d arrived as number %d", got, want)
		}
		want++
		inflight--
	}
	for i := range n {
		if inflight == window {
			receive()
		}
		if err := c.SendMsg(uint32(i), echoRequest(300, 7)); err != nil {
			t.Fatal(err)
		}
		inflight++
	}
	for inflight > 0 {
		receive()
	}
	st := c.Stats()
	t.Logf("%d messages in %d writes (%d by the flusher)", st.Messages, st.Writes, st.FlusherWrites)
	if st.Messages != n || st.Writes*2 > st.Messages {
		t.Errorf("%d messages in %d writes: want at least 2 per write on average", st.Messages, st.Writes)
	}
}

// TestCorruptFrameLengthBreaksTheConnection: a frame announcing more than the limit
// ends the reader with an error naming the socket, sends fail from then on, and
// Disconnect still returns.
func TestCorruptFrameLengthBreaksTheConnection(t *testing.T) {
	peer := newFakePeer(t, false)
	sendBad := make(chan struct{})
	peer.after = func(c net.Conn) {
		<-sendBad
		var hdr [frameHeaderLen]byte
		binary.BigEndian.PutUint32(hdr[8:12], maxFrameLen+1)
		_, _ = c.Write(hdr[:])
	}
	c := newClient(t, Options{SocketPath: peer.path, ClientName: "fake-test"})
	rawConnect(t, c, func(uint16, []byte) { t.Error("callback called for a corrupt frame") })
	close(sendBad)
	var err error
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the send to fail", func() bool { err = c.SendMsg(1, echoRequest(1, 1)); return err != nil })
	if !strings.Contains(err.Error(), peer.path) || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("SendMsg after a corrupt frame = %v, want the read error naming %s", err, peer.path)
	}
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
}

// TestLossIsReportedOnceAndOurDisconnectNever: VPP closing the socket (a dropped
// connection, a restart) is reported at once, once, with an error that wraps
// ErrConnectionLost and names the socket, and later sends fail with it; our own
// Disconnect (VPP closes the socket after sockclnt_delete) and the Connect that
// replaces a connection are not reported.
func TestLossIsReportedOnceAndOurDisconnectNever(t *testing.T) {
	sim, sock := startSim(t)
	c := newClient(t, Options{SocketPath: sock})
	losses := make(chan error, 4)
	c.SetLossCallback(func(err error) { losses <- err })
	noLoss := func(what string) {
		t.Helper()
		select {
		case err := <-losses:
			t.Fatalf("%s reported as a loss: %v", what, err)
		default:
		}
	}
	for _, fault := range []struct {
		name   string
		break_ func()
	}{{"dropped", sim.DropConnections}, {"restarted", sim.Restart}} {
		if err := c.Connect(); err != nil {
			t.Fatal(err)
		}
		if c.MessageTableDigest() == 0 {
			t.Error("no message table digest after Connect")
		}
		fault.break_()
		var err error
		select {
		case err = <-losses:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no loss reported", fault.name)
		}
		if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), sock) || !strings.Contains(err.Error(), "VPP closed the socket") {
			t.Errorf("%s: loss = %v, want ErrConnectionLost naming %s and the cause", fault.name, err, sock)
		}
		if serr := c.SendMsg(1, echoRequest(1, 0)); !errors.Is(serr, ErrConnectionLost) {
			t.Errorf("%s: SendMsg after the loss = %v, want ErrConnectionLost", fault.name, serr)
		}
		noLoss(fault.name + " (second report)")
	}
	// the replacing Connect, then our Disconnect: no report
	if err := c.Connect(); err != nil {
		t.Fatal(err)
	}
	d := c.MessageTableDigest()
	if err := c.Connect(); err != nil {
		t.Fatal(err)
	}
	if c.MessageTableDigest() != d {
		t.Error("the same simulator gave another message table digest")
	}
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	if c.MessageTableDigest() != 0 {
		t.Error("digest kept after Disconnect")
	}
	noLoss("Connect over a live connection or Disconnect")
}

// TestMessageTableDigestIgnoresOrderAndSeesIDs: the digest is that of the mapping.
func TestMessageTableDigestIgnoresOrderAndSeesIDs(t *testing.T) {
	a := []memclnt.MessageTableEntry{{Index: 1, Name: "a_1"}, {Index: 2, Name: "b_2"}}
	b := []memclnt.MessageTableEntry{{Index: 2, Name: "b_2"}, {Index: 1, Name: "a_1"}}
	c := []memclnt.MessageTableEntry{{Index: 2, Name: "a_1"}, {Index: 1, Name: "b_2"}}
	if tableDigest(a) != tableDigest(b) {
		t.Error("order changed the digest")
	}
	if tableDigest(a) == tableDigest(c) {
		t.Error("swapped IDs gave the same digest")
	}
}

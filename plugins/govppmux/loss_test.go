package govppmux

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"go.fd.io/govpp/binapi/vpe"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

// slowProbe is the health-check probe interval of the loss tests: far longer than
// any test waits, so that govpp's health check cannot be what notices a loss.
const slowProbe = time.Minute

// lossEnv is a plugin over vppsock whose health check is too slow to matter, with
// its log captured and each resync request signalled.
type lossEnv struct {
	sim     *vppsim.Sim
	sock    string
	reg     *health.Registry
	log     *test.Hook
	resyncs chan struct{}
	plugin  *Plugin
}

// slowProbeConfig is fastConfigWith(sock, sc) with the health check probing every
// slowProbe and a reply timeout as long.
func slowProbeConfig(sock, sc string) infra.StaticConfig {
	cfg := fastConfigWith(sock, sc)
	cfg["health-check-probe-interval"] = slowProbe.String()
	cfg["health-check-reply-timeout"] = "1s"
	cfg["reply-timeout"] = slowProbe.String()
	return cfg
}

func newLossEnv(t *testing.T) *lossEnv {
	t.Helper()
	e := &lossEnv{reg: health.NewRegistry(), resyncs: make(chan struct{}, 16)}
	e.sim, e.sock = startSim(t)
	var l *logrus.Logger
	l, e.log = test.NewNullLogger()
	l.SetLevel(logrus.InfoLevel)
	e.plugin = NewPlugin(Deps{Log: l, Config: slowProbeConfig(e.sock, SocketClientVPPSock), Health: e.reg.Reporter("vpp"),
		OnReconnect: func() error { e.resyncs <- struct{}{}; return nil }})
	if err := e.plugin.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = e.plugin.Close() })
	return e
}

// lossLogs returns the messages of the warnings that report a lost connection.
func (e *lossEnv) lossLogs() []string {
	var out []string
	for _, en := range e.log.AllEntries() {
		if strings.Contains(en.Message, "lost connection to VPP") {
			out = append(out, en.Message+": "+errString(en.Data[logrus.ErrorKey]))
		}
	}
	return out
}

func errString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return ""
}

// waitResync waits for one resync request, at most d.
func (e *lossEnv) waitResync(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-e.resyncs:
	case <-time.After(d):
		t.Fatalf("no resync requested within %v", d)
	}
}

// TestLossIsHandledAtOnceWithoutTheHealthCheck: VPP closing the connection (dropped,
// or restarted empty) makes the plugin report VPP disconnected, reconnect, check VPP
// again and request the resync, all within a fraction of one health-check probe
// interval (a minute here, so govpp's health check cannot have noticed), once per
// loss. The channels handed out before keep working.
func TestLossIsHandledAtOnceWithoutTheHealthCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(*vppsim.Sim)
	}{
		{"connection dropped", (*vppsim.Sim).DropConnections},
		{"VPP restarted", (*vppsim.Sim).Restart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLossEnv(t)
			ch, err := e.plugin.NewAPIChannel()
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			for i := 1; i <= 2; i++ { // twice: the second loss is on the reconnected session
				start := time.Now()
				tc.break_(e.sim)
				e.waitResync(t, slowProbe/4)
				took := time.Since(start)
				if took >= slowProbe/4 {
					t.Fatalf("loss %d handled in %v, not before the health check could", i, took)
				}
				t.Logf("loss %d: disconnected, reconnected and resync requested in %v", i, took)
				if info := e.plugin.VPPInfo(); !info.Connected || info.Reconnects != i {
					t.Errorf("VPPInfo after loss %d = %+v, want connected with %d reconnect(s)", i, info, i)
				}
				if h := e.reg.Status().Components["vpp"]; h.State != health.OK {
					t.Errorf("health after loss %d = %+v", i, h)
				}
				if logs := e.lossLogs(); len(logs) != i || !strings.Contains(logs[i-1], "VPP closed the socket") {
					t.Errorf("loss warnings after loss %d = %q, want %d naming the cause", i, logs, i)
				}
				if err := ping(t, ch); err != nil {
					t.Errorf("channel after loss %d: %v", i, err)
				}
			}
			select {
			case <-e.resyncs:
				t.Error("more resyncs requested than losses")
			default:
			}
		})
	}
}

// TestRequestsInFlightFailWithTheLoss: the replies a pipe waits for when VPP closes
// the connection fail at once (not after the reply timeout, a minute here) with an
// error that says the connection was lost; requests sent before the plugin has
// reconnected fail too, naming the loss; after the reconnect the same pipe works.
func TestRequestsInFlightFailWithTheLoss(t *testing.T) {
	e := newLossEnv(t)
	ch, err := e.plugin.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	pipe := NewPipe(ch)
	// show_version is held back by the simulator: the request stays in flight
	if err := e.sim.DelayMessage("show_version", slowProbe); err != nil {
		t.Fatal(err)
	}
	if err := pipe.Send(&vpe.ShowVersion{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- pipe.Receive(&vpe.ShowVersionReply{}) }()
	start := time.Now()
	e.sim.DropConnections()
	var rerr error
	select {
	case rerr = <-got:
	case <-time.After(slowProbe / 4):
		t.Fatal("the reply in flight did not fail after the loss")
	}
	if !errors.Is(rerr, ErrConnectionLost) || !strings.Contains(rerr.Error(), "connection to VPP lost") ||
		!(strings.Contains(rerr.Error(), "VPP closed the socket") || strings.Contains(rerr.Error(), "VPP reset the connection")) {
		t.Errorf("reply in flight = %v, want the loss and its cause", rerr)
	}
	t.Logf("reply in flight failed %v after the loss: %v", time.Since(start), rerr)
	e.sim.ClearFaults()
	e.waitResync(t, slowProbe/4)
	if err := pipe.Send(&vpe.ShowVersion{}); err != nil {
		t.Fatalf("Send after the reconnect: %v", err)
	}
	if err := pipe.Receive(&vpe.ShowVersionReply{}); err != nil {
		t.Errorf("Receive after the reconnect: %v", err)
	}
}

// TestSendWhileReconnectingNamesTheLoss: while VPP is away (the socket gone after
// the loss) a request fails at once with an error naming the loss, and the health
// says INIT with the cause.
func TestSendWhileReconnectingNamesTheLoss(t *testing.T) {
	e := newLossEnv(t)
	ch, err := e.plugin.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := e.sim.Close(); err != nil { // VPP gone for good: closed and not listening
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "disconnected", func() bool { return !e.plugin.IsConnected() })
	if h := e.reg.Status().Components["vpp"]; h.State != health.Init || !strings.Contains(h.Reason, e.sock) {
		t.Errorf("health while VPP is away = %+v, want INIT naming the socket", h)
	}
	err = ping(t, ch)
	if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "connection to VPP lost") {
		t.Errorf("request while VPP is away = %v, want the loss named", err)
	}
}

// TestOwnCloseIsNoLoss: Close after a loss and a reconnect reports no loss of its
// own (no warning, health not INIT/ERROR from it), requests no resync, and stops
// every goroutine the plugin and its transport started.
func TestOwnCloseIsNoLoss(t *testing.T) {
	sim, sock := startSim(t)
	before := runtime.NumGoroutine()
	l, hook := test.NewNullLogger()
	reg := health.NewRegistry()
	var mu sync.Mutex
	resyncs := 0
	p := NewPlugin(Deps{Log: l, Config: slowProbeConfig(sock, SocketClientVPPSock), Health: reg.Reporter("vpp"),
		OnReconnect: func() error { mu.Lock(); resyncs++; mu.Unlock(); return nil }})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	sim.DropConnections()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "reconnected", func() bool { mu.Lock(); defer mu.Unlock(); return resyncs == 1 })
	hook.Reset()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "client gone", func() bool { return sim.ClientCount() == 0 })
	for _, en := range hook.AllEntries() {
		if en.Level <= logrus.WarnLevel {
			t.Errorf("Close logged %s: %s %v", en.Level, en.Message, en.Data)
		}
	}
	if h := reg.Status().Components["vpp"]; h.State != health.OK {
		t.Errorf("health after Close = %+v, want the last state (OK) kept", h)
	}
	mu.Lock()
	if resyncs != 1 {
		t.Errorf("%d resyncs, want 1", resyncs)
	}
	mu.Unlock()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "goroutines stopped", func() bool { return runtime.NumGoroutine() <= before })
}

// TestOneLossOneReconnectWhenTheHealthCheckAlsoNotices: VPP away for many health-check
// probe intervals (50 ms here): the socket's loss is reported at once, govpp's health
// probe then fails too and core's loop takes over the reconnect, yet the plugin warns
// of the loss once, reconnects once and requests one resync when VPP is back.
func TestOneLossOneReconnectWhenTheHealthCheckAlsoNotices(t *testing.T) {
	sim, sock := startSim(t)
	l, hook := test.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	reg := health.NewRegistry()
	cfg := fastConfigWith(sock, SocketClientVPPSock)
	cfg["retry-connect-timeout"] = "5ms"
	cfg["retry-connect-max-timeout"] = "20ms"
	var mu sync.Mutex
	resyncs := 0
	p := NewPlugin(Deps{Log: l, Config: cfg, Health: reg.Reporter("vpp"),
		OnReconnect: func() error { mu.Lock(); resyncs++; mu.Unlock(); return nil }})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	// a plain file where the socket was: every attempt fails at once
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// 10 failed attempts at <= 20 ms take several 50 ms probe intervals
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "10 failed attempts", func() bool { return p.VPPInfo().FailedAttempts >= 10 })
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	startSimAt(t, sock)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync requested", func() bool { mu.Lock(); defer mu.Unlock(); return resyncs > 0 })
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "health OK", func() bool { return reg.Status().Components["vpp"].State == health.OK })
	var warnings []string
	coreNoticed := false
	for _, en := range hook.AllEntries() {
		switch {
		case strings.Contains(en.Message, "lost connection to VPP"):
			warnings = append(warnings, en.Message)
		case strings.Contains(en.Message, "VPP loss already handled"):
			coreNoticed = true
		}
	}
	if len(warnings) != 1 {
		t.Errorf("%d loss warnings, want 1: %q", len(warnings), warnings)
	}
	if !coreNoticed {
		t.Error("govpp's health check did not report the loss too: the test did not exercise both paths")
	}
	mu.Lock()
	defer mu.Unlock()
	if info := p.VPPInfo(); info.Reconnects != 1 || resyncs != 1 {
		t.Errorf("VPPInfo = %+v with %d resync(s), want one reconnect and one resync", info, resyncs)
	}
}

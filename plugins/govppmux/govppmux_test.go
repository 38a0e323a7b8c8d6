package govppmux

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

const testNIC = "GigabitEthernet0/8/0"

// fakeLoop counts the OnReconnect calls (the resyncs the agent would request).
type fakeLoop struct {
	mu      sync.Mutex
	resyncs int
	err     error
}

// onReconnect is the plugin's OnReconnect callback.
func (l *fakeLoop) onReconnect() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.resyncs++
	return nil
}

func (l *fakeLoop) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resyncs
}

// fakeMsg is a message no VPP knows.
type fakeMsg struct{ name string }

func (m *fakeMsg) GetMessageName() string               { return m.name }
func (m *fakeMsg) GetCrcString() string                 { return "0badc0de" }
func (m *fakeMsg) GetMessageType() govppapi.MessageType { return govppapi.RequestMessage }

// TestMain silences govpp's own (package-global) logger for the whole test binary.
// Started with simProcessEnv set, the binary is instead the benchmarks' simulator
// process (see startSimProcess).
func TestMain(m *testing.M) {
	if sock := os.Getenv(simProcessEnv); sock != "" {
		os.Exit(runSimProcess(sock))
	}
	core.SetLogLevel(logrus.PanicLevel)
	os.Exit(m.Run())
}

type env struct {
	t      *testing.T
	sock   string
	sim    *vppsim.Sim
	loop   *fakeLoop
	reg    *health.Registry
	plugin *Plugin
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// startSim starts a simulator on a private socket.
func startSim(t *testing.T) (*vppsim.Sim, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	return startSimAt(t, sock), sock
}

// startSimAt starts a simulator serving sock; it is closed at test end.
func startSimAt(t *testing.T, sock string) *vppsim.Sim {
	t.Helper()
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, NICs: []string{testNIC}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// transports are the values of socket-client; the connection tests run with each.
var transports = []string{SocketClientVPPSock, SocketClientGovpp}

// forEachTransport runs f as a subtest for every transport.
func forEachTransport(t *testing.T, f func(t *testing.T, sc string)) {
	for _, sc := range transports {
		t.Run(sc, func(t *testing.T) { f(t, sc) })
	}
}

// fastConfig is fastConfigWith the default transport.
func fastConfig(sock string) infra.StaticConfig { return fastConfigWith(sock, DefaultSocketClient) }

// fastConfigWith is a configuration with short health-check and retry periods and
// the socket client sc.
func fastConfigWith(sock, sc string) infra.StaticConfig {
	return infra.StaticConfig{
		"socket-client":               sc,
		"binapi-socket-path":          sock,
		"health-check-probe-interval": "50ms",
		"health-check-reply-timeout":  "40ms",
		"health-check-threshold":      2,
		"reply-timeout":               "2s",
		"retry-connect-count":         20,
		"retry-connect-timeout":       "50ms",
	}
}

// newEnv is newEnvWith the default transport.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, DefaultSocketClient)
}

// newEnvWith starts a simulator and an initialised plugin connected to it over the
// socket client sc.
func newEnvWith(t *testing.T, sc string) *env {
	t.Helper()
	e := &env{t: t, loop: &fakeLoop{}, reg: health.NewRegistry()}
	e.sim, e.sock = startSim(t)
	e.plugin = NewPlugin(Deps{Log: quietLog(), Config: fastConfigWith(e.sock, sc), Health: e.reg.Reporter("vpp"), OnReconnect: e.loop.onReconnect})
	if err := e.plugin.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = e.plugin.Close() })
	return e
}

func (e *env) health() health.ComponentStatus { return e.reg.Status().Components["vpp"] }

func ping(t *testing.T, ch govppapi.Channel) error {
	t.Helper()
	return ch.SendRequest(&memclnt.ControlPing{}).ReceiveReply(&memclnt.ControlPingReply{})
}

func TestInitConnectsReportsVersionAndHealth(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := newEnvWith(t, sc)
		info := e.plugin.VPPInfo()
		if !info.Connected || info.Version != vppsim.VPPVersion {
			t.Fatalf("VPPInfo = %+v", info)
		}
		if h := e.health(); h.State != health.OK || !strings.Contains(h.Reason, vppsim.VPPVersion) {
			t.Fatalf("health = %+v", h)
		}
		ch, err := e.plugin.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if err := ping(t, ch); err != nil {
			t.Fatalf("control_ping: %v", err)
		}
		if err := e.plugin.AfterInit(); err != nil {
			t.Fatalf("AfterInit without messages: %v", err)
		}
		ver := &vpe.ShowVersionReply{}
		if err := e.plugin.Invoke(context.Background(), &vpe.ShowVersion{}, ver); err != nil || ver.Version != vppsim.VPPVersion {
			t.Errorf("Invoke show_version = %+v, %v", ver, err)
		}
		if e.plugin.String() != "govppmux" {
			t.Errorf("String() = %q", e.plugin.String())
		}
	})
}

func TestAfterInitNamesEveryMissingMessage(t *testing.T) {
	e := newEnv(t)
	if err := e.plugin.RegisterMessages(&interfaces.CreateLoopback{}, &fakeMsg{"frobnicate"}, &interfaces.CreateLoopbackReply{}); err != nil {
		t.Fatalf("RegisterMessages before AfterInit: %v", err)
	}
	if err := e.plugin.RegisterMessages(&fakeMsg{"teleport_add_del"}); err != nil {
		t.Fatal(err)
	}
	err := e.plugin.AfterInit()
	if err == nil {
		t.Fatal("AfterInit accepted unknown messages")
	}
	for _, want := range []string{"frobnicate_0badc0de", "teleport_add_del_0badc0de", "2 of 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "create_loopback") {
		t.Errorf("error %q names a known message", err)
	}
	if h := e.health(); h.State != health.Error {
		t.Errorf("health after failed check = %+v", h)
	}
}

func TestRegisterAfterAfterInitChecksAtOnce(t *testing.T) {
	e := newEnv(t)
	if err := e.plugin.AfterInit(); err != nil {
		t.Fatal(err)
	}
	if err := e.plugin.RegisterMessages(&interfaces.SwInterfaceDump{}, &interfaces.SwInterfaceDetails{}); err != nil {
		t.Fatalf("known messages rejected: %v", err)
	}
	err := e.plugin.RegisterMessages(&fakeMsg{"late_msg"})
	if err == nil || !strings.Contains(err.Error(), "late_msg_0badc0de") {
		t.Fatalf("RegisterMessages after AfterInit = %v", err)
	}
}

func TestReconnectRequestsResyncAndRestoresChannels(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		tests := []struct {
			name   string
			break_ func(*vppsim.Sim)
		}{
			{"connection dropped", (*vppsim.Sim).DropConnections},
			{"VPP restarted", (*vppsim.Sim).Restart},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnvWith(t, sc)
				ch, err := e.plugin.NewAPIChannel()
				if err != nil {
					t.Fatal(err)
				}
				defer ch.Close()
				tc.break_(e.sim)
				testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync requested", func() bool { return e.loop.count() > 0 })
				testkit.EventuallyTrue(t, testkit.DefaultTimeout, "health OK", func() bool { return e.health().State == health.OK })
				if info := e.plugin.VPPInfo(); info.Reconnects != 1 || !info.Connected {
					t.Errorf("VPPInfo = %+v", info)
				}
				if err := ping(t, ch); err != nil {
					t.Errorf("old channel after reconnect: %v", err)
				}
			})
		}
	})
}

// TestReconnectsForAsLongAsVPPStaysAway is the regression test of VPP being away
// longer than the attempts govpp used to make (retry-connect-count, here 3, then
// ERROR for good): the plugin stays INIT with the failure named, keeps trying with
// capped backoff, and reconnects when VPP is back, with the resync requested.
func TestReconnectsForAsLongAsVPPStaysAway(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := &env{t: t, loop: &fakeLoop{}, reg: health.NewRegistry()}
		e.sim, e.sock = startSim(t)
		cfg := fastConfigWith(e.sock, sc)
		cfg["retry-connect-count"] = 3
		cfg["retry-connect-timeout"] = "5ms"
		cfg["retry-connect-max-timeout"] = "20ms"
		e.plugin = NewPlugin(Deps{Log: quietLog(), Config: cfg, Health: e.reg.Reporter("vpp"), OnReconnect: e.loop.onReconnect})
		if err := e.plugin.Init(); err != nil {
			t.Fatal(err)
		}
		defer e.plugin.Close()
		if err := e.sim.Close(); err != nil {
			t.Fatal(err)
		}
		// A plain file where the socket was: every attempt fails at once.
		if err := os.WriteFile(e.sock, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "health INIT", func() bool { return e.health().State != health.OK })
		if e.plugin.IsConnected() {
			t.Error("still connected after VPP went away")
		}
		// far more failed attempts than retry-connect-count: the old code had given up
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "10 failed attempts", func() bool { return e.plugin.VPPInfo().FailedAttempts >= 10 })
		if h := e.health(); h.State != health.Init || !strings.Contains(h.Reason, "reconnecting to VPP at "+e.sock) ||
			!strings.Contains(h.Reason, "next in 20ms") {
			t.Errorf("health while VPP is away = %+v, want INIT naming the socket and the capped backoff", h)
		}
		if n := e.loop.count(); n != 0 {
			t.Errorf("resync requested %d times without a reconnect", n)
		}
		// VPP comes back on the same socket
		if err := os.Remove(e.sock); err != nil {
			t.Fatal(err)
		}
		sim, err := vppsim.New(vppsim.Options{SocketPath: e.sock, NICs: []string{testNIC}})
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sim.Close() })
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "reconnected", func() bool { return e.plugin.IsConnected() })
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "health OK", func() bool { return e.health().State == health.OK })
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "resync requested", func() bool { return e.loop.count() == 1 })
		if info := e.plugin.VPPInfo(); info.Reconnects != 1 || info.FailedAttempts != 0 {
			t.Errorf("VPPInfo after the reconnect = %+v", info)
		}
		ch, err := e.plugin.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if err := ping(t, ch); err != nil {
			t.Errorf("channel after the reconnect: %v", err)
		}
	})
}

// TestInitGivesUpAfterTheStartupBudget: at start-up, retry-connect-count failed
// attempts fail Init with an error naming the socket and the count.
func TestInitGivesUpAfterTheStartupBudget(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(sock)
	cfg["retry-connect-count"] = 2
	cfg["retry-connect-timeout"] = "1ms"
	cfg["retry-connect-max-timeout"] = "2ms"
	p := NewPlugin(Deps{Log: quietLog(), Config: cfg})
	err := p.Init()
	defer p.Close()
	if err == nil || !strings.Contains(err.Error(), sock) || !strings.Contains(err.Error(), "3 attempt(s) failed (retry-connect-count 2)") {
		t.Fatalf("Init = %v", err)
	}
}

func TestInitFailsWithoutVPP(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		sock := filepath.Join(t.TempDir(), "api.sock")
		if err := os.WriteFile(sock, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := fastConfigWith(sock, sc)
		cfg["retry-connect-count"] = 0
		reg := health.NewRegistry()
		p := NewPlugin(Deps{Log: quietLog(), Config: cfg, Health: reg.Reporter("vpp")})
		err := p.Init()
		if err == nil {
			p.Close()
			t.Fatal("Init succeeded without VPP")
		}
		if !strings.Contains(err.Error(), sock) {
			t.Errorf("error %q does not name the socket", err)
		}
		if st := reg.Status().Components["vpp"]; st.State != health.Error {
			t.Errorf("health = %+v", st)
		}
		if _, err := p.NewAPIChannel(); err == nil {
			t.Error("channel handed out without a connection")
		}
		_ = p.Close()
	})
}

func TestInitRejectsBadConfig(t *testing.T) {
	p := NewPlugin(Deps{Log: quietLog(), Config: infra.StaticConfig{"health-check-threshold": 0}})
	err := p.Init()
	if err == nil || !strings.Contains(err.Error(), "health-check-threshold") {
		t.Fatalf("Init = %v", err)
	}
}

func TestFailedResyncPushIsReported(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := newEnvWith(t, sc)
		e.loop.mu.Lock()
		e.loop.err = errors.New("queue full")
		e.loop.mu.Unlock()
		e.sim.DropConnections()
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "health ERROR", func() bool { return e.health().State == health.Error })
		if h := e.health(); !strings.Contains(h.Reason, "queue full") {
			t.Errorf("health = %+v", h)
		}
	})
}

func TestCloseStopsEverything(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		sim, sock := startSim(t)
		before := runtime.NumGoroutine()
		p := NewPlugin(Deps{Log: quietLog(), Config: fastConfigWith(sock, sc)})
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		ch, err := p.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		if err := ping(t, ch); err != nil {
			t.Fatal(err)
		}
		ch.Close()
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "client registered", func() bool { return sim.ClientCount() == 1 })
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "client gone", func() bool { return sim.ClientCount() == 0 })
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "goroutines stopped", func() bool { return runtime.NumGoroutine() <= before })
		if _, err := p.NewAPIChannel(); err == nil {
			t.Error("channel handed out after Close")
		}
		if p.IsConnected() {
			t.Error("connected after Close")
		}
	})
}

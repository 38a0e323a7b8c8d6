package govppmux

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
)

// TestHungVPPFailsLivenessAfterTheBound is the regression test of issue #27, item 6: a
// VPP stopped with SIGSTOP (its socket open, nothing answered) left the agent alive
// (health INIT) for as long as it stayed stopped. Past liveness-timeout the VPP
// component must be ERROR, naming the key and the bound, so the kubelet restarts the
// vswitch container; once VPP answers again the component is OK.
func TestHungVPPFailsLivenessAfterTheBound(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		sock, proc := startSimProcessCmd(t)
		reg := health.NewRegistry()
		cfg := fastConfigWith(sock, sc)
		cfg["connect-timeout"] = "100ms"
		cfg["liveness-timeout"] = "400ms"
		loop := &fakeLoop{}
		p := NewPlugin(Deps{Log: quietLog(), Config: cfg, Health: reg.Reporter("vpp"), OnReconnect: loop.onReconnect})
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		vpp := func() health.ComponentStatus { return reg.Status().Components["vpp"] }

		if err := proc.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "VPP noticed as not answering (INIT)", func() bool {
			return vpp().State == health.Init
		})
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "VPP component ERROR past liveness-timeout", func() bool {
			return vpp().State == health.Error
		})
		if h := vpp(); !strings.Contains(h.Reason, "liveness-timeout 400ms") || !strings.Contains(h.Reason, sock) {
			t.Errorf("reason %q: want it to name liveness-timeout 400ms and the socket %s", h.Reason, sock)
		}
		// Further failed attempts keep it ERROR (they report INIT underneath).
		failed := p.VPPInfo().FailedAttempts
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "another failed attempt", func() bool {
			return p.VPPInfo().FailedAttempts > failed
		})
		if h := vpp(); h.State != health.Error {
			t.Errorf("after another failed attempt: %+v, want ERROR", h)
		}

		if err := proc.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, "VPP component OK once VPP answers", func() bool {
			return vpp().State == health.OK
		})
	})
}

// TestWatchdogFailsLivenessOnlyPastTheBound steps a fake clock: an outage shorter than
// liveness-timeout stays INIT (a restarting VPP is not killed), a longer one is ERROR
// even as reconnect attempts report INIT, and an answer makes it OK again.
func TestWatchdogFailsLivenessOnlyPastTheBound(t *testing.T) {
	clk := testkit.NewClock()
	reg := health.NewRegistry()
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(done); wg.Wait() }()
	w := newWatchdog(clk, time.Minute, "/run/vpp/api.sock", quietLog(), reg.Reporter("vpp"), done, &wg)
	state := func() health.State { return reg.Status().Components["vpp"].State }

	w.report(health.OK, "connected")
	w.down()
	w.report(health.Init, "VPP disconnected")
	clk.AwaitWaiters(t, 1)
	clk.Step(59 * time.Second)
	w.report(health.Init, "attempt 5 failed")
	if s := state(); s != health.Init {
		t.Fatalf("after 59s of a 1m bound: %v, want INIT", s)
	}
	w.answered()
	w.report(health.OK, "connected")
	clk.Step(time.Minute)
	if s := state(); s != health.OK {
		t.Fatalf("after VPP answered: %v, want OK (the old outage's timer must not fire)", s)
	}

	w.down()
	w.report(health.Init, "VPP notresponding")
	clk.AwaitWaiters(t, 1)
	clk.Step(time.Minute)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "ERROR past the bound", func() bool { return state() == health.Error })
	w.report(health.Init, "attempt 9 failed")
	if h := reg.Status().Components["vpp"]; h.State != health.Error || !strings.Contains(h.Reason, "attempt 9 failed") {
		t.Errorf("a failed attempt past the bound: %+v, want ERROR with the attempt named", h)
	}
	w.answered()
	w.report(health.OK, "connected")
	if s := state(); s != health.OK {
		t.Errorf("after VPP answered: %v, want OK", s)
	}
}

package govppmux

import (
	"strings"
	"syscall"
	"testing"

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

package vppsim

import (
	"path/filepath"
	"testing"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vpe"
)

// newEnvWithOptions is newEnv with the given options (SocketPath and NICs
// are filled in).
func newEnvWithOptions(t *testing.T, opts Options) *testEnv {
	t.Helper()
	e := &testEnv{t: t, sock: filepath.Join(t.TempDir(), "api.sock")}
	opts.SocketPath, opts.NICs = e.sock, []string{nic1, nic2}
	sim, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := sim.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	e.sim = sim
	t.Cleanup(func() {
		if err := sim.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e.conn, e.ch = e.connect()
	return e
}

func TestRandomFailuresHitStateChangingRequestsOnly(t *testing.T) {
	e := newEnvWithOptions(t, Options{FailProbability: 1})
	before := len(e.sim.Interfaces())
	e.expect(RandomFailRetval, &interfaces.CreateLoopback{})
	if after := len(e.sim.Interfaces()); after != before {
		t.Errorf("a randomly failed create_loopback created an interface (%d -> %d)", before, after)
	}
	// Read-only requests and dumps never fail.
	e.ok(&vpe.ShowVersion{})
	e.ok(&memclnt.ControlPing{})
	if got := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces}); len(got) != before {
		t.Errorf("sw_interface_dump under random failures returned %d interfaces, want %d", len(got), before)
	}
	if got := e.sim.RandomFailureCount(); got != 1 {
		t.Errorf("RandomFailureCount = %d, want 1", got)
	}
	// Turned off at run time, the same request succeeds.
	e.sim.SetFailProbability(0)
	e.ok(&interfaces.CreateLoopback{})
	if after := len(e.sim.Interfaces()); after != before+1 {
		t.Errorf("create_loopback after SetFailProbability(0): %d interfaces, want %d", after, before+1)
	}
}

// outcomes sends n create_loopback requests and returns their retvals.
func outcomes(e *testEnv, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = e.rv(&interfaces.CreateLoopback{})
	}
	return out
}

func TestRandomFailuresShareAndSeedReproduce(t *testing.T) {
	const n = 400
	a := outcomes(newEnvWithOptions(t, Options{FailProbability: 0.25, FailSeed: 7}), n)
	b := outcomes(newEnvWithOptions(t, Options{FailProbability: 0.25, FailSeed: 7}), n)
	c := outcomes(newEnvWithOptions(t, Options{FailProbability: 0.25, FailSeed: 8}), n)
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: retval %d with seed 7, %d on the second run with seed 7", i, a[i], b[i])
		}
		switch a[i] {
		case 0:
		case RandomFailRetval:
			failed++
		default:
			t.Fatalf("request %d: unexpected retval %d", i, a[i])
		}
	}
	// 25% of 400 is 100; the binomial standard deviation is about 8.7.
	if failed < 65 || failed > 135 {
		t.Errorf("%d of %d requests failed with probability 0.25", failed, n)
	}
	if equal := func() bool {
		for i := range a {
			if a[i] != c[i] {
				return false
			}
		}
		return true
	}(); equal {
		t.Error("seeds 7 and 8 failed the same requests")
	}
}

func TestSetFailProbabilityClampsAndStartsFailures(t *testing.T) {
	e := newEnvWithOptions(t, Options{})
	e.ok(&interfaces.CreateLoopback{})
	e.sim.SetFailProbability(3) // clamped to 1
	for i := range 5 {
		if got := e.rv(&interfaces.CreateLoopback{}); got != RandomFailRetval {
			t.Fatalf("request %d with probability 1: retval %d, want %d", i, got, RandomFailRetval)
		}
	}
	e.sim.SetFailProbability(-1) // clamped to 0
	e.ok(&interfaces.CreateLoopback{})
}

func TestNewRejectsFailProbabilityOutOfRange(t *testing.T) {
	for _, p := range []float64{-0.1, 1.5} {
		_, err := New(Options{SocketPath: filepath.Join(t.TempDir(), "s"), FailProbability: p})
		if err == nil {
			t.Errorf("New accepted FailProbability %v", p)
		}
	}
}

func TestReadOnlyRequest(t *testing.T) {
	for name, want := range map[string]bool{
		"control_ping": true, "show_version": true, "sockclnt_create": true, "sockclnt_delete": true,
		"memclnt_keepalive": true, "cli_inband": true, "want_interface_events": true,
		"sw_interface_dump": true, "nat44_user_session_v3_dump": true, "nat44_show_running_config": true,
		"sw_interface_get_table": true, "nat_get_mss_clamping": true, "nat44_ed_output_interface_get": true,
		"create_loopback": false, "nat44_add_del_lb_static_mapping": false, "tap_create_v3": false,
		"nat44_del_session": false, "nat_set_timeouts": false, "ip_route_add_del": false,
	} {
		if got := readOnlyRequest(name); got != want {
			t.Errorf("readOnlyRequest(%q) = %v, want %v", name, got, want)
		}
	}
}

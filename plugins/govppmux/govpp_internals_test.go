package govppmux

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

// These tests assert, against the govpp pinned in go.mod, each reliance on govpp's
// core that govpp_internals.go names (R1-R4). A failure means a govpp upgrade changed
// something the reconnect path depends on: read the file before changing the test.

// govppChanged is the start of every failure message here.
func govppChanged(what string) string {
	return "govpp changed " + what + ": the reconnect path relies on it, see plugins/govppmux/govpp_internals.go"
}

// R1 at compile time: the health-check settings are variables of these types. If this
// does not compile, govpp changed them (R1 in govpp_internals.go).
var (
	_ *time.Duration = &core.HealthCheckProbeInterval
	_ *time.Duration = &core.HealthCheckReplyTimeout
	_ *int           = &core.HealthCheckThreshold
)

// govppHealthDefaults are core's health-check variables as govpp initialises them,
// read during package initialisation, before any test sets them.
var govppHealthDefaults = struct {
	probe, reply time.Duration
	threshold    int
}{core.HealthCheckProbeInterval, core.HealthCheckReplyTimeout, core.HealthCheckThreshold}

func TestGovppHealthCheckGlobalsHaveTheirKnownDefaults(t *testing.T) {
	d := govppHealthDefaults
	if d.probe != time.Second || d.reply != 250*time.Millisecond || d.threshold != 2 {
		t.Errorf("%s (defaults now probe interval %v, reply timeout %v, threshold %d; were 1s, 250ms, 2)",
			govppChanged("the defaults of core.HealthCheck*"), d.probe, d.reply, d.threshold)
	}
}

// coreObserver wraps a transport and records how govpp's core drives it: "wait"
// (WaitReady), "connect", "connect-failed" and "disconnect", with the time of each.
// Its first failConnects Connect calls fail without reaching the transport.
type coreObserver struct {
	adapter.VppAPI
	mu           sync.Mutex
	calls        []string
	at           []time.Time
	failConnects int
	onWait       func() // run by WaitReady when set
}

func (o *coreObserver) record(call string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, call)
	o.at = append(o.at, time.Now())
}

// WaitReady records the call; the transport's own wait (for the socket file) is
// skipped, as retryingAdapter skips it.
func (o *coreObserver) WaitReady() error {
	o.record("wait")
	o.mu.Lock()
	f := o.onWait
	o.mu.Unlock()
	if f != nil {
		f()
	}
	return nil
}

func (o *coreObserver) Connect() error {
	o.mu.Lock()
	fail := o.failConnects > 0
	if fail {
		o.failConnects--
	}
	o.mu.Unlock()
	if fail {
		o.record("connect-failed")
		return errors.New("connection refused (test)")
	}
	err := o.VppAPI.Connect()
	if err != nil {
		o.record("connect-failed")
		return err
	}
	o.record("connect")
	return nil
}

func (o *coreObserver) Disconnect() error {
	o.record("disconnect")
	return o.VppAPI.Disconnect()
}

// snapshot returns the calls so far and their times.
func (o *coreObserver) snapshot() ([]string, []time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls), slices.Clone(o.at)
}

func (o *coreObserver) count(call string) int {
	calls, _ := o.snapshot()
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// observeSim returns an observer around a vppsock transport to a new simulator.
func observeSim(t *testing.T, failConnects int) (*coreObserver, *vppsim.Sim) {
	t.Helper()
	sim, sock := startSim(t)
	cfg := DefaultConfig()
	cfg.BinAPISocketPath = sock
	tr, err := NewTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &coreObserver{VppAPI: tr, failConnects: failConnects}, sim
}

// awaitState reads events until one of state want; another terminal state (Failed)
// or the deadline fails the test with what.
func awaitState(t *testing.T, events chan core.ConnectionEvent, want core.ConnectionState, within time.Duration, what string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.State == want {
				return
			}
			if ev.State == core.Failed {
				t.Fatalf("%s: core reported Failed (%v) while waiting for %v", what, ev.Error, want)
			}
		case <-deadline:
			t.Fatalf("%s: no %v event within %v", what, want, within)
		}
	}
}

// keepHealthCheck restores core's health-check variables when the test ends.
func keepHealthCheck(t *testing.T) {
	probe, reply, threshold := core.HealthCheckProbeInterval, core.HealthCheckReplyTimeout, core.HealthCheckThreshold
	t.Cleanup(func() { setHealthCheck(probe, reply, threshold) })
}

// TestGovppConnectLoopWaitsBeforeEveryConnectAndKeepsTrying checks R2: core calls
// WaitReady before every Connect, goes on past its default number of attempts when
// given more, and reports Connected once a Connect succeeds.
func TestGovppConnectLoopWaitsBeforeEveryConnectAndKeepsTrying(t *testing.T) {
	failures := core.DefaultMaxReconnectAttempts + 2
	obs, _ := observeSim(t, failures)
	conn, events, err := connectCore(obs)
	if err != nil {
		t.Fatalf("%s: %v", govppChanged("AsyncConnect (it failed at once)"), err)
	}
	defer conn.Disconnect()
	awaitState(t, events, core.Connected, 10*time.Second, govppChanged("the connection loop (no Connected after failed attempts)"))
	calls, _ := obs.snapshot()
	var want []string
	for range failures {
		want = append(want, "wait", "connect-failed")
	}
	want = append(want, "wait", "connect")
	if got := calls[:min(len(calls), len(want))]; !slices.Equal(got, want) {
		t.Errorf("%s: calls %v, want %v", govppChanged("how the connection loop drives the adapter (WaitReady before every Connect)"),
			calls, want)
	}
}

// TestGovppConnectLoopIntervalZeroMeansItsDefault checks the other half of R2: an
// interval of 0 makes core pause its default between attempts (which is why the plugin
// passes coreConnectInterval), and coreConnectInterval does not.
func TestGovppConnectLoopIntervalZeroMeansItsDefault(t *testing.T) {
	pause := func(interval time.Duration) time.Duration {
		obs, _ := observeSim(t, 1)
		conn, events, err := core.AsyncConnect(obs, coreConnectAttempts, interval)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Disconnect()
		awaitState(t, events, core.Connected, 10*time.Second, govppChanged("the connection loop"))
		calls, at := obs.snapshot()
		if len(calls) < 3 || calls[1] != "connect-failed" || calls[2] != "wait" {
			t.Fatalf("%s: calls %v", govppChanged("how the connection loop drives the adapter"), calls)
		}
		return at[2].Sub(at[1])
	}
	if got := pause(0); got < core.DefaultReconnectInterval*8/10 {
		t.Errorf("%s: interval 0 paused %v, not core.DefaultReconnectInterval (%v); coreConnectInterval may no longer be needed",
			govppChanged("what an AsyncConnect interval of 0 means"), got, core.DefaultReconnectInterval)
	}
	if got := pause(coreConnectInterval); got >= core.DefaultReconnectInterval {
		t.Errorf("%s: interval %v paused %v", govppChanged("the AsyncConnect interval"), coreConnectInterval, got)
	}
}

// TestGovppHealthCheckReadsItsGlobalsAndDisconnectsOnceBeforeReconnecting checks R1
// and R3: the health-check variables written after the package was loaded (as Init
// writes them) pace the probes of a new connection; a healthy connection is never
// disconnected; probes that time out make core call Disconnect once and then
// reconnect through WaitReady and Connect; Connection.Disconnect calls it once more.
func TestGovppHealthCheckReadsItsGlobalsAndDisconnectsOnceBeforeReconnecting(t *testing.T) {
	keepHealthCheck(t)
	setHealthCheck(50*time.Millisecond, 100*time.Millisecond, 1)
	obs, sim := observeSim(t, 0)
	conn, events, err := connectCore(obs)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	awaitState(t, events, core.Connected, 10*time.Second, "first connection")

	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "five health probes answered", func() bool { return sim.MessageCount("control_ping") >= 5 })
	if n := obs.count("disconnect"); n != 0 {
		t.Fatalf("%s: %d Disconnect calls while VPP answered every probe", govppChanged("when core disconnects the adapter"), n)
	}

	// Probes go unanswered until core, having given up, waits to reconnect. With
	// govpp's default variables the verdict takes 3 probes of 1 s; with the values
	// written above 2 of 50 ms.
	obs.mu.Lock()
	obs.onWait = func() { _ = sim.DelayMessage("control_ping", 0) }
	obs.mu.Unlock()
	if err := sim.DelayMessage("control_ping", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	awaitState(t, events, core.NotResponding, 3*time.Second,
		govppChanged("the reading of core.HealthCheck* (the values written at run time did not pace the probes)"))
	if took := time.Since(start); took >= 1500*time.Millisecond {
		t.Errorf("%s: the verdict took %v", govppChanged("the reading of core.HealthCheck*"), took)
	}
	awaitState(t, events, core.Connected, 10*time.Second, govppChanged("the reconnect after a health-check verdict"))

	calls, _ := obs.snapshot()
	i := slices.Index(calls, "disconnect")
	if want := []string{"disconnect", "wait", "connect"}; i < 0 || len(calls) < i+3 || !slices.Equal(calls[i:i+3], want) {
		t.Errorf("%s: calls %v, want %v after the first connection", govppChanged("the Disconnect before core's reconnect (R3)"), calls, want)
	}
	before := obs.count("disconnect")
	if before != 1 {
		t.Errorf("%s: %d Disconnect calls for one verdict, want 1 (calls %v)", govppChanged("core's disconnect count (R3)"), before, calls)
	}
	conn.Disconnect()
	if n := obs.count("disconnect"); n != before+1 {
		calls, _ := obs.snapshot()
		t.Errorf("%s: Connection.Disconnect made %d Disconnect calls, want 1 (calls %s)",
			govppChanged("core's disconnect count on close (R3)"), n-before, strings.Join(calls, " "))
	}
}

// TestGovppChannelsWorkAfterTheTransportReconnectsUnderneath checks R4: after VPP
// dropped the connection and the transport connected again without core being told,
// a channel opened before carries requests again and core reported nothing.
func TestGovppChannelsWorkAfterTheTransportReconnectsUnderneath(t *testing.T) {
	keepHealthCheck(t)
	setHealthCheck(time.Hour, time.Hour, 1) // core's probe must not notice the loss
	obs, sim := observeSim(t, 0)
	conn, events, err := connectCore(obs)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	awaitState(t, events, core.Connected, 10*time.Second, "first connection")
	ch, err := NewChannel(conn, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ping(t, ch); err != nil {
		t.Fatalf("ping before the loss: %v", err)
	}
	sim.DropConnections()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the transport connected again", func() bool { return obs.VppAPI.Connect() == nil })
	if err := ping(t, ch); err != nil {
		t.Errorf("%s: ping after the transport reconnected: %v", govppChanged("channels across a reconnect of the transport underneath core (R4)"), err)
	}
	select {
	case ev := <-events:
		t.Errorf("%s: core reported %v (%v)", govppChanged("what core notices of a reconnect underneath it (R4)"), ev.State, ev.Error)
	default:
	}
}

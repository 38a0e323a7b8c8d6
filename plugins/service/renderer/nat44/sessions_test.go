package nat44

import (
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
)

// vpp is a running simulator with a govpp connection and channel to it.
type vpp struct {
	sim  *vppsim.Sim
	conn *core.Connection
	ch   govppapi.Channel
}

// startVPP starts a simulator; enableNAT enables NAT44 directly (the session
// tests inject sessions, which needs it), else the NAT descriptors enable it.
func startVPP(t tb, enableNAT bool) *vpp { return startVPPWith(t, enableNAT, vppsim.Options{}) }

// startVPPWith is startVPP with simulator options (the socket path is chosen here).
func startVPPWith(t tb, enableNAT bool, opts vppsim.Options) *vpp {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	opts.SocketPath = sock
	sim, err := vppsim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	ch.SetReplyTimeout(2 * time.Second)
	if !enableNAT {
		return &vpp{sim: sim, conn: conn, ch: ch}
	}
	if err := ch.SendRequest(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}).ReceiveReply(&nat44_ed.Nat44EdPluginEnableDisableReply{}); err != nil {
		t.Fatal(err)
	}
	return &vpp{sim: sim, conn: conn, ch: ch}
}

// VPP's clock in these tests: VPP has been up for ~11.5 days, far longer than the
// agent, so nothing may depend on the agent's start time.
const vppNow = 1_000_000

// session is a session last heard ago seconds before vppNow; sinceKnown says whether
// VPP reports time_since_last_heard (else 0, and only last_heard tells the age).
func session(proto uint8, inside, ext string, vrf uint32, ago uint64, sinceKnown bool) vppsim.Session {
	s := vppsim.Session{
		Protocol: proto, InsideAddr: netip.MustParseAddrPort(inside), OutsideAddr: netip.MustParseAddrPort(inside),
		ExtHostAddr: netip.MustParseAddrPort(ext), InsideVRF: vrf, OutsideVRF: vrf, LastHeard: vppNow - ago,
	}
	if sinceKnown {
		s.TimeSinceLastHeard = ago
	}
	return s
}

func TestIdleSessionsAreDeletedOnVPPsClock(t *testing.T) {
	v := startVPP(t, true)
	sessions := map[string]vppsim.Session{
		"tcp idle 4h":            session(6, "10.1.1.3:80", "10.1.2.9:40000", 2, 4*3600, true),
		"tcp quiet 10min":        session(6, "10.1.1.3:81", "10.1.2.9:40001", 2, 600, true),
		"udp idle 10min":         session(17, "10.1.1.3:53", "10.1.2.9:40002", 2, 600, true),
		"udp fresh":              session(17, "10.1.1.4:53", "10.1.2.9:40003", 2, 30, true),
		"udp idle by last_heard": session(17, "10.1.1.4:54", "10.1.2.9:40004", 2, 1200, false),
		"icmp fresh":             session(1, "192.168.16.10:7", "8.8.8.8:7", 0, 5, true),
		"tcp idle twice-NAT session": func() vppsim.Session {
			s := session(6, "10.1.1.4:80", "10.1.2.9:40005", 2, 5*3600, true)
			s.TwiceNAT = true
			return s
		}(),
	}
	for name, s := range sessions {
		if err := v.sim.InjectSession(s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, envOptions{svcConf: &config.Config{CleanupIdleNATSessions: true, ServiceLocalEndpointWeight: 1}})
	e.rndr.GoVPPChan, e.rndr.Stats = v.ch, reg
	if err := e.rndr.sessionMetrics.register(reg); err != nil {
		t.Fatal(err)
	}

	res, err := e.rndr.cleanupIdleSessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := cleanupResult{tcp: 3, other: 4, deletedTCP: 2, deletedOther: 2}
	if res != want {
		t.Errorf("pass result %+v, want %+v", res, want)
	}
	var left []string
	for _, s := range v.sim.Sessions() {
		for name, inj := range sessions {
			if inj.InsideAddr == s.InsideAddr && inj.Protocol == s.Protocol {
				left = append(left, name)
			}
		}
	}
	slices.Sort(left)
	if wantLeft := []string{"icmp fresh", "tcp quiet 10min", "udp fresh"}; !slices.Equal(left, wantLeft) {
		t.Errorf("sessions left %q, want %q", left, wantLeft)
	}
	metrics := map[string]float64{
		`contiv_nat_sessions{proto="tcp"}`:                 3,
		`contiv_nat_sessions{proto="other"}`:               4,
		`contiv_nat_sessions_deleted_total{proto="tcp"}`:   2,
		`contiv_nat_sessions_deleted_total{proto="other"}`: 2,
		`contiv_nat_session_delete_errors_total`:           0,
	}
	got := gather(t, reg)
	for name, v := range metrics {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}

	// A second pass finds nothing more to delete.
	if res, err := e.rndr.cleanupIdleSessions(context.Background()); err != nil || res.deletedTCP+res.deletedOther != 0 {
		t.Errorf("second pass: %+v, %v", res, err)
	}
}

func TestFailedSessionDeletesAreCounted(t *testing.T) {
	v := startVPP(t, true)
	for _, s := range []vppsim.Session{
		session(17, "10.1.1.3:53", "10.1.2.9:1", 2, 900, true),
		session(17, "10.1.1.3:54", "10.1.2.9:2", 2, 900, true),
	} {
		if err := v.sim.InjectSession(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.sim.FailMessage("nat44_del_session", -6, 1); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, envOptions{})
	e.rndr.GoVPPChan = v.ch
	if err := e.rndr.sessionMetrics.register(reg); err != nil {
		t.Fatal(err)
	}
	res, err := e.rndr.cleanupIdleSessions(context.Background())
	if err == nil || res.deleteErrors != 1 || res.deletedOther != 1 {
		t.Errorf("pass %+v, err %v; want one failed and one deleted session", res, err)
	}
	if got := gather(t, reg)["contiv_nat_session_delete_errors_total"]; got != 1 {
		t.Errorf("delete errors counter %v", got)
	}
}

func TestCleanupRunsUntilClose(t *testing.T) {
	v := startVPP(t, true)
	if err := v.sim.InjectSession(session(17, "10.1.1.3:53", "10.1.2.9:1", 2, 900, true)); err != nil {
		t.Fatal(err)
	}
	clk := testkit.NewClockAt(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	conf := &config.Config{CleanupIdleNATSessions: true, ServiceLocalEndpointWeight: 1, OtherNATSessionTimeout: 5}
	e := newEnv(t, envOptions{svcConf: conf})
	e.rndr.GoVPPChan, e.rndr.Stats, e.rndr.Clock = v.ch, prometheus.NewRegistry(), clk
	if err := e.rndr.AfterInit(); err != nil {
		t.Fatal(err)
	}
	// Nothing happens before the first period (otherNATSessionTimeout) is over.
	clk.AwaitWaiters(t, 1) // the cleanup's ticker
	clk.Step(5*time.Minute - time.Second)
	if n := v.sim.MessageCount("nat44_user_dump"); n != 0 {
		t.Fatalf("cleanup ran before its period: %d dumps", n)
	}
	clk.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the idle session deleted", func() bool { return len(v.sim.Sessions()) == 0 })
	if err := e.rndr.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the cleanup goroutine: later periods do nothing.
	dumps := v.sim.MessageCount("nat44_user_dump")
	clk.Step(time.Hour)
	if after := v.sim.MessageCount("nat44_user_dump"); after != dumps {
		t.Errorf("cleanup still running after Close: %d -> %d dumps", dumps, after)
	}
}

func TestCleanupNeedsTheOptionAndAChannel(t *testing.T) {
	v := startVPP(t, true)
	clk := testkit.NewClockAt(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, envOptions{}) // cleanupIdleNATSessions off
	e.rndr.GoVPPChan, e.rndr.Clock = v.ch, clk
	if err := e.rndr.AfterInit(); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Hour)
	// Disabled: no ticker on the clock, no dump (the session goroutine runs for the
	// purges of stale UDP sessions only).
	if n := v.sim.MessageCount("nat44_user_dump"); n != 0 || clk.HasWaiters() {
		t.Errorf("cleanup started although disabled: %d dumps", n)
	}
	on := newEnv(t, envOptions{svcConf: &config.Config{CleanupIdleNATSessions: true, ServiceLocalEndpointWeight: 1}})
	if err := on.rndr.AfterInit(); err != nil || on.rndr.stopCleanup != nil {
		t.Errorf("without a channel: err %v, started %v", err, on.rndr.stopCleanup != nil)
	}
	_ = e.rndr.Close()
	_ = on.rndr.Close()
}

// gather returns the registry's counters and gauges by "name{labels}".
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=\"" + l.GetValue() + "\"}"
			}
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestSessionsOfAUserInTwoVRFsAreCountedAndDeletedOnce: VPP's session dump ignores
// vrf_id, so an inside address that is a NAT user in two VRFs returns all its sessions
// for each of them. Each session must be counted once and deleted in its own VRF,
// without failed deletes in the other.
func TestSessionsOfAUserInTwoVRFsAreCountedAndDeletedOnce(t *testing.T) {
	v := startVPP(t, true)
	for _, s := range []vppsim.Session{
		session(17, "10.1.1.3:53", "10.1.2.9:40000", 0, 900, true),
		session(17, "10.1.1.3:54", "10.1.2.9:40001", 2, 900, true),
		session(17, "10.1.1.3:55", "10.1.2.9:40002", 2, 10, true),
	} {
		if err := v.sim.InjectSession(s); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, envOptions{})
	e.rndr.GoVPPChan = v.ch
	if err := e.rndr.sessionMetrics.register(reg); err != nil {
		t.Fatal(err)
	}
	res, err := e.rndr.cleanupIdleSessions(context.Background())
	if want := (cleanupResult{other: 3, deletedOther: 2}); err != nil || res != want {
		t.Errorf("pass %+v, %v; want %+v", res, err, want)
	}
	if left := v.sim.Sessions(); len(left) != 1 || left[0].InsideAddr.Port() != 55 {
		t.Errorf("sessions left %+v, want the fresh one", left)
	}
	got := gather(t, reg)
	if got[`contiv_nat_sessions{proto="other"}`] != 3 || got["contiv_nat_session_delete_errors_total"] != 0 {
		t.Errorf("metrics %v", got)
	}
}

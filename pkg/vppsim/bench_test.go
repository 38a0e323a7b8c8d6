package vppsim

import (
	"path/filepath"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"
)

// lbRequest is the LB mapping of service i with n backends.
func lbRequest(i, n int) *nat44_ed.Nat44AddDelLbStaticMapping {
	locals := make([]nat44_ed.Nat44LbAddrPort, n)
	for k := range locals {
		locals[k] = nat44_ed.Nat44LbAddrPort{Addr: [4]byte{10, 1, byte(k), byte(i % 250)}, Port: 8080, Probability: uint8(100 / n)}
	}
	return &nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_SELF_TWICE_NAT,
		ExternalAddr: [4]byte{10, 96, byte(i >> 8), byte(i)}, ExternalPort: 80, Protocol: 6, Tag: "svc",
		LocalNum: uint32(n), Locals: locals}
}

// programServices sends n LB mappings pipelined over one channel and
// checks every reply.
func programServices(tb testing.TB, ch api.Channel, services, backends int) {
	tb.Helper()
	ctxs := make(chan api.RequestCtx, 1024)
	go func() {
		for i := range services {
			ctxs <- ch.SendRequest(lbRequest(i, backends))
		}
		close(ctxs)
	}()
	rep := &nat44_ed.Nat44AddDelLbStaticMappingReply{}
	for c := range ctxs {
		if err := c.ReceiveReply(rep); err != nil {
			tb.Fatalf("lb mapping: %v", err)
		}
	}
}

func startForBench(tb testing.TB) (*Sim, api.Channel) {
	tb.Helper()
	sim, ch := startForBenchNICs(tb, []string{nic1})
	if err := ch.SendRequest(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}).ReceiveReply(&nat44_ed.Nat44EdPluginEnableDisableReply{}); err != nil {
		tb.Fatal(err)
	}
	return sim, ch
}

// startForBenchNICs starts a simulator with the NICs and a buffered
// channel to it.
func startForBenchNICs(tb testing.TB, nics []string) (*Sim, api.Channel) {
	tb.Helper()
	dir := tb.TempDir()
	sock := filepath.Join(dir, "api.sock")
	// The stats segment is on, as in vpp-sim: the forwarding benchmarks
	// include the cost of its counters.
	sim, err := New(Options{SocketPath: sock, StatsSocketPath: filepath.Join(dir, "stats.sock"), NICs: nics})
	if err != nil {
		tb.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sim.Close() })
	_, ch := connectForBench(tb, sock)
	return sim, ch
}

// connectForBench connects a govpp client with a buffered channel.
func connectForBench(tb testing.TB, sock string) (*core.Connection, api.Channel) {
	tb.Helper()
	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Disconnect)
	ch, err := conn.NewAPIChannelBuffered(1024, 1024)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(ch.Close)
	ch.SetReplyTimeout(10 * time.Second)
	return conn, ch
}

// TestProgram10kServicesPipelined programs 10k services with 10 backends
// each; the benchmark target is 1 s without the race detector.
func TestProgram10kServicesPipelined(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	sim, ch := startForBench(t)
	sim.ResetMessageCounts()
	start := time.Now()
	programServices(t, ch, 10000, 10)
	elapsed := time.Since(start)
	if n := len(sim.NAT().LBMappings); n != 10000 {
		t.Fatalf("%d LB mappings, want 10000", n)
	}
	t.Logf("10k services x 10 backends: %v, %d messages", elapsed, sim.TotalMessageCount())
	if got := sim.MessageCount("nat44_add_del_lb_static_mapping"); got != 10000 {
		t.Errorf("message count %d", got)
	}
	got := dump[nat44_ed.Nat44LbStaticMappingDetails](t, ch, &nat44_ed.Nat44LbStaticMappingDump{})
	if len(got) != 10000 || got[9999].LocalNum != 10 {
		t.Errorf("dump returned %d mappings", len(got))
	}
}

func BenchmarkProgram10kServices(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		_, ch := startForBench(b)
		b.StartTimer()
		programServices(b, ch, 10000, 10)
	}
}

package govppmux

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux/vppsock"
)

// simProcessEnv names the socket a re-executed test binary serves the simulator on.
const simProcessEnv = "CONTIV_GOVPPMUX_BENCH_SIM_SOCKET"

// runSimProcess serves the simulator on sock until stdin closes (the benchmark's
// end); it is the main of the simulator process.
func runSimProcess(sock string) int {
	l := logrus.New()
	l.SetOutput(io.Discard)
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, Log: l})
	if err == nil {
		err = sim.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "simulator:", err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = sim.Close()
	return 0
}

// startSimProcess runs the simulator in a child process (the test binary itself), so
// that the CPU time getrusage reports for this process is the client's alone, as in
// production where VPP is another process. It returns the socket path.
func startSimProcess(b *testing.B) string {
	b.Helper()
	sock, _ := startSimProcessCmd(b)
	return sock
}

// startSimProcessCmd is startSimProcess for any test, also returning the process (a
// test can stop it with SIGSTOP, as a hung VPP).
func startSimProcessCmd(b testing.TB) (string, *exec.Cmd) {
	b.Helper()
	sock := filepath.Join(b.TempDir(), "api.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), simProcessEnv+"="+sock)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a test may have stopped it
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	testkit.Eventually(b, 10*time.Second, "the simulator process's socket", func() error {
		_, err := os.Stat(sock)
		return err
	})
	return sock, cmd
}

// benchConn connects govpp's core over the transport sc.
func benchConn(b *testing.B, sock, sc string) (*core.Connection, govppapi.Channel, any) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.BinAPISocketPath, cfg.SocketClient = sock, sc
	tr, err := NewTransport(cfg)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := core.Connect(tr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Disconnect)
	ch, err := conn.NewAPIChannelBuffered(512, 512)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ch.Close)
	ch.SetReplyTimeout(10 * time.Second)
	return conn, ch, tr
}

// cpuTime returns the user + system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lbCalls returns n add (or delete) requests of LB static mappings with 10 locals
// each, as the NAT plugin sends them for a Service port with 10 endpoints.
func lbCalls(n int, isAdd bool) []Call {
	calls := make([]Call, n)
	for i := range calls {
		ext := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).As4()
		locals := make([]nat44_ed.Nat44LbAddrPort, 10)
		for k := range locals {
			locals[k] = nat44_ed.Nat44LbAddrPort{Addr: [4]byte{10, 1, byte(k), byte(i)}, Port: 8080, Probability: 1}
		}
		calls[i] = Call{
			Request: &nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: isAdd, Flags: nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY,
				ExternalAddr: ext, ExternalPort: uint16(80 + i>>16), Protocol: 6, Tag: "bench",
				LocalNum: uint32(len(locals)), Locals: locals},
			Reply: &nat44_ed.Nat44AddDelLbStaticMappingReply{},
		}
	}
	return calls
}

// BenchmarkTransportPipeline sends batches of 100,000 nat44_add_del_lb_static_mapping
// (10 locals each; adds and deletes alternate) through govpp's core and each transport
// with PipelineEach at windows 64, 128 and 256, to a simulator in its own process: on
// a channel of govpp's core ("channel": request/reply per message) and on a channel
// as the plugin hands them out ("pipe": over a stream, at window 256). One op is one
// batch; msgs/s, CPU (getrusage, this process only) and allocations are reported per
// message, and for vppsock the messages per write syscall.
func BenchmarkTransportPipeline(b *testing.B) {
	const batch = 100_000
	sock := startSimProcess(b)
	adds, dels := lbCalls(batch, true), lbCalls(batch, false)
	type variant struct {
		how    string
		window int
	}
	variants := []variant{{"channel", 64}, {"channel", 128}, {"channel", 256}, {"pipe", 256}}
	for _, sc := range transports {
		for _, v := range variants {
			window := v.window
			b.Run(fmt.Sprintf("%s/%s/window=%d", sc, v.how, window), func(b *testing.B) {
				conn, ch, tr := benchConn(b, sock, sc)
				if v.how == "pipe" {
					var err error
					if ch, err = NewChannel(conn, 10*time.Second); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(ch.Close)
				}
				if err := ch.SendRequest(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}).
					ReceiveReply(&nat44_ed.Nat44EdPluginEnableDisableReply{}); err != nil {
					b.Logf("enable NAT: %v (already enabled)", err)
				}
				var before vppsock.Stats
				if vs, ok := tr.(*vppsock.Client); ok {
					before = vs.Stats()
				}
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := range b.N {
					calls := adds
					if i%2 == 1 {
						calls = dels
					}
					for k, err := range PipelineEach(ch, window, calls) {
						if err != nil {
							b.Fatalf("message %d: %v", k, err)
						}
					}
				}
				b.StopTimer()
				cpu := cpuTime() - cpu0
				runtime.ReadMemStats(&ms1)
				msgs := float64(b.N * batch)
				b.ReportMetric(msgs/b.Elapsed().Seconds(), "msgs/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/msgs, "cpu-ns/msg")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/msgs, "allocs/msg")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/msgs, "B/msg")
				if vs, ok := tr.(*vppsock.Client); ok {
					st := vs.Stats()
					b.ReportMetric(float64(st.Messages-before.Messages)/float64(max(1, st.Writes-before.Writes)), "msgs/write")
				}
				if b.N%2 == 1 { // leave the simulator empty for the next run
					for _, err := range PipelineEach(ch, window, dels) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkTransportPingRoundTrip measures one control_ping request and its reply
// through govpp's core and each transport, one at a time, to a simulator in its own
// process: p50 and p99 of the round trip.
func BenchmarkTransportPingRoundTrip(b *testing.B) {
	sock := startSimProcess(b)
	for _, sc := range transports {
		b.Run(sc, func(b *testing.B) {
			_, ch, _ := benchConn(b, sock, sc)
			rtts := make([]time.Duration, 0, b.N)
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := ch.SendRequest(&memclnt.ControlPing{}).ReceiveReply(&memclnt.ControlPingReply{}); err != nil {
					b.Fatal(err)
				}
				rtts = append(rtts, time.Since(t0))
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&ms1)
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(rtts[len(rtts)*99/100].Nanoseconds())/1e3, "p99-us")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N), "allocs/msg")
		})
	}
}

// BenchmarkTransportRaw isolates the transports from govpp's core: one goroutine
// sends pre-encoded nat44_add_del_lb_static_mapping requests (10 locals) straight
// through adapter.SendMsg, keeping window requests in flight, and the message
// callback counts the replies; the simulator runs in its own process. Adds and
// deletes alternate per batch of 100,000. CPU and allocations are per message.
func BenchmarkTransportRaw(b *testing.B) {
	const batch = 100_000
	sock := startSimProcess(b)
	for _, sc := range transports {
		for _, window := range []int{64, 256} {
			b.Run(fmt.Sprintf("%s/window=%d", sc, window), func(b *testing.B) {
				_, ch, _ := benchConn(b, sock, sc) // enables NAT through core, then set aside
				_ = ch.SendRequest(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}).
					ReceiveReply(&nat44_ed.Nat44EdPluginEnableDisableReply{})
				cfg := DefaultConfig()
				cfg.BinAPISocketPath, cfg.SocketClient = sock, sc
				tr, err := NewTransport(cfg)
				if err != nil {
					b.Fatal(err)
				}
				replies := make(chan struct{}, window)
				tr.SetMsgCallback(func(uint16, []byte) { replies <- struct{}{} })
				if err := tr.Connect(); err != nil {
					b.Fatal(err)
				}
				defer tr.Disconnect()
				id, err := tr.GetMsgID("nat44_add_del_lb_static_mapping", (&nat44_ed.Nat44AddDelLbStaticMapping{}).GetCrcString())
				if err != nil {
					b.Fatal(err)
				}
				encode := func(calls []Call) [][]byte {
					out := make([][]byte, len(calls))
					for i, c := range calls {
						if out[i], err = codec.EncodeMsg(c.Request, id); err != nil {
							b.Fatal(err)
						}
					}
					return out
				}
				adds, dels := encode(lbCalls(batch, true)), encode(lbCalls(batch, false))
				run := func(msgs [][]byte) {
					inflight := 0
					for i, m := range msgs {
						if inflight == window {
							<-replies
							inflight--
						}
						if err := tr.SendMsg(uint32(i+1), m); err != nil {
							b.Fatal(err)
						}
						inflight++
					}
					for ; inflight > 0; inflight-- {
						<-replies
					}
				}
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := range b.N {
					if i%2 == 0 {
						run(adds)
					} else {
						run(dels)
					}
				}
				b.StopTimer()
				cpu := cpuTime() - cpu0
				runtime.ReadMemStats(&ms1)
				msgs := float64(b.N * batch)
				b.ReportMetric(msgs/b.Elapsed().Seconds(), "msgs/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/msgs, "cpu-ns/msg")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/msgs, "allocs/msg")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/msgs, "B/msg")
				if b.N%2 == 1 {
					run(dels)
				}
			})
		}
	}
}

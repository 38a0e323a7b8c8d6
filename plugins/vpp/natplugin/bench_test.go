package natplugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// services builds n DNat44 values, each one mapping (a cluster IP port)
// with backends locals, plus the global NAT configuration they need.
func services(n, backends int) map[string]proto.Message {
	vals := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{Forwarding: true}}
	for i := range n {
		locals := make([]*nat.DNat44_StaticMapping_LocalIP, backends)
		for k := range locals {
			locals[k] = lip(fmt.Sprintf("10.%d.%d.%d", 1+k, i>>8, i&0xff), 8080, 0, 1)
		}
		label := fmt.Sprintf("ns%d/svc%d", i%50, i)
		vals[nat.DNAT44Key(label)] = &nat.DNat44{Label: label, StMappings: []*nat.DNat44_StaticMapping{{
			ExternalIp: fmt.Sprintf("10.96.%d.%d", i>>8, i&0xff), ExternalPort: 80, Protocol: nat.DNat44_TCP,
			TwiceNat: nat.DNat44_StaticMapping_SELF, LocalIps: locals}}}
	}
	return vals
}

// programServices commits the services through a real scheduler with the
// NAT plugin, over the socket, and returns the time the commit took and the
// messages VPP received.
func programServices(tb testing.TB, n, backends int) (time.Duration, int64) {
	d, m, _ := programServicesPeak(tb, n, backends)
	return d, m
}

// programServicesPeak is programServices that also returns how many requests the DNAT
// pipeline had in flight at most.
func programServicesPeak(tb testing.TB, n, backends int) (time.Duration, int64, int) {
	tb.Helper()
	e := newEnv(tb)
	a := newAgent(tb, e.conn)
	vals := services(n, backends)
	e.sim.ResetMessageCounts()
	start := time.Now()
	if err := a.commit(context.Background(), vals); err != nil {
		tb.Fatal(err)
	}
	elapsed := time.Since(start)
	msgs := e.sim.TotalMessageCount()
	if got := len(e.sim.NAT().LBMappings); got != n {
		tb.Fatalf("%d LB mappings in VPP, want %d", got, n)
	}
	return elapsed, msgs, a.nat.dnat.pipe.peak
}

func TestProgramManyServicesThroughScheduler(t *testing.T) {
	const n = 300
	_, msgs, peak := programServicesPeak(t, n, 10)
	// one message per service, plus enabling NAT and forwarding
	if msgs != n+2 {
		t.Errorf("%d messages for %d services, want %d", msgs, n, n+2)
	}
	// The services are not programmed one round trip after the other: the scheduler
	// starts their creations together and the requests stay in flight.
	if peak < window {
		t.Errorf("at most %d requests in flight, want the full window of %d", peak, window)
	}
}

// BenchmarkProgram10kDNAT programs 10k services with 10 backends each from
// empty in one transaction: real scheduler, the NAT descriptors, the
// simulator over the socket. Reported: time per commit and the messages VPP
// received (vpp-msgs/op).
func BenchmarkProgram10kDNAT(b *testing.B) {
	var total time.Duration
	var msgs int64
	for range b.N {
		b.StopTimer()
		func() {
			// each iteration's simulator and agent are torn down at its end
			sub := &subTB{TB: b}
			defer sub.cleanup()
			b.StartTimer()
			d, m := programServices(sub, 10000, 10)
			b.StopTimer()
			total += d
			msgs = m
		}()
	}
	b.ReportMetric(float64(msgs), "vpp-msgs/op")
	b.ReportMetric(total.Seconds()/float64(b.N), "commit-s/op")
}

// subTB runs the Cleanup functions registered during one benchmark
// iteration at the end of that iteration instead of the benchmark's.
type subTB struct {
	testing.TB
	fns []func()
}

func (s *subTB) Cleanup(f func()) { s.fns = append(s.fns, f) }

func (s *subTB) cleanup() {
	for i := len(s.fns) - 1; i >= 0; i-- {
		s.fns[i]()
	}
}

// BenchmarkResync10kDNAT measures a full resync of 10k programmed services
// (10 backends each) that finds nothing to change: Retrieve dumps and
// regroups every mapping, the scheduler compares. Reported: time per
// resync and the messages VPP received.
func BenchmarkResync10kDNAT(b *testing.B) {
	e := newEnv(b)
	a := newAgent(b, e.conn)
	vals := services(10000, 10)
	if err := a.commit(context.Background(), vals); err != nil {
		b.Fatal(err)
	}
	full := kvapi.WithResync(context.Background(), kvapi.FullResync, false)
	e.sim.ResetMessageCounts()
	b.ResetTimer()
	for range b.N {
		if err := a.commit(full, vals); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	counts := e.sim.MessageCounts()
	for m := range counts {
		if !strings.HasSuffix(m, "_dump") && !strings.HasSuffix(m, "_get") && m != "control_ping" && m != "nat44_show_running_config" {
			b.Fatalf("idle resync sent %s", m)
		}
	}
	b.ReportMetric(float64(e.sim.TotalMessageCount())/float64(b.N), "vpp-msgs/op")
}

// processCPU returns the CPU time (user + system) the process has used so far. On the
// shared machine it says more than wall time; it counts every goroutine, the
// simulator's and the garbage collector's included.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatencies reports the median and the 99th percentile of the commit times.
func reportLatencies(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkCommitOneEndpointsChange commits one Endpoints change of one service (one
// backend replaced by another) through the real scheduler and the NAT descriptors into
// the simulator over its socket, with many services held:
//   - lb: 10,000 services, each one LB mapping of 10 locals (one
//     nat44_lb_static_mapping_add_del_local in, one out);
//   - nodeport: 1,000 NodePort services of 50 nodes, each 101 LB mappings of 10 locals
//     (the cluster IP and 2 node IPs x 50 nodes: 202 local changes);
//   - nodeport-rendered: the same built as the service renderer builds them (the
//     mappings of a service share one list of locals, in the old value and in the new).
//
// Reported: time per commit (mean, p50, p99), CPU time of the whole process per commit
// (scheduler, descriptors, govpp, simulator, GC), VPP messages per commit.
func BenchmarkCommitOneEndpointsChange(b *testing.B) {
	moved := func(d *nat.DNat44) *nat.DNat44 {
		c := proto.Clone(d).(*nat.DNat44)
		for _, sm := range c.StMappings {
			sm.LocalIps[0] = lip("10.250.0.1", 8080, 0, 1)
		}
		return c
	}
	movedShared := func(d *nat.DNat44) *nat.DNat44 {
		locals := slices.Clone(d.StMappings[0].LocalIps)
		locals[0] = lip("10.250.0.1", 8080, 0, 1)
		c := &nat.DNat44{Label: d.Label}
		for _, sm := range d.StMappings {
			c.StMappings = append(c.StMappings, &nat.DNat44_StaticMapping{ExternalIp: sm.ExternalIp, ExternalPort: sm.ExternalPort,
				Protocol: sm.Protocol, TwiceNat: sm.TwiceNat, LocalIps: locals})
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		vals  func() (map[string]proto.Message, *nat.DNat44)
		moved func(*nat.DNat44) *nat.DNat44 // nil: moved
	}{
		{"lb", func() (map[string]proto.Message, *nat.DNat44) {
			vals := services(10000, 10)
			return vals, vals[nat.DNAT44Key("ns7/svc4007")].(*nat.DNat44)
		}, nil},
		{"nodeport", func() (map[string]proto.Message, *nat.DNat44) {
			vals := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{Forwarding: true}}
			for s := range 1000 {
				d := nodePortService(s, 50, 10)
				vals[nat.DNAT44Key(d.Label)] = d
			}
			return vals, vals[nat.DNAT44Key("default/np407")].(*nat.DNat44)
		}, nil},
		{"nodeport-rendered", func() (map[string]proto.Message, *nat.DNat44) {
			addrs := make([]string, 10000)
			for i := range addrs {
				addrs[i] = fmt.Sprintf("10.1.%d.%d", i>>8, i&0xff)
			}
			vals := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{Forwarding: true}}
			for s := range 1000 {
				d := nodePortServiceAsRendered(s, 50, 10, addrs)
				vals[nat.DNAT44Key(d.Label)] = d
			}
			return vals, vals[nat.DNAT44Key("default/np407")].(*nat.DNat44)
		}, movedShared},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b)
			a := newAgent(b, e.conn)
			vals, svc := tc.vals()
			if err := a.commit(context.Background(), vals); err != nil {
				b.Fatal(err)
			}
			key := nat.DNAT44Key(svc.Label)
			move := moved
			if tc.moved != nil {
				move = tc.moved
			}
			next := []proto.Message{move(svc), svc}
			e.sim.ResetMessageCounts()
			times := make([]time.Duration, 0, b.N)
			cpu := processCPU(b)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				txn := a.s.StartNBTransaction()
				txn.SetValue(key, next[i%2])
				if _, err := txn.Commit(context.Background()); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(e.sim.TotalMessageCount())/float64(b.N), "vpp-msgs/op")
			reportLatencies(b, times)
		})
	}
}

// clusterServices is the DNat44s of the issue #17 cluster: total services of
// backends endpoints, the first nodePorts of them NodePort services on nodes nodes (101
// mappings each at 50 nodes), plus the global NAT configuration.
func clusterServices(total, nodePorts, nodes, backends int) map[string]proto.Message {
	vals := services(total-nodePorts, backends)
	for s := range nodePorts {
		d := nodePortService(s, nodes, backends)
		d.StMappings[0].ExternalIp = fmt.Sprintf("10.97.%d.%d", s>>8, s&0xff) // not one of services'
		vals[nat.DNAT44Key(d.Label)] = d
	}
	return vals
}

// BenchmarkFirstResync110kMappings is the agent's first resync of the NAT part of the
// issue #17 cluster into an empty VPP: 10,000 services of 10 endpoints, 1,000 of them
// NodePort services of 50 nodes (110,000 static mappings), committed as a full resync
// through the real scheduler and the NAT descriptors into the simulator over its
// socket. Reported: time of the commit, CPU time of the whole process during it
// (scheduler, descriptors, govpp, the simulator, GC), VPP messages.
func BenchmarkFirstResync110kMappings(b *testing.B) {
	var total, cpu time.Duration
	var msgs int64
	full := kvapi.WithResync(context.Background(), kvapi.FullResync, false)
	for range b.N {
		b.StopTimer()
		func() {
			sub := &subTB{TB: b}
			defer sub.cleanup()
			e := newEnv(sub)
			a := newAgent(sub, e.conn)
			vals := clusterServices(10000, 1000, 50, 10)
			e.sim.ResetMessageCounts()
			c0 := processCPU(b)
			start := time.Now()
			b.StartTimer()
			if err := a.commit(full, vals); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			total += time.Since(start)
			cpu += processCPU(b) - c0
			msgs = e.sim.TotalMessageCount()
			if got := len(e.sim.NAT().LBMappings); got != 9000+1000*101 {
				b.Fatalf("%d LB mappings in VPP, want %d", got, 9000+1000*101)
			}
		}()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "commit-s/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(msgs), "vpp-msgs/op")
}

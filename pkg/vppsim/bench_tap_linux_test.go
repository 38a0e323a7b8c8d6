//go:build linux

package vppsim

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
)

// tapPair starts a Linux-mode simulator with two TAPs whose host ends are
// in two new namespaces standing for two pods: A 10.95.1.2/24 (gateway
// 10.95.1.1 on tap0) and B 10.95.2.2/24 (gateway 10.95.2.1 on tap1).
func tapPair(tb testing.TB) (sim *Sim, nsA, nsB string) {
	sim, nsA, nsB, _ = tapPairAPI(tb)
	return sim, nsA, nsB
}

// tapPairAPI is tapPair that also returns a function sending requests to
// the simulator (failing the test on error; rep may be nil).
func tapPairAPI(tb testing.TB) (sim *Sim, nsA, nsB string, do func(req, rep api.Message)) {
	tb.Helper()
	return tapPairAPIWith(tb, nil)
}

// tapPairAPIWith is tapPairAPI with options changed by opt (if not nil).
func tapPairAPIWith(tb testing.TB, opt func(*Options)) (sim *Sim, nsA, nsB string, do func(req, rep api.Message)) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("TAP traffic needs root")
	}
	nsA = fmt.Sprintf("vppsim-ba-%d", os.Getpid())
	nsB = fmt.Sprintf("vppsim-bb-%d", os.Getpid())
	for _, ns := range []string{nsA, nsB} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			tb.Skipf("cannot create a namespace: %v: %s", err, out)
		}
		tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	sock := filepath.Join(tb.TempDir(), "api.sock")
	o := Options{SocketPath: sock, Linux: true}
	if opt != nil {
		opt(&o)
	}
	sim, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sim.Close() })
	_, ch := connectForBench(tb, sock)
	do = func(req, rep api.Message) {
		tb.Helper()
		if rep == nil {
			rep = sim.table.byName[req.GetMessageName()].reply.newMsg()
		}
		if err := ch.SendRequest(req).ReceiveReply(rep); err != nil {
			tb.Fatalf("%s: %v", req.GetMessageName(), err)
		}
	}
	for k, ns := range []string{nsA, nsB} {
		rep := &tapv2.TapCreateV3Reply{}
		do(&tapv2.TapCreateV3{ID: noIndex, UseRandomMac: true,
			HostIfNameSet: true, HostIfName: "eth0", HostNamespaceSet: true, HostNamespace: ns,
			HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix{Address: ip4(fmt.Sprintf("10.95.%d.2", k+1)), Len: 24},
			HostIP4GwSet: true, HostIP4Gw: ip4(fmt.Sprintf("10.95.%d.1", k+1)),
		}, rep)
		do(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: rep.SwIfIndex, IsAdd: true, Prefix: awp(fmt.Sprintf("10.95.%d.1/24", k+1))}, nil)
		do(&interfaces.SwInterfaceSetFlags{SwIfIndex: rep.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, nil)
	}
	return sim, nsA, nsB, do
}

// warmUp sends until a datagram crosses (ARP on both sides resolved).
func warmUp(b testing.TB, tx, rx interface {
	Write([]byte) (int, error)
}, read func(time.Duration) bool) {
	b.Helper()
	for try := 0; try < 50; try++ {
		_, _ = tx.Write([]byte("warm"))
		if read(100 * time.Millisecond) {
			return
		}
	}
	b.Fatal("no datagram crossed the simulator")
}

// BenchmarkTapForwarding measures UDP datagrams per second from pod A to
// pod B through two TAPs and the simulator (routed, TTL, rewrite); the
// sender blasts, the metric counts what arrives.
func BenchmarkTapForwarding(b *testing.B) {
	sim, nsA, nsB := tapPair(b)
	rx := listenIn(b, nsB, "10.95.2.2:5001")
	_ = rx.SetReadBuffer(16 << 20)
	tx := dialIn(b, nsA, "10.95.2.2:5001")
	buf := make([]byte, 2048)
	read := func(d time.Duration) bool {
		_ = rx.SetReadDeadline(time.Now().Add(d))
		_, err := rx.Read(buf)
		return err == nil
	}
	warmUp(b, tx, nil, read)
	payload := make([]byte, 64)
	got := make(chan int)
	go func() {
		n := 0
		for read(300 * time.Millisecond) {
			n++
		}
		got <- n
	}()
	before, _ := sim.InterfaceCounters("tap1")
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	for b.Loop() {
		_, _ = tx.Write(payload)
	}
	sent := time.Since(start)
	n := <-got
	cpu := processCPU() - cpu0
	b.StopTimer()
	after, _ := sim.InterfaceCounters("tap1")
	fwd := after.TxPackets - before.TxPackets
	// The simulator keeps up if it forwarded what the sender wrote in the
	// time the sender took; forwarded-pkts/s is what it moved per second
	// of sending, delivered-% what reached the receiving socket.
	b.ReportMetric(float64(fwd)/sent.Seconds(), "forwarded-pkts/s")
	b.ReportMetric(100*float64(n)/float64(b.N), "delivered-%")
	if cpu > 0 {
		// CPU of the whole process: sender, simulator and receiver.
		b.ReportMetric(float64(fwd)/cpu.Seconds(), "fwd-pkts/cpu-s")
	}
}

// BenchmarkTapPodToPodRTT measures the round trip of a UDP echo between
// two pods through the simulator (two traversals per round trip).
func BenchmarkTapPodToPodRTT(b *testing.B) {
	_, nsA, nsB := tapPair(b)
	srv := listenIn(b, nsB, "10.95.2.2:5002")
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = srv.WriteToUDP(buf[:n], from)
		}
	}()
	cl := dialIn(b, nsA, "10.95.2.2:5002")
	buf := make([]byte, 2048)
	read := func(d time.Duration) bool {
		_ = cl.SetReadDeadline(time.Now().Add(d))
		_, err := cl.Read(buf)
		return err == nil
	}
	warmUp(b, cl, nil, read)
	rtts := make([]time.Duration, 0, 1024)
	lost := 0
	var seq uint64
	msg := make([]byte, 8)
	// echoOf waits for the echo of seq, skipping late echoes of earlier
	// (counted as lost) probes.
	echoOf := func(seq uint64, deadline time.Time) bool {
		for {
			_ = cl.SetReadDeadline(deadline)
			n, err := cl.Read(buf)
			if err != nil {
				return false
			}
			if n == 8 && binary.BigEndian.Uint64(buf[:8]) == seq {
				return true
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		seq++
		binary.BigEndian.PutUint64(msg, seq)
		t0 := time.Now()
		if _, err := cl.Write(msg); err != nil {
			b.Fatal(err)
		}
		if !echoOf(seq, t0.Add(100*time.Millisecond)) {
			// UDP: a datagram may be lost on a loaded machine; count it.
			lost++
			continue
		}
		rtts = append(rtts, time.Since(t0))
	}
	b.StopTimer()
	if len(rtts) == 0 {
		b.Fatal("every echo was lost")
	}
	b.ReportMetric(float64(lost), "lost")
	slices.Sort(rtts)
	b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds()), "median-rtt-µs")
	b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds()), "p99-rtt-µs")
}

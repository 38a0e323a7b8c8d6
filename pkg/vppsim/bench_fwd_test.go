package vppsim

import (
	"testing"
	"time"

	"go.fd.io/govpp/api"
)

// benchNATNode starts a simulator programmed like the NAT tests' node
// (programNATNode) with a no-op TxHook.
func benchNATNode(b *testing.B) *Sim {
	b.Helper()
	sim, ch := startForBenchNICs(b, []string{nic1, nic2})
	programNATNode(func(req, rep api.Message) {
		if rep == nil {
			info := sim.table.byName[req.GetMessageName()]
			rep = info.reply.newMsg()
		}
		if err := ch.SendRequest(req).ReceiveReply(rep); err != nil {
			b.Fatalf("%s: %v", req.GetMessageName(), err)
		}
	}, 0)
	sim.SetTxHook(func(string, []byte) {})
	return sim
}

// clientFrames builds, per client port, the SYN that creates the session
// to the ClusterIP and the ACK that then hits it.
func clientFrames(n int) (syns, acks [][]byte) {
	for k := range n {
		port := uint16(10000 + k)
		syns = append(syns, ethFrame(nic2MAC, pod2MAC, etherTypeIP4, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpSYN))))
		acks = append(acks, ethFrame(nic2MAC, pod2MAC, etherTypeIP4, ipPkt(pod2IP, svcIP, protoTCP, 64, tcpL4(port, svcPort, tcpACK))))
	}
	return syns, acks
}

// benchFlows measures packets through the graph in memory: pod -> ClusterIP
// (LB static mapping, 2 backends), session hit, DNAT, lookup, rewrite and
// transmit, for flows client ports in round robin.
func benchFlows(b *testing.B, flows int) {
	sim := benchNATNode(b)
	syns, acks := clientFrames(flows)
	for _, f := range syns {
		if err := sim.InjectFrame(nic2, f); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(sim.Sessions()); got != flows {
		b.Fatalf("%d sessions, want %d", got, flows)
	}
	before, _ := sim.InterfaceCounters(nic2)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	k := 0
	for b.Loop() {
		if err := sim.InjectFrame(nic2, acks[k]); err != nil {
			b.Fatal(err)
		}
		if k++; k == flows {
			k = 0
		}
	}
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	b.StopTimer()
	after, _ := sim.InterfaceCounters(nic2)
	if sent := after.TxPackets - before.TxPackets; sent < uint64(b.N) {
		b.Fatalf("%d of %d packets forwarded; errors:\n%s", sent, b.N, sim.st.cli("show errors"))
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pkts/s")
	if cpu > 0 {
		// Packets per second of CPU time: what one core does when the
		// process has it (the machine may be shared).
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "pkts/cpu-s")
	}
}

// BenchmarkForwardSessionHitOneFlow: one flow, every packet a session hit.
func BenchmarkForwardSessionHitOneFlow(b *testing.B) { benchFlows(b, 1) }

// BenchmarkForwardSessionHit10kFlows: 10k flows through the LB mapping.
func BenchmarkForwardSessionHit10kFlows(b *testing.B) { benchFlows(b, 10000) }

// TestSessionHitAllocatesNothing pins the 0 allocations per packet of the
// session-hit path.
func TestSessionHitAllocatesNothing(t *testing.T) {
	n := newNATEnv(t, 0)
	n.sim.SetTxHook(func(string, []byte) {})
	syns, acks := clientFrames(1)
	n.inject(nic2, syns[0])
	n.inject(nic2, acks[0])
	allocs := testing.AllocsPerRun(200, func() { _ = n.sim.InjectFrame(nic2, acks[0]) })
	if allocs != 0 {
		t.Errorf("%.1f allocations per packet on the session-hit path, want 0", allocs)
	}
}

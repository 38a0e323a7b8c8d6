package cnat

import (
	"fmt"
	"net"
	"testing"
	"time"

	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// benchServices returns n dual-stack services of 10 endpoints each (IPv4 and IPv6),
// every tenth with a node port.
func benchServices(n int) []*renderer.FlatService {
	out := make([]*renderer.FlatService, n)
	for i := range out {
		var eps []string
		for e := range 10 {
			eps = append(eps, fmt.Sprintf("10.1.%d.%d", i%200, e+2), fmt.Sprintf("fd00:10:1:%x::%x", i%200, e+2))
		}
		svc := webService(eps...)
		svc.ID.Name = fmt.Sprintf("svc-%d", i)
		svc.ClusterIPs = []renderer.Address{addr(fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)), addr(fmt.Sprintf("fd00:10:96::%x", i+1))}
		svc.Ports[0].Port.NodePort = 0
		if i%10 == 0 {
			svc.Ports[0].Port.NodePort = uint16(30000 + i/10)
		}
		out[i] = svc
	}
	return out
}

// BenchmarkResync is the resync of 10,000 services (about 2.6 translations each:
// two cluster IPs, three node IPs on every tenth): the first (a renderer that has
// rendered nothing) and a resync of the same services again (their sets kept).
func BenchmarkResync(b *testing.B) {
	services := benchServices(10000)
	for _, again := range []bool{false, true} {
		b.Run(map[bool]string{false: "first", true: "again"}[again], func(b *testing.B) {
			r, _ := newRendererWith(b, dualConf, true, false)
			ev := &renderer.FlatResyncEventData{NodeIPs: renderer.NewIPAddresses(), FrontendIfs: renderer.NewInterfaces(),
				BackendIfs: renderer.NewInterfaces(), Services: services}
			for _, a := range r.nodeAddrs {
				ev.NodeIPs.Add(a.IP())
			}
			b.ReportAllocs()
			for b.Loop() {
				if !again {
					r.rendered = nil // nothing rendered before
				}
				if err := r.ResyncFlat(st.NewTxn(), ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// nodeJoinCluster is a renderer that resynced 10,000 services (benchServices) on 50
// nodes of two IPs, with its node-port services, the node IPs before and after a 51st
// node joins, and the values it staged.
func nodeJoinCluster(b *testing.B) (r *Renderer, np []*renderer.FlatService, before, joined *renderer.IPAddresses, staged *st.Txn) {
	services := benchServices(10000)
	for _, svc := range services {
		if svc.HasNodePort() {
			np = append(np, svc)
		}
	}
	r, _ = newRendererWith(b, dualConf, true, false)
	ips := func(nodes int) *renderer.IPAddresses {
		a := renderer.NewIPAddresses()
		for n := range nodes {
			a.Add(net.IPv4(192, 168, 16, byte(n+1)))
			a.Add(net.IPv4(192, 168, 17, byte(n+1)))
		}
		return a
	}
	before, joined = ips(50), ips(51)
	staged = st.NewTxn()
	ev := &renderer.FlatResyncEventData{NodeIPs: before, FrontendIfs: renderer.NewInterfaces(), BackendIfs: renderer.NewInterfaces(), Services: services}
	if err := r.ResyncFlat(staged, ev); err != nil {
		b.Fatal(err)
	}
	return r, np, before, joined, staged
}

// benchmarkJoins runs join (and, every other op, the leave), reporting the joins'
// time alone.
func benchmarkJoins(b *testing.B, change func(ips *renderer.IPAddresses), before, joined *renderer.IPAddresses) {
	next := []*renderer.IPAddresses{joined, before}
	b.ReportAllocs()
	i := 0
	var joins time.Duration
	for b.Loop() {
		start := time.Now()
		change(next[i%2])
		if i%2 == 0 {
			joins += time.Since(start)
		}
		i++
	}
	b.ReportMetric(joins.Seconds()/float64((i+1)/2), "join-s/op")
}

// BenchmarkNodeJoin is a node of two IPs joining (and, every other op, leaving) a
// cluster of 50 such nodes with 1,000 node-port services (the scale harness's
// NodePorts): UpdateFlatNodePortServices with every node-port service.
func BenchmarkNodeJoin(b *testing.B) {
	r, np, before, joined, _ := nodeJoinCluster(b)
	benchmarkJoins(b, func(ips *renderer.IPAddresses) {
		if err := r.UpdateFlatNodePortServices(&describedTxn{Txn: st.NewTxn()}, ips, np); err != nil {
			b.Fatal(err)
		}
	}, before, joined)
}

// BenchmarkNodeJoinThroughTheScheduler is BenchmarkNodeJoin with the renderer's
// values committed, as the agent commits them, through a real scheduler and the cnat
// descriptors into the simulator (over a plain govpp channel: its requests are not
// pipelined as the agent's are).
func BenchmarkNodeJoinThroughTheScheduler(b *testing.B) {
	r, np, before, joined, staged := nodeJoinCluster(b)
	node := newTrafficNode(b)
	node.commit(b, staged)
	benchmarkJoins(b, func(ips *renderer.IPAddresses) {
		up := &describedTxn{Txn: st.NewTxn()}
		if err := r.UpdateFlatNodePortServices(up, ips, np); err != nil {
			b.Fatal(err)
		}
		node.commit(b, up.Txn)
	}, before, joined)
}

// BenchmarkResyncReference is the first resync of the scale harness's reference
// services: 10,000 (benchServices), 1,000 node-port services on 50 nodes of two IPs
// (about 110,000 translations).
func BenchmarkResyncReference(b *testing.B) {
	for b.Loop() {
		nodeJoinCluster(b)
	}
}

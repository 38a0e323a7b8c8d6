package cnatplugin

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// translations builds n ClusterIP translations (10.96.x.y:80/TCP) with backends
// paths each on targetPort, in sets of 10 (services of 10 ports).
func translations(n, backends int, targetPort uint32) map[string]proto.Message {
	vals := make(map[string]proto.Message, n/10+1)
	var set *cnatmodel.TranslationSet
	for i := range n {
		paths := make([]*cnatmodel.Path, backends)
		for k := range paths {
			paths[k] = &cnatmodel.Path{Dst: ep(fmt.Sprintf("10.%d.%d.%d", 1+k, i>>8, i&0xff), targetPort)}
		}
		if i%10 == 0 {
			set = &cnatmodel.TranslationSet{Label: fmt.Sprintf("default/svc-%d", i/10)}
			vals[cnatmodel.TranslationSetKey(set.Label)] = set
		}
		set.Translations = append(set.Translations,
			&cnatmodel.Translation{VipAddress: fmt.Sprintf("10.96.%d.%d", i>>8, i&0xff), VipPort: 80, Paths: paths})
	}
	return vals
}

// BenchmarkTranslationBurst commits 1,000 new translations of 10 backends (100 sets) in
// one transaction, then moves every backend port (an in-place update of each, as when
// a node joins), through a real scheduler over the simulator's socket. It reports
// VPP messages per translation changed: one cnat_translation_update each, pipelined.
func BenchmarkTranslationBurst(b *testing.B) {
	const n, backends = 1000, 10
	var msgs int64
	for range b.N {
		b.StopTimer()
		e := newEnv(b)
		e.sim.ResetMessageCounts()
		b.StartTimer()
		for _, port := range []uint32{8080, 9090} {
			if err := e.commit(context.Background(), translations(n, backends, port)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		msgs += e.sim.MessageCount("cnat_translation_update")
		b.StartTimer()
	}
	b.ReportMetric(float64(msgs)/float64(2*n*b.N), "msgs/change")
}

// nodePortSet is the set of a NodePort Service on nodes node IPs: its cluster IP and
// one translation per node IP, all to the same backends (one paths slice shared, as
// the renderer builds them).
func nodePortSet(label string, nodes, backends int, targetPort uint32) *cnatmodel.TranslationSet {
	return nodePortSetOn(label, 0, nodes, backends, targetPort)
}

// nodePortSetOn is nodePortSet of the i-th service: cluster IP 10.96.x.y, node port
// 30000+i.
func nodePortSetOn(label string, i, nodes, backends int, targetPort uint32) *cnatmodel.TranslationSet {
	paths := make([]*cnatmodel.Path, backends)
	for k := range paths {
		paths[k] = &cnatmodel.Path{Dst: ep(fmt.Sprintf("10.1.%d.%d", k/250, k%250+2), targetPort), Src: ep("192.168.16.1", 0)}
	}
	s := &cnatmodel.TranslationSet{Label: label, Translations: []*cnatmodel.Translation{{VipAddress: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), VipPort: 80, Paths: paths}}}
	for n := range nodes {
		s.Translations = append(s.Translations, &cnatmodel.Translation{VipAddress: fmt.Sprintf("192.168.%d.%d", 16+n/250, n%250+1), VipPort: uint32(30000 + i),
			IsRealIp: true, AllocPort: true, Paths: paths})
	}
	return s
}

// BenchmarkNodePortSetCreateAndUpdate creates the set of a NodePort Service on 50
// nodes with 10 backends through the descriptor over the simulator's socket, then
// moves its backends' port (every translation updated), then deletes it: the
// descriptor's cost per translation sent (allocations include the simulator's).
func BenchmarkNodePortSetCreateAndUpdate(b *testing.B) {
	e := newEnv(b)
	d := NewTranslationSetDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: e.raw})
	key := cnatmodel.TranslationSetKey("default/np")
	first, second := nodePortSet("default/np", 50, 10, 8080), nodePortSet("default/np", 50, 10, 9090)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		md, err := d.Create(key, first)
		if err != nil {
			b.Fatal(err)
		}
		if md, err = d.Update(key, first, second, md); err != nil {
			b.Fatal(err)
		}
		if err := d.Delete(key, second, md); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*3*51), "ns/translation-op")
}

// BenchmarkNodeJoin1kNodePorts has 1,000 node-port sets on 50 nodes of two IPs each
// (101 translations, 10 backends) in a real scheduler over the simulator's socket and
// commits, per op, the sets with the new node's two translations merged in (the other
// messages shared), or without them: a node joining or leaving, as
// natplugin's BenchmarkNodeJoin1kNodePortsAsRendered measures it for NAT44.
func BenchmarkNodeJoin1kNodePorts(b *testing.B) {
	const sets = 1000
	e := newEnv(b)
	before, joined := map[string]proto.Message{}, map[string]proto.Message{}
	for i := range sets {
		label := fmt.Sprintf("default/np-%d", i)
		s := nodePortSetOn(label, i, 100, 10, 8080)
		j := &cnatmodel.TranslationSet{Label: label, Translations: slices.Clone(s.Translations)}
		for k, addr := range []string{"192.168.16.251", "192.168.17.251"} {
			nt := proto.Clone(s.Translations[1]).(*cnatmodel.Translation)
			nt.VipAddress, nt.Paths = addr, s.Translations[1].Paths
			j.Translations = slices.Insert(j.Translations, 25+k*50, nt)
		}
		before[cnatmodel.TranslationSetKey(label)], joined[cnatmodel.TranslationSetKey(label)] = s, j
	}
	// The cluster's 9,000 other services: a set each, untouched by the join.
	others := map[string]proto.Message{}
	for i := range 9000 {
		label := fmt.Sprintf("default/svc-%d", i)
		others[cnatmodel.TranslationSetKey(label)] = &cnatmodel.TranslationSet{Label: label, Translations: []*cnatmodel.Translation{
			{VipAddress: fmt.Sprintf("10.97.%d.%d", i/250, i%250+1), VipPort: 80, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.2", 8080)}}}}}
	}
	e.mustCommit(others)
	e.mustCommit(before)
	next := []map[string]proto.Message{joined, before}
	var joins time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		e.mustCommit(next[i%2])
		if i%2 == 0 {
			joins += time.Since(start)
		}
	}
	b.ReportMetric(joins.Seconds()/float64((b.N+1)/2), "join-s/op")
}

// BenchmarkFirstResync110kTranslations is the agent's first resync of the cnat part of
// the scale harness's cluster into an empty VPP: 10,000 services of 10 endpoints,
// 1,000 of them NodePort services on 50 nodes of two IPs (a set of 101 translations
// sharing one slice of paths; 110,000 translations), committed as a full resync
// through the real scheduler and the set descriptor into the simulator over its
// socket, as natplugin's BenchmarkFirstResync110kMappings does for NAT44.
func BenchmarkFirstResync110kTranslations(b *testing.B) {
	vals := map[string]proto.Message{}
	for i := range 1000 {
		label := fmt.Sprintf("default/np-%d", i)
		vals[cnatmodel.TranslationSetKey(label)] = nodePortSetOn(label, i, 100, 10, 8080)
	}
	for i := range 9000 {
		label := fmt.Sprintf("default/svc-%d", i)
		paths := make([]*cnatmodel.Path, 10)
		for k := range paths {
			paths[k] = &cnatmodel.Path{Dst: ep(fmt.Sprintf("10.2.%d.%d", k, i%250+1), 8080)}
		}
		vals[cnatmodel.TranslationSetKey(label)] = &cnatmodel.TranslationSet{Label: label, Translations: []*cnatmodel.Translation{
			{VipAddress: fmt.Sprintf("10.97.%d.%d", i/250, i%250+1), VipPort: 80, Paths: paths}}}
	}
	full := kvapi.WithResync(context.Background(), kvapi.FullResync, false)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b)
		b.StartTimer()
		if err := e.commit(full, vals); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := e.sim.MessageCount("cnat_translation_update"); got != 110000 {
			b.Fatalf("%d cnat_translation_update, want 110,000", got)
		}
		b.StartTimer()
	}
}

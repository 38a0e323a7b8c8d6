package cnatplugin

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
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
			&cnatmodel.Translation{Vip: ep(fmt.Sprintf("10.96.%d.%d", i>>8, i&0xff), 80), Paths: paths})
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

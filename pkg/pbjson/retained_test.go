package pbjson_test

import (
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/pbjson"
)

// retainedSetups are the values of the scale harness's reference cluster (test/scale:
// 10 endpoints per Service, each with its address and node name), as contiv-ksr
// writes them: one EndpointSlice per Service, or the legacy Endpoints before it; and
// the slice of a real cluster (target reference and zone too).
var retainedSetups = []struct {
	name  string
	value func(i int) proto.Message
}{
	{"slice", func(i int) proto.Message { return retainedSlice(i, false) }},
	{"slice+ref+zone", func(i int) proto.Message { return retainedSlice(i, true) }},
	{"endpoints", retainedEndpoints},
}

func retainedSlice(i int, full bool) proto.Message {
	es := &endpointslice.EndpointSlice{Name: fmt.Sprintf("svc-%d-0", i), Namespace: "scale", ServiceName: fmt.Sprintf("svc-%d", i),
		AddressType: "IPv4", ManagedBy: "endpointslice-controller.k8s.io",
		Ports: []*endpointslice.Port{{Name: "http", Protocol: "TCP", Port: 8080}}}
	for j := range 10 {
		ep := &endpointslice.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+2)}, Ready: true, Serving: true,
			NodeName: fmt.Sprintf("node-%d", (i+j)%50)}
		if full {
			ep.TargetRef = &endpointslice.ObjectReference{Kind: "Pod", Namespace: "scale", Name: fmt.Sprintf("web-%d-%d", i, j)}
			ep.Zone = fmt.Sprintf("zone-%d", (i+j)%3)
		}
		es.Endpoints = append(es.Endpoints, ep)
	}
	return es
}

func retainedEndpoints(i int) proto.Message {
	sub := &endpoints.EndpointSubset{Ports: []*endpoints.EndpointSubset_EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}}
	for j := range 10 {
		sub.Addresses = append(sub.Addresses, &endpoints.EndpointSubset_EndpointAddress{
			Ip: fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+2), NodeName: fmt.Sprintf("node-%d", (i+j)%50)})
	}
	return &endpoints.Endpoints{Name: fmt.Sprintf("svc-%d", i), Namespace: "scale", EndpointSubsets: []*endpoints.EndpointSubset{sub}}
}

// BenchmarkRetainedHeap reports the live heap that 10,000 decoded values of the scale
// harness's reference cluster keep (B/value: the memory an agent keeps at rest for
// them), and the allocations of decoding them.
func BenchmarkRetainedHeap(b *testing.B) {
	const n = 10000
	for _, setup := range retainedSetups {
		b.Run(setup.name, func(b *testing.B) {
			data := make([][]byte, n)
			for i := range n {
				var err error
				if data[i], err = protojson.Marshal(setup.value(i)); err != nil {
					b.Fatal(err)
				}
			}
			dec, err := pbjson.NewDecoder(setup.value(0).ProtoReflect().Type())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var kept uint64
			for b.Loop() {
				out := make([]proto.Message, n)
				before := testkit.LiveHeap()
				for i, d := range data {
					if out[i], err = dec.Decode(d); err != nil {
						b.Fatal(err)
					}
				}
				kept = testkit.LiveHeap() - before
				runtime.KeepAlive(out)
			}
			b.ReportMetric(float64(kept)/n, "kept-B/value")
		})
	}
}

package pbjson_test

import (
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/pkg/pbjson"
)

// layoutValues returns n Endpoints values of 10 addresses each, in the JSON contiv-ksr
// writes.
func layoutValues(b *testing.B, n int) [][]byte {
	out := make([][]byte, n)
	for i := range n {
		sub := &endpoints.EndpointSubset{Ports: []*endpoints.EndpointSubset_EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}}
		for j := range 10 {
			sub.Addresses = append(sub.Addresses, &endpoints.EndpointSubset_EndpointAddress{
				Ip: fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+2), NodeName: fmt.Sprintf("node-%d", (i+j)%50),
				TargetRef: &endpoints.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("web-%d-%d", i, j)},
			})
		}
		data, err := protojson.Marshal(&endpoints.Endpoints{Name: fmt.Sprintf("web-%d", i), Namespace: "default",
			EndpointSubsets: []*endpoints.EndpointSubset{sub}})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// walk reads the decoded values the way the Services processor does: every address's
// IP (its bytes) and target reference.
func walk(values []*endpoints.Endpoints) (sum int) {
	for _, ep := range values {
		for _, sub := range ep.GetEndpointSubsets() {
			for _, a := range sub.GetAddresses() {
				ip := a.GetIp()
				sum += len(ip) + int(ip[len(ip)-1])
				if ref := a.GetTargetRef(); ref.GetKind() == "Pod" {
					sum += len(ref.GetName())
				}
			}
			for _, p := range sub.GetPorts() {
				sum += int(p.GetPort())
			}
		}
	}
	return sum
}

// BenchmarkLayout compares one backing array per repeated message field ("array") with
// one allocation per element ("each"): decoding 10,000 Endpoints of 10 addresses, and
// walking the decoded values as the Services resync does, on a heap that churned
// (freed objects of the same size classes between live ones) as a long-running agent's.
func BenchmarkLayout(b *testing.B) {
	const n = 10000
	data := layoutValues(b, n)
	for _, mode := range []string{"array", "each"} {
		dec, err := pbjson.NewDecoder((&endpoints.Endpoints{}).ProtoReflect().Type())
		if err != nil {
			b.Fatal(err)
		}
		pbjson.SetEachElement(dec, mode == "each")
		decodeAll := func() []*endpoints.Endpoints {
			out := make([]*endpoints.Endpoints, n)
			for i, d := range data {
				v, err := dec.Decode(d)
				if err != nil {
					b.Fatal(err)
				}
				out[i] = v.(*endpoints.Endpoints)
			}
			return out
		}
		b.Run("decode/"+mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				decodeAll()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
		})
		b.Run("walk/"+mode, func(b *testing.B) {
			keep := churn()
			values := decodeAll()
			runtime.KeepAlive(keep)
			runtime.GC()
			b.ResetTimer()
			sum := 0
			for b.Loop() {
				sum += walk(values)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
			runtime.KeepAlive(values)
		})
	}
}

// churn leaves the heap with every other small object of the decoded sizes freed, and
// returns the live half.
func churn() [][]byte {
	var live [][]byte
	for i := range 400000 {
		b := make([]byte, 16+(i%6)*16)
		if i%2 == 0 {
			live = append(live, b)
		}
	}
	runtime.GC()
	return live
}

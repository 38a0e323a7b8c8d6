package convert

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// BenchmarkSliceChangeOf5000EndpointService is what contiv-ksr computes when one
// endpoint of a service of 5,000 endpoints (50 slices of 100, as the EndpointSlice
// controller cuts them) changes: the slice's value, O(100), and, with legacy Endpoints
// on, the legacy value of the whole service, O(5,000).
func BenchmarkSliceChangeOf5000EndpointService(b *testing.B) {
	port := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}}
	var slices []*discoveryv1.EndpointSlice
	for s := range 50 {
		var eps []discoveryv1.Endpoint
		for e := range 100 {
			eps = append(eps, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 1+s/10, s%10, 1+e)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}, NodeName: ptr(fmt.Sprintf("node-%d", e%50))})
		}
		slices = append(slices, slice("default", fmt.Sprintf("web-%d", s), "web", discoveryv1.AddressTypeIPv4, port, eps...))
	}
	svc := &corev1.Service{ObjectMeta: meta("default", "web"), Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}}
	b.Run("slice", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EndpointSlice(slices[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("legacy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LegacyEndpoints("default", "web", svc, slices); err != nil {
				b.Fatal(err)
			}
		}
	})
}

//lint:file-ignore SA1019 the agent's model is the Endpoints API (EndpointSlices are merged into it).

package convert

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEndpointsCarryTheLastChangeTriggerTime(t *testing.T) {
	const stamp = "2026-11-25T21:30:00.123456789Z"
	want := time.Date(2026, 11, 25, 21, 30, 0, 123456789, time.UTC).UnixNano()
	withTrigger := func(v string) metav1.ObjectMeta {
		m := meta("default", "web")
		m.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: v}
		return m
	}
	for _, tc := range []struct {
		annotation string
		want       int64
	}{{stamp, want}, {"2026-11-25T21:30:00Z", want - 123456789}, {"yesterday", 0}} {
		got, err := Endpoints(&corev1.Endpoints{ObjectMeta: withTrigger(tc.annotation)})
		if err != nil || got.GetLastChangeTriggerTimeUnixNano() != tc.want {
			t.Errorf("annotation %q: %d %v, want %d", tc.annotation, got.GetLastChangeTriggerTimeUnixNano(), err, tc.want)
		}
	}
	if got, _ := Endpoints(&corev1.Endpoints{ObjectMeta: meta("default", "web")}); got.GetLastChangeTriggerTimeUnixNano() != 0 {
		t.Errorf("no annotation: %d", got.GetLastChangeTriggerTimeUnixNano())
	}

	// Slices: the latest trigger time of the service's slices.
	older, newer := slice("default", "web-a", "web", discoveryv1.AddressTypeIPv4, nil), slice("default", "web-b", "web", discoveryv1.AddressTypeIPv4, nil)
	older.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-11-25T21:00:00Z"}
	newer.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: stamp}
	got, err := EndpointsFromSlices("default", "web", []*discoveryv1.EndpointSlice{newer, older})
	if err != nil || got.GetLastChangeTriggerTimeUnixNano() != want {
		t.Errorf("slices: %d %v, want %d", got.GetLastChangeTriggerTimeUnixNano(), err, want)
	}
}

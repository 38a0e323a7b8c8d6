package ksr

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func TestOutOfRangeServicePortsAreNotReflected(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: objMeta("default", "web"), Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.20",
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080},
			{Name: "huge", Port: 70000},
			{Name: "np", Port: 81, NodePort: 99999},
		},
	}}
	c := newCluster(t, svc)
	in := c.startLeader("a")
	key := service.Key("web", "default")
	testkit.EventuallyTrue(t, waitTimeout, "service reflected", func() bool { return c.get(key) != nil })
	got, _ := c.get(key).(*service.Service)
	if len(got.GetPort()) != 2 || got.GetPort()[0].GetPort() != 80 || got.GetPort()[1].GetNodePort() != 0 {
		t.Errorf("reflected ports %v, want http and np without its node port", got.GetPort())
	}
	if n := counter(in.metrics.invalidFields, service.Keyword, "ports.port"); n < 1 {
		t.Errorf("invalid ports.port counted %v times", n)
	}
	if n := counter(in.metrics.invalidFields, service.Keyword, "ports.nodePort"); n < 1 {
		t.Errorf("invalid ports.nodePort counted %v times", n)
	}
}

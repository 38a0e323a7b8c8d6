package ksr

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
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

func TestPodReflectedWithOnlyTheAnnotationsAgentsRead(t *testing.T) {
	huge := strings.Repeat("x", 256<<10)
	big := &corev1.Pod{ObjectMeta: objMeta("default", "big"), Status: corev1.PodStatus{PodIP: "10.1.1.2"}}
	big.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": huge,
		pod.CustomIfAnnotation:                             "memif1/memif",
	}
	oversized := &corev1.Pod{ObjectMeta: objMeta("default", "oversized"), Status: corev1.PodStatus{PodIP: "10.1.1.3"}}
	oversized.Annotations = map[string]string{pod.CustomIfAnnotation: huge, pod.MicroserviceLabelAnnotation: "web"}
	c := newCluster(t, big, oversized)
	in := c.startLeader("a")
	bigKey, overKey := pod.Key("big", "default"), pod.Key("oversized", "default")
	testkit.EventuallyTrue(t, waitTimeout, "pods reflected", func() bool { return c.get(bigKey) != nil && c.get(overKey) != nil })

	got, _ := c.get(bigKey).(*pod.Pod)
	if want := map[string]string{pod.CustomIfAnnotation: "memif1/memif"}; !maps.Equal(got.GetAnnotations(), want) {
		t.Errorf("pod big reflected with annotations %d keys (%v...), want only %v", len(got.GetAnnotations()),
			slices.Collect(maps.Keys(got.GetAnnotations())), want)
	}
	got, _ = c.get(overKey).(*pod.Pod)
	if want := map[string]string{pod.MicroserviceLabelAnnotation: "web"}; !maps.Equal(got.GetAnnotations(), want) {
		t.Errorf("pod oversized reflected with annotation keys %v, want only %v (custom-if is over the bound)",
			slices.Collect(maps.Keys(got.GetAnnotations())), want)
	}
	if n := counter(in.metrics.invalidFields, pod.Keyword, "metadata.annotations"); n < 1 {
		t.Errorf("oversized annotations counted %v times, want at least 1", n)
	}
}

func TestRewritingAnUnreadAnnotationWritesNothing(t *testing.T) {
	// Issue 27: one pod rewriting a big annotation filled a 512 MiB etcd quota in 8.6 s.
	ctx := context.Background()
	p := testPod("web", "10.1.1.2")
	c := newCluster(t, p)
	c.startLeader("a")
	key := pod.Key("web", "default")
	c.waitValue(key, must(convert.Pod(p)))
	for i := range 3 {
		p = p.DeepCopy()
		p.Annotations = map[string]string{"example.com/state": strings.Repeat(fmt.Sprint(i), 64<<10)}
		must(c.kube.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}))
	}
	// A change the model carries, on the same watch stream: once it is in etcd, the
	// annotation updates before it were processed.
	p = p.DeepCopy()
	p.Labels = map[string]string{"app": "web2"}
	must(c.kube.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}))
	want := p.DeepCopy()
	want.Annotations = nil
	c.waitValue(key, must(convert.Pod(want)))
	resp, err := c.db.Get(ctx, ksrkey.KsrPrefix+key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %v", key, err)
	}
	if v := resp.Kvs[0].Version; v != 2 {
		t.Errorf("the pod's key was written %d times, want 2 (created, then the label change)", v)
	}
}

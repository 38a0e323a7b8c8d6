package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// TestTrafficToANamedPortOfANativeSidecar: pod x/a serves TCP 80 from its app
// container and TCP 81 from a native sidecar (an init container with restartPolicy
// Always, Kubernetes 1.29+). A policy allowing x/a only on the sidecar's named port
// "proxy" lets TCP 81 in and nothing else: the name resolves through the pod as
// contiv-ksr reflects it (convert.Pod), as it does for a regular container's port.
func TestTrafficToANamedPortOfANativeSidecar(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	k8sPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "a", Labels: map[string]string{"pod": "a"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "setup"}, // a regular init container: finished before the pod serves
				{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{
					{Name: "proxy", ContainerPort: 81, Protocol: corev1.ProtocolTCP}}},
			},
			Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}},
		},
	}
	e := newTrafficEnv(t)
	xa := e.pods[0]
	if xa.id != (podmodel.ID{Namespace: "x", Name: "a"}) {
		t.Fatalf("first pod of the traffic model is %v, want x/a", xa.id)
	}
	k8sPod.Status = corev1.PodStatus{PodIP: xa.ip.String()}
	model, err := convert.Pod(k8sPod)
	if err != nil {
		t.Fatal(err)
	}
	pol := &pm.Policy{Namespace: "x", Name: "sidecar-only", Pods: tsel("pod", "a"),
		IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{{Port: &pm.Policy_Port_PortNameOrNumber{
			Type: pm.Policy_Port_PortNameOrNumber_NAME, Name: "proxy"}}}}}}
	st := e.kubeState(pol)
	st[podmodel.Keyword][podmodel.Key("a", "x")] = model
	txn := &orderedTxn{}
	if err := e.plugin.Resync(controller.NewDBResync(), st, 1, txn); err != nil {
		t.Fatal(err)
	}
	e.commit(txn, true)
	e.check("allow x/a on its sidecar's named port proxy (TCP 81)", e.expect(func(k probeKey) bool {
		return !is(k.dst, "x", "a") || (k.tcp && k.port == 81)
	}))
	if t.Failed() {
		t.Logf("x/a as reflected: %v", model)
	}
}

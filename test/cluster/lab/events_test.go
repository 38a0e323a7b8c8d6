package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// A sandbox that cannot be set up (a CNI ADD the agent refuses) is not silent: the
// kubelet stand-in records kubelet's Warning event FailedCreatePodSandBox on the pod,
// with the CNI error.
func TestAFailedSandboxIsAWarningEventOnThePod(t *testing.T) {
	kube := fake.NewClientset()
	k := &kubelet{node: "node1", kube: kube}
	k.startEvents()
	defer k.stopEvents()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	cniErr := errors.New(`CNI ADD ns/web: network namespace path "/var/run/netns/x" is 80 bytes, longer than the 63 bytes VPP takes`)
	k.sandboxFailed(pod, cniErr)
	testkit.Eventually(t, 10*time.Second, "the FailedCreatePodSandBox event", func() error {
		evs, err := kube.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == ReasonFailedCreatePodSandBox && e.Type == corev1.EventTypeWarning &&
				e.InvolvedObject.Name == "web" && e.Source.Component == "kubelet" && e.Source.Host == "node1" &&
				strings.Contains(e.Message, cniErr.Error()) {
				return nil
			}
		}
		return fmt.Errorf("events %+v", evs.Items)
	})
}

package lab

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Reasons of the kubelet stand-in's events (kubelet's).
const (
	// ReasonFailedCreatePodSandBox: the sandbox could not be set up (a CNI ADD failed).
	ReasonFailedCreatePodSandBox = "FailedCreatePodSandBox"
	// ReasonKilling: a deleted pod's container is stopped.
	ReasonKilling = "Killing"
)

// startEvents starts the kubelet's event recorder (events of source kubelet on the node,
// aggregated as kubelet's are); stopEvents ends it.
func (k *kubelet) startEvents() {
	k.events = record.NewBroadcaster()
	k.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.kube.CoreV1().Events("")})
	k.recorder = k.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: k.node})
}

func (k *kubelet) stopEvents() {
	if k.events != nil {
		k.events.Shutdown()
	}
}

// sandboxFailed records why the pod's sandbox could not be set up, as kubelet does, so
// that `kubectl describe pod` shows it.
func (k *kubelet) sandboxFailed(pod *corev1.Pod, err error) {
	k.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
}

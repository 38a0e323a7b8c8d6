package lab

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// writeStatus writes the pod's status as kubelet reports it, when it differs from the
// object's: while the container runs, phase Running with the pod's IPs, each container
// running and ready when its readiness probe (if any) passes, and the pod Ready when all
// are; once the container stopped, each container terminated with its exit code, the
// pod not ready and in its terminal phase (Succeeded when every exit code is 0, else
// Failed).
func (k *kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, sb *sandbox) error {
	pods := k.kube.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := pod
		if p.UID != sb.uid {
			return nil // replaced meanwhile; the next sync handles the new one
		}
		st := k.podStatus(p, sb)
		if apiequality.Semantic.DeepEqual(st, p.Status) {
			return nil
		}
		upd := p.DeepCopy()
		upd.Status = st
		_, err := pods.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			// A conflict: retry on the object as it is now.
			if fresh, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{}); gerr == nil {
				pod = fresh
			}
		}
		return err
	})
}

// podStatus computes the status of the pod from its sandbox, keeping the transition
// times of the conditions that did not change.
func (k *kubelet) podStatus(pod *corev1.Pod, sb *sandbox) corev1.PodStatus {
	k.mu.Lock()
	terminated, code, finished := sb.terminated, sb.exitCode, sb.finished
	ready := make(map[string]bool, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		ready[c.Name] = !terminated && (c.ReadinessProbe == nil || sb.ready[c.Name])
	}
	k.mu.Unlock()

	st := *pod.Status.DeepCopy()
	started := apiTime(sb.started)
	st.HostIP, st.HostIPs = k.nodeIPs[0].String(), nil
	for _, ip := range k.nodeIPs {
		st.HostIPs = append(st.HostIPs, corev1.HostIP{IP: ip.String()})
	}
	st.PodIP, st.PodIPs = sb.ips[0].String(), nil
	for _, ip := range sb.ips {
		st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip.String()})
	}
	st.StartTime = &started
	st.Phase = corev1.PodRunning
	if terminated {
		st.Phase = corev1.PodSucceeded
		if code != 0 {
			st.Phase = corev1.PodFailed
		}
	}
	allReady := true
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: ready[c.Name], Started: new(bool),
			ContainerID: "lab://" + sb.containerID,
		}
		allReady = allReady && ready[c.Name]
		if terminated {
			reason := "Completed"
			if code != 0 {
				reason = "Error"
			}
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				StartedAt: started, FinishedAt: apiTime(finished), ContainerID: cs.ContainerID}
		} else {
			*cs.Started = true
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	now := apiTime(k.clock.Now())
	cond := func(t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: now}
		if ok {
			c.Status, c.Reason = corev1.ConditionTrue, ""
		}
		for _, old := range pod.Status.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	notReady := "ContainersNotReady"
	if terminated {
		notReady = "PodCompleted"
	}
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, !terminated, ""),
		cond(corev1.PodInitialized, true, ""),
		cond(corev1.ContainersReady, allReady, notReady),
		cond(corev1.PodReady, allReady, notReady),
		cond(corev1.PodScheduled, true, ""),
	}
	return st
}

// apiTime is t as the API keeps it (whole seconds), so that a status computed again
// equals the one read back.
func apiTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

// podReady reports the pod's Ready condition.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

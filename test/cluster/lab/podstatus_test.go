package lab

import (
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The status the kubelet stand-in reports follows kubelet: containers without a probe
// are ready once running, a probed one only once its probe passed; a stopped pod is in
// its terminal phase (Succeeded for exit code 0, Failed otherwise) and not ready; the
// transition time of an unchanged condition is kept.
func TestPodStatusIsKubeletsForEachStateOfTheSandbox(t *testing.T) {
	clock := testkit.NewClock()
	k := &kubelet{nodeIPs: []net.IP{net.ParseIP("192.168.16.1")}, clock: clock}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "plain"}, {Name: "probed", ReadinessProbe: &corev1.Probe{}},
	}}}
	sb := &sandbox{containerID: "c1", ips: []net.IP{net.ParseIP("10.1.1.2")}, started: clock.Now(), ready: map[string]bool{}}

	ready := func(st corev1.PodStatus) bool { return podReady(&corev1.Pod{Status: st}) }
	st := k.podStatus(pod, sb)
	if st.Phase != corev1.PodRunning || ready(st) || !st.ContainerStatuses[0].Ready || st.ContainerStatuses[1].Ready {
		t.Errorf("probe not passed yet: phase %s, pod ready %v, containers %+v", st.Phase, ready(st), st.ContainerStatuses)
	}
	pod.Status = st
	clock.Step(time.Minute)
	sb.ready["probed"] = true
	st = k.podStatus(pod, sb)
	if !ready(st) || st.PodIP != "10.1.1.2" || st.HostIP != "192.168.16.1" {
		t.Errorf("probe passed: pod ready %v, IPs %s %s", ready(st), st.PodIP, st.HostIP)
	}
	for i, c := range st.Conditions {
		old := pod.Status.Conditions[i]
		if c.Status == old.Status && !c.LastTransitionTime.Equal(&old.LastTransitionTime) {
			t.Errorf("%s unchanged but its transition time moved", c.Type)
		}
		if c.Status != old.Status && c.LastTransitionTime.Time.Equal(old.LastTransitionTime.Time) {
			t.Errorf("%s changed but kept its transition time", c.Type)
		}
	}

	for _, tc := range []struct {
		code  int32
		phase corev1.PodPhase
	}{{0, corev1.PodSucceeded}, {137, corev1.PodFailed}} {
		sb.terminated, sb.exitCode, sb.finished = true, tc.code, clock.Now()
		st = k.podStatus(pod, sb)
		term := st.ContainerStatuses[0].State.Terminated
		if st.Phase != tc.phase || ready(st) || term == nil || term.ExitCode != tc.code || st.ContainerStatuses[1].Ready {
			t.Errorf("exit code %d: phase %s, ready %v, container %+v; want %s, not ready, terminated", tc.code, st.Phase, ready(st), st.ContainerStatuses[0], tc.phase)
		}
	}
}

// A dual-stack pod reports both addresses in status.podIPs and the node's both in
// status.hostIPs, the primary family's first (kubelet sorts the runtime's IPs so),
// whatever order the CNI result gave; podIP and hostIP are the first of each.
func TestADualStackPodReportsAnIPOfEachFamilyPrimaryFirst(t *testing.T) {
	for _, tc := range []struct {
		family    IPFamily
		cniResult []string
		want      []string
	}{
		{DualStack, []string{"fd00:10:1:1::2", "10.1.1.2"}, []string{"10.1.1.2", "fd00:10:1:1::2"}},
		{DualStack, []string{"10.1.1.2", "fd00:10:1:1::2"}, []string{"10.1.1.2", "fd00:10:1:1::2"}},
		{IPv6, []string{"fd00:10:1:1::2"}, []string{"fd00:10:1:1::2"}},
	} {
		var ips []net.IP
		for _, s := range tc.cniResult {
			ips = append(ips, net.ParseIP(s))
		}
		k := &kubelet{nodeIPs: tc.family.sortByFamily([]net.IP{net.ParseIP("fd00:168:16::1"), net.ParseIP("192.168.16.1")}),
			clock: testkit.NewClock(), family: tc.family}
		if tc.family == IPv6 {
			k.nodeIPs = k.nodeIPs[:1]
		}
		sb := &sandbox{containerID: "c1", ips: tc.family.sortByFamily(ips), ready: map[string]bool{}}
		st := k.podStatus(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}, sb)
		var got []string
		for _, p := range st.PodIPs {
			got = append(got, p.IP)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || st.PodIP != tc.want[0] || st.HostIP != st.HostIPs[0].IP {
			t.Errorf("%s, CNI result %v: podIP %s, podIPs %v, hostIP %s, hostIPs %v; want podIPs %v", tc.family, tc.cniResult,
				st.PodIP, got, st.HostIP, st.HostIPs, tc.want)
		}
		if wantHost := map[IPFamily]string{DualStack: "192.168.16.1", IPv6: "fd00:168:16::1"}[tc.family]; st.HostIP != wantHost {
			t.Errorf("%s: hostIP %s, want %s", tc.family, st.HostIP, wantHost)
		}
	}
}

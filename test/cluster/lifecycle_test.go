package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// endpointConditions returns the conditions the EndpointSlice controller wrote for the
// endpoint with address ip among the Service's slices.
func endpointConditions(ctx context.Context, l *lab.Lab, ns, svc, ip string) (discoveryv1.EndpointConditions, error) {
	slices, err := l.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return discoveryv1.EndpointConditions{}, err
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				if a == ip {
					return ep.Conditions, nil
				}
			}
		}
	}
	return discoveryv1.EndpointConditions{}, fmt.Errorf("no endpoint %s in the EndpointSlices of %s/%s", ip, ns, svc)
}

// conditionsString shows endpoint conditions as ready/serving/terminating.
func conditionsString(c discoveryv1.EndpointConditions) string {
	b := func(p *bool) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("ready=%s serving=%s terminating=%s", b(c.Ready), b(c.Serving), b(c.Terminating))
}

// waitEndpoint waits until the endpoint ip of the Service has the conditions want.
func waitEndpoint(t *testing.T, l *lab.Lab, ns, svc, ip string, want string) {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("endpoint %s of %s: %s", ip, svc, want), func() error {
		c, err := endpointConditions(ctx, l, ns, svc, ip)
		if err != nil {
			return err
		}
		if got := conditionsString(c); got != want {
			return fmt.Errorf("%s", got)
		}
		return nil
	})
}

// podHTTP sends an HTTP request to the pod's server (the switches of lab.ReadyPath and
// lab.ExitPath) from d and returns the status code.
func podHTTP(d dialer, method, ip, path string) (int, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: d, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	req, err := http.NewRequest(method, "http://"+net.JoinHostPort(ip, "8080")+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// lastStatus watches a pod until it is deleted and returns the last status it had.
func lastStatus(ctx context.Context, l *lab.Lab, pod *corev1.Pod) (<-chan corev1.PodStatus, error) {
	w, err := l.Kube.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	if err != nil {
		return nil, err
	}
	out := make(chan corev1.PodStatus, 1)
	go func() {
		defer w.Stop()
		var last corev1.PodStatus
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				last = p.Status
			}
			if ev.Type == watch.Deleted {
				out <- last
				return
			}
		}
		close(out)
	}()
	return out, nil
}

// TestADeletedPodServesWhileTerminatingThenIsTornDownAsKubeletDoes: a deleted pod keeps
// serving while the API shows it terminating and the EndpointSlice controller marks its
// endpoint serving and terminating, not ready; it goes when its server exits (final
// status: Succeeded, exit code 0) or when its grace period ends (Failed, killed: 137).
func TestADeletedPodServesWhileTerminatingThenIsTornDownAsKubeletDoes(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "graceful")
	ctx := testCtx(t, 3*time.Minute)
	nodes := l.Nodes()
	client := echoPod("client", "client", nodes[1].Name)
	exits := echoPod("exits", "graceful", nodes[0].Name)
	exits.Spec.TerminationGracePeriodSeconds = new(int64(60))
	killed := echoPod("killed", "graceful", nodes[0].Name)
	killed.Spec.TerminationGracePeriodSeconds = new(int64(4))
	for _, p := range []*corev1.Pod{client, exits, killed} {
		if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.WaitPodsReady(ctx, ns, "app in (client, graceful)", 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	createService(t, l, ns, echoService("graceful", "graceful", corev1.ServiceTypeClusterIP, ""))
	d := podDialer(t, l, ns, "client")

	for _, tc := range []struct {
		name     string
		exit     bool // the test makes the server exit; else the grace period ends
		phase    corev1.PodPhase
		exitCode int32
	}{
		{"exits", true, corev1.PodSucceeded, 0},
		{"killed", false, corev1.PodFailed, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := l.Kube.CoreV1().Pods(ns).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ip := pod.Status.PodIP
			waitEndpoint(t, l, ns, "graceful", ip, "ready=true serving=true terminating=false")
			final, err := lastStatus(ctx, l, pod)
			if err != nil {
				t.Fatal(err)
			}
			deleted := time.Now()
			if err := l.Kube.CoreV1().Pods(ns).Delete(ctx, tc.name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitEndpoint(t, l, ns, "graceful", ip, "ready=false serving=true terminating=true")
			got, err := l.Kube.CoreV1().Pods(ns).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the pod is gone before its grace period ended: %v", err)
			}
			if got.DeletionTimestamp == nil || got.Status.Phase != corev1.PodRunning || !podIsReady(got) {
				t.Errorf("terminating pod: deletionTimestamp %v, phase %s, ready %v; want set, Running, ready",
					got.DeletionTimestamp, got.Status.Phase, podIsReady(got))
			}
			addr := net.JoinHostPort(ip, "8080")
			if who, _, err := probe(d, addr, 3*time.Second); err != nil || who != tc.name {
				t.Errorf("the terminating pod does not serve: answered by %q, %v", who, err)
			}
			if tc.exit {
				if code, err := podHTTP(d, http.MethodPost, ip, lab.ExitPath); err != nil || code != http.StatusOK {
					t.Fatalf("POST %s: %d, %v", lab.ExitPath, code, err)
				}
			}
			var st corev1.PodStatus
			select {
			case st = <-final:
			case <-ctx.Done():
				t.Fatal("the pod was not deleted")
			}
			took := time.Since(deleted)
			grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
			if tc.exit && took >= grace || !tc.exit && took < grace {
				t.Errorf("the pod went %v after its deletion, grace period %v", took.Round(time.Millisecond), grace)
			}
			if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil {
				t.Fatalf("final status %+v: want the container terminated", st)
			}
			term := st.ContainerStatuses[0].State.Terminated
			if st.Phase != tc.phase || term.ExitCode != tc.exitCode || podIsReady(&corev1.Pod{Status: st}) {
				t.Errorf("final status: phase %s, exit code %d, ready %v; want %s, %d, not ready",
					st.Phase, term.ExitCode, podIsReady(&corev1.Pod{Status: st}), tc.phase, tc.exitCode)
			}
			if _, _, err := probe(d, addr, 2*time.Second); err == nil {
				t.Errorf("%s still answers after its deletion", addr)
			}
		})
	}
}

// TestAPodFailingItsReadinessProbeIsNotReadyAndItsEndpointNeither: the kubelet stand-in
// runs the readinessProbe; switched off through the pod's server, the pod and its
// container report not ready and the EndpointSlice controller marks the endpoint neither
// ready nor serving; switched on again, all is ready again.
func TestAPodFailingItsReadinessProbeIsNotReadyAndItsEndpointNeither(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "readiness")
	ctx := testCtx(t, 3*time.Minute)
	p := echoPod("probed", "probed", l.Nodes()[0].Name)
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: lab.ReadyPath, Port: intstr.FromString("tcp")}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := l.WaitPodsReady(ctx, ns, "app=probed", 1, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ip := pods[0].Status.PodIP
	createService(t, l, ns, echoService("probed", "probed", corev1.ServiceTypeClusterIP, ""))
	waitEndpoint(t, l, ns, "probed", ip, "ready=true serving=true terminating=false")
	_, netns, _ := l.PodNetns(ns, "probed")
	d := fromNetns(netns)

	for _, step := range []struct {
		method   string
		ready    bool
		endpoint string
	}{
		{http.MethodDelete, false, "ready=false serving=false terminating=false"},
		{http.MethodPut, true, "ready=true serving=true terminating=false"},
	} {
		if code, err := podHTTP(d, step.method, ip, lab.ReadyPath); err != nil {
			t.Fatalf("%s %s: %d, %v", step.method, lab.ReadyPath, code, err)
		}
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("the pod's readiness %v after %s", step.ready, step.method), func() error {
			got, err := l.Kube.CoreV1().Pods(ns).Get(ctx, "probed", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cs := got.Status.ContainerStatuses
			if podIsReady(got) != step.ready || len(cs) != 1 || cs[0].Ready != step.ready || cs[0].State.Running == nil {
				return fmt.Errorf("pod ready %v, container statuses %+v", podIsReady(got), cs)
			}
			return nil
		})
		waitEndpoint(t, l, ns, "probed", ip, step.endpoint)
	}
}

// TestAPodWithTheLongestNamesStartsAndAnswers: a pod with the longest valid names (a
// namespace of 63 characters, a name of 253) starts, gets its network (the lab names its
// network namespace within the 63 bytes the agent takes) and answers a pod of another
// node.
func TestAPodWithTheLongestNamesStartsAndAnswers(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "long"+strings.Repeat("n", 59))
	ctx := testCtx(t, 3*time.Minute)
	nodes := l.Nodes()
	name := strings.Repeat("p", 250) + "-99"
	for _, p := range []*corev1.Pod{echoPod(name, "long", nodes[0].Name), echoPod("client", "client", nodes[1].Name)} {
		if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := l.WaitPodsReady(ctx, ns, "app=long", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.WaitPodsReady(ctx, ns, "app=client", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, netns, _ := l.PodNetns(ns, name)
	if p := lab.NetnsDir + "/" + netns; len(p) > podmanager.MaxNetnsPathLen {
		t.Errorf("netns path %s: %d bytes", p, len(p))
	}
	addr := net.JoinHostPort(pods[0].Status.PodIP, "8080")
	d := podDialer(t, l, ns, "client")
	testkit.Eventually(t, 20*time.Second, "the long-named pod answers", func() error {
		who, _, err := probe(d, addr, 2*time.Second)
		if err == nil && who != name {
			return fmt.Errorf("answered by %s", who)
		}
		return err
	})
}

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// recordTraceEnv names a directory where TestTraceExplainsWhyAPodCannotReachAnother
// writes the JSON of every trace it runs (the recorded traces of plugins/tracer's
// unit tests come from there).
const recordTraceEnv = "CONTIV_TRACE_RECORD"

var netctlBuild struct {
	once sync.Once
	path string
	err  error
}

// netctlBinary builds contiv-netctl once per test run, beside the lab's binaries
// (removed with them by TestMain); call it after sharedLab.
func netctlBinary(t *testing.T) string {
	t.Helper()
	netctlBuild.once.Do(func() {
		root, err := testkit.ModuleRoot()
		if err != nil {
			netctlBuild.err = err
			return
		}
		netctlBuild.path = filepath.Join(shared.binDir, "contiv-netctl")
		netctlBuild.err = testkit.GoBuild("", root, netctlBuild.path, "./cmd/contiv-netctl")
	})
	if netctlBuild.err != nil {
		t.Fatalf("build contiv-netctl: %v", netctlBuild.err)
	}
	return netctlBuild.path
}

// netctlArgs are the global flags that point contiv-netctl at the lab: its Contiv etcd
// and every agent through its REST relay (admin requests arrive on the node's loopback).
func netctlArgs(t *testing.T, l *lab.Lab) []string {
	t.Helper()
	etcdConf := filepath.Join(t.TempDir(), "etcd.conf")
	if err := os.WriteFile(etcdConf, []byte("endpoints:\n  - "+l.ContivEtcd+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--etcd-config", etcdConf, "--timeout", "20s"}
	for _, n := range l.Nodes() {
		args = append(args, "--agent", n.Name+"=http://"+n.RESTAddr)
	}
	return args
}

// netctl runs contiv-netctl with the lab's flags and returns its output.
func netctl(ctx context.Context, bin string, global []string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, global...), args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("contiv-netctl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// TestTraceExplainsWhyAPodCannotReachAnother (issue #31 item 3): `contiv-netctl trace`
// sends a real probe with VPP tracing on and names, in Kubernetes terms, why it got
// through or not: allowed through a Service to a pod of another node (the Service,
// the tunnel, the pod), denied by a NetworkPolicy (named), a Service without
// endpoints, no route, a drop by VPP (node and reason).
func TestTraceExplainsWhyAPodCannotReachAnother(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	bin := netctlBinary(t)
	global := netctlArgs(t, l)
	ns := testNamespace(t, l, "trace")
	nodes := l.Nodes()
	clientPod := startPod(t, l, ns, echoPod("client", "client", nodes[0].Name))
	webAndGuarded(t, l, ns, nodes[1])
	createService(t, l, ns, echoService("empty", "nothing-selected", corev1.ServiceTypeClusterIP, ""))
	ctx := testCtx(t, 4*time.Minute)
	// VPP's own address on the pod side: the client's default gateway.
	gateway := podGateway(t, l, ns, "client")

	client := ns + "/client"
	for _, tc := range []struct {
		name, dst string
		want      []string
	}{
		{"allowed", "svc:" + ns + "/web", []string{
			"NAT: Service " + ns + "/web", "VXLAN tunnel to node " + nodes[1].Name,
			"delivered to pod " + ns + "/web", "verdict: ALLOWED: delivered to pod " + ns + "/web"}},
		{"denied by policy", ns + "/guarded:8080", []string{
			"verdict: DENIED: denied by NetworkPolicy " + ns + "/deny-guarded"}},
		{"no endpoints", "svc:" + ns + "/empty", []string{"verdict: NO-ENDPOINTS"}},
		{"no route", "240.0.0.1:80/tcp", []string{"verdict: NO-ROUTE"}},
		{"dropped by VPP", gateway + ":9/udp", []string{
			"VPP answers " + clientPod.Status.PodIP + " with ICMP port unreachable", "verdict: DROPPED: dropped by VPP at ip4-udp-lookup: No listener for dst port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := netctl(ctx, bin, global, "trace", client, tc.dst)
			t.Logf("contiv-netctl trace %s %s:\n%s", client, tc.dst, out)
			if err != nil {
				t.Fatal(err)
			}
			if dir := os.Getenv(recordTraceEnv); dir != "" {
				js, err := netctl(ctx, bin, global, "trace", "-o", "json", client, tc.dst)
				if err == nil {
					name := strings.ReplaceAll(tc.name, " ", "-") + ".json"
					_ = os.WriteFile(filepath.Join(dir, name), []byte(js), 0o644)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("issue #31 item 3: the trace of %s -> %s does not say %q", client, tc.dst, w)
				}
			}
		})
	}
}

// webAndGuarded starts, on node n, the pod web behind the Service web and the pod
// guarded that the NetworkPolicy deny-guarded isolates, and waits until the client
// pod (started before) reaches the first and not the second.
func webAndGuarded(t *testing.T, l *lab.Lab, ns string, n *lab.Node) {
	t.Helper()
	startPod(t, l, ns, echoPod("web", "web", n.Name))
	guarded := startPod(t, l, ns, echoPod("guarded", "guarded", n.Name))
	createService(t, l, ns, echoService("web", "web", corev1.ServiceTypeClusterIP, ""))
	denyIngress(t, l, ns, "deny-guarded", "guarded")
	d := podDialer(t, l, ns, "client")
	guardedAddr := net.JoinHostPort(guarded.Status.PodIP, "8080")
	testkit.Eventually(t, 30*time.Second, "the policy denies "+guardedAddr, func() error {
		return dropped(d, guardedAddr, 1, time.Second)
	})
	testkit.Eventually(t, 30*time.Second, "the Service web answers", func() error {
		return answeredBy(d, serviceAddr(t, l, ns, "web"), "web")
	})
}

// denyIngress creates a NetworkPolicy that isolates the pods app=<app> for ingress and
// allows nothing in.
func denyIngress(t *testing.T, l *lab.Lab, ns, name, app string) {
	t.Helper()
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if _, err := l.Kube.NetworkingV1().NetworkPolicies(ns).Create(testCtx(t, time.Minute), deny, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create NetworkPolicy %s/%s: %v", ns, name, err)
	}
}

// serviceAddr is the ClusterIP:port of the Service.
func serviceAddr(t *testing.T, l *lab.Lab, ns, name string) string {
	t.Helper()
	svc, err := l.Kube.CoreV1().Services(ns).Get(testCtx(t, time.Minute), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].Port))
}

// defaultVia reads the gateway of `ip route` output's default route.
var defaultVia = regexp.MustCompile(`default via (\S+)`)

// podGateway is the pod's default gateway (an address of VPP's).
func podGateway(t *testing.T, l *lab.Lab, ns, name string) string {
	t.Helper()
	_, netns, ok := l.PodNetns(ns, name)
	if !ok {
		t.Fatalf("pod %s/%s has no sandbox", ns, name)
	}
	out, err := exec.Command("ip", "-n", filepath.Base(netns), "-4", "route").CombinedOutput()
	m := defaultVia.FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("pod %s/%s: ip route: %v: %s", ns, name, err, out)
	}
	return m[1]
}

package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// requireForwarding skips a traffic test when the simulator cannot carry packets between
// the nodes, naming what is missing.
func requireForwarding(t *testing.T, l *lab.Lab) {
	t.Helper()
	if !l.NICBound {
		t.Skip("cluster: traffic needs vpp-sim to forward packets with its NIC bound to the node's link " +
			"(-nic NAME=LINUXIF, the forwarding simulator of issue #14); this vpp-sim only programs state")
	}
}

// dialer dials from a network namespace.
type dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// fromNetns returns a dialer from the named namespace.
func fromNetns(name string) dialer { return lab.DialerIn(lab.NetnsDir + "/" + name) }

// reply is a pod's answer (lab.Reply).
type reply struct {
	pod, client, namespace string
}

// probeReply opens one TCP connection to addr, sends a line and returns the answer.
func probeReply(d dialer, addr string, timeout time.Duration) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := d(ctx, "tcp", addr)
	if err != nil {
		return reply{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("hello\n")); err != nil {
		return reply{}, err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return reply{}, fmt.Errorf("read from %s: %w", addr, err)
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		return reply{}, fmt.Errorf("answer %q from %s", line, addr)
	}
	return reply{f[0], f[1], f[2]}, nil
}

// probe is probeReply returning the name of the pod that answered and the client
// address it saw.
func probe(d dialer, addr string, timeout time.Duration) (pod, client string, err error) {
	r, err := probeReply(d, addr, timeout)
	return r.pod, r.client, err
}

// answers opens n connections to addr and counts the answering pods.
func answers(d dialer, addr string, n int) (map[string]int, error) {
	got := make(map[string]int)
	for range n {
		pod, _, err := probe(d, addr, 3*time.Second)
		if err != nil {
			return got, err
		}
		got[pod]++
	}
	return got, nil
}

// everyBackendAnswers waits until every backend has answered connections from d to addr
// and returns the answers counted per pod.
func everyBackendAnswers(t *testing.T, d dialer, addr string, backends map[string]corev1.Pod, what string) map[string]int {
	t.Helper()
	seen := make(map[string]int)
	testkit.Eventually(t, 60*time.Second, what, func() error {
		got, err := answers(d, addr, 4*len(backends))
		for p, k := range got {
			seen[p] += k
		}
		if err != nil {
			return err
		}
		for b := range backends {
			if seen[b] == 0 {
				return fmt.Errorf("%s never answered (answers %v)", b, seen)
			}
		}
		return nil
	})
	return seen
}

// podsOnEveryNode creates pods <prefix>-<node>-<i> (per node), label app=<app>, and waits
// until they are ready; it returns them by name.
func podsOnEveryNode(t *testing.T, l *lab.Lab, ns, app string, perNode int) map[string]corev1.Pod {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	for _, n := range l.Nodes() {
		for i := range perNode {
			p := echoPod(fmt.Sprintf("%s-%s-%d", app, n.Name, i), app, n.Name)
			if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	running, err := l.WaitPodsReady(ctx, ns, "app="+app, perNode*len(l.Nodes()), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]corev1.Pod, len(running))
	for _, p := range running {
		out[p.Name] = p
	}
	return out
}

// podDialer returns a dialer from the pod's namespace.
func podDialer(t *testing.T, l *lab.Lab, ns, name string) dialer {
	t.Helper()
	_, netns, ok := l.PodNetns(ns, name)
	if !ok {
		t.Fatalf("pod %s/%s has no sandbox", ns, name)
	}
	return fromNetns(netns)
}

func createService(t testing.TB, l *lab.Lab, ns string, svc *corev1.Service) *corev1.Service {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	out, err := l.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func echoService(name, app string, typ corev1.ServiceType, policy corev1.ServiceExternalTrafficPolicy) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": app},
			Ports:    []corev1.ServicePort{{Name: "tcp", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if typ == corev1.ServiceTypeNodePort {
		s.Spec.ExternalTrafficPolicy = policy
	}
	return s
}

func TestPodToPodAcrossNodesTCP(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "p2p")
	pods := podsOnEveryNode(t, l, ns, "p2p", 1)
	for _, from := range pods {
		d := podDialer(t, l, ns, from.Name)
		for _, to := range pods {
			addr := net.JoinHostPort(to.Status.PodIP, "8080")
			var pod, client string
			testkit.Eventually(t, 20*time.Second, from.Name+" -> "+to.Name, func() error {
				var err error
				pod, client, err = probe(d, addr, 2*time.Second)
				return err
			})
			host, _, _ := net.SplitHostPort(client)
			if pod != to.Name || host != from.Status.PodIP {
				t.Errorf("%s -> %s (%s): answered by %s seeing client %s, want %s seeing %s",
					from.Name, to.Name, addr, pod, client, to.Name, from.Status.PodIP)
			}
		}
	}
}

// TestPodToPodAcrossNodesSCTP: the pods' SCTP port answers pods of every node, through
// VPP (where the machine's kernel has SCTP).
func TestPodToPodAcrossNodesSCTP(t *testing.T) {
	if err := lab.SCTPSupported(); err != nil {
		t.Skipf("cluster: SCTP: %v (modprobe sctp, where the kernel has the module)", err)
	}
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "sctp")
	pods := podsOnEveryNode(t, l, ns, "sctp", 1)
	for _, from := range pods {
		_, netns, _ := l.PodNetns(ns, from.Name)
		for _, to := range pods {
			addr := net.JoinHostPort(to.Status.PodIP, "8082")
			testkit.Eventually(t, 20*time.Second, from.Name+" -> "+to.Name+" over SCTP", func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				conn, err := lab.DialSCTP(ctx, lab.NetnsDir+"/"+netns, addr)
				if err != nil {
					return err
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
				_, _ = conn.Write([]byte("hello\n"))
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil {
					return err
				}
				if f := strings.Fields(line); len(f) != 3 || f[0] != to.Name {
					return fmt.Errorf("answer %q", line)
				}
				return nil
			})
		}
	}
}

func TestClusterIPServiceReachedFromAPodOnEveryNode(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "clusterip")
	backends := podsOnEveryNode(t, l, ns, "web", 2)
	clients := podsOnEveryNode(t, l, ns, "client", 1)
	svc := createService(t, l, ns, echoService("web", "web", corev1.ServiceTypeClusterIP, ""))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	for _, c := range clients {
		d := podDialer(t, l, ns, c.Name)
		seen := everyBackendAnswers(t, d, addr, backends, "every backend answers "+c.Name+" on "+addr)
		for p := range seen {
			if _, ok := backends[p]; !ok {
				t.Errorf("%s: answer from %s, not a backend of %s", c.Name, p, addr)
			}
		}
	}

	// A Service whose only backend is on the client's node.
	n1 := l.Nodes()[0]
	ctx := testCtx(t, time.Minute)
	local := echoPod("local-0", "local", n1.Name)
	if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.WaitPodsReady(ctx, ns, "app=local", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	lsvc := createService(t, l, ns, echoService("local", "local", corev1.ServiceTypeClusterIP, ""))
	var client string
	for _, c := range clients {
		if c.Spec.NodeName == n1.Name {
			client = c.Name
		}
	}
	d := podDialer(t, l, ns, client)
	laddr := net.JoinHostPort(lsvc.Spec.ClusterIP, "80")
	testkit.Eventually(t, 30*time.Second, client+" reaches the same-node Service "+laddr, func() error {
		pod, _, err := probe(d, laddr, 2*time.Second)
		if err == nil && pod != "local-0" {
			return fmt.Errorf("answered by %s", pod)
		}
		return err
	})
}

func TestNodePortFromTheExternalClient(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "nodeport")
	backends := podsOnEveryNode(t, l, ns, "np", 1)
	d := fromNetns(l.ClientNetns)

	// externalTrafficPolicy Local: only the node's own backend answers, and it sees the
	// client's address.
	localSvc := echoService("np-local", "np", corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal)
	local := createService(t, l, ns, localSvc)
	lport := strconv.Itoa(int(local.Spec.Ports[0].NodePort))
	for _, n := range l.Nodes() {
		addr := net.JoinHostPort(n.IP.String(), lport)
		want := "np-" + n.Name + "-0"
		testkit.Eventually(t, 60*time.Second, "NodePort Local "+addr+" answered by "+want, func() error {
			for range 6 {
				pod, client, err := probe(d, addr, 2*time.Second)
				if err != nil {
					return err
				}
				host, _, _ := net.SplitHostPort(client)
				if pod != want || host != lab.ClientIP {
					return fmt.Errorf("answered by %s seeing client %s, want %s seeing %s", pod, client, want, lab.ClientIP)
				}
			}
			return nil
		})
	}

	// externalTrafficPolicy Cluster: every node's NodePort reaches every backend.
	t.Run("Cluster", func(t *testing.T) {
		cluster := createService(t, l, ns, echoService("np", "np", corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyCluster))
		port := strconv.Itoa(int(cluster.Spec.Ports[0].NodePort))
		for _, n := range l.Nodes() {
			addr := net.JoinHostPort(n.IP.String(), port)
			everyBackendAnswers(t, d, addr, backends, "every backend answers the client on NodePort "+addr)
		}
	})
}

func TestScalingDownAndUpNoConnectionReachesADeletedPod(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "scale")
	backends := podsOnEveryNode(t, l, ns, "sc", 2)
	clients := podsOnEveryNode(t, l, ns, "scclient", 1)
	svc := createService(t, l, ns, echoService("sc", "sc", corev1.ServiceTypeClusterIP, ""))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	var client corev1.Pod
	for _, c := range clients {
		client = c
		break
	}
	d := podDialer(t, l, ns, client.Name)
	testkit.Eventually(t, 60*time.Second, "the Service answers", func() error { _, _, err := probe(d, addr, 2*time.Second); return err })

	// Scale down: delete the second pod of every node.
	ctx := testCtx(t, 3*time.Minute)
	deleted := make(map[string]bool)
	for name := range backends {
		if strings.HasSuffix(name, "-1") {
			deleted[name] = true
			if err := l.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitServiceProgrammed(t, l, svc, len(backends)-len(deleted))
	got, err := answers(d, addr, 30)
	if err != nil {
		t.Fatal(err)
	}
	for p := range got {
		if deleted[p] {
			t.Errorf("after the scale-down %s (deleted) answered: %v", p, got)
		}
	}

	// Scale up again: new pods take the deleted ones' place and answer.
	for name := range deleted {
		node := backends[name].Spec.NodeName
		if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, echoPod(name+"b", "sc", node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.WaitPodsReady(ctx, ns, "app=sc", len(backends), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]int)
	testkit.Eventually(t, 60*time.Second, "the new pods answer", func() error {
		got, err := answers(d, addr, 20)
		for p, k := range got {
			seen[p] += k
		}
		if err != nil {
			return err
		}
		for name := range deleted {
			if seen[name+"b"] == 0 {
				return fmt.Errorf("%s never answered: %v", name+"b", seen)
			}
		}
		return nil
	})
}

// waitServiceProgrammed waits until every node's VPP has the Service's IPv4 cluster IP
// programmed with exactly want backends: its NAT44 static mapping, or its cnat
// translation on a lab whose serviceRenderer is cnat.
func waitServiceProgrammed(t *testing.T, l *lab.Lab, svc *corev1.Service, want int) {
	t.Helper()
	prefix, match := "config/vpp/nat/v2/dnat44/", "/"+svc.Namespace+"/"+svc.Name
	backends := func(val string) int { return strings.Count(val, `"localIp"`) }
	if l.ServiceRenderer() == lab.RendererCNAT {
		prefix = cnatmodel.TranslationSetKey(svc.Namespace + "/" + svc.Name)
		match = prefix
		backends = func(val string) int { return cnatPaths(val, svc.Spec.ClusterIP, uint32(svc.Spec.Ports[0].Port)) }
	}
	testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%s programmed with %d backends on every node", svc.Name, want), func() error {
		for _, n := range l.Nodes() {
			dump, err := vppDump(n, prefix)
			if err != nil {
				return err
			}
			found := false
			for key, val := range dump {
				if !strings.HasSuffix(key, match) {
					continue
				}
				found = true
				if c := backends(val); c != want {
					return fmt.Errorf("%s: %s has %d backends, want %d", n.Name, key, c, want)
				}
			}
			if !found {
				return fmt.Errorf("%s: nothing of %s under %s", n.Name, svc.Name, prefix)
			}
		}
		return nil
	})
}

// trafficLoop opens connections to addr from d until stopped and records failures: how
// many and the span from the first to the last (the disturbance).
type trafficLoop struct {
	stopc  chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	ok     int
	failed int
	first  time.Time
	last   time.Time
}

func startTraffic(d dialer, addr string) *trafficLoop {
	tl := &trafficLoop{stopc: make(chan struct{})}
	tl.wg.Add(1)
	go func() {
		defer tl.wg.Done()
		for {
			select {
			case <-tl.stopc:
				return
			default:
			}
			_, _, err := probe(d, addr, time.Second)
			now := time.Now()
			tl.mu.Lock()
			if err != nil {
				tl.failed++
				if tl.first.IsZero() {
					tl.first = now
				}
				tl.last = now
			} else {
				tl.ok++
			}
			tl.mu.Unlock()
			if err != nil {
				time.Sleep(50 * time.Millisecond) // real time: the loop's probing rate
			}
		}
	}()
	return tl
}

// stop ends the loop and returns the counts and the disturbance.
func (tl *trafficLoop) stop() (ok, failed int, disturbed time.Duration) {
	close(tl.stopc)
	tl.wg.Wait()
	if tl.failed > 0 {
		disturbed = tl.last.Sub(tl.first) + time.Second
	}
	return tl.ok, tl.failed, disturbed
}

// natLoopbackIP is the node's NAT loopback, the source of a pod reaching itself through a
// Service (self-twice-NAT): the last unicast address of its pod subnet (broadcast - 1).
func natLoopbackIP(n *lab.Node) string {
	ip := n.PodSubnet.IP.To4()
	out := make(net.IP, 4)
	for i := range out {
		out[i] = ip[i] | ^n.PodSubnet.Mask[i]
	}
	out[3]--
	return out.String()
}

// TestABackendReachesEveryBackendThroughItsOwnClusterIP: a pod that backs a Service and
// calls the Service's ClusterIP is load-balanced over every backend: itself (seen from its
// node's NAT loopback, self-twice-NAT), the other backend of its node and those on the
// other nodes (seen from its own IP, through VXLAN), and no connection fails. An earlier
// lab had found the backend always answered by itself (24 of 24): its nodes' NICs all had
// the same MAC (vpp-sim's then fixed 08:00:27:5a:00:01; now the lab sets one per node,
// nicMAC, and vpp-sim derives one per link), so every connection sent to another node
// timed out and only those to itself were answered (with the same MAC on every node, one
// backend per node, this test counts 30 to 38 failed connections of 48 per backend, and
// no answer from another node).
func TestABackendReachesEveryBackendThroughItsOwnClusterIP(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "selfsvc")
	backends := podsOnEveryNode(t, l, ns, "self", 2)
	svc := createService(t, l, ns, echoService("self", "self", corev1.ServiceTypeClusterIP, ""))
	waitServiceProgrammed(t, l, svc, len(backends))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	// With 6 backends picked at random, one is missed in 96 tries with probability
	// 6 * (5/6)^96, about 1.5e-7.
	tries := 16 * len(backends)
	for _, n := range l.Nodes() {
		name := "self-" + n.Name + "-0" // the client: the first backend of each node
		b := backends[name]
		d := podDialer(t, l, ns, name)
		testkit.Eventually(t, 60*time.Second, name+" reaches "+addr, func() error { _, _, err := probe(d, addr, 2*time.Second); return err })
		seen := make(map[string]int)
		var failed []string
		for range tries {
			pod, client, err := probe(d, addr, 3*time.Second)
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			seen[pod]++
			host, _, _ := net.SplitHostPort(client)
			want := b.Status.PodIP
			switch {
			case pod == name && l.ServiceRenderer() != lab.RendererNAT44:
				// cnat: hairpin is source-NATed by cnat-output on the pod's interface
				// to the node's SNAT address (docs/dev-guide/SERVICES.md, "Hairpin
				// with cnat"); anything but the pod's own address is that.
				if host == b.Status.PodIP {
					t.Errorf("%s -> %s answered by itself seeing its own address %s: hairpin not source-NATed", name, addr, client)
				}
				continue
			case pod == name:
				want = natLoopbackIP(n)
			}
			if host != want {
				t.Errorf("%s -> %s answered by %s seeing client %s, want %s", name, addr, pod, client, want)
			}
		}
		t.Logf("%s -> %s: %d tries, answers %v, %d failed", name, addr, tries, seen, len(failed))
		if len(failed) > 0 {
			t.Errorf("%s -> %s: %d of %d connections failed, first: %s", name, addr, len(failed), tries, failed[0])
		}
		for other := range backends {
			if seen[other] == 0 {
				t.Errorf("%s -> %s: %s never answered in %d tries (answers %v)", name, addr, other, tries, seen)
			}
		}
	}
}

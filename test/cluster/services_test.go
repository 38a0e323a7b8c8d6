package cluster

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// The tests of this file check, by traffic, what the agent does for the Service fields of
// Kubernetes v1.34 (issue #26; docs/dev-guide/SERVICES.md).

// TestExternalTrafficPolicyLocalLeavesTheClusterIPToEveryEndpoint (issue #26 item 2):
// with externalTrafficPolicy Local and endpoints on node1 and node2 only, a pod of node3
// reaches the ClusterIP and every endpoint answers it; the external client's connection
// to node3's NodePort is dropped, while node1's NodePort is answered by node1's endpoint,
// which sees the client's own address.
func TestExternalTrafficPolicyLocalLeavesTheClusterIPToEveryEndpoint(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "etplocal")
	nodes := l.Nodes()
	withEndpoint, without := nodes[0], nodes[2]
	backends := podsOnNodes(t, l, ns, "etl", 1, nodes[0], nodes[1])
	startPod(t, l, ns, echoPod("client", "client", without.Name))
	svc := createService(t, l, ns, echoService("etl", "etl", corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal))

	clusterIP := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	onlyTheseAnswer(t, podDialer(t, l, ns, "client"), clusterIP, podNames(backends),
		"every endpoint answers a pod of "+without.Name+" (no local endpoint) on the ClusterIP "+clusterIP)

	client := fromNetns(l.ClientNetns)
	nodePort := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	answered := net.JoinHostPort(withEndpoint.IP.String(), nodePort)
	local := "etl-" + withEndpoint.Name + "-0"
	testkit.Eventually(t, 60*time.Second, "the client's NodePort connections to "+answered+" answered by "+local, func() error {
		for range 4 {
			r, err := probeReply(client, answered, 2*time.Second)
			if err != nil {
				return err
			}
			if host, _, _ := net.SplitHostPort(r.client); r.pod != local || host != lab.ClientIP {
				return fmt.Errorf("answered by %s seeing client %s, want %s seeing %s", r.pod, r.client, local, lab.ClientIP)
			}
		}
		return nil
	})
	if err := dropped(client, net.JoinHostPort(without.IP.String(), nodePort), 3, 2*time.Second); err != nil {
		t.Errorf("the NodePort of %s, without a local endpoint: %v", without.Name, err)
	}
}

// TestInternalTrafficPolicyLocalKeepsPodsOnTheirNodesEndpoints (issue #26 item 3): with
// internalTrafficPolicy Local, a pod, and the node itself, reach through the ClusterIP
// only the endpoints of their own node (both of node1's, node2's one); on node3, which
// has none, connections get no answer at all (dropped, not rejected).
func TestInternalTrafficPolicyLocalKeepsPodsOnTheirNodesEndpoints(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "itplocal")
	nodes := l.Nodes()
	backends := podsOnNodes(t, l, ns, "itl", 2, nodes[0])
	second := "itl-" + nodes[1].Name + "-0"
	backends[second] = startPod(t, l, ns, echoPod(second, "itl", nodes[1].Name))
	podsOnNodes(t, l, ns, "itlclient", 1, nodes...)
	svc := echoService("itl", "itl", corev1.ServiceTypeClusterIP, "")
	svc.Spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyLocal)
	svc = createService(t, l, ns, svc)
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")

	for _, n := range nodes[:2] {
		var local []string
		for name, p := range backends {
			if p.Spec.NodeName == n.Name {
				local = append(local, name)
			}
		}
		client := "itlclient-" + n.Name + "-0"
		onlyTheseAnswer(t, podDialer(t, l, ns, client), addr, local, "only the endpoints of "+n.Name+" answer "+client+" on "+addr)
		onlyTheseAnswer(t, fromNetns(n.Netns), addr, local, "only the endpoints of "+n.Name+" answer the node itself on "+addr)
	}
	client := "itlclient-" + nodes[2].Name + "-0"
	if err := dropped(podDialer(t, l, ns, client), addr, 3, 2*time.Second); err != nil {
		t.Errorf("%s, on a node without an endpoint: %v", client, err)
	}
	if err := dropped(fromNetns(nodes[2].Netns), addr, 3, 2*time.Second); err != nil {
		t.Errorf("%s itself, without an endpoint: %v", nodes[2].Name, err)
	}
}

// TestAServiceWithoutEndpointsIsRejectedAtOnceAndNothingLeavesTheNode (issue #26 item
// 5): a Service whose selector matches no pod refuses a pod's TCP connection and UDP
// datagram with EHOSTUNREACH (ICMP 3/10) well within a second, every time; no packet to
// its ClusterIP reaches the nodes' default gateway (untranslated traffic would), while a
// datagram to the internet does (the count works).
func TestAServiceWithoutEndpointsIsRejectedAtOnceAndNothingLeavesTheNode(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "noendpoints")
	startPod(t, l, ns, echoPod("client", "client", l.Nodes()[1].Name))
	d := podDialer(t, l, ns, "client")
	svc := echoService("none", "nobody", corev1.ServiceTypeClusterIP, "")
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "udp", Port: 81, TargetPort: intstr.FromInt32(8081), Protocol: corev1.ProtocolUDP})
	svc = createService(t, l, ns, svc)
	tcpAddr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	udpAddr := net.JoinHostPort(svc.Spec.ClusterIP, "81")
	const limit = 300 * time.Millisecond
	testkit.Eventually(t, 30*time.Second, "the client's TCP connection to "+tcpAddr+" rejected at once", func() error {
		return rejectedTCP(d, tcpAddr, limit)
	})

	gateway := countPackets(t, l.InternetNetns, "eth0")
	rejectedEachTime(t, d, tcpAddr, udpAddr, limit, 4)
	// The control datagram is sent again until the gateway sees one: the first may be
	// the one VPP drops while it resolves the gateway's address (ip4-glean).
	inet := net.JoinHostPort(lab.InternetIP, "9")
	testkit.Eventually(t, 10*time.Second, "the gateway sees a datagram to "+inet, func() error {
		if gateway.count(lab.InternetIP) > 0 {
			return nil
		}
		if conn, err := d(testCtx(t, 5*time.Second), "udp", inet); err == nil {
			_, _ = conn.Write([]byte("control\n"))
			conn.Close()
		}
		return fmt.Errorf("no packet to %s on the gateway's link yet", lab.InternetIP)
	})
	if n := gateway.count(svc.Spec.ClusterIP); n != 0 {
		t.Errorf("%d packets to the ClusterIP %s reached the default gateway (sent out of the node untranslated)", n, svc.Spec.ClusterIP)
	}
}

// TestTerminatingEndpointsServeWhenNoneIsReady (issue #26 item 4): the two endpoints of a
// Service are deleted (a long grace period: they keep serving, serving and terminating
// but not ready); a pod of a third node still reaches both through the ClusterIP.
func TestTerminatingEndpointsServeWhenNoneIsReady(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "terminating")
	nodes := l.Nodes()
	ctx := testCtx(t, 3*time.Minute)
	backends := make(map[string]corev1.Pod)
	for _, n := range nodes[:2] {
		p := echoPod("term-"+n.Name, "term", n.Name)
		p.Spec.TerminationGracePeriodSeconds = new(int64(300))
		backends[p.Name] = startPod(t, l, ns, p)
	}
	startPod(t, l, ns, echoPod("client", "client", nodes[2].Name))
	d := podDialer(t, l, ns, "client")
	// The backends exit when the test ends, so that the namespace goes without waiting
	// for their grace period.
	t.Cleanup(func() {
		for _, p := range backends {
			_, _ = podHTTP(d, http.MethodPost, p.Status.PodIP, lab.ExitPath)
		}
	})
	svc := createService(t, l, ns, echoService("term", "term", corev1.ServiceTypeClusterIP, ""))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	onlyTheseAnswer(t, d, addr, podNames(backends), "both endpoints answer on "+addr)

	for name, p := range backends {
		if err := l.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete pod %s: %v", name, err)
		}
		waitEndpoint(t, l, ns, "term", p.Status.PodIP, "ready=false serving=true terminating=true")
	}
	onlyTheseAnswer(t, d, addr, podNames(backends), "both terminating endpoints answer on "+addr)
}

// TestAUDPClientKeepingItsSocketIsAnsweredOnceABackendAppearsAndAfterItIsReplaced (issue
// #26 item 6, Kubernetes e2e "should be able to preserve UDP traffic when server pod
// cycles"): a pod sends datagrams to a cluster IP before any Service has it (they leave
// its node untranslated: VPP gives them an SNAT session at the uplink whose remote end
// is the cluster IP); then the Service is created with that clusterIP and gets its
// first backend, and the same socket (its 5-tuple unchanged) is answered by it within
// udpStaleBound of the backend's being ready; when the backend is replaced, by the new
// one within the same bound. kube-proxy clears such conntrack entries at its next sync;
// the stale sessions would otherwise live as long as the client keeps sending (VPP's
// UDP timeout, 300 s, restarts with every datagram).
func TestAUDPClientKeepingItsSocketIsAnsweredOnceABackendAppearsAndAfterItIsReplaced(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	requireNAT44(t, l, "stale UDP sessions after an endpoints change are not purged: cnat has no per-session delete, a UDP session times out 30 s after its last packet")
	ns := testNamespace(t, l, "udpstale")
	nodes := l.Nodes()
	startPod(t, l, ns, echoPod("client", "client", nodes[2].Name))
	clusterIP := freeClusterIP(t, l)
	addr := net.JoinHostPort(clusterIP, "81")
	conn, err := podDialer(t, l, ns, "client")(testCtx(t, 5*time.Second), "udp", addr)
	if err != nil {
		t.Fatalf("UDP socket to %s: %v", addr, err)
	}
	defer conn.Close()
	for range 3 {
		if r, err := udpAsk(conn, 200*time.Millisecond); err == nil {
			t.Fatalf("answered by %s before a Service had %s", r.pod, clusterIP)
		}
	}
	createService(t, l, ns, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "udp"},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP,
			Selector:  map[string]string{"app": "udp"},
			Ports:     []corev1.ServicePort{{Name: "udp", Port: 81, TargetPort: intstr.FromInt32(8081), Protocol: corev1.ProtocolUDP}},
		},
	})

	// answeredBy requires the socket's datagrams to be answered by the pod within
	// udpStaleBound.
	answeredBy := func(pod string) {
		t.Helper()
		start := time.Now()
		testkit.Eventually(t, udpStaleBound, "the client's socket answered by "+pod, func() error {
			r, err := udpAsk(conn, 500*time.Millisecond)
			if err != nil {
				return err
			}
			if r.pod != pod {
				return fmt.Errorf("answered by %s", r.pod)
			}
			return nil
		})
		t.Logf("the client's socket answered by %s %v after it was ready", pod, time.Since(start).Round(time.Millisecond))
	}
	startPod(t, l, ns, echoPod("first", "udp", nodes[0].Name))
	answeredBy("first")

	ctx := testCtx(t, 2*time.Minute)
	if err := l.Kube.CoreV1().Pods(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod first: %v", err)
	}
	testkit.Eventually(t, time.Minute, "pod first gone", func() error {
		_, err := l.Kube.CoreV1().Pods(ns).Get(ctx, "first", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	startPod(t, l, ns, echoPod("second", "udp", nodes[1].Name))
	answeredBy("second")
}

// udpStaleBound is how long after its backend is ready a UDP client keeping its socket
// may wait for an answer: the agent's reaction to the EndpointSlice (about 0.1 s in the
// lab) plus its purge of the stale sessions, as kube-proxy clears conntrack entries at
// the sync that follows the change (at most a second later with its default
// minSyncPeriod), with room for a loaded machine; far below the 300 s a stale session
// would last.
const udpStaleBound = 10 * time.Second

// TestAServiceOfAnotherProxyIsNotProgrammedUntilItsLabelGoes (issue #26 item 9): a
// Service labelled service.kubernetes.io/service-proxy-name belongs to another proxy: its
// ClusterIP does not answer while an unlabelled twin (same selector, created after it)
// does; once the label is removed, it answers.
func TestAServiceOfAnotherProxyIsNotProgrammedUntilItsLabelGoes(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "proxyname")
	nodes := l.Nodes()
	backends := podsOnNodes(t, l, ns, "pn", 1, nodes[0])
	startPod(t, l, ns, echoPod("client", "client", nodes[1].Name))
	d := podDialer(t, l, ns, "client")
	other := echoService("other", "pn", corev1.ServiceTypeClusterIP, "")
	other.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "other"}
	other = createService(t, l, ns, other)
	twin := createService(t, l, ns, echoService("twin", "pn", corev1.ServiceTypeClusterIP, ""))
	onlyTheseAnswer(t, d, net.JoinHostPort(twin.Spec.ClusterIP, "80"), podNames(backends), "the unlabelled twin answers")

	otherAddr := net.JoinHostPort(other.Spec.ClusterIP, "80")
	for range 3 {
		if pod, _, err := probe(d, otherAddr, time.Second); err == nil {
			t.Fatalf("the Service of another proxy %s answered by %s", otherAddr, pod)
		}
	}

	ctx := testCtx(t, time.Minute)
	got, err := l.Kube.CoreV1().Services(ns).Get(ctx, "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Labels = nil
	if _, err := l.Kube.CoreV1().Services(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("remove the label of %s: %v", got.Name, err)
	}
	onlyTheseAnswer(t, d, otherAddr, podNames(backends), "the Service answers once its label is gone")
}

// TestAClusterIPOfASecondServiceCIDRIsServed (issue #26 item 11): a second ServiceCIDR
// (networking.k8s.io/v1) outside the API server's --service-cluster-ip-range; a Service
// given a ClusterIP of it answers a pod.
func TestAClusterIPOfASecondServiceCIDRIsServed(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "servicecidr")
	ctx := testCtx(t, 2*time.Minute)
	const cidr, clusterIP = "10.200.0.0/24", "10.200.0.10"
	extra := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "lab-extra"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{cidr}}}
	if _, err := l.Kube.NetworkingV1().ServiceCIDRs().Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceCIDR %s: %v", cidr, err)
	}
	t.Cleanup(func() {
		ctx := testCtx(t, time.Minute)
		if err := l.Kube.CoreV1().Services(ns).Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Service extra: %v", err)
		}
		if err := l.Kube.NetworkingV1().ServiceCIDRs().Delete(ctx, extra.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete ServiceCIDR %s: %v", extra.Name, err)
		}
	})
	backends := podsOnNodes(t, l, ns, "cidr", 1, l.Nodes()[0])
	startPod(t, l, ns, echoPod("client", "client", l.Nodes()[1].Name))

	svc := echoService("extra", "cidr", corev1.ServiceTypeClusterIP, "")
	svc.Spec.ClusterIP = clusterIP
	// The API server allocates from the new range once its informer has seen it.
	testkit.Eventually(t, 30*time.Second, "a Service with ClusterIP "+clusterIP, func() error {
		_, err := l.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
	onlyTheseAnswer(t, podDialer(t, l, ns, "client"), net.JoinHostPort(clusterIP, "80"), podNames(backends),
		"the endpoint answers on "+clusterIP+" of ServiceCIDR "+cidr)
}

// TestPreferCloseKeepsAPodsConnectionsInItsZone (issue #26 item 12): a Service with
// trafficDistribution PreferClose and one endpoint per node (node1 and node3 in zone-a,
// node2 in zone-b); once the EndpointSlice controller has written the zone hints, the
// pod of each node is answered by every endpoint of its zone and by no other.
func TestPreferCloseKeepsAPodsConnectionsInItsZone(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "preferclose")
	nodes := l.Nodes()
	backends := podsOnNodes(t, l, ns, "pc", 1, nodes...)
	podsOnNodes(t, l, ns, "pcclient", 1, nodes...)
	svc := echoService("pc", "pc", corev1.ServiceTypeClusterIP, "")
	svc.Spec.TrafficDistribution = new(corev1.ServiceTrafficDistributionPreferClose)
	svc = createService(t, l, ns, svc)

	ctx := testCtx(t, time.Minute)
	testkit.Eventually(t, 30*time.Second, "zone hints on every endpoint of pc", func() error {
		slices, err := l.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=pc"})
		if err != nil {
			return err
		}
		hinted := 0
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				if ep.Hints == nil || len(ep.Hints.ForZones) == 0 {
					return fmt.Errorf("endpoint %v without zone hints", ep.Addresses)
				}
				hinted++
			}
		}
		if hinted != len(backends) {
			return fmt.Errorf("%d endpoints with hints, want %d", hinted, len(backends))
		}
		return nil
	})

	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	for _, n := range nodes {
		var sameZone []string
		for _, o := range nodes {
			if o.Zone == n.Zone {
				sameZone = append(sameZone, "pc-"+o.Name+"-0")
			}
		}
		client := "pcclient-" + n.Name + "-0"
		onlyTheseAnswer(t, podDialer(t, l, ns, client), addr, sameZone,
			fmt.Sprintf("only the endpoints of %s answer %s (%s)", n.Zone, client, n.Name))
	}
}

// TestANetworkPolicyAllowsTheNamedPortOfANativeSidecar (issue #26 item 13): a pod whose
// native sidecar (init container with restartPolicy Always) declares the port
// "sidecar-web" (TCP 9090); a NetworkPolicy allows ingress to that named port only: a pod
// of another node reaches TCP 9090 and no longer the app's TCP 8080.
func TestANetworkPolicyAllowsTheNamedPortOfANativeSidecar(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "sidecar")
	nodes := l.Nodes()
	guarded := echoPod("guarded", "guarded", nodes[0].Name)
	guarded.Spec.InitContainers = []corev1.Container{{
		Name: "proxy", Image: "lab/echo", RestartPolicy: new(corev1.ContainerRestartPolicyAlways),
		Ports: []corev1.ContainerPort{{Name: "sidecar-web", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
	}}
	server := startPod(t, l, ns, guarded)
	startPod(t, l, ns, echoPod("client", "client", nodes[1].Name))
	d := podDialer(t, l, ns, "client")
	app := net.JoinHostPort(server.Status.PodIP, "8080")
	sidecar := net.JoinHostPort(server.Status.PodIP, "9090")
	for _, addr := range []string{app, sidecar} {
		testkit.Eventually(t, 30*time.Second, "the client reaches "+addr+" before any policy", func() error {
			_, _, err := probe(d, addr, 2*time.Second)
			return err
		})
	}

	ctx := testCtx(t, time.Minute)
	tcp := corev1.ProtocolTCP
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar-only"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: new(intstr.FromString("sidecar-web"))}},
			}},
		},
	}
	if _, err := l.Kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create NetworkPolicy: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, "the app's port "+app+" denied", func() error {
		return dropped(d, app, 1, time.Second)
	})
	testkit.Eventually(t, 10*time.Second, "the sidecar's named port "+sidecar+" allowed", func() error {
		return answeredBy(d, sidecar, "guarded")
	})
}

// TestExternalAndLoadBalancerIPsFromTheExternalClient (issue #26 item 7): the external
// client reaches a LoadBalancer Service on its ingress IP and on an external IP: with
// externalTrafficPolicy Cluster every endpoint answers, with Local the endpoint that
// answers sees the client's own address.
func TestExternalAndLoadBalancerIPsFromTheExternalClient(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "extips")
	backends := podsOnEveryNode(t, l, ns, "xip", 1)
	d := fromNetns(l.ClientNetns)
	for _, tc := range []struct {
		name       string
		policy     corev1.ServiceExternalTrafficPolicy
		externalIP string // in lab.ExternalIPCIDR
	}{
		{"xip-cluster", corev1.ServiceExternalTrafficPolicyCluster, "198.51.100.200"},
		{"xip-local", corev1.ServiceExternalTrafficPolicyLocal, "198.51.100.201"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			name, policy, externalIP := tc.name, tc.policy, tc.externalIP
			svc := echoService(name, "xip", corev1.ServiceTypeLoadBalancer, "")
			svc.Spec.ExternalTrafficPolicy = policy
			svc.Spec.ExternalIPs = []string{externalIP}
			createService(t, l, ns, svc)
			ingress := waitIngress(t, l, ns, name, 1)[0].IP
			for _, ip := range []string{ingress, externalIP} {
				addr := net.JoinHostPort(ip, "80")
				check := func() error { return clientAnswered(d, addr, backends, policy) }
				if err := testkit.Wait(testCtx(t, time.Minute), 45*time.Second, "the client answered on "+addr, check); err != nil {
					t.Fatalf("issue #26 item 7 (LoadBalancer and external IPs from outside the cluster): %v; %s",
						err, mappedOn(l, ns+"/"+name, ip))
				}
			}
		})
	}
}

// clientAnswered opens connections from d to addr (an address of a Service reached from
// outside) and returns an error unless all are answered by backends: every backend
// with externalTrafficPolicy Cluster; with Local, seeing the client's own address.
func clientAnswered(d dialer, addr string, backends map[string]corev1.Pod, policy corev1.ServiceExternalTrafficPolicy) error {
	got := make(map[string]int)
	for range 4 * len(backends) {
		r, err := probeReply(d, addr, 2*time.Second)
		if err != nil {
			return fmt.Errorf("answers %v, then: %w", got, err)
		}
		got[r.pod]++
		_, isBackend := backends[r.pod]
		host, _, _ := net.SplitHostPort(r.client)
		if !isBackend || policy == corev1.ServiceExternalTrafficPolicyLocal && host != lab.ClientIP {
			return fmt.Errorf("answered by %s seeing client %s, want a backend (seeing %s with policy Local)", r.pod, r.client, lab.ClientIP)
		}
	}
	if policy == corev1.ServiceExternalTrafficPolicyCluster {
		for name := range backends {
			if got[name] == 0 {
				return fmt.Errorf("%s never answered (answers %v)", name, got)
			}
		}
	}
	return nil
}

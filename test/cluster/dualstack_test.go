package cluster

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// The tests of the lab with IPv6 (issue #28 item 7): on the dual-stack lab (the
// default, main_test.go) and on the single-stack IPv6 lab of a "both" run. IPv6
// Services (the cnat renderer's) are services6_test.go's.

// podIP returns the pod's address of the family from status.podIPs, failing the test
// when it has none.
func podIP(t *testing.T, p corev1.Pod, ipv6 bool) string {
	t.Helper()
	for _, a := range p.Status.PodIPs {
		if ip := net.ParseIP(a.IP); ip != nil && (ip.To4() == nil) == ipv6 {
			return a.IP
		}
	}
	t.Fatalf("pod %s/%s: no IPv6=%t address in status.podIPs %v", p.Namespace, p.Name, ipv6, p.Status.PodIPs)
	return ""
}

// expectAnswer opens connections from d to addr until one is answered, then checks
// that the pod answered and saw the client address wantClient.
func expectAnswer(t *testing.T, d dialer, addr, pod, wantClient, what string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, what, func() error {
		r, err := probeReply(d, addr, 2*time.Second)
		if err != nil {
			return err
		}
		if host, _, _ := net.SplitHostPort(r.client); r.pod != pod || host != wantClient {
			return fmt.Errorf("%s answered by %s seeing client %s, want %s seeing %s", addr, r.pod, r.client, pod, wantClient)
		}
		return nil
	})
}

// TestDualStackPodsAndNodesReportAnAddressOfEachFamily: on a dual-stack lab every pod
// reports an IPv4 and an IPv6 address in status.podIPs (IPv4 first, each in its node's
// subnet of the family) and both node IPs in status.hostIPs, and contiv-ksr reflects
// both addresses of every pod into the Contiv etcd; every Node has a podCIDR
// and an InternalIP of each family; the API server's default ServiceCIDR has both
// service ranges and gives a PreferDualStack Service a ClusterIP of each family.
func TestDualStackPodsAndNodesReportAnAddressOfEachFamily(t *testing.T) {
	l := sharedLab(t)
	if l.IPFamily() != lab.DualStack {
		t.Skipf("cluster: the lab is %s, not dual-stack", l.IPFamily())
	}
	ns := testNamespace(t, l, "dualstatus")
	pods := podsOnEveryNode(t, l, ns, "ds", 1)
	for _, p := range pods {
		n := l.Node(p.Spec.NodeName)
		var got []string
		for _, a := range p.Status.PodIPs {
			got = append(got, a.IP)
		}
		if len(got) != 2 || p.Status.PodIP != got[0] || !n.PodSubnet.Contains(net.ParseIP(got[0])) ||
			!n.PodSubnetIPv6.Contains(net.ParseIP(got[1])) {
			t.Errorf("pod %s: podIP %s, podIPs %v; want an IPv4 of %s then an IPv6 of %s", p.Name, p.Status.PodIP, got,
				n.PodSubnet, n.PodSubnetIPv6)
		}
		var hosts []string
		for _, h := range p.Status.HostIPs {
			hosts = append(hosts, h.IP)
		}
		if want := []string{n.IP.String(), n.IPv6.String()}; !slices.Equal(hosts, want) {
			t.Errorf("pod %s: hostIPs %v, want %v", p.Name, hosts, want)
		}
	}
	ctx := testCtx(t, time.Minute)
	etcd := etcdClient(t, l)
	testkit.Eventually(t, 30*time.Second, "contiv-ksr reflects both addresses of every pod", func() error {
		for _, p := range pods {
			for _, a := range p.Status.PodIPs {
				if err := etcdHas(ctx, etcd, "/vnf-agent/contiv-ksr/k8s/pod/"+p.Name+"/namespace/"+ns, a.IP); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for _, n := range l.Nodes() {
		node, err := l.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var internal []string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internal = append(internal, a.Address)
			}
		}
		if want := []string{n.PodSubnet.String(), n.PodSubnetIPv6.String()}; !slices.Equal(node.Spec.PodCIDRs, want) {
			t.Errorf("Node %s: podCIDRs %v, want %v", n.Name, node.Spec.PodCIDRs, want)
		}
		if want := []string{n.IP.String(), n.IPv6.String()}; !slices.Equal(internal, want) {
			t.Errorf("Node %s: InternalIPs %v, want %v", n.Name, internal, want)
		}
	}
	cidr, err := l.Kube.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{lab.ServiceCIDR, lab.ServiceCIDRIPv6}; !slices.Equal(cidr.Spec.CIDRs, want) {
		t.Errorf("the default ServiceCIDR has %v, want %v", cidr.Spec.CIDRs, want)
	}
	svc := echoService("ds", "ds", corev1.ServiceTypeClusterIP, "")
	svc.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyPreferDualStack)
	got := createService(t, l, ns, svc)
	if len(got.Spec.ClusterIPs) != 2 || net.ParseIP(got.Spec.ClusterIPs[0]).To4() == nil || net.ParseIP(got.Spec.ClusterIPs[1]).To4() != nil {
		t.Errorf("a PreferDualStack Service got clusterIPs %v, want an IPv4 then an IPv6", got.Spec.ClusterIPs)
	}
}

// ipv6Pods starts perNode pods (app=<ns>) on every node of a lab with IPv6 that
// forwards, in a new namespace ns, and returns them by name (it skips without).
func ipv6Pods(t *testing.T, ns string, perNode int) (*lab.Lab, string, map[string]corev1.Pod) {
	t.Helper()
	l := sharedLab(t)
	requireForwarding(t, l)
	requireIPv6(t, l)
	testNamespace(t, l, ns)
	return l, ns, podsOnEveryNode(t, l, ns, ns, perNode)
}

// TestIPv6PodToPodOnOneNodeAndAcrossNodes: every pod reaches every other pod, on its
// own node and on the others, at its IPv6 address, and is seen from its own IPv6
// address (no NAT between pods).
func TestIPv6PodToPodOnOneNodeAndAcrossNodes(t *testing.T) {
	l, ns, pods := ipv6Pods(t, "p2p6", 2)
	for _, from := range pods {
		d := podDialer(t, l, ns, from.Name)
		for _, to := range pods {
			if to.Name == from.Name {
				continue
			}
			where := "across nodes"
			if to.Spec.NodeName == from.Spec.NodeName {
				where = "on one node"
			}
			addr := net.JoinHostPort(podIP(t, to, true), "8080")
			expectAnswer(t, d, addr, to.Name, podIP(t, from, true), fmt.Sprintf("%s -> %s (%s) over IPv6 %s", from.Name, to.Name, addr, where))
		}
	}
}

// TestIPv6PodToNodeAndNodeToPod: a pod reaches a server of its own node's and of
// another node's host namespace at the host's IPv6 (its end of the VPP-host
// interconnect), seen from the pod's IPv6; a node's host reaches the pods of every
// node at their IPv6, seen from its host IPv6; the external client on the node
// network reaches every pod at its IPv6, seen from the client's own IPv6.
func TestIPv6PodToNodeAndNodeToPod(t *testing.T) {
	l, ns, pods := ipv6Pods(t, "host6", 1)
	for _, n := range l.Nodes() {
		addr := net.JoinHostPort(n.HostIPv6.String(), "9696")
		ln, err := nsrun.Listen(n.NetnsPath(), "tcp6", addr)
		if err != nil {
			t.Fatalf("%s: listen on %s: %v", n.Name, addr, err)
		}
		stop := serveLines(ln, n.Name)
		t.Cleanup(stop)
	}
	for _, p := range pods {
		d := podDialer(t, l, ns, p.Name)
		for _, n := range l.Nodes() {
			addr := net.JoinHostPort(n.HostIPv6.String(), "9696")
			expectAnswer(t, d, addr, n.Name, podIP(t, p, true), fmt.Sprintf("pod %s (on %s) -> the host of %s at %s", p.Name, p.Spec.NodeName, n.Name, addr))
		}
	}
	for _, n := range l.Nodes() {
		d := fromNetns(n.Netns)
		for _, p := range pods {
			addr := net.JoinHostPort(podIP(t, p, true), "8080")
			expectAnswer(t, d, addr, p.Name, n.HostIPv6.String(), fmt.Sprintf("the host of %s -> pod %s (on %s) at %s", n.Name, p.Name, p.Spec.NodeName, addr))
		}
	}
	client := fromNetns(l.ClientNetns)
	for _, p := range pods {
		addr := net.JoinHostPort(podIP(t, p, true), "8080")
		expectAnswer(t, client, addr, p.Name, lab.ClientIPv6, "the external client -> pod "+p.Name+" at "+addr)
	}
}

// serveLines answers every connection of ln with "<name> <client address> host" (the
// shape of a pod's answer, lab.Reply) and closes it; the returned func stops it.
func serveLines(ln net.Listener, name string) (stop func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = fmt.Fprintf(conn, "%s %s host\n", name, conn.RemoteAddr())
			conn.Close()
		}
	})
	return func() { ln.Close(); wg.Wait() }
}

// matrixPeer is a pod of the policy matrix: its namespace's short name (x, y, z), its
// name (a, b, c) and the pod object.
type matrixPeer struct {
	ns, name string
	pod      corev1.Pod
}

func (p matrixPeer) String() string { return p.ns + "/" + p.name }

// reachMatrix probes TCP 8080 of every peer from every other peer at its address of
// the family, all in parallel, and returns the pairs that connected as "src->dst".
func reachMatrix(t *testing.T, l *lab.Lab, peers []matrixPeer, ipv6 bool) map[string]bool {
	t.Helper()
	type pair struct {
		d         dialer
		key, addr string
	}
	var pairs []pair
	for _, src := range peers {
		d := podDialer(t, l, src.pod.Namespace, src.pod.Name)
		for _, dst := range peers {
			if src.String() != dst.String() { // a pod's traffic to itself is not the policies' (e2e netpol leaves it out too)
				pairs = append(pairs, pair{d, src.String() + "->" + dst.String(), net.JoinHostPort(podIP(t, dst.pod, ipv6), "8080")})
			}
		}
	}
	got := make(map[string]bool, len(pairs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pairs {
		wg.Go(func() {
			_, _, err := probe(p.d, p.addr, 2*time.Second)
			mu.Lock()
			got[p.key] = err == nil
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// matrixDiff lists the pairs whose reachability differs from want.
func matrixDiff(got map[string]bool, want func(key string) bool) []string {
	var diff []string
	for key, ok := range got {
		if ok != want(key) {
			diff = append(diff, fmt.Sprintf("%s: connected %t, want %t", key, ok, want(key)))
		}
	}
	sort.Strings(diff)
	return diff
}

// TestPolicyMatrixGivesTheSameVerdictsOverEachFamily: the traffic matrix of
// Kubernetes' NetworkPolicy e2e tests (namespaces x, y, z with pods a, b, c, spread
// over the nodes), probed over every family of the lab: all pairs connect without
// policy; then x/a is isolated for ingress (only namespace y may connect) and for
// egress (only to pods c, in any namespace), and every pair gets the verdict
// Kubernetes defines, over IPv6 as over IPv4.
func TestPolicyMatrixGivesTheSameVerdictsOverEachFamily(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	requireIPv6(t, l)
	nodes := l.Nodes()
	ctx := testCtx(t, 5*time.Minute)
	nsName := map[string]string{}
	var peers []matrixPeer
	for _, short := range []string{"x", "y", "z"} {
		ns := testNamespace(t, l, "pm-"+short)
		nsName[short] = ns
		for i, name := range []string{"a", "b", "c"} {
			p := echoPod(name, "matrix", nodes[i%len(nodes)].Name)
			p.Labels["pod"] = name
			if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, short := range []string{"x", "y", "z"} {
		running, err := l.WaitPodsReady(ctx, nsName[short], "app=matrix", 3, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range running {
			peers = append(peers, matrixPeer{short, p.Name, p})
		}
	}
	var families []bool // ipv6
	if l.IPFamily().HasIPv4() {
		families = append(families, false)
	}
	families = append(families, true)
	familyName := map[bool]string{false: "IPv4", true: "IPv6"}

	check := func(what string, want func(key string) bool) {
		t.Helper()
		for _, v6 := range families {
			testkit.Eventually(t, 60*time.Second, what+" over "+familyName[v6], func() error {
				if diff := matrixDiff(reachMatrix(t, l, peers, v6), want); len(diff) > 0 {
					return fmt.Errorf("%d pairs differ: %s", len(diff), strings.Join(diff, "; "))
				}
				return nil
			})
		}
	}
	check("every pair connects without policy", func(string) bool { return true })

	xa := metav1.LabelSelector{MatchLabels: map[string]string{"pod": "a"}}
	policies := []*networkingv1.NetworkPolicy{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "a-from-y"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: xa,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: nsName["y"]}},
				}}}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "a-to-c"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: xa,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"pod": "c"}},
				}}}},
			},
		},
	}
	for _, p := range policies {
		if _, err := l.Kube.NetworkingV1().NetworkPolicies(nsName["x"]).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create NetworkPolicy %s: %v", p.Name, err)
		}
	}
	check("x/a isolated: in from namespace y only, out to pods c only", func(key string) bool {
		src, dst, _ := strings.Cut(key, "->")
		switch {
		case dst == "x/a":
			return strings.HasPrefix(src, "y/")
		case src == "x/a":
			return strings.HasSuffix(dst, "/c")
		}
		return true
	})
}

// TestSingleStackIPv6PodsComeUpAndTalkAcrossNodes is the smoke test of a single-stack
// IPv6 lab (CONTIV_LAB_IPFAMILY=ipv6): the pods of every node start with one IPv6
// address of their node's subnet (the Nodes have only an IPv6 podCIDR), and reach the
// pods of the other nodes over IPv6, routed over the node network.
func TestSingleStackIPv6PodsComeUpAndTalkAcrossNodes(t *testing.T) {
	l := sharedLab(t)
	if l.IPFamily() != lab.IPv6 {
		t.Skipf("cluster: the lab is %s, not single-stack IPv6 (%s=ipv6)", l.IPFamily(), labIPFamilyEnv)
	}
	requireForwarding(t, l)
	ns := testNamespace(t, l, "v6only")
	pods := podsOnEveryNode(t, l, ns, "v6", 1)
	ctx := testCtx(t, time.Minute)
	for _, n := range l.Nodes() {
		node, err := l.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{n.PodSubnetIPv6.String()}; !slices.Equal(node.Spec.PodCIDRs, want) || n.PodSubnetIPv6.IP.To4() != nil {
			t.Errorf("Node %s: podCIDRs %v, want the IPv6 %v", n.Name, node.Spec.PodCIDRs, want)
		}
	}
	for _, p := range pods {
		n := l.Node(p.Spec.NodeName)
		if len(p.Status.PodIPs) != 1 || !n.PodSubnetIPv6.Contains(net.ParseIP(p.Status.PodIP)) || net.ParseIP(p.Status.PodIP).To4() != nil {
			t.Errorf("pod %s: podIPs %v, want one IPv6 of %s", p.Name, p.Status.PodIPs, n.PodSubnetIPv6)
		}
	}
	for _, from := range pods {
		d := podDialer(t, l, ns, from.Name)
		for _, to := range pods {
			if to.Spec.NodeName != from.Spec.NodeName {
				addr := net.JoinHostPort(to.Status.PodIP, "8080")
				expectAnswer(t, d, addr, to.Name, from.Status.PodIP, from.Name+" -> "+to.Name+" at "+addr+" across nodes")
			}
		}
	}
}

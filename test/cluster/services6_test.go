package cluster

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// The IPv6 Services of the dual-stack lab (issue #29 item 4): the cnat renderer renders
// them whatever serviceRenderer says (docs/dev-guide/SERVICES.md, "The cnat renderer"),
// so they run on the nat44 lab (IPv4 NAT44, IPv6 cnat) and on the cnat one (both cnat).

// dualStackService returns a NodePort Service (externalTrafficPolicy Cluster) of both
// families (RequireDualStack) on port 80 to the pods' 8080 of app.
func dualStackService(name, app string) *corev1.Service {
	svc := echoService(name, app, corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyCluster)
	svc.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyRequireDualStack)
	return svc
}

// dualStackLab returns the shared lab and a new test namespace ns for a traffic test
// written for the dual-stack lab; it skips on another lab or one that does not forward.
func dualStackLab(t *testing.T, ns string) (*lab.Lab, string) {
	t.Helper()
	l := sharedLab(t)
	requireForwarding(t, l)
	if l.IPFamily() != lab.DualStack {
		t.Skipf("cluster: the lab is %s, not dual-stack (%s=dual, the default)", l.IPFamily(), labIPFamilyEnv)
	}
	return l, testNamespace(t, l, ns)
}

// backendsAnswerSeeing waits until every backend has answered connections from d to
// addr, no other pod has, and each saw the client address wantClient ("" checks none).
func backendsAnswerSeeing(t *testing.T, d dialer, addr string, backends map[string]corev1.Pod, wantClient, what string) {
	t.Helper()
	seen := make(map[string]int)
	testkit.Eventually(t, 60*time.Second, what, func() error {
		for range 4 * len(backends) {
			r, err := probeReply(d, addr, 3*time.Second)
			if err != nil {
				return fmt.Errorf("answers %v, then: %w", seen, err)
			}
			if _, ok := backends[r.pod]; !ok {
				return testkit.Permanent(fmt.Errorf("%s answered by %s, not a backend", addr, r.pod))
			}
			if host, _, _ := net.SplitHostPort(r.client); wantClient != "" && host != wantClient {
				return testkit.Permanent(fmt.Errorf("%s: %s saw client %s, want %s", addr, r.pod, r.client, wantClient))
			}
			seen[r.pod]++
		}
		for b := range backends {
			if seen[b] == 0 {
				return fmt.Errorf("%s never answered (answers %v)", b, seen)
			}
		}
		return nil
	})
}

// TestDualStackServiceAnswersOverEachFamily: a RequireDualStack NodePort Service gets a
// ClusterIP of each family; a pod on every node reaches every backend (and only
// backends) on each ClusterIP, seen from its own address of the family (no source NAT
// inside the cluster, as kube-proxy); the external client reaches every backend on the
// NodePort of every node's IPv6 (externalTrafficPolicy Cluster: from any node).
func TestDualStackServiceAnswersOverEachFamily(t *testing.T) {
	l, ns := dualStackLab(t, "svc6")
	backends := podsOnEveryNode(t, l, ns, "web6", 1)
	clients := podsOnEveryNode(t, l, ns, "client6", 1)
	svc := createService(t, l, ns, dualStackService("web6", "web6"))
	if len(svc.Spec.ClusterIPs) != 2 {
		t.Fatalf("a RequireDualStack Service got clusterIPs %v, want one of each family", svc.Spec.ClusterIPs)
	}
	for _, c := range clients {
		d := podDialer(t, l, ns, c.Name)
		for _, ip := range svc.Spec.ClusterIPs {
			ipv6 := net.ParseIP(ip).To4() == nil
			addr := net.JoinHostPort(ip, "80")
			backendsAnswerSeeing(t, d, addr, backends, podIP(t, c, ipv6),
				fmt.Sprintf("every backend answers %s on the ClusterIP %s (IPv6 %t)", c.Name, addr, ipv6))
		}
	}
	port := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	d := fromNetns(l.ClientNetns)
	for _, n := range l.Nodes() {
		addr := net.JoinHostPort(n.IPv6.String(), port)
		backendsAnswerSeeing(t, d, addr, backends, "", "every backend answers the external client on the IPv6 NodePort "+addr)
	}
}

// TestAnIPv6ClusterIPWithoutEndpointsIsRejectedAtOnce: an IPv6 Service whose selector
// matches no pod is refused at once (TCP connect and a connected UDP socket: EACCES,
// ICMPv6 administratively prohibited from the cnat renderer's reject route,
// rejectErrno), as kube-proxy rejects a Service without endpoints; once a pod matches,
// the same address answers.
func TestAnIPv6ClusterIPWithoutEndpointsIsRejectedAtOnce(t *testing.T) {
	l, ns := dualStackLab(t, "noep6")
	nodes := l.Nodes()
	startPod(t, l, ns, echoPod("client", "client", nodes[0].Name))
	svc := echoService("empty6", "empty6", corev1.ServiceTypeClusterIP, "")
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "udp", Port: 81, TargetPort: intstr.FromInt32(8081), Protocol: corev1.ProtocolUDP})
	svc = createService(t, l, ns, svc)
	ip := svc.Spec.ClusterIP
	if net.ParseIP(ip).To4() != nil {
		t.Fatalf("an IPv6 Service got clusterIP %s", ip)
	}
	d := podDialer(t, l, ns, "client")
	tcpAddr, udpAddr := net.JoinHostPort(ip, "80"), net.JoinHostPort(ip, "81")
	const limit = 300 * time.Millisecond
	testkit.Eventually(t, 30*time.Second, "the pod's TCP connection to "+tcpAddr+" rejected at once", func() error {
		return rejectedTCP(d, tcpAddr, limit)
	})
	rejectedEachTime(t, d, tcpAddr, udpAddr, limit, 3)
	startPod(t, l, ns, echoPod("late", "empty6", nodes[1].Name))
	testkit.Eventually(t, 30*time.Second, tcpAddr+" answered by its new endpoint", func() error {
		return answeredBy(d, tcpAddr, "late")
	})
}

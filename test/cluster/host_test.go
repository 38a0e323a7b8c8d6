package cluster

import (
	"fmt"
	"net"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestANodeReachesAClusterIPAndAnotherNodesNodePort: a node's own network namespace (the
// host of its kubelet and host-network pods; the lab runs no kube-proxy) reaches a
// ClusterIP Service and the NodePort of another node through VPP, every backend
// answering.
func TestANodeReachesAClusterIPAndAnotherNodesNodePort(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "hostsvc")
	backends := podsOnEveryNode(t, l, ns, "hs", 1)
	svc := createService(t, l, ns, echoService("hs", "hs", corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyCluster))
	nodes := l.Nodes()
	for i, n := range nodes {
		other := nodes[(i+1)%len(nodes)]
		d := fromNetns(n.Netns)
		for _, addr := range []string{
			net.JoinHostPort(svc.Spec.ClusterIP, "80"),
			net.JoinHostPort(other.IP.String(), strconv.Itoa(int(svc.Spec.Ports[0].NodePort))),
		} {
			everyBackendAnswers(t, d, addr, backends, fmt.Sprintf("every backend answers %s on %s", n.Name, addr))
		}
	}
}

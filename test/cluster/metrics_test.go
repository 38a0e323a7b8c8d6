package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// scrape is one GET /metrics of a node's agent: value by metric name and labels.
type scrape map[string]float64

// scrapeNode reads the node's /metrics.
func scrapeNode(t *testing.T, n *lab.Node) scrape {
	t.Helper()
	data, err := n.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	out := scrape{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the series of metric whose labels include every label="value" of want.
func (s scrape) sum(metric string, want ...string) float64 {
	var total float64
	for series, v := range s {
		name, labels, _ := strings.Cut(series, "{")
		if name != metric {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && (strings.Contains(labels, ","+w+",") || strings.HasPrefix(labels, w+",") ||
				strings.HasSuffix(labels, ","+w+"}") || labels == w+"}")
		}
		if ok {
			total += v
		}
	}
	return total
}

// label formats label="value".
func label(name, value string) string { return name + "=" + strconv.Quote(value) }

// TestDataPlaneMetricsAfterKnownTraffic (issue #31): after known traffic between two
// pods on different nodes, each agent's /metrics (read from its VPP's stats segment)
// shows the pods' rx/tx packets under their pod and namespace labels and the VXLAN
// tunnel to the other node, each increased by at least the packets sent; a connection
// denied by a NetworkPolicy appears in that policy's deny counter.
func TestDataPlaneMetricsAfterKnownTraffic(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "dpmetrics")
	nodes := l.Nodes()
	srvNode, cliNode := nodes[0], nodes[1]
	server := startPod(t, l, ns, echoPod("server", "server", srvNode.Name))
	startPod(t, l, ns, echoPod("client", "client", cliNode.Name))
	d := podDialer(t, l, ns, "client")
	addr := net.JoinHostPort(server.Status.PodIP, "8080")
	testkit.Eventually(t, 30*time.Second, "the client reaches "+addr, func() error {
		return answeredBy(d, addr, "server")
	})
	for _, n := range []*lab.Node{srvNode, cliNode} {
		if up := scrapeNode(t, n).sum("contiv_dataplane_stats_up"); up != 1 {
			t.Fatalf("%s: contiv_dataplane_stats_up = %v: the agent does not read its VPP's stats segment", n.Name, up)
		}
	}

	// Known traffic: every connection carries at least three packets each way
	// (client: SYN, the handshake's ACK, the request; server: SYN-ACK, the
	// acknowledgement or the answer, FIN).
	const conns, perConn = 20, 3
	pod := func(name string) []string { return []string{label("namespace", ns), label("pod", name)} }
	cliBefore, srvBefore := scrapeNode(t, cliNode), scrapeNode(t, srvNode)
	for range conns {
		if err := answeredBy(d, addr, "server"); err != nil {
			t.Fatal(err)
		}
	}
	cliAfter, srvAfter := scrapeNode(t, cliNode), scrapeNode(t, srvNode)
	for _, c := range []struct {
		what          string
		before, after scrape
		metric        string
		labels        []string
	}{
		{"packets the client sent", cliBefore, cliAfter, "contiv_dataplane_pod_interface_rx_packets_total", pod("client")},
		{"packets the client received", cliBefore, cliAfter, "contiv_dataplane_pod_interface_tx_packets_total", pod("client")},
		{"packets the server received", srvBefore, srvAfter, "contiv_dataplane_pod_interface_tx_packets_total", pod("server")},
		{"packets the server sent", srvBefore, srvAfter, "contiv_dataplane_pod_interface_rx_packets_total", pod("server")},
		{"packets into the tunnel to " + srvNode.Name, cliBefore, cliAfter, "contiv_dataplane_vxlan_tx_packets_total", []string{label("remote_node", srvNode.Name)}},
		{"packets out of the tunnel from " + cliNode.Name, srvBefore, srvAfter, "contiv_dataplane_vxlan_rx_packets_total", []string{label("remote_node", cliNode.Name)}},
	} {
		if got := c.after.sum(c.metric, c.labels...) - c.before.sum(c.metric, c.labels...); got < conns*perConn {
			t.Errorf("%s: %s%v moved by %v, want at least %d", c.what, c.metric, c.labels, got, conns*perConn)
		}
	}

	// A connection denied by a NetworkPolicy counts on that policy's deny rule.
	ctx := testCtx(t, time.Minute)
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "isolate-server"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if _, err := l.Kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create NetworkPolicy: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, addr+" denied by the policy", func() error {
		return dropped(d, addr, 1, time.Second)
	})
	denies := func() float64 {
		var total float64
		for _, n := range nodes {
			total += scrapeNode(t, n).sum("contiv_dataplane_policy_rule_packets_total",
				label("policy", ns+"/isolate-server"), label("verdict", "deny"))
		}
		return total
	}
	before := denies()
	const tries = 3
	if err := dropped(d, addr, tries, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := denies() - before; got < tries {
		t.Errorf("deny counter of %s/isolate-server moved by %v after %d denied connections, want at least %d (one SYN each)",
			ns, got, tries, tries)
	}
	if t.Failed() {
		t.Logf("data-plane series on %s:\n%s", srvNode.Name, dataplaneSeries(scrapeNode(t, srvNode)))
	}
}

// dataplaneSeries lists the contiv_dataplane_ series of a scrape, for failure logs.
func dataplaneSeries(s scrape) string {
	var b strings.Builder
	for series, v := range s {
		if strings.HasPrefix(series, "contiv_dataplane_") && !strings.HasPrefix(series, "contiv_dataplane_vpp_errors") {
			fmt.Fprintf(&b, "%s %v\n", series, v)
		}
	}
	return b.String()
}

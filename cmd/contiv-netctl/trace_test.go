package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/tracer"
)

func TestTraceEndpointsParseOrNameTheMistake(t *testing.T) {
	for _, tc := range []struct {
		in   string
		dst  bool
		want endpoint
		err  string
	}{
		{in: "default/client", want: endpoint{Kind: "pod", Name: "default/client"}},
		{in: "node:node1", want: endpoint{Kind: "node", Name: "node1"}},
		{in: "10.1.1.2", want: endpoint{Kind: "addr", Name: "10.1.1.2"}},
		{in: "svc:default/web", dst: true, want: endpoint{Kind: "svc", Name: "default/web"}},
		{in: "svc:default/web:80/udp", dst: true, want: endpoint{Kind: "svc", Name: "default/web", Port: 80, Proto: "udp"}},
		{in: "default/web:8080", dst: true, want: endpoint{Kind: "pod", Name: "default/web", Port: 8080, Proto: "tcp"}},
		{in: "10.1.2.3/icmp", dst: true, want: endpoint{Kind: "addr", Name: "10.1.2.3", Proto: "icmp"}},
		{in: "10.1.2.3:53/UDP", dst: true, want: endpoint{Kind: "addr", Name: "10.1.2.3", Port: 53, Proto: "udp"}},
		{in: "svc:default/web", err: `source "svc:default/web": a Service is not a source`},
		{in: "node:node1", dst: true, err: "a node is not a destination"},
		{in: "default/web:99999", dst: true, err: `port "99999" is not a port`},
		{in: "default/web:80/sctp", dst: true, err: `protocol "sctp" is not tcp or udp`},
		{in: "fd00::1", err: "only IPv4 is traced"},
		{in: "web", err: `source "web": not a pod (namespace/name)`},
		{in: "svc:web", dst: true, err: `"web" is not namespace/name`},
	} {
		got, err := parseEndpoint(tc.in, tc.dst)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestTraceVerdictIsTheLastPacketOfEachNode: the sender's retransmissions show the
// state now, so a first packet dropped while VPP resolved a neighbour does not decide;
// a policy deny anywhere on the path does.
func TestTraceVerdictIsTheLastPacketOfEachNode(t *testing.T) {
	arpDrop := tracer.Explained{Verdict: tracer.DroppedByVPP, Reason: "dropped by VPP at ip4-arp: address resolution required"}
	nat := tracer.Explained{Verdict: tracer.Forwarded, Service: "default/web", Backend: "10.1.2.2:8080"}
	delivered := tracer.Explained{Verdict: tracer.Delivered, Pod: "default/web", Reason: "delivered to pod default/web"}
	denied := tracer.Explained{Verdict: tracer.DeniedByPolicy, Policy: "default/deny", Reason: "denied by NetworkPolicy default/deny (ACL a rule 4)"}
	for _, tc := range []struct {
		name  string
		nodes [][]tracer.Explained
		probe string
		want  string
	}{
		{"a retransmission got through", [][]tracer.Explained{{arpDrop, nat}, {delivered}}, tracer.OutcomeConnected,
			"ALLOWED: delivered to pod default/web (Service default/web, backend 10.1.2.2:8080)"},
		{"denied on the destination's node", [][]tracer.Explained{{nat}, {denied, denied}}, tracer.OutcomeNoAnswer,
			"DENIED: denied by NetworkPolicy default/deny (ACL a rule 4)"},
		{"a drop that lasts", [][]tracer.Explained{{nat, arpDrop}}, tracer.OutcomeNoAnswer, "DROPPED: dropped by VPP at ip4-arp"},
		{"nothing traced", nil, tracer.OutcomeNoAnswer, "UNKNOWN: the trace does not show where the probe went (sender: no answer)"},
	} {
		r := &traceReport{Probe: tracer.ProbeResult{Outcome: tc.probe}}
		for i, pkts := range tc.nodes {
			r.Nodes = append(r.Nodes, tracer.Result{Node: "node" + string(rune('1'+i)), Packets: pkts})
		}
		r.decide()
		if got := r.Verdict + ": " + r.Reason; !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTheWebViewServesItsPageAndRefusesTracesThatAreNotJSON(t *testing.T) {
	srv := httptest.NewServer(newUIServer(&cluster{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	// a cross-site form can post this, a script of another origin cannot send JSON
	resp, err = http.Post(srv.URL+"/api/trace", "application/x-www-form-urlencoded", strings.NewReader("src=a/b&dst=c/d"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a form post runs a trace: %s", resp.Status)
	}
	resp, err = http.Post(srv.URL+"/api/trace", "application/json", strings.NewReader(`{"src": "web", "dst": "default/db"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad source: %s, want 400", resp.Status)
	}
}

func TestTheWebViewReadsTheAgentsDataplaneMetrics(t *testing.T) {
	text := `# HELP contiv_dataplane_pod_interface_rx_packets_total x
contiv_dataplane_stats_up 1
contiv_dataplane_pod_interface_rx_packets_total{namespace="default",pod="web"} 12
contiv_dataplane_pod_interface_drops_total{namespace="default",pod="web"} 3
contiv_dataplane_vxlan_tx_packets_total{remote_node="node2"} 7
contiv_dataplane_policy_rule_packets_total{acl="contiv-policy-1",policy="default/deny",rule="4",verdict="deny"} 5
contiv_dataplane_policy_rule_packets_total{acl="contiv-policy-1",policy="default/allow",rule="1",verdict="permit"} 9
go_goroutines 40
`
	samples, err := parseSamples(strings.NewReader(text), "contiv_dataplane_")
	if err != nil || len(samples) != 6 || !statsUp(samples) {
		t.Fatalf("%d samples, %v", len(samples), err)
	}
	pods := podsWithCounters([]podRow{{Namespace: "default", Name: "web"}}, samples)
	if pods[0].RxPackets != 12 || pods[0].Drops != 3 {
		t.Errorf("pod counters %+v", pods[0])
	}
	if tun := tunnelsOf(samples); len(tun) != 1 || tun[0].RemoteNode != "node2" || tun[0].TxPackets != 7 {
		t.Errorf("tunnels %+v", tun)
	}
	if d := deniesOf("node1", samples); len(d) != 1 || d[0].Policy != "default/deny" || d[0].Packets != 5 {
		t.Errorf("denies %+v", d)
	}
}

// TestAPlanSkipsANodeThatDoesNotAnswer: a node whose agent does not answer (a stale
// record of a node that left) does not stop a trace between pods of other nodes; a pod
// not found names the nodes that did not answer.
func TestAPlanSkipsANodeThatDoesNotAnswer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+allocationsPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"Pods":[{"PodID":{"name":"client","namespace":"default"},"MainIP":"10.1.1.2"}]}`))
	})
	mux.HandleFunc("GET "+dumpPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`[]`)) })
	live := httptest.NewServer(mux)
	defer live.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	c, err := newCluster(Config{Agents: map[string]string{"node1": live.URL, "node4": gone.URL}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.plan(t.Context(), endpoint{Kind: "pod", Name: "default/client"}, endpoint{Kind: "addr", Name: "240.0.0.1", Port: 80, Proto: "tcp"})
	if err != nil {
		t.Fatalf("plan with a silent node4: %v", err)
	}
	if plan == nil {
		t.Fatal("no plan")
	}
	_, err = c.plan(t.Context(), endpoint{Kind: "pod", Name: "default/nowhere"}, endpoint{Kind: "addr", Name: "240.0.0.1", Port: 80, Proto: "tcp"})
	if err == nil || !strings.Contains(err.Error(), "not answering: node4") {
		t.Errorf("a pod found nowhere: %v, want an error naming node4 as not answering", err)
	}
}

package k8s

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/unarygrpc"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
	"github.com/contiv-vpp/contiv-vpp/standalone"
)

const (
	dashboardFile = "grafana/contiv-vpp.json"
	// dataplaneDoc documents every data-plane metric (plugins/statscollector).
	dataplaneDoc = "../docs/METRICS-DATAPLANE.md"
	// statsUp is the data-plane metric that exists whatever the traffic.
	statsUp = "contiv_dataplane_stats_up"
)

// documentedDataplaneMetrics returns the metrics of dataplaneDoc's table (rows
// "| `contiv_dataplane_...` | type | labels | meaning |").
func documentedDataplaneMetrics(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(dataplaneDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range docMetricRow.FindAllSubmatch(data, -1) {
		out[string(m[1])] = true
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no metric", dataplaneDoc)
	}
	return out
}

var docMetricRow = regexp.MustCompile("(?m)^\\| `(contiv_dataplane_[a-z0-9_]+)` \\|")

// needsTraffic tells whether a metric may be absent from an agent whose VPP forwarded
// nothing: the data-plane series exist per pod, tunnel, policy rule or error counter
// that VPP counted (docs/METRICS-DATAPLANE.md); only statsUp is always there.
func needsTraffic(m string) bool {
	return strings.HasPrefix(m, "contiv_dataplane_") && m != statsUp
}

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// metricToken finds the metric names in a PromQL expression: the project's
// (contiv_*) and the Go and process collectors' ones; notLabels strips what holds
// label names and values (by/without lists, selectors, strings) first.
var (
	metricToken = regexp.MustCompile(`\b(contiv|go|process)_[a-zA-Z0-9_]+`)
	notLabels   = regexp.MustCompile(`(by|without)\s*\([^)]*\)|\{[^}]*\}|"[^"]*"`)
)

// dashboardMetrics returns every metric name the dashboard queries, a histogram's
// _bucket series as is.
func dashboardMetrics(t *testing.T) (dashboard, []string) {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	seen := map[string]bool{}
	for _, p := range d.Panels {
		for _, tgt := range p.Targets {
			for _, m := range metricToken.FindAllString(notLabels.ReplaceAllString(tgt.Expr, " "), -1) {
				seen[m] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for m := range seen {
		names = append(names, m)
	}
	sort.Strings(names)
	return d, names
}

func TestDashboardIsWellFormed(t *testing.T) {
	d, metrics := dashboardMetrics(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both needed for provisioning", d.UID, d.Title)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, m := range metrics {
		if strings.HasSuffix(m, "_version") || strings.HasSuffix(m, "_commit") {
			t.Errorf("%s looks like a label taken for a metric", m)
		}
	}
	if !vars["datasource"] || !vars["instance"] {
		t.Errorf("template variables %v, want datasource and instance", vars)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tgt := range p.Targets {
			if !strings.Contains(tgt.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q: %q does not filter on $instance", p.Title, tgt.Expr)
			}
		}
	}
	// What the issue asks the dashboard to show.
	for _, want := range []string{
		"contiv_controller_events_total", "contiv_kvscheduler_transactions_total",
		"contiv_podmanager_cni_request_duration_seconds_bucket", "contiv_agent_component_state",
		"contiv_nat_sessions", "contiv_dbwatcher_resyncs_total", "contiv_kvscheduler_failed_operations_total",
		// the data plane (issue #31): per pod traffic and drops, policy denies,
		// NAT sessions, VPP drops by reason
		"contiv_dataplane_pod_interface_rx_packets_total", "contiv_dataplane_pod_interface_tx_packets_total",
		"contiv_dataplane_pod_interface_drops_total", "contiv_dataplane_policy_rule_packets_total",
		"contiv_dataplane_nat44_sessions", "contiv_dataplane_vpp_errors_total", statsUp,
	} {
		if !contains(metrics, want) {
			t.Errorf("the dashboard does not query %s", want)
		}
	}
	documented := documentedDataplaneMetrics(t)
	for _, m := range metrics {
		if strings.HasPrefix(m, "contiv_dataplane_") && !documented[m] {
			t.Errorf("the dashboard queries %s, which %s does not list", m, dataplaneDoc)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestDashboardMetricsExistOnARunningAgent starts contiv-agent -standalone, makes it
// serve a CNI request, a state-changing REST request and a NAT session cleanup pass
// (otherNATSessionTimeout: 1 minute, its period), and checks that /metrics has a
// series of every metric the dashboard queries, except the data-plane series that
// only VPP's traffic creates (needsTraffic; TestDashboardIsWellFormed checks that
// they are documented, the lab's metrics test that they move): of those, the agent
// must read the simulator's stats segment (contiv_dataplane_stats_up 1).
func TestDashboardMetricsExistOnARunningAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts contiv-agent and waits for a NAT session cleanup pass (1 minute)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not in PATH: cannot build contiv-agent")
	}
	_, want := dashboardMetrics(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "contiv-agent")
	build := exec.Command("go", "build", "-o", bin, "./cmd/contiv-agent")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/contiv-agent: %v\n%s", err, out)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sa := filepath.Join(dir, "standalone")
	agent := exec.Command(bin, "-standalone", "-standalone-dir", sa, "-standalone-linux=false",
		"-standalone-etcd", "127.0.0.1:0", "-node-name", "k8s-master",
		"-cluster", filepath.Join("examples", "demo-cluster.yaml"),
		"-contiv-config", filepath.Join("examples", "contiv.conf"),
		"-http-config", write("http.conf", "endpoint: 127.0.0.1:0\n"),
		"-service-config", write("service.conf", "cleanupIdleNATSessions: true\notherNATSessionTimeout: 1\n"))
	var log bytes.Buffer
	agent.Stdout, agent.Stderr = &log, &log
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = agent.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = agent.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	})

	// The agent's REST URL, from the netctl.conf it writes.
	var base string
	testkit.Eventually(t, 60*time.Second, "netctl.conf with the agent URL", func() error {
		data, err := os.ReadFile(filepath.Join(sa, standalone.NetctlConfFile))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if _, u, ok := strings.Cut(line, "k8s-master: "); ok {
				base = strings.TrimSpace(u)
				return nil
			}
		}
		return fmt.Errorf("no agent URL in %s", data)
	})
	testkit.Eventually(t, 30*time.Second, "the agent's liveness", func() error {
		resp, err := http.Get(base + "/liveness")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})

	// A CNI CHECK (no pod: answered with an error, observed all the same) and a
	// state-changing request.
	testkit.Eventually(t, 30*time.Second, "a CNI CHECK answered", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := &cni.CNIRequest{ContainerId: "grafana-test", NetworkNamespace: "/proc/1/ns/net",
			ExtraArguments: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=grafana-test"}
		return unarygrpc.Call(ctx, "unix", filepath.Join(sa, "cni.sock"), cni.RemoteCNI_Check_FullMethodName, req, &cni.CNIReply{})
	})
	resp, err := http.Post(base+"/controller/resync", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var missing []string
	testkit.Eventually(t, 100*time.Second, "every dashboard metric on /metrics (NAT sessions after the first cleanup pass)", func() error {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		present := map[string]bool{}
		statsRead := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			name := line
			if i := strings.IndexAny(line, "{ "); i > 0 {
				name = line[:i]
			}
			present[name] = true
			statsRead = statsRead || line == statsUp+" 1"
		}
		if err := sc.Err(); err != nil {
			return err
		}
		missing = missing[:0]
		for _, m := range want {
			if !present[m] && !needsTraffic(m) {
				missing = append(missing, m)
			}
		}
		if !statsRead {
			missing = append(missing, statsUp+" 1 (the simulator's stats segment read)")
		}
		if len(missing) > 0 {
			return fmt.Errorf("missing %v", missing)
		}
		return nil
	})
	t.Logf("the %d metrics of the dashboard are served (or, for data-plane series that need traffic, documented): %v", len(want), want)
}

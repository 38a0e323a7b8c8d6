package tracer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// fakeVPP answers the CLI commands the plugin sends as VPP does: "trace add" prints
// nothing when it arms an input node and an error for a node VPP has not; "clear
// trace" stops tracing and frees the records.
type fakeVPP struct {
	mu      sync.Mutex
	known   map[string]bool // input nodes VPP has
	armed   map[string]int
	trace   string // what "show trace" shows while armed
	history []string
}

func newFakeVPP(trace string, nodes ...string) *fakeVPP {
	f := &fakeVPP{known: map[string]bool{}, armed: map[string]int{}, trace: trace}
	for _, n := range nodes {
		f.known[n] = true
	}
	return f
}

func (f *fakeVPP) cli(cmd string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.history = append(f.history, cmd)
	fields := strings.Fields(cmd)
	switch {
	case cmd == "clear trace":
		clear(f.armed)
	case len(fields) == 4 && fields[0] == "trace" && fields[1] == "add":
		if !f.known[fields[2]] {
			return "trace add: node `" + fields[2] + "' is not an input node\n", nil
		}
		f.armed[fields[2]]++
	case cmd == "show trace":
		if len(f.armed) == 0 {
			return "No packets in trace buffer\n", nil
		}
		return f.trace, nil
	case cmd == "show interface":
		return "", nil
	}
	return "", nil
}

func (f *fakeVPP) tracing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.armed) > 0
}

type testEnv struct {
	vpp   *fakeVPP
	clock *testkit.Clock
	p     *Plugin
	srv   *httptest.Server
}

func newTestEnv(t *testing.T, trace string) *testEnv {
	t.Helper()
	vpp := newFakeVPP(trace, "virtio-input", "dpdk-input")
	clk := testkit.NewClock()
	mux := http.NewServeMux()
	p := NewPlugin(Deps{Log: logrus.New(), NodeName: "node1", CLI: vpp.cli, Admin: mux, Clock: clk,
		LocalPods: func() podmanager.LocalPods { return podmanager.LocalPods{} }})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); _ = p.Close() })
	return &testEnv{vpp: vpp, clock: clk, p: p, srv: srv}
}

// post sends body to path and returns the status and the decoded answer.
func (e *testEnv) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(e.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestOneTraceAtATimePerNodeAndTracingOffAfterIt(t *testing.T) {
	e := newTestEnv(t, "")
	code, out := e.post(t, StartPath, `{"count": 10}`)
	if code != http.StatusOK {
		t.Fatalf("start: %d %v", code, out)
	}
	if got := out["inputNodes"]; len(got.([]any)) != 2 {
		t.Errorf("armed %v, want the two input nodes VPP has (virtio-input, dpdk-input)", got)
	}
	if !e.vpp.tracing() {
		t.Fatal("VPP does not trace after start")
	}
	if code, out := e.post(t, StartPath, `{}`); code != http.StatusConflict || !strings.Contains(out["error"].(string), "already running") {
		t.Fatalf("a second start while one runs: %d %v, want 409", code, out)
	}
	if code, out := e.post(t, StopPath, `{"match": {"srcs": ["10.1.1.2"], "dsts": ["10.1.2.2"]}}`); code != http.StatusOK {
		t.Fatalf("stop: %d %v", code, out)
	}
	if e.vpp.tracing() {
		t.Fatal("VPP still traces after stop")
	}
	if code, _ := e.post(t, StopPath, `{"match": {"srcs": ["10.1.1.2"], "dsts": ["10.1.2.2"]}}`); code != http.StatusConflict {
		t.Fatalf("stop without a trace: %d, want 409", code)
	}
	if code, out := e.post(t, StartPath, `{}`); code != http.StatusOK {
		t.Fatalf("start after stop: %d %v", code, out)
	}
}

func TestATraceNobodyStopsEndsAtItsTimeout(t *testing.T) {
	e := newTestEnv(t, "")
	if code, out := e.post(t, StartPath, `{"timeoutSeconds": 5}`); code != http.StatusOK {
		t.Fatalf("start: %d %v", code, out)
	}
	e.clock.AwaitWaiters(t, 1)
	e.clock.Step(4 * time.Second)
	if !e.vpp.tracing() {
		t.Fatal("the trace stopped before its timeout")
	}
	e.clock.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "VPP stops tracing at the timeout", func() bool { return !e.vpp.tracing() })
	if code, out := e.post(t, StartPath, `{}`); code != http.StatusOK {
		t.Fatalf("start after the timeout: %d %v", code, out)
	}
}

func TestBadTraceRequestsNameTheFieldAndChangeNothing(t *testing.T) {
	e := newTestEnv(t, "")
	for _, tc := range []struct {
		path, body, want string
		code             int
	}{
		{StartPath, `{"count": 100000}`, "count: 100000", http.StatusBadRequest},
		{StartPath, `{"timeoutSeconds": 3600}`, "timeoutSeconds: 3600", http.StatusBadRequest},
		{StartPath, `{"cuont": 3}`, "cuont", http.StatusBadRequest},
		{ProbePath, `{"dst": "10.1.2.3", "proto": "sctp", "port": 80}`, `proto: "sctp"`, http.StatusBadRequest},
		{ProbePath, `{"dst": "fd00::1", "proto": "icmp"}`, `dst: "fd00::1"`, http.StatusBadRequest},
		{ProbePath, `{"pod": "nonamespace", "dst": "10.1.2.3", "proto": "icmp"}`, `pod: "nonamespace"`, http.StatusBadRequest},
		{ProbePath, `{"dst": "10.1.2.3", "proto": "tcp"}`, "port: 0", http.StatusBadRequest},
		{ProbePath, `{"dst": "10.1.2.3", "proto": "icmp"}`, "no trace is running", http.StatusConflict},
		{StopPath, `{"match": {"srcs": [], "dsts": ["10.1.2.3"]}}`, "match: srcs", http.StatusBadRequest},
	} {
		code, out := e.post(t, tc.path, tc.body)
		msg, _ := out["error"].(string)
		if code != tc.code || !strings.Contains(msg, tc.want) {
			t.Errorf("POST %s %s: %d %q, want %d naming %q", tc.path, tc.body, code, msg, tc.code, tc.want)
		}
	}
	if e.vpp.tracing() || len(e.vpp.history) != 0 {
		t.Errorf("bad requests reached VPP: %v", e.vpp.history)
	}
	if code, _ := e.post(t, StartPath, `{}`); code != http.StatusOK {
		t.Fatal("start")
	}
	code, out := e.post(t, ProbePath, `{"pod": "default/gone", "dst": "10.1.2.3", "proto": "icmp"}`)
	if msg, _ := out["error"].(string); code != http.StatusNotFound || !strings.Contains(msg, "default/gone is not a pod of node node1") {
		t.Errorf("probe from an unknown pod: %d %q, want 404 naming it", code, msg)
	}
}

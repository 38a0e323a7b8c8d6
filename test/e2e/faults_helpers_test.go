package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// faultControllerConf is the controller.conf of the fault tests: the production logic
// with timings short enough for a test of seconds. The retry and healing delays (2 s)
// make a transient fault degrade the node for several seconds, long enough for the
// test to see it and to add a pod meanwhile on a loaded machine.
const faultControllerConf = `enableRetry: true
delayRetry: 2s
maxRetryAttempts: 3
enableExpBackoffRetry: true
delayAfterErrorHealing: 2s
maxDelayAfterErrorHealing: 4s
eventLoopStallTimeout: 30s
`

// faultNode is a contivNode whose VPP is the fault simulator (faults_sim_test.go),
// driven through its control socket.
type faultNode struct {
	*contivNode
	ctlPath string
}

// startFaultNode starts a node as startContivNode does, with faultsim as its VPP, the
// pods scheduled here (not running yet) and faultControllerConf.
func startFaultNode(tb testing.TB, e *env, pods ...string) *faultNode {
	tb.Helper()
	bin := binaries(tb, e)
	self, err := os.Executable()
	if err != nil {
		tb.Fatalf("the test binary, run as faultsim: %v", err)
	}
	n := &contivNode{tb: tb, e: e, bin: bin, ns: newNodeNetns(tb, e), dir: tb.TempDir()}
	n.standaloneDir = filepath.Join(n.dir, "standalone")
	n.clusterPath = filepath.Join(n.dir, "cluster.yaml")
	apiSocket := filepath.Join(n.dir, "api.sock")
	fn := &faultNode{contivNode: n, ctlPath: filepath.Join(n.dir, "faultsim.sock")}
	podIPs := make(map[string]string, len(pods))
	for _, p := range pods {
		podIPs[p] = ""
	}
	n.setClusterPods(podIPs)
	files := map[string]string{
		"http.conf":       "endpoint: " + restEndpoint + "\n",
		"govpp.conf":      "binapi-socket-path: " + apiSocket + "\n",
		"controller.conf": faultControllerConf,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	n.sim = startProcess(tb, n.ns, n.dir, "faultsim", self, faultsimArg,
		"-linux", "-socket", apiSocket, "-ctl", fn.ctlPath, "-nic", vppNIC)
	testkit.Eventually(tb, 10*time.Second, "faultsim serves its sockets", func() error {
		if err := n.sim.exitedError(); err != nil {
			return err
		}
		_, err := fn.control("count control_ping")
		return err
	})
	n.agentArgv = []string{filepath.Join(bin, "contiv-agent"),
		"-standalone", "-standalone-vpp=false", "-standalone-dir", n.standaloneDir,
		"-cluster", n.clusterPath,
		"-contiv-config", filepath.Join(e.root, "k8s", "examples", "contiv.conf"),
		"-http-config", filepath.Join(n.dir, "http.conf"),
		"-govpp-config", filepath.Join(n.dir, "govpp.conf"),
		"-controller-config", filepath.Join(n.dir, "controller.conf"),
		"-node-name", nodeName}
	n.rest = newRESTClient(tb, n.ns, restEndpoint)
	n.startAgent()
	n.cni = newCNIRunner(tb, e, bin, fmt.Sprintf("%s%d-%d", nsPrefix, os.Getpid(), nsSeq.Add(1)), map[string]any{
		"type":       "contiv-cni",
		"grpcServer": n.cniSocket(),
		"logFile":    filepath.Join(n.dir, "contiv-cni.log"),
	})
	return fn
}

// control sends one command to faultsim and returns the value of its "ok" answer.
func (n *faultNode) control(command string) (string, error) {
	c, err := net.DialTimeout("unix", n.ctlPath, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("faultsim control %q: %w", command, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintln(c, command); err != nil {
		return "", fmt.Errorf("faultsim control %q: %w", command, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("faultsim control %q: %w", command, err)
	}
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, "ok"); ok {
		return strings.TrimSpace(rest), nil
	}
	return "", fmt.Errorf("faultsim control %q: %s", command, line)
}

// mustControl is control failing tb.
func (n *faultNode) mustControl(tb testing.TB, command string) string {
	tb.Helper()
	out, err := n.control(command)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// health is GET /readiness: the HTTP code, the aggregated state and the controller's
// component.
type health struct {
	code       int
	state      string
	ctlState   string
	ctlReason  string
	components string // the whole body, for messages
}

// readiness reads GET /readiness.
func (n *faultNode) readiness() (health, error) {
	code, data, err := n.rest.do(http.MethodGet, "/readiness", nil)
	if err != nil {
		return health{}, fmt.Errorf("GET /readiness: %w", err)
	}
	var r readiness
	if err := json.Unmarshal(data, &r); err != nil {
		return health{}, fmt.Errorf("GET /readiness: %d %w: %s", code, err, data)
	}
	h := health{code: code, state: r.State, components: strings.TrimSpace(string(data))}
	if c, ok := r.Components["controller"]; ok {
		h.ctlState, h.ctlReason = c.State, c.Reason
	}
	return h, nil
}

// livenessWatch polls GET /liveness until stopped and remembers every answer that is
// not 200.
type livenessWatch struct {
	stopCh chan struct{}
	done   chan struct{}
	once   sync.Once
	polls  atomic.Int64
	mu     sync.Mutex
	bad    []string
}

// watchLiveness polls /liveness every 50 ms until stop, or until tb ends; either way
// tb fails if /liveness ever answered otherwise than 200.
func (n *faultNode) watchLiveness(tb testing.TB) *livenessWatch {
	w := &livenessWatch{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			code, data, err := n.rest.do(http.MethodGet, "/liveness", nil)
			w.polls.Add(1)
			if err != nil || code != http.StatusOK {
				w.mu.Lock()
				w.bad = append(w.bad, fmt.Sprintf("%s: %d %v %s", time.Now().Format("15:04:05.000"), code, err,
					strings.TrimSpace(string(data))))
				w.mu.Unlock()
			}
			select {
			case <-w.stopCh:
				return
			case <-t.C:
			}
		}
	}()
	tb.Cleanup(func() { w.stop(tb) })
	return w
}

// stop ends the polling (once) and fails tb if /liveness ever failed.
func (w *livenessWatch) stop(tb testing.TB) {
	tb.Helper()
	w.once.Do(func() {
		close(w.stopCh)
		<-w.done
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.bad) > 0 {
			tb.Errorf("/liveness failed %d of %d times; first: %s", len(w.bad), w.polls.Load(),
				strings.Join(w.bad[:min(len(w.bad), 5)], "; "))
		}
		tb.Logf("/liveness polled %d times, always 200: %v", w.polls.Load(), len(w.bad) == 0)
	})
}

// failedValuesMetric returns the value of contiv_controller_failed_values.
func (n *faultNode) failedValuesMetric() (float64, error) {
	code, data, err := n.rest.do(http.MethodGet, "/metrics", nil)
	if err != nil || code != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %d %v", code, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "contiv_controller_failed_values "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("GET /metrics: no contiv_controller_failed_values")
}

// serviceDocs are the Service "name" (cluster IP ip, TCP port 80 to 8080) and its
// Endpoints on the pods of this node with the given IPs (two or more: a load-balancing
// static mapping, nat44_add_del_lb_static_mapping).
func serviceDocs(name, ip string, pods map[string]string) []string {
	svc := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %s
  namespace: default
spec:
  type: ClusterIP
  clusterIP: %s
  ports:
    - name: http
      protocol: TCP
      port: 80
      targetPort: 8080
`, name, ip)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: default\nsubsets:\n  - addresses:\n", name)
	for pod, podIP := range pods {
		fmt.Fprintf(&b, "      - ip: %s\n        nodeName: %s\n        targetRef:\n          kind: Pod\n          name: %s\n          namespace: default\n",
			podIP, nodeName, pod)
	}
	b.WriteString("    ports:\n      - name: http\n        protocol: TCP\n        port: 8080\n")
	return []string{svc, b.String()}
}

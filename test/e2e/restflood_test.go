package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// floodOpenFiles is the agent's open files limit in TestCNIAnswersWhileTheRESTPortIsFlooded:
// low enough that an unbounded REST port would exhaust it with floodConns connections
// (the embedded etcd needs 151 of them), high enough for the agent's own needs.
const (
	floodOpenFiles = 400
	floodConns     = 500
	// floodCNIBound bounds one CNI ADD or DEL under the flood.
	floodCNIBound = 20 * time.Second
)

// TestCNIAnswersWhileTheRESTPortIsFlooded holds idle keep-alive connections to the REST
// port up to and past its bound (http.conf max-local-connections: the test connects
// from the node, as a host-network pod would), with the agent's open files limit low,
// and checks that a CNI ADD and DEL through the socket still complete within
// floodCNIBound (issue #27, failure 3: before the bounds, the REST port took every
// descriptor and the CNI socket stopped answering).
func TestCNIAnswersWhileTheRESTPortIsFlooded(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit not found: cannot lower the agent's open files limit")
	}
	node := startContivNode(t, e, "flood-a")
	node.stopAgent()
	node.agentArgv = append([]string{prlimit, "--nofile=" + strconv.Itoa(floodOpenFiles), "--"}, node.agentArgv...)
	node.startAgent()

	// Idle keep-alive connections: each sends one request, reads its answer and stays.
	dial := nsrun.Dialer(node.ns.path)
	held, refused := 0, 0
	for range floodConns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := dial(ctx, "tcp", restEndpoint)
		cancel()
		if err != nil {
			refused++
			continue
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET /liveness HTTP/1.1\r\nHost: node\r\n\r\n")); err != nil {
			refused++
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			refused++ // closed over the bound
			continue
		}
		resp.Body.Close()
		c.SetDeadline(time.Time{})
		held++
	}
	t.Logf("REST flood: %d connections held open, %d closed by the agent", held, refused)
	if refused == 0 {
		t.Fatalf("all %d connections were served: the flood did not reach the REST bound", floodConns)
	}

	p := newPodNetns(t, e)
	for _, cmd := range []string{"add", "del"} {
		start := time.Now()
		_, stderr, err := node.cni.cnitool(cmd, p, podArgs("flood-a"))
		if took := time.Since(start); err != nil || took > floodCNIBound {
			t.Fatalf("CNI %s under the REST flood: %v after %v (bound %v)\n%s", cmd, err, took.Round(time.Millisecond), floodCNIBound, stderr)
		}
	}
	if err := node.agent.exitedError(); err != nil {
		t.Fatalf("the agent exited under the flood: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(node.dir, "contiv-cni.log")); err == nil && strings.Contains(string(data), "too many open files") {
		t.Errorf("contiv-cni saw descriptor exhaustion:\n%s", data)
	}
}

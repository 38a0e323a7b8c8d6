package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
)

func TestFlagsAndVersion(t *testing.T) {
	for _, args := range [][]string{{"-no-such-flag"}, {"-log-format", "xml"}} {
		if code := run(context.Background(), args, io.Discard, io.Discard); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"-version"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "contiv-ksr") {
		t.Errorf("-version: %d %q", code, out.String())
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-kube-config", filepath.Join(t.TempDir(), "none")}, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "kubeconfig") {
		t.Errorf("missing kubeconfig: %d %q", code, stderr.String())
	}
}

// TestServesProbesAndMetricsOnItsPort starts contiv-ksr against a real etcd and an API
// server that does not answer: it is elected, but not ready (its caches never sync).
func TestServesProbesAndMetricsOnItsPort(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	apiPort := etcdtest.FreePort(t)
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:%d"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`, apiPort))
	etcdConf := filepath.Join(dir, "etcd.conf")
	writeFile(t, etcdConf, fmt.Sprintf("endpoints: [%q]\n", srv.Endpoint()))
	httpConf := filepath.Join(dir, "http.conf")
	port := etcdtest.FreePort(t)
	writeFile(t, httpConf, fmt.Sprintf("endpoint: 127.0.0.1:%d\n", port))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-kube-config", kubeconfig, "-etcd-config", etcdConf, "-http-config", httpConf,
			"-election-ttl", "2s", "-log-level", "error"}, io.Discard, io.Discard)
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var metrics string
	testkit.Eventually(t, 15*time.Second, "elected", func() error {
		if metrics, _ = get(base + "/metrics"); !strings.Contains(metrics, "contiv_ksr_leader 1") {
			return fmt.Errorf("metrics:\n%s", metrics)
		}
		return nil
	})
	for _, want := range []string{`contiv_ksr_adds_total{reflector="pod"} 0`, `contiv_ksr_errors_total{kind="arg",reflector="service"} 0`, "contiv_ksr_in_sync 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The elected gauge may come before the first etcd probe has reported: until then
	// readiness says etcd is not reachable yet.
	testkit.Eventually(t, 15*time.Second, "readiness: resync pending", func() error {
		if body, code := get(base + "/readiness"); code != http.StatusServiceUnavailable || !strings.Contains(body, "resync pending") {
			return fmt.Errorf("readiness = %d %s", code, body)
		}
		return nil
	})
	if _, code := get(base + "/liveness"); code != http.StatusOK {
		t.Errorf("liveness = %d", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("contiv-ksr did not stop")
	}
}

func get(url string) (string, int) {
	resp, err := http.Get(url)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

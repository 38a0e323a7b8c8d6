package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the agent writes logs into it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestVersionFlagPrintsVersionAndCommit(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "contiv-agent dev (commit unknown, go") {
		t.Errorf("-version printed %q", out.String())
	}
}

func TestBadConfigurationExitsNonZeroNamingTheKey(t *testing.T) {
	dir := t.TempDir()
	httpConf := writeFile(t, dir, "http.conf", "endpoint: "+freePort(t)+"\n")
	tests := []struct {
		name   string
		args   []string
		contiv string
		want   string
	}{
		{
			name:   "prefix not longer than the cluster prefix",
			contiv: "ipamConfig:\n  podSubnetCIDR: 10.1.0.0/16\n  podSubnetOneNodePrefixLen: 15\n",
			want:   "ipamConfig.podSubnetOneNodePrefixLen: 15 is not longer than podSubnetCIDR /16",
		},
		{
			name:   "unknown key in strict mode",
			args:   []string{"-strict-config"},
			contiv: "useTAPInterface: true\n",
			want:   "unknown keys: useTAPInterface",
		},
		{
			name: "missing file named explicitly",
			want: "no such file or directory",
		},
		{
			name: "bad log format",
			args: []string{"-log-format=xml"},
			want: `log format "xml"`,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			contivConf := filepath.Join(dir, fmt.Sprintf("missing-%d.conf", i))
			if tc.contiv != "" {
				contivConf = writeFile(t, dir, fmt.Sprintf("contiv-%d.conf", i), tc.contiv)
			}
			args := append([]string{"-contiv-config=" + contivConf, "-http-config=" + httpConf, "-node-name=n1"}, tc.args...)
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, &out, &errOut)
			if code == 0 {
				t.Fatalf("exit code 0 for a bad start, stderr: %s", errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut.String())
			}
		})
	}
}

func TestStandaloneAgentServesProbesMetricsAndIPAM(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	httpConf := writeFile(t, dir, "http.conf", "endpoint: "+addr+"\n")
	contivConf, err := filepath.Abs("../../k8s/examples/contiv.conf")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-standalone", "-standalone-dir=" + filepath.Join(dir, "standalone"),
			"-contiv-config=" + contivConf, "-http-config=" + httpConf, "-node-name=k8s-master"}, io.Discard, &errOut)
	}()

	base := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/readiness")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !strings.Contains(string(body), `"state": "OK"`) {
					t.Errorf("readiness body: %s", body)
				}
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("agent exited with %d before it was ready: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent not ready within 10s; logs:\n%s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	for path, want := range map[string]string{
		"/metrics":  `contiv_agent_component_state{component="agent"} 0`,
		"/liveness": `"state": "OK"`,
		"/log/list": `"contivconf":"info"`,
		// Node 1 of the default configuration, as in the upstream documentation.
		"/contiv/v1/ipam": `"nodeId": 1,
  "nodeName": "k8s-master",
  "nodeIP": "192.168.16.1",
  "podSubnetThisNode": "10.1.1.0/24",
  "vppHostNetwork": "172.30.1.0/24",`,
		"/controller/event-history?seq-num=0": `"Name": "Database Resync"`,
		"/scheduler/status":                   `[`,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d, want 200 containing %q", path, resp.StatusCode, want)
		}
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after shutdown = %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop after cancel")
	}
	if _, err := http.Get(base + "/readiness"); err == nil {
		t.Error("HTTP server still answers after shutdown")
	}
}

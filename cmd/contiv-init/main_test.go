package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// With FAKE_MODE set, the test binary plays VPP (started with "-c <config>": it opens
// the API socket FAKE_SOCKET and waits for SIGTERM) or the agent (any other arguments:
// it exits with FAKE_EXIT, or creates the file FAKE_AGENT_UP and waits for SIGTERM).
// Each catches SIGTERM before it shows it runs (the socket, the file).
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_MODE") != "" {
		if len(os.Args) > 1 && os.Args[1] == "-c" {
			term := notifyTerm()
			l, err := net.Listen("unix", os.Getenv("FAKE_SOCKET"))
			if err != nil {
				os.Exit(5)
			}
			waitForTerm(term)
			l.Close()
			os.Exit(0)
		}
		if code := os.Getenv("FAKE_EXIT"); code != "" {
			n, _ := strconv.Atoi(code)
			os.Exit(n)
		}
		term := notifyTerm()
		if err := os.WriteFile(os.Getenv("FAKE_AGENT_UP"), nil, 0o600); err != nil {
			os.Exit(6)
		}
		waitForTerm(term)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuffer collects output written concurrently by the logger and by the goroutines
// that relay the children's output.
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

// notifyTerm catches SIGTERM from now on.
func notifyTerm() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	return ch
}

// waitForTerm waits for the SIGTERM notifyTerm caught, at most 30 s.
func waitForTerm(term <-chan os.Signal) {
	select {
	case <-term:
	case <-time.After(30 * time.Second):
	}
}

// fakeSetup returns contiv-init arguments that run the test binary as VPP and agent.
func fakeSetup(t *testing.T, agentExit string) []string {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	t.Setenv("FAKE_MODE", "1")
	t.Setenv("FAKE_SOCKET", sock)
	t.Setenv("FAKE_EXIT", agentExit)
	t.Setenv("FAKE_AGENT_UP", filepath.Join(dir, "agent-up"))
	conf := filepath.Join(dir, "contiv.conf")
	if err := os.WriteFile(conf, []byte("mtuSize: 1450\nipamConfig: {nodeInterconnectCIDR: 192.168.16.0/24}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-vpp-bin", self, "-agent-bin", self, "-vpp-socket", sock,
		"-contiv-config", conf, "-vpp-ready-timeout", "5s", "-stop-timeout", "2s", "--", "-standalone"}
}

func TestAgentExitStopsVPPAndFails(t *testing.T) {
	args := fakeSetup(t, "3")
	var stderr syncBuffer
	code := run(context.Background(), args, &syncBuffer{}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "contiv-agent exited: exit status 3") {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "process=vpp") || !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("VPP was not stopped: %s", stderr.String())
	}
}

func TestAgentExitingCleanlyStillFails(t *testing.T) {
	args := fakeSetup(t, "0")
	var stderr syncBuffer
	if code := run(context.Background(), args, &syncBuffer{}, &stderr); code == 0 {
		t.Fatalf("exit 0 although the agent stopped: %s", stderr.String())
	}
}

func TestTerminationStopsBothCleanly(t *testing.T) {
	args := fakeSetup(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() { done <- run(ctx, args, &syncBuffer{}, &stderr) }()
	testkit.Eventually(t, 10*time.Second, "the agent up", func() error {
		_, err := os.Stat(os.Getenv("FAKE_AGENT_UP"))
		return err
	})
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after termination: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not stopped")
	}
}

func TestInvalidConfigurationStopsBeforeVPP(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "contiv.conf")
	if err := os.WriteFile(conf, []byte("mtuSize: 12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	code := run(context.Background(), []string{"-contiv-config", conf, "-vpp-bin", "/nonexistent"}, &syncBuffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "mtuSize: 12") || strings.Contains(stderr.String(), "/nonexistent") {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
}

func TestEmptyConfigurationStopsNamingTheMissingKeys(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "contiv.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	code := run(context.Background(), []string{"-contiv-config", conf, "-vpp-bin", "/nonexistent", "--", "-node-name=worker7"}, &syncBuffer{}, &stderr)
	out := stderr.String()
	if code != 1 || !strings.Contains(out, "ipamConfig.nodeInterconnectCIDR") || !strings.Contains(out, "nodeConfig[worker7].mainVPPInterface.ip") ||
		strings.Contains(out, "/nonexistent") {
		t.Fatalf("exit %d, stderr: %s", code, out)
	}
}

func TestNodeNameForValidation(t *testing.T) {
	t.Setenv("MICROSERVICE_LABEL", "from-env")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-node-name=a"}, "a"},
		{[]string{"--node-name", "b", "-standalone"}, "b"},
		{[]string{"-standalone"}, "from-env"},
	} {
		if got := nodeNameFor(tc.args); got != tc.want {
			t.Errorf("nodeNameFor(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestVPPThatNeverOpensItsSocket(t *testing.T) {
	args := fakeSetup(t, "")
	for i, a := range args {
		if a == "-vpp-socket" {
			args[i+1] = filepath.Join(t.TempDir(), "other.sock")
		}
		if a == "-vpp-ready-timeout" {
			args[i+1] = "300ms"
		}
	}
	var stderr syncBuffer
	if code := run(context.Background(), args, &syncBuffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "vpp not ready within 300ms") {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
}

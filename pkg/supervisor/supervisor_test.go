package supervisor

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func sh(name, script string) Process {
	return Process{Name: name, Path: "/bin/sh", Args: []string{"-c", script}}
}

func TestWhenOneProcessExitsTheOthersAreStopped(t *testing.T) {
	g := &Group{Log: quiet(), StopTimeout: 2 * time.Second}
	marker := filepath.Join(t.TempDir(), "vpp-stopped")
	vpp := sh("vpp", `trap 'touch `+marker+`; exit 0' TERM; while true; do sleep 0.05; done`)
	agent := sh("contiv-agent", "sleep 0.2; exit 3")
	start := time.Now()
	err := g.Run(context.Background(), vpp, agent)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Name != "contiv-agent" {
		t.Fatalf("Run = %v, want the agent's exit", err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("exit code not kept: %v", err)
	}
	if _, statErr := exec.Command("test", "-f", marker).Output(); statErr != nil {
		t.Error("vpp did not get SIGTERM")
	}
	if time.Since(start) > 5*time.Second {
		t.Error("took too long")
	}
}

func TestCancelStopsEverythingInReverseOrder(t *testing.T) {
	g := &Group{Log: quiet(), StopTimeout: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b, up := sh("b", "sleep 30"), make(chan struct{})
	b.Ready = func(context.Context) error { close(up); return nil } // asked once b runs
	go func() { done <- g.Run(ctx, sh("a", "sleep 30"), b) }()
	awaitUp(t, up, done)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("processes not stopped")
	}
}

// awaitUp waits until up is closed, failing if Run returned first.
func awaitUp(t *testing.T, up <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-up:
	case err := <-done:
		t.Fatalf("Run returned %v before the processes were up", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the processes were not up within 5s")
	}
}

func TestStubbornProcessIsKilled(t *testing.T) {
	g := &Group{Log: quiet(), StopTimeout: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	trapped := filepath.Join(t.TempDir(), "trapped")
	p, up := sh("stubborn", `trap '' TERM; touch `+trapped+`; while true; do sleep 0.05; done`), make(chan struct{})
	p.Ready = func(context.Context) error { // ready once it ignores SIGTERM
		if _, err := os.Stat(trapped); err != nil {
			return err
		}
		close(up)
		return nil
	}
	go func() { done <- g.Run(ctx, p) }()
	awaitUp(t, up, done)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stubborn process not killed")
	}
}

func TestNextProcessStartsWhenTheSocketIsReady(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	order := filepath.Join(dir, "order")
	// "vpp" opens its socket after a delay; the agent records whether it was there.
	ln := make(chan net.Listener, 1)
	asked := make(chan struct{}) // closed once the group found no socket
	go func() {
		<-asked
		l, err := net.Listen("unix", sock)
		if err == nil {
			ln <- l
		}
	}()
	defer func() {
		select {
		case l := <-ln:
			l.Close()
		default:
		}
	}()
	vpp := sh("vpp", "sleep 30")
	socketReady, once := SocketReady(sock), sync.Once{}
	vpp.Ready = func(ctx context.Context) error {
		err := socketReady(ctx)
		once.Do(func() { close(asked) })
		return err
	}
	vpp.ReadyTimeout = 5 * time.Second
	agent := sh("agent", "test -S "+sock+" && echo socket-was-ready > "+order+"; exit 0")
	err := (&Group{Log: quiet(), StopTimeout: time.Second}).Run(context.Background(), vpp, agent)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Name != "agent" || ee.Err != nil {
		t.Fatalf("Run = %v", err)
	}
	out, _ := exec.Command("cat", order).Output()
	if strings.TrimSpace(string(out)) != "socket-was-ready" {
		t.Error("agent started before the socket was ready")
	}
}

func TestReadinessFailures(t *testing.T) {
	never := func(context.Context) error { return errors.New("no socket") }
	tests := []struct {
		name string
		proc Process
		want string
	}{
		{name: "timeout", proc: Process{Name: "vpp", Path: "/bin/sh", Args: []string{"-c", "sleep 30"}, Ready: never, ReadyTimeout: 200 * time.Millisecond},
			want: "vpp not ready within 200ms: no socket"},
		{name: "exits first", proc: Process{Name: "vpp", Path: "/bin/sh", Args: []string{"-c", "exit 1"}, Ready: never, ReadyTimeout: 5 * time.Second},
			want: "vpp exited: exit status 1\nexited before it was ready: no socket"},
		{name: "missing binary", proc: Process{Name: "vpp", Path: "/nonexistent/vpp"},
			want: "start vpp (/nonexistent/vpp)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Group{Log: quiet()}).Run(context.Background(), tc.proc, sh("agent", "sleep 30"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want %q", err, tc.want)
			}
		})
	}
}

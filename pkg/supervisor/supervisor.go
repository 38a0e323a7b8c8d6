// Package supervisor runs a small group of processes that only make sense together,
// like VPP and contiv-agent in the vswitch container: it starts them in order (each
// optionally waiting until the previous one is ready), relays their output, forwards
// termination to all of them, and when any of them exits it stops the others. It is the
// logic behind contiv-init; it knows nothing about VPP or the agent.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Process describes one supervised program.
type Process struct {
	// Name is used in logs and errors.
	Name string
	// Path and Args are the program and its arguments.
	Path string
	Args []string
	// Env adds KEY=VALUE entries to the inherited environment.
	Env []string
	// Ready, when set, is polled after the start until it returns nil (e.g. "the API
	// socket accepts connections"); the next process starts only then.
	Ready func(ctx context.Context) error
	// ReadyTimeout bounds the wait for Ready (default 60s).
	ReadyTimeout time.Duration
}

// Group is a set of processes started together and stopped together.
type Group struct {
	// Log receives lifecycle messages.
	Log logrus.FieldLogger
	// Stdout and Stderr receive the processes' output (default os.Stdout/os.Stderr).
	Stdout, Stderr io.Writer
	// StopTimeout is how long a process gets between SIGTERM and SIGKILL (default 10s).
	StopTimeout time.Duration
}

// ExitError says which process ended the group and how.
type ExitError struct {
	// Name is the process that exited first.
	Name string
	// Err is its exit error (nil: it exited with status 0, which still ends the group).
	Err error
}

// Error describes the exit.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s exited", e.Name)
	}
	return fmt.Sprintf("%s exited: %v", e.Name, e.Err)
}

// Unwrap returns the process's exit error.
func (e *ExitError) Unwrap() error { return e.Err }

type running struct {
	p    Process
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // valid after done is closed
}

// Run starts the processes in order and supervises them until ctx is cancelled (all are
// stopped, nil is returned) or one of them exits (the others are stopped and an
// *ExitError names it). A start or readiness failure stops what was started and is
// returned.
func (g *Group) Run(ctx context.Context, procs ...Process) error {
	log := infra.LoggerOr(g.Log, "supervisor")
	var started []*running
	exited := make(chan *running, len(procs))
	stopAll := func() {
		for i := len(started) - 1; i >= 0; i-- {
			g.stop(log, started[i])
		}
	}
	for _, p := range procs {
		r, err := g.start(p, exited)
		if err != nil {
			stopAll()
			return err
		}
		started = append(started, r)
		log.WithField("process", p.Name).WithField("pid", r.cmd.Process.Pid).Info("started")
		if p.Ready != nil {
			if err := g.waitReady(ctx, r, exited); err != nil {
				stopAll()
				return err
			}
			log.WithField("process", p.Name).Info("ready")
		}
	}
	select {
	case <-ctx.Done():
		log.Info("stopping all processes")
		stopAll()
		return nil
	case r := <-exited:
		log.WithField("process", r.p.Name).WithError(r.err).Warn("process exited: stopping the others")
		stopAll()
		return &ExitError{Name: r.p.Name, Err: r.err}
	}
}

func (g *Group) start(p Process, exited chan<- *running) (*running, error) {
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = g.Stdout, g.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// Own process group, so a terminal's Ctrl-C reaches the children only through us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", p.Name, p.Path, err)
	}
	r := &running{p: p, cmd: cmd, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
		exited <- r
	}()
	return r, nil
}

func (g *Group) waitReady(ctx context.Context, r *running, exited <-chan *running) error {
	timeout := r.p.ReadyTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = r.p.Ready(ctx); last == nil {
			return nil
		}
		select {
		case <-r.done:
			return &ExitError{Name: r.p.Name, Err: errors.Join(r.err, fmt.Errorf("exited before it was ready: %w", last))}
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v: %w", r.p.Name, timeout, last)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process group, waits up to StopTimeout, then SIGKILL.
func (g *Group) stop(log logrus.FieldLogger, r *running) {
	select {
	case <-r.done:
		return
	default:
	}
	timeout := g.StopTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// The whole process group: helpers a program started go with it.
	pid := r.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-r.done:
		log.WithField("process", r.p.Name).Info("stopped")
	case <-time.After(timeout):
		log.WithField("process", r.p.Name).Warnf("did not stop within %v: killing it", timeout)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-r.done
	}
}

// SocketReady returns a Ready function that succeeds once path is a unix socket that
// accepts connections (e.g. VPP's /run/vpp/api.sock).
func SocketReady(path string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

package lab

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a program the lab runs (etcd, kube-apiserver, vpp-sim, contiv-agent, ...),
// optionally inside a network namespace, with its output in a log file. It is killed
// when the lab process dies (parent-death signal), so a crashed test leaves no process.
type Process struct {
	// Name says what the process is in messages ("node1/contiv-agent").
	Name string
	// LogPath is the file with its stdout and stderr.
	LogPath string

	argv  []string
	netns string // name of the namespace, "" = the lab's own
	env   []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// newProcess describes a process; start runs it.
func newProcess(name, logPath, netns string, env []string, argv ...string) *Process {
	return &Process{Name: name, LogPath: logPath, argv: argv, netns: netns, env: env}
}

// Start runs the process (again, after it stopped: a restart appends to the same log).
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.runningLocked() {
		return fmt.Errorf("%s: already running", p.Name)
	}
	argv := p.argv
	if p.netns != "" {
		argv = append([]string{"ip", "netns", "exec", p.netns}, argv...)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log: %w", p.Name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: start %s: %w", p.Name, argv[0], err)
	}
	p.cmd, p.done, p.waitErr = cmd, make(chan struct{}), nil
	done := p.done
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func (p *Process) runningLocked() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends sig, waits up to timeout for the exit, then kills the process group. It is
// a no-op on a process that does not run.
func (p *Process) Stop(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, cmd.Process.Pid)
	}
	return fmt.Errorf("%s did not exit within %v of %v: killed", p.Name, timeout, sig)
}

// Kill kills the process with SIGKILL and waits for it (a crash, for fault tests).
func (p *Process) Kill() error { return p.Stop(syscall.SIGKILL, 10*time.Second) }

// exitError returns why the process stopped, nil while it runs.
func (p *Process) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.runningLocked() {
		return nil
	}
	return fmt.Errorf("%s exited: %v; last lines of %s:\n%s", p.Name, p.waitErr, p.LogPath, tailFile(p.LogPath, 15))
}

// LogCount returns how many times the process's log contains s.
func (p *Process) LogCount(s string) int {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return 0
	}
	return bytes.Count(data, []byte(s))
}

// tailFile returns the last n lines of a file (long lines cut), for error messages.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var tail []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 400 {
			line = line[:400] + " [...]"
		}
		tail = append(tail, line)
		if len(tail) > n {
			tail = tail[1:]
		}
	}
	return strings.Join(tail, "\n")
}

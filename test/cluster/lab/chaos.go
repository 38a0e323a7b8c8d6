package lab

import (
	"syscall"
	"time"
)

// Helpers of the chaos tests (issue #27): faults that the lab's other methods inject
// gracefully, here as crashes.

// KillContivEtcd kills the Contiv etcd with SIGKILL (a crash: no graceful shutdown, the
// clients' connections cut at once) and waits for it; StartContivEtcd starts it again
// with its data. StopContivEtcd (SIGTERM) can take seconds, during which etcd still
// serves: a chaos test that must stop it at a precise moment kills it.
func (l *Lab) KillContivEtcd() error {
	return l.contivEtcd.proc.Stop(syscall.SIGKILL, 10*time.Second)
}

// Running tells whether the process runs (it was started and has not exited).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && p.runningLocked()
}

// ContivEtcdRunning tells whether the Contiv etcd process runs.
func (l *Lab) ContivEtcdRunning() bool { return l.contivEtcd.proc.Running() }

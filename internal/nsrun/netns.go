// Package nsrun runs code inside a network namespace named by its path
// (/var/run/netns/<name> for those `ip netns` names): sockets opened there stay in
// that namespace. It serves the tests and the cluster lab, which talk to agents,
// pods and nodes living in namespaces of their own; it needs root.
package nsrun

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dir is where `ip netns` keeps the namespaces it names.
const Dir = "/var/run/netns"

// Path returns the path of the namespace `ip netns` knows by name.
func Path(name string) string { return filepath.Join(Dir, name) }

// Run runs fn on an OS thread that has entered the namespace at path; sockets fn
// creates stay in that namespace, and a process fn starts is born in it. The thread
// returns to its namespace afterwards; if it cannot, it stays locked and ends with the
// goroutine, so no other goroutine ever runs in the wrong namespace.
func Run(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open %s: %w", path, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter %s: %w", path, err)
			return
		}
		ferr := fn()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else: stay locked, the thread exits with this goroutine
		errc <- ferr
	}()
	return <-errc
}

// Dialer returns a DialContext that opens connections from inside the namespace at
// path (a pod's, to reach a Service as the pod would; an agent's, to reach its REST).
func Dialer(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := Run(path, func() error {
			var d net.Dialer
			var err error
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

// Listen opens a listener inside the namespace at path.
func Listen(path, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := Run(path, func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// ListenPacket opens a packet listener inside the namespace at path.
func ListenPacket(path, network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := Run(path, func() error {
		var err error
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

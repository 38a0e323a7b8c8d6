package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// NetnsDir is where ip netns keeps the namespaces it names (and where the lab's live).
const NetnsDir = "/var/run/netns"

// netnsPath returns the path of the named network namespace.
func netnsPath(name string) string { return filepath.Join(NetnsDir, name) }

// runIP runs the ip command with args and returns an error with its output.
func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// addNetns creates the named namespace with its loopback up.
func addNetns(name string) error {
	if err := runIP("netns", "add", name); err != nil {
		return err
	}
	if err := runIP("-n", name, "link", "set", "lo", "up"); err != nil {
		_ = runIP("netns", "delete", name)
		return err
	}
	return nil
}

// deleteNetns removes the named namespace; a namespace that does not exist is no error.
func deleteNetns(name string) error {
	if _, err := os.Stat(netnsPath(name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return runIP("netns", "delete", name)
}

// inNetns runs fn on an OS thread that has entered the namespace at path; sockets that
// fn creates stay in that namespace. The thread returns to its namespace afterwards; if
// it cannot, it is left locked and ends with the goroutine, so no other goroutine ever
// runs in the wrong namespace.
func inNetns(path string, fn func() error) error {
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

// DialerIn returns a DialContext that opens connections from inside the network namespace
// at path (e.g. a pod's, to reach a Service as the pod would).
func DialerIn(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := inNetns(path, func() error {
			var d net.Dialer
			var err error
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

// listenIn opens a listener inside the network namespace at path.
func listenIn(path, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := inNetns(path, func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// listenPacketIn opens a packet listener inside the network namespace at path.
func listenPacketIn(path, network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := inNetns(path, func() error {
		var err error
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

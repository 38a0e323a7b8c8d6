package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// NetnsDir is where ip netns keeps the namespaces it names (and where the lab's live).
const NetnsDir = nsrun.Dir

// netnsPath returns the path of the named network namespace.
func netnsPath(name string) string { return nsrun.Path(name) }

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

// DialerIn returns a DialContext that opens connections from inside the network namespace
// at path (e.g. a pod's, to reach a Service as the pod would).
func DialerIn(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return nsrun.Dialer(path)
}

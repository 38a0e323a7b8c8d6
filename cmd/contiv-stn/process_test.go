//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func ipCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A SIGKILLed daemon leaves its record; the next start gives the NIC back at once when
// VPP is not up, so the host is never left without its address.
func TestAKilledDaemonsNICIsGivenBackByTheNextStart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace")
	}
	root, err := testkit.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "contiv-stn")
	if err := testkit.GoBuild("", root, bin, "./cmd/contiv-stn"); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("stn-daemon-%d", os.Getpid())
	ipCmd(t, "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ipCmd(t, "-n", ns, "link", "add", "nic0", "type", "veth", "peer", "name", "peer0")
	ipCmd(t, "-n", ns, "link", "set", "nic0", "up")
	ipCmd(t, "-n", ns, "link", "set", "peer0", "up")
	ipCmd(t, "-n", ns, "addr", "add", "192.168.16.10/24", "dev", "nic0")
	ipCmd(t, "-n", ns, "route", "add", "default", "via", "192.168.16.1", "dev", "nic0")
	hasAddr := func() bool {
		return strings.Contains(ipCmd(t, "-n", ns, "-4", "addr", "show", "nic0"), "192.168.16.10/24")
	}

	sock, state := filepath.Join(dir, "api.sock"), filepath.Join(dir, "stn.json")
	vpp, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "-netns", nsrun.Path(ns), "-first-nic", "-state-file", state, "-vpp-socket", sock, "-interval", "50ms")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	d := start()
	testkit.EventuallyTrue(t, 5*time.Second, "the NIC taken", func() bool { return !hasAddr() })
	_ = d.Process.Signal(syscall.SIGKILL)
	_ = d.Wait()
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("the killed daemon's record is gone: %v", err)
	}
	_ = vpp.Close()     // VPP dies while no daemon watches
	begin := time.Now() // real time: how long the restarted daemon takes to give the NIC back
	start()
	testkit.EventuallyTrue(t, 5*time.Second, "the NIC given back by the restarted daemon", hasAddr)
	t.Logf("restarted daemon gave the NIC back %v after its start", time.Since(begin).Round(time.Millisecond))
	if !strings.Contains(ipCmd(t, "-n", ns, "route", "show", "default"), "via 192.168.16.1 dev nic0") {
		t.Error("the default route was not given back")
	}
	testkit.EventuallyTrue(t, 5*time.Second, "the record removed", func() bool { _, err := os.Stat(state); return os.IsNotExist(err) })
}

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// labUp is the line cluster-lab prints once the lab runs.
var labUp = regexp.MustCompile(`^Lab (ctvlab-[0-9a-f]+) is up`)

// TestMakeClusterStopsOnSIGTERMAndSIGINT: `make cluster` stopped with SIGTERM or SIGINT
// sent to make's process stops the lab: no process and no network namespace of it is
// left, and its registry entry is gone.
func TestMakeClusterStopsOnSIGTERMAndSIGINT(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cluster: needs root (network namespaces)")
	}
	root, err := testkit.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, skip := k8sBinDir(root); skip != "" {
		t.Skip(skip)
	}
	binDir := t.TempDir()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			makeClusterThenSignal(t, root, binDir, sig)
		})
	}
}

func makeClusterThenSignal(t *testing.T, root, binDir string, sig syscall.Signal) {
	cmd := exec.Command("make", "-C", root, "--no-print-directory", "cluster", "NODES=1", "BIN_DIR="+binDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // signals reach make only
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	name := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := labUp.FindStringSubmatch(sc.Text()); m != nil {
				name <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	var labName string
	select {
	case labName = <-name:
	case err := <-exited:
		t.Fatalf("make cluster exited before the lab was up: %v: %s", err, stderr.Bytes())
	case <-time.After(8 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("make cluster: no lab up within 8 minutes: %s", stderr.Bytes())
	}
	owner, err := labOwner(labName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopLeftLab(t, labName, owner) })

	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("make did not exit within a minute of %v", sig)
	}
	testkit.Eventually(t, time.Minute, "nothing of lab "+labName+" left", func() error {
		var left []string
		if alive(owner) {
			left = append(left, fmt.Sprintf("cluster-lab (pid %d)", owner))
		}
		procs, err := processesMentioning(labName)
		if err != nil {
			return err
		}
		left = append(left, procs...)
		entries, err := os.ReadDir(lab.NetnsDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), labName+"-") {
				left = append(left, "netns "+e.Name())
			}
		}
		if _, err := os.Stat(filepath.Join(lab.RunDir, labName)); err == nil {
			left = append(left, "registry entry "+filepath.Join(lab.RunDir, labName))
		}
		if len(left) > 0 {
			return fmt.Errorf("left after %v to make: %s", sig, strings.Join(left, ", "))
		}
		return nil
	})
}

// labOwner returns the PID of the process that runs the lab, from its registry entry.
func labOwner(name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(lab.RunDir, name))
	if err != nil {
		return 0, fmt.Errorf("lab %s: registry entry: %w", name, err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}

// stopLeftLab stops a lab that outlived the test's signal (its owner then removes
// everything; processes and namespaces left after that are removed here).
func stopLeftLab(t *testing.T, name string, owner int) {
	if alive(owner) {
		_ = syscall.Kill(owner, syscall.SIGTERM)
		err := testkit.Wait(context.Background(), time.Minute, fmt.Sprintf("lab owner %d exited", owner), func() error {
			if alive(owner) {
				return fmt.Errorf("process %d still running", owner)
			}
			return nil
		})
		if err != nil {
			t.Logf("lab %s: %v", name, err)
		}
	}
	if _, err := lab.SweepStale(); err != nil {
		t.Logf("sweep what lab %s left: %v", name, err)
	}
}

// alive tells whether a process with the PID exists (and is no zombie).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// processesMentioning returns the live processes whose command line holds s.
func processesMentioning(s string) ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(data, []byte(s)) || !alive(pid) {
			continue
		}
		out = append(out, fmt.Sprintf("pid %d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(data, "\x00"), []byte{0}, []byte(" "))))
	}
	return out, nil
}

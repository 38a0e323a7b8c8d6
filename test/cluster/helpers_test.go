// Package cluster holds the tests of the cluster lab (package lab): several contiv-agents
// with vpp-sim in node namespaces, contiv-ksr and a real kube-apiserver and
// kube-controller-manager. They share one lab, started by the first test that needs it
// and closed by TestMain; the tests that change the cluster (nodes joining and leaving,
// faults) restore what they changed.
//
// They skip unless they run as root with ip (iproute2) and the control-plane binaries of
// scripts/k8s-control-plane.sh: $CONTIV_K8S_BIN, else the directory the script prints
// with -print (built by `make k8s-control-plane`; `make test-cluster` builds and runs).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// k8sBinEnv names the directory of the control-plane binaries.
const k8sBinEnv = "CONTIV_K8S_BIN"

var shared struct {
	once    sync.Once
	lab     *lab.Lab
	binDir  string // the contiv binaries, removed by TestMain
	skip    string
	err     error
	started time.Duration
}

// k8sBinDir finds the control-plane binaries; "" with the reason when they are missing.
func k8sBinDir(root string) (string, string) {
	if d := os.Getenv(k8sBinEnv); d != "" {
		return d, ""
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "k8s-control-plane.sh"), "-print").Output()
	if err != nil {
		return "", "cluster: the Kubernetes control plane is not built (make k8s-control-plane, or run make test-cluster)"
	}
	return strings.TrimSpace(string(out)), ""
}

// buildContiv builds the binaries the lab runs into a new directory.
func buildContiv(root string) (string, error) {
	dir, err := os.MkdirTemp("", "ctvlab-bin-")
	if err != nil {
		return "", err
	}
	errs := make([]error, len(lab.ContivBinaries))
	var wg sync.WaitGroup
	for i, name := range lab.ContivBinaries {
		wg.Go(func() {
			errs[i] = testkit.GoBuild("", root, filepath.Join(dir, name), "./cmd/"+name)
		})
	}
	wg.Wait()
	return dir, errors.Join(errs...)
}

// sharedLab returns the lab of this test run, starting it on first use (3 nodes).
func sharedLab(t testing.TB) *lab.Lab {
	t.Helper()
	shared.once.Do(func() {
		if os.Geteuid() != 0 {
			shared.skip = "cluster: needs root (network namespaces, TAP interfaces)"
			return
		}
		if _, err := exec.LookPath("ip"); err != nil {
			shared.skip = "cluster: the ip command (iproute2) is not installed"
			return
		}
		root, err := testkit.ModuleRoot()
		if err != nil {
			shared.err = err
			return
		}
		k8sBin, skip := k8sBinDir(root)
		if skip != "" {
			shared.skip = skip
			return
		}
		start := time.Now()
		if shared.binDir, shared.err = buildContiv(root); shared.err != nil {
			return
		}
		t.Logf("built %s in %v", strings.Join(lab.ContivBinaries, ", "), time.Since(start).Round(time.Millisecond))
		start = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shared.lab, shared.err = lab.Start(ctx, lab.Config{
			Nodes: 3, K8sBinDir: k8sBin, ContivBinDir: shared.binDir, KeepDir: os.Getenv("CONTIV_LAB_KEEP") != "",
			SingleNIC: os.Getenv("CONTIV_LAB_NIC") == "single",
			Logf:      func(format string, args ...any) { fmt.Fprintf(os.Stderr, "  lab: "+format+"\n", args...) },
		})
		shared.started = time.Since(start)
		if shared.err == nil {
			t.Logf("lab %s with 3 nodes up in %v (dir %s)", shared.lab.Name, shared.started.Round(time.Millisecond), shared.lab.Dir)
		}
	})
	if shared.skip != "" {
		t.Skip(shared.skip)
	}
	if shared.err != nil {
		t.Fatalf("start the lab: %v", shared.err)
	}
	return shared.lab
}

// closeShared closes the lab and removes the binaries (TestMain).
func closeShared() error {
	var errs []error
	if shared.lab != nil {
		errs = append(errs, shared.lab.Close())
	}
	if shared.binDir != "" {
		errs = append(errs, os.RemoveAll(shared.binDir))
	}
	return errors.Join(errs...)
}

// etcdClient returns a client of the lab's Contiv etcd, closed when t ends.
func etcdClient(t *testing.T, l *lab.Lab) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{l.ContivEtcd}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx returns a context ending with the test (or after timeout).
func testCtx(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

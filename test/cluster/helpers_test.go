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
	"slices"
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

// labBinEnv names the directory of contiv binaries that TestMain hands to the child
// processes of its subset labs: built once per run, not once per lab.
const labBinEnv = "CONTIV_LAB_CONTIV_BIN"

var shared struct {
	once   sync.Once
	lab    *lab.Lab
	binDir string // the contiv binaries, removed by TestMain
	// binShared: binDir is the parent test process's (labBinEnv), not ours to remove.
	binShared bool
	skip      string
	err       error
	started   time.Duration
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
		if dir := os.Getenv(labBinEnv); dir != "" {
			shared.binDir, shared.binShared = dir, true // the parent's (a subset lab of TestMain)
		} else {
			if shared.binDir, shared.err = buildContiv(root); shared.err != nil {
				return
			}
			t.Logf("built %s in %v", strings.Join(lab.ContivBinaries, ", "), time.Since(start).Round(time.Millisecond))
		}
		family, err := labIPFamily(os.Getenv(labNICEnv) == "single")
		if err != nil {
			shared.err = fmt.Errorf("%s: %w", labIPFamilyEnv, err)
			return
		}
		renderer, err := labRenderer()
		if err != nil {
			shared.err = fmt.Errorf("%s: %w", labRendererEnv, err)
			return
		}
		start = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shared.lab, shared.err = lab.Start(ctx, lab.Config{
			Nodes: 3, K8sBinDir: k8sBin, ContivBinDir: shared.binDir, KeepDir: os.Getenv("CONTIV_LAB_KEEP") != "",
			SingleNIC: os.Getenv(labNICEnv) == "single", IPFamily: family, ServiceRenderer: renderer,
			Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "  lab: "+format+"\n", args...) },
		})
		shared.started = time.Since(start)
		if shared.err == nil {
			t.Logf("lab %s (%s, serviceRenderer %s) with 3 nodes up in %v (dir %s)", shared.lab.Name, family, renderer, shared.started.Round(time.Millisecond), shared.lab.Dir)
		}
	})
	if shared.skip != "" {
		t.Skip(shared.skip)
	}
	if shared.err != nil {
		t.Fatalf("start the lab: %v", shared.err)
	}
	if shared.lab.IPFamily() == lab.IPv6 && !slices.ContainsFunc(ipv6Tests, func(p string) bool { return strings.HasPrefix(t.Name(), p) }) {
		t.Skip("cluster: this test is written for IPv4, the lab is single-stack IPv6 (" + labIPFamilyEnv + "=ipv6 runs ipv6Tests)")
	}
	return shared.lab
}

// requireIPv6 skips a test of IPv6 traffic on a lab without IPv6.
func requireIPv6(t *testing.T, l *lab.Lab) {
	t.Helper()
	if !l.IPFamily().HasIPv6() {
		t.Skipf("cluster: the lab is %s (%s=dual or ipv6 gives it IPv6)", l.IPFamily(), labIPFamilyEnv)
	}
}

// requireNAT44 skips a test of what the NAT44 renderer does and the cnat renderer
// inherently does not, on a lab whose IPv4 Services are cnat's; difference is the row
// of docs/dev-guide/SERVICES.md's table of differences that says why.
func requireNAT44(t *testing.T, l *lab.Lab, difference string) {
	t.Helper()
	if l.ServiceRenderer() != lab.RendererNAT44 {
		t.Skipf("cluster: serviceRenderer %s: %s (docs/dev-guide/SERVICES.md, the cnat renderer's differences)", l.ServiceRenderer(), difference)
	}
}

// closeShared closes the lab (TestMain).
func closeShared() error {
	if shared.lab != nil {
		return shared.lab.Close()
	}
	return nil
}

// removeBinaries removes the binaries this process built (TestMain, after its subset
// labs used them).
func removeBinaries() error {
	if shared.binDir == "" || shared.binShared {
		return nil
	}
	return os.RemoveAll(shared.binDir)
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

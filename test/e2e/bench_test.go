package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// benchRuns is how many CNI ADDs each series measures.
const benchRuns = 20

// referencePlugins are the standard bridge and host-local plugins, built once per run.
var referencePlugins struct {
	once sync.Once
	dir  string
	err  error
}

// referenceCNIPlugins builds bridge and host-local v1.7.1 into a directory: from this
// module if it requires containernetworking/plugins, else with go install ...@v1.7.1
// (the module proxy or the module cache). Like contiv-cni, they are built without cgo,
// as their releases are.
func referenceCNIPlugins(tb testing.TB, e *env) (string, error) {
	tb.Helper()
	r := &referencePlugins
	r.once.Do(func() {
		start := time.Now()
		if r.dir, r.err = sharedTempDir("ctv-e2e-cni-ref-"); r.err != nil {
			return
		}
		const mod = "github.com/containernetworking/plugins"
		pkgs := map[string]string{"bridge": mod + "/plugins/main/bridge", "host-local": mod + "/plugins/ipam/host-local"}
		var errInModule error
		for name, pkg := range pkgs {
			if errInModule = testkit.GoBuild(e.goCmd, e.root, filepath.Join(r.dir, name), pkg); errInModule != nil {
				break
			}
		}
		if errInModule == nil {
			tb.Logf("built bridge and host-local from the module in %v", time.Since(start).Round(time.Millisecond))
			return
		}
		cmd := exec.Command(e.goCmd, "install", pkgs["bridge"]+"@v1.7.1", pkgs["host-local"]+"@v1.7.1")
		cmd.Dir = r.dir
		cmd.Env = append(os.Environ(), "GOBIN="+r.dir, "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			r.err = fmt.Errorf("bridge and host-local v1.7.1: not in go.mod (%v), and go install failed: %v\n%s", errInModule, err, out)
			return
		}
		tb.Logf("installed bridge and host-local v1.7.1 in %v (%s is not required by go.mod)", time.Since(start).Round(time.Millisecond), mod)
	})
	return r.dir, r.err
}

// benchSeries is one way of running CNI ADD that the benchmark measures.
type benchSeries struct {
	name   string
	cni    *cniRunner
	subnet string // the result's address must be in it
}

// measureAdds runs runs CNI ADDs of every series, interleaved (so that a change of the
// machine's load affects all series alike). Each ADD goes into a fresh pod namespace and
// its result is checked; DEL follows, and the namespace is deleted. It returns the
// durations of the ADDs (cnitool start to exit), per series.
func measureAdds(b *testing.B, e *env, series []benchSeries, runs int) [][]time.Duration {
	b.Helper()
	subnets := make([]*net.IPNet, len(series))
	for i, s := range series {
		_, sub, err := net.ParseCIDR(s.subnet)
		if err != nil {
			b.Fatal(err)
		}
		subnets[i] = sub
	}
	durations := make([][]time.Duration, len(series))
	for run := range runs {
		for i, s := range series {
			pod := newPodNetns(b, e)
			name := fmt.Sprintf("bench-%d", run)
			start := time.Now()
			stdout, stderr, err := s.cni.cnitool("add", pod, podArgs(name))
			d := time.Since(start)
			if err != nil {
				b.Fatalf("%s: cnitool add %s: %v\n%s", s.name, name, err, stderr)
			}
			res, err := parseCNIResult(stdout)
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			if ip, _, err := net.ParseCIDR(res.IPs[0].Address); err != nil || !subnets[i].Contains(ip) {
				b.Fatalf("%s: ADD %s: address %q not in %s", s.name, name, res.IPs[0].Address, s.subnet)
			}
			durations[i] = append(durations[i], d)
			if _, stderr, err := s.cni.cnitool("del", pod, podArgs(name)); err != nil {
				b.Fatalf("%s: cnitool del %s: %v\n%s", s.name, name, err, stderr)
			}
			if err := pod.delete(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return durations
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkCNIAdd measures a pod's CNI ADD end to end (cnitool -> contiv-cni -> agent ->
// simulated VPP -> the pod's namespace), 20 times with a fresh pod namespace each and a
// DEL after each, and the same with the standard bridge + host-local plugins v1.7.1 as
// the reference, the ADDs of both interleaved. Both run cnitool the same way, in their
// node namespace: ip netns exec <node> cnitool add (bridge must run there). It reports
// the medians (ns/op is contiv's median), their ratio, and contiv's median with cnitool
// run directly in the test's namespace as in the tests (contiv-cni needs only the
// agent's socket). Run with
//
//	go test -run '^$' -bench CNIAdd ./test/e2e/
//
// Each call measures every series once, whatever b.N.
func BenchmarkCNIAdd(b *testing.B) {
	e := requireEnv(b)

	node := startContivNode(b, e)
	inNode := *node.cni
	inNode.inNS = node.ns
	series := []benchSeries{
		{name: "contiv", cni: &inNode, subnet: podSubnet},
		{name: "contiv, cnitool in the test's namespace", cni: node.cni, subnet: podSubnet},
	}
	refDir, err := referenceCNIPlugins(b, e)
	if err != nil {
		b.Logf("no reference measurement: %v", err)
	} else {
		bridge := newCNIRunner(b, e, refDir, fmt.Sprintf("%sbridge-%d-%d", nsPrefix, os.Getpid(), nsSeq.Add(1)), map[string]any{
			"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]any{{{"subnet": "10.22.0.0/24"}}},
				"routes":  []map[string]any{{"dst": "0.0.0.0/0"}},
				"dataDir": filepath.Join(b.TempDir(), "host-local"),
			},
		})
		bridge.inNS = newNodeNetns(b, e)
		series = append(series, benchSeries{name: "bridge + host-local", cni: bridge, subnet: "10.22.0.0/24"})
	}

	durations := measureAdds(b, e, series, benchRuns)
	medians := make([]time.Duration, len(series))
	for i, s := range series {
		ds := durations[i]
		medians[i] = median(ds)
		b.Logf("%s: %d ADDs, median %.1f ms, min %.1f ms, max %.1f ms",
			s.name, len(ds), ms(medians[i]), ms(slices.Min(ds)), ms(slices.Max(ds)))
	}
	b.ReportMetric(float64(medians[0].Nanoseconds()), "ns/op")
	b.ReportMetric(ms(medians[0]), "contiv_median_ms")
	b.ReportMetric(ms(medians[1]), "contiv_direct_median_ms")
	if len(series) > 2 {
		b.ReportMetric(ms(medians[2]), "bridge_median_ms")
		b.ReportMetric(float64(medians[0])/float64(medians[2]), "contiv/bridge")
		b.Logf("contiv/bridge = %.2f", float64(medians[0])/float64(medians[2]))
	}
}

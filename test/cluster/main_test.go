package cluster

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// labNICEnv chooses the wiring of the lab's nodes: "dual" (VPP's NIC apart from the
// host's), "single" (one NIC per node, stolen for VPP by contiv-stn: STN), or "both"
// (also when unset, as make test runs it): every test on a two-NIC lab, then
// singleNICTests on a single-NIC lab.
const labNICEnv = "CONTIV_LAB_NIC"

// singleNICTests are the tests that the second lab of a "both" run runs on single-NIC
// nodes: the STN tests, and the core traffic tests the issue asks for in both modes
// (the node mesh, pods across nodes, pods from outside, ClusterIP, NodePort from outside
// and from a node). One subset, not the whole suite: a second lab costs its start plus
// its tests, and the rest of the suite exercises nothing that the NIC's wiring changes.
var singleNICTests = []string{
	"TestSingleNIC",
	"TestThreeNodesGetIDsOneToThreeAndAFullVXLANMesh",
	"TestPodToPodAcrossNodesTCP",
	"TestTheExternalClientReachesEveryPodByItsIP",
	"TestClusterIPServiceReachedFromAPodOnEveryNode",
	"TestNodePortFromTheExternalClient",
	"TestANodeReachesAClusterIPAndAnotherNodesNodePort",
}

// TestMain runs the tests, closes the shared lab and fails the run if a network namespace
// of the lab survives it. In a "both" run (labNICEnv) of the whole suite whose lab ran,
// it then runs singleNICTests again, on a single-NIC lab, in a child process of the same
// test binary: one lab at a time, each closed and checked for leftovers.
func TestMain(m *testing.M) {
	code := m.Run()
	if !closeSharedAndCheck() {
		code = 1
	}
	if mode := os.Getenv(labNICEnv); (mode == "" || mode == "both") && shared.lab != nil && !filtered() {
		if !runSingleNICLab() {
			code = 1
		}
	}
	os.Exit(code)
}

// closeSharedAndCheck closes the shared lab and reports a network namespace of it that
// survived; false on either failure.
func closeSharedAndCheck() bool {
	var name string
	if shared.lab != nil {
		name = shared.lab.Name
	}
	ok := true
	if err := closeShared(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: FAIL: close the lab: %v\n", err)
		ok = false
	}
	if name == "" {
		return ok
	}
	entries, err := os.ReadDir(lab.NetnsDir)
	if err != nil && !os.IsNotExist(err) {
		fmt.Fprintf(os.Stderr, "cluster: list network namespaces: %v\n", err)
		return false
	}
	var leaked []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name) {
			leaked = append(leaked, e.Name())
		}
	}
	if len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "cluster: FAIL: network namespaces left behind: %v\n", leaked)
		return false
	}
	return ok
}

// filtered tells whether the run names its tests (-run, -skip): then it is not the whole
// suite, and no second lab runs.
func filtered() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// runSingleNICLab runs singleNICTests in a child of this test binary with single-NIC
// nodes, its output on ours, and says how long it took; false if it failed.
func runSingleNICLab() bool {
	args := []string{"-test.run", "^(" + strings.Join(singleNICTests, "|") + ")", "-test.timeout", "20m"}
	if f := flag.Lookup("test.v"); f != nil && f.Value.String() != "false" {
		args = append(args, "-test.v="+f.Value.String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), labNICEnv+"=single")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Printf("cluster: the same suite's single-NIC part (%s=single): %s\n", labNICEnv, strings.Join(singleNICTests, " "))
	start := time.Now() // real time: the CI cost of the second lab, reported
	err := cmd.Run()
	fmt.Printf("cluster: single-NIC lab: %v (%v)\n", map[bool]string{true: "ok", false: "FAIL"}[err == nil], time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: FAIL: the single-NIC lab's tests: %v\n", err)
		return false
	}
	return true
}

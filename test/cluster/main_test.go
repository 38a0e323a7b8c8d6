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

// labIPFamilyEnv chooses the address families of the lab (lab.ParseIPFamily): "dual"
// (also when unset: the suite runs on a dual-stack lab, IPv4 primary, so every IPv4
// test also checks that IPv6 beside it changes nothing, and the IPv6 tests run), "ipv4"
// or "ipv6". Single-NIC labs are IPv4 (unset gives "ipv4" there). A single-stack IPv6
// lab runs only ipv6Tests (the others are written for IPv4: they skip).
const labIPFamilyEnv = "CONTIV_LAB_IPFAMILY"

// labIPFamily is the family labIPFamilyEnv chooses for a lab of the given wiring.
func labIPFamily(singleNIC bool) (lab.IPFamily, error) {
	v := os.Getenv(labIPFamilyEnv)
	switch {
	case v != "":
		return lab.ParseIPFamily(v)
	case singleNIC:
		return lab.IPv4, nil
	}
	return lab.DualStack, nil
}

// ipv6Tests are the tests a single-stack IPv6 lab runs: the third lab of a "both"
// run, and the only tests of a run with labIPFamilyEnv=ipv6. IPv6 Services are tested
// on the dual-stack labs (services6_test.go: beside IPv4 NAT44, and in cnatTests).
var ipv6Tests = []string{
	"TestSingleStackIPv6",
	"TestIPv6",
	"TestPolicyMatrixGivesTheSameVerdictsOverEachFamily",
}

// labRendererEnv chooses contiv.conf's serviceRenderer on the lab's nodes
// (lab.ParseServiceRenderer): "nat44" (also when unset) or "cnat". A "both" run of the
// whole suite also runs cnatTests on a dual-stack lab with "cnat".
const labRendererEnv = "CONTIV_LAB_RENDERER"

// cnatTests are the tests that the cnat lab of a "both" run runs (issue #29 item 3):
// every test of Service forwarding, which must reach the same backends with either
// renderer of IPv4 Services; those that depend on what is inherently NAT44's skip there
// with the difference (requireNAT44). Left out: the rest of the suite, which renders
// no Service, and the Service tests of what the processor or the policy decides before
// any renderer (a Service of another proxy, a native sidecar's named port): ~3.5 min
// on the 2-core CI machine, the whole package ~17 min with it (measured under load).
var cnatTests = []string{
	"TestClusterIPServiceReachedFromAPodOnEveryNode",
	"TestNodePortFromTheExternalClient",
	"TestScalingDownAndUpNoConnectionReachesADeletedPod",
	"TestABackendReachesEveryBackendThroughItsOwnClusterIP",
	"TestANodeReachesAClusterIPAndAnotherNodesNodePort",
	"TestClientIPAffinity",
	"TestALoadBalancerService",
	"TestTheHealthCheckNodePort",
	"TestExternalTrafficPolicyLocal",
	"TestInternalTrafficPolicyLocal",
	"TestAServiceWithoutEndpoints",
	"TestTerminatingEndpoints",
	"TestAUDPClientKeepingItsSocket",
	"TestAClusterIPOfASecondServiceCIDR",
	"TestPreferClose",
	"TestExternalAndLoadBalancerIPs",
	"TestDualStackService",
	"TestAnIPv6ClusterIP",
	"TestSwitchingTheServiceRenderer",
}

// labRenderer is the renderer labRendererEnv chooses.
func labRenderer() (lab.ServiceRenderer, error) {
	return lab.ParseServiceRenderer(os.Getenv(labRendererEnv))
}

// TestMain runs the tests, closes the shared lab and fails the run if a network namespace
// of the lab survives it. In a "both" run (labNICEnv) of the whole suite whose lab ran,
// it then runs, each in a child process of the same test binary (one lab at a time,
// each closed and checked for leftovers): singleNICTests on a single-NIC (IPv4) lab,
// and, unless labIPFamilyEnv chose a family, ipv6Tests on a single-stack IPv6 lab and
// (unless labRendererEnv chose a renderer too) cnatTests on a dual-stack lab whose
// contiv.conf says serviceRenderer: cnat.
func TestMain(m *testing.M) {
	code := m.Run()
	if !closeSharedAndCheck() {
		code = 1
	}
	if mode := os.Getenv(labNICEnv); (mode == "" || mode == "both") && shared.lab != nil && !filtered() {
		more := []subsetLab{{"single-NIC", labNICEnv + "=single", singleNICTests}}
		if os.Getenv(labIPFamilyEnv) == "" {
			more = append(more, subsetLab{"single-stack IPv6", labIPFamilyEnv + "=" + string(lab.IPv6), ipv6Tests})
		}
		if os.Getenv(labIPFamilyEnv) == "" && os.Getenv(labRendererEnv) == "" {
			more = append(more, subsetLab{"cnat renderer", labRendererEnv + "=" + string(lab.RendererCNAT), cnatTests})
		}
		for _, s := range more {
			if !s.run() {
				code = 1
			}
		}
	}
	if err := removeBinaries(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: FAIL: remove the binaries: %v\n", err)
		code = 1
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

// subsetLab is a second lab of a "both" run: some tests of the suite on a lab that
// differs by one environment variable.
type subsetLab struct {
	name  string   // the lab's kind, for the output
	env   string   // NAME=value: what makes the lab differ
	tests []string // names (prefixes) of the tests it runs
}

// run runs the subset's tests in a child of this test binary, its output on ours, and
// says how long it took; false if it failed.
func (s subsetLab) run() bool {
	args := []string{"-test.run", "^(" + strings.Join(s.tests, "|") + ")", "-test.timeout", "20m"}
	if f := flag.Lookup("test.v"); f != nil && f.Value.String() != "false" {
		args = append(args, "-test.v="+f.Value.String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), s.env, labBinEnv+"="+shared.binDir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Printf("cluster: the same suite's %s part (%s): %s\n", s.name, s.env, strings.Join(s.tests, " "))
	start := time.Now() // real time: the CI cost of the extra lab, reported
	err := cmd.Run()
	fmt.Printf("cluster: %s lab: %v (%v)\n", s.name, map[bool]string{true: "ok", false: "FAIL"}[err == nil], time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: FAIL: the %s lab's tests: %v\n", s.name, err)
		return false
	}
	return true
}

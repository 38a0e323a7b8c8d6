package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The fault tests reproduce issue #20 item 1 through the real binaries: contiv-agent
// (controller, scheduler, VPP plugins), contiv-cni driven by cnitool, and a simulated
// VPP (faultsim) into which the test injects failures while the agent runs. A transient
// VPP error, or one Service whose NAT mapping VPP keeps refusing, must not stop the
// node: /liveness stays 200, /readiness turns DEGRADED naming the failing keys and
// returns to OK once VPP accepts the values, and a new pod is wired meanwhile.

const (
	faultSvc     = "web"
	faultSvcIP   = "10.96.7.10"
	lbMappingMsg = "nat44_add_del_lb_static_mapping"
	tapCreateMsg = "tap_create_v3"
	// vppIfKeyPrefix is the key prefix of VPP interfaces (api/models/vpp/interfaces).
	vppIfKeyPrefix = "config/vpp/v2/interfaces/"
	// dnatKeyPrefix is the key prefix of DNat44 values (api/models/vpp/nat).
	dnatKeyPrefix = "config/vpp/nat/v2/dnat44/"
)

// faultScene is a node with pods p1 and p2 wired, p3 scheduled but not added, and
// optionally the Service faultSvc with p1 and p2 as endpoints.
type faultScene struct {
	node   *faultNode
	pods   map[string]*pod
	podIPs map[string]string
}

func newFaultScene(t *testing.T) *faultScene {
	t.Helper()
	e := requireEnv(t)
	s := &faultScene{node: startFaultNode(t, e, "p1", "p2", "p3"), pods: map[string]*pod{}, podIPs: map[string]string{"p3": ""}}
	for _, name := range []string{"p1", "p2"} {
		s.pods[name] = s.node.addPod(t, name)
		s.podIPs[name] = s.pods[name].ip
	}
	s.node.setClusterPods(s.podIPs)
	return s
}

// addService writes faultSvc into the cluster file.
func (s *faultScene) addService() {
	s.node.extraDocs = serviceDocs(faultSvc, faultSvcIP, map[string]string{"p1": s.podIPs["p1"], "p2": s.podIPs["p2"]})
	s.node.setClusterPods(s.podIPs)
}

// serviceRendered returns nil once VPP has the mapping of faultSvc to both pods.
func (s *faultScene) serviceRendered() error {
	cli, err := s.node.rest.vppCLI("show nat44 static mappings")
	if err != nil {
		return err
	}
	want := []string{faultSvcIP + ":80", s.podIPs["p1"] + ":8080", s.podIPs["p2"] + ":8080"}
	for _, w := range want {
		if !strings.Contains(cli, w) {
			return fmt.Errorf("no %s in show nat44 static mappings:\n%s", w, cli)
		}
	}
	return nil
}

// healthy returns nil once the agent is ready and the Service, if added, is rendered.
func (s *faultScene) healthy() error {
	if err := s.node.rest.ready(); err != nil {
		return err
	}
	if len(s.node.extraDocs) > 0 {
		return s.serviceRendered()
	}
	return nil
}

// count returns how many msg requests faultsim received.
func (s *faultScene) count(t *testing.T, msg string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s.node.mustControl(t, "count "+msg), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// awaitDegraded waits until the controller reports DEGRADED with a reason that names a
// key of which isFailing tells it is the failing one, and /readiness fails; it returns
// the named keys.
func (s *faultScene) awaitDegraded(t *testing.T, timeout time.Duration, isFailing func(key string) bool) []string {
	t.Helper()
	var keys []string
	testkit.Eventually(t, timeout, "readiness DEGRADED naming the failing key", func() error {
		// The metric first: the check of the state is the last request, so that the
		// caller acts right after the node was seen DEGRADED.
		metric, metricErr := s.node.failedValuesMetric()
		h, err := s.node.readiness()
		if err != nil {
			return err
		}
		if h.ctlState == "ERROR" {
			t.Fatalf("the controller is in ERROR (the node would be restarted): %s", h.components)
		}
		if h.ctlState != "DEGRADED" {
			return fmt.Errorf("controller state %s: %s", h.ctlState, h.components)
		}
		keys = reasonKeys(h.ctlReason)
		if !slices.ContainsFunc(keys, isFailing) {
			return fmt.Errorf("the reason names no failing key of the expected kind: %s", h.ctlReason)
		}
		if h.code == http.StatusOK {
			return fmt.Errorf("/readiness is 200 while the controller is DEGRADED: %s", h.components)
		}
		if metricErr != nil || metric < 1 {
			return fmt.Errorf("contiv_controller_failed_values = %v (%v) while DEGRADED naming %v, want >= 1", metric, metricErr, keys)
		}
		return nil
	})
	return keys
}

// reasonKeys returns the keys named by the controller's DEGRADED reason: "N values
// failing: <key> (<state>: <error>); ...".
func reasonKeys(reason string) []string {
	_, list, ok := strings.Cut(reason, "values failing:")
	if !ok {
		return nil
	}
	var keys []string
	for _, item := range strings.Split(list, ");") {
		f := strings.Fields(item)
		if len(f) > 0 && strings.Contains(f[0], "/") {
			keys = append(keys, f[0])
		}
	}
	return keys
}

// addPodWhileDegraded adds p3 and checks that the controller was DEGRADED when the ADD
// started: a pod whose wiring does not depend on the failing values is served.
func (s *faultScene) addPodWhileDegraded(t *testing.T) {
	t.Helper()
	h, err := s.node.readiness()
	if err != nil {
		t.Fatal(err)
	}
	if h.ctlState != "DEGRADED" {
		t.Fatalf("the controller is %s before the ADD of p3, want DEGRADED (the test is too slow for the fault): %s",
			h.ctlState, h.components)
	}
	start := time.Now()
	p3 := s.node.addPod(t, "p3")
	s.pods["p3"], s.podIPs["p3"] = p3, p3.ip
	after, err := s.node.readiness()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ADD p3 while DEGRADED: %s in %v (controller %s after it)", p3.ip, time.Since(start).Round(time.Millisecond), after.ctlState)
}

// awaitHealed waits until readiness is OK and the Service, if added, is back in VPP.
func (s *faultScene) awaitHealed(t *testing.T, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	testkit.Eventually(t, timeout, "readiness OK and the service in VPP", s.healthy)
	t.Logf("healthy after a further %v", time.Since(start).Round(time.Millisecond))
}

// expectNoFailedValues checks that the failed-values metric is back to 0.
func (s *faultScene) expectNoFailedValues(t *testing.T) {
	t.Helper()
	if v, err := s.node.failedValuesMetric(); err != nil || v != 0 {
		t.Errorf("contiv_controller_failed_values = %v (%v) once healthy, want 0", v, err)
	}
}

// TestFaultsTransientNATFailureAfterVPPRestart is issue #20 item 1: after a VPP
// restart, three failed nat44_add_del_lb_static_mapping calls during the healing
// resync.
func TestFaultsTransientNATFailureAfterVPPRestart(t *testing.T) {
	t.Parallel()
	s := newFaultScene(t)
	s.addService()
	testkit.Eventually(t, 20*time.Second, "the service is rendered", s.healthy)
	before := s.count(t, lbMappingMsg)

	live := s.node.watchLiveness(t)
	s.node.mustControl(t, fmt.Sprintf("fail %s -1 3", lbMappingMsg))
	s.node.mustControl(t, "restart")
	keys := s.awaitDegraded(t, 15*time.Second, func(k string) bool {
		return strings.HasPrefix(k, dnatKeyPrefix) && strings.Contains(k, faultSvc)
	})
	t.Logf("DEGRADED naming %v", keys)
	s.addPodWhileDegraded(t)
	s.awaitHealed(t, 20*time.Second)
	live.stop(t)
	s.expectNoFailedValues(t)
	if n := s.count(t, lbMappingMsg) - before; n < 4 {
		t.Errorf("%s received %d times after the restart, want at least 4 (3 failed, 1 applied)", lbMappingMsg, n)
	}
}

// TestFaultsTransientTAPFailureAfterVPPRestart is issue #20 item 1: after a VPP
// restart, two failed tap_create_v3 calls during the healing resync.
func TestFaultsTransientTAPFailureAfterVPPRestart(t *testing.T) {
	t.Parallel()
	s := newFaultScene(t)
	testkit.Eventually(t, 20*time.Second, "the agent is ready", s.healthy)
	before := s.count(t, tapCreateMsg)

	live := s.node.watchLiveness(t)
	s.node.mustControl(t, fmt.Sprintf("fail %s -1 2", tapCreateMsg))
	s.node.mustControl(t, "restart")
	keys := s.awaitDegraded(t, 15*time.Second, func(k string) bool { return strings.HasPrefix(k, vppIfKeyPrefix) })
	t.Logf("DEGRADED naming %v", keys)
	s.addPodWhileDegraded(t)
	s.awaitHealed(t, 20*time.Second)
	live.stop(t)
	s.expectNoFailedValues(t)
	// p1, p2 and the host interconnect recreated, p3 created, 2 failed attempts.
	if n := s.count(t, tapCreateMsg) - before; n < 6 {
		t.Errorf("%s received %d times after the restart, want at least 6", tapCreateMsg, n)
	}
}

// faultPersistence is how long the NAT mapping of the Service keeps failing: longer
// than the ~6 s after which the issue saw the node stop. Real time is what is tested.
const faultPersistence = 8 * time.Second

// TestFaultsServiceWhoseNATMappingKeepsFailing is issue #20 item 1: one Service whose
// NAT mapping VPP refuses for longer than 6 s. The node stays live and serves CNI,
// readiness names the Service's key, healing keeps retrying, and once VPP accepts the
// mapping the node is OK again.
func TestFaultsServiceWhoseNATMappingKeepsFailing(t *testing.T) {
	t.Parallel()
	s := newFaultScene(t)
	testkit.Eventually(t, 20*time.Second, "the agent is ready", s.healthy)
	before := s.count(t, lbMappingMsg)

	live := s.node.watchLiveness(t)
	s.node.mustControl(t, fmt.Sprintf("fail %s -1 0", lbMappingMsg))
	s.addService()
	isSvcKey := func(k string) bool { return strings.HasPrefix(k, dnatKeyPrefix) && strings.Contains(k, faultSvc) }
	keys := s.awaitDegraded(t, 15*time.Second, isSvcKey)
	degradedAt := time.Now()
	t.Logf("DEGRADED naming %v", keys)
	s.addPodWhileDegraded(t)

	// The fault persists: the controller stays DEGRADED (never ERROR) naming the key,
	// while healing keeps retrying the mapping.
	for time.Since(degradedAt) < faultPersistence {
		h, err := s.node.readiness()
		if err != nil {
			t.Fatal(err)
		}
		if h.ctlState != "DEGRADED" || !slices.ContainsFunc(reasonKeys(h.ctlReason), isSvcKey) {
			t.Fatalf("%v into the fault: controller %s, want DEGRADED naming the service's key: %s",
				time.Since(degradedAt).Round(time.Millisecond), h.ctlState, h.components)
		}
		time.Sleep(pollInterval) // real time: the state must hold for faultPersistence
	}
	attempts := s.count(t, lbMappingMsg) - before
	if attempts < 3 {
		t.Errorf("%s tried %d times in %v, want the first attempt and retries or healing resyncs (at least 3)", lbMappingMsg, attempts, faultPersistence)
	}
	t.Logf("%s tried %d times during %v of failures", lbMappingMsg, attempts, faultPersistence)

	s.node.mustControl(t, "clear")
	s.awaitHealed(t, 20*time.Second)
	live.stop(t)
	s.expectNoFailedValues(t)
	for _, name := range []string{"p1", "p3"} {
		if _, stderr, err := s.node.cni.cnitool("check", s.pods[name].ns, podArgs(name)); err != nil {
			t.Errorf("cnitool check %s after the fault: %v\n%s", name, err, stderr)
		}
	}
}

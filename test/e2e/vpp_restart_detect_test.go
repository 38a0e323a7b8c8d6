package e2e

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

// TestVPPRestartIsHealedBeforeAHealthProbe restarts the simulated VPP with empty state
// restartRounds times under a running agent with a pod (govpp.conf with the default
// health check: a probe every 3 s) and measures, each time, the time from the restart
// to the end of the healing resync that re-programmed VPP (the ProcessingEnd of the
// "Healing Resync" event). govppmux learns of the restart from the closed socket, so
// every heal must end well within one health-check probe interval (healBound, a third
// of it): an agent that waits for govpp's health probe takes up to the interval just
// to notice, and the rounds after the first restart VPP shortly after the agent
// reconnected, i.e. just after the probe period restarted (such an agent heals after
// ~2.9 s each time).
func TestVPPRestartIsHealedBeforeAHealthProbe(t *testing.T) {
	const restartRounds = 5
	const healBound = govppmux.DefaultHealthCheckProbeInterval / 3
	e := requireEnv(t)
	node := startContivNode(t, e, "p1")
	node.addPod(t, "p1")
	ifsBefore, err := vppInterfaceNames(node)
	if err != nil {
		t.Fatal(err)
	}
	var heals []time.Duration
	for round := 1; round <= restartRounds; round++ {
		lastSeq, err := node.lastEventSeq()
		if err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()
		if err := node.sim.signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		var healing eventRecord
		err = testkit.Wait(context.Background(), 30*time.Second, "the agent heals VPP", func() error {
			var err error
			healing, err = node.healingResyncAfter(lastSeq)
			return err
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if errs := healing.errors(); len(errs) > 0 {
			t.Errorf("round %d: the healing resync had errors: %v", round, errs)
		}
		heal := healing.ProcessingEnd.Sub(restarted)
		heals = append(heals, heal)
		t.Logf("round %d: VPP re-programmed %v after its restart (event #%d %q)", round, heal.Round(time.Millisecond), healing.SeqNum, healing.Description)
		testkit.Eventually(t, 10*time.Second, "the agent is ready", node.rest.ready)
		ifs, err := vppInterfaceNames(node)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ifs, ifsBefore) {
			t.Fatalf("round %d: VPP interfaces %v after the heal, were %v", round, ifs, ifsBefore)
		}
	}
	sorted := slices.Clone(heals)
	slices.Sort(sorted)
	t.Logf("restart -> VPP re-programmed, %d rounds: min %v, median %v, max %v", len(sorted),
		sorted[0].Round(time.Millisecond), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
	for i, h := range heals {
		if h >= healBound {
			t.Errorf("round %d: healed %v after the restart, not within %v (health-check probe interval %v)",
				i+1, h, healBound, govppmux.DefaultHealthCheckProbeInterval)
		}
	}
}

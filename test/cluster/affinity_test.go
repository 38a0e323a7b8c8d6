package cluster

import (
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// affinityTimeout is the ClientIP affinity timeout (seconds) of the affinity test.
const affinityTimeout = 5

// affinityRounds is the number of idle gaps of the affinity test. With the six equally
// weighted backends of the test, the first connection after a gap picks the backend of
// the round before with probability 1/6; the test fails only when all of the gaps do,
// (1/6)^5 = 1.3e-4 of the runs where the timeout holds.
const affinityRounds = 5

// TestClientIPAffinityLastsWhileConnectionsComeAndEndsAfterTheTimeout (issue #26 item
// 10): a Service with sessionAffinity ClientIP and a 5 s timeout, six backends on the
// three nodes. A pod's connections, one a second, stick to one backend for longer than
// the timeout (they come more often than it); after an idle gap of the timeout + 2 s,
// the next connection is balanced anew: over five gaps, at least one changes backend
// (affinityRounds). Before the affinity recipe (or with
// disableAffinityTimeoutEnforcement) a closed connection's NAT session lingers for
// VPP's transitory timeout and keeps the affinity alive: every gap keeps the backend.
func TestClientIPAffinityLastsWhileConnectionsComeAndEndsAfterTheTimeout(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	requireNAT44(t, l, "ClientIP affinity: the flow hash covers the source address only, with no timeout")
	ns := testNamespace(t, l, "affinity")
	nodes := l.Nodes()
	backends := podsOnNodes(t, l, ns, "aff", 2, nodes...)
	startPod(t, l, ns, echoPod("client", "client", nodes[2].Name))
	svc := echoService("aff", "aff", corev1.ServiceTypeClusterIP, "")
	svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
		ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: new(int32(affinityTimeout))},
	}
	svc = createService(t, l, ns, svc)
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	d := podDialer(t, l, ns, "client")
	testkit.Eventually(t, 60*time.Second, "the client answered on "+addr, func() error {
		_, _, err := probe(d, addr, 2*time.Second)
		return err
	})
	// Let the affinity of the probes above end, so that the rounds start afresh.
	// real time: the affinity timeout runs on the nodes' clocks.
	time.Sleep(idleGap)

	// stick opens n connections a second apart and returns the backend that answered
	// them all.
	stick := func(round, n int) string {
		t.Helper()
		var first string
		for i := range n {
			if i > 0 {
				// real time: connections more often than the affinity timeout.
				time.Sleep(time.Second)
			}
			pod, _, err := probe(d, addr, 3*time.Second)
			if err != nil {
				t.Fatalf("round %d, connection %d: %v", round, i, err)
			}
			if _, ok := backends[pod]; !ok {
				t.Fatalf("round %d, connection %d: answered by %s, not a backend", round, i, pod)
			}
			if i == 0 {
				first = pod
			} else if pod != first {
				t.Fatalf("round %d, connection %d (%d s after the first): answered by %s, want %s (the affinity)",
					round, i, i, pod, first)
			}
		}
		return first
	}

	// The first round lasts twice the timeout: the affinity runs from the last
	// connection, not from the first.
	prev := stick(0, 2*affinityTimeout)
	var chosen []string
	changed := 0
	for round := 1; round <= affinityRounds; round++ {
		// real time: the idle gap the affinity timeout must end within.
		time.Sleep(idleGap)
		got := stick(round, 3)
		chosen = append(chosen, fmt.Sprintf("%s -> %s", prev, got))
		if got != prev {
			changed++
		}
		prev = got
	}
	if changed == 0 {
		t.Errorf("after each of %d idle gaps of %v (affinity timeout %d s) the client stuck to its backend: %v",
			affinityRounds, idleGap, affinityTimeout, chosen)
	}
	t.Logf("backends before and after each idle gap: %v", chosen)
}

// idleGap is the idle time after which the affinity test expects a new choice: the
// timeout and 2 s (the agent deletes an ended session one to two seconds after its last
// packet; docs/dev-guide/SERVICES.md "ClientIP affinity timeout").
const idleGap = (affinityTimeout + 2) * time.Second

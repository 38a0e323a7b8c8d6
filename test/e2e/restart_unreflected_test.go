package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// TestRestartKeepsAPodKubernetesHasNotReflected restarts the agent while the Kubernetes
// state lacks a running pod (contiv-ksr down, between leaders or lagging: here the
// standalone cluster file, which publishes no sync marker, never listed it). The pod
// keeps its interface and its IP, a new pod gets another IP, and when the state then
// shows the pod nothing changes; its CNI DEL removes it (issue 27, item 1).
func TestRestartKeepsAPodKubernetesHasNotReflected(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "unreflected", "fresh")
	old := node.addPod(t, "unreflected")

	node.stopAgent()
	node.setClusterPods(map[string]string{"fresh": ""}) // the copy lacks the running pod
	node.startAgent()

	expectKept := func(when string) {
		t.Helper()
		expectAllocations(t, node, map[string]string{"default/unreflected": old.ip}, nil)
		w, err := checkPodWired(old.ns, old.ip+"/32", podGateway)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if w != old.wiring {
			t.Errorf("%s: eth0 is #%d %s, was #%d %s: recreated", when, w.ifindex, w.mac, old.wiring.ifindex, old.wiring.mac)
		}
		if _, stderr, err := node.cni.cnitool("check", old.ns, podArgs(old.name)); err != nil {
			t.Errorf("%s: cnitool check: %v\n%s", when, err, stderr)
		}
	}
	expectKept("after a restart with the pod missing from Kubernetes' copy")
	fresh := node.addPod(t, "fresh")
	if fresh.ip == old.ip {
		t.Fatalf("the new pod got %s, the IP of the running pod", fresh.ip)
	}

	// contiv-ksr catches up: the pod appears with its IP; nothing changes.
	seq, err := node.lastEventSeq()
	if err != nil {
		t.Fatal(err)
	}
	node.setClusterPods(map[string]string{"unreflected": old.ip, "fresh": fresh.ip})
	testkit.Eventually(t, 10*time.Second, "the agent sees the pod", func() error {
		return kubeStateChangeSeen(node, seq, "unreflected")
	})
	expectKept("once Kubernetes shows the pod")
	expectAllocations(t, node, map[string]string{"default/unreflected": old.ip, "default/fresh": fresh.ip}, nil)

	// A CNI DEL always removes.
	for _, p := range []*pod{old, fresh} {
		if _, stderr, err := node.cni.cnitool("del", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool del %s: %v\n%s", p.name, err, stderr)
		}
		if err := checkPodUnwired(p.ns); err != nil {
			t.Errorf("after DEL: %v", err)
		}
	}
	expectAllocations(t, node, nil, []string{"default/unreflected", "default/fresh"})
}

// kubeStateChangeSeen reports (as an error while not) whether an event numbered after
// seq, done, changed the pod default/name.
func kubeStateChangeSeen(node *contivNode, seq uint64, name string) error {
	evs, err := node.events()
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.SeqNum > seq && strings.HasPrefix(ev.Name, "Kubernetes State Change") &&
			strings.Contains(ev.Description, "pod/"+name+"/namespace/default") && !ev.ProcessingEnd.IsZero() {
			return nil
		}
	}
	return fmt.Errorf("no Kubernetes State Change of pod %s after event %d", name, seq)
}

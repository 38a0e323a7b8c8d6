package cnat

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// The Maglev tests send the same flows to a service's external IP on two nodes (two
// simulators, as a router spreading the external IP's traffic over the nodes would)
// whose backends sit behind a peer on the uplink (10.1.2.0/24).
const (
	externalIP = "20.0.0.1"
	peer       = "192.168.16.20"
)

var peerMAC = [6]byte{2, 0, 0, 0, 0, 0x20}

// lbNode is a traffic node whose backends are reached through the peer.
func lbNode(t *testing.T) *trafficNode {
	t.Helper()
	n := newTrafficNode(t)
	n.uplinkNeighbor(t, peer, peerMAC)
	return n
}

// program renders default/web on the external IP with the backends (in that order) and
// commits it with the route to the peer's pods.
func (n *trafficNode) program(t *testing.T, maglev bool, backends []string) {
	t.Helper()
	svc := webService(backends...)
	svc.ExternalIPs = []renderer.Address{addr(externalIP)}
	_, txn := newRendererWith(t, dualConf, true, maglev, svc)
	txn.Put(l3.RouteKey(0, "10.1.2.0/24", peer), &l3.Route{DstNetwork: "10.1.2.0/24", NextHopAddr: peer})
	want := vpp_cnat.Translation_DEFAULT
	if maglev {
		want = vpp_cnat.Translation_MAGLEV
	}
	if tr := translation(txn, externalIP, 80); tr.GetLbType() != want {
		t.Fatalf("the external IP's translation has lb_type %v, want %v", tr.GetLbType(), want)
	}
	if tr := translation(txn, "10.96.0.10", 80); tr.GetLbType() != vpp_cnat.Translation_DEFAULT {
		t.Fatalf("the cluster IP's translation has lb_type %v, want DEFAULT", tr.GetLbType())
	}
	n.commit(t, txn)
}

// backendsOf sends a SYN of each flow (client source ports from 20000) to the external
// IP and returns the backend each reached.
func (n *trafficNode) backendsOf(t *testing.T, flows int) []string {
	t.Helper()
	out := make([]string, flows)
	for i := range out {
		src := fmt.Sprintf("%s:%d", outside, 20000+i)
		got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, src, externalIP+":80", uplinkNIC)
		if len(got) != 1 {
			t.Fatalf("flow %s: the uplink sent %q, want one SYN to a backend", src, got)
		}
		_, dst, _ := strings.Cut(got[0], " -> ")
		out[i] = dst
	}
	return out
}

// tenBackends are 10.1.2.1 ... 10.1.2.10.
func tenBackends() []string {
	var out []string
	for i := 1; i <= 10; i++ {
		out = append(out, fmt.Sprintf("10.1.2.%d", i))
	}
	return out
}

// moved returns how many flows reach another backend in b than in a.
func moved(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestMaglevPicksTheSameBackendOnEveryNode: with serviceLoadBalancing maglev, a flow
// to an external IP reaches the same backend whichever node the router hands it to,
// even when the nodes list the backends in another order (VPP's Maglev table depends
// on the set of backends, not their order); with the default (flow hash modulo the
// number of paths) the backend depends on the order, so nodes disagree.
func TestMaglevPicksTheSameBackendOnEveryNode(t *testing.T) {
	const flows = 200
	backends := tenBackends()
	reversed := slices.Clone(backends)
	slices.Reverse(reversed)
	for _, maglev := range []bool{true, false} {
		a, b := lbNode(t), lbNode(t)
		a.program(t, maglev, backends)
		b.program(t, maglev, reversed)
		differ := moved(a.backendsOf(t, flows), b.backendsOf(t, flows))
		switch {
		case maglev && differ != 0:
			t.Errorf("maglev: %d of %d flows reach another backend on the second node", differ, flows)
		case !maglev && differ == 0:
			t.Errorf("default: every flow reaches the same backend on both nodes; the control shows nothing")
		}
		t.Logf("maglev=%v: %d of %d flows reach another backend on the other node", maglev, differ, flows)
	}
}

// TestMaglevMovesOnlyTheRemovedBackendsFlows measures the backends changed per backend
// removed: N flows to an external IP of 10 backends, then of the same backends minus
// one (a node that learnt of the removal next to one that did not yet). With Maglev
// the flows of the removed backend move and few others (ideal: 1/10 of the flows);
// with the default nearly all of them move.
func TestMaglevMovesOnlyTheRemovedBackendsFlows(t *testing.T) {
	const flows = 1000
	backends := tenBackends()
	fewer := slices.Delete(slices.Clone(backends), 4, 5) // 10.1.2.5 removed
	share := map[bool]float64{}
	for _, maglev := range []bool{false, true} {
		a, b := lbNode(t), lbNode(t)
		a.program(t, maglev, backends)
		b.program(t, maglev, fewer)
		before, after := a.backendsOf(t, flows), b.backendsOf(t, flows)
		share[maglev] = float64(moved(before, after)) / flows
		removed := 0
		for _, d := range before {
			if strings.HasPrefix(d, "10.1.2.5:") {
				removed++
			}
		}
		t.Logf("maglev=%v: %d of %d flows moved (%.1f%%); %d were on the removed backend", maglev,
			moved(before, after), flows, 100*share[maglev], removed)
	}
	if share[true] > 0.2 {
		t.Errorf("maglev moved %.1f%% of the flows for one backend of 10 removed, want about 10%%", 100*share[true])
	}
	if share[false] < 0.5 {
		t.Errorf("default moved only %.1f%% of the flows: the measurement does not show what Maglev is for", 100*share[false])
	}
}

package cnat

import (
	"testing"
	"time"

	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// TestUDPFlowKeepsItsRemovedBackendUntil30sIdle: what VPP 25.10's cnat does to a UDP
// flow whose backend leaves the Service (the renderer can do nothing better: cnat has
// no per-session delete, cnat_session_purge also deletes every translation, and
// cnat_translation_update and cnat_translation_delete leave the sessions alone,
// cnat_translation.c). The flow keeps reaching the removed backend while it sends
// (each datagram refreshes its session); a new flow reaches the remaining backend;
// deleting and re-creating the translation changes nothing for the old flow; once the
// flow has been idle for more than 30 s (session-max-age, cnat_types.c) its session is
// gone and its next datagram reaches the remaining backend.
func TestUDPFlowKeepsItsRemovedBackendUntil30sIdle(t *testing.T) {
	n := newTrafficNode(t)
	dns := func(backend string) *renderer.FlatService {
		s := webService(backend)
		s.ID.Name = "dns"
		s.ClusterIPs = []renderer.Address{addr("10.96.0.12")}
		s.Ports[0].Port = renderer.ServicePort{Protocol: renderer.UDP, Port: 53}
		return s
	}
	before := dns(pod1)
	r, txn := newRenderer(t, true, before)
	n.commit(t, txn)
	const flow, vip = outside + ":40000", "10.96.0.12:53"
	reached := func(src string) string {
		t.Helper()
		got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoUDP, src, vip, podsNIC)
		if len(got) != 1 {
			t.Fatalf("%s -> %s: the pods' NIC sent %q, want one datagram", src, vip, got)
		}
		return got[0]
	}
	toPod1, toPod2 := "udp "+flow+" -> "+pod1+":8080", "udp "+flow+" -> "+pod2+":8080"
	if got := reached(flow); got != toPod1 {
		t.Fatalf("first datagram: %q, want %q", got, toPod1)
	}

	after := dns(pod2)
	up := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatService(up, before, after); err != nil {
		t.Fatal(err)
	}
	n.commit(t, up.Txn)
	if got := reached(flow); got != toPod1 {
		t.Errorf("the flow after its backend left: %q, want the stale session's %q", got, toPod1)
	}
	if got := reached(outside + ":40001"); got != "udp "+outside+":40001 -> "+pod2+":8080" {
		t.Errorf("a new flow: %q, want the remaining backend", got)
	}

	// Deleting the translation and creating it again (two transactions) keeps the session.
	del := &describedTxn{Txn: st.NewTxn()}
	if err := r.DeleteFlatService(del, after); err != nil {
		t.Fatal(err)
	}
	n.commit(t, del.Txn)
	add := &describedTxn{Txn: st.NewTxn()}
	if err := r.AddFlatService(add, after); err != nil {
		t.Fatal(err)
	}
	n.commit(t, add.Txn)
	if got := reached(flow); got != toPod1 {
		t.Errorf("the flow after its translation was deleted and created again: %q, want the stale session's %q", got, toPod1)
	}

	// A flow that keeps sending within 30 s keeps its session; idle for 31 s, it loses it.
	n.clk.Step(29 * time.Second)
	if got := reached(flow); got != toPod1 {
		t.Errorf("after 29 s idle: %q, want the session still there (%q)", got, toPod1)
	}
	n.clk.Step(31 * time.Second)
	if got := reached(flow); got != toPod2 {
		t.Errorf("after 31 s idle: %q, want the remaining backend (%q)", got, toPod2)
	}
}

package nat44

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// TestStalePurgesQueuedInABurstAreMergedInOrder: the purges of the events committed
// while the session goroutine is busy are done in one walk of the sessions, and for
// an address changed twice the later change decides (a backend replaced and then
// restored keeps its sessions).
func TestStalePurgesQueuedInABurstAreMergedInOrder(t *testing.T) {
	vip := netip.MustParseAddrPort("10.96.0.20:53")
	a, b := netip.MustParseAddrPort("10.1.1.2:5353"), netip.MustParseAddrPort("10.1.1.3:5353")
	set := func(ap netip.AddrPort) map[netip.AddrPort]struct{} { return map[netip.AddrPort]struct{}{ap: {}} }
	r := &Renderer{purge: make(chan []staleTarget, 3)}
	r.purge <- []staleTarget{{outside: vip, valid: set(a)}}
	r.purge <- []staleTarget{{outside: vip, valid: set(b)}}
	first := []staleTarget{{outside: vip, valid: nil}}
	got := r.withQueuedPurges(first)
	if len(got) != 3 || len(r.purge) != 0 {
		t.Fatalf("merged %d targets, %d batches left; want 3 and none", len(got), len(r.purge))
	}
	valids := []map[netip.AddrPort]struct{}{got[0].valid, got[1].valid, got[2].valid}
	if validFor(valids, a) || !validFor(valids, b) {
		t.Errorf("after none, then a, then b: a valid %v, b valid %v; want only b", validFor(valids, a), validFor(valids, b))
	}
}

// BenchmarkStaleUDPPurge measures one purge (the agent's side: the dumps over the
// socket, decoding, matching) against a simulator holding users x perUser UDP
// sessions, none of them stale. VPP's own cost is not measured here: it walks every
// session once per user (nat44_user_session_v3_dump).
func BenchmarkStaleUDPPurge(b *testing.B) {
	for _, c := range []struct{ users, perUser int }{{100, 100}, {100, 1000}, {250, 400}} {
		b.Run(fmt.Sprintf("users=%d/sessions=%d", c.users, c.users*c.perUser), func(b *testing.B) {
			v := startVPP(b, true)
			for u := range c.users {
				pod := netip.AddrFrom4([4]byte{10, 1, byte(u >> 8), byte(u)})
				for s := range c.perUser {
					ext := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(s >> 8), byte(s)}), 53)
					in := netip.AddrPortFrom(pod, uint16(10000+s))
					if err := v.sim.InjectSession(vppsim.Session{Protocol: protoUDP, InsideAddr: in, OutsideAddr: in,
						ExtHostAddr: ext, InsideVRF: 1, OutsideVRF: 1}); err != nil {
						b.Fatal(err)
					}
				}
			}
			r := &Renderer{Deps: Deps{Log: st.QuietLog(), GoVPPChan: v.ch}}
			targets := []staleTarget{{outside: netip.MustParseAddrPort("10.96.0.20:53")}}
			for b.Loop() {
				n, err := r.purgeStaleUDP(context.Background(), targets)
				if err != nil || n != 0 {
					b.Fatalf("deleted %d (%v), want none", n, err)
				}
			}
		})
	}
}

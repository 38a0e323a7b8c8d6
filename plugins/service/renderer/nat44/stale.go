package nat44

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Stale UDP sessions. UDP has no connection end: a client keeps sending from the same
// 5-tuple, and its NAT session outlives a change of the service's endpoints, so it
// keeps going to a backend that is gone, or untranslated (a forwarding-bypass session
// created while the service had no endpoint) until it idles out. kube-proxy clears
// such conntrack entries after every sync (pkg/proxy/conntrack CleanStaleEntries: UDP
// flows to a service IP whose destination is no longer one of its serving endpoints,
// sessions of Kubernetes e2e "should be able to preserve UDP traffic when server pod
// cycles"). Here: every UDP service port whose endpoints an update changed (added,
// changed, removed) becomes a stale target; once the event's transaction is committed
// (the new mappings are in VPP, so a new packet finds them), the session goroutine
// deletes the UDP sessions to the port's addresses that no longer lead where a new
// datagram would go:
//   - a session whose outside end is one of the addresses and whose inside end is not
//     one of the port's current backends (a DNAT session to a backend that is gone;
//     forwarding-bypass sessions have the service address on both ends, so they
//     always go);
//   - a session whose remote end (external host) is one of the addresses: the
//     datagram left untranslated. A pod that sent before the Service had a mapping
//     or a reject route got, at the uplink's NAT output feature, an SNAT session to
//     the service address itself (VPP 25.10 nat44_ed_in2out.c,
//     nat44_ed_not_translate_output_feature: a forwarding-bypass reverse session does
//     not exempt the packet), outside end the node IP; out2in on the pod's TAP finds
//     its inside flow before any mapping, so it would keep the client's datagrams
//     going out of the node for as long as they come. kube-proxy matches conntrack
//     entries the same way, by their original destination (the service address), not
//     by what they were translated to.
//
// Cost: VPP 25.10 offers no session dump by destination. nat44_user_dump walks every
// session to list the users, and nat44_user_session_v3_dump walks every session of the
// thread once per user (nat44_ed_api.c), so a purge costs VPP O(users x sessions) and
// the agent O(sessions) (the same dump as the idle-session cleanup). The purges of
// the events committed while one runs are merged into the next (one walk per burst).

// protoUDP is the IP protocol number of UDP.
const protoUDP = 17

// staleTarget is one address of a UDP service port after a change: sessions to it are
// stale unless they lead to one of valid.
type staleTarget struct {
	outside netip.AddrPort
	valid   map[netip.AddrPort]struct{}
}

// noteStaleUDP records the UDP ports of a service whose endpoints changed from old to
// svc (either nil: added or removed). A port of old whose addresses svc no longer
// has keeps no valid backend; a port of svc that is new or changed keeps its current
// ones.
func (rndr *Renderer) noteStaleUDP(old, svc *renderer.FlatService) {
	if rndr.GoVPPChan == nil {
		return // nobody to delete sessions
	}
	same := old != nil && svc != nil && sameAddrs(old, svc)
	if old != nil {
		for i := range old.Ports {
			p := &old.Ports[i]
			if p.Port.Protocol != renderer.UDP {
				continue
			}
			if q := svc.Port(p.Name); same && q != nil && q.Port == p.Port {
				continue // compared below
			}
			rndr.addStale(old, p, nil)
		}
	}
	if svc == nil {
		return
	}
	for i := range svc.Ports {
		q := &svc.Ports[i]
		if q.Port.Protocol != renderer.UDP {
			continue
		}
		if p := old.Port(q.Name); same && p != nil && p.Port == q.Port && sameSelection(p, q) {
			continue
		}
		rndr.addStale(svc, q, q)
	}
}

// sameSelection tells whether two renderings of a port select the same endpoints.
func sameSelection(p, q *renderer.FlatPort) bool {
	return p.HasEndpointsOf(true) == q.HasEndpointsOf(true) && renderer.SameBackendGroups(p.Backends, q.Backends) &&
		renderer.SameBackendGroups(p.ExternalBackends, q.ExternalBackends)
}

// sameAddrs tells whether both renderings expose the same addresses.
func sameAddrs(a, b *renderer.FlatService) bool {
	return renderer.SameAddresses(a.ClusterIPs, b.ClusterIPs) && renderer.SameAddresses(a.ExternalIPs, b.ExternalIPs)
}

// addStale adds the addresses of port p of svc as stale targets, the backends of now
// (nil: none) being the valid ones.
func (rndr *Renderer) addStale(svc *renderer.FlatService, p *renderer.FlatPort, now *renderer.FlatPort) {
	var internal, external map[netip.AddrPort]struct{}
	if now != nil {
		internal, external = backendSet(now.Backends), backendSet(now.ExternalBackends)
	}
	add := func(a renderer.Address, port uint16, valid map[netip.AddrPort]struct{}) {
		v4, ok := a.IPv4()
		if !ok || port == 0 {
			return
		}
		ip := netip.AddrFrom4([4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)})
		rndr.stale = append(rndr.stale, staleTarget{outside: netip.AddrPortFrom(ip, port), valid: valid})
	}
	for _, a := range svc.ClusterIPs {
		add(a, p.Port.Port, internal)
	}
	for _, a := range svc.ExternalIPs {
		add(a, p.Port.Port, external)
	}
	if p.Port.NodePort != 0 {
		for _, a := range rndr.nodeAddrs {
			add(a, p.Port.NodePort, external)
		}
	}
}

// backendSet returns the IPv4 backends of the groups as a set.
func backendSet(groups []renderer.BackendGroup) map[netip.AddrPort]struct{} {
	set := make(map[netip.AddrPort]struct{})
	for _, g := range groups {
		for _, ep := range g.Endpoints {
			if a, err := netip.ParseAddr(ep.Text); err == nil && a.Is4() {
				set[netip.AddrPortFrom(a, g.TargetPort)] = struct{}{}
			}
		}
	}
	return set
}

// Committed tells the renderer that the transaction of the event it last staged into
// was committed (err nil) or failed. After a commit the UDP sessions made stale by the
// event are handed to the session goroutine, which deletes them; after a failure they
// are forgotten (the healing resync renders everything again).
func (rndr *Renderer) Committed(err error) {
	targets := rndr.stale
	rndr.stale = nil
	if err != nil || len(targets) == 0 || rndr.purge == nil {
		return
	}
	select {
	case rndr.purge <- targets:
	default:
		// The goroutine is behind: the sessions go with their idle timeout (or the
		// next change of the service).
		rndr.Log.WithField("targets", len(targets)).Warn("stale UDP session purge queue full: purge skipped")
	}
}

// DiscardStale forgets the stale UDP sessions noted since the last Committed (those of
// an event whose transaction was never committed).
func (rndr *Renderer) DiscardStale() { rndr.stale = nil }

// purgeQueue is the number of committed events whose stale sessions may wait for the
// session goroutine.
const purgeQueue = 1024

// purgeStaleUDP deletes the UDP sessions stale for the targets and returns how many it
// deleted.
func (rndr *Renderer) purgeStaleUDP(ctx context.Context, targets []staleTarget) (int, error) {
	byOutside := make(map[netip.AddrPort][]map[netip.AddrPort]struct{}, len(targets))
	for _, t := range targets {
		byOutside[t.outside] = append(byOutside[t.outside], t.valid)
	}
	// stale tells whether a UDP session leads elsewhere than a new datagram would go.
	stale := func(s natSession) bool {
		if s.proto != protoUDP {
			return false
		}
		if _, untranslated := byOutside[s.extHost]; untranslated {
			return true
		}
		valids, ok := byOutside[s.outside]
		return ok && !validFor(valids, s.inside)
	}
	sessions, _, err := rndr.dumpSessions(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	var errs []error
	for _, s := range sessions {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		if !stale(s) {
			continue
		}
		if err := rndr.deleteSession(s); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted++
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("%d stale UDP sessions not deleted: %w", len(errs), errors.Join(errs...))
	}
	return deleted, nil
}

// validFor tells whether inside is a current backend of the last target noted for
// the address (a later change of the same port supersedes an earlier one).
func validFor(valids []map[netip.AddrPort]struct{}, inside netip.AddrPort) bool {
	_, ok := valids[len(valids)-1][inside]
	return ok
}

// withQueuedPurges appends to targets those of the batches queued behind them, in
// the order they were committed (validFor takes the last target of an address), so
// that a burst of committed events costs one walk of the sessions, not one per event.
func (rndr *Renderer) withQueuedPurges(targets []staleTarget) []staleTarget {
	for {
		select {
		case more := <-rndr.purge:
			targets = append(targets, more...)
		default:
			return targets
		}
	}
}

// runPurge deletes the stale UDP sessions of each batch it receives.
func (rndr *Renderer) runPurge(ctx context.Context, targets []staleTarget) {
	n, err := rndr.purgeStaleUDP(ctx, targets)
	if rndr.stalePurged != nil {
		rndr.stalePurged(n)
	}
	fields := logrus.Fields{"targets": len(targets), "deleted": n}
	switch {
	case err != nil && ctx.Err() == nil:
		rndr.Log.WithFields(fields).WithError(err).Warn("stale UDP session purge failed")
	case n > 0:
		rndr.Log.WithFields(fields).Info("stale UDP sessions deleted")
	}
}

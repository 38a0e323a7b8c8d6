package nat44

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"k8s.io/utils/clock"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// ClientIP affinity timeout (docs/dev-guide/SERVICES.md, "ClientIP affinity timeout").
// VPP 25.10 keeps an affinity record (client, service address, protocol, port) while
// any NAT session made through it lives, and `affinity` seconds after the last one is
// freed (nat44_ed_affinity.c nat_affinity_unlock); it frees a session only when a
// packet touches it after its timeout, when the table needs room, or when it is
// deleted, and a closed TCP session times out after tcp_transitory (240 s). So a
// timeout T holds only with help: while at least one Service has ClientIP affinity the
// renderer
//   - stages tcp_transitory = 1 s in nat44-global (global to VPP: every closed or
//     half-open TCP session of the node times out after 1 s);
//   - every second deletes the sessions of those Services (found by dumping their
//     backends' sessions) that ended: timed out (is_timed_out) or UDP, and idle for a
//     second or more;
//   - programs VPP's affinity as T - 2 s, at least 1 s: a session is deleted at least
//     1 s and at most 2 s after its connection's last packet (3 s on VPP, whose dump
//     truncates its clock to whole seconds before it computes time_since_last_heard),
//     so the record expires between T - 1 s and T (T + 1 s) after it.
// With the last such Service gone, nat44-global has no timeouts again (VPP's
// defaults) and the pass stops. service.conf's disableAffinityTimeoutEnforcement turns
// all of it off.

// Parameters of the recipe.
const (
	// affinityTransitory is VPP's tcp_transitory timeout while the recipe runs, s.
	affinityTransitory = 1
	// affinityPeriod is the period of the pass.
	affinityPeriod = time.Second
	// affinityIdle is the least idle time of a session the pass deletes, s (VPP's
	// time_since_last_heard, truncated down, so never early).
	affinityIdle = 1
	// affinitySlack is what the pass adds to VPP's affinity at most, s: the idle time
	// plus the period.
	affinitySlack = affinityIdle + uint32(affinityPeriod/time.Second)
)

// enforcesAffinity tells whether the renderer runs the recipe: services are rendered,
// the session goroutine has a GoVPP channel and service.conf does not turn it off.
func (rndr *Renderer) enforcesAffinity() bool {
	return !rndr.snatOnly && rndr.GoVPPChan != nil && !rndr.Config.DisableAffinityTimeoutEnforcement
}

// vppAffinity returns the affinity to program in VPP for a ClientIP timeout of t
// seconds (0: none).
func (rndr *Renderer) vppAffinity(t uint32) uint32 {
	if t == 0 || !rndr.enforcesAffinity() {
		return t
	}
	if t <= affinitySlack {
		return 1 // 0 would be no affinity at all
	}
	return t - affinitySlack
}

// affinityTimeouts returns the NAT timeouts of nat44-global: tcp_transitory 1 s while
// the recipe runs for some Service, else none (VPP's defaults).
func (rndr *Renderer) affinityTimeouts() *vpp_nat.Timeouts {
	if !rndr.enforcesAffinity() || rndr.affinity.empty() {
		return nil
	}
	return &vpp_nat.Timeouts{TcpTransitory: affinityTransitory}
}

// frontend is an address, port and protocol a service is reached on; a node port has
// no address (it stands for every node IP).
type frontend struct {
	addr  netip.Addr
	port  uint16
	proto uint8
}

// affinityEntry is what the pass needs of one Service with ClientIP affinity.
type affinityEntry struct {
	backends  []netip.Addr
	frontends []frontend
}

// affinityIndex holds, reference-counted over the Services with ClientIP affinity,
// their backends and frontends, and the node IPs; the event loop changes it (at the
// cost of the changed Service), the session goroutine reads it.
type affinityIndex struct {
	mu sync.Mutex
	// services holds the entry of each Service (event loop only, but guarded too).
	services  map[renderer.ServiceID]affinityEntry
	backends  map[netip.Addr]int
	frontends map[frontend]int
	nodeIPs   map[netip.Addr]struct{}
	// vrfs are the VRFs a session's inside end may be in (pod and main VRF).
	vrfs []uint32
}

func newAffinityIndex() *affinityIndex {
	return &affinityIndex{services: map[renderer.ServiceID]affinityEntry{}, backends: map[netip.Addr]int{},
		frontends: map[frontend]int{}, nodeIPs: map[netip.Addr]struct{}{}}
}

// empty tells whether no Service has ClientIP affinity.
func (x *affinityIndex) empty() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.services) == 0
}

// reset forgets every Service.
func (x *affinityIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(x.services)
	clear(x.backends)
	clear(x.frontends)
}

// set replaces the entry of a Service (nil: it has none).
func (x *affinityIndex) set(id renderer.ServiceID, e *affinityEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.services[id]; ok {
		for _, b := range old.backends {
			decrement(x.backends, b)
		}
		for _, f := range old.frontends {
			decrement(x.frontends, f)
		}
		delete(x.services, id)
	}
	if e == nil {
		return
	}
	x.services[id] = *e
	for _, b := range e.backends {
		x.backends[b]++
	}
	for _, f := range e.frontends {
		x.frontends[f]++
	}
}

// decrement takes one reference of k, dropping it with the last.
func decrement[K comparable](m map[K]int, k K) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// setNode records the node IPs (the addresses of node ports) and the VRFs.
func (x *affinityIndex) setNode(nodeAddrs []renderer.Address, vrfs ...uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(x.nodeIPs)
	for _, a := range nodeAddrs {
		if ip, ok := addrOf(a); ok {
			x.nodeIPs[ip] = struct{}{}
		}
	}
	x.vrfs = x.vrfs[:0]
	for _, v := range vrfs {
		if len(x.vrfs) == 0 || x.vrfs[len(x.vrfs)-1] != v {
			x.vrfs = append(x.vrfs, v)
		}
	}
}

// snapshot returns the backends and a copy of what matches a session to them.
func (x *affinityIndex) snapshot() ([]netip.Addr, *affinityMatch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	backends := make([]netip.Addr, 0, len(x.backends))
	for b := range x.backends {
		backends = append(backends, b)
	}
	m := &affinityMatch{frontends: make(map[frontend]struct{}, len(x.frontends)), nodeIPs: make(map[netip.Addr]struct{}, len(x.nodeIPs)),
		vrfs: append([]uint32(nil), x.vrfs...)}
	for f := range x.frontends {
		m.frontends[f] = struct{}{}
	}
	for ip := range x.nodeIPs {
		m.nodeIPs[ip] = struct{}{}
	}
	return backends, m
}

// affinityMatch tells the sessions of Services with ClientIP affinity by their outside
// end.
type affinityMatch struct {
	frontends map[frontend]struct{}
	nodeIPs   map[netip.Addr]struct{}
	vrfs      []uint32
}

// has tells whether the session was made through a frontend of such a Service.
func (m *affinityMatch) has(s natSession) bool {
	f := frontend{addr: s.outside.Addr(), port: s.outside.Port(), proto: s.proto}
	if _, ok := m.frontends[f]; ok {
		return true
	}
	if _, node := m.nodeIPs[f.addr]; !node {
		return false
	}
	f.addr = netip.Addr{}
	_, ok := m.frontends[f]
	return ok
}

// ended tells whether a session's connection is over for the pass: idle for
// affinityIdle seconds or more, and timed out (a closed TCP connection after
// tcp_transitory) or UDP (which has no end).
func ended(s natSession) bool {
	return s.idleFor >= affinityIdle && (s.timedOut || s.proto == protoUDP)
}

// affinityEntryOf returns what the pass needs of svc, nil when it has no ClientIP
// affinity.
func affinityEntryOf(svc *renderer.FlatService) *affinityEntry {
	if svc == nil || svc.SessionAffinityTimeout == 0 {
		return nil
	}
	e := &affinityEntry{}
	seen := map[netip.Addr]struct{}{}
	addBackends := func(groups []renderer.BackendGroup) {
		for _, g := range groups {
			for _, ep := range g.Endpoints {
				if ip, ok := addrOf(ep.Address); ok {
					if _, dup := seen[ip]; !dup {
						seen[ip] = struct{}{}
						e.backends = append(e.backends, ip)
					}
				}
			}
		}
	}
	for i := range svc.Ports {
		p := &svc.Ports[i]
		addBackends(p.Backends)
		addBackends(p.ExternalBackends)
		proto := uint8(p.Port.Protocol)
		for _, list := range [][]renderer.Address{svc.ClusterIPs, svc.ExternalIPs} {
			for _, a := range list {
				if ip, ok := addrOf(a); ok && p.Port.Port != 0 {
					e.frontends = append(e.frontends, frontend{addr: ip, port: p.Port.Port, proto: proto})
				}
			}
		}
		if p.Port.NodePort != 0 {
			e.frontends = append(e.frontends, frontend{port: p.Port.NodePort, proto: proto})
		}
	}
	return e
}

// addrOf returns an IPv4 address as a netip.Addr.
func addrOf(a renderer.Address) (netip.Addr, bool) {
	v4, ok := a.IPv4()
	if !ok {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)}), true
}

// updateAffinity records the change of a Service from old to svc (either nil) and,
// when the first Service with ClientIP affinity comes or the last goes, stages
// nat44-global with the new timeouts and wakes the session goroutine.
func (rndr *Renderer) updateAffinity(txn renderer.UpdateTxn, old, svc *renderer.FlatService) {
	if rndr.snatOnly {
		return
	}
	was := !rndr.affinity.empty()
	if old != nil && (svc == nil || old.ID != svc.ID) {
		rndr.affinity.set(old.ID, nil)
	}
	if svc != nil {
		rndr.affinity.set(svc.ID, affinityEntryOf(svc))
	}
	if now := !rndr.affinity.empty(); now != was {
		if rndr.enforcesAffinity() {
			rndr.natGlobalCfg = rndr.globalConfig()
			txn.Put(vpp_nat.GlobalNAT44Key, rndr.natGlobalCfg)
		}
		rndr.wakeAffinity()
	}
}

// resyncAffinity records every Service of a resync, the node IPs and the VRFs.
func (rndr *Renderer) resyncAffinity(services []*renderer.FlatService) {
	rndr.affinity.reset()
	if !rndr.snatOnly {
		for _, svc := range services {
			if e := affinityEntryOf(svc); e != nil {
				rndr.affinity.set(svc.ID, e)
			}
		}
	}
	rndr.affinity.setNode(rndr.nodeAddrs, rndr.podVRF, rndr.mainVRF)
	rndr.wakeAffinity()
}

// wakeAffinity tells the session goroutine that the set of Services with ClientIP
// affinity may have become empty or non-empty.
func (rndr *Renderer) wakeAffinity() {
	select {
	case rndr.affinityWake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// affinityTicker starts the ticker of the pass when some Service has ClientIP
// affinity and stops it when none has; it returns the ticker (nil: none).
func (rndr *Renderer) affinityTicker(t clock.Ticker) clock.Ticker {
	want := rndr.enforcesAffinity() && !rndr.affinity.empty()
	switch {
	case want && t == nil:
		rndr.Log.WithField("period", affinityPeriod).Info("ClientIP affinity session pass started")
		t = rndr.clock().NewTicker(affinityPeriod)
	case !want && t != nil:
		t.Stop()
		rndr.Log.Info("ClientIP affinity session pass stopped: no Service with ClientIP affinity")
		t = nil
	}
	rndr.affinityRunning.Store(t != nil)
	return t
}

// clock returns Deps.Clock, the real clock when unset.
func (rndr *Renderer) clock() clock.WithTicker {
	if rndr.Clock == nil {
		return clock.RealClock{}
	}
	return rndr.Clock
}

// runAffinityPass runs one pass and logs what it did.
func (rndr *Renderer) runAffinityPass(ctx context.Context) {
	deleted, err := rndr.affinityPass(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		rndr.Log.WithField("deleted", deleted).WithError(err).Warn("ClientIP affinity session pass failed")
	case deleted > 0:
		rndr.Log.WithField("deleted", deleted).Debug("ended sessions of ClientIP affinity Services deleted")
	}
	if rndr.affinityPassed != nil {
		rndr.affinityPassed(deleted)
	}
}

// affinityPass dumps the sessions of the backends of the Services with ClientIP
// affinity (nat44_user_session_v3_dump of each) and deletes those made through such
// a Service's frontends whose connection ended. It returns how many it deleted.
// Cost: one dump per backend (VPP walks its session table for each) and O(their
// sessions) here.
func (rndr *Renderer) affinityPass(ctx context.Context) (int, error) {
	backends, match := rndr.affinity.snapshot()
	deleted := 0
	var errs []error
	for _, b := range backends {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		list, err := rndr.dumpUserSessions(natUser{addr: b})
		if err != nil {
			return deleted, err
		}
		for _, s := range list {
			if !match.has(s) || !ended(s) {
				continue
			}
			s.vrfs = match.vrfs
			if err := rndr.deleteSession(s); err != nil {
				if len(errs) < 3 {
					errs = append(errs, err)
				}
				continue
			}
			deleted++
		}
	}
	if len(errs) > 0 {
		return deleted, fmt.Errorf("ended sessions of ClientIP affinity Services not deleted: %w", errors.Join(errs...))
	}
	return deleted, nil
}

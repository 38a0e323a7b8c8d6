package vppsim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// The stats segment (statseg): what VPP 25.10 publishes behind stats.sock,
// updated from the API handlers and the forwarding graph at the points VPP
// updates it (thread 0 throughout: the simulator has no workers).
//
//	start, Restart        newSegment: a fresh segment (a VPP restart makes a new
//	                      memfd), local0 and the NICs published by newState
//	newIface/deleteIface  AddInterface / DeleteInterface (VPP's name)
//	device input          /if/rx          vxlan4-input  /if/rx of the tunnel
//	interface-output      /if/tx          vxlan4-encap  /if/tx of the tunnel
//	ip4-input, ip6-input  /if/ip4, /if/ip6 (every packet entering the node)
//	error-drop            /if/drops of the receiving interface, /err/<node>/<name>
//	node counters         /err/<node>/<name>
//	graph nodes           /sys/node/* per node visit, with per-node counters
//	                      on (stats_nodes.go)
//	acl_add_replace       /acl/<i>/matches; a rule match without a session counts
//	NAT44-ED              /nat44-ed/total-sessions at every session create and
//	                      delete, max-cfg-sessions at enable, per-interface
//	                      counters validated by the interface feature, fast and
//	                      slow path translations and drops per protocol
//
// Every hook does nothing when the simulator has no segment
// (Options.StatsSocketPath empty).

// statsThread is the thread the simulator counts in: VPP's main thread.
const statsThread = 0

// newSegment creates the segment of a (re)started VPP and, once the simulator
// serves, its stats socket. Called with s.mu held (or before Start).
func (s *Sim) newSegment() error {
	if s.opts.StatsSocketPath == "" {
		return nil
	}
	seg, err := statseg.New(statseg.Config{PerNodeCounters: s.opts.StatsPerNodeCounters})
	if err != nil {
		return fmt.Errorf("vppsim: stats segment: %w", err)
	}
	if err := registerNodes(seg); err != nil {
		_ = seg.Close()
		return fmt.Errorf("vppsim: stats segment: %w", err)
	}
	s.seg = seg
	return nil
}

// serveStats serves the current segment on Options.StatsSocketPath.
func (s *Sim) serveStats() error {
	if s.seg == nil {
		return nil
	}
	path := s.opts.StatsSocketPath
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("vppsim: create stats socket directory: %w", err)
	}
	srv, err := s.seg.Serve(context.Background(), path)
	if err != nil {
		return fmt.Errorf("vppsim: %w", err)
	}
	s.segSrv = srv
	return nil
}

// closeStats stops serving the segment and unmaps it. The socket file goes, so
// a reader (govpp's statsclient watches the file) sees VPP leave.
func (s *Sim) closeStats() {
	if s.segSrv != nil {
		_ = s.segSrv.Close()
		s.segSrv = nil
	}
	if s.seg != nil {
		_ = s.seg.Close()
		s.seg = nil
	}
}

// StatsSocketPath returns the stats socket the simulator serves ("" if none).
func (s *Sim) StatsSocketPath() string { return s.opts.StatsSocketPath }

// seg is the stats segment the state counts in; nil when there is none (or
// for a state built without a simulator, in unit tests).
func (st *state) seg() *statseg.Segment {
	if st.s == nil {
		return nil
	}
	return st.s.seg
}

// statsAddInterface publishes a new interface.
func (st *state) statsAddInterface(i *iface) {
	if g := st.seg(); g != nil {
		if err := g.AddInterface(i.idx, i.name); err != nil {
			st.s.log.WithError(err).Warn("stats segment: publish interface")
		}
	}
}

// statsDeleteInterface unpublishes a deleted interface.
func (st *state) statsDeleteInterface(i *iface) {
	if g := st.seg(); g != nil {
		if err := g.DeleteInterface(i.idx); err != nil {
			st.s.log.WithError(err).Warn("stats segment: unpublish interface")
		}
	}
}

// statsRx counts a frame received on sw (/if/rx).
func (st *state) statsRx(sw uint32, bytes int) {
	if g := st.seg(); g != nil {
		g.AddIfCombined(statsThread, statseg.IfRx, sw, 1, uint64(bytes))
	}
}

// statsTx counts a frame sent on sw (/if/tx).
func (st *state) statsTx(sw uint32, bytes int) {
	if g := st.seg(); g != nil {
		g.AddIfCombined(statsThread, statseg.IfTx, sw, 1, uint64(bytes))
	}
}

// statsIfSimple counts one packet in a simple interface counter.
func (st *state) statsIfSimple(c statseg.IfSimple, sw uint32) {
	if g := st.seg(); g != nil {
		g.AddIfSimple(statsThread, c, sw, 1)
	}
}

// statsError counts one packet against a node's error. The index is kept per
// (node, reason) so that a packet costs one map lookup; the first count of an
// error registers it (the simulator names errors as it meets them).
func (st *state) statsError(k errKey) {
	g := st.seg()
	if g == nil {
		return
	}
	idx, ok := st.fwd.errIdx[k]
	if !ok {
		var err error
		idx, err = g.EnsureError(k.node, statsErrorName(k.node, k.reason))
		if err != nil {
			st.s.log.WithError(err).WithField("error", k.node+"/"+k.reason).Warn("stats segment: register error")
			return
		}
		if st.fwd.errIdx == nil {
			st.fwd.errIdx = map[errKey]statseg.ErrorIndex{}
		}
		st.fwd.errIdx[k] = idx
	}
	g.AddError(statsThread, idx, 1)
}

// statsClearInterfaces zeroes the /if/ counters of sw (statseg.AllInterfaces:
// of every interface).
func (st *state) statsClearInterfaces(sw uint32) {
	if g := st.seg(); g != nil {
		g.ClearInterfaceCounters(sw)
	}
}

// statsACL publishes (and zeroes) the rule counters of an added or replaced ACL.
func (st *state) statsACL(idx uint32, rules int) {
	if g := st.seg(); g != nil {
		if err := g.SetACL(idx, rules); err != nil {
			st.s.log.WithError(err).Warn("stats segment: publish ACL counters")
		}
	}
}

// statsACLMatch counts a packet that matched rule of ACL acl.
func (st *state) statsACLMatch(acl uint32, rule int, bytes int) {
	if g := st.seg(); g != nil {
		g.AddACLMatch(statsThread, acl, uint32(rule), uint64(bytes))
	}
}

// statsNATSessions writes the session gauge (nat44_ed_inlines.h sets it to the
// pool size at every session allocation and deletion).
func (st *state) statsNATSessions() {
	if g := st.seg(); g != nil {
		g.SetNATSessions(statsThread, uint64(st.nat.sess.live))
	}
}

// statsNATInterface validates the NAT44-ED per-interface counters of sw.
func (st *state) statsNATInterface(sw uint32) {
	if g := st.seg(); g != nil {
		if err := g.NATInterface(sw); err != nil {
			st.s.log.WithError(err).Warn("stats segment: NAT interface counters")
		}
	}
}

// statsNAT counts a packet a NAT44-ED node handled: translated (by protocol)
// or, with dropped, a drop, on the path that handled it. sw is the receiving
// interface, or the sending one for the output feature
// (nat44_ed_in2out.c cntr_sw_if_index0).
func (st *state) statsNAT(d statseg.NATDir, path statseg.NATPath, proto uint8, dropped bool, sw uint32) {
	g := st.seg()
	if g == nil {
		return
	}
	b := statseg.NATOther
	switch {
	case dropped:
		b = statseg.NATDrops
	case proto == protoTCP:
		b = statseg.NATTCP
	case proto == protoUDP:
		b = statseg.NATUDP
	case proto == protoICMP:
		b = statseg.NATICMP
	}
	g.AddNAT(statsThread, d, path, b, sw, 1)
}

// restartStats replaces the segment, as a VPP restart does (a new memfd behind a
// socket file that is removed and created again). Called with s.mu held, before
// the new state publishes its interfaces.
func (s *Sim) restartStats() {
	if s.opts.StatsSocketPath == "" {
		return
	}
	serving := s.segSrv != nil
	s.closeStats()
	if err := s.newSegment(); err != nil {
		s.log.WithError(err).Error("restart: no stats segment")
		return
	}
	if serving {
		if err := s.serveStats(); err != nil {
			s.log.WithError(err).Error("restart: cannot serve the stats segment")
		}
	}
}

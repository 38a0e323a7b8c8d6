package statseg

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// IfSimple is a simple interface counter ([thread][sw_if_index] packets).
type IfSimple int

// The simple interface counters, in the order of VPP's
// foreach_simple_interface_counter_name (vnet/interface.h).
const (
	IfDrops IfSimple = iota
	IfPunt
	IfIP4
	IfIP6
	IfRxNoBuf
	IfRxMiss
	IfRxError
	IfTxError
	IfMPLS
	numIfSimple
)

var ifSimpleNames = [numIfSimple]string{"drops", "punt", "ip4", "ip6", "rx-no-buf", "rx-miss", "rx-error", "tx-error", "mpls"}

// String is the counter's name under /if/.
func (c IfSimple) String() string { return ifSimpleNames[c] }

// IfCombined is a combined interface counter ([thread][sw_if_index] {packets, bytes}).
type IfCombined int

// The combined interface counters (foreach_combined_interface_counter_name).
const (
	IfRx IfCombined = iota
	IfRxUnicast
	IfRxMulticast
	IfRxBroadcast
	IfTx
	IfTxUnicast
	IfTxMulticast
	IfTxBroadcast
	numIfCombined
)

var ifCombinedNames = [numIfCombined]string{"rx", "rx-unicast", "rx-multicast", "rx-broadcast", "tx", "tx-unicast", "tx-multicast", "tx-broadcast"}

// String is the counter's name under /if/.
func (c IfCombined) String() string { return ifCombinedNames[c] }

// ErrorIndex is VPP's global error index: the element of /node/errors.
type ErrorIndex uint32

// NodeIndex is the index of a graph node in /sys/node/names.
type NodeIndex uint32

// NATDir is a NAT44-ED translation direction.
type NATDir int

// NAT directions.
const (
	In2Out NATDir = iota
	Out2In
)

// NATPath is the NAT44-ED path that handled a packet.
type NATPath int

// NAT paths.
const (
	FastPath NATPath = iota
	SlowPath
)

// NATProto is the protocol bucket of a NAT44-ED counter (foreach_nat_counter).
type NATProto int

// NAT protocol buckets.
const (
	NATTCP NATProto = iota
	NATUDP
	NATICMP
	NATOther
	NATDrops
	numNATProto
)

var (
	natDirNames   = [2]string{"in2out", "out2in"}
	natPathNames  = [2]string{"fastpath", "slowpath"}
	natProtoNames = [numNATProto]string{"tcp", "udp", "icmp", "other", "drops"}
)

// nodeCounterNames are the per-node counters of vlib/stats/collector.c.
var nodeCounterNames = [4]string{"clocks", "vectors", "calls", "suspends"}

type errKey struct{ node, reason string }

// vpp is the VPP-shaped part of a segment: the entries VPP's subsystems register.
type vpp struct {
	heartbeat uint32

	ifNames    uint32
	ifSimple   [numIfSimple]uint32
	ifCombined [numIfCombined]uint32
	ifLinks    map[uint32][]uint32 // sw_if_index -> its /interfaces/<name>/* symlinks

	nodeErrors uint32
	nErrors    uint32
	errs       map[errKey]ErrorIndex

	perNode      bool
	nodeNames    uint32
	nodeCounters [4]uint32
	nodes        map[string]NodeIndex
	nodeLinks    map[NodeIndex][]uint32

	acls       []uint32 // acl_index -> /acl/<i>/matches entry
	aclEnabled atomic.Bool

	natSessions uint32
	natMaxCfg   uint32
	natIf       [2][2][numNATProto]uint32
	natHairpin  uint32
}

// initVPP registers what VPP 25.10 has at start: the fixed /sys scalars (indices 0..2
// are heartbeat, last_stats_clear, boottime, stats.h), /if/ counters and names,
// /node/errors, NAT44-ED's counters (nat44_ed.c nat_init) and, with per-node
// counters, /sys/node/*.
func (s *Segment) initVPP(cfg Config) error {
	v := &s.vpp
	v.ifLinks = make(map[uint32][]uint32)
	v.errs = make(map[errKey]ErrorIndex)
	v.nodes = make(map[string]NodeIndex)
	v.nodeLinks = make(map[NodeIndex][]uint32)
	v.perNode = cfg.PerNodeCounters
	return s.change(func() error {
		var err error
		must := func(i uint32, e error) uint32 {
			if err == nil {
				err = e
			}
			return i
		}
		v.heartbeat = must(s.addEntry(typeScalar, "/sys/heartbeat", 0))
		must(s.addEntry(typeScalar, "/sys/last_stats_clear", 0))
		must(s.addEntry(typeScalar, "/sys/boottime", 0))
		must(s.addEntry(typeScalar, "/sys/vector_rate", 0))
		must(s.addEntry(typeScalar, "/sys/num_worker_threads", uint64(s.threads-1)))
		must(s.addEntry(typeScalar, "/sys/input_rate", 0))
		must(s.addEntry(typeScalar, "/sys/last_update", 0))
		for c := range v.ifSimple {
			v.ifSimple[c] = must(s.addCounter(typeSimple, "/if/"+ifSimpleNames[c], 0))
		}
		for c := range v.ifCombined {
			v.ifCombined[c] = must(s.addCounter(typeCombined, "/if/"+ifCombinedNames[c], 0))
		}
		v.ifNames = must(s.addNameVector("/if/names"))
		v.nodeErrors = must(s.addCounter(typeSimple, "/node/errors", 0))
		v.natSessions = must(s.addCounter(typeSimple, "/nat44-ed/total-sessions", 1))
		v.natMaxCfg = must(s.addEntry(typeScalar, "/nat44-ed/max-cfg-sessions", 0))
		for d := range v.natIf {
			for p := range v.natIf[d] {
				for pr := range v.natIf[d][p] {
					name := "/nat44-ed/" + natDirNames[d] + "/" + natPathNames[p] + "/" + natProtoNames[pr]
					v.natIf[d][p][pr] = must(s.addCounter(typeSimple, name, 1))
				}
			}
		}
		v.natHairpin = must(s.addCounter(typeSimple, "/nat44-ed/hairpinning", 1))
		if v.perNode {
			v.nodeNames = must(s.addNameVector("/sys/node/names"))
			for c := range v.nodeCounters {
				v.nodeCounters[c] = must(s.addCounter(typeSimple, "/sys/node/"+nodeCounterNames[c], 0))
			}
		}
		return err
	})
}

// Heartbeat increments /sys/heartbeat (VPP's stats collector does every interval).
func (s *Segment) Heartbeat() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		atomic.AddUint64(s.word(s.entryOff(s.heartbeat)+entryUnion), 1)
	}
}

// symlinkName formats /interfaces/<name>/<counter> and /nodes/<name>/<counter>: a '/'
// in the object name becomes '_' (format_vlib_stats_symlink).
func symlinkName(prefix, object, counter string) string {
	return prefix + strings.ReplaceAll(object, "/", "_") + "/" + counter
}

// AddInterface publishes interface sw with VPP's name for it: /if/names[sw], every
// /if/ counter validated and zeroed at sw, and the /interfaces/<name>/<counter>
// symlinks (vnet/interface/stats.c statseg_sw_interface_add_del). One directory
// change: the epoch moves once.
func (s *Segment) AddInterface(sw uint32, name string) error {
	if name == "" {
		return fmt.Errorf("statseg: interface %d: empty name", sw)
	}
	if err := checkName(symlinkName("/interfaces/", name, "rx-multicast")); err != nil { // the longest
		return fmt.Errorf("statseg: interface %d: name %q too long for its counters: %w", sw, name, err)
	}
	return s.change(func() error {
		v := &s.vpp
		if _, dup := v.ifLinks[sw]; dup {
			return refused(fmt.Errorf("statseg: interface %d (%s): sw_if_index already published", sw, name))
		}
		counters := s.ifCounterEntries()
		for _, i := range counters {
			if err := s.growCounter(i, sw+1); err != nil {
				return err
			}
			s.zeroElement(i, sw)
		}
		if err := s.setName(v.ifNames, sw, name); err != nil {
			return err
		}
		links := make([]uint32, 0, len(counters))
		for _, i := range counters {
			counter := strings.TrimPrefix(s.entries[i].name, "/if/")
			l, err := s.addSymlink(symlinkName("/interfaces/", name, counter), i, sw)
			if err != nil {
				for _, l := range links {
					s.removeEntry(l)
				}
				return fmt.Errorf("statseg: interface %d: %w", sw, err)
			}
			links = append(links, l)
		}
		v.ifLinks[sw] = links
		return nil
	})
}

// DeleteInterface unpublishes interface sw: its /if/names slot reads "deleted" and its
// symlinks go; the counters keep their values until the index is reused.
func (s *Segment) DeleteInterface(sw uint32) error {
	return s.change(func() error {
		v := &s.vpp
		links, ok := v.ifLinks[sw]
		if !ok {
			return refused(fmt.Errorf("statseg: delete interface %d: not published", sw))
		}
		for _, l := range links {
			s.removeEntry(l)
		}
		delete(v.ifLinks, sw)
		return s.setName(v.ifNames, sw, "deleted")
	})
}

// AllInterfaces is the sw_if_index of sw_interface_clear_stats that means every
// interface.
const AllInterfaces = ^uint32(0)

// ClearInterfaceCounters zeroes every /if/ counter of interface sw, or of all with
// AllInterfaces, as sw_interface_clear_stats does (interface_api.c: the counter
// vectors live in the segment, so readers see zeros). A counter update, not a
// directory change: the epoch stays. ("clear errors" by contrast leaves the segment
// alone: VPP keeps a copy of the counters at the clear for its CLI, vlib/error.c.)
func (s *Segment) ClearInterfaceCounters(sw uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	for _, i := range s.ifCounterEntries() {
		for _, v := range s.entries[i].inner {
			first, last := uint32(0), v.n
			if sw != AllInterfaces {
				if sw >= v.n {
					continue
				}
				first, last = sw, sw+1
			}
			for w := v.off + uint64(first)*uint64(v.size); w < v.off+uint64(last)*uint64(v.size); w += 8 {
				atomic.StoreUint64(s.word(w), 0)
			}
		}
	}
}

// ifCounterEntries lists the entries of every /if/ counter.
func (s *Segment) ifCounterEntries() []uint32 {
	out := make([]uint32, 0, len(s.ifSimple)+len(s.ifCombined))
	out = append(out, s.ifSimple[:]...)
	return append(out, s.ifCombined[:]...)
}

// zeroElement zeroes element k of every thread of counter i.
func (s *Segment) zeroElement(i, k uint32) {
	e := &s.entries[i]
	for _, v := range e.inner {
		if k < v.n {
			clear(s.mem[v.off+uint64(k)*uint64(v.size) : v.off+uint64(k+1)*uint64(v.size)])
		}
	}
}

// AddIfCombined counts packets and bytes on interface sw in thread t (e.g. IfRx at
// device input, IfTx at interface output). Unpublished indices are ignored.
func (s *Segment) AddIfCombined(t int, c IfCombined, sw uint32, packets, bytes uint64) {
	s.mu.RLock()
	if !s.closed {
		s.addCombined(s.ifCombined[c], t, sw, packets, bytes)
	}
	s.mu.RUnlock()
}

// AddIfSimple counts n packets on interface sw in thread t (IfDrops against the
// receiving interface at error-drop, IfIP4 at ip4-input, ...).
func (s *Segment) AddIfSimple(t int, c IfSimple, sw uint32, n uint64) {
	s.mu.RLock()
	if !s.closed {
		s.addSimple(s.ifSimple[c], t, sw, n)
	}
	s.mu.RUnlock()
}

// RegisterErrors registers the error counters of a graph node (vlib_register_errors):
// reasons get consecutive global indices, /node/errors grows to cover them and each
// gets the symlink /err/<node>/<reason>. It returns the index of the first; a node
// registers once.
func (s *Segment) RegisterErrors(node string, reasons ...string) (ErrorIndex, error) {
	if node == "" || len(reasons) == 0 {
		return 0, fmt.Errorf("statseg: register errors of node %q: a node name and at least one reason are required", node)
	}
	for _, r := range reasons {
		if err := checkName("/err/" + node + "/" + r); err != nil {
			return 0, err
		}
	}
	var first ErrorIndex
	err := s.change(func() error {
		v := &s.vpp
		for _, r := range reasons {
			if _, dup := v.errs[errKey{node, r}]; dup {
				return refused(fmt.Errorf("statseg: error %s/%s: already registered", node, r))
			}
		}
		first = ErrorIndex(v.nErrors)
		if err := s.growCounter(v.nodeErrors, v.nErrors+uint32(len(reasons))); err != nil {
			return err
		}
		var links []uint32
		for k, r := range reasons {
			idx := v.nErrors + uint32(k)
			l, err := s.addSymlink("/err/"+node+"/"+r, v.nodeErrors, idx)
			if err != nil {
				for _, l := range links {
					s.removeEntry(l)
				}
				return err
			}
			links = append(links, l)
		}
		for k, r := range reasons {
			v.errs[errKey{node, r}] = first + ErrorIndex(k)
		}
		v.nErrors += uint32(len(reasons))
		return nil
	})
	return first, err
}

// LookupError returns the index of a registered node error.
func (s *Segment) LookupError(node, reason string) (ErrorIndex, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.errs[errKey{node, reason}]
	return i, ok
}

// EnsureError returns the index of node's error reason, registering it first when
// it is new. VPP registers every error of a node with the node, at start; a caller
// whose errors are not listed up front (the simulator names them as it drops) can
// register them on first use, at the cost of one directory change each.
func (s *Segment) EnsureError(node, reason string) (ErrorIndex, error) {
	if i, ok := s.LookupError(node, reason); ok {
		return i, nil
	}
	i, err := s.RegisterErrors(node, reason)
	if err != nil {
		if j, ok := s.LookupError(node, reason); ok { // registered meanwhile
			return j, nil
		}
	}
	return i, err
}

// AddError counts n packets against error i in thread t (vlib_error_count).
func (s *Segment) AddError(t int, i ErrorIndex, n uint64) {
	s.mu.RLock()
	if !s.closed {
		s.addSimple(s.nodeErrors, t, uint32(i), n)
	}
	s.mu.RUnlock()
}

// RegisterNode gives a graph node its index. With per-node counters on, the node is
// named in /sys/node/names, its counters grow to cover it and it gets the symlinks
// /nodes/<node>/{clocks,vectors,calls,suspends}; off (VPP's default), only the index
// is kept and AddNodeRuntime does nothing.
func (s *Segment) RegisterNode(name string) (NodeIndex, error) {
	if name == "" {
		return 0, fmt.Errorf("statseg: register node: empty name")
	}
	if err := checkName(symlinkName("/nodes/", name, "suspends")); err != nil { // the longest
		return 0, fmt.Errorf("statseg: node %q: %w", name, err)
	}
	var idx NodeIndex
	err := s.change(func() error {
		v := &s.vpp
		if _, dup := v.nodes[name]; dup {
			return refused(fmt.Errorf("statseg: node %q: already registered", name))
		}
		idx = NodeIndex(len(v.nodes))
		if v.perNode {
			if err := s.setName(v.nodeNames, uint32(idx), name); err != nil {
				return err
			}
			var links []uint32
			for c, i := range v.nodeCounters {
				if err := s.growCounter(i, uint32(idx)+1); err != nil {
					return err
				}
				l, err := s.addSymlink(symlinkName("/nodes/", name, nodeCounterNames[c]), i, uint32(idx))
				if err != nil {
					for _, l := range links {
						s.removeEntry(l)
					}
					return err
				}
				links = append(links, l)
			}
			v.nodeLinks[idx] = links
		}
		v.nodes[name] = idx
		return nil
	})
	return idx, err
}

// AddNodeRuntime adds one dispatch of node n in thread t: calls, vectors (packets),
// clocks and suspends, as the stats collector copies them from the node runtime.
func (s *Segment) AddNodeRuntime(t int, n NodeIndex, calls, vectors, clocks, suspends uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed || !s.perNode {
		return
	}
	for c, v := range [4]uint64{clocks, vectors, calls, suspends} {
		s.addSimple(s.nodeCounters[c], t, uint32(n), v)
	}
}

// SetACL publishes the rule counters of ACL acl with the given number of rules, as
// acl_add_replace does (acl.c validate_and_reset_acl_counters): /acl/<i>/matches is
// created once for every index up to acl (rules+1 elements for acl, one for the
// indices below that had no counters yet) and never removed; adding or replacing an
// ACL zeroes its counters.
func (s *Segment) SetACL(acl uint32, rules int) error {
	if rules < 0 {
		return fmt.Errorf("statseg: ACL %d: negative rule count %d", acl, rules)
	}
	return s.change(func() error {
		v := &s.vpp
		for i := uint32(len(v.acls)); i <= acl; i++ {
			e, err := s.addCounter(typeCombined, fmt.Sprintf("/acl/%d/matches", i), 1)
			if err != nil {
				return err
			}
			v.acls = append(v.acls, e)
		}
		return s.resetCounter(v.acls[acl], uint32(rules)+1)
	})
}

// EnableACLCounters is acl_stats_intf_counters_enable: only while enabled does
// AddACLMatch count.
func (s *Segment) EnableACLCounters(enable bool) { s.aclEnabled.Store(enable) }

// AddACLMatch counts a packet of the given bytes matching rule of ACL acl in thread t.
func (s *Segment) AddACLMatch(t int, acl, rule uint32, bytes uint64) {
	if !s.aclEnabled.Load() {
		return
	}
	s.mu.RLock()
	if !s.closed && acl < uint32(len(s.acls)) {
		s.addCombined(s.acls[acl], t, rule, 1, bytes)
	}
	s.mu.RUnlock()
}

// SetNATSessions sets /nat44-ed/total-sessions of thread t: the thread's session pool
// size, written at every session create and delete (nat44_ed_inlines.h).
func (s *Segment) SetNATSessions(t int, n uint64) {
	s.mu.RLock()
	if !s.closed {
		s.setSimple(s.natSessions, t, 0, n)
	}
	s.mu.RUnlock()
}

// SetNATMaxCfgSessions sets the /nat44-ed/max-cfg-sessions gauge.
func (s *Segment) SetNATMaxCfgSessions(n uint64) {
	s.mu.RLock()
	if !s.closed {
		s.setScalar(s.natMaxCfg, n)
	}
	s.mu.RUnlock()
}

// NATInterface validates and zeroes the per-interface NAT44-ED counters of sw, as
// VPP does when NAT is enabled on an interface (nat_validate_interface_counters);
// counts for an interface never validated are ignored.
func (s *Segment) NATInterface(sw uint32) error {
	return s.change(func() error {
		v := &s.vpp
		all := []uint32{v.natHairpin}
		for d := range v.natIf {
			for p := range v.natIf[d] {
				all = append(all, v.natIf[d][p][:]...)
			}
		}
		for _, i := range all {
			if err := s.growCounter(i, sw+1); err != nil {
				return err
			}
			s.zeroElement(i, sw)
		}
		return nil
	})
}

// AddNAT counts n packets translated (or dropped, NATDrops) on interface sw.
func (s *Segment) AddNAT(t int, d NATDir, p NATPath, proto NATProto, sw uint32, n uint64) {
	s.mu.RLock()
	if !s.closed {
		s.addSimple(s.natIf[d][p][proto], t, sw, n)
	}
	s.mu.RUnlock()
}

// AddNATHairpin counts n hairpinned packets on interface sw.
func (s *Segment) AddNATHairpin(t int, sw uint32, n uint64) {
	s.mu.RLock()
	if !s.closed {
		s.addSimple(s.natHairpin, t, sw, n)
	}
	s.mu.RUnlock()
}

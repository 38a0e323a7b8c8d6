package vppsim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	interfaces "go.fd.io/govpp/binapi/interface"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// Packet tracing, error counters and interface counters, as VPP's
// "trace add", "show trace", "show errors" and "show interface" show them.

// ifCounters are the simple and combined counters of an interface.
type ifCounters struct {
	rxPkts, rxBytes uint64
	txPkts, txBytes uint64
	drops           uint64
}

// InterfaceCounters are the packet counters of an interface, as VPP's
// stats segment exposes them (/if/rx, /if/tx, /if/drops).
type InterfaceCounters struct {
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	Drops              uint64
}

// traceLine is one node a traced packet visited and what it decided.
type traceLine struct {
	at   time.Duration
	node string
	text string
}

// traceRec is the trace of one packet.
type traceRec struct {
	lines []traceLine
}

// traceState is what "trace add" armed and what was captured.
type traceState struct {
	want    map[string]int // input node -> packets still to trace
	records []*traceRec
}

// errKey identifies an error counter: the node and the reason.
type errKey struct {
	node, reason string
}

// traceInputNodes are the nodes "trace add" accepts, VPP's input nodes of
// the interface kinds the simulator has.
var traceInputNodes = []string{"virtio-input", "af-packet-input", "dpdk-input", "ethernet-input"}

// inputNode is the device input node of an interface kind.
func inputNode(k ifKind) string {
	switch k {
	case kindTap:
		return "virtio-input"
	case kindAfPacket:
		return "af-packet-input"
	case kindNIC:
		return "dpdk-input"
	}
	return "ethernet-input"
}

// maxTraceRecords bounds what is kept, like VPP's per-thread trace buffer.
const maxTraceRecords = 1000

// startTrace returns a trace record for a packet entering at node if
// tracing of that node is armed.
func (st *state) startTrace(node string) *traceRec {
	t := &st.fwd.trace
	if len(t.want) == 0 || t.want[node] <= 0 || len(t.records) >= maxTraceRecords {
		return nil
	}
	t.want[node]--
	r := &traceRec{}
	t.records = append(t.records, r)
	return r
}

// newBufferTrace returns the trace record of a packet a node creates while
// handling p (an ARP request): VPP copies the trace flag to the new buffer,
// which then has its own record; nil if p is not traced or the buffer is
// full.
func (st *state) newBufferTrace(p *pkt) *traceRec {
	t := &st.fwd.trace
	if p.tr == nil || len(t.records) >= maxTraceRecords {
		return nil
	}
	r := &traceRec{}
	t.records = append(t.records, r)
	return r
}

// tracef records what a node decided. Callers check p.tr != nil first, so
// nothing is formatted for untraced packets.
func (st *state) tracef(p *pkt, node, format string, args ...any) {
	if p.tr == nil {
		return
	}
	p.tr.lines = append(p.tr.lines, traceLine{at: st.uptime(), node: node, text: fmt.Sprintf(format, args...)})
}

// drop frees a packet and counts the error, as error-drop does.
func (st *state) drop(p *pkt, node, reason string) {
	st.visit(nodeErrorDrop)
	k := errKey{node, reason}
	st.fwd.errors[k]++
	if i := st.ifaces[p.rx]; i != nil {
		i.ctr.drops++
	}
	// error-drop counts the receiving interface's /if/drops and the error.
	st.statsIfSimple(statseg.IfDrops, p.rx)
	st.statsError(k)
	if p.tr != nil {
		// One line per node: a node that traced its decision already says
		// why on that line.
		if l := p.tr.lines; len(l) > 0 && l[len(l)-1].node == node {
			l[len(l)-1].text += "; drop: " + reason
		} else {
			st.tracef(p, node, "drop: %s", reason)
		}
		st.tracef(p, "error-drop", "rx:%s %s: %s", st.ifName(p.rx), node, reason)
	}
	st.putPkt(p)
}

// count counts a non-drop event of a node (shown by "show errors" with
// severity info, like VPP's per-node counters).
func (st *state) count(node, reason string) {
	k := errKey{node, reason}
	st.fwd.errors[k]++
	st.statsError(k)
}

// uptime is the time since the simulated VPP started.
func (st *state) uptime() time.Duration {
	return st.s.clock.Since(st.started)
}

func cliTraceAdd(st *state, args []string) string {
	if len(args) < 2 {
		return "trace add: expected <input-node> <count>\n"
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		return "trace add: invalid count `" + args[1] + "'\n"
	}
	known := false
	for _, name := range traceInputNodes {
		known = known || name == args[0]
	}
	if !known {
		return "trace add: node `" + args[0] + "' is not an input node (" + strings.Join(traceInputNodes, ", ") + ")\n"
	}
	if st.fwd.trace.want == nil {
		st.fwd.trace.want = map[string]int{}
	}
	st.fwd.trace.want[args[0]] += n
	return ""
}

func cliTraceClear(st *state, _ []string) string {
	st.fwd.trace = traceState{}
	return ""
}

func formatUptime(d time.Duration) string {
	us := d.Microseconds()
	s := us / 1e6
	return fmt.Sprintf("%02d:%02d:%02d:%06d", s/3600, s/60%60, s%60, us%1e6)
}

func cliShowTrace(st *state, _ []string) string {
	var b strings.Builder
	b.WriteString("------------------- Start of thread 0 vpp_main -------------------\n")
	recs := st.fwd.trace.records
	if len(recs) == 0 {
		b.WriteString("No packets in trace buffer\n")
		return b.String()
	}
	for k, r := range recs {
		fmt.Fprintf(&b, "Packet %d\n\n", k+1)
		for _, l := range r.lines {
			fmt.Fprintf(&b, "%s: %s\n  %s\n", formatUptime(l.at), l.node, l.text)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func cliShowErrors(st *state, _ []string) string {
	keys := make([]errKey, 0, len(st.fwd.errors))
	for k, v := range st.fwd.errors {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].node != keys[b].node {
			return keys[a].node < keys[b].node
		}
		return keys[a].reason < keys[b].reason
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%10s%30s%46s%10s\n", "Count", "Node", "Reason", "Severity")
	for _, k := range keys {
		sev := "error"
		if strings.HasPrefix(k.reason, "good ") || strings.HasSuffix(k.reason, " processed") || strings.HasSuffix(k.reason, " sent") ||
			strings.HasSuffix(k.reason, " received") || strings.HasSuffix(k.reason, " fragmented") || strings.HasSuffix(k.reason, " moves") {
			sev = "info"
		}
		fmt.Fprintf(&b, "%10d%30s%46s%10s\n", st.fwd.errors[k], k.node, k.reason, sev)
	}
	return b.String()
}

// counterLines are the non-zero counters of an interface in VPP's order.
func (c *ifCounters) lines() [][2]string {
	var out [][2]string
	add := func(name string, v uint64) {
		if v != 0 {
			out = append(out, [2]string{name, strconv.FormatUint(v, 10)})
		}
	}
	add("rx packets", c.rxPkts)
	add("rx bytes", c.rxBytes)
	add("tx packets", c.txPkts)
	add("tx bytes", c.txBytes)
	add("drops", c.drops)
	return out
}

// InterfaceCounters returns the packet counters of the named interface.
func (s *Sim) InterfaceCounters(name string) (InterfaceCounters, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.st.byName[name]
	if i == nil {
		return InterfaceCounters{}, false
	}
	c := i.ctr
	return InterfaceCounters{RxPackets: c.rxPkts, RxBytes: c.rxBytes, TxPackets: c.txPkts, TxBytes: c.txBytes, Drops: c.drops}, true
}

// ErrorCount returns the count of one "show errors" counter (node and
// reason as shown there).
func (s *Sim) ErrorCount(node, reason string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.fwd.errors[errKey{node, reason}]
}

// hSwInterfaceClearStats zeroes the counters of one interface, or of all
// with sw_if_index ~0.
func hSwInterfaceClearStats(cl *call, m *interfaces.SwInterfaceClearStats) {
	rv := retvalOK
	if uint32(m.SwIfIndex) == noIndex {
		for _, i := range cl.st.ifaces {
			i.ctr = ifCounters{}
		}
		cl.st.statsClearInterfaces(statseg.AllInterfaces)
	} else if i := cl.st.iface(m.SwIfIndex); i != nil {
		i.ctr = ifCounters{}
		cl.st.statsClearInterfaces(i.idx)
	} else {
		rv = retvalInvalidSwIfIndex
	}
	cl.send(&interfaces.SwInterfaceClearStatsReply{Retval: rv})
}

func cliClearInterfaces(st *state, _ []string) string {
	for _, i := range st.ifaces {
		i.ctr = ifCounters{}
	}
	st.statsClearInterfaces(statseg.AllInterfaces)
	return ""
}

// cliClearErrors zeroes what "show errors" shows. VPP keeps a copy of the
// counters at the clear for its CLI and leaves the stats segment's alone
// (vlib/error.c clear_error_counters), so the segment is not touched.
func cliClearErrors(st *state, _ []string) string {
	clear(st.fwd.errors)
	return ""
}

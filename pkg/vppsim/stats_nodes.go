package vppsim

import (
	"fmt"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// Per-node runtime counters (statseg { per-node-counters on }).
//
// VPP 25.10's stats collector (vlib/stats/collector.c update_node_counters)
// names every graph node in /sys/node/names and copies each node's runtime
// (clocks, vectors, calls, suspends) into /sys/node/<counter>, one element per
// node index, with symlinks /nodes/<node>/<counter>. It does so only when
// per-node counters are on; off (the default), none of these entries exist.
//
// The simulator's graph has a fixed set of nodes, registered with every new
// segment in the order of simNode, so a simNode is its own NodeIndex. A packet
// counts one call and one vector at each node it enters: the simulator
// dispatches one packet per frame (VPP counts a call per frame and a vector
// per packet, so on a loaded VPP calls < vectors). Clocks stay 0: the
// simulator has no cycle counter worth publishing, and suspends are only for
// process nodes, which the forwarding has none of.

// simNode is a graph node of the simulator's forwarding.
type simNode uint8

// The nodes the forwarding counts, with VPP's names (simNodeNames).
const (
	nodeVirtioInput simNode = iota
	nodeAfPacketInput
	nodeDpdkInput
	nodeEthernetInput
	nodeIP4Input
	nodeIP4Lookup
	nodeIP4Rewrite
	nodeIP4Local
	nodeIP6Input
	nodeIP6Lookup
	nodeIP6Rewrite
	nodeIP6Local
	nodeARPInput
	nodeL2Input
	nodeL2Output
	nodeVxlan4Input
	nodeVxlan4Encap
	nodeInterfaceOutput
	nodeErrorDrop
	numSimNodes
)

// simNodeNames are VPP's names of the simulator's nodes.
var simNodeNames = [numSimNodes]string{
	nodeVirtioInput:     "virtio-input",
	nodeAfPacketInput:   "af-packet-input",
	nodeDpdkInput:       "dpdk-input",
	nodeEthernetInput:   "ethernet-input",
	nodeIP4Input:        "ip4-input",
	nodeIP4Lookup:       "ip4-lookup",
	nodeIP4Rewrite:      "ip4-rewrite",
	nodeIP4Local:        "ip4-local",
	nodeIP6Input:        "ip6-input",
	nodeIP6Lookup:       "ip6-lookup",
	nodeIP6Rewrite:      "ip6-rewrite",
	nodeIP6Local:        "ip6-local",
	nodeARPInput:        "arp-input",
	nodeL2Input:         "l2-input",
	nodeL2Output:        "l2-output",
	nodeVxlan4Input:     "vxlan4-input",
	nodeVxlan4Encap:     "vxlan4-encap",
	nodeInterfaceOutput: "interface-output",
	nodeErrorDrop:       "error-drop",
}

// inputSimNode is the device input node of an interface kind (inputNode's
// name as a simNode).
func inputSimNode(k ifKind) simNode {
	switch k {
	case kindTap:
		return nodeVirtioInput
	case kindAfPacket:
		return nodeAfPacketInput
	case kindNIC:
		return nodeDpdkInput
	}
	return nodeEthernetInput
}

// registerNodes gives every simulator node its index in a new segment, in
// simNode order (the segment numbers nodes as they register).
func registerNodes(seg *statseg.Segment) error {
	for n, name := range simNodeNames {
		idx, err := seg.RegisterNode(name)
		if err != nil {
			return fmt.Errorf("register node %s: %w", name, err)
		}
		if idx != statseg.NodeIndex(n) {
			return fmt.Errorf("register node %s: index %d, want %d", name, idx, n)
		}
	}
	return nil
}

// visit counts one packet entering node n. With per-node counters off (or
// no segment) it costs one field load and a branch.
func (st *state) visit(n simNode) {
	if st.s == nil || !st.s.opts.StatsPerNodeCounters {
		return
	}
	if g := st.s.seg; g != nil {
		g.AddNodeRuntime(statsThread, statseg.NodeIndex(n), 1, 1, 0, 0)
	}
}

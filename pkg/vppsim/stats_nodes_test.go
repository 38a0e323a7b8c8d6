package vppsim

import (
	"path/filepath"
	"strings"
	"testing"

	"go.fd.io/govpp/adapter"
)

// TestPerNodeCountersCountPacketsThroughTheGraph: with per-node counters on,
// N packets routed from one NIC to another show at least N vectors and calls
// at every node of their path, read through govpp's statsclient by the
// /nodes/<node>/<counter> symlinks, and nodes they did not visit stay at 0.
func TestPerNodeCountersCountPacketsThroughTheGraph(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "stats.sock")
	n := newNATEnvWith(t, 0, func(o *Options) {
		o.StatsSocketPath = stats
		o.StatsPerNodeCounters = true
	})
	r := newStatsReader(t, stats)

	const N = 5
	pkt := ethFrame(nic2MAC, pod1MAC, etherTypeIP4, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5000, 53, "query")))
	for range N {
		n.inject(nic2, pkt)
	}
	if got := len(n.c.take(nic1)); got != N {
		t.Fatalf("%d packets out of %s, want %d", got, nic1, N)
	}

	names, ok := r.entry("/sys/node/names").(adapter.NameStat)
	if !ok || len(names) < int(numSimNodes) {
		t.Fatalf("/sys/node/names = %#v, want the simulator's %d nodes", r.entry("/sys/node/names"), numSimNodes)
	}
	for _, node := range []string{"dpdk-input", "ethernet-input", "ip4-input", "ip4-lookup", "ip4-rewrite", "interface-output"} {
		if v := r.simple("/nodes/"+node+"/vectors", 0); v < N {
			t.Errorf("/nodes/%s/vectors = %d, want >= %d", node, v, N)
		}
		if v := r.simple("/nodes/"+node+"/calls", 0); v < 1 {
			t.Errorf("/nodes/%s/calls = %d, want >= 1", node, v)
		}
	}
	for _, node := range []string{"ip6-input", "vxlan4-input", "error-drop"} {
		if v := r.simple("/nodes/"+node+"/vectors", 0); v != 0 {
			t.Errorf("/nodes/%s/vectors = %d, want 0 (not on the path)", node, v)
		}
	}
	// The vector is indexed by node: the symlink and /sys/node/vectors agree.
	vec, ok := r.entry("/sys/node/vectors").(adapter.SimpleCounterStat)
	if !ok || len(vec) == 0 || len(vec[0]) <= int(nodeIP4Input) || uint64(vec[0][nodeIP4Input]) < N {
		t.Errorf("/sys/node/vectors[ip4-input] = %#v, want >= %d", r.entry("/sys/node/vectors"), N)
	}

	// A restarted VPP publishes its nodes again in a new segment, from zero.
	n.sim.Restart()
	r = newStatsReader(t, stats)
	if names, _ := r.entry("/sys/node/names").(adapter.NameStat); len(names) != int(numSimNodes) {
		t.Errorf("/sys/node/names after restart: %d names, want %d", len(names), numSimNodes)
	}
	if v := r.simple("/nodes/ip4-input/vectors", 0); v != 0 {
		t.Errorf("/nodes/ip4-input/vectors after restart = %d, want 0", v)
	}
}

// TestNoNodeCountersByDefault: as VPP without statseg { per-node-counters on },
// the segment has no /sys/node/ or /nodes/ entries even after traffic.
func TestNoNodeCountersByDefault(t *testing.T) {
	n, r := newStatsNATEnv(t)
	pkt := ethFrame(nic2MAC, pod1MAC, etherTypeIP4, ipPkt(pod1IP, "8.8.8.8", protoUDP, 64, udpL4(5000, 53, "query")))
	n.inject(nic2, pkt)
	if got := len(n.c.take(nic1)); got != 1 {
		t.Fatalf("%d packets out of %s, want 1", got, nic1)
	}
	for _, pattern := range []string{"^/sys/node/", "^/nodes/"} {
		list, err := r.sc.DumpStats(pattern)
		if err != nil {
			t.Fatalf("dump %s: %v", pattern, err)
		}
		if len(list) != 0 {
			t.Errorf("%s: %d entries (first %s), want none with per-node counters off", pattern, len(list), list[0].Name)
		}
	}
}

// TestPerNodeCountersNeedAStatsSegment: asking for node counters without a
// stats socket is refused, naming both options.
func TestPerNodeCountersNeedAStatsSegment(t *testing.T) {
	_, err := New(Options{SocketPath: filepath.Join(t.TempDir(), "api.sock"), StatsPerNodeCounters: true})
	if err == nil || !strings.Contains(err.Error(), "StatsPerNodeCounters") || !strings.Contains(err.Error(), "StatsSocketPath") {
		t.Fatalf("New with per-node counters and no stats socket: %v, want an error naming StatsPerNodeCounters and StatsSocketPath", err)
	}
}

package statseg_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg/statsegtest"
)

// served returns a segment served on a socket in a temporary directory and a
// connected govpp statsclient reading it.
func served(t *testing.T, cfg statseg.Config) (*statseg.Segment, *statsclient.StatsClient) {
	seg, path := serve(t, cfg)
	sc := statsclient.NewStatsClient(path)
	if err := sc.Connect(); err != nil {
		t.Fatalf("govpp statsclient connect to %s: %v", path, err)
	}
	t.Cleanup(func() { sc.Disconnect() })
	return seg, sc
}

// connectCore connects govpp's core.StatsConnection (which connects its own client).
func connectCore(t *testing.T, path string) *core.StatsConnection {
	t.Helper()
	conn, err := core.ConnectStats(statsclient.NewStatsClient(path))
	if err != nil {
		t.Fatalf("govpp core.ConnectStats to %s: %v", path, err)
	}
	t.Cleanup(conn.Disconnect)
	return conn
}

// serve returns a segment served on a socket in a temporary directory.
func serve(t *testing.T, cfg statseg.Config) (*statseg.Segment, string) {
	return statsegtest.Serve(t, cfg)
}

// dump returns the entries matching the patterns by name, retrying while the
// writer is busy (as govpp's own callers do).
func dump(t *testing.T, sc *statsclient.StatsClient, patterns ...string) map[string]adapter.StatEntry {
	t.Helper()
	for range 100 {
		entries, err := sc.DumpStats(patterns...)
		if errors.Is(err, adapter.ErrStatsDataBusy) {
			continue
		}
		if err != nil {
			t.Fatalf("DumpStats %v: %v", patterns, err)
		}
		out := make(map[string]adapter.StatEntry, len(entries))
		for _, e := range entries {
			out[string(e.Name)] = e
		}
		return out
	}
	t.Fatalf("DumpStats %v: busy 100 times in a row", patterns)
	return nil
}

func mustAdd(t *testing.T, seg *statseg.Segment, sw uint32, name string) {
	t.Helper()
	if err := seg.AddInterface(sw, name); err != nil {
		t.Fatal(err)
	}
}

func TestGovppReadsExactInterfaceCounters(t *testing.T) {
	seg, path := serve(t, statseg.Config{})
	sc := statsclient.NewStatsClient(path)
	if err := sc.Connect(); err != nil {
		t.Fatal(err)
	}
	defer sc.Disconnect()
	mustAdd(t, seg, 0, "local0")
	mustAdd(t, seg, 1, "tap0")
	mustAdd(t, seg, 2, "tap1")
	for range 3 {
		seg.AddIfCombined(0, statseg.IfRx, 1, 1, 98)
	}
	seg.AddIfCombined(0, statseg.IfTx, 2, 2, 196)
	seg.AddIfSimple(0, statseg.IfDrops, 1, 1)
	seg.AddIfSimple(0, statseg.IfIP4, 1, 3)
	seg.AddIfSimple(0, statseg.IfDrops, 9, 1) // no such interface: ignored

	conn := connectCore(t, path)
	var st api.InterfaceStats
	if err := conn.GetInterfaceStats(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Interfaces) != 3 {
		t.Fatalf("govpp sees %d interfaces, want 3: %+v", len(st.Interfaces), st.Interfaces)
	}
	want := []api.InterfaceCounters{
		{InterfaceIndex: 0, InterfaceName: "local0"},
		{InterfaceIndex: 1, InterfaceName: "tap0", Rx: api.InterfaceCounterCombined{Packets: 3, Bytes: 294}, Drops: 1, IP4: 3},
		{InterfaceIndex: 2, InterfaceName: "tap1", Tx: api.InterfaceCounterCombined{Packets: 2, Bytes: 196}},
	}
	for i, w := range want {
		if st.Interfaces[i] != w {
			t.Errorf("interface %d: govpp reads %+v, want %+v", i, st.Interfaces[i], w)
		}
	}

	// The per-interface symlinks resolve to the same element.
	e := dump(t, sc, "^/interfaces/tap0/rx$")["/interfaces/tap0/rx"]
	if !e.Symlink {
		t.Fatalf("/interfaces/tap0/rx: not a symlink: %+v", e)
	}
	if got, ok := e.Data.(adapter.CombinedCounterStat); !ok || len(got) != 1 || got[0][0] != (adapter.CombinedCounter{3, 294}) {
		t.Errorf("/interfaces/tap0/rx = %#v, want [[{3 294}]]", e.Data)
	}

	// sw_interface_clear_stats of one interface, then of all.
	seg.ClearInterfaceCounters(1)
	rx := dump(t, sc, "^/if/rx$")["/if/rx"].Data.(adapter.CombinedCounterStat)
	tx := dump(t, sc, "^/if/tx$")["/if/tx"].Data.(adapter.CombinedCounterStat)
	if rx[0][1] != (adapter.CombinedCounter{}) || tx[0][2] != (adapter.CombinedCounter{2, 196}) {
		t.Errorf("after clearing tap0: rx %v, tx %v", rx, tx)
	}
	seg.ClearInterfaceCounters(statseg.AllInterfaces)
	if tx := dump(t, sc, "^/if/tx$")["/if/tx"].Data.(adapter.CombinedCounterStat); tx[0][2] != (adapter.CombinedCounter{}) {
		t.Errorf("after clearing all: tx %v", tx)
	}
}

func TestHeaderIsVersion2WithEpochFromOneAndNoLegacyErrorVector(t *testing.T) {
	seg, sc := served(t, statseg.Config{})
	if seg.Epoch() == 0 {
		t.Fatal("epoch 0: govpp takes it for a failed access")
	}
	// With bytes 40..47 not zero govpp would read type 4 as an error index, not a
	// name vector.
	e := dump(t, sc, "^/if/names$")["/if/names"]
	if e.Type != adapter.NameVector {
		t.Fatalf("/if/names has type %v, want %v", e.Type, adapter.NameVector)
	}
	sys := dump(t, sc, "^/sys/")
	for _, name := range []string{"/sys/heartbeat", "/sys/last_stats_clear", "/sys/boottime", "/sys/num_worker_threads"} {
		if sys[name].Type != adapter.ScalarIndex {
			t.Errorf("%s: type %v, want a scalar", name, sys[name].Type)
		}
	}
	ids, err := sc.ListStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < 3 || string(ids[0].Name) != "/sys/heartbeat" || string(ids[1].Name) != "/sys/last_stats_clear" || string(ids[2].Name) != "/sys/boottime" {
		t.Errorf("fixed entries 0..2: %v", ids[:min(3, len(ids))])
	}
}

func TestErrorCountersByNodeAndReason(t *testing.T) {
	seg, sc := served(t, statseg.Config{})
	ip4, err := seg.RegisterErrors("ip4-input", "time_expired", "bad_checksum")
	if err != nil {
		t.Fatal(err)
	}
	acl, err := seg.RegisterErrors("acl-plugin-in-ip4-fa", "ACL deny packets")
	if err != nil {
		t.Fatal(err)
	}
	seg.AddError(0, ip4+1, 2)
	seg.AddError(0, acl, 5)
	if i, ok := seg.LookupError("acl-plugin-in-ip4-fa", "ACL deny packets"); !ok || i != acl {
		t.Errorf("LookupError = %d, %v; want %d", i, ok, acl)
	}
	got := dump(t, sc, "^/err/")
	want := map[string]uint64{
		"/err/ip4-input/time_expired":                0,
		"/err/ip4-input/bad_checksum":                2,
		"/err/acl-plugin-in-ip4-fa/ACL deny packets": 5,
	}
	if len(got) != len(want) {
		t.Errorf("/err/ entries: %v, want %d", keys(got), len(want))
	}
	for name, w := range want {
		s, ok := got[name].Data.(adapter.SimpleCounterStat)
		if !ok || len(s) != 1 || len(s[0]) != 1 || uint64(s[0][0]) != w {
			t.Errorf("%s = %#v, want [[%d]]", name, got[name].Data, w)
		}
	}
	errs := dump(t, sc, "^/node/errors$")["/node/errors"].Data.(adapter.SimpleCounterStat)
	if fmt.Sprint(errs) != "[[0 2 5]]" {
		t.Errorf("/node/errors = %v, want [[0 2 5]]", errs)
	}
	if i, err := seg.EnsureError("ip4-input", "bad_checksum"); err != nil || i != ip4+1 {
		t.Errorf("EnsureError of a registered error = %d, %v; want %d", i, err, ip4+1)
	}
	if i, err := seg.EnsureError("error-drop", "no route"); err != nil || i != acl+1 {
		t.Errorf("EnsureError of a new error = %d, %v; want the next index %d", i, err, acl+1)
	}
	if _, err := seg.RegisterErrors("ip4-input", "time_expired"); err == nil {
		t.Error("registering ip4-input/time_expired twice succeeded")
	}
}

func keys(m map[string]adapter.StatEntry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDirectoryChangesBumpTheEpochAndReadersReRead(t *testing.T) {
	seg, sc := served(t, statseg.Config{})
	mustAdd(t, seg, 0, "local0")
	mustAdd(t, seg, 1, "tap0")
	dir, err := sc.PrepareDir("^/if/")
	if err != nil {
		t.Fatal(err)
	}
	seg.AddIfCombined(0, statseg.IfRx, 1, 1, 60)
	if err := sc.UpdateDir(dir); err != nil {
		t.Fatalf("UpdateDir after a counter update: %v (counter updates must not move the epoch)", err)
	}
	before := seg.Epoch()
	mustAdd(t, seg, 2, "tap1")
	if seg.Epoch() != before+1 {
		t.Errorf("epoch %d after adding an interface, want %d", seg.Epoch(), before+1)
	}
	if err := sc.UpdateDir(dir); !errors.Is(err, adapter.ErrStatsDirStale) {
		t.Fatalf("UpdateDir after an interface was added: %v, want ErrStatsDirStale", err)
	}
	if names := dump(t, sc, "^/if/names$")["/if/names"].Data.(adapter.NameStat); fmt.Sprint(names) != "[local0 tap0 tap1]" {
		t.Errorf("/if/names = %v", names)
	}

	// Deleting: the name slot reads "deleted", the symlinks go, their slots are reused.
	linksBefore := len(dump(t, sc, "^/interfaces/"))
	ids, err := sc.ListStats()
	if err != nil {
		t.Fatal(err)
	}
	n := len(ids) // no holes yet: ListStats without patterns stops at the first EMPTY slot
	if err := seg.DeleteInterface(1); err != nil {
		t.Fatal(err)
	}
	if names := dump(t, sc, "^/if/names$")["/if/names"].Data.(adapter.NameStat); fmt.Sprint(names) != "[local0 deleted tap1]" {
		t.Errorf("/if/names after delete = %v", names)
	}
	if got := dump(t, sc, "^/interfaces/tap0/"); len(got) != 0 {
		t.Errorf("symlinks of the deleted tap0 remain: %v", keys(got))
	}
	mustAdd(t, seg, 3, "vxlan_tunnel0")
	ids, err = sc.ListStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Errorf("directory listed %d entries before and %d after re-adding as many symlinks: freed slots not reused", n, len(ids))
	}
	if got := len(dump(t, sc, "^/interfaces/")); got != linksBefore {
		t.Errorf("%d symlinks after delete+add, want %d", got, linksBefore)
	}
	if err := seg.DeleteInterface(1); err == nil {
		t.Error("deleting an interface twice succeeded")
	}
	if err := seg.AddInterface(2, "again"); err == nil {
		t.Error("publishing sw_if_index 2 twice succeeded")
	}
}

func TestACLRuleCountersCountOnlyWhenEnabledAndResetOnReplace(t *testing.T) {
	seg, sc := served(t, statseg.Config{})
	if err := seg.SetACL(1, 2); err != nil {
		t.Fatal(err)
	}
	seg.AddACLMatch(0, 1, 0, 100) // counters not enabled: VPP counts nothing
	seg.EnableACLCounters(true)
	seg.AddACLMatch(0, 1, 1, 60)
	seg.AddACLMatch(0, 1, 1, 40)
	got := dump(t, sc, "^/acl/")
	if fmt.Sprint(got["/acl/0/matches"].Data) != "[[[0 0]]]" {
		t.Errorf("/acl/0/matches (created below acl 1) = %v, want one zero rule", got["/acl/0/matches"].Data)
	}
	if fmt.Sprint(got["/acl/1/matches"].Data) != "[[[0 0] [2 100] [0 0]]]" {
		t.Errorf("/acl/1/matches = %v, want rules+1 elements with rule 1 = {2 100}", got["/acl/1/matches"].Data)
	}
	if err := seg.SetACL(1, 3); err != nil {
		t.Fatal(err)
	}
	if d := dump(t, sc, "^/acl/1/")["/acl/1/matches"].Data; fmt.Sprint(d) != "[[[0 0] [0 0] [0 0] [0 0]]]" {
		t.Errorf("/acl/1/matches after replace = %v, want 4 zero elements", d)
	}
}

func TestNATSessionGaugeAndInterfaceCounters(t *testing.T) {
	seg, sc := served(t, statseg.Config{})
	seg.SetNATSessions(0, 7)
	seg.SetNATSessions(0, 5) // a gauge: the pool size
	seg.SetNATMaxCfgSessions(63000)
	seg.AddNAT(0, statseg.In2Out, statseg.SlowPath, statseg.NATTCP, 2, 1) // not validated: ignored
	if err := seg.NATInterface(2); err != nil {
		t.Fatal(err)
	}
	seg.AddNAT(0, statseg.In2Out, statseg.SlowPath, statseg.NATTCP, 2, 1)
	seg.AddNAT(0, statseg.In2Out, statseg.FastPath, statseg.NATTCP, 2, 4)
	got := dump(t, sc, "^/nat44-ed/")
	if fmt.Sprint(got["/nat44-ed/total-sessions"].Data) != "[[5]]" {
		t.Errorf("total-sessions = %v, want [[5]]", got["/nat44-ed/total-sessions"].Data)
	}
	if got["/nat44-ed/max-cfg-sessions"].Data != adapter.ScalarStat(63000) {
		t.Errorf("max-cfg-sessions = %v", got["/nat44-ed/max-cfg-sessions"].Data)
	}
	if fmt.Sprint(got["/nat44-ed/in2out/slowpath/tcp"].Data) != "[[0 0 1]]" || fmt.Sprint(got["/nat44-ed/in2out/fastpath/tcp"].Data) != "[[0 0 4]]" {
		t.Errorf("in2out tcp = %v / %v", got["/nat44-ed/in2out/slowpath/tcp"].Data, got["/nat44-ed/in2out/fastpath/tcp"].Data)
	}
	if _, ok := got["/nat44-ed/out2in/fastpath/drops"]; !ok {
		t.Error("/nat44-ed/out2in/fastpath/drops missing")
	}
}

func TestNodeCountersOnlyWithPerNodeCounters(t *testing.T) {
	off, scOff := served(t, statseg.Config{})
	if _, err := off.RegisterNode("ip4-lookup"); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, scOff, "^/sys/node/", "^/nodes/"); len(got) != 0 {
		t.Errorf("per-node counters off, yet: %v", keys(got))
	}

	seg, path := serve(t, statseg.Config{PerNodeCounters: true})
	in, _ := seg.RegisterNode("ip4-input")
	lk, err := seg.RegisterNode("ip4-lookup")
	if err != nil {
		t.Fatal(err)
	}
	seg.AddNodeRuntime(0, lk, 1, 3, 900, 0)
	seg.AddNodeRuntime(0, in, 2, 3, 100, 0)
	conn := connectCore(t, path)
	var st api.NodeStats
	if err := conn.GetNodeStats(&st); err != nil {
		t.Fatal(err)
	}
	want := []api.NodeCounters{
		{NodeIndex: 0, NodeName: "ip4-input", Clocks: 100, Vectors: 3, Calls: 2},
		{NodeIndex: 1, NodeName: "ip4-lookup", Clocks: 900, Vectors: 3, Calls: 1},
	}
	if fmt.Sprint(st.Nodes) != fmt.Sprint(want) {
		t.Errorf("govpp node stats %+v, want %+v", st.Nodes, want)
	}
	sc := statsclient.NewStatsClient(path)
	if err := sc.Connect(); err != nil {
		t.Fatal(err)
	}
	defer sc.Disconnect()
	if e := dump(t, sc, "^/nodes/ip4-lookup/vectors$")["/nodes/ip4-lookup/vectors"]; fmt.Sprint(e.Data) != "[[3]]" {
		t.Errorf("/nodes/ip4-lookup/vectors = %v", e.Data)
	}
}

func TestBadInputIsRefusedWithTheValue(t *testing.T) {
	seg, err := statseg.New(statseg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	long := strings.Repeat("x", 120) // fits alone, not in /interfaces/<name>/rx-multicast
	epoch := seg.Epoch()
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"long interface name", seg.AddInterface(1, long), long},
		{"empty interface name", seg.AddInterface(1, ""), "interface 1"},
		{"errors without reasons", func() error { _, err := seg.RegisterErrors("n"); return err }(), `"n"`},
		{"long error name", func() error { _, err := seg.RegisterErrors("ip4-input", "ok", long); return err }(), long},
		{"long node name", func() error { _, err := seg.RegisterNode(long); return err }(), long},
		{"negative rule count", seg.SetACL(0, -1), "-1"},
		{"duplicate scalar", func() error { _, err := seg.NewScalar("/sys/heartbeat", 1); return err }(), "/sys/heartbeat"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.what, c.err, c.want)
		}
	}
	// The refused changes left nothing half done: the directory did not even move.
	if seg.Epoch() != epoch {
		t.Errorf("epoch moved from %d to %d by refused changes", epoch, seg.Epoch())
	}
	if err := seg.AddInterface(1, "tap0"); err != nil {
		t.Errorf("after the refused long name: %v", err)
	}
	if _, err := statseg.New(statseg.Config{Size: 1000}); err == nil {
		t.Error("a 1000-byte segment was accepted")
	}
}

func TestCounterUpdatesDoNotAllocate(t *testing.T) {
	seg, err := statseg.New(statseg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if err := seg.AddInterface(1, "tap0"); err != nil {
		t.Fatal(err)
	}
	e, _ := seg.RegisterErrors("error-drop", "drop")
	if err := seg.SetACL(0, 4); err != nil {
		t.Fatal(err)
	}
	seg.EnableACLCounters(true)
	allocs := testing.AllocsPerRun(1000, func() {
		seg.AddIfCombined(0, statseg.IfRx, 1, 1, 64)
		seg.AddIfSimple(0, statseg.IfDrops, 1, 1)
		seg.AddError(0, e, 1)
		seg.AddACLMatch(0, 0, 2, 64)
		seg.SetNATSessions(0, 3)
	})
	if allocs != 0 {
		t.Errorf("counter updates allocate %v times per packet", allocs)
	}
}

// TestConcurrentWriterAndReaderSeeConsistentCounts runs a writer that adds and
// deletes interfaces (moving vectors) while counting, against a reader that reads
// all the while: the reader never fails for other reasons than a busy writer,
// counters never go back, and the final read is exact.
func TestConcurrentWriterAndReaderSeeConsistentCounts(t *testing.T) {
	seg, sc := served(t, statseg.Config{})
	mustAdd(t, seg, 0, "local0")
	mustAdd(t, seg, 1, "tap0")
	const packets = 20000
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	var writeErr error
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range packets {
			seg.AddIfCombined(0, statseg.IfRx, 1, 1, 100)
			if i%500 == 0 { // churn: grow the vectors, fill and free directory slots
				sw := uint32(2 + i/500)
				if err := seg.AddInterface(sw, fmt.Sprintf("tap%d", sw)); err != nil {
					writeErr = err
					return
				}
				if err := seg.DeleteInterface(sw); err != nil {
					writeErr = err
					return
				}
			}
		}
	}()
	var last uint64
	reads := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		entries, err := sc.DumpStats("^/if/rx$")
		if errors.Is(err, adapter.ErrStatsDataBusy) || errors.Is(err, adapter.ErrStatsAccessFailed) {
			continue
		}
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		reads++
		rx := entries[0].Data.(adapter.CombinedCounterStat)
		c := rx[0][1]
		// packets and bytes are two words: a read may fall between their updates,
		// as with VPP's own combined counters.
		if c[0] < last || c[1]+100 < 100*c[0] || c[1] > 100*c[0]+100 {
			t.Fatalf("read %d: tap0 rx %v after %d packets: went back or bytes disagree", reads, c, last)
		}
		last = c[0]
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	rx := dump(t, sc, "^/if/rx$")["/if/rx"].Data.(adapter.CombinedCounterStat)
	if rx[0][1] != (adapter.CombinedCounter{packets, 100 * packets}) {
		t.Errorf("final tap0 rx %v, want {%d %d}", rx[0][1], packets, 100*packets)
	}
	t.Logf("%d consistent reads during %d packets", reads, packets)
}

func TestServerStopsWithItsContext(t *testing.T) {
	seg, err := statseg.New(statseg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), "stats.sock")
	srv, err := seg.Serve(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	sc := statsclient.NewStatsClient(path, statsclient.SetSocketRetryTimeout(100*time.Millisecond))
	if err := sc.Connect(); err == nil {
		sc.Disconnect()
		t.Error("connected to a closed server")
	}
}

// BenchmarkPacketCounters is the per-packet cost the simulator's forwarding pays:
// rx at input, tx at output, one error (the updates of a dropped or forwarded packet).
func BenchmarkPacketCounters(b *testing.B) {
	seg, err := statseg.New(statseg.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer seg.Close()
	for sw := range uint32(120) {
		if err := seg.AddInterface(sw, fmt.Sprintf("tap%d", sw)); err != nil {
			b.Fatal(err)
		}
	}
	e, err := seg.RegisterErrors("ip4-input", "time_expired")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		seg.AddIfCombined(0, statseg.IfRx, 7, 1, 100)
		seg.AddIfCombined(0, statseg.IfTx, 9, 1, 100)
		seg.AddError(0, e, 1)
	}
}

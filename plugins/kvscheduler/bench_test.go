package kvscheduler

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Benchmarks hold 100k values: "b/<i>" each depending on one of 1000 "base/<j>"
// values, managed by a minimal in-memory descriptor (no strict checks), so they
// measure the scheduler, not the fake.

const (
	benchValues = 100_000
	benchBases  = 1000
)

// benchDP is a minimal dataplane: a map, touched only from the transaction goroutine.
type benchDP struct {
	objs map[string]proto.Message
}

// mapDescriptor is a descriptor of the values under prefix kept in objs.
func mapDescriptor(objs map[string]proto.Message, name, prefix string) *api.KVDescriptor {
	return &api.KVDescriptor{
		Name:        name,
		NBKeyPrefix: prefix,
		KeySelector: func(k string) bool { return strings.HasPrefix(k, prefix) },
		Create: func(k string, v proto.Message) (api.Metadata, error) {
			objs[k] = v
			return nil, nil
		},
		Update: func(k string, _, v proto.Message, md api.Metadata) (api.Metadata, error) {
			objs[k] = v
			return md, nil
		},
		Delete: func(k string, _ proto.Message, _ api.Metadata) error {
			delete(objs, k)
			return nil
		},
		Retrieve: func([]api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			out := make([]api.KVWithMetadata, 0, len(objs))
			for k, v := range objs {
				if strings.HasPrefix(k, prefix) {
					out = append(out, api.KVWithMetadata{Key: k, Value: v, Origin: api.FromNB})
				}
			}
			return out, nil
		},
	}
}

func (dp *benchDP) descriptors() []*api.KVDescriptor {
	mk := func(name, prefix string, deps bool) *api.KVDescriptor {
		d := mapDescriptor(dp.objs, name, prefix)
		if deps {
			d.Dependencies = func(k string, v proto.Message) []api.Dependency {
				return []api.Dependency{{Label: "base", Key: "base/" + v.(*wrapperspb.StringValue).GetValue()}}
			}
		}
		return d
	}
	return []*api.KVDescriptor{mk("base", "base/", false), mk("b", "b/", true)}
}

func benchKey(i int) string { return fmt.Sprintf("b/%06d", i) }

// benchValue makes the value of b/<i>: its content names its base.
func benchValue(i, version int) proto.Message {
	return wrapperspb.String(fmt.Sprintf("%d", (i+version)%benchBases))
}

// benchState builds the full NB state in a fresh slice of fresh messages.
func benchState(version, changedEvery int) []kv {
	return benchStateN(benchValues, version, changedEvery)
}

func benchStateN(n, version, changedEvery int) []kv {
	kvs := make([]kv, 0, n+benchBases)
	for j := 0; j < benchBases; j++ {
		kvs = append(kvs, kv{fmt.Sprintf("base/%d", j), wrapperspb.String("base")})
	}
	for i := 0; i < n; i++ {
		v := 0
		if changedEvery > 0 && i%changedEvery == 0 {
			v = version
		}
		kvs = append(kvs, kv{benchKey(i), benchValue(i, v)})
	}
	return kvs
}

func newBenchScheduler(b *testing.B) (*Scheduler, *benchDP) {
	return newBenchSchedulerN(b, benchValues)
}

func newBenchSchedulerN(b *testing.B, n int) (*Scheduler, *benchDP) {
	b.Helper()
	dp := &benchDP{objs: make(map[string]proto.Message, n+benchBases)}
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	s := newTestScheduler(b, &cfg, dp.descriptors()...)
	if _, err := commitCtx(api.WithResync(context.Background(), api.FullResync, false), s, benchStateN(n, 0, 0)...); err != nil {
		b.Fatal(err)
	}
	if len(dp.objs) != n+benchBases {
		b.Fatalf("dataplane holds %d values", len(dp.objs))
	}
	return s, dp
}

// BenchmarkCommitOneValue commits one new value (with a dependency) into a graph
// holding 100k values; the sub-benchmarks with 1k and 10k values show the cost does
// not depend on the number of values held.
func BenchmarkCommitOneValue(b *testing.B) {
	for _, held := range []int{1_000, 10_000, benchValues} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			s, dp := newBenchSchedulerN(b, held)
			keys := make([]string, b.N)
			vals := make([]proto.Message, b.N)
			for i := range keys {
				keys[i] = fmt.Sprintf("b/new/%d", i)
				vals[i] = benchValue(i, 0)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.StartNBTransaction().SetValue(keys[i], vals[i]).Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if len(dp.objs) != held+benchBases+b.N {
				b.Fatalf("dataplane holds %d values", len(dp.objs))
			}
		})
	}
}

// BenchmarkCommitOneUpdate changes one existing value (and so its dependency) in a
// graph holding 100k values.
func BenchmarkCommitOneUpdate(b *testing.B) {
	s, _ := newBenchScheduler(b)
	vals := make([]proto.Message, b.N)
	for i := range vals {
		vals[i] = benchValue(i, 1+i%7)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.StartNBTransaction().SetValue(benchKey(i%benchValues), vals[i]).Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitOneValueWithSimulation is BenchmarkCommitOneValue with
// enable-txn-simulation on (plan + rollback + execute).
func BenchmarkCommitOneValueWithSimulation(b *testing.B) {
	dp := &benchDP{objs: make(map[string]proto.Message)}
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	cfg.EnableTxnSimulation = true
	s := newTestScheduler(b, &cfg, dp.descriptors()...)
	if _, err := commitCtx(api.WithResync(context.Background(), api.FullResync, false), s, benchState(0, 0)...); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.StartNBTransaction().SetValue(fmt.Sprintf("b/new/%d", i), benchValue(i, 0)).Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func benchResync(b *testing.B, changedEvery int) {
	s, dp := newBenchScheduler(b)
	ctx := api.WithResync(context.Background(), api.FullResync, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state := benchState(i+1, changedEvery) // fresh messages, as the controller builds them
		txn := s.StartNBTransaction()
		for _, p := range state {
			txn.SetValue(p.key, p.val)
		}
		b.StartTimer()
		seq, err := txn.Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rec := s.GetRecordedTransaction(seq)
		wantOps := 0
		if changedEvery > 0 {
			wantOps = benchValues / changedEvery
		}
		if len(rec.Executed) != wantOps || len(rec.Values) != 0 {
			b.Fatalf("resync executed %d ops (want %d), recorded %d values", len(rec.Executed), wantOps, len(rec.Values))
		}
		b.StartTimer()
	}
	b.StopTimer()
	if len(dp.objs) != benchValues+benchBases {
		b.Fatalf("dataplane holds %d values", len(dp.objs))
	}
}

// BenchmarkFullResyncNoChange: 100k values, Retrieve returns exactly the desired
// state, the staged values are fresh (equal) messages.
func BenchmarkFullResyncNoChange(b *testing.B) { benchResync(b, 0) }

// BenchmarkFullResync1PercentChange: as above with 1% of the values changed (1000
// updates, each moving the value to another dependency).
func BenchmarkFullResync1PercentChange(b *testing.B) { benchResync(b, 100) }

// BenchmarkMemoryPerValue reports the heap held by the scheduler per value (the
// proto message excluded), measured by committing 100k values that no dataplane
// keeps.
func BenchmarkMemoryPerValue(b *testing.B) {
	for i := 0; i < b.N; i++ {
		cfg := DefaultConfig()
		cfg.PrintTxnSummary = false
		cfg.RecordTransactionHistory = false
		null := func(prefix string, deps bool) *api.KVDescriptor {
			d := &api.KVDescriptor{
				Name:        prefix,
				KeySelector: func(k string) bool { return strings.HasPrefix(k, prefix) },
				Create:      func(string, proto.Message) (api.Metadata, error) { return nil, nil },
				Delete:      func(string, proto.Message, api.Metadata) error { return nil },
			}
			if deps {
				d.Dependencies = func(k string, v proto.Message) []api.Dependency {
					return []api.Dependency{{Label: "base", Key: "base/" + v.(*wrapperspb.StringValue).GetValue()}}
				}
			}
			return d
		}
		state := benchState(0, 0)
		before := heapInUse()
		s := newTestScheduler(b, &cfg, null("base/", false), null("b/", true))
		if _, err := commitCtx(context.Background(), s, state...); err != nil {
			b.Fatal(err)
		}
		state = nil
		after := heapInUse()
		_ = s.Close()
		// the messages themselves: measured separately and subtracted
		msgs := heapOfMessages(benchValues + benchBases)
		per := float64(int64(after-before)-int64(msgs)) / float64(benchValues+benchBases)
		b.ReportMetric(per, "bytes/value")
		b.ReportMetric(float64(msgs)/float64(benchValues+benchBases), "msg-bytes/value")
		runtime.KeepAlive(s)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapOfMessages measures the heap taken by n benchmark messages and their keys (the
// slice holding them excluded: the scheduler does not keep it).
func heapOfMessages(n int) uint64 {
	before := heapInUse()
	kvs := benchStateN(n-benchBases, 0, 0)
	after := heapInUse()
	runtime.KeepAlive(kvs)
	return after - before - uint64(cap(kvs))*uint64(unsafe.Sizeof(kv{}))
}

// derivedBench is a parent value "global" whose content lists items; it derives one
// value "feat/<item>" per item, and each of those depends on "iface/<item>" (the shape of
// the NAT44 global configuration and its per-interface features).
type derivedBench struct {
	objs map[string]proto.Message
}

func (dp *derivedBench) descriptors() []*api.KVDescriptor {
	store := func(name, prefix string) *api.KVDescriptor { return mapDescriptor(dp.objs, name, prefix) }
	global := store("global", "global")
	global.DerivedValues = func(_ string, v proto.Message) []api.KeyValuePair {
		var out []api.KeyValuePair
		for _, item := range strings.Split(v.(*wrapperspb.StringValue).GetValue(), ",") {
			if item != "" {
				out = append(out, api.KeyValuePair{Key: "feat/" + item, Value: wrapperspb.String(item)})
			}
		}
		return out
	}
	feat := store("feat", "feat/")
	feat.NBKeyPrefix = "" // derived values only
	feat.Dependencies = func(k string, _ proto.Message) []api.Dependency {
		return []api.Dependency{{Label: "interface", Key: "iface/" + strings.TrimPrefix(k, "feat/")}}
	}
	return []*api.KVDescriptor{store("iface", "iface/"), global, feat}
}

// BenchmarkUpdateParentOfManyDerived updates a value that derives one value per item
// (and per interface it depends on) by adding or removing one item: the cost should
// follow the one derived value that changes, not the number of items.
func BenchmarkUpdateParentOfManyDerived(b *testing.B) {
	for _, n := range []int{10, 110, 1000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			dp := &derivedBench{objs: make(map[string]proto.Message)}
			cfg := DefaultConfig()
			cfg.PrintTxnSummary = false
			s := newTestScheduler(b, &cfg, dp.descriptors()...)
			items := make([]string, n)
			var ifaces []kv
			for i := range items {
				items[i] = fmt.Sprintf("if%d", i)
				ifaces = append(ifaces, kv{"iface/" + items[i], wrapperspb.String("up")})
			}
			ifaces = append(ifaces, kv{"iface/extra", wrapperspb.String("up")})
			base := strings.Join(items, ",")
			mustCommit(b, s, append(ifaces, kv{"global", wrapperspb.String(base)})...)
			if len(dp.objs) != 2*n+2 {
				b.Fatalf("dataplane holds %d values, want %d", len(dp.objs), 2*n+2)
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				v := base
				if i%2 == 0 {
					v += ",extra"
				}
				i++
				mustCommit(b, s, kv{"global", wrapperspb.String(v)})
			}
			b.StopTimer()
			if want := 2*n + 2 + i%2; len(dp.objs) != want {
				b.Fatalf("dataplane holds %d values, want %d", len(dp.objs), want)
			}
		})
	}
}

package kvscheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func seqsOf(recs []*api.RecordedTxn) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.SeqNum)
	}
	return out
}

func TestHistoryIsBoundedByCount(t *testing.T) {
	var h history
	cfg := DefaultConfig()
	cfg.PermanentlyRecordedInitPeriod = 1
	cfg.TransactionHistoryMaxRecords = 4
	start := time.Unix(1000, 0)
	h.init(cfg, start)
	// Three of the init period (which may keep half of the bound: 2), then recent ones.
	for seq, d := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 2 * time.Minute, 3 * time.Minute} {
		h.add(&api.RecordedTxn{SeqNum: uint64(seq + 1), Start: start.Add(d)})
	}
	if got := seqsOf(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []uint64{2, 3, 4, 5}) {
		t.Fatalf("kept %v, want #1 of the init period dropped (it held more than half)", got)
	}
	h.add(&api.RecordedTxn{SeqNum: 6, Start: start.Add(5 * time.Minute)})
	h.add(&api.RecordedTxn{SeqNum: 7, Start: start.Add(6 * time.Minute)})
	if got := seqsOf(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []uint64{2, 3, 6, 7}) {
		t.Fatalf("kept %v, want the init period's #2, #3 and the 2 newest recent", got)
	}
}

func TestHistoryIsBoundedByBytes(t *testing.T) {
	var h history
	cfg := DefaultConfig()
	cfg.PermanentlyRecordedInitPeriod = 0
	cfg.TransactionHistoryMaxRecords = 0
	start := time.Unix(1000, 0)
	rec := func(seq uint64) *api.RecordedTxn {
		return &api.RecordedTxn{SeqNum: seq, Start: start.Add(time.Duration(seq) * time.Second),
			Values: []api.RecordedKVPair{{Key: "v/a", Value: str(fmt.Sprintf("%01000d", seq))}}}
	}
	one := rec(1).ApproxMemory()
	cfg.TransactionHistoryMaxBytes = 3*one + one/2
	h.init(cfg, start)
	for seq := uint64(1); seq <= 10; seq++ {
		h.add(rec(seq))
	}
	if got := seqsOf(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []uint64{8, 9, 10}) {
		t.Fatalf("kept %v, want the 3 newest (%d bytes each, limit %d)", got, one, cfg.TransactionHistoryMaxBytes)
	}
	if h.bytes > cfg.TransactionHistoryMaxBytes || h.bytes != 3*one {
		t.Errorf("accounted %d bytes, want %d", h.bytes, 3*one)
	}
	// A record larger than the limit alone is kept (the newest always is), alone.
	big := rec(11)
	big.Values[0].Value = str(fmt.Sprintf("%010000d", 11))
	h.add(big)
	if got := seqsOf(h.between(time.Time{}, time.Time{})); !slices.Equal(got, []uint64{11}) {
		t.Fatalf("kept %v, want only the oversized newest", got)
	}
}

func TestFullResyncRecordKeepsABoundedPartOfItsValues(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	cfg.TransactionHistoryMaxOps = 100
	s, dp := basicSetup(t, &cfg)
	const n = 5000
	dp.failOn("v/04999", api.OpCreate, 1, false)
	var kvs []kv
	for i := range n {
		kvs = append(kvs, set(fmt.Sprintf("v/%05d", i), "x"))
	}
	// The first resync is verbose: it records its values.
	seq, err := commitCtx(api.WithResync(context.Background(), api.FullResync, true), s, kvs...)
	if err == nil {
		t.Fatal("want the injected failure")
	}
	rec := s.GetRecordedTransaction(seq)
	if len(rec.Values) != 100 || cap(rec.Values) > 100 || rec.OmittedValues != n-100 || rec.ValueCount != n {
		t.Errorf("values: %d kept (cap %d), %d omitted, count %d; want 100, %d, %d", len(rec.Values), cap(rec.Values), rec.OmittedValues, rec.ValueCount, n-100, n)
	}
	if len(rec.Executed) != 101 || cap(rec.Executed) > 101 || rec.OmittedExecuted != n-101 {
		t.Errorf("executed: %d kept (cap %d), %d omitted; want the first 100 and the failed one, %d omitted",
			len(rec.Executed), cap(rec.Executed), rec.OmittedExecuted, n-101)
	}
	if last := rec.Executed[len(rec.Executed)-1]; last.Key != "v/04999" || last.Error == "" {
		t.Errorf("the failed operation was not kept: %+v", last)
	}
	if size := rec.ApproxSize(); size > 100_000 {
		t.Errorf("the record of a resync of %d values holds about %d bytes", n, size)
	}
}

// The record of an update sizes the new value only: the old one was sized when it was
// recorded as the new value of the update before (a DNAT of 100 mappings walks a
// thousand messages). The sizes, and so the memory the history counts, are the same as
// sizing both values.
func TestUpdateRecordTakesThePreviousValueSizeFromTheNode(t *testing.T) {
	dp := &benchDP{objs: map[string]proto.Message{}}
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	s := newTestScheduler(t, &cfg, dp.descriptors()...)
	mustCommit(t, s, kv{"base/1", str("base")}, kv{"base/2", str("base")})
	var seq uint64
	for i, v := range []string{"1", "2", "1"} {
		val := str(v)
		var err error
		if seq, err = s.StartNBTransaction().SetValue("b/x", val).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.mu.RLock()
		size, replaced := s.g.nodes["b/x"].appliedSize, s.g.replacedSizes.len()
		s.mu.RUnlock()
		if int(size) != proto.Size(val) || replaced != 0 {
			t.Errorf("commit %d: node knows size %d of its value (want %d), %d replaced sizes kept", i, size, proto.Size(val), replaced)
		}
	}
	rec := s.GetRecordedTransaction(seq)
	fresh := &api.RecordedTxn{Values: rec.Values, Executed: slices.Clone(rec.Executed)}
	fresh.Bound(0)
	if got, want := rec.ApproxMemory(), fresh.ApproxMemory(); got != want {
		t.Errorf("record of the update counts %d bytes, sizing every value gives %d", got, want)
	}
	var sizedAgain []proto.Message
	again := &api.RecordedTxn{Values: rec.Values, Executed: slices.Clone(rec.Executed)}
	again.BoundSized(0, func(m proto.Message) (int, bool) { return proto.Size(m), m == rec.Executed[0].PrevValue },
		func(m proto.Message, _ int) { sizedAgain = append(sizedAgain, m) })
	if len(sizedAgain) != 1 || sizedAgain[0] != rec.Executed[0].Value {
		t.Errorf("BoundSized with the previous value's size known sized %v, want only the new value", sizedAgain)
	}
}

// TestNodeKeepsItsSize: node.appliedSize lives in the padding after the node's flags;
// a node of 272 bytes takes a 288-byte allocation (BenchmarkMemoryPerValue: 380 bytes
// per value in all). A field that grows it should be a decision, not an accident.
func TestNodeKeepsItsSize(t *testing.T) {
	if size := unsafe.Sizeof(node{}); size > 272 {
		t.Errorf("node is %d bytes, was 272: memory per value at rest grows", size)
	}
}

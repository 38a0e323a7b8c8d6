package controller

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func historyNames(h *eventHistory) []string {
	var out []string
	for _, r := range h.snapshot() {
		out = append(out, r.Name)
	}
	return out
}

func TestEventHistoryIsBoundedByCount(t *testing.T) {
	start := time.Unix(0, 0)
	cfg := DefaultConfig()
	cfg.PermanentlyRecordedInitPeriod, cfg.EventHistoryMaxRecords = 5, 4
	h := newEventHistory(cfg, start)
	// Three of the init period (it may keep half of the bound: 2), then later ones.
	for i, minute := range []int{1, 2, 3, 10, 11, 12, 13} {
		h.add(&EventRecord{Name: fmt.Sprint("e", i), ProcessingStart: start.Add(time.Duration(minute) * time.Minute)})
	}
	if got, want := historyNames(h), []string{"e1", "e2", "e5", "e6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v: the init period's two newest and the two newest later events", got, want)
	}
}

func TestEventHistoryIsBoundedByBytesWithTheTransactions(t *testing.T) {
	start := time.Unix(0, 0)
	cfg := DefaultConfig()
	cfg.PermanentlyRecordedInitPeriod, cfg.EventHistoryMaxRecords = 0, 0
	rec := func(i int) *EventRecord {
		// Each event refers to a transaction that carried a 10 kB value.
		txn := &kvs.RecordedTxn{SeqNum: uint64(i), Values: []kvs.RecordedKVPair{{Key: "k", Value: wrapperspb.String(strings.Repeat("x", 10000))}}}
		return &EventRecord{Name: fmt.Sprint("e", i), ProcessingStart: start.Add(time.Duration(i) * time.Minute), Txn: txn}
	}
	one := rec(0).size()
	// what the value keeps alive on the heap, not its 10 kB encoding
	if one < kvs.ValueMemoryFactor*10000 {
		t.Fatalf("a record with a 10 kB transaction value counts %d bytes, want at least %d", one, kvs.ValueMemoryFactor*10000)
	}
	cfg.EventHistoryMaxBytes = 3*one + one/2
	h := newEventHistory(cfg, start)
	for i := range 10 {
		h.add(rec(i))
	}
	if got, want := historyNames(h), []string{"e7", "e8", "e9"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if h.bytes != 3*one {
		t.Errorf("accounted %d bytes, want %d", h.bytes, 3*one)
	}
	h.trim(start.Add(24*time.Hour + 8*time.Minute + 30*time.Second))
	if got, want := historyNames(h), []string{"e9"}; !reflect.DeepEqual(got, want) || h.bytes != one {
		t.Errorf("after trimming by age: kept %v (%d bytes), want %v (%d bytes)", got, h.bytes, want, one)
	}
}

// BenchmarkEventHistoryAddAtTheBound adds records to a full history (10,000 records of
// the init period's kind, the bound): each add drops the oldest, at a cost that does
// not grow with the bound.
func BenchmarkEventHistoryAddAtTheBound(b *testing.B) {
	for _, bound := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint("bound=", bound), func(b *testing.B) {
			start := time.Unix(0, 0)
			cfg := DefaultConfig()
			cfg.EventHistoryMaxRecords, cfg.EventHistoryMaxBytes = bound, 0
			h := newEventHistory(cfg, start)
			for i := range bound {
				h.add(&EventRecord{Name: "e", ProcessingStart: start.Add(time.Duration(i))})
			}
			b.ResetTimer()
			for i := range b.N {
				h.add(&EventRecord{Name: "e", ProcessingStart: start.Add(time.Duration(bound + i))})
			}
		})
	}
}

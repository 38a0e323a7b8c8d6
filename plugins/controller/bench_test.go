package controller

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// nopScheduler accepts every commit instantly.
type nopScheduler struct{ seq uint64 }

type nopTxn struct{ s *nopScheduler }

func (s *nopScheduler) StartNBTransaction() kvs.Txn                    { return nopTxn{s} }
func (s *nopScheduler) GetRecordedTransaction(uint64) *kvs.RecordedTxn { return nil }
func (s *nopScheduler) GetValueStatus(string) *kvs.ValueStatus         { return nil }
func (t nopTxn) SetValue(string, proto.Message) kvs.Txn                { return t }
func (t nopTxn) Commit(context.Context) (uint64, error)                { t.s.seq++; return t.s.seq, nil }

// trivialHandler stages one value per update, like a plugin reacting to a change.
type trivialHandler struct{ name string }

func (h trivialHandler) String() string              { return h.name }
func (h trivialHandler) HandlesEvent(api.Event) bool { return true }
func (h trivialHandler) Resync(api.Event, api.KubeStateData, int, api.ResyncOperations) error {
	return nil
}
func (h trivialHandler) Update(_ api.Event, txn api.UpdateOperations) (string, error) {
	txn.Put("config/"+h.name, value)
	return "", nil
}
func (h trivialHandler) Revert(api.Event) error { return nil }

var value = wrapperspb.String("v")

// BenchmarkEventThroughput pushes non-blocking events through a loop with three trivial
// handlers (each staging one value) and a scheduler that accepts commits instantly:
// it measures the loop itself. events/s = 1e9 / ns/op.
func BenchmarkEventThroughput(b *testing.B) {
	c := NewController(Deps{Log: quietLog(), Scheduler: &nopScheduler{},
		EventHandlers: []api.EventHandler{trivialHandler{"a"}, trivialHandler{"b"}, trivialHandler{"c"}},
		Config:        configLoader{func(cfg *Config) { cfg.RecordEventHistory = false }}})
	if err := c.Init(); err != nil {
		b.Fatal(err)
	}
	if err := c.AfterInit(); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_ = c.PushEvent(api.NewDBResync())
	ev := &api.KubeStateChange{Resource: "pod", Key: "k8s/pod/a/namespace/default", NewValue: value}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for {
			err := c.PushEvent(ev)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrEventQueueFull) {
				b.Fatal(err)
			}
			runtime.Gosched()
		}
	}
	last := newTestEvent("Last", true, api.BestEffort, api.Forward)
	for c.PushEvent(last) != nil {
		runtime.Gosched()
	}
	if err := last.Wait(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

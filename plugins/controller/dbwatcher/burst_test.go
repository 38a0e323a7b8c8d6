package dbwatcher

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// burstScheduler is a scheduler that accepts every transaction.
type burstScheduler struct{ seq atomic.Uint64 }

type burstTxn struct{ s *burstScheduler }

func (s *burstScheduler) StartNBTransaction() kvs.Txn                    { return burstTxn{s} }
func (s *burstScheduler) GetRecordedTransaction(uint64) *kvs.RecordedTxn { return nil }
func (s *burstScheduler) GetValueStatus(string) *kvs.ValueStatus         { return nil }
func (t burstTxn) SetValue(string, proto.Message) kvs.Txn                { return t }
func (t burstTxn) Commit(context.Context) (uint64, error)                { return t.s.seq.Add(1), nil }

// endpointsView is an event handler that keeps the Endpoints the controller hands it
// and counts the events it sees.
type endpointsView struct {
	mu      sync.Mutex
	eps     map[string]*endpoints.Endpoints
	changes int
	resyncs int
	cost    time.Duration // simulated processing time of one change
	changed chan struct{} // signalled after every event
}

// signal tells waitFor that the view changed.
func (v *endpointsView) signal() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

func (v *endpointsView) String() string              { return "endpoints-view" }
func (v *endpointsView) HandlesEvent(api.Event) bool { return true }
func (v *endpointsView) Revert(api.Event) error      { return nil }
func (v *endpointsView) Resync(_ api.Event, ks api.KubeStateData, _ int, _ api.ResyncOperations) error {
	defer v.signal()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.resyncs++
	v.eps = make(map[string]*endpoints.Endpoints)
	for k, val := range ks[endpoints.Keyword] {
		if v.cost > 0 {
			spin(v.cost)
		}
		v.eps[k] = val.(*endpoints.Endpoints)
	}
	return nil
}

func (v *endpointsView) Update(ev api.Event, _ api.UpdateOperations) (string, error) {
	ch, ok := ev.(*api.KubeStateChange)
	if !ok || ch.Resource != endpoints.Keyword {
		return "", nil
	}
	if v.cost > 0 {
		spin(v.cost)
	}
	defer v.signal()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.changes++
	if ch.NewValue == nil {
		delete(v.eps, ch.Key)
	} else {
		v.eps[ch.Key] = ch.NewValue.(*endpoints.Endpoints)
	}
	return "", nil
}

// spin burns CPU for d, like a handler doing work (a sleep would yield the CPU).
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// holds reports whether the view has every key with the given version.
func (v *endpointsView) holds(keys int, version string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.eps) != keys {
		return false
	}
	for _, e := range v.eps {
		if epVersion(e) != version {
			return false
		}
	}
	return true
}

func (v *endpointsView) counts() (changes, resyncs int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changes, v.resyncs
}

// burstEndpoints is version `version` of Endpoints i (the version in the host name).
func burstEndpoints(i int, version string) *endpoints.Endpoints {
	return &endpoints.Endpoints{
		Name: fmt.Sprintf("svc-%d", i), Namespace: "default",
		EndpointSubsets: []*endpoints.EndpointSubset{{
			Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), HostName: version}},
			Ports:     []*endpoints.EndpointSubset_EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}},
		}},
	}
}

// epVersion is the version written by burstEndpoints.
func epVersion(e *endpoints.Endpoints) string {
	return e.GetEndpointSubsets()[0].GetAddresses()[0].GetHostName()
}

// writeEndpoints writes version `version` of Endpoints 0..n-1, 128 per etcd transaction.
func writeEndpoints(tb testing.TB, c *clientv3.Client, n int, version string) {
	tb.Helper()
	var ops []clientv3.Op
	flush := func() {
		if len(ops) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
			tb.Fatalf("write endpoints: %v", err)
		}
		ops = ops[:0]
	}
	for i := range n {
		ep := burstEndpoints(i, version)
		data, err := dbresources.Marshal(ep)
		if err != nil {
			tb.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut(ksrkey.KsrPrefix+endpoints.Key(ep.Name, ep.Namespace), string(data)))
		if len(ops) == 128 {
			flush()
		}
	}
	flush()
}

// burstRig is a watcher feeding a real controller over embedded etcd.
type burstRig struct {
	db    *clientv3.Client
	w     *DBWatcher
	ctl   *controller.Controller
	view  *endpointsView
	close func()
}

func newBurstRig(tb testing.TB, keys int, cost time.Duration) *burstRig {
	tb.Helper()
	te := etcdtest.Start(tb)
	r := &burstRig{db: te.Client(tb), view: &endpointsView{cost: cost, changed: make(chan struct{}, 1)}}
	writeEndpoints(tb, r.db, keys, "v0")
	log, _ := test.NewNullLogger()
	log.SetLevel(logrus.WarnLevel)
	r.ctl = controller.NewController(controller.Deps{Log: log, Scheduler: &burstScheduler{}, EventHandlers: []api.EventHandler{r.view}})
	if err := r.ctl.Init(); err != nil {
		tb.Fatal(err)
	}
	if err := r.ctl.AfterInit(); err != nil {
		tb.Fatal(err)
	}
	r.w = NewDBWatcher(Deps{
		Log: log, NodeName: testNode, EventLoop: r.ctl,
		// A generous operation timeout: a probe slowed down by the load must not look
		// like a lost connection (which would resync).
		EtcdConfig:       loader(fmt.Sprintf("endpoints: [%q]\ninsecure-transport: true\ndial-timeout: 5s\noperation-timeout: 5s\n", te.Endpoint())),
		BoltConfig:       boltConf(tb.TempDir()),
		DelayLocalResync: time.Minute, RemoteDBProbingInterval: testProbe,
	})
	if err := r.w.Init(); err != nil {
		tb.Fatal(err)
	}
	if err := r.w.AfterInit(); err != nil {
		tb.Fatal(err)
	}
	r.close = func() {
		r.w.Close()
		r.ctl.Close()
	}
	r.waitFor(tb, keys, "v0")
	return r
}

func (r *burstRig) waitFor(tb testing.TB, keys int, version string) {
	tb.Helper()
	timeout := time.After(2 * time.Minute)
	for !r.view.holds(keys, version) {
		select {
		case <-r.view.changed:
		case <-timeout:
			tb.Fatalf("the controller never held %d Endpoints at %s", keys, version)
		}
	}
}

func (r *burstRig) remoteResyncs() float64 {
	return testutil.ToFloat64(r.w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeOK))
}

// BenchmarkBurstOf10kEndpointsChanges writes 10,000 Endpoints changes (2,000 Endpoints,
// five versions each, 128 puts per etcd transaction) while the controller's handler
// spends cost per Endpoints (in a change or in a resync), and measures until the
// controller holds the last version of every Endpoints: events the handler saw, full
// resyncs, peak Go heap.
func BenchmarkBurstOf10kEndpointsChanges(b *testing.B) {
	for _, cost := range []time.Duration{20 * time.Microsecond, 200 * time.Microsecond} {
		b.Run(fmt.Sprintf("handler=%v", cost), func(b *testing.B) { benchmarkBurst(b, cost) })
	}
}

func benchmarkBurst(b *testing.B, cost time.Duration) {
	const keys, versions = 2000, 5
	r := newBurstRig(b, keys, cost)
	defer r.close()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	changes0, _ := r.view.counts()
	resyncs0 := r.remoteResyncs()
	b.ResetTimer()
	for i := range b.N {
		for v := 1; v <= versions; v++ {
			writeEndpoints(b, r.db, keys, fmt.Sprintf("r%d-v%d", i, v))
		}
		r.waitFor(b, keys, fmt.Sprintf("r%d-v%d", i, versions))
	}
	b.StopTimer()
	close(stop)
	sampler.Wait()
	changes, _ := r.view.counts()
	b.ReportMetric(float64(changes-changes0)/float64(b.N), "events/op")
	b.ReportMetric((r.remoteResyncs()-resyncs0)/float64(b.N), "resyncs/op")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}

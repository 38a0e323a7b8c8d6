package service

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// latencySamples returns the count and sum of contiv_network_programming_duration_seconds.
func latencySamples(t *testing.T, reg *prometheus.Registry) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "contiv_network_programming_duration_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("contiv_network_programming_duration_seconds is not registered")
	return 0, 0
}

func TestNetworkProgrammingLatencyRunsFromTheTriggerTimeToTheCommit(t *testing.T) {
	cc := st.ContivConf(t, "master", contivConf)
	nodes := &st.NodeSync{ThisNodeID: 1}
	nodes.SetNode(1, "master", []string{"192.168.16.10/24"})
	reg := prometheus.NewRegistry()
	clk := testkit.NewClockAt(time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC))
	p := NewPlugin(Deps{
		Log: st.QuietLog(), ContivConf: cc, NodeSync: nodes, PodManager: &st.PodManager{}, IPAM: st.IPAM(t, cc, "master", 1),
		IPNet: &st.IPNet{NodeIP: net.ParseIP("192.168.16.10").To4(), HostInterconnect: "tap-vpp2"}, Registerer: reg, Clock: clk,
	})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resync(controller.NewDBResync(), controller.NewKubeStateData(), 1, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	put := func(v any) *controller.KubeStateChange {
		switch o := v.(type) {
		case *svcmodel.Service:
			return &controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key(o.Name, o.Namespace), NewValue: o}
		case *epmodel.Endpoints:
			return &controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key(o.Name, o.Namespace), NewValue: o}
		}
		panic(v)
	}
	handle := func(ev controller.Event, commitErr error) {
		t.Helper()
		if _, err := p.Update(ev, st.NewTxn()); err != nil {
			t.Fatal(err)
		}
		clk.Step(40 * time.Millisecond) // the transaction takes 40 ms
		p.Committed(ev, commitErr)
	}
	endpoints := func(ip string, triggeredAgo time.Duration) *epmodel.Endpoints {
		eps := st.Endpoints("default", "web", st.Subset([]st.Addr{st.PodAddr(ip, "default", "p")}, st.EpPort("http", 8080, "")))
		if triggeredAgo > 0 {
			eps.LastChangeTriggerTimeUnixNano = clk.Now().Add(-triggeredAgo).UnixNano()
		}
		return eps
	}

	handle(put(svc), nil) // a Service change carries no trigger time
	handle(put(endpoints("10.1.2.3", 210*time.Millisecond)), nil)
	if n, sum := latencySamples(t, reg); n != 1 || math.Abs(sum-0.25) > 1e-9 {
		t.Errorf("after one Endpoints change triggered 210 ms before a 40 ms transaction: %d samples, sum %v s, want 1 and 0.25", n, sum)
	}
	// Not measured: a failed transaction, a change without trigger time, a commit of
	// another event, a trigger time in the future.
	handle(put(endpoints("10.1.2.4", time.Second)), errTest)
	handle(put(endpoints("10.1.2.5", 0)), nil)
	ev := put(endpoints("10.1.2.6", time.Second))
	if _, err := p.Update(ev, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	p.Committed(put(svc), nil)
	future := endpoints("10.1.2.7", 0)
	future.LastChangeTriggerTimeUnixNano = clk.Now().Add(time.Hour).UnixNano()
	handle(put(future), nil)
	if n, _ := latencySamples(t, reg); n != 1 {
		t.Errorf("%d samples, want still 1", n)
	}
	// The next measured change adds its own sample; an unchanged rendering (only the
	// trigger time differs) counts too: the change is programmed.
	same := endpoints("10.1.2.7", 100*time.Millisecond)
	handle(put(same), nil)
	again := endpoints("10.1.2.7", 60*time.Millisecond)
	handle(put(again), nil)
	if n, sum := latencySamples(t, reg); n != 3 || math.Abs(sum-(0.25+0.14+0.1)) > 1e-9 {
		t.Errorf("%d samples, sum %v s, want 3 and 0.49", n, sum)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("commit failed")

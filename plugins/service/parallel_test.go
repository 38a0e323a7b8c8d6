package service

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/shares"
)

// variedKubeState is n services of every kind the processor distinguishes: node
// ports, external IPs, node-local policy, session affinity, several ports (one SCTP,
// one of an unknown protocol, one out of range), unparseable and host-network
// endpoint addresses, a subset without a matching port, Endpoints without a Service
// and a Service without Endpoints; and Services with EndpointSlices (two each, one of
// them hinted and with a terminating endpoint; every other one with a legacy
// Endpoints too, which the slices win over).
func variedKubeState(n int) controller.KubeStateData {
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword, esmodel.Keyword)
	for i := range n {
		svc, eps := benchService(i)
		switch i % 7 {
		case 6:
			es := benchSliceOf(svc.Namespace, svc.Name, i, 1)
			extra := benchSliceOf(svc.Namespace, svc.Name, i, 2)
			extra.Name += "-2"
			extra.Endpoints[0].Ready, extra.Endpoints[0].Terminating = false, true
			for _, e := range extra.Endpoints {
				e.HintsForZones = []string{"z1"}
			}
			kube[esmodel.Keyword][esmodel.Key(es.Name, es.Namespace)] = es
			kube[esmodel.Keyword][esmodel.Key(extra.Name, extra.Namespace)] = extra
			if i%2 == 0 {
				eps = nil
			}
		case 1:
			svc.Port[0].NodePort = int32(30000 + i%2000)
			svc.ServiceType = "NodePort"
		case 2:
			svc.ExternalIps = []string{fmt.Sprintf("20.0.%d.%d", i/250, i%250+1)}
			svc.ExternalTrafficPolicy = "Local"
		case 3:
			svc.SessionAffinity, svc.SessionAffinityTimeout = "ClientIP", 600
			svc.Port = append(svc.Port, st.Port("dns", "UDP", 53, 0), st.Port("sctp", "SCTP", 9, 0),
				st.Port("odd", "XTP", 10, 0), st.Port("big", "TCP", 70000, 0))
			eps.EndpointSubsets = append(eps.EndpointSubsets,
				st.Subset([]st.Addr{st.IPAddr("192.168.16.10"), st.IPAddr("not-an-ip"), st.IPAddr("192.168.16.77")}, st.EpPort("dns", 5353, "UDP")),
				st.Subset([]st.Addr{st.IPAddr("10.1.9.9")}, st.EpPort("unmatched", 1, "")))
		case 4:
			if i%3 == 0 {
				eps = nil // a Service without Endpoints
			}
		case 5:
			if i%3 == 0 {
				svc = nil // Endpoints without a Service
			}
		}
		if svc != nil {
			kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
		}
		if eps != nil {
			kube[epmodel.Keyword][epmodel.Key(eps.Name, eps.Namespace)] = eps
		}
	}
	return kube
}

// resyncWithProcs resyncs a new plugin of node 1 (with the benchmark's local pods)
// from objects decoded anew, with GOMAXPROCS set to procs, then resyncs again from a
// state with a tenth of the services gone and others changed. It returns the values
// staged by each resync and the processor's gauges after each.
func resyncWithProcs(t *testing.T, procs int, kube, changed controller.KubeStateData) (txns []*st.Txn, gauges []map[string]float64) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	if k, want := shares.Count(len(kube[epmodel.Keyword]), 1000), min(procs, 2); k != want {
		t.Fatalf("GOMAXPROCS %d: %d shares of the resync, want %d", procs, k, want)
	}
	f := benchFixture(t)
	reg := f.p.Registerer.(*prometheus.Registry)
	for i, state := range []controller.KubeStateData{kube, changed} {
		txn := st.NewTxn()
		if err := f.p.Resync(controller.NewDBResync(), encodeKubeState(t, state).fresh(t), i+1, txn); err != nil {
			t.Fatal(err)
		}
		txns = append(txns, txn)
		gauges = append(gauges, gather(t, reg))
	}
	return txns, gauges
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			if m.GetGauge() == nil {
				continue
			}
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestALargeResyncSplitOverGoroutinesStagesWhatASequentialOneStages(t *testing.T) {
	const n = 3000
	kube := variedKubeState(n)
	changed := variedKubeState(n)
	for i := 0; i < n; i += 10 { // a tenth of the services gone
		svc, _ := benchService(i)
		delete(changed[svcmodel.Keyword], svcmodel.Key(svc.Name, svc.Namespace))
		delete(changed[epmodel.Keyword], epmodel.Key(svc.Name, svc.Namespace))
	}
	for i := 3; i < n; i += 10 { // others move their backends
		svc, _ := benchService(i)
		changed[epmodel.Keyword][epmodel.Key(svc.Name, svc.Namespace)] = benchEndpointsOf(svc.Namespace, svc.Name, i, 1)
	}

	seqTxns, seqGauges := resyncWithProcs(t, 1, kube, changed)
	parTxns, parGauges := resyncWithProcs(t, 4, kube, changed)
	for round := range seqTxns {
		seq, par := seqTxns[round], parTxns[round]
		if !slices.Equal(seq.Keys(), par.Keys()) {
			t.Fatalf("resync %d: staged keys differ: %d sequential, %d in shares", round+1, len(seq.Keys()), len(par.Keys()))
		}
		mappings := 0
		for _, k := range seq.Keys() {
			if !proto.Equal(seq.Values[k], par.Values[k]) {
				t.Fatalf("resync %d: %s differs:\nsequential %v\nin shares  %v", round+1, k, seq.Values[k], par.Values[k])
			}
			if d, ok := seq.Values[k].(*vpp_nat.DNat44); ok {
				mappings += len(d.StMappings)
			}
		}
		if mappings < n/2 {
			t.Fatalf("resync %d: only %d mappings staged: the state does not exercise the rendering", round+1, mappings)
		}
		if fmt.Sprint(seqGauges[round]) != fmt.Sprint(parGauges[round]) {
			t.Fatalf("resync %d: gauges differ:\nsequential %v\nin shares  %v", round+1, seqGauges[round], parGauges[round])
		}
		for _, name := range []string{"contiv_service_unsupported_ports,protocol=SCTP", "contiv_service_invalid_ips"} {
			if seqGauges[round][name] == 0 {
				t.Fatalf("resync %d: gauge %s is 0: the state does not exercise it (%v)", round+1, name, seqGauges[round])
			}
		}
	}
}

package service

import (
	"cmp"
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/processor"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer/nat44"
)

// The benchmark cluster: 50 nodes (this one is node 1), N services of 10 endpoints
// each, spread over the nodes, so about one endpoint in fifty is a local pod; the
// local pods (110, like a full node) back many services each.
const (
	benchNodes        = 50
	benchEndpoints    = 10
	benchPodsPerNode  = 110
	benchChangedIndex = 7
)

var benchSizes = []int{100, 1000, 10000}

func benchService(i int) (*svcmodel.Service, *epmodel.Endpoints) {
	name, ns := fmt.Sprintf("svc-%d", i), fmt.Sprintf("ns-%d", i%20)
	svc := st.Service(ns, name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), st.Port("http", "TCP", 80, 0))
	return svc, benchEndpointsOf(ns, name, i, 0)
}

// benchEndpointsOf returns the endpoints of service i; shift moves the backends to
// other pods (an Endpoints change).
func benchEndpointsOf(ns, name string, i, shift int) *epmodel.Endpoints {
	addrs := make([]st.Addr, benchEndpoints)
	for j := range addrs {
		node := (i+j+shift)%benchNodes + 1
		host := 2 + (i*7+j+shift)%benchPodsPerNode
		addrs[j] = st.PodAddr(fmt.Sprintf("10.1.%d.%d", node, host), ns, fmt.Sprintf("pod-%d-%d", node, host))
	}
	return st.Endpoints(ns, name, st.Subset(addrs, st.EpPort("http", 8080, "")))
}

func benchKubeState(n int) controller.KubeStateData {
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	for i := range n {
		svc, eps := benchService(i)
		kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
		kube[epmodel.Keyword][epmodel.Key(eps.Name, eps.Namespace)] = eps
	}
	return kube
}

// benchFixture is the plugin of node 1 with its 110 local pods wired.
func benchFixture(b testing.TB) *fixture { return benchFixtureWith(b, "nat44") }

// benchFixtureWith is benchFixture with the given serviceRenderer (nat44 or cnat).
func benchFixtureWith(b testing.TB, serviceRenderer string) *fixture {
	f := newFixtureConf(b, contivConf+"serviceRenderer: "+serviceRenderer+"\n", nil)
	for host := 2; host < 2+benchPodsPerNode; host++ {
		for ns := range 20 {
			name := fmt.Sprintf("pod-1-%d", host)
			f.ipnet.WirePod(fmt.Sprintf("ns-%d", ns), name, "vpp-tap-"+name)
		}
		f.pods.AddPod("ns-0", fmt.Sprintf("pod-1-%d", host))
	}
	return f
}

// BenchmarkResync is the full resync of N services (processor + NAT44 renderer),
// staged into a fake transaction, repeated with the same Kubernetes objects (as a
// healing resync gets them from the controller): what did not change is reused.
func BenchmarkResync(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			f := benchFixture(b)
			kube := benchKubeState(n)
			ev := controller.NewDBResync()
			b.ReportAllocs()
			for b.Loop() {
				if err := f.p.Resync(ev, kube, 2, st.NewTxn()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResyncFresh is the full resync of N services whose Kubernetes objects are
// all new to the processor, decoded from their etcd encoding before each iteration
// (as at the agent's first resync, or after a database resync that decoded every
// object again): nothing can be reused, everything is parsed and rendered. BenchmarkResync repeats the resync of the same objects (a
// healing resync), which reuses what did not change.
//
// form=slices gives every service's endpoints as one EndpointSlice (as contiv-ksr
// writes them now), form=endpoints as the legacy v1 Endpoints value.
func BenchmarkResyncFresh(b *testing.B) {
	for _, form := range []string{"endpoints", "slices"} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("form=%s/services=%d", form, n), func(b *testing.B) {
				kube := benchKubeState(n)
				if form == "slices" {
					kube = benchKubeStateSlices(n)
				}
				benchResyncFresh(b, kube)
			})
		}
	}
}

// benchKubeStateSlices is benchKubeState with each service's endpoints in one
// EndpointSlice.
func benchKubeStateSlices(n int) controller.KubeStateData {
	kube := controller.NewKubeStateData(svcmodel.Keyword, esmodel.Keyword)
	for i := range n {
		svc, _ := benchService(i)
		kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
		es := benchSliceOf(svc.Namespace, svc.Name, i, 0)
		kube[esmodel.Keyword][esmodel.Key(es.Name, es.Namespace)] = es
	}
	return kube
}

// benchResyncFresh measures the resync of kube's objects, decoded anew each time.
func benchResyncFresh(b *testing.B, kube controller.KubeStateData) {
	f := benchFixture(b)
	encoded := encodeKubeState(b, kube)
	ev := controller.NewDBResync()
	b.ReportAllocs()
	b.ResetTimer() // the setup above is not part of the resync
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fresh := encoded.fresh(b)
		// The garbage of the setup (the previous iteration's objects, the
		// clones' temporaries) is collected here, not during the resync.
		runtime.GC()
		b.StartTimer()
		start := processCPU(b)
		if err := f.p.Resync(ev, fresh, 2, st.NewTxn()); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(b) - start
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// decodedKubeState holds the etcd encoding of a Kubernetes state, from which every
// call of fresh decodes objects new to the process, the way the agent gets them at its
// first resync (dbresources.(*DBResource).Unmarshal, as the database watcher does).
type decodedKubeState struct {
	res  map[string]*dbresources.DBResource
	data map[string]map[string][]byte
}

// encodeKubeState marshals every object of kube as it is stored in etcd.
func encodeKubeState(b testing.TB, kube controller.KubeStateData) *decodedKubeState {
	d := &decodedKubeState{res: make(map[string]*dbresources.DBResource), data: make(map[string]map[string][]byte)}
	for _, r := range dbresources.GetDBResources() {
		d.res[r.Keyword] = r
	}
	for res, objs := range kube {
		if d.res[res] == nil {
			b.Fatalf("no dbresource for %q", res)
		}
		d.data[res] = make(map[string][]byte, len(objs))
		for k, v := range objs {
			data, err := dbresources.Marshal(v)
			if err != nil {
				b.Fatal(err)
			}
			d.data[res][k] = data
		}
	}
	return d
}

// fresh decodes the whole state anew.
func (d *decodedKubeState) fresh(b testing.TB) controller.KubeStateData {
	kube := make(controller.KubeStateData, len(d.data))
	for res, objs := range d.data {
		kube[res] = make(map[string]proto.Message, len(objs))
		for k, data := range objs {
			v, err := d.res[res].Unmarshal(data)
			if err != nil {
				b.Fatalf("%s: %v", k, err)
			}
			kube[res][k] = v
		}
	}
	return kube
}

// BenchmarkResyncInputFloor reads, from 10,000 Services and Endpoints objects new to
// the process (as BenchmarkResyncFresh gets them), only the fields a resync must read,
// parsing each endpoint address: the floor of any resync that reads the decoded
// protos, to compare BenchmarkResyncFresh with. order=map reads the objects in the
// order of the maps (as the processor did before), order=address in the order of their
// addresses (as the processor does now; the sort is part of the cost).
func BenchmarkResyncInputFloor(b *testing.B) {
	encoded := encodeKubeState(b, benchKubeState(10000))
	for _, byAddress := range []bool{false, true} {
		name := "order=map"
		if byAddress {
			name = "order=address"
		}
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fresh := encoded.fresh(b)
				runtime.GC()
				b.StartTimer()
				start := processCPU(b)
				for _, v := range objectsOf(fresh[svcmodel.Keyword], byAddress) {
					m := v.(*svcmodel.Service)
					n += len(m.GetName()) + len(m.GetNamespace()) + len(m.GetClusterIp())
					for _, p := range m.GetPort() {
						n += int(p.GetPort()+p.GetNodePort()) + len(p.GetName()) + len(p.GetProtocol())
					}
				}
				for _, v := range objectsOf(fresh[epmodel.Keyword], byAddress) {
					e := v.(*epmodel.Endpoints)
					for _, sub := range e.GetEndpointSubsets() {
						for _, a := range sub.GetAddresses() {
							if ip, err := netip.ParseAddr(a.GetIp()); err == nil && ip.Is4() {
								n++
							}
						}
						for _, p := range sub.GetPorts() {
							n += int(p.GetPort()) + len(p.GetName())
						}
					}
				}
				cpu += processCPU(b) - start
			}
			if n == 0 {
				b.Fatal("nothing read")
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// objectsOf returns the objects of one resource, in the order of their addresses if
// byAddress, else in the order of the map.
func objectsOf(objs map[string]proto.Message, byAddress bool) []proto.Message {
	list := make([]proto.Message, 0, len(objs))
	for _, v := range objs {
		list = append(list, v)
	}
	if byAddress {
		addr := func(m proto.Message) uintptr { return reflect.ValueOf(m).Pointer() }
		slices.SortFunc(list, func(a, b proto.Message) int { return cmp.Compare(addr(a), addr(b)) })
	}
	return list
}

// processCPU returns the CPU time (user + system) the process has used so far: on a
// shared machine the CPU time of the timed section says more than its wall time. It
// counts every goroutine of the process, so it includes the garbage collection work
// done meanwhile.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEndpointsChange is one Endpoints change (all 10 backends move) in a cluster
// of N services, processor + renderer, staged into a fake transaction.
func BenchmarkEndpointsChange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			f := benchFixture(b)
			if err := f.p.Resync(controller.NewDBResync(), benchKubeState(n), 1, st.NewTxn()); err != nil {
				b.Fatal(err)
			}
			svc, _ := benchService(benchChangedIndex)
			key := epmodel.Key(svc.Name, svc.Namespace)
			versions := [2]*epmodel.Endpoints{
				benchEndpointsOf(svc.Namespace, svc.Name, benchChangedIndex, 0),
				benchEndpointsOf(svc.Namespace, svc.Name, benchChangedIndex, 1),
			}
			benchChanges(b, f, func(i int) controller.Event {
				return &controller.KubeStateChange{Resource: epmodel.Keyword, Key: key, PrevValue: versions[(i+1)%2], NewValue: versions[i%2]}
			})
		})
	}
}

// nopRenderer receives the processor's output (in flat form, as the NAT44 renderer)
// and does nothing with it.
type nopRenderer struct{ last *renderer.FlatResyncEventData }

func (nopRenderer) AddFlatService(renderer.UpdateTxn, *renderer.FlatService) error { return nil }
func (nopRenderer) UpdateFlatService(renderer.UpdateTxn, *renderer.FlatService, *renderer.FlatService) error {
	return nil
}
func (nopRenderer) DeleteFlatService(renderer.UpdateTxn, *renderer.FlatService) error { return nil }
func (r *nopRenderer) ResyncFlat(_ controller.ResyncOperations, ev *renderer.FlatResyncEventData) error {
	r.last = ev
	return nil
}
func (nopRenderer) UpdateFlatNodePortServices(renderer.UpdateTxn, *renderer.IPAddresses, []*renderer.FlatService) error {
	return nil
}
func (nopRenderer) UpdateFrontendIfs(_ renderer.UpdateTxn, _, _ renderer.Interfaces) error {
	return nil
}
func (nopRenderer) UpdateBackendIfs(_ renderer.UpdateTxn, _, _ renderer.Interfaces) error { return nil }

// BenchmarkProcessorResync is the processor's share of the resync.
func BenchmarkProcessorResync(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			f := benchFixture(b)
			sp := &processor.ServiceProcessor{Deps: processor.Deps{
				Log: st.QuietLog(), ContivConf: f.p.ContivConf, NodeSync: f.p.NodeSync, PodManager: f.p.PodManager,
				IPAM: f.p.IPAM, IPNet: f.p.IPNet,
			}}
			if err := sp.Init(); err != nil {
				b.Fatal(err)
			}
			_ = sp.AddRenderer(&nopRenderer{})
			kube := benchKubeState(n)
			b.ReportAllocs()
			for b.Loop() {
				if err := sp.Resync(kube); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRendererResync is the NAT44 renderer's share of the resync.
func BenchmarkRendererResync(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			f := benchFixture(b)
			capture := &nopRenderer{}
			sp := &processor.ServiceProcessor{Deps: processor.Deps{
				Log: st.QuietLog(), ContivConf: f.p.ContivConf, NodeSync: f.p.NodeSync, PodManager: f.p.PodManager,
				IPAM: f.p.IPAM, IPNet: f.p.IPNet,
			}}
			if err := sp.Init(); err != nil {
				b.Fatal(err)
			}
			_ = sp.AddRenderer(capture)
			if err := sp.Resync(benchKubeState(n)); err != nil {
				b.Fatal(err)
			}
			r := &nat44.Renderer{Deps: nat44.Deps{
				Log: st.QuietLog(), Config: config.DefaultConfig(), ContivConf: f.p.ContivConf, IPAM: f.p.IPAM, IPNet: f.p.IPNet,
			}}
			if err := r.Init(false); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := r.ResyncFlat(st.NewTxn(), capture.last); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Node ports in a large cluster: 500 nodes (a VPP IP and a management IP each),
// 1,000 services of 10 endpoints, every tenth with a node port (100 NodePort
// services), rendered on every node's IPs (upstream, the default) or on this node's
// only (service.conf nodePortsOnThisNodeOnly). Reported: static mappings per node.
const (
	largeNodes        = 500
	largeServices     = 1000
	largeNodePortEach = 10
)

func largeKubeState() controller.KubeStateData {
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	for i := range largeServices {
		svc, eps := benchService(i)
		if i%largeNodePortEach == 0 {
			svc.Port[0].NodePort = int32(30000 + i/largeNodePortEach)
			svc.ServiceType = "NodePort"
		}
		kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
		kube[epmodel.Keyword][epmodel.Key(eps.Name, eps.Namespace)] = eps
	}
	return kube
}

// largeFixture is node 1 of a cluster of largeNodes nodes.
func largeFixture(b *testing.B, thisNodeOnly bool) (*fixture, *st.NodeSync) {
	f := newFixture(b, infra.StaticConfig{"nodePortsOnThisNodeOnly": thisNodeOnly})
	nodes := f.p.NodeSync.(*st.NodeSync)
	for id := 2; id <= largeNodes; id++ {
		nodes.SetNode(uint32(id), fmt.Sprintf("node-%d", id), []string{fmt.Sprintf("192.168.%d.%d/16", id/250, id%250+1)},
			fmt.Sprintf("10.3.%d.%d", id/250, id%250+1))
	}
	return f, nodes
}

// countMappings counts the NAT44 static mappings or cnat translations staged.
func countMappings(txn *st.Txn) int {
	n := 0
	for _, v := range txn.Values {
		switch v := v.(type) {
		case *vpp_nat.DNat44:
			n += len(v.StMappings)
		case *vpp_cnat.TranslationSet:
			n += len(v.Translations)
		}
	}
	return n
}

func nodePortScopes() []struct {
	name         string
	thisNodeOnly bool
} {
	return []struct {
		name         string
		thisNodeOnly bool
	}{{"all-nodes", false}, {"this-node", true}}
}

// BenchmarkNodePortsResync500Nodes is the resync of the large cluster.
func BenchmarkNodePortsResync500Nodes(b *testing.B) {
	for _, scope := range nodePortScopes() {
		b.Run("nodePorts="+scope.name, func(b *testing.B) {
			f, _ := largeFixture(b, scope.thisNodeOnly)
			kube := largeKubeState()
			var txn *st.Txn
			b.ReportAllocs()
			for b.Loop() {
				txn = st.NewTxn()
				if err := f.p.Resync(controller.NewDBResync(), kube, 2, txn); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(countMappings(txn)), "mappings")
		})
	}
}

// BenchmarkNodeJoin500Nodes is one node joining the large cluster.
func BenchmarkNodeJoin500Nodes(b *testing.B) {
	for _, scope := range nodePortScopes() {
		b.Run("nodePorts="+scope.name, func(b *testing.B) {
			f, nodes := largeFixture(b, scope.thisNodeOnly)
			if err := f.p.Resync(controller.NewDBResync(), largeKubeState(), 1, st.NewTxn()); err != nil {
				b.Fatal(err)
			}
			nodes.SetNode(largeNodes+1, "joining", []string{"192.168.99.99/16"}, "10.3.99.99")
			joining := nodes.Nodes["joining"]
			txn := st.NewTxn()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// The node joins and leaves in turn, so every iteration changes the node IPs.
				i++
				clear(txn.Values)
				ev := &nodesync.NodeUpdate{NodeName: "joining", NewState: joining}
				if i%2 == 0 {
					delete(nodes.Nodes, "joining")
					ev = &nodesync.NodeUpdate{NodeName: "joining", PrevState: joining}
				} else {
					nodes.Nodes["joining"] = joining
				}
				if _, err := f.p.Update(ev, txn); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(countMappings(txn)), "mappings-staged")
		})
	}
}

// The setup of the whole-agent scale benchmark: 50 nodes with a VPP IP and a
// management IP each, 10,000 services of 10 endpoints, every tenth a NodePort service
// (1,000 node-port services, about 100 mappings each, 110,000 mappings in all).
const (
	scaleNodes        = 50
	scaleServices     = 10000
	scaleNodePortEach = 10
)

// scaleFixture is node 1 of that cluster with its Kubernetes state.
func scaleFixture(b *testing.B) (*fixture, *st.NodeSync, controller.KubeStateData) {
	return scaleFixtureWith(b, "nat44")
}

// scaleFixtureWith is scaleFixture with the given serviceRenderer.
func scaleFixtureWith(b *testing.B, serviceRenderer string) (*fixture, *st.NodeSync, controller.KubeStateData) {
	f := benchFixtureWith(b, serviceRenderer)
	ns := f.p.NodeSync.(*st.NodeSync)
	ns.SetNode(1, "master", []string{"192.168.16.10/24"}, "10.3.0.1")
	for id := 2; id <= scaleNodes; id++ {
		ns.SetNode(uint32(id), fmt.Sprintf("node-%d", id), []string{fmt.Sprintf("192.168.16.%d/24", 10+id)}, fmt.Sprintf("10.3.0.%d", id))
	}
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	for i := range scaleServices {
		svc, eps := benchService(i)
		if i%scaleNodePortEach == 0 {
			svc.Port[0].NodePort = int32(30000 + i/scaleNodePortEach)
			svc.ServiceType = "NodePort"
		}
		kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
		kube[epmodel.Keyword][epmodel.Key(eps.Name, eps.Namespace)] = eps
	}
	return f, ns, kube
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkResyncScale is the resync of new objects (as BenchmarkResyncFresh) in the
// setup of the whole-agent scale benchmark, with each renderer. held-MB is the memory the last resync's
// result keeps alive: the processor's and the renderer's state and the staged values
// (the transaction stands for the scheduler, which holds the same values), measured as
// the live heap after the resync minus the live heap before it (with the Kubernetes
// objects, which the controller holds, in both).
func BenchmarkResyncScale(b *testing.B) {
	for _, serviceRenderer := range []string{"nat44", "cnat"} {
		b.Run(serviceRenderer, func(b *testing.B) { benchmarkResyncScale(b, serviceRenderer) })
	}
}

func benchmarkResyncScale(b *testing.B, serviceRenderer string) {
	f, _, kube := scaleFixtureWith(b, serviceRenderer)
	encoded := encodeKubeState(b, kube)
	ev := controller.NewDBResync()
	var txn *st.Txn
	var cpu time.Duration
	var held float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// An empty state first: the previous rendering is not part of "before".
		if err := f.p.Resync(ev, controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword), 1, st.NewTxn()); err != nil {
			b.Fatal(err)
		}
		txn = nil
		fresh := encoded.fresh(b)
		before := heapInUse()
		b.StartTimer()
		start := processCPU(b)
		txn = st.NewTxn()
		if err := f.p.Resync(ev, fresh, 2, txn); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(b) - start
		b.StopTimer()
		held = float64(heapInUse()-before) / 1e6
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(held, "held-MB")
	b.ReportMetric(float64(countMappings(txn)), "mappings")
}

// BenchmarkNodeJoin is one node joining (and, every other iteration, leaving) the
// setup of the whole-agent scale benchmark. Processor + renderer (each of the two),
// staged into a fake transaction; cpu-ns/op is the process CPU time (getrusage).
func BenchmarkNodeJoin(b *testing.B) {
	for _, serviceRenderer := range []string{"nat44", "cnat"} {
		b.Run(serviceRenderer, func(b *testing.B) { benchmarkNodeJoin(b, serviceRenderer) })
	}
}

func benchmarkNodeJoin(b *testing.B, serviceRenderer string) {
	f, ns, kube := scaleFixtureWith(b, serviceRenderer)
	txn := st.NewTxn()
	if err := f.p.Resync(controller.NewDBResync(), kube, 1, txn); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(countMappings(txn)), "mappings")
	ns.SetNode(scaleNodes+1, "joining", []string{"192.168.16.99/24"}, "10.3.0.99")
	joining := ns.Nodes["joining"]
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		clear(txn.Values)
		ev := &nodesync.NodeUpdate{NodeName: "joining", NewState: joining}
		if i%2 == 1 {
			delete(ns.Nodes, "joining")
			ev = &nodesync.NodeUpdate{NodeName: "joining", PrevState: joining}
		} else {
			ns.Nodes["joining"] = joining
		}
		start := processCPU(b)
		if _, err := f.p.Update(ev, txn); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(b) - start
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(txn.Values)), "dnats-staged")
}

// BenchmarkEndpointsChangeNodePort is one Endpoints change (all 10 backends move) of a
// NodePort service (about 100 mappings) in the setup of the whole-agent scale
// benchmark, processor + renderer.
func BenchmarkEndpointsChangeNodePort(b *testing.B) {
	f, _, kube := scaleFixture(b)
	if err := f.p.Resync(controller.NewDBResync(), kube, 1, st.NewTxn()); err != nil {
		b.Fatal(err)
	}
	svc, _ := benchService(0) // every tenth service, from the first, is a NodePort service
	key := epmodel.Key(svc.Name, svc.Namespace)
	versions := [2]*epmodel.Endpoints{benchEndpointsOf(svc.Namespace, svc.Name, 0, 0), benchEndpointsOf(svc.Namespace, svc.Name, 0, 1)}
	txn := st.NewTxn()
	b.ReportAllocs()
	i := 0
	start := processCPU(b)
	for b.Loop() {
		i++
		clear(txn.Values)
		ev := &controller.KubeStateChange{Resource: epmodel.Keyword, Key: key, PrevValue: versions[(i+1)%2], NewValue: versions[i%2]}
		if _, err := f.p.Update(ev, txn); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-start).Nanoseconds())/float64(i), "cpu-ns/op")
	b.ReportMetric(float64(countMappings(txn)), "mappings-staged")
}

// benchSliceOf is benchEndpointsOf as the one EndpointSlice of the service, every
// endpoint ready.
func benchSliceOf(ns, name string, i, shift int) *esmodel.EndpointSlice {
	eps := benchEndpointsOf(ns, name, i, shift)
	es := &esmodel.EndpointSlice{Name: name + "-abcde", Namespace: ns, ServiceName: name, AddressType: "IPv4",
		Ports: []*esmodel.Port{{Name: "http", Protocol: "TCP", Port: 8080}}}
	for _, a := range eps.GetEndpointSubsets()[0].GetAddresses() {
		ref := a.GetTargetRef()
		es.Endpoints = append(es.Endpoints, &esmodel.Endpoint{Addresses: []string{a.GetIp()}, Ready: true, Serving: true,
			TargetRef: &esmodel.ObjectReference{Kind: ref.GetKind(), Namespace: ref.GetNamespace(), Name: ref.GetName()}})
	}
	return es
}

// BenchmarkEndpointSliceChange is BenchmarkEndpointsChange with the endpoints of every
// service in one EndpointSlice, the form contiv-ksr writes them in now.
func BenchmarkEndpointSliceChange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			f := benchFixture(b)
			kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword, esmodel.Keyword)
			for i := range n {
				svc, _ := benchService(i)
				kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
				es := benchSliceOf(svc.Namespace, svc.Name, i, 0)
				kube[esmodel.Keyword][esmodel.Key(es.Name, es.Namespace)] = es
			}
			if err := f.p.Resync(controller.NewDBResync(), kube, 1, st.NewTxn()); err != nil {
				b.Fatal(err)
			}
			svc, _ := benchService(benchChangedIndex)
			versions := [2]*esmodel.EndpointSlice{
				benchSliceOf(svc.Namespace, svc.Name, benchChangedIndex, 0),
				benchSliceOf(svc.Namespace, svc.Name, benchChangedIndex, 1),
			}
			key := esmodel.Key(versions[0].Name, versions[0].Namespace)
			benchChanges(b, f, func(i int) controller.Event {
				return &controller.KubeStateChange{Resource: esmodel.Keyword, Key: key, PrevValue: versions[(i+1)%2], NewValue: versions[i%2]}
			})
		})
	}
}

// benchChanges measures the update events next(1), next(2), ..., each of which must
// change the rendering.
func benchChanges(b *testing.B, f *fixture, next func(i int) controller.Event) {
	txn := st.NewTxn()
	b.ReportAllocs()
	i := 0
	start := processCPU(b)
	for b.Loop() {
		i++
		clear(txn.Values)
		change, err := f.p.Update(next(i), txn)
		if err != nil || change == "" {
			b.Fatalf("%q %v", change, err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-start).Nanoseconds())/float64(i), "cpu-ns/op")
}

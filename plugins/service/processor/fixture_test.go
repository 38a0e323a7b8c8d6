package processor

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Node "master", ID 1: pod subnet 10.1.1.0/24 (cluster 10.1.0.0/16), node IP
// 192.168.16.10, host IP 10.3.1.10.
const (
	nodeIP   = "192.168.16.10"
	hostIP   = "10.3.1.10"
	workerIP = "192.168.16.20"
	pod1IP   = "10.1.1.3"
	pod2IP   = "10.1.1.4"
	remoteIP = "10.1.2.3"
	pod1If   = "vpp-tap-pod1"
	pod2If   = "vpp-tap-pod2"
)

const testConf = `
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  otherVPPInterfaces:
  - interfaceName: GbE2
    ip: 10.10.10.5/24
  gateway: 192.168.16.1
`

// call is one recorded renderer call, rendered as text for easy comparison.
type call string

// recorder is a renderer that records its calls.
type recorder struct {
	calls  []call
	resync *renderer.ResyncEventData
	last   map[renderer.ServiceID]*renderer.ContivService // latest rendering per service
	err    error
}

func newRecorder() *recorder {
	return &recorder{last: make(map[renderer.ServiceID]*renderer.ContivService)}
}

func (r *recorder) AddService(svc *renderer.ContivService) error {
	r.calls = append(r.calls, call("add "+svc.ID.String()))
	r.last[svc.ID] = svc
	return r.err
}

func (r *recorder) UpdateService(old, svc *renderer.ContivService) error {
	r.calls = append(r.calls, call("update "+svc.ID.String()))
	r.last[svc.ID] = svc
	return r.err
}

func (r *recorder) DeleteService(svc *renderer.ContivService) error {
	r.calls = append(r.calls, call("delete "+svc.ID.String()))
	delete(r.last, svc.ID)
	return r.err
}

func (r *recorder) UpdateNodePortServices(nodeIPs *renderer.IPAddresses, np []*renderer.ContivService) error {
	ids := make([]string, len(np))
	for i, s := range np {
		ids[i] = s.ID.String()
	}
	r.calls = append(r.calls, call(fmt.Sprintf("nodeports %s [%s]", nodeIPs, strings.Join(ids, " "))))
	return r.err
}

func (r *recorder) UpdateLocalFrontendIfs(old, ifs renderer.Interfaces) error {
	r.calls = append(r.calls, call(fmt.Sprintf("frontends %s -> %s", old, ifs)))
	return r.err
}

func (r *recorder) UpdateLocalBackendIfs(old, ifs renderer.Interfaces) error {
	r.calls = append(r.calls, call(fmt.Sprintf("backends %s -> %s", old, ifs)))
	return r.err
}

func (r *recorder) Resync(ev *renderer.ResyncEventData) error {
	r.calls = append(r.calls, "resync")
	r.resync = ev
	clear(r.last)
	for _, s := range ev.Services {
		r.last[s.ID] = s
	}
	return r.err
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []call {
	c := r.calls
	r.calls = nil
	return c
}

// env is the processor of node "master" with a recording renderer.
type env struct {
	t     *testing.T
	sp    *ServiceProcessor
	r     *recorder
	ipnet *st.IPNet
	nodes *st.NodeSync
	pods  *st.PodManager
	reg   *prometheus.Registry
}

func newEnv(t *testing.T, conf string, adjust ...func(*env)) *env {
	t.Helper()
	if conf == "" {
		conf = testConf
	}
	cc := st.ContivConf(t, "master", conf)
	e := &env{
		t: t, r: newRecorder(),
		ipnet: &st.IPNet{
			NodeIP: net.ParseIP(nodeIP).To4(), HostIPs: []net.IP{net.ParseIP(hostIP)},
			HostInterconnect: "tap-vpp2", VxlanBVI: "vxlanBVI",
		},
		nodes: &st.NodeSync{ThisNodeID: 1},
		pods:  &st.PodManager{},
		reg:   prometheus.NewRegistry(),
	}
	e.nodes.SetNode(1, "master", []string{nodeIP + "/24"}, hostIP)
	e.nodes.SetNode(2, "worker", []string{workerIP + "/24"})
	for _, a := range adjust {
		a(e)
	}
	e.sp = &ServiceProcessor{Deps: Deps{
		Log: st.QuietLog(), ContivConf: cc, NodeSync: e.nodes, PodManager: e.pods,
		IPAM: st.IPAM(t, cc, "master", 1), IPNet: e.ipnet, Registerer: e.reg,
	}}
	if err := e.sp.Init(); err != nil {
		t.Fatal(err)
	}
	if err := e.sp.RegisterRenderer(e.r); err != nil {
		t.Fatal(err)
	}
	e.resync(nil)
	e.r.take()
	return e
}

func (e *env) resync(kube controller.KubeStateData) {
	e.t.Helper()
	if kube == nil {
		kube = controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	}
	if err := e.sp.Resync(kube); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) update(ev controller.Event) []call {
	e.t.Helper()
	if err := e.sp.Update(ev); err != nil {
		e.t.Fatalf("%s: %v", ev, err)
	}
	return e.r.take()
}

func (e *env) putService(svc *svcmodel.Service) []call {
	return e.update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key(svc.Name, svc.Namespace), NewValue: svc})
}

func (e *env) deleteService(ns, name string) []call {
	return e.update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key(name, ns), PrevValue: &svcmodel.Service{}})
}

func (e *env) putEndpoints(eps *epmodel.Endpoints) []call {
	return e.update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key(eps.Name, eps.Namespace), NewValue: eps})
}

func (e *env) deleteEndpoints(ns, name string) []call {
	return e.update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key(name, ns), PrevValue: &epmodel.Endpoints{}})
}

// addPod wires the pod in the ipnet fake and processes AddPod.
func (e *env) addPod(name, ifName string) []call {
	e.ipnet.WirePod("default", name, ifName)
	e.pods.AddPod("default", name)
	return e.update(podmanager.NewAddPod(podmodel.ID{Name: name, Namespace: "default"}, "c-"+name, "/netns"))
}

func (e *env) deletePod(name string) []call {
	calls := e.update(podmanager.NewDeletePod(podmodel.ID{Name: name, Namespace: "default"}))
	delete(e.ipnet.PodIfs, podmodel.ID{Name: name, Namespace: "default"})
	delete(e.pods.Pods, podmodel.ID{Name: name, Namespace: "default"})
	return calls
}

func (e *env) nodeUpdate() []call {
	return e.update(&nodesync.NodeUpdate{NodeName: "worker"})
}

// svc returns the latest rendering of a service by the recorder.
func (e *env) svc(ns, name string) *renderer.ContivService {
	return e.r.last[renderer.ServiceID{Name: name, Namespace: ns}]
}

// gauge reads a gauge of the processor's registry.
func (e *env) gauge(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, labels) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func expectCalls(t *testing.T, what string, got []call, want ...call) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: renderer calls\n got  %q\n want %q", what, got, want)
	}
}

// backends describes the backends of a service port: "ip:port[ local][ host-network]".
func backends(cs *renderer.ContivService, port string) []string {
	if cs == nil {
		return nil
	}
	var out []string
	for _, b := range cs.Backends[port] {
		out = append(out, b.String())
	}
	return out
}

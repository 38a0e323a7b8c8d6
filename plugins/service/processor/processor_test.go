package processor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

func webEndpoints(addrs ...st.Addr) *epmodel.Endpoints {
	return st.Endpoints("default", "web", st.Subset(addrs, st.EpPort("http", 8080, "")))
}

// TestServiceShapes feeds one Service + Endpoints pair of every shape and checks the
// ContivService handed to the renderer.
func TestServiceShapes(t *testing.T) {
	type want struct {
		clusterIPs, externalIPs string
		ports                   map[string]string // name -> ServicePort.String()
		backends                map[string][]string
		policy                  renderer.TrafficPolicyType
		affinity                uint32
	}
	tests := []struct {
		name string
		svc  func() *svcmodel.Service
		eps  *epmodel.Endpoints
		want want
	}{
		{
			name: "ClusterIP",
			svc: func() *svcmodel.Service {
				return st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			},
			eps: webEndpoints(st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {pod1IP + ":8080 local", remoteIP + ":8080"}}},
		},
		{
			name: "named target port: backend port comes from the endpoints",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
				s.Port[0].TargetPort = &svcmodel.Service_ServicePort_IntOrString{Type: svcmodel.Service_ServicePort_IntOrString_STRING, StringVal: "web-port"}
				return s
			},
			eps: webEndpoints(st.PodAddr(pod1IP, "default", "pod1")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {pod1IP + ":8080 local"}}},
		},
		{
			name: "NodePort",
			svc: func() *svcmodel.Service {
				return st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
			},
			eps: webEndpoints(st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80:30080/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			name: "LoadBalancer: ingress IPs are external IPs",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
				s.ServiceType, s.LbIngressIps, s.ExternalIps = "LoadBalancer", []string{"30.0.0.1"}, []string{"20.0.0.1"}
				return s
			},
			eps: webEndpoints(st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{20.0.0.1, 30.0.0.1}", ports: map[string]string{"http": "80:30080/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			name: "ingress IPs of a non-LoadBalancer service are ignored",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
				s.LbIngressIps = []string{"30.0.0.1"}
				return s
			},
			eps: webEndpoints(st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			name: "externalIPs, duplicates once",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
				s.ExternalIps = []string{"20.0.0.1", "20.0.0.2", "20.0.0.1"}
				return s
			},
			eps: webEndpoints(st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{20.0.0.1, 20.0.0.2}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			name: "externalTrafficPolicy Local",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
				s.ExternalTrafficPolicy = "Local"
				return s
			},
			eps: webEndpoints(st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80:30080/TCP"}, policy: renderer.NodeLocal,
				backends: map[string][]string{"http": {pod1IP + ":8080 local", remoteIP + ":8080"}}},
		},
		{
			name: "ClientIP affinity with its timeout",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
				s.SessionAffinity, s.SessionAffinityTimeout = "ClientIP", 10800
				return s
			},
			eps: webEndpoints(st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"}, affinity: 10800,
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			name: "affinity None ignores a timeout",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
				s.SessionAffinityTimeout = 10800
				return s
			},
			eps: webEndpoints(st.PodAddr(remoteIP, "default", "r")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			name: "TCP, UDP and SCTP ports: SCTP skipped",
			svc: func() *svcmodel.Service {
				return st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0), st.Port("dns", "UDP", 53, 0), st.Port("sig", "SCTP", 3868, 0))
			},
			eps: st.Endpoints("default", "web", st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")},
				st.EpPort("http", 8080, "TCP"), st.EpPort("dns", 5353, "UDP"), st.EpPort("sig", 3868, "SCTP"))),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP", "dns": "53/UDP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}, "dns": {remoteIP + ":5353"}}},
		},
		{
			name: "not-ready addresses are not backends",
			svc: func() *svcmodel.Service {
				return st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			},
			eps: st.Endpoints("default", "web", st.NotReady(st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 8080, "")), st.PodAddr(pod1IP, "default", "pod1"))),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080"}}},
		},
		{
			// Host-network pods: a node's address is a backend only from an endpoint that
			// names its Pod (endpointcheck.go).
			name: "host-network backends: this node's IPs are local",
			svc: func() *svcmodel.Service {
				return st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			},
			eps: webEndpoints(st.PodAddr(nodeIP, "default", "h1"), st.PodAddr(hostIP, "default", "h2"),
				st.PodAddr(workerIP, "default", "h3"), st.PodAddr(pod2IP, "default", "pod2")),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {
					nodeIP + ":8080 local host-network", hostIP + ":8080 local host-network", workerIP + ":8080 host-network", pod2IP + ":8080 local"}}},
		},
		{
			name: "several subsets and an unparseable IP",
			svc: func() *svcmodel.Service {
				return st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			},
			eps: st.Endpoints("default", "web",
				st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r"), st.IPAddr("10.1.2.300")}, st.EpPort("http", 8080, "")),
				st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1")}, st.EpPort("http", 9090, ""))),
			want: want{clusterIPs: "{10.96.0.10}", externalIPs: "{}", ports: map[string]string{"http": "80/TCP"},
				backends: map[string][]string{"http": {remoteIP + ":8080", pod1IP + ":9090 local"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			// Rendered without endpoints (to be rejected), then with them.
			expectCalls(t, "service", e.putService(tc.svc())[:1], "add default/web")
			expectCalls(t, "endpoints", e.putEndpoints(tc.eps)[:1], "update default/web")
			cs := e.svc("default", "web")
			if cs == nil {
				t.Fatal("not rendered")
			}
			if got := cs.ClusterIPs.String(); got != tc.want.clusterIPs {
				t.Errorf("cluster IPs %s, want %s", got, tc.want.clusterIPs)
			}
			if got := cs.ExternalIPs.String(); got != tc.want.externalIPs {
				t.Errorf("external IPs %s, want %s", got, tc.want.externalIPs)
			}
			if cs.TrafficPolicy != tc.want.policy || cs.SessionAffinityTimeout != tc.want.affinity {
				t.Errorf("policy %s affinity %d, want %s %d", cs.TrafficPolicy, cs.SessionAffinityTimeout, tc.want.policy, tc.want.affinity)
			}
			ports := make(map[string]string)
			for name, p := range cs.Ports {
				ports[name] = p.String()
			}
			if fmt.Sprint(ports) != fmt.Sprint(tc.want.ports) {
				t.Errorf("ports %v, want %v", ports, tc.want.ports)
			}
			for name := range tc.want.ports {
				if got := backends(cs, name); !slices.Equal(got, tc.want.backends[name]) {
					t.Errorf("backends of %s: %q, want %q", name, got, tc.want.backends[name])
				}
			}
			wantNodePort := false
			for _, p := range tc.want.ports {
				wantNodePort = wantNodePort || strings.Contains(p, ":")
			}
			if cs.HasNodePort() != wantNodePort {
				t.Errorf("HasNodePort = %v", cs.HasNodePort())
			}
		})
	}
}

// TestServiceWithoutEndpointsIsRenderedToBeRejected: a Service of which neither an
// EndpointSlice nor a legacy Endpoints value is known has no endpoints; it is rendered
// with ports without endpoints, so that the renderers reject its traffic as
// kube-proxy does (upstream did not render it: its packets left the node).
func TestServiceWithoutEndpointsIsRenderedToBeRejected(t *testing.T) {
	e := newEnv(t, "")
	expectCalls(t, "service only", e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))), "add default/web")
	fs := e.sp.services[serviceKeyOf("web", "default")].GetFlatService()
	if fs == nil || len(fs.Ports) != 1 || fs.Ports[0].HasEndpoints || len(fs.Ports[0].Backends) != 0 {
		t.Errorf("rendered as %+v, want one port without endpoints", fs)
	}
	expectCalls(t, "delete it", e.deleteService("default", "web"), "delete default/web")
	if len(e.sp.services) != 0 {
		t.Errorf("forgotten service still tracked: %v", e.sp.services)
	}
}

// TestServicesWithNothingToProxyAreNotRendered: headless (cluster IP None, or none
// at all) and ExternalName services are not rendered, with or without endpoints
// (kube-proxy's ShouldSkipService), and a service that becomes one is removed.
func TestServicesWithNothingToProxyAreNotRendered(t *testing.T) {
	for name, svc := range map[string]func() *svcmodel.Service{
		"headless": func() *svcmodel.Service { return st.Service("default", "web", "None", st.Port("http", "TCP", 80, 0)) },
		"no cluster IP": func() *svcmodel.Service {
			return st.Service("default", "web", "", st.Port("http", "TCP", 80, 0))
		},
		"ExternalName": func() *svcmodel.Service {
			s := st.Service("default", "web", "", st.Port("http", "TCP", 80, 0))
			s.ServiceType = "ExternalName"
			return s
		},
		"ExternalName with a cluster IP": func() *svcmodel.Service {
			s := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
			s.ServiceType = "ExternalName"
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "")
			expectCalls(t, "without endpoints", e.putService(svc()))
			expectCalls(t, "with endpoints", e.putEndpoints(webEndpoints(st.PodAddr(pod1IP, "default", "pod1"))))
			e = newEnv(t, "")
			e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
			expectCalls(t, "becoming one", e.putService(svc()), "delete default/web")
		})
	}
}

func TestEndpointsBeforeService(t *testing.T) {
	e := newEnv(t, "")
	expectCalls(t, "endpoints only", e.putEndpoints(webEndpoints(st.PodAddr(remoteIP, "default", "r"))))
	expectCalls(t, "then the service", e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))), "add default/web")
	expectCalls(t, "service deleted", e.deleteService("default", "web"), "delete default/web")
	expectCalls(t, "endpoints deleted", e.deleteEndpoints("default", "web"))
	if len(e.sp.services) != 0 {
		t.Errorf("forgotten service still tracked: %v", e.sp.services)
	}
}

func TestPortRenameWaitsForMatchingEndpoints(t *testing.T) {
	e := newEnv(t, "")
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.putEndpoints(webEndpoints(st.PodAddr(remoteIP, "default", "r")))

	// The service port is renamed; the endpoints still carry the old name.
	expectCalls(t, "rename", e.putService(st.Service("default", "web", "10.96.0.10", st.Port("web", "TCP", 80, 0))), "update default/web")
	if got := backends(e.svc("default", "web"), "web"); len(got) != 0 {
		t.Errorf("renamed port has backends %q before the endpoints follow", got)
	}
	expectCalls(t, "endpoints follow",
		e.putEndpoints(st.Endpoints("default", "web", st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("web", 8080, "")))),
		"update default/web")
	if got := backends(e.svc("default", "web"), "web"); !slices.Equal(got, []string{remoteIP + ":8080"}) {
		t.Errorf("backends %q", got)
	}
}

func TestUnchangedRenderingIsNotPassedOn(t *testing.T) {
	e := newEnv(t, "")
	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	e.putService(svc)
	e.putEndpoints(webEndpoints(st.PodAddr(remoteIP, "default", "r")))
	svc2 := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	svc2.Annotations = map[string]string{"touched": "yes"}
	expectCalls(t, "annotation", e.putService(svc2))
	expectCalls(t, "not-ready address", e.putEndpoints(st.Endpoints("default", "web",
		st.NotReady(st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 8080, "")), st.PodAddr("10.1.2.9", "default", "x")))))
}

func TestNodePortServicesFollowNodeIPs(t *testing.T) {
	e := newEnv(t, "")
	e.putService(st.Service("default", "np", "10.96.0.20", st.Port("http", "TCP", 80, 30080)))
	e.putEndpoints(st.Endpoints("default", "np", st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 8080, ""))))
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.putEndpoints(webEndpoints(st.PodAddr(remoteIP, "default", "r")))
	if got := e.r.resync.NodeIPs.String(); got != "{192.168.16.10, 10.3.1.10, 192.168.16.20}" {
		t.Errorf("resync node IPs %s", got)
	}

	// A worker gets a management IP: only the node-port service is re-rendered.
	e.nodes.SetNode(2, "worker", []string{workerIP + "/24"}, "10.3.1.20")
	expectCalls(t, "node IP added", e.nodeUpdate(), "nodeports {192.168.16.10, 10.3.1.10, 192.168.16.20, 10.3.1.20} [default/np]")
	expectCalls(t, "nothing changed", e.nodeUpdate())

	// A node whose VPP IP equals its management IP contributes it once.
	e.nodes.SetNode(3, "w3", []string{"192.168.16.30/24"}, "192.168.16.30")
	expectCalls(t, "duplicate IP", e.nodeUpdate(), "nodeports {192.168.16.10, 10.3.1.10, 192.168.16.20, 10.3.1.20, 192.168.16.30} [default/np]")

	// The service drops its node port: it leaves the index.
	e.putService(st.Service("default", "np", "10.96.0.20", st.Port("http", "TCP", 80, 0)))
	delete(e.nodes.Nodes, "w3")
	expectCalls(t, "node removed", e.nodeUpdate(), "nodeports {192.168.16.10, 10.3.1.10, 192.168.16.20, 10.3.1.20} []")
}

func TestPodsBecomingAndCeasingToBeBackends(t *testing.T) {
	e := newEnv(t, "", func(e *env) {
		e.ipnet.WirePod("default", "pod1", pod1If)
		e.pods.AddPod("default", "pod1")
	})
	base := []string{"GbE", "GbE2", "tap-vpp2", "vxlanBVI"}
	fe := func(pods ...string) string { return renderer.NewInterfaces(append(base, pods...)...).String() }
	be := func(pods ...string) string {
		return renderer.NewInterfaces(append([]string{"tap-vpp2", "vxlanBVI"}, pods...)...).String()
	}
	change := func(what, from, to string) call { return call(what + " " + from + " -> " + to) }
	if got := e.r.resync.FrontendIfs.String(); got != fe(pod1If) {
		t.Errorf("resync frontends %s", got)
	}
	if got := e.r.resync.BackendIfs.String(); got != be() {
		t.Errorf("resync backends %s", got)
	}

	// Endpoints name pod2 before the pod is wired: no interface yet.
	e.putService(st.Service("default", "a", "10.96.0.1", st.Port("http", "TCP", 80, 0)))
	e.putService(st.Service("default", "b", "10.96.0.2", st.Port("http", "TCP", 80, 0)))
	eps := func(name string, addrs ...st.Addr) *epmodel.Endpoints {
		return st.Endpoints("default", name, st.Subset(addrs, st.EpPort("http", 8080, "")))
	}
	expectCalls(t, "pod2 backs a before it exists", e.putEndpoints(eps("a", st.PodAddr(pod2IP, "default", "pod2"))), "update default/a")
	expectCalls(t, "pod2 wired", e.addPod("pod2", pod2If),
		change("frontends", fe(pod1If), fe(pod1If, pod2If)),
		change("backends", be(), be(pod2If)))

	// pod1 becomes a backend of b (0 -> 1); pod2 backs b too (1 -> 2): one change.
	expectCalls(t, "b gets both pods", e.putEndpoints(eps("b", st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(pod2IP, "default", "pod2"))),
		"update default/b", change("backends", be(pod2If), be(pod1If, pod2If)))
	// pod2 leaves a (2 -> 1): still a backend.
	expectCalls(t, "a loses pod2", e.putEndpoints(eps("a", st.PodAddr(remoteIP, "default", "r"))), "update default/a")
	// pod2 leaves b (1 -> 0): no longer a backend; pod1 stays.
	expectCalls(t, "b loses pod2", e.putEndpoints(eps("b", st.PodAddr(pod1IP, "default", "pod1"))),
		"update default/b", change("backends", be(pod1If, pod2If), be(pod1If)))

	// Deleting a backend pod removes its interface from both sets, backends first.
	expectCalls(t, "pod1 deleted", e.deletePod("pod1"),
		change("backends", be(pod1If), be()),
		change("frontends", fe(pod1If, pod2If), fe(pod2If)))
	// Its endpoints go away later: nothing left to change.
	expectCalls(t, "b loses pod1", e.putEndpoints(eps("b", st.PodAddr(remoteIP, "default", "r"))), "update default/b")

	// A failed AddPod is reverted like a delete.
	e.ipnet.WirePod("default", "pod3", "vpp-tap-pod3")
	addPod3 := podmanager.NewAddPod(podmodel.ID{Name: "pod3", Namespace: "default"}, "c3", "/netns")
	e.update(addPod3)
	if err := e.sp.Revert(addPod3); err != nil {
		t.Fatal(err)
	}
	expectCalls(t, "revert AddPod", e.r.take(), change("frontends", fe(pod2If, "vpp-tap-pod3"), fe(pod2If)))

	// Host-network pods have no VPP interface: nothing to do.
	expectCalls(t, "host-network pod", e.update(podmanager.NewAddPod(podmodel.ID{Name: "hostpod", Namespace: "default"}, "c", "/netns")))
}

func TestResyncRebuildsLocalBackends(t *testing.T) {
	e := newEnv(t, "", func(e *env) {
		e.ipnet.WirePod("default", "pod1", pod1If)
		e.pods.AddPod("default", "pod1")
		e.ipnet.WirePod("default", "pod2", pod2If)
		e.pods.AddPod("default", "pod2")
	})
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword, podmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = webEndpoints(st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remoteIP, "default", "r"))
	kube[svcmodel.Keyword][svcmodel.Key("lonely", "default")] = st.Service("default", "lonely", "10.96.0.11", st.Port("http", "TCP", 80, 0))
	e.resync(kube)
	expectCalls(t, "resync", e.r.take(), "resync")
	if n := len(e.r.resync.Services); n != 2 {
		t.Errorf("resync carries %d services, want both (the one without endpoints to be rejected)", n)
	}
	if got := e.r.resync.BackendIfs.String(); got != "{tap-vpp2, vpp-tap-pod1, vxlanBVI}" {
		t.Errorf("resync backends %s", got)
	}
	// The counts survive the resync: pod1 stops backing web.
	expectCalls(t, "pod1 leaves", e.putEndpoints(webEndpoints(st.PodAddr(remoteIP, "default", "r"))),
		"update default/web", "backends {tap-vpp2, vpp-tap-pod1, vxlanBVI} -> {tap-vpp2, vxlanBVI}")
}

func TestNoOverlayMakesTheMainInterfaceABackend(t *testing.T) {
	e := newEnv(t, testConf+"useNoOverlay: true\n", func(e *env) { e.ipnet.VxlanBVI = "" })
	if got := e.r.resync.FrontendIfs.String(); got != "{GbE, GbE2, tap-vpp2}" {
		t.Errorf("frontends %s", got)
	}
	if got := e.r.resync.BackendIfs.String(); got != "{GbE, tap-vpp2}" {
		t.Errorf("backends %s", got)
	}
}

func TestSkippedItemsAreCounted(t *testing.T) {
	e := newEnv(t, "")
	svc := st.Service("default", "sig", "10.96.0.99", st.Port("diameter", "SCTP", 3868, 0), st.Port("odd", "ICMP", 1, 0), st.Port("http", "TCP", 80, 0))
	svc.ExternalIps = []string{"not-an-ip"}
	e.putService(svc)
	e.putEndpoints(st.Endpoints("default", "sig", st.Subset([]st.Addr{st.IPAddr("bad"), st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 80, ""))))
	if g := e.gauge("contiv_service_unsupported_ports", "protocol", "SCTP"); g != 1 {
		t.Errorf("SCTP ports gauge %v, want 1", g)
	}
	if g := e.gauge("contiv_service_unsupported_ports", "protocol", "other"); g != 1 {
		t.Errorf("other-protocol ports gauge %v, want 1", g)
	}
	if g := e.gauge("contiv_service_invalid_ips"); g != 2 {
		t.Errorf("invalid IPs gauge %v, want 2", g)
	}
	if cs := e.svc("default", "sig"); cs == nil || len(cs.Ports) != 1 || len(cs.Backends["http"]) != 1 {
		t.Errorf("service rendered as %v", cs)
	}
	// Fixing or deleting the objects clears the gauges.
	e.deleteService("default", "sig")
	e.deleteEndpoints("default", "sig")
	if e.gauge("contiv_service_unsupported_ports", "protocol", "SCTP") != 0 || e.gauge("contiv_service_invalid_ips") != 0 {
		t.Error("gauges not cleared after the service was deleted")
	}
}

func TestRendererErrorsNameTheService(t *testing.T) {
	e := newEnv(t, "")
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.r.err = errors.New("boom")
	err := e.sp.Update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key("web", "default"), NewValue: webEndpoints(st.PodAddr(remoteIP, "default", "r"))})
	if err == nil || !strings.Contains(err.Error(), "service default/web") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %v", err)
	}
	err = e.sp.Update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("x", "default"), NewValue: &epmodel.Endpoints{}})
	if err == nil || !strings.Contains(err.Error(), "default/x") {
		t.Errorf("wrong value type: err = %v", err)
	}
}

func TestOneChangeTouchesOnlyItsService(t *testing.T) {
	e := newEnv(t, "")
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	for i := range 50 {
		name := fmt.Sprintf("s%d", i)
		kube[svcmodel.Keyword][svcmodel.Key(name, "default")] = st.Service("default", name, fmt.Sprintf("10.96.1.%d", i), st.Port("http", "TCP", 80, 30000+int32(i)))
		kube[epmodel.Keyword][epmodel.Key(name, "default")] = st.Endpoints("default", name, st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 8080, "")))
	}
	e.resync(kube)
	e.r.take()
	expectCalls(t, "one endpoints change", e.putEndpoints(st.Endpoints("default", "s7", st.Subset([]st.Addr{st.PodAddr("10.1.2.8", "default", "r")}, st.EpPort("http", 8080, "")))),
		"update default/s7")
	if got := len(e.sp.nodePortServices); got != 50 {
		t.Errorf("node-port index holds %d services", got)
	}
}

func TestServiceCombinesHalvesInAnyOrder(t *testing.T) {
	e := newEnv(t, "")
	for _, order := range []string{"metadata first", "endpoints first"} {
		s := NewService(e.sp)
		meta := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
		eps := webEndpoints(st.PodAddr(pod1IP, "default", "pod1"))
		if order == "metadata first" {
			s.SetMetadata(meta)
			if cs := s.GetContivService(); cs == nil || cs.HasEndpoints["http"] {
				t.Errorf("%s: without endpoints rendered as %v, want a port without endpoints", order, cs)
			}
			s.SetEndpoints(eps)
		} else {
			s.SetEndpoints(eps)
			s.SetMetadata(meta)
		}
		cs := s.GetContivService()
		if cs == nil || cs.ID.String() != "default/web" || !slices.Equal(s.GetLocalBackends(), []podmodel.ID{{Name: "pod1", Namespace: "default"}}) {
			t.Errorf("%s: %v, local backends %v", order, cs, s.GetLocalBackends())
		}
		s.SetEndpoints(nil)
		if cs := s.GetContivService(); cs == nil || len(cs.Backends["http"]) != 0 || len(s.GetLocalBackends()) != 0 {
			t.Errorf("%s: without endpoints again rendered as %v, local backends %v", order, cs, s.GetLocalBackends())
		}
	}
}

// TestInitWithoutALoggerTakesTheDefault: a processor handed no logger logs through
// infra.LoggerOr's default, resolved once by Init, and so do its services.
func TestInitWithoutALoggerTakesTheDefault(t *testing.T) {
	e := newEnv(t, "")
	sp := &ServiceProcessor{Deps: e.sp.Deps}
	sp.Log, sp.Registerer = nil, nil // no logger; the metrics are e.sp's
	if err := sp.Init(); err != nil {
		t.Fatalf("Init without a logger: %v", err)
	}
	for what, log := range map[string]logrus.FieldLogger{"processor": sp.Log, "service": NewService(sp).log()} {
		entry, ok := log.(*logrus.Entry)
		if !ok || entry.Logger != logrus.StandardLogger() || entry.Data[infra.LoggerField] != "service-processor" {
			t.Errorf("%s logger %#v, want the standard logger with logger=service-processor", what, log)
		}
	}
}

package processor

import (
	"slices"
	"testing"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// expectRejected checks the gauge contiv_service_rejected_endpoints of every reason.
func expectRejected(t *testing.T, e *env, want map[string]float64) {
	t.Helper()
	for _, reason := range epRejectNames {
		if got := e.gauge("contiv_service_rejected_endpoints", "reason", reason); got != want[reason] {
			t.Errorf("rejected endpoints %s: %v, want %v", reason, got, want[reason])
		}
	}
}

func TestSpecialEndpointAddressesAreRejectedLoggedAndCounted(t *testing.T) {
	e := newEnv(t, "")
	hook := captureLog(e)
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	expectWarnings(t, hook)
	// 10.1.1.255 and 10.1.1.0: the edges of this node's pod subnet 10.1.1.0/24.
	e.putSlice(webSlice("s1", "127.0.0.1", "0.0.0.0", "169.254.169.254", "224.0.0.1", "239.255.0.1",
		"255.255.255.255", "10.1.1.255", "10.1.1.0", "::1", "fe80::1", remoteIP))
	expectWarnings(t, hook,
		"service default/web: endpoint 127.0.0.1 rejected: in the loopback range (127.0.0.0/8, ::1/128)",
		"service default/web: endpoint 0.0.0.0 rejected: the unspecified address",
		"service default/web: endpoint 169.254.169.254 rejected: in the link-local range (169.254.0.0/16, fe80::/10)",
		"service default/web: endpoint 224.0.0.1 rejected: a multicast address (224.0.0.0/4, ff00::/8)",
		"service default/web: endpoint 239.255.0.1 rejected: a multicast address (224.0.0.0/4, ff00::/8)",
		"service default/web: endpoint 255.255.255.255 rejected: a broadcast address",
		"service default/web: endpoint 10.1.1.255 rejected: a broadcast address",
		"service default/web: endpoint 10.1.1.0 rejected: a broadcast address",
		"service default/web: endpoint ::1 rejected: in the loopback range (127.0.0.0/8, ::1/128)",
		"service default/web: endpoint fe80::1 rejected: in the link-local range (169.254.0.0/16, fe80::/10)")
	if got := backends(e.svc("default", "web"), "http"); !slices.Equal(got, []string{remoteIP + ":8080"}) {
		t.Errorf("backends %v, want the pod only", got)
	}
	expectRejected(t, e, map[string]float64{"loopback": 2, "unspecified": 1, "linkLocal": 2, "multicast": 2, "broadcast": 3})

	// The slice is fixed: the gauge follows the objects, nothing is logged.
	e.putSlice(webSlice("s1", remoteIP, pod1IP))
	expectWarnings(t, hook)
	expectRejected(t, e, nil)
}

func TestEndpointAtAClusterIPIsRejectedWhileAServiceHasIt(t *testing.T) {
	e := newEnv(t, "")
	hook := captureLog(e)
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.putService(st.Service("default", "db", "10.96.0.12", st.Port("sql", "TCP", 5432, 0)))
	e.putEndpoints(st.Endpoints("default", "db", st.Subset([]st.Addr{st.PodAddr(pod2IP, "default", "pod2")}, st.EpPort("sql", 5432, ""))))
	e.putSlice(webSlice("s1", "10.96.0.11", remoteIP))
	hook.Reset()

	// The api Service takes 10.96.0.11: the web endpoint there is rejected at once;
	// db, without an endpoint at that address, is not rendered again.
	expectCalls(t, "api added", e.putService(st.Service("default", "api", "10.96.0.11", st.Port("http", "TCP", 80, 0))),
		"add default/api", "update default/web")
	expectWarnings(t, hook, "service default/web: endpoint 10.96.0.11 rejected: the cluster IP of a Service")
	if got := backends(e.svc("default", "web"), "http"); !slices.Equal(got, []string{remoteIP + ":8080"}) {
		t.Errorf("backends %v with 10.96.0.11 a cluster IP", got)
	}
	expectRejected(t, e, map[string]float64{"clusterIP": 1})

	// A Service pointing at its own cluster IP is a loop too.
	e.putSlice(&esmodel.EndpointSlice{Name: "a1", Namespace: "default", ServiceName: "api", AddressType: "IPv4",
		Ports:     []*esmodel.Port{{Name: "http", Protocol: "TCP", Port: 80}},
		Endpoints: []*esmodel.Endpoint{{Addresses: []string{"10.96.0.11"}, Ready: true}}})
	if got := backends(e.svc("default", "api"), "http"); len(got) != 0 {
		t.Errorf("api backends %v: its own cluster IP", got)
	}
	expectRejected(t, e, map[string]float64{"clusterIP": 2})

	// The api Service is deleted: the address is nobody's cluster IP any more.
	expectCalls(t, "api deleted", e.deleteService("default", "api"), "delete default/api", "update default/web")
	if got := backends(e.svc("default", "web"), "http"); !slices.Equal(got, []string{"10.96.0.11:8080 host-network", remoteIP + ":8080"}) {
		t.Errorf("backends %v after the api Service left", got)
	}
}

func TestNodeAddressIsABackendOnlyForAPodOrTheAPIServer(t *testing.T) {
	const workerMg = "10.3.1.20" // the worker's management IP: a host-network pod there
	e := newEnv(t, "", func(e *env) { e.nodes.SetNode(2, "worker", []string{workerIP + "/24"}, workerMg) })
	hook := captureLog(e)
	webEps := func(addrs ...st.Addr) *epmodel.Endpoints {
		return st.Endpoints("default", "web", st.Subset(addrs, st.EpPort("http", 8080, "")))
	}
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.putEndpoints(webEps(st.IPAddr(workerIP), st.IPAddr(hostIP), st.IPAddr(nodeIP),
		st.PodAddr(workerMg, "default", "host-pod"), st.IPAddr("192.168.16.30")))
	expectWarnings(t, hook,
		"service default/web: endpoint "+workerIP+" rejected: an address of a node (accepted only from an endpoint naming a Pod)",
		"service default/web: endpoint "+hostIP+" rejected: an address of a node (accepted only from an endpoint naming a Pod)",
		"service default/web: endpoint "+nodeIP+" rejected: an address of a node (accepted only from an endpoint naming a Pod)")
	if got := backends(e.svc("default", "web"), "http"); !slices.Equal(got, []string{workerMg + ":8080 host-network", "192.168.16.30:8080 host-network"}) {
		t.Errorf("backends %v", got)
	}
	expectRejected(t, e, map[string]float64{"nodeIP": 3})

	// A node joins with the address 192.168.16.30: the endpoint there is rejected.
	e.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"})
	calls := e.update(&nodesync.NodeUpdate{NodeName: "worker2", NewState: e.nodes.Nodes["worker2"]})
	if !slices.Contains(calls, "update default/web") {
		t.Errorf("node join: calls %v, want web updated", calls)
	}
	if got := backends(e.svc("default", "web"), "http"); !slices.Equal(got, []string{workerMg + ":8080 host-network"}) {
		t.Errorf("backends %v after the node joined", got)
	}
	// The same state reported again (a NodeUpdate that changes nothing) does not count
	// the node twice.
	e.update(&nodesync.NodeUpdate{NodeName: "worker2", PrevState: e.nodes.Nodes["worker2"], NewState: e.nodes.Nodes["worker2"]})
	// It leaves: the endpoint is a backend again.
	gone := e.nodes.Nodes["worker2"]
	delete(e.nodes.Nodes, "worker2")
	e.update(&nodesync.NodeUpdate{NodeName: "worker2", PrevState: gone})
	if got := backends(e.svc("default", "web"), "http"); len(got) != 2 {
		t.Errorf("backends %v after the node left", got)
	}

	// The API server's own endpoints are node addresses without a Pod.
	e.putService(st.Service("default", "kubernetes", "10.96.0.1", st.Port("https", "TCP", 443, 0)))
	e.putEndpoints(st.Endpoints("default", "kubernetes", st.Subset([]st.Addr{st.IPAddr(nodeIP)}, st.EpPort("https", 6443, ""))))
	if got := backends(e.svc("default", "kubernetes"), "https"); len(got) != 1 {
		t.Errorf("kubernetes backends %v, want the API server on the node", got)
	}
}

func TestResyncChecksEndpointsAgainstEveryClusterIP(t *testing.T) {
	e := newEnv(t, "")
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword, esmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	kube[esmodel.Keyword][esmodel.Key("s1", "default")] = webSlice("s1", "10.96.0.11", remoteIP)
	kube[svcmodel.Keyword][svcmodel.Key("api", "default")] = st.Service("default", "api", "10.96.0.11", st.Port("http", "TCP", 80, 0))
	e.resync(kube)
	if got := backends(e.svc("default", "web"), "http"); !slices.Equal(got, []string{remoteIP + ":8080"}) {
		t.Errorf("backends %v after a resync with the api Service", got)
	}
	// A resync without the api Service accepts the endpoint (the slice is the same
	// object: it is parsed again because the address changed).
	delete(kube[svcmodel.Keyword], svcmodel.Key("api", "default"))
	e.resync(kube)
	if got := backends(e.svc("default", "web"), "http"); len(got) != 2 {
		t.Errorf("backends %v after a resync without the api Service", got)
	}
	expectRejected(t, e, nil)
}

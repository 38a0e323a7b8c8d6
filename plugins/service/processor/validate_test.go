package processor

import (
	"net"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// captureLog makes the processor log into a hook and returns it.
func captureLog(e *env) *logtest.Hook {
	l, hook := logtest.NewNullLogger()
	e.sp.Log = l
	return hook
}

// warnings returns the warning messages logged since the last call.
func warnings(hook *logtest.Hook) []string {
	var out []string
	for _, en := range hook.AllEntries() {
		if en.Level == logrus.WarnLevel {
			out = append(out, en.Message)
		}
	}
	hook.Reset()
	return out
}

func expectWarnings(t *testing.T, hook *logtest.Hook, want ...string) {
	t.Helper()
	got := warnings(hook)
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("warning %q, want %q", got[i], want[i])
		}
	}
}

func TestOutOfRangeServicePortsAreRejected(t *testing.T) {
	e := newEnv(t, "")
	hook := captureLog(e)
	// Port 70000 was programmed as 4464 and nodePort 99999 as 34463 (uint16 wrap).
	svc := st.Service("default", "bad", "10.96.0.60", st.Port("big", "TCP", 70000, 0), st.Port("np", "TCP", 81, 99999),
		st.Port("low", "TCP", 82, 8080), st.Port("ok", "TCP", 83, 30083))
	e.putService(svc)
	expectWarnings(t, hook,
		"service default/bad: spec.ports[0].port 70000 rejected: outside 1-65535",
		"service default/bad: spec.ports[1].nodePort 99999 rejected: outside the node port range 30000-32767",
		"service default/bad: spec.ports[2].nodePort 8080 rejected: outside the node port range 30000-32767")
	e.putEndpoints(st.Endpoints("default", "bad", st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")},
		st.EpPort("big", 8080, ""), st.EpPort("np", 8081, ""), st.EpPort("low", 8082, ""), st.EpPort("ok", 70001, ""))))
	expectWarnings(t, hook, "service default/bad: endpoints subsets[0].ports[3].port 70001 rejected: outside 1-65535")

	cs := e.svc("default", "bad")
	if cs == nil {
		t.Fatal("the valid parts of the service are not rendered")
	}
	if _, ok := cs.Ports["big"]; ok {
		t.Errorf("port 70000 rendered as %v", cs.Ports["big"])
	}
	if p := cs.Ports["np"]; p == nil || p.Port != 81 || p.NodePort != 0 {
		t.Errorf("port with node port 99999 rendered as %v, want port 81 without node port", p)
	}
	if p := cs.Ports["low"]; p == nil || p.NodePort != 0 {
		t.Errorf("port with node port 8080 rendered as %v", p)
	}
	if p := cs.Ports["ok"]; p == nil || p.NodePort != 30083 || len(cs.Backends["ok"]) != 0 {
		t.Errorf("port ok rendered as %v with backends %v (its endpoint port 70001 is invalid)", p, cs.Backends["ok"])
	}
	if len(cs.Backends["np"]) != 1 || cs.Backends["np"][0].Port != 8081 {
		t.Errorf("backends of np: %v", cs.Backends["np"])
	}
	for field, want := range map[string]float64{"port": 1, "nodePort": 2, "endpointPort": 1, "clusterIP": 0} {
		if g := e.gauge("contiv_service_rejected_fields", "field", field); g != want {
			t.Errorf("rejected %s gauge %v, want %v", field, g, want)
		}
	}

	// Another, valid service is unaffected.
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080)))
	e.putEndpoints(webEndpoints(st.PodAddr(remoteIP, "default", "r")))
	if cs := e.svc("default", "web"); cs == nil || cs.Ports["http"].NodePort != 30080 {
		t.Errorf("valid service rendered as %v", cs)
	}
	expectWarnings(t, hook)

	// Fixed objects clear the gauges.
	e.putService(st.Service("default", "bad", "10.96.0.60", st.Port("ok", "TCP", 83, 30083)))
	e.deleteEndpoints("default", "bad")
	for _, field := range []string{"port", "nodePort", "endpointPort"} {
		if g := e.gauge("contiv_service_rejected_fields", "field", field); g != 0 {
			t.Errorf("rejected %s gauge %v after the fix, want 0", field, g)
		}
	}
}

func TestNodePortRangeIsConfigurable(t *testing.T) {
	e := newEnv(t, "")
	e.sp.NodePortFirst, e.sp.NodePortLast = 20000, 20100
	hook := captureLog(e)
	e.putService(st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 20080), st.Port("https", "TCP", 443, 30443)))
	e.putEndpoints(st.Endpoints("default", "web", st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 8080, ""), st.EpPort("https", 8443, ""))))
	expectWarnings(t, hook, "service default/web: spec.ports[1].nodePort 30443 rejected: outside the node port range 20000-20100")
	cs := e.svc("default", "web")
	if cs.Ports["http"].NodePort != 20080 || cs.Ports["https"].NodePort != 0 {
		t.Errorf("ports %v %v", cs.Ports["http"], cs.Ports["https"])
	}
}

func TestClusterIPOutsideTheServiceCIDRIsRejected(t *testing.T) {
	e := newEnv(t, "")
	hook := captureLog(e)
	// A cluster IP equal to a pod's IP would capture the pod's port.
	e.putService(st.Service("default", "thief", remoteIP, st.Port("http", "TCP", 80, 0)))
	e.putEndpoints(st.Endpoints("default", "thief", st.Subset([]st.Addr{st.PodAddr("10.1.2.9", "default", "r")}, st.EpPort("http", 8080, ""))))
	got := warnings(hook)
	if len(got) != 1 || !strings.HasPrefix(got[0], "service default/thief: spec.clusterIP "+remoteIP+" rejected: outside the service CIDR ") {
		t.Fatalf("warnings %q", got)
	}
	cs := e.svc("default", "thief")
	if cs == nil || cs.ClusterIPs.Len() != 0 {
		t.Errorf("service rendered with cluster IPs %v", cs.ClusterIPs)
	}
	if g := e.gauge("contiv_service_rejected_fields", "field", "clusterIP"); g != 1 {
		t.Errorf("rejected clusterIP gauge %v, want 1", g)
	}
	// A cluster IP inside the service CIDR is kept.
	e.putService(st.Service("default", "thief", "10.96.0.77", st.Port("http", "TCP", 80, 0)))
	if cs := e.svc("default", "thief"); cs == nil || cs.ClusterIPs.Len() != 1 || !cs.ClusterIPs.Has(net.ParseIP("10.96.0.77")) {
		t.Errorf("valid cluster IP not rendered: %v", cs)
	}
	if g := e.gauge("contiv_service_rejected_fields", "field", "clusterIP"); g != 0 {
		t.Errorf("rejected clusterIP gauge %v after the fix, want 0", g)
	}
}

func TestResyncReusesUnchangedServicesAndKeepsTheGaugesExact(t *testing.T) {
	e := newEnv(t, "")
	bad := st.Service("default", "bad", "10.96.0.60", st.Port("big", "TCP", 70000, 0), st.Port("sig", "SCTP", 3868, 0), st.Port("http", "TCP", 80, 0))
	web := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	badEps := st.Endpoints("default", "bad", st.Subset([]st.Addr{st.PodAddr(remoteIP, "default", "r")}, st.EpPort("http", 8080, "")))
	webEps := webEndpoints(st.PodAddr(remoteIP, "default", "r"))
	kube := func(objs ...any) controller.KubeStateData {
		k := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
		for _, o := range objs {
			switch v := o.(type) {
			case *svcmodel.Service:
				k[svcmodel.Keyword][svcmodel.Key(v.Name, v.Namespace)] = v
			case *epmodel.Endpoints:
				k[epmodel.Keyword][epmodel.Key(v.Name, v.Namespace)] = v
			}
		}
		return k
	}
	gauges := func() [2]float64 {
		return [2]float64{e.gauge("contiv_service_rejected_fields", "field", "port"), e.gauge("contiv_service_unsupported_ports", "protocol", "SCTP")}
	}
	e.resync(kube(bad, web, badEps, webEps))
	first := e.svc("default", "web")
	if g := gauges(); g != [2]float64{1, 1} {
		t.Errorf("gauges after the first resync %v, want [1 1]", g)
	}
	// The same objects again: the renderings are reused, the gauges stay.
	e.resync(kube(bad, web, badEps, webEps))
	if e.svc("default", "web") != first {
		t.Error("an unchanged service was rendered again")
	}
	if g := gauges(); g != [2]float64{1, 1} {
		t.Errorf("gauges after a resync of the same objects %v, want [1 1]", g)
	}
	// A new Endpoints object of web (equal content, another object) is parsed again.
	e.resync(kube(bad, web, badEps, webEndpoints(st.PodAddr("10.1.2.8", "default", "r"))))
	if cs := e.svc("default", "web"); cs == first || cs.Backends["http"][0].IP.String() != "10.1.2.8" {
		t.Errorf("a changed service kept its old rendering %v", cs)
	}
	// The bad service's definition is gone: its counts go with it.
	e.resync(kube(web, badEps, webEps))
	if g := gauges(); g != [2]float64{0, 0} {
		t.Errorf("gauges after the bad service left %v, want [0 0]", g)
	}
	if e.svc("default", "bad") != nil {
		t.Error("a service without definition is still rendered")
	}
}

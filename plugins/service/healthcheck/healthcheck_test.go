package healthcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

func quiet() *logrus.Logger {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return log
}

func freePort(t *testing.T) uint16 { return testkit.FreeTCPPort(t) }

func lbService(name string, etp string, hcPort uint16) *svcmodel.Service {
	return &svcmodel.Service{Name: name, Namespace: "default", ServiceType: "LoadBalancer",
		ExternalTrafficPolicy: etp, HealthCheckNodePort: int32(hcPort)}
}

// rendering returns a flat service with two ports; each endpoint serves both.
func rendering(name string, endpoints ...renderer.Endpoint) *renderer.FlatService {
	group := []renderer.BackendGroup{{TargetPort: 8080, Endpoints: endpoints}}
	return &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: name}, TrafficPolicy: renderer.NodeLocal,
		Ports: []renderer.FlatPort{
			{Name: "http", HasEndpoints: true, Backends: group, ExternalBackends: group},
			{Name: "https", HasEndpoints: true, Backends: group, ExternalBackends: group},
		}}
}

func endpoint(ip string, local bool) renderer.Endpoint {
	return renderer.Endpoint{Address: renderer.NewAddress(net.ParseIP(ip)), Local: local}
}

type answer struct {
	status int
	header http.Header
	body   payload
}

func get(t *testing.T, port uint16, path string) (answer, error) {
	t.Helper()
	client := &http.Client{Timeout: testkit.DefaultTimeout}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("body %q: %v", raw, err)
	}
	return a, nil
}

func mustGet(t *testing.T, port uint16, path string) answer {
	t.Helper()
	a, err := get(t, port, path)
	if err != nil {
		t.Fatalf("GET %s on port %d: %v", path, port, err)
	}
	return a
}

func refused(t *testing.T, port uint16) {
	t.Helper()
	if _, err := get(t, port, "/healthz"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("GET on port %d: %v, want connection refused", port, err)
	}
}

func newTracker(t *testing.T, deps ServerDeps) (*Tracker, *Server) {
	t.Helper()
	if deps.Log == nil {
		log := logrus.New()
		log.SetOutput(io.Discard)
		deps.Log = log
	}
	s := NewServer(deps)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return NewTracker(s, nil), s
}

func TestHealthCheckAnswersWithTheCountOfLocalEndpoints(t *testing.T) {
	tr, _ := newTracker(t, ServerDeps{})
	port := testkit.FreeTCPPort(t)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, lbService("web", "Local", port)); err != nil {
		t.Fatal(err)
	}

	// No rendering yet: no local endpoint, 503.
	a := mustGet(t, port, "/healthz")
	if a.status != http.StatusServiceUnavailable || a.body.LocalEndpoints != 0 {
		t.Fatalf("before any endpoint: %d %+v, want 503 with 0 local endpoints", a.status, a.body)
	}

	// Two local endpoints (each behind two ports: counted once) and a remote one.
	fs := rendering("web", endpoint("10.1.1.2", true), endpoint("10.1.1.3", true), endpoint("10.1.2.2", false))
	if err := tr.AddFlatService(renderer.DiscardTxn{}, fs); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/"} { // kube-proxy answers any path
		a = mustGet(t, port, path)
		if a.status != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", path, a.status)
		}
		if a.body.Service.Namespace != "default" || a.body.Service.Name != "web" || a.body.LocalEndpoints != 2 || !a.body.ServiceProxyHealthy {
			t.Errorf("GET %s: body %+v, want default/web with 2 local endpoints, healthy", path, a.body)
		}
		if ct, w := a.header.Get("Content-Type"), a.header.Get("X-Load-Balancing-Endpoint-Weight"); ct != "application/json" || w != "2" {
			t.Errorf("GET %s: Content-Type %q, X-Load-Balancing-Endpoint-Weight %q; want application/json, 2", path, ct, w)
		}
	}

	// The local endpoints go: 503.
	if err := tr.UpdateFlatService(renderer.DiscardTxn{}, fs, rendering("web", endpoint("10.1.2.2", false))); err != nil {
		t.Fatal(err)
	}
	if a = mustGet(t, port, "/healthz"); a.status != http.StatusServiceUnavailable || a.body.LocalEndpoints != 0 {
		t.Fatalf("without local endpoints: %d %+v, want 503 with 0 local endpoints", a.status, a.body)
	}
}

// TestOnlyReadyLocalEndpointsAreCounted: as kube-proxy's LocalReadyEndpoints, a local
// endpoint that is serving and terminating (the fallback rendering while no endpoint is
// ready) does not count: with only such endpoints the node answers 503.
func TestOnlyReadyLocalEndpointsAreCounted(t *testing.T) {
	tr, _ := newTracker(t, ServerDeps{})
	port := testkit.FreeTCPPort(t)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, lbService("web", "Local", port)); err != nil {
		t.Fatal(err)
	}
	terminating := func(ip string) renderer.Endpoint {
		ep := endpoint(ip, true)
		ep.Terminating = true
		return ep
	}
	fs := rendering("web", endpoint("10.1.1.2", true), terminating("10.1.1.3"))
	if err := tr.AddFlatService(renderer.DiscardTxn{}, fs); err != nil {
		t.Fatal(err)
	}
	if a := mustGet(t, port, "/healthz"); a.status != http.StatusOK || a.body.LocalEndpoints != 1 {
		t.Fatalf("one ready and one terminating local endpoint: %d %+v, want 200 with 1 local endpoint", a.status, a.body)
	}
	only := rendering("web", terminating("10.1.1.2"), terminating("10.1.1.3"))
	if err := tr.UpdateFlatService(renderer.DiscardTxn{}, fs, only); err != nil {
		t.Fatal(err)
	}
	if a := mustGet(t, port, "/healthz"); a.status != http.StatusServiceUnavailable || a.body.LocalEndpoints != 0 {
		t.Fatalf("only terminating local endpoints: %d %+v, want 503 with 0 local endpoints", a.status, a.body)
	}
}

func TestUnhealthyAgentAnswers503(t *testing.T) {
	healthy := false
	tr, _ := newTracker(t, ServerDeps{ProxyHealthy: func() bool { return healthy }})
	port := testkit.FreeTCPPort(t)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, lbService("web", "Local", port)); err != nil {
		t.Fatal(err)
	}
	if err := tr.AddFlatService(renderer.DiscardTxn{}, rendering("web", endpoint("10.1.1.2", true))); err != nil {
		t.Fatal(err)
	}
	if a := mustGet(t, port, "/healthz"); a.status != http.StatusServiceUnavailable || a.body.LocalEndpoints != 1 || a.body.ServiceProxyHealthy {
		t.Fatalf("unhealthy agent: %d %+v, want 503 with 1 local endpoint, not healthy", a.status, a.body)
	}
}

func TestHealthCheckPortFollowsTheService(t *testing.T) {
	tr, _ := newTracker(t, ServerDeps{})
	port, other := testkit.FreeTCPPort(t), testkit.FreeTCPPort(t)
	svc := lbService("web", "Local", port)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, svc); err != nil {
		t.Fatal(err)
	}
	if err := tr.AddFlatService(renderer.DiscardTxn{}, rendering("web", endpoint("10.1.1.2", true))); err != nil {
		t.Fatal(err)
	}
	mustGet(t, port, "/healthz")

	// A new port: the old one closes, the new one answers with the same count.
	moved := lbService("web", "Local", other)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, svc, moved); err != nil {
		t.Fatal(err)
	}
	refused(t, port)
	if a := mustGet(t, other, "/healthz"); a.status != http.StatusOK || a.body.LocalEndpoints != 1 {
		t.Fatalf("moved port: %d %+v, want 200 with 1 local endpoint", a.status, a.body)
	}

	// externalTrafficPolicy Cluster: no health check.
	cluster := lbService("web", "Cluster", other)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, moved, cluster); err != nil {
		t.Fatal(err)
	}
	refused(t, other)

	// Local again, then deleted.
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, cluster, moved); err != nil {
		t.Fatal(err)
	}
	mustGet(t, other, "/healthz")
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, moved, nil); err != nil {
		t.Fatal(err)
	}
	refused(t, other)
}

func TestResyncOpensAndClosesPorts(t *testing.T) {
	tr, _ := newTracker(t, ServerDeps{})
	kept, gone, added, nodePort, otherProxy := testkit.FreeTCPPort(t), testkit.FreeTCPPort(t), testkit.FreeTCPPort(t), testkit.FreeTCPPort(t), testkit.FreeTCPPort(t)
	for _, s := range []*svcmodel.Service{lbService("kept", "Local", kept), lbService("gone", "Local", gone)} {
		if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, s); err != nil {
			t.Fatal(err)
		}
	}
	np := &svcmodel.Service{Name: "np", Namespace: "default", ServiceType: "NodePort", ExternalTrafficPolicy: "Local", HealthCheckNodePort: int32(nodePort)}
	other := lbService("other", "Local", otherProxy)
	other.Labels = map[string]string{svcmodel.LabelServiceProxyName: "another-proxy"}
	tr.ResyncServices(renderer.DiscardTxn{}, controller.KeyValuePairs{
		svcmodel.Key("kept", "default"):  lbService("kept", "Local", kept),
		svcmodel.Key("added", "default"): lbService("added", "Local", added),
		svcmodel.Key("np", "default"):    np,
		svcmodel.Key("other", "default"): other,
	})
	if err := tr.ResyncFlat(nil, &renderer.FlatResyncEventData{Services: []*renderer.FlatService{
		rendering("kept", endpoint("10.1.1.2", true)), rendering("added", endpoint("10.1.2.2", false)),
	}}); err != nil {
		t.Fatal(err)
	}
	if a := mustGet(t, kept, "/healthz"); a.status != http.StatusOK || a.body.LocalEndpoints != 1 {
		t.Errorf("kept: %d %+v, want 200 with 1 local endpoint", a.status, a.body)
	}
	if a := mustGet(t, added, "/healthz"); a.status != http.StatusServiceUnavailable {
		t.Errorf("added: %d %+v, want 503", a.status, a.body)
	}
	refused(t, gone)
	refused(t, nodePort)   // not a LoadBalancer: kube-proxy serves no health check
	refused(t, otherProxy) // another proxy's Service
}

func TestATakenPortIsLoggedAndRetried(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	clk := testkit.NewClock()
	tr, _ := newTracker(t, ServerDeps{Log: log, Clock: clk, RetryInterval: time.Second})

	holder, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(holder.Addr().(*net.TCPAddr).Port)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, lbService("web", "Local", port)); err != nil {
		t.Fatal(err)
	}
	entry := hook.LastEntry()
	if entry == nil || entry.Level != logrus.ErrorLevel || entry.Data["service"] != "default/web" || entry.Data["port"] != port ||
		!strings.Contains(entry.Message, fmt.Sprint(port)) {
		t.Fatalf("log entry %+v, want an error naming service default/web and port %d", entry, port)
	}

	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.AddFlatService(renderer.DiscardTxn{}, rendering("web", endpoint("10.1.1.2", true))); err != nil {
		t.Fatal(err)
	}
	clk.AwaitWaiters(t, 1) // the retry ticker
	refused(t, port)       // no retry before the tick
	clk.Step(time.Second)
	testkit.Eventually(t, testkit.DefaultTimeout, "the health check on the freed port", func() error {
		a, err := get(t, port, "/healthz")
		if err != nil {
			return err
		}
		if a.status != http.StatusOK {
			return fmt.Errorf("status %d", a.status)
		}
		return nil
	})
}

func TestCloseStopsServing(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	s := NewServer(ServerDeps{Log: log})
	tr := NewTracker(s, nil)
	port := testkit.FreeTCPPort(t)
	if _, err := tr.UpdateService(renderer.DiscardTxn{}, nil, lbService("web", "Local", port)); err != nil {
		t.Fatal(err)
	}
	mustGet(t, port, "/healthz")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	refused(t, port)
}

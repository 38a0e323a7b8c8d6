package service

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/healthcheck"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/lbfirewall"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// healthz GETs the health check node port and returns the status and the count of
// local endpoints it reports.
func healthz(t *testing.T, port int) (status, localEndpoints int, err error) {
	t.Helper()
	client := &http.Client{Timeout: testkit.DefaultTimeout}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var body struct {
		LocalEndpoints int `json:"localEndpoints"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body.LocalEndpoints, nil
}

func TestHealthCheckNodePortServesTheLocalEndpointCount(t *testing.T) {
	f := newFixture(t, nil)
	port := int(testkit.FreeTCPPort(t))
	if err := f.p.Resync(controller.NewDBResync(), controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword), 1, st.NewTxn()); err != nil {
		t.Fatal(err)
	}

	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	svc.ServiceType, svc.ExternalTrafficPolicy, svc.HealthCheckNodePort = "LoadBalancer", "Local", int32(port)
	svc.LbIngressIps = []string{"192.0.2.10"}
	txn := st.NewTxn()
	if _, err := f.p.Update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("web", "default"), NewValue: svc}, txn); err != nil {
		t.Fatal(err)
	}
	// The node IP's port leads to the host, where the server listens.
	mapping, _ := txn.Get(vpp_nat.DNAT44Key(healthcheck.MappingLabel(renderer.ServiceID{Namespace: "default", Name: "web"}))).(*vpp_nat.DNat44)
	if sm := mapping.GetStMappings(); len(sm) != 1 || sm[0].GetExternalIp() != "192.168.16.10" || sm[0].GetExternalPort() != uint32(port) ||
		len(sm[0].GetLocalIps()) != 1 || sm[0].GetLocalIps()[0].GetLocalPort() != uint32(port) {
		t.Errorf("health check port mapping %v, want 192.168.16.10:%d to the host's port %d", mapping, port, port)
	}
	if status, n, err := healthz(t, port); err != nil || status != http.StatusServiceUnavailable || n != 0 {
		t.Fatalf("without endpoints: %d, %d local endpoints, %v; want 503, 0", status, n, err)
	}

	// One endpoint on this node (its pod subnet), one on another.
	eps := st.Endpoints("default", "web", st.Subset([]st.Addr{st.PodAddr("10.1.1.3", "default", "a"), st.PodAddr("10.1.2.3", "default", "b")}, st.EpPort("http", 80, "")))
	if _, err := f.p.Update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key("web", "default"), NewValue: eps}, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	if status, n, err := healthz(t, port); err != nil || status != http.StatusOK || n != 1 {
		t.Fatalf("with a local endpoint: %d, %d local endpoints, %v; want 200, 1", status, n, err)
	}

	// The Service goes: the port closes.
	if _, err := f.p.Update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("web", "default"), PrevValue: svc}, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := healthz(t, port); err == nil {
		t.Fatal("the health check port still answers after the Service was deleted")
	}
}

func TestSourceRangesFilterTheMainInterface(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.p.Resync(controller.NewDBResync(), controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword), 1, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	svc.ServiceType, svc.LbIngressIps, svc.LoadbalancerSourceRanges = "LoadBalancer", []string{"192.0.2.10"}, []string{"198.51.100.0/24"}
	txn := st.NewTxn()
	change, err := f.p.Update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("web", "default"), NewValue: svc}, txn)
	if err != nil || !strings.Contains(change, "add LB source ranges of 'default/web'") {
		t.Fatalf("Update = %q, %v", change, err)
	}
	name := lbfirewall.ACLName(renderer.ServiceID{Namespace: "default", Name: "web"})
	want := &vpp_acl.InterfaceACLs{Interface: "GbE", InputAcls: []string{name, lbfirewall.PermitRestName}}
	if got := txn.Get(vpp_acl.InterfaceKey("GbE")); !proto.Equal(got, want) {
		t.Errorf("main interface lists %v, want %v", got, want)
	}
	if txn.Get(vpp_acl.ACLKey(name)) == nil || txn.Get(vpp_acl.ACLKey(lbfirewall.PermitRestName)) == nil {
		t.Errorf("ACLs not staged: %v", txn.Keys())
	}
}

func TestHealthCheckReportsTheAgentUnhealthyWhileStartingOrFailed(t *testing.T) {
	reg := health.NewRegistry()
	healthy := agentHealthy(reg)
	vpp := reg.Reporter("vpp")
	for _, tc := range []struct {
		state health.State
		want  bool
	}{{health.Init, false}, {health.OK, true}, {health.Degraded, true}, {health.Error, false}} {
		vpp.Report(tc.state, "test")
		if got := healthy(); got != tc.want {
			t.Errorf("agent %s: healthy %v, want %v", tc.state, got, tc.want)
		}
	}
}

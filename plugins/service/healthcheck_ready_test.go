package service

import (
	"net/http"
	"testing"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// TestHealthCheckNodePortFailsWhileTheLocalEndpointIsOnlyTerminating: an eTP Local
// LoadBalancer Service whose only local endpoint (an EndpointSlice) is first ready,
// then serving and terminating: the health check node port answers 200 with one local
// endpoint, then 503 with none (kube-proxy counts local ready endpoints only), although
// the terminating endpoint still carries the Service's traffic (the fallback).
func TestHealthCheckNodePortFailsWhileTheLocalEndpointIsOnlyTerminating(t *testing.T) {
	f := newFixture(t, nil)
	port := int(testkit.FreeTCPPort(t))
	kube := controller.NewKubeStateData(svcmodel.Keyword, esmodel.Keyword)
	if err := f.p.Resync(controller.NewDBResync(), kube, 1, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	svc.ServiceType, svc.ExternalTrafficPolicy, svc.HealthCheckNodePort = "LoadBalancer", "Local", int32(port)
	svc.LbIngressIps = []string{"192.0.2.10"}
	if _, err := f.p.Update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("web", "default"), NewValue: svc}, st.NewTxn()); err != nil {
		t.Fatal(err)
	}

	slice := func(ready bool) *esmodel.EndpointSlice {
		return &esmodel.EndpointSlice{Name: "web-abcde", Namespace: "default", ServiceName: "web", AddressType: "IPv4",
			Ports: []*esmodel.Port{{Name: "http", Protocol: "TCP", Port: 8080}},
			Endpoints: []*esmodel.Endpoint{{Addresses: []string{"10.1.1.3"}, Ready: ready, Serving: true, Terminating: !ready,
				TargetRef: &esmodel.ObjectReference{Kind: "Pod", Namespace: "default", Name: "a"}}}}
	}
	key := esmodel.Key("web-abcde", "default")
	prev := slice(true)
	if _, err := f.p.Update(&controller.KubeStateChange{Resource: esmodel.Keyword, Key: key, NewValue: prev}, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	if status, n, err := healthz(t, port); err != nil || status != http.StatusOK || n != 1 {
		t.Fatalf("with a ready local endpoint: %d, %d local endpoints, %v; want 200, 1", status, n, err)
	}

	txn := st.NewTxn()
	if _, err := f.p.Update(&controller.KubeStateChange{Resource: esmodel.Keyword, Key: key, PrevValue: prev, NewValue: slice(false)}, txn); err != nil {
		t.Fatal(err)
	}
	if status, n, err := healthz(t, port); err != nil || status != http.StatusServiceUnavailable || n != 0 {
		t.Fatalf("with only a terminating local endpoint: %d, %d local endpoints, %v; want 503, 0", status, n, err)
	}
}

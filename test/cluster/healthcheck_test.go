package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// healthz GETs /healthz of a health check node port from d and returns an error unless
// it answers status with localEndpoints local endpoints.
func healthz(d dialer, addr string, status, localEndpoints int) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: d, DisableKeepAlives: true}, Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + addr + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		LocalEndpoints int `json:"localEndpoints"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("GET %s/healthz: status %d, body: %w", addr, resp.StatusCode, err)
	}
	if resp.StatusCode != status || body.LocalEndpoints != localEndpoints {
		return fmt.Errorf("GET %s/healthz: status %d with %d local endpoints, want %d with %d",
			addr, resp.StatusCode, body.LocalEndpoints, status, localEndpoints)
	}
	return nil
}

// TestTheHealthCheckNodePortCountsOnlyReadyLocalEndpoints (issue #26 item 8): an
// externalTrafficPolicy Local LoadBalancer Service with one endpoint, on node1; from the
// external client, node1's health check node port answers 200 with one local endpoint
// and node2's 503 with none. Once the endpoint's pod is deleted (a long grace period: it
// keeps serving, serving and terminating but not ready), node1 answers 503 with none, as
// kube-proxy does, so that load balancers drain the node.
func TestTheHealthCheckNodePortCountsOnlyReadyLocalEndpoints(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "healthcheck")
	nodes := l.Nodes()
	p := echoPod("hc", "hc", nodes[0].Name)
	p.Spec.TerminationGracePeriodSeconds = new(int64(300))
	backend := startPod(t, l, ns, p)
	client := fromNetns(l.ClientNetns)
	// The backend exits when the test ends, so that the namespace goes without waiting
	// for its grace period.
	t.Cleanup(func() { _, _ = podHTTP(client, http.MethodPost, backend.Status.PodIP, lab.ExitPath) })
	svc := echoService("hc", "hc", corev1.ServiceTypeLoadBalancer, "")
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	svc = createService(t, l, ns, svc)
	port := strconv.Itoa(int(svc.Spec.HealthCheckNodePort))
	if svc.Spec.HealthCheckNodePort == 0 {
		t.Fatal("the API server gave the Service no healthCheckNodePort")
	}
	withEndpoint := net.JoinHostPort(nodes[0].IP.String(), port)
	without := net.JoinHostPort(nodes[1].IP.String(), port)
	testkit.Eventually(t, 30*time.Second, "health check of "+withEndpoint+": 200, 1 local endpoint", func() error {
		return healthz(client, withEndpoint, http.StatusOK, 1)
	})
	testkit.Eventually(t, 30*time.Second, "health check of "+without+": 503, none", func() error {
		return healthz(client, without, http.StatusServiceUnavailable, 0)
	})

	ctx := testCtx(t, time.Minute)
	if err := l.Kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", p.Name, err)
	}
	waitEndpoint(t, l, ns, "hc", backend.Status.PodIP, "ready=false serving=true terminating=true")
	testkit.Eventually(t, 30*time.Second, "health check of "+withEndpoint+" with only a terminating endpoint: 503, none", func() error {
		return healthz(client, withEndpoint, http.StatusServiceUnavailable, 0)
	})
}

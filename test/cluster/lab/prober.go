package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The defaults of a Probe's fields (the API's).
const (
	defaultProbePeriod    = 10 * time.Second
	defaultProbeTimeout   = time.Second
	defaultProbeFailures  = 3
	defaultProbeSuccesses = 1
)

// startProbes runs the readiness probe of every container that has one, as kubelet's
// prober does: the container is not ready until the probe succeeded successThreshold
// times in a row, and no longer ready after failureThreshold failures in a row; each
// change syncs the pod, so its status follows. httpGet and tcpSocket probes connect to
// the pod's IP from the pod's own network namespace (the lab's kubelet has no address in
// the node's pod network, and a probe must not depend on the dataplane under test); exec
// and grpc probes are not run and count as passing.
func (k *kubelet) startProbes(key string, pod *corev1.Pod, sb *sandbox) {
	ctx, cancel := context.WithCancel(k.runCtx)
	sb.stopProbes = cancel
	for _, c := range pod.Spec.Containers {
		if c.ReadinessProbe == nil {
			continue
		}
		k.wg.Go(func() { k.runProbe(ctx, key, sb, c) })
	}
}

// runProbe probes one container until ctx ends.
func (k *kubelet) runProbe(ctx context.Context, key string, sb *sandbox, c corev1.Container) {
	p := c.ReadinessProbe
	period := seconds(p.PeriodSeconds, defaultProbePeriod)
	failureThreshold := int(orDefault(p.FailureThreshold, defaultProbeFailures))
	successThreshold := int(orDefault(p.SuccessThreshold, defaultProbeSuccesses))
	if p.InitialDelaySeconds > 0 {
		t := k.clock.NewTimer(time.Duration(p.InitialDelaySeconds) * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
	ticker := k.clock.NewTicker(period)
	defer ticker.Stop()
	successes, failures := 0, 0
	for {
		err := k.probeOnce(ctx, sb, c, seconds(p.TimeoutSeconds, defaultProbeTimeout))
		if err == nil {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
		}
		k.mu.Lock()
		was := sb.ready[c.Name]
		now := was
		switch {
		case successes >= successThreshold:
			now = true
		case failures >= failureThreshold:
			now = false
		}
		sb.ready[c.Name] = now
		k.mu.Unlock()
		if now != was {
			k.logf("kubelet %s: pod %s container %s: ready %v (probe: %v)", k.node, key, c.Name, now, err)
			k.queue.Add(key)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// probeOnce runs one probe of the container: nil when it passes.
func (k *kubelet) probeOnce(ctx context.Context, sb *sandbox, c corev1.Container, timeout time.Duration) error {
	p := c.ReadinessProbe
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := DialerIn(netnsPath(sb.netns))
	switch {
	case p.HTTPGet != nil:
		if p.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			return fmt.Errorf("httpGet with scheme HTTPS: the lab's containers serve HTTP only")
		}
		port, err := probePort(c, p.HTTPGet.Port)
		if err != nil {
			return err
		}
		client := &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
		host := sb.ips[0].String()
		if p.HTTPGet.Host != "" {
			host = p.HTTPGet.Host
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			"http://"+net.JoinHostPort(host, strconv.Itoa(port))+p.HTTPGet.Path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe: %s", resp.Status)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := probePort(c, p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := dial(ctx, "tcp", net.JoinHostPort(sb.ips[0].String(), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return nil // exec, grpc: not run
}

// probePort resolves a probe's port, a number or the name of a container port.
func probePort(c corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("probe port %q: no container port of %s has that name", port.StrVal, c.Name)
}

// seconds is n seconds, or def when n is 0 (unset).
func seconds(n int32, def time.Duration) time.Duration {
	if n <= 0 {
		return def
	}
	return time.Duration(n) * time.Second
}

// orDefault is n, or def when n is 0 (unset).
func orDefault(n, def int32) int32 {
	if n <= 0 {
		return def
	}
	return n
}

package convert

import (
	"net"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func cidr(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestServiceLimitsDropOutOfRangePortsAndIPs(t *testing.T) {
	limits := ServiceLimits{NodePortMin: 30000, NodePortMax: 32767, ServiceCIDRs: []*net.IPNet{cidr(t, "10.96.0.0/12")}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeNodePort,
			ClusterIP: "10.1.1.5", // a pod's IP, outside the service CIDR
			Ports: []corev1.ServicePort{
				{Name: "ok", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080},
				{Name: "big-port", Port: 70000},
				{Name: "big-target", Port: 81, TargetPort: intstr.FromInt32(99999)},
				{Name: "big-nodeport", Port: 82, NodePort: 99999},
				{Name: "low-nodeport", Port: 83, NodePort: 80},
			},
			ExternalIPs: []string{"192.0.2.1", "not-an-ip"},
		},
	}
	out, err := Service(svc)
	if err != nil {
		t.Fatal(err)
	}
	problems := limits.Sanitize(out)
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	want := []string{
		`clusterIP: "10.1.1.5" is outside the service CIDR 10.96.0.0/12: the service is written without its cluster IP`,
		`ports[big-port].port: 70000 is not in 1-65535: the port is left out`,
		`ports[big-target].targetPort: 99999 is not in 1-65535: the port is left out`,
		`ports[big-nodeport].nodePort: 99999 is outside the node port range 30000-32767: the port is written without its node port`,
		`ports[low-nodeport].nodePort: 80 is outside the node port range 30000-32767: the port is written without its node port`,
		`externalIPs: "not-an-ip" is not an IP address: left out`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out.GetClusterIp() != "" {
		t.Errorf("cluster IP %q kept", out.GetClusterIp())
	}
	var ports []string
	for _, p := range out.GetPort() {
		ports = append(ports, p.GetName()+":"+strconv.Itoa(int(p.GetPort()))+"/"+strconv.Itoa(int(p.GetNodePort())))
	}
	if strings.Join(ports, " ") != "ok:80/30080 big-nodeport:82/0 low-nodeport:83/0" {
		t.Errorf("ports %v", ports)
	}
	if strings.Join(out.GetExternalIps(), ",") != "192.0.2.1" {
		t.Errorf("external IPs %v", out.GetExternalIps())
	}
}

func TestServiceLimitsKeepValidServices(t *testing.T) {
	limits := DefaultServiceLimits()
	for _, clusterIP := range []string{"", "None", "10.96.0.10", "172.16.0.1"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
			Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Port: 65535, TargetPort: intstr.FromString("http"), NodePort: 32767}}}}
		out, _ := Service(svc)
		if p := limits.Sanitize(out); len(p) != 0 {
			t.Errorf("cluster IP %q: %v (no service CIDR configured: not checked)", clusterIP, p)
		}
	}
}

func TestParseLimits(t *testing.T) {
	if lo, hi, err := ParseNodePortRange("30000-32767"); err != nil || lo != 30000 || hi != 32767 {
		t.Errorf("ParseNodePortRange = %d %d %v", lo, hi, err)
	}
	for _, bad := range []string{"", "30000", "5-4", "0-10", "1-70000", "a-b"} {
		if _, _, err := ParseNodePortRange(bad); err == nil {
			t.Errorf("ParseNodePortRange(%q) accepted", bad)
		}
	}
	if n, err := ParseServiceCIDRs("10.96.0.0/12, fd00::/108"); err != nil || len(n) != 2 {
		t.Errorf("ParseServiceCIDRs = %v %v", n, err)
	}
	if _, err := ParseServiceCIDRs("10.96.0.0"); err == nil {
		t.Error("ParseServiceCIDRs accepted an address without a prefix")
	}
}

func TestServiceLimitsCheckEveryClusterIPAndKeepFamiliesAligned(t *testing.T) {
	limits := ServiceLimits{NodePortMin: 30000, NodePortMax: 32767,
		ServiceCIDRs: []*net.IPNet{cidr(t, "10.96.0.0/12"), cidr(t, "fd00::/108")}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Type:       corev1.ServiceTypeLoadBalancer,
		ClusterIP:  "10.96.0.10",
		ClusterIPs: []string{"10.96.0.10", "fd01::10"}, // the IPv6 one outside
		IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
	}, Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		{IP: "bad", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}, {IP: "192.0.2.1", IPMode: ptr(corev1.LoadBalancerIPModeProxy)},
	}}}}
	out, err := Service(svc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range limits.Sanitize(out) {
		got = append(got, p.Error())
	}
	want := []string{
		`clusterIPs[1]: "fd01::10" is outside the service CIDR 10.96.0.0/12,fd00::/108: left out`,
		`status.loadBalancer.ingress.ip: "bad" is not an IP address: left out`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(out.GetClusterIps(), ",") != "10.96.0.10" || strings.Join(out.GetIpFamilies(), ",") != "IPv4" {
		t.Errorf("cluster IPs %v families %v, want the IPv4 pair", out.GetClusterIps(), out.GetIpFamilies())
	}
	if strings.Join(out.GetLbIngressProxyIps(), ",") != "192.0.2.1" {
		t.Errorf("proxy ingress IPs %v, want the valid one only", out.GetLbIngressProxyIps())
	}
}

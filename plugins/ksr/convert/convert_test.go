//lint:file-ignore SA1019 the Endpoints API is deprecated in Kubernetes but is what the model reflects.

package convert

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

func ptr[T any](v T) *T { return &v }

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// checkProto compares a conversion result with the expectation.
func checkProto(t *testing.T, got, want proto.Message, err error, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", prototext.Format(got), prototext.Format(want))
	}
}

func TestPod(t *testing.T) {
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-1",
			Labels:      map[string]string{"tier": "web", "app": "shop"},
			Annotations: map[string]string{"contivpp.io/custom-if": "memif1/memif"},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 1}}},
				{Name: "proxy", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), // a native sidecar
					Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}},
			},
			Containers: []corev1.Container{
				{Name: "nginx", Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP, HostPort: 5353, HostIP: "10.20.0.10"},
					{Name: "noproto", ContainerPort: 8080},
					{Name: "sctp", ContainerPort: 9999, Protocol: corev1.ProtocolSCTP},
				}},
				{Name: "sidecar"},
			},
		},
		Status: corev1.PodStatus{PodIP: "10.1.1.2", HostIP: "10.20.0.10"},
	}
	tests := []struct {
		name    string
		in      *corev1.Pod
		want    *pod.Pod
		wantErr string
	}{
		{name: "every field", in: full, want: &pod.Pod{
			Name: "web-1", Namespace: "default",
			Label:         []*pod.Pod_Label{{Key: "app", Value: "shop"}, {Key: "tier", Value: "web"}},
			IpAddress:     "10.1.1.2",
			HostIpAddress: "10.20.0.10",
			Container: []*pod.Pod_Container{
				{Name: "nginx", Port: []*pod.Pod_Container_Port{
					{Name: "http", ContainerPort: 80, Protocol: pod.Pod_Container_Port_TCP},
					{Name: "dns", ContainerPort: 53, Protocol: pod.Pod_Container_Port_UDP, HostPort: 5353, HostIpAddress: "10.20.0.10"},
					{Name: "noproto", ContainerPort: 8080, Protocol: pod.Pod_Container_Port_TCP},
				}},
				{Name: "sidecar"},
				{Name: "proxy", Port: []*pod.Pod_Container_Port{{Name: "metrics", ContainerPort: 9090, Protocol: pod.Pod_Container_Port_TCP}}},
			},
			Annotations: map[string]string{"contivpp.io/custom-if": "memif1/memif"},
		}},
		{name: "dual-stack pod: every IP, the primary also alone", in: &corev1.Pod{ObjectMeta: meta("ns", "p"),
			Status: corev1.PodStatus{PodIP: "10.1.1.2", PodIPs: []corev1.PodIP{{IP: "10.1.1.2"}, {IP: "fd00:1:1::2"}}}},
			want: &pod.Pod{Name: "p", Namespace: "ns", IpAddress: "10.1.1.2", IpAddresses: []string{"10.1.1.2", "fd00:1:1::2"}}},
		{name: "single-stack IPv6 pod", in: &corev1.Pod{ObjectMeta: meta("ns", "p"),
			Status: corev1.PodStatus{PodIP: "fd00:1:1::2", PodIPs: []corev1.PodIP{{IP: "fd00:1:1::2"}}}},
			want: &pod.Pod{Name: "p", Namespace: "ns", IpAddress: "fd00:1:1::2", IpAddresses: []string{"fd00:1:1::2"}}},
		{name: "podIPs without podIP (a cluster file): the first is the primary", in: &corev1.Pod{ObjectMeta: meta("ns", "p"),
			Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "fd00:1:1::2"}, {IP: "10.1.1.2"}}}},
			want: &pod.Pod{Name: "p", Namespace: "ns", IpAddress: "fd00:1:1::2", IpAddresses: []string{"fd00:1:1::2", "10.1.1.2"}}},
		{name: "annotations agents do not read are left out", in: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
			Annotations: map[string]string{"example.com/blob": "x", pod.MicroserviceLabelAnnotation: "web"}}},
			want: &pod.Pod{Name: "p", Namespace: "ns", Annotations: map[string]string{pod.MicroserviceLabelAnnotation: "web"}}},
		{name: "pending pod without IPs", in: &corev1.Pod{ObjectMeta: meta("ns", "p")},
			want: &pod.Pod{Name: "p", Namespace: "ns"}},
		{name: "no name", in: &corev1.Pod{ObjectMeta: meta("ns", "")}, wantErr: "no name"},
		{name: "no namespace", in: &corev1.Pod{ObjectMeta: meta("", "p")}, wantErr: "pod p: no namespace"},
		{name: "nil", in: nil, wantErr: "nil object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Pod(tc.in)
			checkProto(t, got, tc.want, err, tc.wantErr)
		})
	}
}

func TestService(t *testing.T) {
	base := func(mod func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: meta("default", "web"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", SessionAffinity: corev1.ServiceAffinityNone,
		}}
		if mod != nil {
			mod(s)
		}
		return s
	}
	want := func(mod func(*service.Service)) *service.Service {
		s := &service.Service{Name: "web", Namespace: "default", ClusterIp: "10.96.0.10",
			ServiceType: "ClusterIP", SessionAffinity: "None"}
		if mod != nil {
			mod(s)
		}
		return s
	}
	num := func(n int32) *service.Service_ServicePort_IntOrString {
		return &service.Service_ServicePort_IntOrString{Type: service.Service_ServicePort_IntOrString_NUMBER, IntVal: n}
	}
	tests := []struct {
		name    string
		in      *corev1.Service
		want    *service.Service
		wantErr string
	}{
		{name: "minimal cluster IP service", in: base(nil), want: want(nil)},
		{name: "ports: protocol, target port by number, by name, defaulted; node port",
			in: base(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080},
					{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromString("dns")},
					{Name: "plain", Port: 443},
				}
			}),
			want: want(func(s *service.Service) {
				s.ServiceType = "NodePort"
				s.ExternalTrafficPolicy = "Local"
				s.Port = []*service.Service_ServicePort{
					{Name: "http", Protocol: "TCP", Port: 80, TargetPort: num(8080), NodePort: 30080},
					{Name: "dns", Protocol: "UDP", Port: 53, TargetPort: &service.Service_ServicePort_IntOrString{
						Type: service.Service_ServicePort_IntOrString_STRING, StringVal: "dns"}},
					{Name: "plain", Protocol: "TCP", Port: 443, TargetPort: num(443)},
				}
			})},
		{name: "ClientIP affinity without timeout gets 10800 s",
			in:   base(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }),
			want: want(func(s *service.Service) { s.SessionAffinity = "ClientIP"; s.SessionAffinityTimeout = 10800 })},
		{name: "ClientIP affinity with config but no timeout gets 10800 s",
			in: base(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{}}
			}),
			want: want(func(s *service.Service) { s.SessionAffinity = "ClientIP"; s.SessionAffinityTimeout = 10800 })},
		{name: "ClientIP affinity with timeout",
			in: base(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(60))}}
			}),
			want: want(func(s *service.Service) { s.SessionAffinity = "ClientIP"; s.SessionAffinityTimeout = 60 })},
		{name: "no affinity: timeout 0 even when configured",
			in: base(func(s *corev1.Service) {
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(60))}}
			}),
			want: want(nil)},
		{name: "load balancer: ingress IPs (host names skipped), LB IP, source ranges, health check port",
			in: base(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Spec.LoadBalancerIP = "192.0.2.10"
				s.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 32000
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}, {Hostname: "lb.example.com"}, {IP: "192.0.2.11"}}
			}),
			want: want(func(s *service.Service) {
				s.ServiceType = "LoadBalancer"
				s.LoadbalancerIp = "192.0.2.10"
				s.LoadbalancerSourceRanges = []string{"198.51.100.0/24"}
				s.ExternalTrafficPolicy = "Local"
				s.HealthCheckNodePort = 32000
				s.LbIngressIps = []string{"192.0.2.10", "192.0.2.11"}
			})},
		{name: "external IPs, selector, annotations",
			in: base(func(s *corev1.Service) {
				s.Spec.ExternalIPs = []string{"20.0.0.1", "20.0.0.2"}
				s.Spec.Selector = map[string]string{"app": "web"}
				s.Annotations = map[string]string{"note": "x"}
			}),
			want: want(func(s *service.Service) {
				s.ExternalIps = []string{"20.0.0.1", "20.0.0.2"}
				s.Selector = map[string]string{"app": "web"}
				s.Annotations = map[string]string{"note": "x"}
			})},
		{name: "v1.34 fields: labels, dual stack, traffic policies and distribution, ingress ipMode, class",
			in: base(func(s *corev1.Service) {
				s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "other"}
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
				s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyPreferDualStack)
				s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
				s.Spec.TrafficDistribution = ptr(corev1.ServiceTrafficDistributionPreferSameZone)
				s.Spec.PublishNotReadyAddresses = true
				s.Spec.LoadBalancerClass = ptr("example.com/lb")
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{
					{IP: "192.0.2.10", IPMode: ptr(corev1.LoadBalancerIPModeProxy)},
					{IP: "192.0.2.11", IPMode: ptr(corev1.LoadBalancerIPModeVIP)},
					{IP: "192.0.2.12"}, // unset: VIP
				}
			}),
			want: want(func(s *service.Service) {
				s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "other"}
				s.ServiceType = "LoadBalancer"
				s.ExternalTrafficPolicy = "Cluster"
				s.ClusterIps = []string{"10.96.0.10", "fd00::10"}
				s.IpFamilies = []string{"IPv4", "IPv6"}
				s.IpFamilyPolicy = "PreferDualStack"
				s.InternalTrafficPolicy = "Local"
				s.TrafficDistribution = "PreferSameZone"
				s.PublishNotReadyAddresses = true
				s.LoadBalancerClass = "example.com/lb"
				s.LbIngressIps = []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}
				s.LbIngressProxyIps = []string{"192.0.2.10"}
			})},
		{name: "headless", in: base(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }),
			want: want(func(s *service.Service) { s.ClusterIp = "None" })},
		{name: "API defaults filled for a file object",
			in:   &corev1.Service{ObjectMeta: meta("default", "web"), Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}},
			want: want(nil)},
		{name: "NodePort from a file gets the Cluster traffic policy",
			in:   &corev1.Service{ObjectMeta: meta("default", "web"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.10"}},
			want: want(func(s *service.Service) { s.ServiceType = "NodePort"; s.ExternalTrafficPolicy = "Cluster" })},
		{name: "no name", in: &corev1.Service{ObjectMeta: meta("default", "")}, wantErr: "no name"},
		{name: "nil", wantErr: "nil object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Service(tc.in)
			checkProto(t, got, tc.want, err, tc.wantErr)
		})
	}
}

func TestEndpoints(t *testing.T) {
	in := &corev1.Endpoints{ObjectMeta: meta("default", "web"), Subsets: []corev1.EndpointSubset{
		{
			Addresses: []corev1.EndpointAddress{
				{IP: "10.1.1.3", Hostname: "web-1", NodeName: ptr("k8s-master"), TargetRef: &corev1.ObjectReference{
					Kind: "Pod", Namespace: "default", Name: "web-1", UID: "uid-1", APIVersion: "v1", ResourceVersion: "42"}},
				{IP: "10.1.2.3"},
			},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.1.2.9", NodeName: ptr("k8s-worker1")}},
			Ports: []corev1.EndpointPort{
				{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP},
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				{Name: "plain", Port: 1},
			},
		},
		{Addresses: []corev1.EndpointAddress{{IP: "10.1.1.4"}}},
	}}
	want := &endpoints.Endpoints{Name: "web", Namespace: "default", EndpointSubsets: []*endpoints.EndpointSubset{
		{
			Addresses: []*endpoints.EndpointSubset_EndpointAddress{
				{Ip: "10.1.1.3", HostName: "web-1", NodeName: "k8s-master", TargetRef: &endpoints.ObjectReference{
					Kind: "Pod", Namespace: "default", Name: "web-1", Uid: "uid-1", ApiVersion: "v1", ResourceVersion: "42"}},
				{Ip: "10.1.2.3"},
			},
			NotReadyAddresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.2.9", NodeName: "k8s-worker1"}},
			Ports: []*endpoints.EndpointSubset_EndpointPort{
				{Name: "http", Port: 8080, Protocol: "TCP"},
				{Name: "dns", Port: 53, Protocol: "UDP"},
				{Name: "plain", Port: 1, Protocol: "TCP"},
			},
		},
		{Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.1.4"}}},
	}}
	got, err := Endpoints(in)
	checkProto(t, got, want, err, "")

	got, err = Endpoints(&corev1.Endpoints{ObjectMeta: meta("default", "empty")})
	checkProto(t, got, &endpoints.Endpoints{Name: "empty", Namespace: "default"}, err, "")
	_, err = Endpoints(&corev1.Endpoints{ObjectMeta: meta("", "x")})
	checkProto(t, nil, nil, err, "no namespace")
}

func slice(ns, name, svc string, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: meta(ns, name), AddressType: at, Ports: ports, Endpoints: eps}
	if svc != "" {
		s.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
	}
	return s
}

func TestEndpointsFromSlicesMergesByPortSet(t *testing.T) {
	web := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}}
	webAndDNS := []discoveryv1.EndpointPort{ // same set as the next one, listed in another order
		{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: ptr(corev1.ProtocolUDP)},
		{Name: ptr("http"), Port: ptr(int32(8080))},
	}
	webAndDNS2 := []discoveryv1.EndpointPort{webAndDNS[1], webAndDNS[0]}
	ep := func(ip string, ready *bool, node string) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		if node != "" {
			e.NodeName = ptr(node)
		}
		return e
	}
	withRef := ep("10.1.1.2", ptr(true), "k8s-master")
	withRef.Hostname = ptr("web-0")
	withRef.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u0"}
	slices := []*discoveryv1.EndpointSlice{
		slice("default", "web-a", "web", discoveryv1.AddressTypeIPv4, web,
			ep("10.1.2.5", nil, "k8s-worker1"), // nil ready counts as ready
			withRef,
			ep("10.1.2.6", ptr(false), "k8s-worker1"),
			discoveryv1.Endpoint{}, // no address: skipped
		),
		slice("default", "web-b", "web", discoveryv1.AddressTypeIPv4, webAndDNS, ep("10.1.1.7", ptr(true), "")),
		slice("default", "web-c", "web", discoveryv1.AddressTypeIPv4, webAndDNS2,
			ep("10.1.1.3", ptr(true), ""), ep("10.1.1.7", ptr(false), "")), // 10.1.1.7 ready in web-b: stays ready
		slice("default", "web-d", "web", discoveryv1.AddressTypeIPv4, web, ep("10.1.2.6", ptr(true), "k8s-worker1")), // ready wins
		slice("default", "web-fqdn", "web", discoveryv1.AddressTypeFQDN, web, ep("web.example.com", nil, "")),
		slice("default", "other", "other", discoveryv1.AddressTypeIPv4, web, ep("10.9.9.9", nil, "")),
		slice("kube-system", "web-x", "web", discoveryv1.AddressTypeIPv4, web, ep("10.9.9.8", nil, "")),
		slice("default", "empty", "web", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{{Name: ptr("unused")}}),
		nil,
	}
	want := &endpoints.Endpoints{Name: "web", Namespace: "default", EndpointSubsets: []*endpoints.EndpointSubset{
		{
			Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.1.3"}, {Ip: "10.1.1.7"}},
			Ports: []*endpoints.EndpointSubset_EndpointPort{
				{Name: "dns", Port: 53, Protocol: "UDP"}, {Name: "http", Port: 8080, Protocol: "TCP"},
			},
		},
		{
			Addresses: []*endpoints.EndpointSubset_EndpointAddress{
				{Ip: "10.1.1.2", HostName: "web-0", NodeName: "k8s-master", TargetRef: &endpoints.ObjectReference{
					Kind: "Pod", Namespace: "default", Name: "web-0", Uid: "u0"}},
				{Ip: "10.1.2.5", NodeName: "k8s-worker1"},
				{Ip: "10.1.2.6", NodeName: "k8s-worker1"},
			},
			Ports: []*endpoints.EndpointSubset_EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}},
		},
	}}
	got, err := EndpointsFromSlices("default", "web", slices)
	checkProto(t, got, want, err, "")

	// The result does not depend on the order of the slices.
	rev := make([]*discoveryv1.EndpointSlice, len(slices))
	for i, s := range slices {
		rev[len(slices)-1-i] = s
	}
	got, err = EndpointsFromSlices("default", "web", rev)
	checkProto(t, got, want, err, "")

	got, err = EndpointsFromSlices("default", "web", []*discoveryv1.EndpointSlice{slices[7]})
	checkProto(t, got, &endpoints.Endpoints{Name: "web", Namespace: "default"}, err, "")

	got, err = EndpointsFromSlices("default", "web", []*discoveryv1.EndpointSlice{
		slice("default", "nr", "web", discoveryv1.AddressTypeIPv6, nil, ep("fd00::5", ptr(false), "")),
	})
	checkProto(t, got, &endpoints.Endpoints{Name: "web", Namespace: "default", EndpointSubsets: []*endpoints.EndpointSubset{
		{NotReadyAddresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "fd00::5"}}},
	}}, err, "")
}

func TestNode(t *testing.T) {
	in := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "k8s-master", Labels: map[string]string{"ignored": "yes", corev1.LabelTopologyZone: "zone-a"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.1.1.0/24", PodCIDRs: []string{"10.1.1.0/24", "fd00:1:1::/64"},
			ProviderID: "sim://k8s-master"},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{ // dual-stack: an InternalIP and an ExternalIP of each family
				{Type: corev1.NodeInternalIP, Address: "10.20.0.10"},
				{Type: corev1.NodeInternalIP, Address: "fd20::10"},
				{Type: corev1.NodeHostName, Address: "k8s-master"},
				{Type: corev1.NodeExternalIP, Address: "198.51.100.10"},
				{Type: corev1.NodeExternalIP, Address: "2001:db8::10"},
				{Type: corev1.NodeExternalDNS, Address: "master.example.com"},
				{Type: corev1.NodeInternalDNS, Address: "master.cluster.local"},
				{Type: "Weird", Address: "x"},
			},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: "m", SystemUUID: "s", BootID: "b", KernelVersion: "6.1", OSImage: "Ubuntu",
				ContainerRuntimeVersion: "containerd://2.0", KubeletVersion: "v1.34.1", KubeProxyVersion: "v1.30.0",
				OperatingSystem: "linux", Architecture: "amd64",
			},
		},
	}
	want := &node.Node{
		Name: "k8s-master", Pod_CIDR: "10.1.1.0/24", Pod_CIDRs: []string{"10.1.1.0/24", "fd00:1:1::/64"},
		Provider_ID: "sim://k8s-master", Zone: "zone-a",
		Addresses: []*node.NodeAddress{
			{Type: node.NodeAddress_NodeInternalIP, Address: "10.20.0.10"},
			{Type: node.NodeAddress_NodeInternalIP, Address: "fd20::10"},
			{Type: node.NodeAddress_NodeHostName, Address: "k8s-master"},
			{Type: node.NodeAddress_NodeExternalIP, Address: "198.51.100.10"},
			{Type: node.NodeAddress_NodeExternalIP, Address: "2001:db8::10"},
			{Type: node.NodeAddress_NodeExternalDNS, Address: "master.example.com"},
			{Type: node.NodeAddress_NodeInternalDNS, Address: "master.cluster.local"},
			{Type: node.NodeAddress_NodeUnknownAddr, Address: "x"},
		},
		NodeInfo: &node.NodeSystemInfo{
			Machine_ID: "m", System_UUID: "s", Boot_ID: "b", KernelVersion: "6.1", OsImage: "Ubuntu",
			ContainerRuntimeVersion: "containerd://2.0", KubeletVersion: "v1.34.1", KubeProxyVersion: "v1.30.0",
			OperatingSystem: "linux", Architecture: "amd64",
		},
	}
	got, err := Node(in)
	checkProto(t, got, want, err, "")
	_, err = Node(&corev1.Node{})
	checkProto(t, nil, nil, err, "node: no name")
}

func TestNamespace(t *testing.T) {
	got, err := Namespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod",
		Labels: map[string]string{"team": "a", "env": "prod"}}})
	checkProto(t, got, &namespace.Namespace{Name: "prod", Label: []*namespace.Namespace_Label{
		{Key: "env", Value: "prod"}, {Key: "team", Value: "a"}}}, err, "")
	_, err = Namespace(nil)
	checkProto(t, nil, nil, err, "nil object")
}

func TestPolicy(t *testing.T) {
	tcp, udp, sctp := corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP
	port80, portName := intstr.FromInt32(80), intstr.FromString("http")
	base := func(mod func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
		p := &networkingv1.NetworkPolicy{ObjectMeta: meta("default", "deny")}
		if mod != nil {
			mod(p)
		}
		return p
	}
	tests := []struct {
		name    string
		in      *networkingv1.NetworkPolicy
		want    *policy.Policy
		wantErr string
	}{
		{name: "empty selector, no types: DEFAULT", in: base(nil),
			want: &policy.Policy{Name: "deny", Namespace: "default", Pods: &policy.Policy_LabelSelector{}}},
		{name: "every field", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Labels = map[string]string{"b": "2", "a": "1"}
			p.Spec.PodSelector = metav1.LabelSelector{
				MatchLabels: map[string]string{"role": "db", "app": "shop"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "stage"}},
					{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}},
					{Key: "x", Operator: metav1.LabelSelectorOpExists},
					{Key: "y", Operator: metav1.LabelSelectorOpDoesNotExist},
				},
			}
			p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{
				{
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port80}, {Protocol: &udp, Port: &portName}, {}},
					From: []networkingv1.NetworkPolicyPeer{
						{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
						{NamespaceSelector: &metav1.LabelSelector{}},
						{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}},
					},
				},
				{}, // allow all
			}
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}},
			}
		}), want: &policy.Policy{
			Name: "deny", Namespace: "default",
			Label: []*policy.Policy_Label{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}},
			Pods: &policy.Policy_LabelSelector{
				MatchLabel: []*policy.Policy_Label{{Key: "app", Value: "shop"}, {Key: "role", Value: "db"}},
				MatchExpression: []*policy.Policy_LabelSelector_LabelExpression{
					{Key: "env", Operator: policy.Policy_LabelSelector_LabelExpression_IN, Value: []string{"prod", "stage"}},
					{Key: "tier", Operator: policy.Policy_LabelSelector_LabelExpression_NOT_IN, Value: []string{"web"}},
					{Key: "x", Operator: policy.Policy_LabelSelector_LabelExpression_EXISTS},
					{Key: "y", Operator: policy.Policy_LabelSelector_LabelExpression_DOES_NOT_EXIST},
				},
			},
			PolicyType: policy.Policy_INGRESS_AND_EGRESS,
			IngressRule: []*policy.Policy_IngressRule{
				{
					Port: []*policy.Policy_Port{
						{Protocol: policy.Policy_Port_TCP, Port: &policy.Policy_Port_PortNameOrNumber{Type: policy.Policy_Port_PortNameOrNumber_NUMBER, Number: 80}},
						{Protocol: policy.Policy_Port_UDP, Port: &policy.Policy_Port_PortNameOrNumber{Type: policy.Policy_Port_PortNameOrNumber_NAME, Name: "http"}},
						{Protocol: policy.Policy_Port_TCP},
					},
					From: []*policy.Policy_Peer{
						{Pods: &policy.Policy_LabelSelector{MatchLabel: []*policy.Policy_Label{{Key: "app", Value: "web"}}}},
						{Namespaces: &policy.Policy_LabelSelector{}},
						{IpBlock: &policy.Policy_Peer_IPBlock{Cidr: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}},
					},
				},
				{},
			},
			EgressRule: []*policy.Policy_EgressRule{
				{To: []*policy.Policy_Peer{{IpBlock: &policy.Policy_Peer_IPBlock{Cidr: "0.0.0.0/0"}}}},
			},
		}},
		{name: "ingress only", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		}), want: &policy.Policy{Name: "deny", Namespace: "default", Pods: &policy.Policy_LabelSelector{}, PolicyType: policy.Policy_INGRESS}},
		{name: "egress only", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		}), want: &policy.Policy{Name: "deny", Namespace: "default", Pods: &policy.Policy_LabelSelector{}, PolicyType: policy.Policy_EGRESS}},
		{name: "SCTP without port: every SCTP port", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &sctp}}}}
		}), want: &policy.Policy{Name: "deny", Namespace: "default", Pods: &policy.Policy_LabelSelector{},
			IngressRule: []*policy.Policy_IngressRule{{Port: []*policy.Policy_Port{{Protocol: policy.Policy_Port_SCTP}}}}}},
		{name: "endPort range", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &port80, EndPort: ptr(int32(90))}}}}
		}), want: &policy.Policy{Name: "deny", Namespace: "default", Pods: &policy.Policy_LabelSelector{},
			EgressRule: []*policy.Policy_EgressRule{{Port: []*policy.Policy_Port{{Protocol: policy.Policy_Port_UDP, EndPort: 90,
				Port: &policy.Policy_Port_PortNameOrNumber{Type: policy.Policy_Port_PortNameOrNumber_NUMBER, Number: 80}}}}}}},
		{name: "both selectors in one peer are kept", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}},
			}}}}
		}), want: &policy.Policy{Name: "deny", Namespace: "default", Pods: &policy.Policy_LabelSelector{},
			IngressRule: []*policy.Policy_IngressRule{{From: []*policy.Policy_Peer{{
				Pods:       &policy.Policy_LabelSelector{MatchLabel: []*policy.Policy_Label{{Key: "app", Value: "web"}}},
				Namespaces: &policy.Policy_LabelSelector{MatchLabel: []*policy.Policy_Label{{Key: "team", Value: "x"}}},
			}}}}}},
		{name: "endPort below port refused", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &port80, EndPort: ptr(int32(79))}}}}
		}), wantErr: "egress[0]: ports[0]: endPort 79 is outside 80-65535"},
		{name: "endPort with a named port refused", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &portName, EndPort: ptr(int32(90))}}}}
		}), wantErr: "egress[0]: ports[0]: endPort 90 needs a numbered port"},
		{name: "port 0 refused", in: base(func(p *networkingv1.NetworkPolicy) {
			zero := intstr.FromInt32(0)
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &zero}}}}
		}), wantErr: "egress[0]: ports[0]: port 0 is outside 1-65535"},
		{name: "unknown protocol refused", in: base(func(p *networkingv1.NetworkPolicy) {
			icmp := corev1.Protocol("ICMP")
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &icmp}}}}
		}), wantErr: `ingress[0]: ports[0]: protocol "ICMP" is not supported`},
		{name: "unknown operator refused", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}}}}}
		}), wantErr: `ingress[0]: peers[0].namespaceSelector: matchExpressions[0]: unknown operator "Near"`},
		{name: "unknown policy type refused", in: base(func(p *networkingv1.NetworkPolicy) {
			p.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"}
		}), wantErr: `policyTypes: unknown policy type "Sideways"`},
		{name: "no namespace", in: &networkingv1.NetworkPolicy{ObjectMeta: meta("", "p")}, wantErr: "no namespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Policy(tc.in)
			checkProto(t, got, tc.want, err, tc.wantErr)
		})
	}
}

func TestSnapshotWritesSlicesLegacyEndpointsAndMirrors(t *testing.T) {
	port := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(80))}}
	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Pod{ObjectMeta: meta("default", "p1")},
		&corev1.Service{ObjectMeta: meta("default", "a")},
		&corev1.Service{ObjectMeta: meta("default", "b")},
		&corev1.Service{ObjectMeta: meta("default", "c")},
		// a has an Endpoints object and slices: both are written as they are.
		&corev1.Endpoints{ObjectMeta: meta("default", "a")},
		slice("default", "a-1", "a", discoveryv1.AddressTypeIPv4, port, discoveryv1.Endpoint{Addresses: []string{"10.1.1.9"}}),
		// b has slices only: its legacy value is made of them.
		slice("default", "b-1", "b", discoveryv1.AddressTypeIPv4, port, discoveryv1.Endpoint{Addresses: []string{"10.1.1.8"}}),
		// c has an Endpoints object only: it is mirrored into a slice.
		&corev1.Endpoints{ObjectMeta: meta("default", "c"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.1.1.7"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: 80}}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("default", "np")},
		&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}},
	}
	got, err := Snapshot(objs)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{
		"k8s/node/n1", "k8s/namespace/default", "k8s/pod/p1/namespace/default",
		"k8s/service/a/namespace/default", "k8s/service/b/namespace/default", "k8s/service/c/namespace/default",
		"k8s/endpoints/a/namespace/default", "k8s/endpoints/b/namespace/default", "k8s/endpoints/c/namespace/default",
		"k8s/endpointslice/a-1/namespace/default", "k8s/endpointslice/b-1/namespace/default",
		"k8s/endpointslice/c-mirror-0/namespace/default",
		"k8s/policy/np/namespace/default", "k8s/servicecidr/kubernetes",
	}
	if len(got) != len(wantKeys) {
		t.Errorf("%d keys, want %d: %v", len(got), len(wantKeys), got)
	}
	for _, k := range wantKeys {
		if got[k] == nil {
			t.Errorf("key %s missing", k)
		}
	}
	if eps := got["k8s/endpoints/a/namespace/default"].(*endpoints.Endpoints); len(eps.EndpointSubsets) != 0 {
		t.Errorf("endpoints a = %v, want the (empty) Endpoints object, not its slices", eps)
	}
	if eps := got["k8s/endpoints/b/namespace/default"].(*endpoints.Endpoints); len(eps.EndpointSubsets) != 1 ||
		eps.EndpointSubsets[0].Addresses[0].Ip != "10.1.1.8" {
		t.Errorf("endpoints b = %v, want the merged slice", eps)
	}
	checkProto(t, got["k8s/endpointslice/c-mirror-0/namespace/default"], &endpointslice.EndpointSlice{
		Name: "c-mirror-0", Namespace: "default", ServiceName: "c", AddressType: "IPv4", ManagedBy: MirrorManagedBy,
		Ports:     []*endpointslice.Port{{Name: "http", Protocol: "TCP", Port: 80}},
		Endpoints: []*endpointslice.Endpoint{{Addresses: []string{"10.1.1.7"}, Ready: true, Serving: true}},
	}, nil, "")
}

func TestSnapshotNamesEveryBadObject(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Pod{ObjectMeta: meta("default", "ok")},
		&corev1.Pod{ObjectMeta: meta("default", "ok")},
		&corev1.Service{ObjectMeta: meta("", "nons")},
		slice("default", "orphan", "", discoveryv1.AddressTypeIPv4, nil),
		&corev1.ConfigMap{ObjectMeta: meta("default", "cm")},
	}
	got, err := Snapshot(objs)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"k8s/pod/ok/namespace/default: defined twice",
		"service nons: no namespace",
		"endpoint slice default/orphan: no kubernetes.io/service-name label",
		"objects of type *v1.ConfigMap are not reflected",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(got) != 1 || got["k8s/pod/ok/namespace/default"] == nil {
		t.Errorf("values = %v, want the good pod only", got)
	}
	if Supported(&corev1.ConfigMap{}) || !Supported(&discoveryv1.EndpointSlice{}) {
		t.Error("Supported is wrong")
	}
}

package dbresources

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
)

// endpoints10 is the Endpoints value of the benchmarks: 10 ready addresses and one port,
// as contiv-ksr writes it for a Deployment of 10 replicas.
func endpoints10() *endpoints.Endpoints {
	ep := &endpoints.Endpoints{Name: "web-0", Namespace: "default"}
	sub := &endpoints.EndpointSubset{Ports: []*endpoints.EndpointSubset_EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}}
	for i := range 10 {
		sub.Addresses = append(sub.Addresses, &endpoints.EndpointSubset_EndpointAddress{
			Ip: fmt.Sprintf("10.1.%d.%d", i/4, 7+i), NodeName: fmt.Sprintf("node-%d", i%5),
		})
	}
	ep.EndpointSubsets = []*endpoints.EndpointSubset{sub}
	return ep
}

// serviceNodePort is the Service value of the benchmarks: two ports, NodePort.
func serviceNodePort() *service.Service {
	return &service.Service{
		Name: "web-0", Namespace: "default", ClusterIp: "10.96.12.34", ServiceType: "NodePort",
		Selector: map[string]string{"app": "web-0"},
		Port: []*service.Service_ServicePort{
			{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080,
				TargetPort: &service.Service_ServicePort_IntOrString{Type: service.Service_ServicePort_IntOrString_NUMBER, IntVal: 8080}},
			{Name: "metrics", Protocol: "TCP", Port: 9100, NodePort: 30910,
				TargetPort: &service.Service_ServicePort_IntOrString{Type: service.Service_ServicePort_IntOrString_STRING, StringVal: "metrics"}},
		},
		SessionAffinity: "None", ExternalTrafficPolicy: "Cluster",
	}
}

// podWithPort is the Pod value of the benchmarks: labels and one container port.
func podWithPort() *pod.Pod {
	return &pod.Pod{
		Name: "web-0-7d9f8c6b5-x2x4z", Namespace: "default", IpAddress: "10.1.3.17", HostIpAddress: "192.168.16.3",
		Label: []*pod.Pod_Label{{Key: "app", Value: "web-0"}, {Key: "pod-template-hash", Value: "7d9f8c6b5"}},
		Container: []*pod.Pod_Container{{Name: "web", Port: []*pod.Pod_Container_Port{
			{Name: "http", ContainerPort: 8080, Protocol: pod.Pod_Container_Port_TCP},
		}}},
	}
}

// realisticValues returns values of every resource as contiv-ksr and nodesync write
// them, by keyword; several per resource, covering every field of every message.
func realisticValues() map[string][]proto.Message {
	return map[string][]proto.Message{
		"vppnode": {
			&vppnode.VppNode{Id: 2, Name: "k8s-worker1", IpAddress: "192.168.16.2/24", IpAddresses: []string{"192.168.16.2/24", "fd00::2/64"}},
			&vppnode.VppNode{Id: 4294967295, Name: "max"},
		},
		"nodeconfig": {
			&nodeconfig.NodeConfig{NodeName: "k8s-worker1",
				MainVppInterface:   &nodeconfig.NodeConfig_InterfaceConfig{InterfaceName: "GigabitEthernet0/8/0", UseDhcp: true},
				OtherVppInterfaces: []*nodeconfig.NodeConfig_InterfaceConfig{{InterfaceName: "GigabitEthernet0/9/0", Ip: "10.20.0.2/24"}},
				StealInterface:     "eth1", Gateway: "10.20.0.1", NatExternalTraffic: true},
		},
		"node": {
			&node.Node{Name: "k8s-worker1", Pod_CIDR: "10.1.1.0/24", Provider_ID: "aws:///eu-west-1a/i-0abc",
				Addresses: []*node.NodeAddress{
					{Type: node.NodeAddress_NodeInternalIP, Address: "10.20.0.11"},
					{Type: node.NodeAddress_NodeHostName, Address: "k8s-worker1"},
					{Type: node.NodeAddress_NodeUnknownAddr, Address: "0.0.0.0"},
				},
				NodeInfo: &node.NodeSystemInfo{Machine_ID: "ab12", System_UUID: "EC2-1234", Boot_ID: "b00t",
					KernelVersion: "6.8.0-1009-aws", OsImage: "Ubuntu 24.04 LTS", ContainerRuntimeVersion: "containerd://1.7.12",
					KubeletVersion: "v1.34.1", KubeProxyVersion: "v1.34.1", OperatingSystem: "linux", Architecture: "amd64"}},
		},
		"pod": {
			podWithPort(),
			&pod.Pod{Name: "coredns-1", Namespace: "kube-system", IpAddress: "10.1.1.2",
				Annotations: map[string]string{
					"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}` + "\n",
					"note": "tab\tnewline\nquote\" backslash\\ é ☃ 😀 \u2028 <&>",
				},
				Container: []*pod.Pod_Container{{Name: "dns", Port: []*pod.Pod_Container_Port{
					{Name: "dns", ContainerPort: 53, Protocol: pod.Pod_Container_Port_UDP},
					{Name: "metrics", ContainerPort: 9153, HostPort: 9153, HostIpAddress: "0.0.0.0"},
				}}}},
		},
		"namespace": {
			&namespace.Namespace{Name: "default"},
			&namespace.Namespace{Name: "prod", Label: []*namespace.Namespace_Label{{Key: "team", Value: "a"}, {Key: "env", Value: ""}}},
		},
		"policy": {
			&policy.Policy{Name: "deny-all", Namespace: "default", PolicyType: policy.Policy_INGRESS},
			&policy.Policy{Name: "web", Namespace: "prod", PolicyType: policy.Policy_INGRESS_AND_EGRESS,
				Label: []*policy.Policy_Label{{Key: "k", Value: "v"}},
				Pods: &policy.Policy_LabelSelector{
					MatchLabel: []*policy.Policy_Label{{Key: "app", Value: "web"}},
					MatchExpression: []*policy.Policy_LabelSelector_LabelExpression{
						{Key: "tier", Operator: policy.Policy_LabelSelector_LabelExpression_NOT_IN, Value: []string{"db", "cache"}},
						{Key: "env", Operator: policy.Policy_LabelSelector_LabelExpression_EXISTS},
					}},
				IngressRule: []*policy.Policy_IngressRule{{
					Port: []*policy.Policy_Port{
						{Protocol: policy.Policy_Port_TCP, Port: &policy.Policy_Port_PortNameOrNumber{Number: 80}},
						{Protocol: policy.Policy_Port_SCTP, Port: &policy.Policy_Port_PortNameOrNumber{Type: policy.Policy_Port_PortNameOrNumber_NAME, Name: "http"}, EndPort: 90},
					},
					From: []*policy.Policy_Peer{
						{Pods: &policy.Policy_LabelSelector{MatchLabel: []*policy.Policy_Label{{Key: "app", Value: "fe"}}}},
						{Namespaces: &policy.Policy_LabelSelector{}},
						{IpBlock: &policy.Policy_Peer_IPBlock{Cidr: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}},
					}}},
				EgressRule: []*policy.Policy_EgressRule{{To: []*policy.Policy_Peer{{IpBlock: &policy.Policy_Peer_IPBlock{Cidr: "0.0.0.0/0"}}}}},
			},
		},
		"service": {
			serviceNodePort(),
			&service.Service{Name: "lb", Namespace: "prod", ClusterIp: "10.96.0.20", ServiceType: "LoadBalancer",
				ExternalIps: []string{"1.2.3.4"}, LbIngressIps: []string{"5.6.7.8"}, LoadbalancerIp: "5.6.7.8",
				LoadbalancerSourceRanges: []string{"0.0.0.0/0"}, ExternalTrafficPolicy: "Local", HealthCheckNodePort: 32000,
				SessionAffinity: "ClientIP", SessionAffinityTimeout: 10800,
				Annotations: map[string]string{"a": "b"}},
			&service.Service{Name: "dual", Namespace: "prod", ClusterIp: "10.96.0.30", ClusterIps: []string{"10.96.0.30", "fd00:10:96::30"},
				IpFamilies: []string{"IPv4", "IPv6"}, IpFamilyPolicy: "PreferDualStack", ServiceType: "LoadBalancer",
				LbIngressIps: []string{"5.6.7.9", "5.6.7.10"}, LbIngressProxyIps: []string{"5.6.7.10"},
				InternalTrafficPolicy: "Local", TrafficDistribution: "PreferClose", PublishNotReadyAddresses: true,
				LoadBalancerClass: "example.com/lb", Labels: map[string]string{"service.kubernetes.io/service-proxy-name": "other"}},
		},
		"endpoints": {
			endpoints10(),
			&endpoints.Endpoints{Name: "db", Namespace: "prod", LastChangeTriggerTimeUnixNano: 1764125000123456789,
				EndpointSubsets: []*endpoints.EndpointSubset{
					{Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.1.3", HostName: "db-0", NodeName: "n1",
						TargetRef: &endpoints.ObjectReference{Kind: "Pod", Namespace: "prod", Name: "db-0", Uid: "u-1", ApiVersion: "v1", ResourceVersion: "42"}}},
						NotReadyAddresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.2.3"}},
						Ports:             []*endpoints.EndpointSubset_EndpointPort{{Name: "pg", Port: 5432, Protocol: "TCP"}}},
					{Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "fd00::5"}}},
				}},
		},
		"endpointslice": {
			&endpointslice.EndpointSlice{Name: "web-x7k2p", Namespace: "default", ServiceName: "web", AddressType: "IPv4",
				ManagedBy: "endpointslice-controller.k8s.io", LastChangeTriggerTimeUnixNano: 1764125000123456789,
				Ports: []*endpointslice.Port{{Name: "http", Protocol: "TCP", Port: 8080, AppProtocol: "http"}},
				Endpoints: []*endpointslice.Endpoint{
					{Addresses: []string{"10.1.1.3"}, Ready: true, Serving: true, NodeName: "n1", Zone: "zone-a",
						HintsForZones: []string{"zone-a"}, HintsForNodes: []string{"n1"},
						TargetRef: &endpointslice.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", Uid: "u-1"}},
					{Addresses: []string{"10.1.2.4"}, Serving: true, Terminating: true, NodeName: "n2", Hostname: "web-1"},
				}},
			&endpointslice.EndpointSlice{Name: "db-v6", Namespace: "prod", ServiceName: "db", AddressType: "IPv6",
				Endpoints: []*endpointslice.Endpoint{{Addresses: []string{"fd00::5"}}}},
		},
		"servicecidr": {
			&servicecidr.ServiceCIDR{Name: "kubernetes", Cidrs: []string{"10.96.0.0/12", "fd00:10:96::/112"}, Ready: true},
			&servicecidr.ServiceCIDR{Name: "extra", Cidrs: []string{"10.100.0.0/16"}},
		},
		"ksrsync": {
			&ksrsync.SyncMarker{Resource: "pod", ListedAfterUnixNano: 1700000000123456789, Leader: "contiv-ksr-7d9f-x2k4", Term: 1234567},
		},
	}
}

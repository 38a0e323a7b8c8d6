package servicetest

import (
	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// Port returns a service port; protocol "" is TCP.
func Port(name, protocol string, port, nodePort int32) *svcmodel.Service_ServicePort {
	if protocol == "" {
		protocol = "TCP"
	}
	return &svcmodel.Service_ServicePort{
		Name: name, Protocol: protocol, Port: port, NodePort: nodePort,
		TargetPort: &svcmodel.Service_ServicePort_IntOrString{Type: svcmodel.Service_ServicePort_IntOrString_NUMBER, IntVal: port},
	}
}

// Service returns a ClusterIP service (type NodePort when a port has a node port).
func Service(ns, name, clusterIP string, ports ...*svcmodel.Service_ServicePort) *svcmodel.Service {
	svc := &svcmodel.Service{
		Name: name, Namespace: ns, ClusterIp: clusterIP, Port: ports, ServiceType: "ClusterIP",
		SessionAffinity: "None", ExternalTrafficPolicy: "Cluster",
	}
	for _, p := range ports {
		if p.NodePort != 0 {
			svc.ServiceType = "NodePort"
		}
	}
	return svc
}

// Addr is an endpoint address; pod "" means an address without a pod (host network
// endpoint given by hand, external endpoint).
type Addr struct {
	IP, PodNamespace, Pod string
}

// PodAddr is the address of a pod.
func PodAddr(ip, ns, pod string) Addr { return Addr{IP: ip, PodNamespace: ns, Pod: pod} }

// IPAddr is an address without a target pod.
func IPAddr(ip string) Addr { return Addr{IP: ip} }

// EpPort is a port of an endpoint subset; protocol "" is TCP.
func EpPort(name string, port int32, protocol string) *epmodel.EndpointSubset_EndpointPort {
	if protocol == "" {
		protocol = "TCP"
	}
	return &epmodel.EndpointSubset_EndpointPort{Name: name, Port: port, Protocol: protocol}
}

// Subset returns an endpoint subset of ready addresses.
func Subset(addrs []Addr, ports ...*epmodel.EndpointSubset_EndpointPort) *epmodel.EndpointSubset {
	sub := &epmodel.EndpointSubset{Ports: ports}
	for _, a := range addrs {
		sub.Addresses = append(sub.Addresses, endpointAddress(a))
	}
	return sub
}

// NotReady adds not-ready addresses to a subset and returns it.
func NotReady(sub *epmodel.EndpointSubset, addrs ...Addr) *epmodel.EndpointSubset {
	for _, a := range addrs {
		sub.NotReadyAddresses = append(sub.NotReadyAddresses, endpointAddress(a))
	}
	return sub
}

func endpointAddress(a Addr) *epmodel.EndpointSubset_EndpointAddress {
	ea := &epmodel.EndpointSubset_EndpointAddress{Ip: a.IP, NodeName: "node"}
	if a.Pod != "" {
		ea.TargetRef = &epmodel.ObjectReference{Kind: "Pod", Namespace: a.PodNamespace, Name: a.Pod}
	}
	return ea
}

// Endpoints returns the Endpoints of a service.
func Endpoints(ns, name string, subsets ...*epmodel.EndpointSubset) *epmodel.Endpoints {
	return &epmodel.Endpoints{Name: name, Namespace: ns, EndpointSubsets: subsets}
}

package convert

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// DefaultSessionAffinityTimeout is the ClientIP affinity timeout in seconds when a
// service asks for ClientIP affinity without a timeout (the Kubernetes default, 3 h).
const DefaultSessionAffinityTimeout = 10800

// Service converts a Service: identity, ports (protocol, port, target port by number or
// name, node port), selector, cluster IP, type, external IPs, load-balancer ingress IPs
// (status.loadBalancer.ingress[].ip; host-name-only entries have no IP and are left
// out), session affinity and its timeout, load-balancer IP and source ranges, external
// traffic policy, health-check node port and annotations; and what Kubernetes v1.34
// added since: labels, clusterIPs, ipFamilies, ipFamilyPolicy, internalTrafficPolicy,
// trafficDistribution, publishNotReadyAddresses, loadBalancerClass and the ipMode of
// each ingress IP (the ones with ipMode Proxy are also listed in lb_ingress_proxy_ips;
// an unset ipMode is VIP, the API default).
//
// Defaults of the API server are filled in when the field is empty: protocol TCP, type
// ClusterIP, session affinity None, target port = port, external traffic policy
// Cluster for NodePort and LoadBalancer services, and the affinity timeout
// DefaultSessionAffinityTimeout for ClientIP affinity (0 without affinity).
func Service(s *corev1.Service) (*service.Service, error) {
	if s == nil {
		return nil, fmt.Errorf("service: %w", errNil)
	}
	if err := checkNamespaced("service", s.Namespace, s.Name); err != nil {
		return nil, err
	}
	spec := s.Spec
	out := &service.Service{
		Name:                     s.Name,
		Namespace:                s.Namespace,
		Selector:                 copyMap(spec.Selector),
		ClusterIp:                spec.ClusterIP,
		ServiceType:              string(spec.Type),
		ExternalIps:              copyStrings(spec.ExternalIPs),
		SessionAffinity:          string(spec.SessionAffinity),
		LoadbalancerSourceRanges: copyStrings(spec.LoadBalancerSourceRanges),
		ExternalTrafficPolicy:    string(spec.ExternalTrafficPolicy),
		HealthCheckNodePort:      spec.HealthCheckNodePort,
		Annotations:              copyMap(s.Annotations),
		Labels:                   copyMap(s.Labels),
		ClusterIps:               copyStrings(spec.ClusterIPs),
		TrafficDistribution:      deref(spec.TrafficDistribution),
		PublishNotReadyAddresses: spec.PublishNotReadyAddresses,
		LoadBalancerClass:        deref(spec.LoadBalancerClass),
	}
	for _, f := range spec.IPFamilies {
		out.IpFamilies = append(out.IpFamilies, string(f))
	}
	if spec.IPFamilyPolicy != nil {
		out.IpFamilyPolicy = string(*spec.IPFamilyPolicy)
	}
	if spec.InternalTrafficPolicy != nil {
		out.InternalTrafficPolicy = string(*spec.InternalTrafficPolicy)
	}
	out.LoadbalancerIp = spec.LoadBalancerIP
	if out.ServiceType == "" {
		out.ServiceType = string(corev1.ServiceTypeClusterIP)
	}
	if out.SessionAffinity == "" {
		out.SessionAffinity = string(corev1.ServiceAffinityNone)
	}
	if out.ExternalTrafficPolicy == "" &&
		(spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer) {
		out.ExternalTrafficPolicy = string(corev1.ServiceExternalTrafficPolicyCluster)
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		out.SessionAffinityTimeout = DefaultSessionAffinityTimeout
		if c := spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			out.SessionAffinityTimeout = *c.ClientIP.TimeoutSeconds
		}
	}
	for _, ing := range s.Status.LoadBalancer.Ingress {
		if ing.IP == "" {
			continue
		}
		out.LbIngressIps = append(out.LbIngressIps, ing.IP)
		if ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
			out.LbIngressProxyIps = append(out.LbIngressProxyIps, ing.IP)
		}
	}
	for _, p := range spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		out.Port = append(out.Port, &service.Service_ServicePort{
			Name:       p.Name,
			Protocol:   proto,
			Port:       p.Port,
			TargetPort: targetPort(p),
			NodePort:   p.NodePort,
		})
	}
	return out, nil
}

// targetPort converts a service port's target port; an unset one (number 0) is the
// service port itself, as the API server defaults it.
func targetPort(p corev1.ServicePort) *service.Service_ServicePort_IntOrString {
	if p.TargetPort.Type == intstr.String {
		return &service.Service_ServicePort_IntOrString{
			Type:      service.Service_ServicePort_IntOrString_STRING,
			StringVal: p.TargetPort.StrVal,
		}
	}
	n := p.TargetPort.IntVal
	if n == 0 {
		n = p.Port
	}
	return &service.Service_ServicePort_IntOrString{
		Type:   service.Service_ServicePort_IntOrString_NUMBER,
		IntVal: n,
	}
}

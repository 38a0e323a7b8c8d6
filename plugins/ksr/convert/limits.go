package convert

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// The Kubernetes default node port range (kube-apiserver --service-node-port-range).
const (
	DefaultNodePortMin = 30000
	DefaultNodePortMax = 32767
)

// ServiceLimits are the ranges a reflected Service must keep to: what the API server of
// the cluster enforces, checked again because a Service that breaks them would be
// programmed wrongly (a port 70000 as 4464, a cluster IP equal to a pod's IP capturing
// that pod's port).
type ServiceLimits struct {
	// NodePortMin and NodePortMax bound node ports (and the health check node port).
	NodePortMin, NodePortMax int32
	// ServiceCIDRs hold the valid cluster IPs; empty means cluster IPs are not checked
	// (only that they are IP addresses).
	ServiceCIDRs []*net.IPNet
}

// DefaultServiceLimits returns the Kubernetes default node port range and no service
// CIDR.
func DefaultServiceLimits() ServiceLimits {
	return ServiceLimits{NodePortMin: DefaultNodePortMin, NodePortMax: DefaultNodePortMax}
}

// ParseNodePortRange parses "min-max" (kube-apiserver's --service-node-port-range).
func ParseNodePortRange(s string) (min, max int32, err error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "-")
	a, errA := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	b, errB := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	if !ok || errA != nil || errB != nil || a == 0 || a > b {
		return 0, 0, fmt.Errorf("node port range %q: want min-max with 1 <= min <= max <= 65535", s)
	}
	return int32(a), int32(b), nil
}

// ParseServiceCIDRs parses a comma-separated list of CIDRs ("" = none).
func ParseServiceCIDRs(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, fmt.Errorf("service CIDR %q: %w", part, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// FieldProblem is a part of an object that broke a limit and was left out.
type FieldProblem struct {
	// Field is the path of the field in the Kubernetes object ("ports[http].nodePort").
	Field string
	// Value is the offending value.
	Value any
	// Reason says what is wrong and what was done about it.
	Reason string
}

// Error renders the problem as "<field>: <value> <reason>".
func (p FieldProblem) Error() string {
	v := fmt.Sprint(p.Value)
	if s, ok := p.Value.(string); ok {
		v = strconv.Quote(s)
	}
	return fmt.Sprintf("%s: %s %s", p.Field, v, p.Reason)
}

// FieldName returns the field path without the list indexes ("ports.nodePort"), for
// metric labels.
func (p FieldProblem) FieldName() string {
	var b strings.Builder
	depth := 0
	for _, r := range p.Field {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Sanitize removes from s what breaks the limits and returns what it removed, so that
// the rest of the service keeps working: a port whose port or numeric target port is
// not in 1-65535 is left out (its traffic could not be translated); a node port (or the
// health check node port) outside the node port range is cleared (the port stays
// reachable through the cluster IP); a cluster IP that is not an IP, or lies outside the
// service CIDRs, is cleared (the service keeps its node ports and external IPs but gets
// no cluster-IP translation), and so is an entry of clusterIPs (with its IP family);
// invalid external and load-balancer IPs are left out.
func (l ServiceLimits) Sanitize(s *service.Service) []FieldProblem {
	var problems []FieldProblem
	fail := func(field string, value any, reason string, args ...any) {
		problems = append(problems, FieldProblem{Field: field, Value: value, Reason: fmt.Sprintf(reason, args...)})
	}
	if reason := l.clusterIPProblem(s.GetClusterIp()); reason != "" {
		fail("clusterIP", s.GetClusterIp(), "%s: the service is written without its cluster IP", reason)
		s.ClusterIp = ""
	}
	l.sanitizeClusterIPs(s, fail)
	kept := s.Port[:0]
	for i, p := range s.GetPort() {
		name := p.GetName()
		if name == "" {
			name = strconv.Itoa(i)
		}
		field := "ports[" + name + "]"
		if !validPort(p.GetPort()) {
			fail(field+".port", p.GetPort(), "is not in 1-65535: the port is left out")
			continue
		}
		if tp := p.GetTargetPort(); tp.GetType() == service.Service_ServicePort_IntOrString_NUMBER && !validPort(tp.GetIntVal()) {
			fail(field+".targetPort", tp.GetIntVal(), "is not in 1-65535: the port is left out")
			continue
		}
		if np := p.GetNodePort(); np != 0 && !l.validNodePort(np) {
			fail(field+".nodePort", np, "is outside the node port range %d-%d: the port is written without its node port",
				l.NodePortMin, l.NodePortMax)
			p.NodePort = 0
		}
		kept = append(kept, p)
	}
	for i := len(kept); i < len(s.Port); i++ {
		s.Port[i] = nil
	}
	s.Port = kept
	if np := s.GetHealthCheckNodePort(); np != 0 && !l.validNodePort(np) {
		fail("healthCheckNodePort", np, "is outside the node port range %d-%d: cleared", l.NodePortMin, l.NodePortMax)
		s.HealthCheckNodePort = 0
	}
	s.ExternalIps = keepIPs(s.ExternalIps, "externalIPs", fail)
	s.LbIngressIps = keepIPs(s.LbIngressIps, "status.loadBalancer.ingress.ip", fail)
	s.LbIngressProxyIps = keepListed(s.LbIngressProxyIps, s.LbIngressIps)
	return problems
}

// clusterIPProblem says what is wrong with a cluster IP ("" for nothing; "None" and ""
// are fine).
func (l ServiceLimits) clusterIPProblem(ip string) string {
	switch {
	case ip == "" || ip == corev1.ClusterIPNone:
		return ""
	case net.ParseIP(ip) == nil:
		return "is not an IP address"
	case len(l.ServiceCIDRs) > 0 && !inAny(l.ServiceCIDRs, net.ParseIP(ip)):
		return "is outside the service CIDR " + cidrList(l.ServiceCIDRs)
	}
	return ""
}

// sanitizeClusterIPs leaves out of clusterIPs the entries that break the limits, with
// the IP family at the same index (the two lists stay aligned).
func (l ServiceLimits) sanitizeClusterIPs(s *service.Service, fail func(string, any, string, ...any)) {
	if len(s.ClusterIps) == 0 {
		return
	}
	aligned := len(s.IpFamilies) == len(s.ClusterIps)
	ips, families := s.ClusterIps[:0], s.IpFamilies[:0]
	for i, ip := range s.ClusterIps {
		if reason := l.clusterIPProblem(ip); reason != "" {
			fail(fmt.Sprintf("clusterIPs[%d]", i), ip, "%s: left out", reason)
			continue
		}
		ips = append(ips, ip)
		if aligned {
			families = append(families, s.IpFamilies[i])
		}
	}
	s.ClusterIps = ips
	if aligned {
		s.IpFamilies = families
	}
}

// keepListed returns the entries of ips that are in allowed.
func keepListed(ips, allowed []string) []string {
	out := ips[:0]
	for _, ip := range ips {
		if slices.Contains(allowed, ip) {
			out = append(out, ip)
		}
	}
	return out
}

func (l ServiceLimits) validNodePort(p int32) bool {
	return p >= l.NodePortMin && p <= l.NodePortMax && validPort(p)
}

func validPort(p int32) bool { return p >= 1 && p <= 65535 }

func inAny(nets []*net.IPNet, ip net.IP) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

func cidrList(nets []*net.IPNet) string {
	s := make([]string, len(nets))
	for i, n := range nets {
		s[i] = n.String()
	}
	return strings.Join(s, ",")
}

// keepIPs returns the entries of ips that are IP addresses, reporting the others.
func keepIPs(ips []string, field string, fail func(string, any, string, ...any)) []string {
	out := ips[:0]
	for _, ip := range ips {
		if net.ParseIP(strings.TrimSpace(ip)) == nil {
			fail(field, ip, "is not an IP address: left out")
			continue
		}
		out = append(out, ip)
	}
	return out
}

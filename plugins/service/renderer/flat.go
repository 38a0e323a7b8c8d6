package renderer

import (
	"encoding/binary"
	"net"
	"slices"
	"sort"
	"strings"
)

// FlatService is a ContivService in the processor's flat form: slices instead of maps,
// ports in name order, each port's backends in groups that share the target port
// (one group per matching Endpoints subset, whose address list the group shares).
// Renderings are equal when ContivService() of both are.
type FlatService struct {
	// ID identifies the service.
	ID ServiceID
	// TrafficPolicy is NodeLocal for externalTrafficPolicy "Local" (external traffic
	// keeps the client's address), else ClusterWide. The backends are already
	// selected by the policies (FlatPort.ExternalBackends).
	TrafficPolicy TrafficPolicyType
	// SessionAffinityTimeout is the ClientIP affinity timeout in seconds; 0 means no
	// session affinity.
	SessionAffinityTimeout uint32
	// ClusterIPs are the virtual IPs of the service inside the cluster (no duplicates).
	ClusterIPs []Address
	// ExternalIPs are the external and load balancer ingress IPs (no duplicates).
	ExternalIPs []Address
	// Ports are the exposed ports in ascending name order (names are unique).
	Ports []FlatPort
}

// FlatPort is one service port with its backends, as kube-proxy selects them for this
// node (pkg/proxy/topology.go CategorizeEndpoints): ready endpoints, else serving and
// terminating ones; topology hints; the traffic policies.
type FlatPort struct {
	// Name is the service port name.
	Name string
	// Port is the exposed port.
	Port ServicePort
	// Backends are the endpoints of traffic to the cluster IPs (internal traffic,
	// after internalTrafficPolicy and topology hints), in groups sharing the target
	// port. Empty while HasEndpoints is true: internal traffic is dropped
	// (internalTrafficPolicy Local and no endpoint on this node).
	Backends []BackendGroup
	// ExternalBackends are the endpoints of external traffic: node ports, external IPs
	// and load balancer ingress IPs (after externalTrafficPolicy). The processor makes
	// it the very slice of Backends when both select the same endpoints. Empty while
	// HasEndpoints is true: external traffic is dropped (externalTrafficPolicy Local
	// and no endpoint on this node).
	ExternalBackends []BackendGroup
	// HasEndpoints tells whether the port has a usable endpoint anywhere in the
	// cluster; without one, traffic to every address of the port is rejected
	// (kube-proxy answers ICMP unreachable), which is distinct from a policy that
	// leaves this node no endpoint (dropped). It tells about either family: see
	// HasEndpointsOf for one.
	HasEndpoints bool
	// NoIPv4Endpoints and NoIPv6Endpoints tell that, while HasEndpoints, the port has
	// no usable endpoint of that family anywhere: kube-proxy runs one proxier per
	// family, each seeing the EndpointSlices of its address type only, so the
	// addresses of that family are rejected, not dropped. Both false in a value that
	// does not tell families apart (a seed value): HasEndpoints for both.
	NoIPv4Endpoints, NoIPv6Endpoints bool
}

// HasEndpointsOf tells whether the port has a usable endpoint anywhere in the cluster
// in one family (ipv4: IPv4, else IPv6); without one, traffic to the port's addresses
// of that family is rejected.
func (p *FlatPort) HasEndpointsOf(ipv4 bool) bool {
	if ipv4 {
		return p.HasEndpoints && !p.NoIPv4Endpoints
	}
	return p.HasEndpoints && !p.NoIPv6Endpoints
}

// SameBackends tells whether external traffic uses the very backends of internal
// traffic (the processor shares the slice then).
func (p *FlatPort) SameBackends() bool {
	return len(p.Backends) == len(p.ExternalBackends) &&
		(len(p.Backends) == 0 || &p.Backends[0] == &p.ExternalBackends[0])
}

// BackendGroup is a list of endpoints listening on the same port.
type BackendGroup struct {
	// TargetPort is the port the endpoints listen on.
	TargetPort uint16
	// Endpoints are the endpoint addresses (never empty).
	Endpoints []Endpoint
}

// Address is an IP address in its text form, with IPv4 addresses also as a number (an
// address costs no allocation of its own: the text is usually the one of the Kubernetes
// object). Build one with NewAddress or NewIPv4Address.
type Address struct {
	// Text is the canonical text of the address (net.IP.String()).
	Text string
	v4   uint32
	is4  bool
}

// NewAddress returns the address of ip (nil: the zero Address).
func NewAddress(ip net.IP) Address {
	if ip == nil {
		return Address{}
	}
	if ip4 := ip.To4(); ip4 != nil {
		return Address{Text: ip4.String(), v4: binary.BigEndian.Uint32(ip4), is4: true}
	}
	return Address{Text: ip.String()}
}

// NewIPv4Address returns the IPv4 address v4 whose canonical text is text (the caller
// guarantees that they match).
func NewIPv4Address(v4 uint32, text string) Address {
	return Address{Text: text, v4: v4, is4: true}
}

// IsIPv4 tells whether the address is an IPv4 address.
func (a Address) IsIPv4() bool { return a.is4 }

// IPv4 returns an IPv4 address as a number (big-endian order: 10.0.0.1 is 0x0a000001).
func (a Address) IPv4() (v4 uint32, ok bool) { return a.v4, a.is4 }

// IP returns the address as a net.IP (4-byte form for IPv4; a new slice on each call),
// nil for the zero Address.
func (a Address) IP() net.IP {
	if a.is4 {
		ip := make(net.IP, net.IPv4len)
		binary.BigEndian.PutUint32(ip, a.v4)
		return ip
	}
	return net.ParseIP(a.Text)
}

// Endpoint is one endpoint address of a service with its locality.
type Endpoint struct {
	Address
	// Local is true when the endpoint runs on this node.
	Local bool
	// HostNetwork is true when the address lies outside the pod network.
	HostNetwork bool
	// Terminating is true for an endpoint that is serving and terminating but not
	// ready: the processor uses such endpoints only while none is ready (kube-proxy's
	// fallback); health checks do not count them (kube-proxy's LocalReadyEndpoints).
	Terminating bool
}

// HasNodePort tells whether any port of the service is also exposed on the node IPs.
func (fs *FlatService) HasNodePort() bool {
	for i := range fs.Ports {
		if fs.Ports[i].Port.NodePort != 0 {
			return true
		}
	}
	return false
}

// ContivService returns the service as a ContivService (built anew on every call).
func (fs *FlatService) ContivService() *ContivService {
	cs := &ContivService{
		ID: fs.ID, TrafficPolicy: fs.TrafficPolicy, SessionAffinityTimeout: fs.SessionAffinityTimeout,
		ClusterIPs: addressSet(fs.ClusterIPs), ExternalIPs: addressSet(fs.ExternalIPs),
		Ports:    make(map[string]*ServicePort, len(fs.Ports)),
		Backends: make(map[string][]*ServiceBackend, len(fs.Ports)),
	}
	cs.ExternalBackends = make(map[string][]*ServiceBackend, len(fs.Ports))
	cs.HasEndpoints = make(map[string]bool, len(fs.Ports))
	for i := range fs.Ports {
		p := &fs.Ports[i]
		port := p.Port
		cs.Ports[p.Name] = &port
		cs.HasEndpoints[p.Name] = p.HasEndpoints
		if list := seedBackends(p.Backends); list != nil {
			cs.Backends[p.Name] = list
		}
		if list := seedBackends(p.ExternalBackends); list != nil {
			cs.ExternalBackends[p.Name] = list
		}
	}
	return cs
}

// seedBackends returns the backends of the groups in the seed form (nil: none).
func seedBackends(groups []BackendGroup) []*ServiceBackend {
	var list []*ServiceBackend
	for _, g := range groups {
		for _, ep := range g.Endpoints {
			list = append(list, &ServiceBackend{IP: ep.IP(), Port: g.TargetPort, Local: ep.Local, HostNetwork: ep.HostNetwork})
		}
	}
	return list
}

func addressSet(addrs []Address) *IPAddresses {
	set := &IPAddresses{list: make([]net.IP, 0, len(addrs))}
	for _, a := range addrs {
		set.Add(a.IP())
	}
	return set
}

// NewFlatService returns the flat form of a ContivService (the backends of a port
// grouped by consecutive equal ports, IP texts formatted). A ContivService built
// without ExternalBackends (a seed value) gets the upstream reading: external
// traffic uses Backends, only the local ones for a NodeLocal service; without
// HasEndpoints, a port has endpoints when it has backends.
func NewFlatService(cs *ContivService) *FlatService {
	fs := &FlatService{ID: cs.ID, TrafficPolicy: cs.TrafficPolicy, SessionAffinityTimeout: cs.SessionAffinityTimeout}
	for _, ip := range cs.ClusterIPs.List() {
		fs.ClusterIPs = append(fs.ClusterIPs, NewAddress(ip))
	}
	for _, ip := range cs.ExternalIPs.List() {
		fs.ExternalIPs = append(fs.ExternalIPs, NewAddress(ip))
	}
	names := make([]string, 0, len(cs.Ports))
	for name := range cs.Ports {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := FlatPort{Name: name, Port: *cs.Ports[name]}
		p.Backends = flatBackends(cs.Backends[name], false)
		switch {
		case cs.ExternalBackends != nil:
			p.ExternalBackends = flatBackends(cs.ExternalBackends[name], false)
		case cs.TrafficPolicy == NodeLocal:
			p.ExternalBackends = flatBackends(cs.Backends[name], true)
		default:
			p.ExternalBackends = p.Backends
		}
		if cs.HasEndpoints != nil {
			p.HasEndpoints = cs.HasEndpoints[name]
		} else {
			p.HasEndpoints = len(p.Backends) > 0
		}
		if p.HasEndpoints && len(p.Backends) == len(p.ExternalBackends) && SameBackendGroups(p.Backends, p.ExternalBackends) {
			p.ExternalBackends = p.Backends
		}
		fs.Ports = append(fs.Ports, p)
	}
	return fs
}

// flatBackends groups the backends by consecutive equal target ports (only the local
// ones with localOnly).
func flatBackends(list []*ServiceBackend, localOnly bool) []BackendGroup {
	var groups []BackendGroup
	for _, b := range list {
		if localOnly && !b.Local {
			continue
		}
		ep := Endpoint{Address: NewAddress(b.IP), Local: b.Local, HostNetwork: b.HostNetwork}
		if n := len(groups); n > 0 && groups[n-1].TargetPort == b.Port {
			groups[n-1].Endpoints = append(groups[n-1].Endpoints, ep)
			continue
		}
		groups = append(groups, BackendGroup{TargetPort: b.Port, Endpoints: []Endpoint{ep}})
	}
	return groups
}

// Equal tells whether both services render the same (same ID, settings, addresses,
// ports and backends in the same order).
func (fs *FlatService) Equal(o *FlatService) bool {
	if fs == nil || o == nil {
		return fs == o
	}
	if fs.ID != o.ID || fs.TrafficPolicy != o.TrafficPolicy || fs.SessionAffinityTimeout != o.SessionAffinityTimeout ||
		!SameAddresses(fs.ClusterIPs, o.ClusterIPs) || !SameAddresses(fs.ExternalIPs, o.ExternalIPs) || len(fs.Ports) != len(o.Ports) {
		return false
	}
	for i := range fs.Ports {
		p, q := &fs.Ports[i], &o.Ports[i]
		if p.Name != q.Name || p.Port != q.Port || p.HasEndpoints != q.HasEndpoints ||
			p.NoIPv4Endpoints != q.NoIPv4Endpoints || p.NoIPv6Endpoints != q.NoIPv6Endpoints ||
			!SameBackendGroups(p.Backends, q.Backends) || !SameBackendGroups(p.ExternalBackends, q.ExternalBackends) {
			return false
		}
	}
	return true
}

// SameBackendGroups tells whether two backend lists hold the same endpoints in the same order.
func SameBackendGroups(a, b []BackendGroup) bool {
	if len(a) != len(b) {
		return false
	}
	for j := range a {
		g, h := &a[j], &b[j]
		if g.TargetPort != h.TargetPort || len(g.Endpoints) != len(h.Endpoints) {
			return false
		}
		for k := range g.Endpoints {
			x, y := &g.Endpoints[k], &h.Endpoints[k]
			if x.Local != y.Local || x.HostNetwork != y.HostNetwork || x.Terminating != y.Terminating || x.Address != y.Address {
				return false
			}
		}
	}
	return true
}

// Port returns the port of the given name, nil when there is none (or fs is nil).
func (fs *FlatService) Port(name string) *FlatPort {
	if fs == nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(fs.Ports, name, func(p FlatPort, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return nil
	}
	return &fs.Ports[i]
}

// SameAddresses tells whether two address lists are equal, in order.
func SameAddresses(a, b []Address) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FlatResyncEventData is ResyncEventData with the services in flat form.
type FlatResyncEventData struct {
	// NodeIPs are the IPs of every node of the cluster, on which node ports are exposed.
	NodeIPs *IPAddresses
	// Services are all services that have both a definition and endpoints.
	Services []*FlatService
	// FrontendIfs are the interfaces connecting clients to VPP (VPP specific).
	FrontendIfs Interfaces
	// BackendIfs are the interfaces connecting service backends to VPP (VPP specific).
	BackendIfs Interfaces
}

package renderer

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// ServiceRendererAPI is the seed API of a service renderer, kept as the public face of
// the renderers: the processor registers a renderer of this API
// (ServiceProcessor.RegisterRenderer) through a SeedAdapter, which makes it a Renderer,
// the one interface the processor renders through. The processor calls it from the
// controller's event loop only, so implementations need no locking for these calls.
//
// A renderer turns ContivServices into configuration of one network stack (the NAT44
// renderer: VPP NAT44 static mappings). Several renderers may be registered at once;
// each receives the same calls in the same order.
//
// Call contract:
//   - Resync is always called first (agent start) and again whenever the whole state
//     must be re-rendered; it carries a full snapshot and replaces everything that the
//     earlier calls told the renderer.
//   - AddService / UpdateService / DeleteService follow the life of one service;
//     UpdateService is called only when the ContivService really changed.
//   - UpdateNodePortServices is called when the set of node IPs of the cluster changed,
//     with every service that has at least one node port.
//   - UpdateLocalFrontendIfs / UpdateLocalBackendIfs report changed interface sets (VPP
//     specific; other renderers may ignore them). The sets passed are never modified
//     by the processor afterwards, so a renderer may keep them.
//
// Every method stages its changes into the transaction of the event being processed,
// which the renderer gets through its own dependencies (see SeedAdapter); errors are
// returned to the processor, which reports them with the service concerned.
type ServiceRendererAPI interface {
	// AddService renders a service that was not rendered before.
	AddService(service *ContivService) error
	// UpdateService re-renders a service whose configuration or backends changed.
	UpdateService(oldService, newService *ContivService) error
	// DeleteService removes everything rendered for the service.
	DeleteService(service *ContivService) error
	// UpdateNodePortServices gives the new set of node IPs of the cluster together
	// with every service exposed on node ports.
	UpdateNodePortServices(nodeIPs *IPAddresses, npServices []*ContivService) error
	// UpdateLocalFrontendIfs gives the new set of interfaces connecting clients
	// (potential service consumers) to VPP.
	UpdateLocalFrontendIfs(oldIfNames, newIfNames Interfaces) error
	// UpdateLocalBackendIfs gives the new set of interfaces connecting service
	// backends (endpoints) to VPP.
	UpdateLocalBackendIfs(oldIfNames, newIfNames Interfaces) error
	// Resync hands over the complete state; the renderer replaces whatever it
	// rendered before with the rendering of this snapshot.
	Resync(resyncEv *ResyncEventData) error
}

// ServiceID identifies a Kubernetes service in the cluster.
//
// The seed API refers to the KSR model's service ID; the KSR model of this port does not
// define one yet, so the renderer API carries its own (same fields, same string form).
type ServiceID struct {
	// Name is the service name.
	Name string
	// Namespace is the service's namespace.
	Namespace string
}

// String returns "<namespace>/<name>", the form used as DNAT label and in logs.
func (id ServiceID) String() string { return id.Namespace + "/" + id.Name }

// ContivService is one Kubernetes service with its endpoints already resolved: the
// addresses it must be reachable on from this node and, per service port, the
// backends traffic is balanced to. Node IPs (for node ports) are not part of it; the
// processor passes them separately (Resync, UpdateNodePortServices).
type ContivService struct {
	// ID identifies the service.
	ID ServiceID
	// TrafficPolicy is NodeLocal for externalTrafficPolicy "Local", else ClusterWide.
	TrafficPolicy TrafficPolicyType
	// SessionAffinityTimeout is the ClientIP affinity timeout in seconds; 0 means no
	// session affinity.
	SessionAffinityTimeout uint32
	// ClusterIPs are the virtual IPs of the service inside the cluster (none for a
	// headless service).
	ClusterIPs *IPAddresses
	// ExternalIPs are the other addresses the service is exposed on: spec.externalIPs
	// and, for LoadBalancer services, the load balancer ingress IPs.
	ExternalIPs *IPAddresses
	// Ports are the exposed ports by service port name.
	Ports map[string]*ServicePort
	// Backends are the endpoints by service port name: those of traffic to the cluster
	// IPs (after internalTrafficPolicy and topology hints).
	Backends map[string][]*ServiceBackend
	// ExternalBackends are the endpoints of external traffic (node ports, external
	// and load balancer IPs, after externalTrafficPolicy) by service port name. nil
	// (a seed value): Backends, only the local ones for a NodeLocal service.
	ExternalBackends map[string][]*ServiceBackend
	// HasEndpoints tells, by service port name, whether the port has a usable
	// endpoint anywhere in the cluster (false: its traffic is rejected). nil (a seed
	// value): a port has endpoints when it has Backends.
	HasEndpoints map[string]bool
}

// NewContivService returns an empty ContivService with all sets and maps allocated.
func NewContivService() *ContivService {
	return &ContivService{
		ClusterIPs:  NewIPAddresses(),
		ExternalIPs: NewIPAddresses(),
		Ports:       make(map[string]*ServicePort),
		Backends:    make(map[string][]*ServiceBackend),
	}
}

// HasNodePort tells whether any port of the service is also exposed on the node IPs.
func (cs ContivService) HasNodePort() bool {
	for _, p := range cs.Ports {
		if p.NodePort != 0 {
			return true
		}
	}
	return false
}

// String describes the service in one line, ports in name order.
func (cs ContivService) String() string {
	names := make([]string, 0, len(cs.Ports))
	for name := range cs.Ports {
		names = append(names, name)
	}
	sort.Strings(names)
	var ports []string
	for _, name := range names {
		backends := cs.Backends[name]
		bs := make([]string, len(backends))
		for i, b := range backends {
			bs[i] = b.String()
		}
		port := fmt.Sprintf("%q:%s->[%s]", name, cs.Ports[name], strings.Join(bs, ", "))
		if ext, ok := cs.ExternalBackends[name]; ok || cs.ExternalBackends != nil {
			es := make([]string, len(ext))
			for i, b := range ext {
				es[i] = b.String()
			}
			if e := strings.Join(es, ", "); e != strings.Join(bs, ", ") {
				port += " external->[" + e + "]"
			}
		}
		if has, ok := cs.HasEndpoints[name]; ok && !has {
			port += " no-endpoints"
		}
		ports = append(ports, port)
	}
	return fmt.Sprintf("ContivService %s <TrafficPolicy:%s SessionAffinityTimeout:%d ClusterIPs:%s ExternalIPs:%s Ports:{%s}>",
		cs.ID, cs.TrafficPolicy, cs.SessionAffinityTimeout, cs.ClusterIPs, cs.ExternalIPs, strings.Join(ports, ", "))
}

// TrafficPolicyType says which backends may serve traffic arriving at this node.
type TrafficPolicyType int

const (
	// ClusterWide balances over the backends of all nodes.
	ClusterWide TrafficPolicyType = 0
	// NodeLocal balances over the backends of this node only.
	NodeLocal TrafficPolicyType = 1
)

// String returns "cluster-wide" or "node-local".
func (t TrafficPolicyType) String() string {
	switch t {
	case ClusterWide:
		return "cluster-wide"
	case NodeLocal:
		return "node-local"
	}
	return fmt.Sprintf("TrafficPolicyType(%d)", int(t))
}

// ServicePort is one port the service is exposed on.
type ServicePort struct {
	// Protocol is the L4 protocol of the port.
	Protocol ProtocolType
	// Port is the port on the cluster and external IPs.
	Port uint16
	// NodePort is the port on every node IP, 0 when the port is not a node port.
	NodePort uint16
}

// String returns "<port>/<proto>" or "<port>:<nodePort>/<proto>".
func (sp ServicePort) String() string {
	if sp.NodePort == 0 {
		return fmt.Sprintf("%d/%s", sp.Port, sp.Protocol)
	}
	return fmt.Sprintf("%d:%d/%s", sp.Port, sp.NodePort, sp.Protocol)
}

// ProtocolType is an L4 protocol by its IP protocol number.
type ProtocolType int

const (
	// TCP is IP protocol 6.
	TCP ProtocolType = 6
	// UDP is IP protocol 17.
	UDP ProtocolType = 17
)

// String returns "TCP" or "UDP".
func (p ProtocolType) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	}
	return fmt.Sprintf("ProtocolType(%d)", int(p))
}

// ServiceBackend is one endpoint of a service port.
type ServiceBackend struct {
	// IP is the endpoint address.
	IP net.IP
	// Port is the port the endpoint listens on.
	Port uint16
	// Local is true when the endpoint runs on this node (a pod of this node, or this
	// node itself for a host-network endpoint).
	Local bool
	// HostNetwork is true when the endpoint address lies outside the pod network
	// (host-network pods, external endpoints).
	HostNetwork bool
}

// String returns "<ip>:<port>" with "local" and "host-network" marks.
func (sb ServiceBackend) String() string {
	s := net.JoinHostPort(sb.IP.String(), fmt.Sprint(sb.Port))
	if sb.Local {
		s += " local"
	}
	if sb.HostNetwork {
		s += " host-network"
	}
	return s
}

// IPAddresses is an ordered set of IP addresses: the order is the order of insertion,
// and two addresses are the same when net.IP.Equal says so (an IPv4 address in its
// 4-byte and 16-byte forms is one address). The sets handled here are small (a service
// has a few IPs, a cluster a few node IPs each), so membership is a linear scan.
type IPAddresses struct {
	list []net.IP
}

// NewIPAddresses returns a set holding the given addresses (duplicates dropped).
func NewIPAddresses(addrs ...net.IP) *IPAddresses {
	set := &IPAddresses{list: make([]net.IP, 0, len(addrs))}
	for _, a := range addrs {
		set.Add(a)
	}
	return set
}

// List returns the addresses in insertion order; the caller must not modify it.
func (a *IPAddresses) List() []net.IP {
	if a == nil {
		return nil
	}
	return a.list
}

// Len returns the number of addresses.
func (a *IPAddresses) Len() int {
	if a == nil {
		return 0
	}
	return len(a.list)
}

// Add inserts addr unless it is already in the set; nil is ignored.
func (a *IPAddresses) Add(addr net.IP) {
	if addr == nil || a.Has(addr) {
		return
	}
	a.list = append(a.list, addr)
}

// Del removes addr from the set.
func (a *IPAddresses) Del(addr net.IP) {
	for i, x := range a.list {
		if x.Equal(addr) {
			a.list = append(a.list[:i:i], a.list[i+1:]...)
			return
		}
	}
}

// Copy returns an independent set with the same addresses (the net.IP values are
// shared: they are never modified in place).
func (a *IPAddresses) Copy() *IPAddresses {
	if a == nil {
		return NewIPAddresses()
	}
	return &IPAddresses{list: append(make([]net.IP, 0, len(a.list)), a.list...)}
}

// Has tells whether addr is in the set.
func (a *IPAddresses) Has(addr net.IP) bool {
	if a == nil {
		return false
	}
	for _, x := range a.list {
		if x.Equal(addr) {
			return true
		}
	}
	return false
}

// Equal tells whether both sets hold the same addresses in the same order.
func (a *IPAddresses) Equal(b *IPAddresses) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i, x := range a.List() {
		if !x.Equal(b.list[i]) {
			return false
		}
	}
	return true
}

// String returns "{ip1, ip2, ...}" in insertion order.
func (a IPAddresses) String() string {
	parts := make([]string, 0, len(a.list))
	for _, x := range a.list {
		parts = append(parts, x.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Interfaces is a set of VPP interface names (logical names).
type Interfaces map[string]struct{}

// NewInterfaces returns a set holding the given names.
func NewInterfaces(ifNames ...string) Interfaces {
	ifs := make(Interfaces, len(ifNames))
	for _, n := range ifNames {
		ifs.Add(n)
	}
	return ifs
}

// Add inserts the name.
func (ifs Interfaces) Add(ifName string) { ifs[ifName] = struct{}{} }

// Del removes the name.
func (ifs Interfaces) Del(ifName string) { delete(ifs, ifName) }

// Has tells whether the name is in the set.
func (ifs Interfaces) Has(ifName string) bool {
	_, ok := ifs[ifName]
	return ok
}

// Copy returns an independent set with the same names.
func (ifs Interfaces) Copy() Interfaces {
	c := make(Interfaces, len(ifs))
	for n := range ifs {
		c[n] = struct{}{}
	}
	return c
}

// Sorted returns the names in ascending order.
func (ifs Interfaces) Sorted() []string {
	names := make([]string, 0, len(ifs))
	for n := range ifs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String returns "{a, b, ...}" with the names sorted.
func (ifs Interfaces) String() string {
	return "{" + strings.Join(ifs.Sorted(), ", ") + "}"
}

// ResyncEventData is the complete state the processor hands to a renderer on Resync.
type ResyncEventData struct {
	// NodeIPs are the IPs of every node of the cluster (VPP and management IPs), on
	// which node ports are exposed.
	NodeIPs *IPAddresses
	// Services are all services that have both a definition and endpoints.
	Services []*ContivService
	// FrontendIfs are the interfaces connecting clients to VPP (VPP specific).
	FrontendIfs Interfaces
	// BackendIfs are the interfaces connecting service backends to VPP (VPP specific).
	BackendIfs Interfaces
}

// NewResyncEventData returns an empty snapshot with all sets allocated.
func NewResyncEventData() *ResyncEventData {
	return &ResyncEventData{
		NodeIPs:     NewIPAddresses(),
		Services:    []*ContivService{},
		FrontendIfs: NewInterfaces(),
		BackendIfs:  NewInterfaces(),
	}
}

// String describes the snapshot, one service per line.
func (red ResyncEventData) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ResyncEventData <NodeIPs:%s FrontendIfs:%s BackendIfs:%s Services:%d>",
		red.NodeIPs, red.FrontendIfs, red.BackendIfs, len(red.Services))
	for _, s := range red.Services {
		b.WriteString("\n * ")
		b.WriteString(s.String())
	}
	return b.String()
}

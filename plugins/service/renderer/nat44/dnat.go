package nat44

import (
	"encoding/binary"
	"net"
	"sort"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// local is one backend of a service port as it goes into every mapping of the port.
type local struct {
	ip          string
	port        uint32
	vrf         uint32
	probability uint32
}

// serviceDNAT builds the DNat44 of a service, labelled "<namespace>/<name>". For each
// port (in name order) with at least one usable backend it has one static mapping per
// exposed address: every cluster IP and external IP on the service port, every node IP
// on the node port. IPv6 addresses are left out (NAT44), and so are ports 0.
//
// Twice-NAT: external IPs of cluster-wide services translate the source too
// (ENABLED), so that a remote backend answers through this node; everything else
// translates the source only when a backend reaches itself through the service
// (SELF, source becomes the NAT loopback).
func (rndr *Renderer) serviceDNAT(svc *renderer.ContivService) *vpp_nat.DNat44 {
	_, dnat := rndr.keyedServiceDNAT(svc)
	return dnat
}

// keyedServiceDNAT is serviceDNAT that also returns the key of the DNat44; the label
// is a substring of the key, so both cost one string.
func (rndr *Renderer) keyedServiceDNAT(svc *renderer.ContivService) (string, *vpp_nat.DNat44) {
	key := vpp_nat.DNAT44Prefix + svc.ID.Namespace + "/" + svc.ID.Name
	dnat := &vpp_nat.DNat44{Label: key[len(vpp_nat.DNAT44Prefix):]}
	perPort := svc.ClusterIPs.Len() + svc.ExternalIPs.Len()
	if svc.HasNodePort() {
		perPort += rndr.nodeIPs.Len()
	}
	dnat.StMappings = make([]*vpp_nat.DNat44_StaticMapping, 0, perPort*len(svc.Ports))
	var oneName [1]string
	for _, name := range portNames(svc, oneName[:0]) {
		port := svc.Ports[name]
		locals := rndr.portLocals(svc, svc.Backends[name])
		if len(locals) == 0 {
			continue
		}
		proto := vpp_nat.DNat44_TCP
		if port.Protocol == renderer.UDP {
			proto = vpp_nat.DNat44_UDP
		}
		add := func(ip net.IP, extPort uint16, twiceNAT vpp_nat.DNat44_StaticMapping_TwiceNatMode) {
			ip4 := ip.To4()
			if ip4 == nil || extPort == 0 {
				return
			}
			dnat.StMappings = append(dnat.StMappings, &vpp_nat.DNat44_StaticMapping{
				ExternalIp:      rndr.ip4String(ip4),
				ExternalPort:    uint32(extPort),
				Protocol:        proto,
				TwiceNat:        twiceNAT,
				SessionAffinity: svc.SessionAffinityTimeout,
				LocalIps:        newLocalIPs(locals),
			})
		}
		for _, ip := range svc.ClusterIPs.List() {
			add(ip, port.Port, vpp_nat.DNat44_StaticMapping_SELF)
		}
		// External IPs and node ports of a cluster-wide service are reached from outside
		// the cluster and may be load-balanced to a backend on another node: the source
		// is translated to this node's NAT loopback (twice-NAT), so the reply comes back
		// through this node, which holds the session. Without it the backend's node
		// routes the reply straight to the client, SNATed to its own IP, and the client
		// drops it. Upstream translated only external IPs this way and left node ports
		// with self-twice-NAT, so a NodePort answered only when the chosen backend was
		// local (the cluster lab's NodePort test showed it); kube-proxy likewise SNATs
		// NodePort traffic of Cluster-policy services. NodeLocal services only have
		// local backends and keep the client's address.
		externalTwiceNAT := vpp_nat.DNat44_StaticMapping_ENABLED
		if svc.TrafficPolicy == renderer.NodeLocal {
			externalTwiceNAT = vpp_nat.DNat44_StaticMapping_SELF
		}
		for _, ip := range svc.ExternalIPs.List() {
			add(ip, port.Port, externalTwiceNAT)
		}
		if port.NodePort != 0 {
			for _, ip := range rndr.nodeIPs.List() {
				if len(locals) == 1 && rndr.isPeerOnNodeNetwork(ip) {
					continue
				}
				add(ip, port.NodePort, externalTwiceNAT)
			}
		}
	}
	return key, dnat
}

// isPeerOnNodeNetwork tells whether ip is another node's address on the network of this
// node's IP. A single-local mapping is a plain static mapping, and VPP 25.10 puts the
// external address of every plain static mapping in the FIB of the NAT outside and
// output-feature interfaces as a local /32 and answers ARP for it there
// (docs/ARCHITECTURE.md, "Packet paths through the simulator"; NAT addresses answer
// ARP). Upstream exposed node ports on every node's IPs: on VPP 25.10 a single-backend
// NodePort Service would make each node claim the other nodes' IPs on the node network
// (the cluster lab showed clients and VXLAN tunnels sent to the wrong node). So such a
// mapping is not installed on a peer's address: a pod reaching a peer's node port is
// routed to that node, which translates it, as with kube-proxy. Load-balanced mappings
// install no FIB entry and keep upstream's rendering.
func (rndr *Renderer) isPeerOnNodeNetwork(ip net.IP) bool {
	return rndr.nodeNet != nil && rndr.nodeNet.Contains(ip) && !ip.Equal(rndr.nodeIP)
}

// renderedService is a service's DNAT as the last resync staged it.
type renderedService struct {
	svc  *renderer.ContivService
	key  string
	dnat *vpp_nat.DNat44
	seen uint64 // the last resync that had the service
}

// renderInputs is everything besides the ContivService that serviceDNAT reads.
type renderInputs struct {
	nodeIPs          string
	nodeIP           string
	mainVRF, podVRF  uint32
	noOverlay        bool
	localEndpointWgt uint32
}

func (rndr *Renderer) renderInputs() renderInputs {
	return renderInputs{nodeIPs: rndr.nodeIPs.String(), nodeIP: rndr.nodeIP.String(), mainVRF: rndr.mainVRF, podVRF: rndr.podVRF,
		noOverlay: rndr.noOverlay, localEndpointWgt: rndr.Config.LocalEndpointWeight()}
}

// ip4String formats an IPv4 address (4-byte form), through the resync's cache when
// one is set.
func (rndr *Renderer) ip4String(ip4 net.IP) string {
	if rndr.ipStrings == nil {
		return ip4.String()
	}
	key := binary.BigEndian.Uint32(ip4) // maps with uint32 keys hash fastest
	if s, ok := rndr.ipStrings[key]; ok {
		return s
	}
	s := ip4.String()
	rndr.ipStrings[key] = s
	return s
}

// portLocals returns the locals of one service port. A node-local service uses only
// the backends of this node. Weights: serviceLocalEndpointWeight for local backends,
// 1 for remote ones, 0 when there is a single local (no load balancing). VRF: the
// main VRF for this node's own addresses (host-network backends of this node) and, in
// no-overlay mode, for everything that is not a pod of this node (routed through the
// node interconnect); the pod VRF otherwise.
func (rndr *Renderer) portLocals(svc *renderer.ContivService, backends []*renderer.ServiceBackend) []local {
	if len(backends) == 0 {
		return nil
	}
	weight := rndr.Config.LocalEndpointWeight()
	locals := make([]local, 0, len(backends))
	for _, b := range backends {
		if svc.TrafficPolicy == renderer.NodeLocal && !b.Local {
			continue
		}
		ip4 := b.IP.To4()
		if ip4 == nil {
			continue
		}
		l := local{ip: rndr.ip4String(ip4), port: uint32(b.Port), vrf: rndr.podVRF, probability: 1}
		localPod := b.Local && !b.HostNetwork
		thisNode := b.Local && b.HostNetwork
		if thisNode || (rndr.noOverlay && !localPod) {
			l.vrf = rndr.mainVRF
		}
		if b.Local {
			l.probability = weight
		}
		locals = append(locals, l)
	}
	if len(locals) == 1 {
		locals[0].probability = 0
	}
	return locals
}

// newLocalIPs instantiates the locals as protobuf messages, allocated in one block.
func newLocalIPs(locals []local) []*vpp_nat.DNat44_StaticMapping_LocalIP {
	block := make([]vpp_nat.DNat44_StaticMapping_LocalIP, len(locals))
	out := make([]*vpp_nat.DNat44_StaticMapping_LocalIP, len(locals))
	for i, l := range locals {
		m := &block[i]
		m.LocalIp, m.LocalPort, m.VrfId, m.Probability = l.ip, l.port, l.vrf, l.probability
		out[i] = m
	}
	return out
}

// portNames returns the port names of the service in ascending order, appended to
// names (which the caller may give a capacity for the common single port).
func portNames(svc *renderer.ContivService, names []string) []string {
	for name := range svc.Ports {
		names = append(names, name)
	}
	if len(names) > 1 {
		sort.Strings(names)
	}
	return names
}

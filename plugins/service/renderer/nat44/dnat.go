package nat44

import (
	"encoding/binary"
	"net"
	"sort"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

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
	dnat := &carve(rndr.slabs.on, &rndr.slabs.dnats, 1)[0]
	dnat.Label = key[len(vpp_nat.DNAT44Prefix):]
	perPort := svc.ClusterIPs.Len() + svc.ExternalIPs.Len()
	var oneName [1]string
	names := portNames(svc, oneName[:0])
	for _, name := range names {
		if svc.Ports[name].NodePort != 0 {
			perPort += rndr.nodeIPs.Len()
			break
		}
	}
	dnat.StMappings = carve(rndr.slabs.on, &rndr.slabs.mappingPtrs, perPort*len(names))[:0]
	for _, name := range names {
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
			m := &carve(rndr.slabs.on, &rndr.slabs.mappings, 1)[0]
			m.ExternalIp, m.ExternalPort, m.Protocol = rndr.ip4String(ip4), uint32(extPort), proto
			m.TwiceNat, m.SessionAffinity = twiceNAT, svc.SessionAffinityTimeout
			// Every mapping of the port shares the locals (slice and messages): nothing
			// modifies a staged value, and a later change builds new messages.
			m.LocalIps = locals
			dnat.StMappings = append(dnat.StMappings, m)
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

// portLocals returns the locals of one service port as the messages of a static
// mapping. A node-local service uses only the backends of this node. Weights:
// serviceLocalEndpointWeight for local backends, 1 for remote ones, 0 when there is a
// single local (no load balancing). VRF: the main VRF for this node's own addresses
// (host-network backends of this node) and, in no-overlay mode, for everything that is
// not a pod of this node (routed through the node interconnect); the pod VRF
// otherwise.
func (rndr *Renderer) portLocals(svc *renderer.ContivService, backends []*renderer.ServiceBackend) []*vpp_nat.DNat44_StaticMapping_LocalIP {
	if len(backends) == 0 {
		return nil
	}
	n := len(backends)
	if svc.TrafficPolicy == renderer.NodeLocal {
		n = 0
		for _, b := range backends {
			if b.Local {
				n++
			}
		}
	}
	weight := rndr.Config.LocalEndpointWeight()
	msgs := carve(rndr.slabs.on, &rndr.slabs.localIPs, n)
	out := carve(rndr.slabs.on, &rndr.slabs.localPtrs, n)[:0]
	for _, b := range backends {
		if svc.TrafficPolicy == renderer.NodeLocal && !b.Local {
			continue
		}
		ip4 := b.IP.To4()
		if ip4 == nil {
			continue
		}
		l := &msgs[len(out)]
		l.LocalIp, l.LocalPort, l.VrfId, l.Probability = rndr.ip4String(ip4), uint32(b.Port), rndr.podVRF, 1
		localPod := b.Local && !b.HostNetwork
		thisNode := b.Local && b.HostNetwork
		if thisNode || (rndr.noOverlay && !localPod) {
			l.VrfId = rndr.mainVRF
		}
		if b.Local {
			l.Probability = weight
		}
		out = append(out, l)
	}
	if len(out) == 1 {
		out[0].Probability = 0
	}
	return out
}

// dnatSlabs hands out the messages of the DNATs a resync builds from shared blocks,
// so that rendering 10,000 services costs a few hundred allocations instead of one per
// message. Outside a resync the blocks are empty and every message is allocated on its
// own (an incremental change renders one service). A block stays in memory as long as
// one of its messages is referenced: at most slabSize messages of each kind per
// rendering kept, bounded by the size of the last resync.
type dnatSlabs struct {
	dnats       []vpp_nat.DNat44
	mappings    []vpp_nat.DNat44_StaticMapping
	mappingPtrs []*vpp_nat.DNat44_StaticMapping
	localIPs    []vpp_nat.DNat44_StaticMapping_LocalIP
	localPtrs   []*vpp_nat.DNat44_StaticMapping_LocalIP
	services    []renderedService
	on          bool
}

// slabSize is the number of elements of one block.
const slabSize = 1024

// carve returns n zero elements cut from the block (from a new block when it is
// short), or a slice of their own when blocks are off or n is large. The
// slice has capacity n, so appending to it never writes into the block.
func carve[T any](on bool, block *[]T, n int) []T {
	if !on || n > slabSize/8 {
		return make([]T, n)
	}
	if len(*block) < n {
		*block = make([]T, slabSize)
	}
	out := (*block)[:n:n]
	*block = (*block)[n:]
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

package nat44

import (
	"net"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// renderedService is a service's DNAT as last staged, with what a change of the node
// IPs needs to build the next one from it.
type renderedService struct {
	svc  *renderer.FlatService
	key  string
	dnat *vpp_nat.DNat44
	// ports are the rendered ports of a service with a node port (nil otherwise), in
	// the order of their mappings in dnat.
	ports []renderedPort
	// nodeGen is the generation of the node IPs the node ports were rendered for.
	nodeGen uint64
	// routes are the reject and drop routes the service wants (reject.go).
	routes []serviceRoute
	// externals are the external IPs it needs identity and pool values for (external.go).
	externals []string
}

// renderedPort is the part of a DNAT that renders one port of a node-port service.
type renderedPort struct {
	// fixed are the mappings on the cluster and external IPs.
	fixed []*vpp_nat.DNat44_StaticMapping
	// onNodes are the mappings on the node IPs, aligned with the renderer's node IPs of
	// generation renderedService.nodeGen (nil: none on that IP; all nil without node
	// port).
	onNodes []*vpp_nat.DNat44_StaticMapping
	// What a mapping of the port on one more node IP is made of (locals: those of
	// external traffic).
	locals   []*vpp_nat.DNat44_StaticMapping_LocalIP
	proto    vpp_nat.DNat44_Protocol
	twiceNAT vpp_nat.DNat44_StaticMapping_TwiceNatMode
	nodePort uint16
}

// render builds the DNat44 of a service, labelled "<namespace>/<name>", into r. For
// each port (in name order) with at least one usable backend it has one static
// mapping per exposed address: every cluster IP and external IP on the service port,
// every node IP on the node port. IPv6 addresses are left out (NAT44), and so are
// ports 0. The mappings of a port share its locals.
//
// Twice-NAT: external IPs of cluster-wide services translate the source too
// (ENABLED), so that a remote backend answers through this node; everything else
// translates the source only when a backend reaches itself through the service
// (SELF, source becomes the NAT loopback).
func (rndr *Renderer) render(svc *renderer.FlatService, r *renderedService, sl *dnatSlabs) {
	r.svc, r.ports, r.nodeGen = svc, nil, rndr.nodeGen
	r.routes = rndr.wantedRoutes(svc)
	r.externals = rndr.wantedExternalIPs(svc)
	if r.key == "" { // a record renders one service: the key never changes
		// The label is a substring of the key: both cost one string.
		r.key = vpp_nat.DNAT44Prefix + svc.ID.Namespace + "/" + svc.ID.Name
	}
	dnat := &carve(sl.on, &sl.dnats, 1)[0]
	dnat.Label = r.key[len(vpp_nat.DNAT44Prefix):]
	r.dnat = dnat
	perPort := len(svc.ClusterIPs) + len(svc.ExternalIPs)
	hasNodePort := svc.HasNodePort()
	if hasNodePort {
		perPort += len(rndr.nodeAddrs)
		r.ports = make([]renderedPort, 0, len(svc.Ports))
	}
	dnat.StMappings = carve(sl.on, &sl.mappingPtrs, perPort*len(svc.Ports))[:0]
	if !sl.on {
		// Outside a resync the mappings of the service are one block (a node-port
		// service has one per node IP), handed out by mapping.
		sl.mappings = make([]vpp_nat.DNat44_StaticMapping, perPort*len(svc.Ports))
		defer func() { sl.mappings = nil }()
	}
	for i := range svc.Ports {
		port := &svc.Ports[i]
		// The cluster IPs take internal traffic, the external IPs and node ports
		// external traffic: each its own backends (the processor selected them by the
		// traffic policies; one list when they are the same).
		locals := rndr.portLocals(port.Backends, sl)
		extLocals := locals
		if !port.SameBackends() {
			extLocals = rndr.portLocals(port.ExternalBackends, sl)
		}
		if len(locals) == 0 && len(extLocals) == 0 {
			continue
		}
		rp := renderedPort{locals: extLocals, proto: vpp_nat.DNat44_TCP, twiceNAT: vpp_nat.DNat44_StaticMapping_ENABLED, nodePort: port.Port.NodePort}
		if port.Port.Protocol == renderer.UDP {
			rp.proto = vpp_nat.DNat44_UDP
		}
		// External IPs and node ports of a cluster-wide service are reached from outside
		// the cluster and may be load-balanced to a backend on another node: the source
		// is translated to this node's NAT loopback (twice-NAT), so the reply comes back
		// through this node, which holds the session. Without it the backend's node
		// routes the reply straight to the client, SNATed to its own IP, and the client
		// drops it. Upstream translated only external IPs this way and left node ports
		// with self-twice-NAT, so a NodePort answered only when the chosen backend was
		// local (the cluster lab's NodePort test showed it); kube-proxy likewise SNATs
		// NodePort traffic of Cluster-policy services. NodeLocal services send external
		// traffic to local backends only and keep the client's address.
		if svc.TrafficPolicy == renderer.NodeLocal {
			rp.twiceNAT = vpp_nat.DNat44_StaticMapping_SELF
		}
		start := len(dnat.StMappings)
		if len(locals) > 0 {
			for _, a := range svc.ClusterIPs {
				if a.IsIPv4() && port.Port.Port != 0 {
					dnat.StMappings = append(dnat.StMappings, rndr.mapping(svc, locals, rp.proto, a.Text, port.Port.Port, vpp_nat.DNat44_StaticMapping_SELF, sl))
				}
			}
		}
		if len(extLocals) > 0 {
			for _, a := range svc.ExternalIPs {
				if a.IsIPv4() && port.Port.Port != 0 {
					dnat.StMappings = append(dnat.StMappings, rndr.mapping(svc, extLocals, rp.proto, a.Text, port.Port.Port, rp.twiceNAT, sl))
				}
			}
		}
		if !hasNodePort {
			continue
		}
		rp.fixed = dnat.StMappings[start:len(dnat.StMappings):len(dnat.StMappings)]
		rp.onNodes = make([]*vpp_nat.DNat44_StaticMapping, len(rndr.nodeAddrs))
		if rp.nodePort != 0 && len(rp.locals) > 0 {
			for j := range rndr.nodeAddrs {
				if m := rndr.nodeMapping(svc, &rp, j, sl); m != nil {
					rp.onNodes[j] = m
					dnat.StMappings = append(dnat.StMappings, m)
				}
			}
		}
		r.ports = append(r.ports, rp)
	}
}

// mapping returns a new static mapping of the port to locals.
func (rndr *Renderer) mapping(svc *renderer.FlatService, locals []*vpp_nat.DNat44_StaticMapping_LocalIP, proto vpp_nat.DNat44_Protocol,
	extIP string, extPort uint16, twiceNAT vpp_nat.DNat44_StaticMapping_TwiceNatMode, sl *dnatSlabs) *vpp_nat.DNat44_StaticMapping {
	m := &carve(sl.on || len(sl.mappings) > 0, &sl.mappings, 1)[0]
	m.ExternalIp, m.ExternalPort, m.Protocol = extIP, uint32(extPort), proto
	m.TwiceNat, m.SessionAffinity = twiceNAT, rndr.vppAffinity(svc.SessionAffinityTimeout)
	m.LocalIps = locals // shared by the mappings of the port; never modified
	return m
}

// nodeMapping returns the mapping of a node port on the j-th node IP, nil when there is
// none (IPv6, or a single local on a peer's address: see isPeerOnNodeNetwork).
func (rndr *Renderer) nodeMapping(svc *renderer.FlatService, rp *renderedPort, j int, sl *dnatSlabs) *vpp_nat.DNat44_StaticMapping {
	a := &rndr.nodeAddrs[j]
	if !a.IsIPv4() || len(rp.locals) == 0 || (len(rp.locals) == 1 && rndr.nodePeers[j]) {
		return nil
	}
	return rndr.mapping(svc, rp.locals, rp.proto, a.Text, rp.nodePort, rp.twiceNAT, sl)
}

// withNodeIPs returns the DNAT of a node-port service for the current node IPs, built
// from the one rendered for the previous node IPs: the mappings on cluster, external
// and remaining node IPs are the same messages, only the mappings on new node IPs are
// new. oldIndex gives, for each current node IP, its index among the previous ones (-1:
// new). The DNat44 and its list of mappings are new objects.
func (rndr *Renderer) withNodeIPs(r *renderedService, oldIndex []int) {
	count := 0
	for i := range r.ports {
		count += len(r.ports[i].fixed) + len(oldIndex)
	}
	dnat := &vpp_nat.DNat44{Label: r.dnat.Label, StMappings: make([]*vpp_nat.DNat44_StaticMapping, 0, count)}
	ports := make([]renderedPort, len(r.ports))
	for i := range r.ports {
		rp := r.ports[i]
		dnat.StMappings = append(dnat.StMappings, rp.fixed...)
		onNodes := make([]*vpp_nat.DNat44_StaticMapping, len(oldIndex))
		if rp.nodePort != 0 {
			for j, old := range oldIndex {
				var m *vpp_nat.DNat44_StaticMapping
				if old >= 0 {
					m = rp.onNodes[old] // same IP, same port: the same mapping (or none)
				} else {
					m = rndr.nodeMapping(r.svc, &rp, j, &rndr.slabs)
				}
				if m != nil {
					onNodes[j] = m
					dnat.StMappings = append(dnat.StMappings, m)
				}
			}
		}
		rp.onNodes = onNodes
		ports[i] = rp
	}
	r.dnat, r.ports, r.nodeGen = dnat, ports, rndr.nodeGen // the routes stay
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

// setNodeIPs keeps the node IPs with their text and whether each is a peer's address
// on this node's network, and counts a new generation of them.
func (rndr *Renderer) setNodeIPs(nodeIPs *renderer.IPAddresses) {
	rndr.nodeIPs = nodeIPs.Copy()
	rndr.nodeAddrs = make([]renderer.Address, nodeIPs.Len())
	rndr.nodePeers = make([]bool, nodeIPs.Len())
	for i, ip := range nodeIPs.List() {
		if ip4 := ip.To4(); ip4 != nil {
			ip = ip4
		}
		rndr.nodeAddrs[i] = renderer.NewAddress(ip)
		rndr.nodePeers[i] = rndr.isPeerOnNodeNetwork(ip)
	}
	rndr.nodeGen++
}

// renderInputs is everything besides the service and the node IPs that a rendering
// reads: when it changes, a resync renders every service anew.
type renderInputs struct {
	nodeIP           string
	nodeNet          string
	mainVRF, podVRF  uint32
	noOverlay        bool
	localEndpointWgt uint32
	affinityEnforced bool // the mappings' affinity is the timeout minus affinitySlack
}

func (rndr *Renderer) renderInputs() renderInputs {
	in := renderInputs{nodeIP: rndr.nodeIP.String(), mainVRF: rndr.mainVRF, podVRF: rndr.podVRF,
		noOverlay: rndr.noOverlay, localEndpointWgt: rndr.Config.LocalEndpointWeight(), affinityEnforced: rndr.enforcesAffinity()}
	if rndr.nodeNet != nil {
		in.nodeNet = rndr.nodeNet.String()
	}
	return in
}

// localKey identifies a LocalIP message by its content, packed for the fast path of
// Go maps: the IPv4 address, the port, whether the VRF is the main one and the
// weight's kind (localWeight... constants).
type localKey uint64

// Kinds of weight of a LocalIP.
const (
	remoteWeight = iota // 1
	localWeight         // serviceLocalEndpointWeight
	singleLocal         // 0: the only local of a mapping
)

func newLocalKey(v4 uint32, port uint16, mainVRF bool, weight int) localKey {
	k := uint64(v4)<<32 | uint64(port)<<16 | uint64(weight)
	if mainVRF {
		k |= 1 << 8
	}
	return localKey(k)
}

// portLocals returns the locals of one service port as the messages of a static
// mapping (the processor selected the backends by the traffic policies). Weights:
// serviceLocalEndpointWeight for local backends, 1 for remote ones, 0 when there is a
// single local (no load balancing). VRF: the main VRF for this node's own addresses
// (host-network backends of this node) and, in no-overlay mode, for everything that is
// not a pod of this node (routed through the node interconnect); the pod VRF
// otherwise. During a resync a message is shared by every port with the same backend
// (a pod backs many services).
func (rndr *Renderer) portLocals(groups []renderer.BackendGroup, sl *dnatSlabs) []*vpp_nat.DNat44_StaticMapping_LocalIP {
	n := 0
	for _, g := range groups {
		for k := range g.Endpoints {
			if g.Endpoints[k].IsIPv4() {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	out := carve(sl.on, &sl.localPtrs, n)[:0]
	var msgs []vpp_nat.DNat44_StaticMapping_LocalIP // outside a resync: one allocation for the port
	if sl.locals == nil {
		msgs = make([]vpp_nat.DNat44_StaticMapping_LocalIP, n)
	}
	for _, g := range groups {
		for k := range g.Endpoints {
			ep := &g.Endpoints[k]
			v4, ok := ep.IPv4()
			if !ok {
				continue
			}
			localPod := ep.Local && !ep.HostNetwork
			thisNode := ep.Local && ep.HostNetwork
			mainVRF := thisNode || (rndr.noOverlay && !localPod)
			weight := remoteWeight
			switch {
			case n == 1:
				weight = singleLocal
			case ep.Local:
				weight = localWeight
			}
			key := newLocalKey(v4, g.TargetPort, mainVRF, weight)
			if msgs != nil {
				l := &msgs[len(out)]
				rndr.fillLocalIP(l, key, ep.Text)
				out = append(out, l)
				continue
			}
			out = append(out, rndr.localIP(key, ep.Text, sl))
		}
	}
	return out
}

// localIP returns the LocalIP message with the given content that this resync built
// into sl, building it on first use.
func (rndr *Renderer) localIP(key localKey, text string, sl *dnatSlabs) *vpp_nat.DNat44_StaticMapping_LocalIP {
	if l := sl.locals[key]; l != nil {
		return l
	}
	l := &carve(sl.on, &sl.localIPs, 1)[0]
	rndr.fillLocalIP(l, key, text)
	sl.locals[key] = l
	return l
}

// fillLocalIP sets the content of a LocalIP message.
func (rndr *Renderer) fillLocalIP(l *vpp_nat.DNat44_StaticMapping_LocalIP, key localKey, text string) {
	l.LocalIp, l.LocalPort, l.VrfId, l.Probability = text, uint32(uint16(key>>16)), rndr.podVRF, 1
	if key&(1<<8) != 0 {
		l.VrfId = rndr.mainVRF
	}
	switch key & 0xff {
	case localWeight:
		l.Probability = rndr.localWeight
	case singleLocal:
		l.Probability = 0
	}
}

// dnatSlabs hands out the messages of the DNATs a resync builds from shared blocks,
// so that rendering 10,000 services costs a few hundred allocations instead of one per
// message, and keeps the LocalIP messages built by content (locals), so that the
// services a pod backs share its message. Outside a resync the blocks are empty,
// locals is nil, and every message is allocated on its own (an incremental change
// renders one service). A resync rendered by several goroutines has one dnatSlabs per
// goroutine (equal LocalIPs are shared within a goroutine's share). A block stays in
// memory as long as one of its messages is referenced: at most slabSize messages of
// each kind per rendering kept, bounded by the size of the last resync.
type dnatSlabs struct {
	locals      map[localKey]*vpp_nat.DNat44_StaticMapping_LocalIP
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

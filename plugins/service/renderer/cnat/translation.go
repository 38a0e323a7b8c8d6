package cnat

import (
	"slices"
	"strings"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// flowHashSrcIP is the ip_flow_hash_config_v2 bit of the source address
// (IP_API_V2_FLOW_HASH_SRC_IP, vnet/ip/ip_types.api): a translation hashing on it alone
// sends every flow of a client to the same path while the paths do not change.
const flowHashSrcIP = 0x01

// tid is VPP's identity of a translation (vpp_cnat.TranslationID without building
// its text): the VIP address in canonical form, the VIP port and the protocol. The
// address is the renderer.Address's text, so a tid costs no allocation.
type tid struct {
	vip   string
	port  uint32
	proto vpp_cnat.Protocol
}

// idOf returns the identity of a translation.
func idOf(t *vpp_cnat.Translation) tid {
	return tid{vip: t.GetVipAddress(), port: t.GetVipPort(), proto: t.GetProtocol()}
}

// byID orders translations as a set holds them (vpp_cnat.CompareInSet: the order the
// set descriptor reads a change of fastest); each identity has one place in it.
func byID(a, b *vpp_cnat.Translation) int { return vpp_cnat.CompareInSet(a, b) }

// render builds the translations the service wants (whether it owns them or not),
// sorted by identity, each identity once (the first rendered of two with the same
// identity: cluster IP, then external IP, then node port). A translation's messages
// are cut from sl.
func (rndr *Renderer) render(svc *renderer.FlatService, sl *slabs) []*vpp_cnat.Translation {
	return rndr.translations(svc, rndr.nodeAddrs, true, nil, sl)
}

// nodePortTranslations builds the translations of the service's node ports on the
// node addresses addrs, sorted by identity. The paths of a port are those of its
// translation on another node IP in staged (the service's staged set, where a node
// port's translations share them), built only when there is none.
func (rndr *Renderer) nodePortTranslations(svc *renderer.FlatService, addrs []renderer.Address, staged []*vpp_cnat.Translation, sl *slabs) []*vpp_cnat.Translation {
	return rndr.translations(svc, addrs, false, staged, sl)
}

// translations builds the translations of the service's node ports on nodeAddrs and,
// when all, those of its cluster and external IPs. Node IPs are real addresses
// (interposed); external IPs and node ports take external traffic. The node ports'
// paths are taken from staged when it has them (nodePortTranslations).
func (rndr *Renderer) translations(svc *renderer.FlatService, nodeAddrs []renderer.Address, all bool,
	staged []*vpp_cnat.Translation, sl *slabs) []*vpp_cnat.Translation {
	perPort := 0
	if svc.HasNodePort() {
		perPort = len(nodeAddrs)
	}
	if all {
		perPort += len(svc.ClusterIPs) + len(svc.ExternalIPs)
	}
	out := sl.translationPtrs.take(sl.on, perPort*len(svc.Ports))[:0]
	masq := svc.TrafficPolicy == renderer.ClusterWide
	for i := range svc.Ports {
		p := &svc.Ports[i]
		proto, ok := protocolOf(p.Port.Protocol)
		if !ok {
			continue
		}
		// The paths of a port are built once per family and shared by its
		// translations of external traffic (external IPs, every node IP), and by the
		// cluster IPs' too when the backends are the same and not source-NATed.
		internal := &portPaths{backends: p.Backends}
		external := internal
		if !p.SameBackends() || masq {
			external = &portPaths{backends: p.ExternalBackends, masq: masq}
		}
		if all && p.Port.Port != 0 {
			for _, a := range svc.ClusterIPs {
				out = rndr.appendTranslation(out, sl, svc, a, p.Port.Port, proto, internal, exposure{})
			}
			for _, a := range svc.ExternalIPs {
				out = rndr.appendTranslation(out, sl, svc, a, p.Port.Port, proto, external,
					exposure{external: true, realIP: rndr.isNodeAddr(a), masq: masq})
			}
		}
		if p.Port.NodePort != 0 {
			if len(staged) > 0 {
				sp := stagedPaths(staged, p.Port.NodePort, proto, external, nodeAddrs)
				external = &sp
			}
			how := exposure{external: true, realIP: true, masq: masq}
			for _, a := range nodeAddrs {
				out = rndr.appendTranslation(out, sl, svc, a, p.Port.NodePort, proto, external, how)
			}
		}
	}
	// Node IPs are kept in text order: a service's translations are most often built
	// in the order of sets already (by port first: its ports below the node port
	// range, in ascending order), checked in one pass.
	if !slices.IsSortedFunc(out, byID) {
		slices.SortStableFunc(out, byID)
	}
	return slices.CompactFunc(out, func(a, b *vpp_cnat.Translation) bool { return idOf(a) == idOf(b) })
}

// stagedPaths returns pp with the paths of the families of addrs taken from the
// first staged translation of the node port (port, proto) of each: an interposed
// (real IP) translation on that port carries the port's paths of external traffic,
// the ones pp builds.
func stagedPaths(staged []*vpp_cnat.Translation, port uint16, proto vpp_cnat.Protocol, pp *portPaths, addrs []renderer.Address) portPaths {
	out := portPaths{backends: pp.backends, masq: pp.masq}
	var need [2]bool
	for _, a := range addrs {
		if a.IsIPv4() {
			need[0] = true
		} else {
			need[1] = true
		}
	}
	for _, t := range staged {
		if t.GetVipPort() != uint32(port) || t.GetProtocol() != proto || !t.GetIsRealIp() {
			continue
		}
		f := 0
		if strings.Contains(t.GetVipAddress(), ":") {
			f = 1
		}
		if need[f] && !out.made[f] {
			out.paths[f], out.made[f] = t.GetPaths(), true
		}
		if out.made[0] == need[0] && out.made[1] == need[1] {
			break
		}
	}
	return out
}

// isNodePortOf tells whether t is the translation of one of the service's node ports
// (on any address).
func isNodePortOf(svc *renderer.FlatService, t *vpp_cnat.Translation) bool {
	for i := range svc.Ports {
		p := &svc.Ports[i]
		if proto, ok := protocolOf(p.Port.Protocol); ok && p.Port.NodePort != 0 &&
			uint32(p.Port.NodePort) == t.GetVipPort() && proto == t.GetProtocol() {
			return true
		}
	}
	return false
}

// exposure is how a service is exposed on an address: external traffic (node port,
// external or load balancer IP), a node's own address (realIP), source-NATed to this
// node's IP of the family (masq).
type exposure struct {
	external, realIP, masq bool
}

// portPaths are the paths of one service port to its backends of each family, built
// on first use (a node-port service has one translation per node IP: building the
// same paths for each was most of what an Endpoints change of such a service
// allocated). Staged values are never changed in place, so translations may share
// them.
type portPaths struct {
	backends []renderer.BackendGroup
	masq     bool
	paths    [2][]*vpp_cnat.Path // by family: IPv4, IPv6
	made     [2]bool
}

// of returns the paths of a family (ipv4), building them into sl on first use.
func (pp *portPaths) of(rndr *Renderer, ipv4 bool, sl *slabs) []*vpp_cnat.Path {
	f := 0
	if !ipv4 {
		f = 1
	}
	if !pp.made[f] {
		pp.paths[f], pp.made[f] = rndr.pathsOf(pp.backends, ipv4, pp.masq, sl), true
	}
	return pp.paths[f]
}

// pathsOf returns the paths to the backends of a family (ipv4), their source
// rewritten to this node's IP of the family when masq (and it has one).
func (rndr *Renderer) pathsOf(backends []renderer.BackendGroup, ipv4, masq bool, sl *slabs) []*vpp_cnat.Path {
	n := 0
	for _, g := range backends {
		for k := range g.Endpoints {
			if g.Endpoints[k].IsIPv4() == ipv4 {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	var src *vpp_cnat.Endpoint
	if masq {
		if ip := rndr.nodeIPOf(ipv4); ip != "" {
			src = &sl.endpoints.take(sl.on, 1)[0]
			src.Address = ip
		}
	}
	paths := sl.pathPtrs.take(sl.on, n)[:0]
	msgs := sl.paths.take(sl.on, n)
	dsts := sl.endpoints.take(sl.on, n)
	for _, g := range backends {
		for k := range g.Endpoints {
			ep := &g.Endpoints[k]
			if ep.IsIPv4() != ipv4 {
				continue
			}
			i := len(paths)
			dsts[i].Address, dsts[i].Port = ep.Text, uint32(g.TargetPort)
			msgs[i].Dst, msgs[i].Src = &dsts[i], src
			paths = append(paths, &msgs[i])
		}
	}
	return paths
}

// appendTranslation appends the translation of (a, port, proto) to the port's paths
// of a's family to out, unless a is of a family not served or there is no such path.
func (rndr *Renderer) appendTranslation(out []*vpp_cnat.Translation, sl *slabs, svc *renderer.FlatService, a renderer.Address,
	port uint16, proto vpp_cnat.Protocol, pp *portPaths, how exposure) []*vpp_cnat.Translation {
	if !rndr.serves(a) {
		return out
	}
	paths := pp.of(rndr, a.IsIPv4(), sl)
	if len(paths) == 0 {
		return out
	}
	t := &sl.translations.take(sl.on, 1)[0]
	t.VipAddress, t.VipPort, t.Protocol, t.IsRealIp, t.AllocPort, t.Paths = a.Text, uint32(port), proto, how.realIP, paths[0].GetSrc() != nil, paths
	if how.external && rndr.Maglev {
		t.LbType = vpp_cnat.Translation_MAGLEV
	}
	if svc.SessionAffinityTimeout > 0 {
		t.FlowHashConfig = flowHashSrcIP
	}
	return append(out, t)
}

// nodeIPOf returns this node's IP of a family ("" if none).
func (rndr *Renderer) nodeIPOf(ipv4 bool) string {
	if ipv4 {
		return rndr.nodeIP4
	}
	return rndr.nodeIP6
}

// protocolOf returns the cnat protocol of a service port's protocol.
func protocolOf(p renderer.ProtocolType) (vpp_cnat.Protocol, bool) {
	switch p {
	case renderer.TCP:
		return vpp_cnat.Protocol_TCP, true
	case renderer.UDP:
		return vpp_cnat.Protocol_UDP, true
	}
	return 0, false
}

// slabs hands out the messages a resync builds from shared blocks, so that
// rendering 10,000 services costs a few hundred allocations instead of one per
// message (a translation is a Translation, and per path a Path and
// its destination Endpoint). Outside a resync (on false) every message is allocated
// on its own: an incremental change renders one service. A block stays in memory
// as long as one of its messages is referenced: at most blockSize messages of each
// kind per rendering kept, bounded by the size of the last resync. Staged messages
// are never modified.
type slabs struct {
	on              bool
	translations    block[vpp_cnat.Translation]
	translationPtrs block[*vpp_cnat.Translation]
	endpoints       block[vpp_cnat.Endpoint]
	paths           block[vpp_cnat.Path]
	pathPtrs        block[*vpp_cnat.Path]
	sets            block[vpp_cnat.TranslationSet]
	records         block[renderedService]
}

// block is the unused rest of an array that elements are cut from.
type block[T any] struct{ rest []T }

// blockSize is the number of elements of one block.
const blockSize = 1024

// take returns n zero elements: cut from the block when on (a new block when the
// rest is short) or of their own when off or n is large. The slice has capacity n,
// so appending to it never writes into the block.
func (b *block[T]) take(on bool, n int) []T {
	if on && n <= blockSize/8 {
		if len(b.rest) < n {
			b.rest = make([]T, blockSize)
		}
		out := b.rest[:n:n]
		b.rest = b.rest[n:]
		return out
	}
	return make([]T, n)
}

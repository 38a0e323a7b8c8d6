package cnat

import (
	"sort"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// flowHashSrcIP is the ip_flow_hash_config_v2 bit of the source address
// (IP_API_V2_FLOW_HASH_SRC_IP, vnet/ip/ip_types.api): a translation hashing on it alone
// sends every flow of a client to the same path while the paths do not change.
const flowHashSrcIP = 0x01

// render builds the translations and routes the service wants.
func (rndr *Renderer) render(svc *renderer.FlatService) *renderedService {
	r := &renderedService{translations: make(map[string]*vpp_cnat.Translation)}
	for i := range svc.Ports {
		p := &svc.Ports[i]
		proto, ok := protocolOf(p.Port.Protocol)
		if !ok {
			continue
		}
		for _, a := range svc.ClusterIPs {
			rndr.addTranslation(r, svc, a, p.Port.Port, proto, p.Backends, exposure{})
		}
		masq := svc.TrafficPolicy == renderer.ClusterWide
		for _, a := range svc.ExternalIPs {
			rndr.addTranslation(r, svc, a, p.Port.Port, proto, p.ExternalBackends, exposure{external: true, realIP: rndr.isNodeAddr(a), masq: masq})
		}
		rndr.addNodePortTranslations(r, svc, rndr.nodeAddrs, p, proto)
	}
	r.routes = rndr.wantedRoutes(svc)
	return r
}

// exposure is how a service is exposed on an address: external traffic (node port,
// external or load balancer IP), a node's own address (realIP), source-NATed to this
// node's IP of the family (masq).
type exposure struct {
	external, realIP, masq bool
}

// addTranslation adds the translation of (a, port, proto) to r unless a is of a family
// not served, the port is 0 or no backend is of a's family.
func (rndr *Renderer) addTranslation(r *renderedService, svc *renderer.FlatService, a renderer.Address, port uint16,
	proto vpp_cnat.Protocol, backends []renderer.BackendGroup, how exposure) {
	if !rndr.serves(a) || port == 0 {
		return
	}
	rndr.addTranslationOf(r, svc, a, port, proto, rndr.pathsOf(backends, a.IsIPv4(), how.masq), how)
}

// addNodePortTranslations adds the translations of port p's node port on the node
// addresses addrs to r. The translations of a family share one list of paths (a
// node-port service has one translation per node IP: building the same paths for
// each was most of what an Endpoints change of such a service allocated); staged
// values are never changed in place.
func (rndr *Renderer) addNodePortTranslations(r *renderedService, svc *renderer.FlatService, addrs []renderer.Address,
	p *renderer.FlatPort, proto vpp_cnat.Protocol) {
	if p.Port.NodePort == 0 {
		return
	}
	how := exposure{external: true, realIP: true, masq: svc.TrafficPolicy == renderer.ClusterWide}
	var paths [2][]*vpp_cnat.Path // by family: IPv4, IPv6
	var made [2]bool
	for _, a := range addrs {
		if !rndr.serves(a) {
			continue
		}
		f := 0
		if !a.IsIPv4() {
			f = 1
		}
		if !made[f] {
			paths[f], made[f] = rndr.pathsOf(p.ExternalBackends, a.IsIPv4(), how.masq), true
		}
		rndr.addTranslationOf(r, svc, a, p.Port.NodePort, proto, paths[f], how)
	}
}

// pathsOf returns the paths to the backends of a family (ipv4), their source
// rewritten to this node's IP of the family when masq (and it has one).
func (rndr *Renderer) pathsOf(backends []renderer.BackendGroup, ipv4, masq bool) []*vpp_cnat.Path {
	var src *vpp_cnat.Endpoint
	if masq {
		if ip := rndr.nodeIPOf(ipv4); ip != "" {
			src = &vpp_cnat.Endpoint{Address: ip}
		}
	}
	var paths []*vpp_cnat.Path
	for _, g := range backends {
		for _, ep := range g.Endpoints {
			if ep.IsIPv4() != ipv4 {
				continue
			}
			paths = append(paths, &vpp_cnat.Path{Dst: &vpp_cnat.Endpoint{Address: ep.Text, Port: uint32(g.TargetPort)}, Src: src})
		}
	}
	return paths
}

// addTranslationOf adds the translation of (a, port, proto) to paths (of a's family)
// to r, unless there are none.
func (rndr *Renderer) addTranslationOf(r *renderedService, svc *renderer.FlatService, a renderer.Address, port uint16,
	proto vpp_cnat.Protocol, paths []*vpp_cnat.Path, how exposure) {
	if !rndr.serves(a) || port == 0 || len(paths) == 0 {
		return
	}
	t := &vpp_cnat.Translation{
		Vip:       &vpp_cnat.Endpoint{Address: a.Text, Port: uint32(port)},
		Protocol:  proto,
		IsRealIp:  how.realIP,
		AllocPort: paths[0].GetSrc() != nil,
		Paths:     paths,
	}
	if how.external && rndr.Maglev {
		t.LbType = vpp_cnat.Translation_MAGLEV
	}
	if svc.SessionAffinityTimeout > 0 {
		t.FlowHashConfig = flowHashSrcIP
	}
	r.translations[vpp_cnat.TranslationKey(a.Text, uint32(port), proto)] = t
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

// updateTranslations stages the change of a service's translations from old (of
// service oldID) to wanted (of newID) and returns the addresses whose count of
// translations went from or to zero (their routes must be staged again).
func (rndr *Renderer) updateTranslations(txn renderer.UpdateTxn, oldID, newID renderer.ServiceID,
	old, wanted map[string]*vpp_cnat.Translation) []string {
	var touched []string
	for _, key := range sortedKeys(old) {
		if _, kept := wanted[key]; kept && oldID == newID {
			continue
		}
		if last := rndr.release(txn, key, oldID); last != "" {
			touched = append(touched, last)
		}
	}
	for _, key := range sortedKeys(wanted) {
		t := wanted[key]
		if prev, ok := old[key]; ok && oldID == newID && rndr.owners[key] == newID && proto.Equal(prev, t) {
			continue
		}
		if first := rndr.put(txn, key, t, newID); first != "" {
			touched = append(touched, first)
		}
	}
	return touched
}

// put stages a translation of service id unless another service owns its key (logged);
// it returns the translation's address when it is the address's first translation.
func (rndr *Renderer) put(txn controller.ResyncOperations, key string, t *vpp_cnat.Translation, id renderer.ServiceID) (firstOf string) {
	owner, owned := rndr.owners[key]
	if owned && owner != id {
		rndr.Log.WithField("translation", key).Warnf("service %s exposes the address and port of service %s: not rendered", id, owner)
		return ""
	}
	txn.Put(key, t)
	if owned {
		return ""
	}
	rndr.owners[key] = id
	vip := t.GetVip().GetAddress()
	rndr.vips[vip]++
	if rndr.vips[vip] == 1 {
		return vip
	}
	return ""
}

// release stages the deletion of a translation that service id owns (nothing for
// another's); it returns the translation's address when it was its last.
func (rndr *Renderer) release(txn renderer.UpdateTxn, key string, id renderer.ServiceID) (lastOf string) {
	if owner, ok := rndr.owners[key]; !ok || owner != id {
		return ""
	}
	delete(rndr.owners, key)
	txn.Delete(key)
	vip, _, _, _ := vpp_cnat.ParseTranslationKey(key)
	if rndr.vips[vip]--; rndr.vips[vip] > 0 {
		return ""
	}
	delete(rndr.vips, vip)
	return vip
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

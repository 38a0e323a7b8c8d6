package processor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Address types of an EndpointSlice (discovery.k8s.io/v1 AddressType).
const (
	addressTypeIPv4 = "IPv4"
	addressTypeIPv6 = "IPv6"
)

// sliceState is one EndpointSlice of a service, as the object and parsed.
type sliceState struct {
	key    string // the slice's key without the resource prefix: "<name>/namespace/<namespace>"
	obj    *esmodel.EndpointSlice
	parsed endpointSubset
	// classGen is the node context generation the addresses were classified for.
	classGen uint64
	// seen is the last resync that had the slice; pending is the object that resync
	// parses anew (nil: none).
	seen    uint64
	pending *esmodel.EndpointSlice
}

// endpointHints are the topology hints of one ready endpoint (shared with the
// Kubernetes object, never modified).
type endpointHints struct {
	zones, nodes []string
}

// sliceKey returns the key of a slice without the resource prefix.
func sliceKey(name, namespace string) string { return name + "/namespace/" + namespace }

// setSlice sets (nil: removes) the slice under key, keeping the list in key order, and
// parses it. The cost is that of parsing the one slice.
func (s *Service) setSlice(key string, es *esmodel.EndpointSlice, sl *renderSlabs) {
	i, found := slices.BinarySearchFunc(s.slices, key, func(x *sliceState, k string) int { return strings.Compare(x.key, k) })
	if es == nil {
		if found {
			st := s.slices[i]
			s.parseSlice(st, nil, sl)
			s.slices = slices.Delete(s.slices, i, i+1)
		}
		return
	}
	if !found {
		s.slices = slices.Insert(s.slices, i, &sliceState{key: key})
	}
	s.parseSlice(s.slices[i], es, sl)
}

// parseSlice parses one EndpointSlice into st (nil: forgets it, for the gauges).
// Endpoints that are ready are the slice's backends; those serving and terminating
// without being ready are kept apart, the fallback when a port has no ready endpoint
// (kube-proxy since v1.28); the others are ignored. A slice of an address type other
// than IPv4 and IPv6 (FQDN) has no backends. Kubernetes uses the first address of an
// endpoint only, and so does the processor.
func (s *Service) parseSlice(st *sliceState, es *esmodel.EndpointSlice, sl *renderSlabs) {
	oldBad, oldRejected, oldEps := st.parsed.badIPs, st.parsed.rejected, st.parsed.checks.counts
	st.obj, st.parsed, st.classGen = es, endpointSubset{}, s.sp.nodeGen
	defer func() {
		s.sp.stats.addSkipped(0, 0, st.parsed.badIPs-oldBad)
		s.sp.stats.addRejected(&oldRejected, &st.parsed.rejected)
		s.sp.stats.addRejectedEndpoints(&oldEps, &st.parsed.checks.counts)
	}()
	if es == nil {
		return
	}
	p := &st.parsed
	p.fromSlice = true
	switch es.GetAddressType() {
	case addressTypeIPv4:
		p.family = famIPv4
	case addressTypeIPv6:
		p.family = famIPv6
	default:
		s.log().WithFields(logrus.Fields{"slice": es.GetName(), "addressType": es.GetAddressType()}).
			Debug("EndpointSlice of an address type without IPs ignored")
		return
	}
	eps := es.GetEndpoints()
	p.addrs = carve(sl.on, &sl.addrs, len(eps))[:0]
	for _, e := range eps {
		if len(e.GetAddresses()) == 0 {
			continue
		}
		ready, fallback := e.GetReady(), e.GetServing() && e.GetTerminating()
		if !ready && !fallback {
			continue
		}
		pods := len(p.localPods)
		ep, ok := s.endpoint(p, e.GetAddresses()[0], e.GetTargetRef(), &p.badIPs)
		if !ok {
			continue
		}
		if familyOf(ep.Address) != p.family {
			// The API server refuses an address of another family than the slice's
			// address type (ValidateEndpointSlice); one written past it is skipped,
			// so that each family's endpoints come from its own slices only.
			p.badIPs++
			s.log().WithFields(logrus.Fields{"slice": es.GetName(), "ip": ep.Text, "addressType": es.GetAddressType()}).
				Warn("endpoint address of another family than the slice's address type skipped")
			p.localPods = p.localPods[:pods]
			continue
		}
		if !ready {
			ep.Terminating = true
			p.fallback = append(p.fallback, ep)
			continue
		}
		zones, nodes := e.GetHintsForZones(), e.GetHintsForNodes()
		if (len(zones) > 0 || len(nodes) > 0) && p.hints == nil {
			p.hints = make([]endpointHints, len(p.addrs), len(eps))
		}
		if p.hints != nil {
			p.hints = append(p.hints, endpointHints{zones: zones, nodes: nodes})
		}
		p.addrs = append(p.addrs, ep)
	}
	p.ports = carve(sl.on, &sl.epPorts, len(es.GetPorts()))[:0]
	for pi, port := range es.GetPorts() {
		if port.GetPort() < 1 || port.GetPort() > 65535 {
			s.reject(&p.rejected, fieldEndpointPort, fmt.Sprintf("endpointslice %s ports[%d].port", es.GetName(), pi),
				port.GetPort(), "outside 1-65535")
			continue
		}
		proto, ok := parseProtocol(port.GetProtocol())
		if !ok {
			continue // SCTP or unknown: no service port of the renderers matches it
		}
		p.ports = append(p.ports, endpointPort{name: port.GetName(), port: uint16(port.GetPort()), proto: proto})
	}
}

// parseProtocol returns the renderer protocol of a Kubernetes protocol name ("" is
// TCP, the Kubernetes default); ok is false for SCTP and unknown protocols.
func parseProtocol(name string) (renderer.ProtocolType, bool) {
	switch strings.ToUpper(name) {
	case protocolTCP, "":
		return renderer.TCP, true
	case protocolUDP:
		return renderer.UDP, true
	}
	return 0, false
}

// sourceSubsets appends to out the parsed endpoints the service's backends come from:
// its EndpointSlices when it has any, else the subsets of its legacy Endpoints
// (written by a contiv-ksr older than this agent: the rolling upgrade).
func (s *Service) sourceSubsets(out []*endpointSubset) []*endpointSubset {
	if len(s.slices) > 0 {
		for _, st := range s.slices {
			if st.classGen != s.sp.nodeGen { // this node's subnets or addresses changed
				s.parseSlice(st, st.obj, &s.sp.slabs)
			}
			out = append(out, &st.parsed)
		}
		return out
	}
	for i := range s.subsets {
		out = append(out, &s.subsets[i])
	}
	return out
}

// portGroup is one source of endpoints of a service port: a subset and the target port.
type portGroup struct {
	sub    *endpointSubset
	target uint16
}

// selection is what the processor chose for one service port on this node.
type selection struct {
	internal, external []renderer.BackendGroup
	hasEndpoints       bool
}

// topology modes (kube-proxy's topologyModeFromHints).
const (
	topologyNone = iota
	topologySameZone
	topologySameNode
)

// selectEndpoints chooses the backends of one service port as kube-proxy v1.34 does
// (pkg/proxy/topology.go CategorizeEndpoints, and the proxiers' use of its result):
//   - cluster endpoints: the ready ones, restricted by the topology hints when every
//     ready endpoint has a node hint and one is for this node (PreferSameNode), else
//     when every ready endpoint has a zone hint and one is for this node's zone
//     (PreferClose, PreferSameZone); without a ready endpoint, the serving and
//     terminating ones;
//   - local endpoints: the ready endpoints of this node, else its serving and
//     terminating ones (no topology);
//   - internal traffic (cluster IPs) uses the local endpoints with
//     internalTrafficPolicy Local, the cluster endpoints otherwise; external traffic
//     (node ports, external IPs, load balancer IPs) the local endpoints with
//     externalTrafficPolicy Local, the cluster endpoints otherwise;
//   - the port has endpoints when it has a ready or a serving and terminating
//     endpoint anywhere.
//
// When nothing is filtered out the groups share the subsets' address lists, and
// external traffic shares the internal list when both use the same endpoints.
func (s *Service) selectEndpoints(groups []portGroup, internalLocal, externalLocal bool, sl *renderSlabs) selection {
	var sel selection
	if len(groups) == 0 {
		return sel
	}
	ready, fallback := 0, 0
	for _, g := range groups {
		ready += len(g.sub.addrs)
		fallback += len(g.sub.fallback)
	}
	sel.hasEndpoints = ready+fallback > 0
	if !sel.hasEndpoints {
		return sel
	}
	var cluster []renderer.BackendGroup
	if !internalLocal || !externalLocal {
		if ready > 0 {
			mode := s.sp.topologyMode(groups)
			var keep func(sub *endpointSubset, i int) bool
			if mode != topologyNone {
				keep = func(sub *endpointSubset, i int) bool { return s.sp.forThisNode(mode, sub.hints[i]) }
			}
			cluster = collect(groups, false, keep, sl)
		} else {
			cluster = collect(groups, true, nil, sl)
		}
	}
	var local []renderer.BackendGroup
	if internalLocal || externalLocal {
		local = collect(groups, false, func(sub *endpointSubset, i int) bool { return sub.addrs[i].Local }, sl)
		if len(local) == 0 {
			local = collect(groups, true, func(sub *endpointSubset, i int) bool { return sub.fallback[i].Local }, sl)
		}
	}
	sel.internal, sel.external = cluster, cluster
	if internalLocal {
		sel.internal = local
	}
	if externalLocal {
		sel.external = local
	}
	return sel
}

// joinFamilies returns the backend groups of both families, the IPv4 groups first
// (each group holds one family: a renderer of one family skips the other's groups);
// one family's list itself when the other has none, else a list cut from sl.
func joinFamilies(groups4, groups6 []renderer.BackendGroup, sl *renderSlabs) []renderer.BackendGroup {
	if len(groups6) == 0 {
		return groups4
	}
	if len(groups4) == 0 {
		return groups6
	}
	out := carve(sl.on, &sl.groups, len(groups4)+len(groups6))[:0]
	return append(append(out, groups4...), groups6...)
}

// collect returns the backend groups of the ready endpoints of the groups (of the
// serving and terminating ones with fallback) that keep accepts (nil: all), sharing a
// subset's list when it keeps all of it; the list is cut from the blocks sl.
func collect(groups []portGroup, fallback bool, keep func(sub *endpointSubset, i int) bool, sl *renderSlabs) []renderer.BackendGroup {
	var out []renderer.BackendGroup
	for _, g := range groups {
		list := g.sub.addrs
		if fallback {
			list = g.sub.fallback
		}
		if len(list) == 0 {
			continue
		}
		if keep != nil {
			var kept []renderer.Endpoint
			all := true
			for i := range list {
				if keep(g.sub, i) {
					if !all {
						kept = append(kept, list[i])
					}
					continue
				}
				if all {
					all = false
					kept = append(make([]renderer.Endpoint, 0, len(list)), list[:i]...)
				}
			}
			if !all {
				list = kept
			}
		}
		if len(list) > 0 {
			if out == nil {
				out = carve(sl.on, &sl.groups, len(groups))[:0]
			}
			out = append(out, renderer.BackendGroup{TargetPort: g.target, Endpoints: list})
		}
	}
	return out
}

// topologyMode returns the topology mode of a port's endpoints for this node
// (kube-proxy's topologyModeFromHints, with PreferSameTrafficDistribution on, its
// default in v1.34): same node when every ready endpoint has a node hint and one is
// for this node, else same zone when every ready endpoint has a zone hint and one is
// for this node's zone, else none. kube-proxy reads the hints only, not the service's
// trafficDistribution: the EndpointSlice controller sets them from it.
func (sp *ServiceProcessor) topologyMode(groups []portGroup) int {
	allNode, allZone, forNode, forZone := true, true, false, false
	for _, g := range groups {
		if len(g.sub.addrs) == 0 {
			continue
		}
		if g.sub.hints == nil {
			return topologyNone // a ready endpoint without hints
		}
		for _, h := range g.sub.hints {
			if len(h.nodes) == 0 {
				allNode = false
			} else if slices.Contains(h.nodes, sp.nodeName) {
				forNode = true
			}
			if len(h.zones) == 0 {
				allZone = false
			} else if slices.Contains(h.zones, sp.zone) {
				forZone = true
			}
		}
	}
	switch {
	case allNode && forNode:
		return topologySameNode
	case allZone && forZone:
		return topologySameZone
	}
	return topologyNone
}

// forThisNode tells whether an endpoint with hints h serves this node in mode.
func (sp *ServiceProcessor) forThisNode(mode int, h endpointHints) bool {
	switch mode {
	case topologySameNode:
		return slices.Contains(h.nodes, sp.nodeName)
	case topologySameZone:
		return slices.Contains(h.zones, sp.zone)
	}
	return true
}

// dedupe drops the repeated (address, target port) pairs of groups, keeping the first
// (an endpoint that the EndpointSlice controller moves from one slice to another is
// in both for a moment; kube-proxy keeps one). It returns groups itself when nothing
// repeats.
func dedupe(groups []renderer.BackendGroup) []renderer.BackendGroup {
	if len(groups) < 2 {
		return groups
	}
	type key struct {
		addr renderer.Address
		port uint16
	}
	seen := make(map[key]struct{})
	repeated := false
	for _, g := range groups {
		for _, ep := range g.Endpoints {
			k := key{ep.Address, g.TargetPort}
			if _, ok := seen[k]; ok {
				repeated = true
				break
			}
			seen[k] = struct{}{}
		}
	}
	if !repeated {
		return groups
	}
	clear(seen)
	out := make([]renderer.BackendGroup, 0, len(groups))
	for _, g := range groups {
		kept := make([]renderer.Endpoint, 0, len(g.Endpoints))
		for _, ep := range g.Endpoints {
			k := key{ep.Address, g.TargetPort}
			if _, ok := seen[k]; ok {
				continue
			}
			seen[k] = struct{}{}
			kept = append(kept, ep)
		}
		if len(kept) > 0 {
			out = append(out, renderer.BackendGroup{TargetPort: g.TargetPort, Endpoints: kept})
		}
	}
	return out
}

// resyncSlice records that the resync of generation gen has the slice under key,
// creating its state, and marks it to be parsed when it is not the very object parsed
// before for the current node context. It runs on the resync's goroutine (the slices
// are parsed later, in shares: resyncSlices).
func (s *Service) resyncSlice(key string, es *esmodel.EndpointSlice, gen uint64) {
	i, found := slices.BinarySearchFunc(s.slices, key, func(x *sliceState, k string) int { return strings.Compare(x.key, k) })
	if !found {
		s.slices = slices.Insert(s.slices, i, &sliceState{key: key})
	}
	st := s.slices[i]
	st.seen = gen
	if st.obj != es || st.classGen != s.sp.nodeGen {
		st.pending = es
	}
}

// resyncSlices parses the slices that the resync of generation gen changed and drops
// those it did not have; it tells whether any changed.
func (s *Service) resyncSlices(gen uint64, sl *renderSlabs) bool {
	changed := false
	kept := s.slices[:0]
	for _, st := range s.slices {
		switch {
		case st.seen != gen:
			s.parseSlice(st, nil, sl)
			changed = true
			continue
		case st.pending != nil:
			s.parseSlice(st, st.pending, sl)
			st.pending = nil
			changed = true
		}
		kept = append(kept, st)
	}
	clear(s.slices[len(kept):])
	s.slices = kept
	return changed
}

// usesHints tells whether an endpoint of the service carries topology hints (its
// rendering then depends on this node's name and zone).
func (s *Service) usesHints() bool {
	for _, st := range s.slices {
		if st.parsed.hints != nil {
			return true
		}
	}
	return false
}

package processor

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Values of the Kubernetes service fields that the processor interprets.
const (
	clusterIPNone      = "None"
	trafficPolicyLocal = "Local"
	affinityClientIP   = "ClientIP"
	serviceTypeLB      = "LoadBalancer"
	targetKindPod      = "Pod"
	protocolTCP        = "TCP"
	protocolUDP        = "UDP"
	protocolSCTP       = "SCTP"
)

// Service is one Kubernetes service as the processor sees it: its definition
// (metadata) and its Endpoints, which arrive independently and in any order, combined
// by Refresh into a ContivService and the list of local backend pods.
//
// Both halves are parsed once when they are set (IPs, protocols, port names); Refresh
// then only combines them, so re-rendering a service after a change of the other half
// costs no parsing.
type Service struct {
	sp *ServiceProcessor
	id renderer.ServiceID

	meta      *svcmodel.Service
	endpoints *epmodel.Endpoints
	spec      *serviceSpec     // parsed meta, nil when meta is nil
	subsets   []endpointSubset // parsed endpoints
	// slices are the service's EndpointSlices in key order; when there is one, they
	// are the endpoints and the legacy Endpoints is ignored.
	slices []*sliceState

	// flat is the rendering (nil while a half is missing); contivSvc is its
	// ContivService form, built on demand by GetContivService only (renderers of the
	// seed API get theirs from their renderer.SeedAdapter).
	flat          *renderer.FlatService
	contivSvc     *renderer.ContivService
	localBackends []podmodel.ID
	// classGen is the node context generation the addresses were classified for,
	// metaGen the one the definition was parsed for.
	classGen, metaGen uint64
	// dirty: a half changed since the last Refresh (used by Resync); metaSeen and
	// endpointsSeen: the last resync that had the definition / the Endpoints.
	dirty                   bool
	metaSeen, endpointsSeen uint64
	// slicesSeen: the last resync that had a slice of the service; topoGen: the
	// generation of this node's name and zone the rendering read the hints for.
	slicesSeen, topoGen uint64
	// pending (bits pendingMeta, pendingEndpoints): the halves a resync in progress
	// parses anew, into pendingMeta and pendingEndpoints (resyncHalves).
	pending          uint8
	pendingMeta      *svcmodel.Service
	pendingEndpoints *epmodel.Endpoints

	// outsideCIDR: a cluster IP of the definition lies outside the configured service
	// CIDR (served only while a ServiceCIDR object allows it).
	outsideCIDR bool

	// Items of this service skipped while parsing, included in the processor gauges.
	skippedSCTP, skippedOtherProto, badMetaIPs, badEndpointIPs int
	// Fields of this service rejected as out of range, by field; in the gauges too.
	rejectedMeta, rejectedEndpoints rejectedFields

	// indexedVIPs and indexedHost are the service's entries in the processor's
	// address indexes (endpointcheck.go); a single cluster IP lives in vipArr.
	indexedVIPs, indexedHost []netip.Addr
	vipArr                   [1]netip.Addr
}

// rejectedFields counts the rejected values of one object by field.
type rejectedFields [numRejectedFields]int

// Fields whose values the processor range-checks (the label of
// contiv_service_rejected_fields).
const (
	fieldPort         = iota // spec.ports[].port outside 1..65535: the port is left out
	fieldNodePort            // spec.ports[].nodePort outside the node port range: no node port
	fieldClusterIP           // spec.clusterIP outside the service CIDR: not exposed on it
	fieldEndpointPort        // subsets[].ports[].port outside 1..65535: the port is left out
	numRejectedFields
)

// rejectedFieldNames are the label values of the fields.
var rejectedFieldNames = [numRejectedFields]string{"port", "nodePort", "clusterIP", "endpointPort"}

// reject logs a rejected value, naming the service, the field and the value.
func (s *Service) reject(counts *rejectedFields, field int, path string, value any, why string) {
	counts[field]++
	s.log().WithFields(logrus.Fields{"field": path, "value": value}).
		Warnf("service %s: %s %v rejected: %s", s.id, path, value, why)
}

// serviceSpec is the part of the service definition that the rendering needs.
type serviceSpec struct {
	policy   renderer.TrafficPolicyType
	affinity uint32
	// internalLocal: internalTrafficPolicy Local; externalLocal: externalTrafficPolicy
	// Local on a service that is reachable from outside (node ports, external IPs,
	// load balancer).
	internalLocal, externalLocal bool
	// ports are sorted by name (names unique).
	ports []specPort
	// clusterIPs and externalIPs hold the cluster IP and the external IPs (no
	// duplicates); every rendering of the service shares them (renderers never modify
	// them). A single cluster IP lives in clusterArr, a single port in portArr, so
	// that a definition costs one allocation.
	clusterIPs, externalIPs []renderer.Address
	clusterArr              [1]renderer.Address
	portArr                 [1]specPort
}

// specPort is one supported (TCP or UDP) service port.
type specPort struct {
	name string
	port renderer.ServicePort
}

// endpointSubset is one parsed subset of the Endpoints: ready addresses (classified
// for the node context of generation Service.classGen), ports, and the pods of this
// node among the addresses (targetRef kind Pod). The renderings share addrs.
//
// An EndpointSlice is parsed into one too (parseSlice): addrs are its ready endpoints,
// fallback its serving and terminating ones that are not ready, hints the topology
// hints of addrs (nil when none has any), and its ports match service ports by name
// and protocol.
type endpointSubset struct {
	addrs     []renderer.Endpoint
	ports     []endpointPort
	localPods []podmodel.ID
	fallback  []renderer.Endpoint
	hints     []endpointHints
	fromSlice bool
	// family is the IP family of every address of the subset (a slice's address
	// type; a legacy subset with addresses of both families is parsed into two).
	family family
	// What parsing left out of a slice (the gauges; a legacy Endpoints counts on its
	// Service).
	badIPs   int
	rejected rejectedFields
	// checks: the endpoint addresses left out (endpointcheck.go).
	checks endpointChecks
}

// endpointPort is one port of a subset, matched to service ports by name (and, for
// a slice, protocol).
type endpointPort struct {
	name  string
	port  uint16
	proto renderer.ProtocolType
}

// matches tells whether the subset's port serves the service port.
func (sub *endpointSubset) matches(ep *endpointPort, p *specPort) bool {
	return ep.name == p.name && (!sub.fromSlice || ep.proto == p.port.Protocol)
}

// LocalEndpoint is a pod of this node as far as services care: its VPP interface
// (empty while the pod is not wired or runs in the host network) and the number of
// services it currently backs.
type LocalEndpoint struct {
	ifName   string
	svcCount int
}

// NewService returns an empty service bound to the processor; SetMetadata and
// SetEndpoints fill it.
func NewService(sp *ServiceProcessor) *Service {
	return &Service{sp: sp}
}

// SetMetadata sets (nil: removes) the service definition and refreshes the service.
func (s *Service) SetMetadata(meta *svcmodel.Service) {
	if s.id == (renderer.ServiceID{}) && meta != nil {
		s.id = renderer.ServiceID{Name: meta.GetName(), Namespace: meta.GetNamespace()}
	}
	s.setMetadata(meta)
	s.Refresh()
}

// SetEndpoints sets (nil: removes) the endpoints and refreshes the service.
func (s *Service) SetEndpoints(endpoints *epmodel.Endpoints) {
	if s.id == (renderer.ServiceID{}) && endpoints != nil {
		s.id = renderer.ServiceID{Name: endpoints.GetName(), Namespace: endpoints.GetNamespace()}
	}
	s.setEndpoints(endpoints)
	s.Refresh()
}

// GetContivService returns the service as rendered, nil while the definition is
// missing or the service is not proxied. The returned value must not be modified.
func (s *Service) GetContivService() *renderer.ContivService {
	if s.contivSvc == nil && s.flat != nil {
		s.contivSvc = s.flat.ContivService()
	}
	return s.contivSvc
}

// GetFlatService returns the service as rendered in flat form, nil while the
// definition is missing or the service is not proxied. The returned value must not be modified.
func (s *Service) GetFlatService() *renderer.FlatService { return s.flat }

// GetLocalBackends returns the pods of this node that back the service (each once).
func (s *Service) GetLocalBackends() []podmodel.ID { return s.localBackends }

func (s *Service) log() logrus.FieldLogger {
	return s.sp.Log.WithField("service", s.id.String())
}

// setMetadata parses the definition outside a resync; see parseMetadata.
func (s *Service) setMetadata(meta *svcmodel.Service) { s.parseMetadata(meta, &s.sp.slabs) }

// parseMetadata parses the definition, cutting it from the blocks sl. Ports of protocols that VPP NAT44 cannot
// translate (SCTP, anything unknown) and unparseable IPs are logged, counted and left
// out; an empty protocol is TCP, the Kubernetes default.
func (s *Service) parseMetadata(meta *svcmodel.Service, sl *renderSlabs) {
	s.meta = meta
	s.metaGen = s.sp.nodeGen
	oldSCTP, oldOther, oldBad, oldRejected := s.skippedSCTP, s.skippedOtherProto, s.badMetaIPs, s.rejectedMeta
	s.skippedSCTP, s.skippedOtherProto, s.badMetaIPs, s.rejectedMeta = 0, 0, 0, rejectedFields{}
	defer func() {
		s.sp.stats.addSkipped(s.skippedSCTP-oldSCTP, s.skippedOtherProto-oldOther, s.badMetaIPs-oldBad)
		s.sp.stats.addRejected(&oldRejected, &s.rejectedMeta)
	}()
	if meta == nil {
		s.spec = nil
		return
	}
	if label, ok := svcmodel.OtherProxyLabel(meta); ok {
		// Not this proxy's service (kube-proxy's label selector): not programmed, and
		// removed if it was.
		s.log().WithField("label", label).Debug("service left to another proxy")
		s.spec = nil
		return
	}
	if reason, ok := notProxied(meta); ok {
		// Nothing to proxy (kube-proxy's ShouldSkipService): not programmed, and
		// removed if it was.
		s.log().WithField("reason", reason).Debug("service not proxied")
		s.spec = nil
		return
	}
	spec := &carve(sl.on, &sl.specs, 1)[0]
	clusterIPs, externalIPs := spec.clusterArr[:0], []renderer.Address(nil)
	spec.internalLocal = meta.GetInternalTrafficPolicy() == trafficPolicyLocal
	if meta.GetSessionAffinity() == affinityClientIP && meta.GetSessionAffinityTimeout() > 0 {
		spec.affinity = uint32(meta.GetSessionAffinityTimeout())
	}
	s.outsideCIDR = false
	for i, ip := range clusterIPList(meta) {
		if ip == "" || ip == clusterIPNone {
			continue
		}
		n := len(clusterIPs)
		clusterIPs = s.appendIP(clusterIPs, ip, "clusterIP")
		if len(clusterIPs) == n {
			continue
		}
		// Each cluster IP is checked against the service CIDR of its family (a
		// dual-stack service has one of each); without any configured service CIDR
		// nothing is checked.
		serviceNet, checked := s.sp.node.serviceNetOf(clusterIPs[n])
		if !checked || s.sp.node.inServiceNet(clusterIPs[n]) {
			continue
		}
		// Outside the configured service CIDR: served when a ServiceCIDR object
		// allows it (Kubernetes v1.33+ allocates from every ServiceCIDR).
		s.outsideCIDR = true
		if !s.sp.cidrs.contains(clusterIPs[n]) {
			path := "spec.clusterIP"
			if len(meta.GetClusterIps()) > 0 {
				path = fmt.Sprintf("spec.clusterIPs[%d]", i)
			}
			rng := "outside the service CIDR " + serviceNet.String()
			if serviceNet == nil {
				rng = "no " + familyOf(clusterIPs[n]).String() + " service CIDR configured"
			}
			s.reject(&s.rejectedMeta, fieldClusterIP, path, ip, rng+" and outside every ServiceCIDR")
			clusterIPs = clusterIPs[:n]
		}
	}
	for _, ip := range meta.GetExternalIps() {
		externalIPs = s.appendIP(externalIPs, ip, "externalIPs")
	}
	if meta.GetServiceType() == serviceTypeLB {
		for _, ip := range meta.GetLbIngressIps() {
			// An ingress IP of ipMode Proxy is the load balancer's own: its traffic must
			// reach it, so it is not programmed at all (kube-proxy programs the VIP-mode
			// ones only: pkg/proxy/util IsVIPMode).
			if slices.Contains(meta.GetLbIngressProxyIps(), ip) {
				continue
			}
			externalIPs = s.appendIP(externalIPs, ip, "loadBalancer ingress IP")
		}
	}
	spec.ports = spec.portArr[:0]
	if len(meta.GetPort()) > len(spec.portArr) {
		spec.ports = make([]specPort, 0, len(meta.GetPort()))
	}
	firstNP, lastNP := s.sp.nodePortRange()
	for i, p := range meta.GetPort() {
		if p.GetPort() < 1 || p.GetPort() > 65535 {
			s.reject(&s.rejectedMeta, fieldPort, fmt.Sprintf("spec.ports[%d].port", i), p.GetPort(), "outside 1-65535")
			continue
		}
		nodePort := p.GetNodePort()
		if nodePort != 0 && (nodePort < int32(firstNP) || nodePort > int32(lastNP)) {
			s.reject(&s.rejectedMeta, fieldNodePort, fmt.Sprintf("spec.ports[%d].nodePort", i), nodePort,
				fmt.Sprintf("outside the node port range %d-%d", firstNP, lastNP))
			nodePort = 0
		}
		var proto renderer.ProtocolType
		switch strings.ToUpper(p.GetProtocol()) {
		case protocolTCP, "":
			proto = renderer.TCP
		case protocolUDP:
			proto = renderer.UDP
		case protocolSCTP:
			s.skippedSCTP++
			s.log().WithFields(logrus.Fields{"port": p.GetName(), "number": p.GetPort()}).
				Warn("service port skipped: VPP NAT44 does not support SCTP")
			continue
		default:
			s.skippedOtherProto++
			s.log().WithFields(logrus.Fields{"port": p.GetName(), "protocol": p.GetProtocol()}).
				Warn("service port skipped: unknown protocol")
			continue
		}
		spec.ports = append(spec.ports, specPort{name: p.GetName(), port: renderer.ServicePort{
			Protocol: proto, Port: uint16(p.GetPort()), NodePort: uint16(nodePort),
		}})
	}
	if len(spec.ports) > 1 {
		slices.SortStableFunc(spec.ports, func(a, b specPort) int { return strings.Compare(a.name, b.name) })
		// A name given twice keeps its last port, as a map keyed by name would
		// (Kubernetes rejects such a service anyway).
		out := spec.ports[:0]
		for _, p := range spec.ports {
			if n := len(out); n > 0 && out[n-1].name == p.name {
				out[n-1] = p
				continue
			}
			out = append(out, p)
		}
		spec.ports = out
	}
	spec.clusterIPs, spec.externalIPs = clusterIPs, externalIPs
	// externalTrafficPolicy applies to traffic from outside only: kube-proxy's
	// ExternalPolicyLocal is false for a service nothing external reaches.
	externallyAccessible := meta.GetServiceType() == serviceTypeLB || len(externalIPs) > 0 ||
		slices.ContainsFunc(spec.ports, func(p specPort) bool { return p.port.NodePort != 0 })
	if meta.GetExternalTrafficPolicy() == trafficPolicyLocal && externallyAccessible {
		spec.policy, spec.externalLocal = renderer.NodeLocal, true
	}
	s.spec = spec
}

// Service type that is DNS only.
const serviceTypeExternalName = "ExternalName"

// notProxied tells why a service has nothing for a proxy to program, if it has nothing:
// headless (cluster IP None, or none at all) or ExternalName (DNS only), as kube-proxy's
// ShouldSkipService (pkg/proxy/util) decides. Such a service is not rendered even
// without endpoints, when other services are (to be rejected).
func notProxied(meta *svcmodel.Service) (string, bool) {
	if meta.GetServiceType() == serviceTypeExternalName {
		return "type ExternalName", true
	}
	if ips := clusterIPList(meta); len(ips) == 0 || ips[0] == "" || ips[0] == clusterIPNone {
		return "headless", true
	}
	return "", false
}

// clusterIPList returns spec.clusterIPs, or spec.clusterIP alone when the value was
// written by a contiv-ksr older than the field.
func clusterIPList(meta *svcmodel.Service) []string {
	if ips := meta.GetClusterIps(); len(ips) > 0 {
		return ips
	}
	return []string{meta.GetClusterIp()}
}

// appendIP parses ip and appends it unless already in list, or logs and counts it as
// invalid.
func (s *Service) appendIP(list []renderer.Address, ip, field string) []renderer.Address {
	parsed := s.sp.parseAddress(ip)
	if parsed.Text == "" {
		s.badMetaIPs++
		s.log().WithFields(logrus.Fields{"field": field, "ip": ip}).Warn("unparseable service IP skipped")
		return list
	}
	for _, a := range list {
		if a == parsed {
			return list
		}
	}
	return append(list, parsed)
}

// setEndpoints parses the endpoints outside a resync; see parseEndpoints.
func (s *Service) setEndpoints(eps *epmodel.Endpoints) { s.parseEndpoints(eps, &s.sp.slabs) }

// parseEndpoints parses the endpoints, cutting them from the blocks sl; not-ready addresses are ignored, unparseable IPs
// are logged, counted and skipped. Each address is classified for the current node
// context; the target reference is read for the addresses of this node only.
func (s *Service) parseEndpoints(eps *epmodel.Endpoints, sl *renderSlabs) {
	s.endpoints = eps
	oldBad, oldRejected, oldEps := s.badEndpointIPs, s.rejectedEndpoints, sumRejected(s.subsets)
	s.badEndpointIPs, s.rejectedEndpoints = 0, rejectedFields{}
	s.subsets = nil
	if eps != nil {
		s.subsets = carve(sl.on, &sl.subsets, len(eps.GetEndpointSubsets()))[:0]
		for si, sub := range eps.GetEndpointSubsets() {
			var parsed, parsed6 endpointSubset
			parsed.addrs = carve(sl.on, &sl.addrs, len(sub.GetAddresses()))[:0]
			for _, a := range sub.GetAddresses() {
				ep, ok := s.endpoint(&parsed, a.GetIp(), a.GetTargetRef(), &s.badEndpointIPs)
				switch {
				case !ok:
				case ep.IsIPv4():
					parsed.addrs = append(parsed.addrs, ep)
				default:
					parsed6.addrs = append(parsed6.addrs, ep)
				}
			}
			parsed.ports = carve(sl.on, &sl.epPorts, len(sub.GetPorts()))[:0]
			for pi, p := range sub.GetPorts() {
				if p.GetPort() < 1 || p.GetPort() > 65535 {
					s.reject(&s.rejectedEndpoints, fieldEndpointPort, fmt.Sprintf("endpoints subsets[%d].ports[%d].port", si, pi),
						p.GetPort(), "outside 1-65535")
					continue
				}
				parsed.ports = append(parsed.ports, endpointPort{name: p.GetName(), port: uint16(p.GetPort())})
			}
			s.subsets = append(s.subsets, parsed)
			if len(parsed6.addrs) > 0 {
				// The IPv6 addresses of the subset are a subset of their own, with the
				// same ports, so that every subset has one family (the local pods and
				// the checks stay with the first: both are per object).
				parsed6.family, parsed6.ports = famIPv6, parsed.ports
				s.subsets = append(s.subsets, parsed6)
			}
		}
	}
	s.classGen = s.sp.nodeGen
	s.sp.stats.addSkipped(0, 0, s.badEndpointIPs-oldBad)
	s.sp.stats.addRejected(&oldRejected, &s.rejectedEndpoints)
	newEps := sumRejected(s.subsets)
	s.sp.stats.addRejectedEndpoints(&oldEps, &newEps)
}

// targetRef is the reference of an endpoint to the object behind it (the Endpoints
// and the EndpointSlice models each have their own type).
type targetRef interface {
	GetKind() string
	GetName() string
	GetNamespace() string
}

// endpoint parses an endpoint's IP and classifies it for the node context, noting a
// pod of this node in sub.localPods; ok is false (and bad counted, the IP logged)
// when the IP is not an address, and (logged, counted in sub.checks) when the address
// cannot be a backend (checkEndpoint).
func (s *Service) endpoint(sub *endpointSubset, ip string, ref targetRef, bad *int) (ep renderer.Endpoint, ok bool) {
	addr := s.sp.parseAddress(ip)
	if addr.Text == "" {
		*bad++
		s.log().WithField("ip", ip).Warn("unparseable endpoint IP skipped")
		return ep, false
	}
	ep = renderer.Endpoint{Address: addr}
	ep.Local, ep.HostNetwork = s.sp.node.classifyAddress(addr)
	if reason, rejected, dynamic := s.checkEndpoint(ep, ref); rejected {
		s.rejectEndpoint(&sub.checks, ep, reason, dynamic)
		return ep, false
	}
	if ep.Local && ref.GetKind() == targetKindPod {
		sub.localPods = append(sub.localPods, podmodel.ID{Name: ref.GetName(), Namespace: ref.GetNamespace()})
	}
	return ep, true
}

// Refresh combines the definition with the endpoints into a new rendering (nil
// without a definition to proxy; without endpoints, every port has none) and recomputes the local backend pods. The previous rendering is
// left untouched, so the caller can still compare with it.
func (s *Service) Refresh() { s.refresh(&s.sp.slabs) }

// refresh is Refresh cutting the rendering from the blocks sl.
func (s *Service) refresh(sl *renderSlabs) {
	s.flat, s.contivSvc, s.localBackends = nil, nil, nil
	s.topoGen = s.sp.topoGen
	if s.spec == nil {
		return
	}
	spec := s.spec
	if len(s.slices) == 0 && s.classGen != s.sp.nodeGen { // this node's subnets or addresses changed
		s.parseEndpoints(s.endpoints, sl) // parsed anew: renderings keep the old addresses
	}
	subsets := s.sourceSubsets(sl.sources[:0])
	sl.sources = subsets
	fs := &carve(sl.on, &sl.services, 1)[0]
	fs.ID, fs.TrafficPolicy, fs.SessionAffinityTimeout = s.id, spec.policy, spec.affinity
	fs.ClusterIPs, fs.ExternalIPs = spec.clusterIPs, spec.externalIPs
	fs.Ports = carve(sl.on, &sl.ports, len(spec.ports))
	// The families the endpoints have: selection runs once per family present.
	var present [numFamilies]bool
	for _, sub := range subsets {
		if len(sub.addrs) > 0 || len(sub.fallback) > 0 {
			present[sub.family] = true
		}
	}
	groups := sl.matched[:0]
	defer func() { sl.matched = groups[:0] }()
	for i := range spec.ports {
		port := &fs.Ports[i]
		port.Name, port.Port = spec.ports[i].name, spec.ports[i].port
		var sels [numFamilies]selection
		for f := range numFamilies {
			if !present[f] {
				continue
			}
			groups = groups[:0]
			for _, sub := range subsets {
				if sub.family != f || (len(sub.addrs) == 0 && len(sub.fallback) == 0) {
					continue
				}
				for pi := range sub.ports {
					if sub.matches(&sub.ports[pi], &spec.ports[i]) {
						groups = append(groups, portGroup{sub: sub, target: sub.ports[pi].port})
					}
				}
			}
			sel := s.selectEndpoints(groups, spec.internalLocal, spec.externalLocal, sl)
			if len(subsets) > 1 {
				sel.internal, sel.external = dedupe(sel.internal), dedupe(sel.external)
			}
			sels[f] = sel
		}
		port.Backends = joinFamilies(sels[famIPv4].internal, sels[famIPv6].internal, sl)
		port.ExternalBackends = joinFamilies(sels[famIPv4].external, sels[famIPv6].external, sl)
		port.HasEndpoints = sels[famIPv4].hasEndpoints || sels[famIPv6].hasEndpoints
		port.NoIPv4Endpoints = port.HasEndpoints && !sels[famIPv4].hasEndpoints
		port.NoIPv6Endpoints = port.HasEndpoints && !sels[famIPv6].hasEndpoints
		if port.SameBackends() || renderer.SameBackendGroups(port.Backends, port.ExternalBackends) {
			port.ExternalBackends = port.Backends
		}
	}
	// The local pods of the subsets that back at least one port, each once.
	for _, sub := range subsets {
		if len(sub.localPods) == 0 || !s.backsAPort(sub) {
			continue
		}
		for _, pod := range sub.localPods {
			if !containsPod(s.localBackends, pod) {
				s.localBackends = append(s.localBackends, pod)
			}
		}
	}
	s.flat = fs
}

// backsAPort tells whether one of the subset's ports is a port of the service.
func (s *Service) backsAPort(sub *endpointSubset) bool {
	for pi := range sub.ports {
		for i := range s.spec.ports {
			if sub.matches(&sub.ports[pi], &s.spec.ports[i]) {
				return true
			}
		}
	}
	return false
}

// parseAddress parses an IP like parseIP, and keeps its text: the string given when it
// is the canonical form of an IPv4 address (netip accepts IPv4 in that form only), the
// formatted address otherwise. An IPv4 address costs no allocation (a resync parses
// about 100,000 of them). The text is empty when s is not an address.
func (sp *ServiceProcessor) parseAddress(s string) renderer.Address {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		ip := parseIP(s) // IPv6, IPv4-mapped, surrounding spaces, or invalid
		if ip == nil {
			return renderer.Address{}
		}
		return renderer.NewAddress(ip)
	}
	a4 := a.As4()
	return renderer.NewIPv4Address(binary.BigEndian.Uint32(a4[:]), s)
}

// parseIP parses an IP and keeps IPv4 addresses in their 4-byte form.
func parseIP(s string) net.IP {
	ip := net.ParseIP(strings.TrimSpace(s))
	if ip4 := ip.To4(); ip4 != nil {
		return ip4
	}
	return ip
}

func containsPod(list []podmodel.ID, id podmodel.ID) bool {
	for _, x := range list {
		if x == id {
			return true
		}
	}
	return false
}

// nodePortRange returns the node ports the processor accepts.
func (sp *ServiceProcessor) nodePortRange() (first, last uint16) {
	if sp.NodePortFirst == 0 && sp.NodePortLast == 0 {
		return defaultNodePortFirst, defaultNodePortLast
	}
	return sp.NodePortFirst, sp.NodePortLast
}

// renderSlabs holds the blocks a resync cuts the parsed objects and the
// FlatServices from, so that 10,000 services cost a few hundred allocations for
// them instead of several per service. Outside a resync the blocks are off and
// everything is allocated on its own (a change concerns one service). A block stays
// in memory while one of its elements is referenced: bounded by the last resync.
type renderSlabs struct {
	services []renderer.FlatService
	ports    []renderer.FlatPort
	groups   []renderer.BackendGroup
	addrs    []renderer.Endpoint
	subsets  []endpointSubset
	epPorts  []endpointPort
	specs    []serviceSpec
	// Scratch lists of refresh, reused from one service to the next (a rendering
	// keeps none of them).
	sources []*endpointSubset
	matched []portGroup
	on      bool
	touched byte // see touch
}

// touch reads, from the objects a resync will parse for the service, the first byte of
// every text it parses (endpoint addresses, cluster IP, port names and protocols). The
// loads do not depend on one another, so the processor has the cache misses of all of
// them in flight at once (the objects of a resync are new and scattered over the heap)
// instead of one after the other, each behind the parsing of the previous text; done
// for the next service while the current one is parsed, the misses are mostly over by
// the time the parsing reads the texts. The sum is kept only so that the loads are not
// optimised away.
func (sl *renderSlabs) touch(s *Service) {
	var sum byte
	first := func(text string) {
		if text != "" {
			sum += text[0]
		}
	}
	if s.pending&pendingEndpoints != 0 {
		for _, sub := range s.pendingEndpoints.GetEndpointSubsets() {
			for _, a := range sub.GetAddresses() {
				first(a.GetIp())
			}
			for _, p := range sub.GetPorts() {
				first(p.GetName())
			}
		}
	}
	if s.pending&pendingMeta != 0 {
		first(s.pendingMeta.GetClusterIp())
		for _, p := range s.pendingMeta.GetPort() {
			first(p.GetName())
			first(p.GetProtocol())
		}
	}
	sl.touched += sum
}

// slabSize is the number of elements of one block.
const slabSize = 1024

// carve returns n zero elements cut from the block (from a new block when it is
// short), or a slice of their own when blocks are off or n is large. The slice has
// capacity n, so appending to it never writes into the block.
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

package processor

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Endpoint addresses that never become backends, by reason (the label of
// contiv_service_rejected_endpoints).
//
// The first four are the rules of Kubernetes' own validation of endpoint addresses
// (k8s.io/kubernetes pkg/apis/core/validation ValidateEndpointIP, which EndpointSlice
// and Endpoints validation call): unspecified, loopback, link-local unicast and
// link-local multicast addresses. Its comment notes that it lets global multicast
// through "which is probably a bug"; a NAT backend must be one unicast host, so every
// multicast address is rejected here, and so is a broadcast address (the limited
// broadcast, the broadcast and network addresses of the pod subnets). An object
// written before the API server validated it, or through a path that skipped it (an
// etcd write), is checked here all the same.
//
// The last two go further than Kubernetes (issue #27): a Service's cluster IP as the
// backend of a Service is a NAT loop, and a node's own address (VPP or management IP
// of any node) lets whoever may write Endpoints expose the node's host ports behind a
// service IP. Node addresses are accepted from the endpoints that name a Pod
// (targetRef kind Pod: a host-network pod, which the EndpointSlice controller
// writes) and from the Service default/kubernetes (the API server's own endpoints,
// written by its endpoint reconciler, usually node addresses).
const (
	epRejectUnspecified = iota
	epRejectLoopback
	epRejectLinkLocal
	epRejectMulticast
	epRejectBroadcast
	epRejectClusterIP
	epRejectNodeIP
	numEpRejects
)

// epRejectNames are the label values of the reasons.
var epRejectNames = [numEpRejects]string{"unspecified", "loopback", "linkLocal", "multicast", "broadcast", "clusterIP", "nodeIP"}

// epRejectWhy explains each reason in the log.
var epRejectWhy = [numEpRejects]string{
	"the unspecified address",
	"in the loopback range (127.0.0.0/8, ::1/128)",
	"in the link-local range (169.254.0.0/16, fe80::/10)",
	"a multicast address (224.0.0.0/4, ff00::/8)",
	"a broadcast address",
	"the cluster IP of a Service",
	"an address of a node (accepted only from an endpoint naming a Pod)",
}

// apiServerService is the Service whose endpoints the API server writes itself.
var apiServerService = renderer.ServiceID{Namespace: "default", Name: "kubernetes"}

// endpointChecks is what the address checks left out of one parsed subset or slice.
type endpointChecks struct {
	// counts are the rejected addresses by reason (in the gauge).
	counts [numEpRejects]int
	// dynamic are the addresses rejected as a cluster IP or a node address: they
	// become backends again when that stops being true (see hostAddrs).
	dynamic []netip.Addr
}

// addrKey returns the address as a netip.Addr (the key of the processor's address
// indexes).
func addrKey(a renderer.Address) netip.Addr {
	if v4, ok := a.IPv4(); ok {
		return netip.AddrFrom4([4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)})
	}
	k, _ := netip.ParseAddr(a.Text)
	return k.Unmap()
}

// staticRejection returns the reason an address can never be a backend, if it has one.
// It depends on the address and this node's pod subnets only.
func (n *nodeContext) staticRejection(a renderer.Address) (int, bool) {
	if v4, ok := a.IPv4(); ok {
		switch {
		case v4 == 0:
			return epRejectUnspecified, true
		case v4>>24 == 127:
			return epRejectLoopback, true
		case v4>>16 == 169<<8|254:
			return epRejectLinkLocal, true
		case v4>>28 == 0xe:
			return epRejectMulticast, true
		case v4 == 0xffffffff, n.thisNode4.edge(v4), n.allNodes4.edge(v4):
			return epRejectBroadcast, true
		}
		return 0, false
	}
	k := addrKey(a)
	switch {
	case k.IsUnspecified():
		return epRejectUnspecified, true
	case k.IsLoopback():
		return epRejectLoopback, true
	case k.IsLinkLocalUnicast():
		return epRejectLinkLocal, true
	case k.IsMulticast():
		return epRejectMulticast, true
	}
	return 0, false
}

// edge tells whether v4 is the network or the broadcast address of n (networks of
// 2 addresses and fewer have neither).
func (n net4) edge(v4 uint32) bool {
	if !n.ok || ^n.mask < 3 || !n.contains(v4) {
		return false
	}
	return v4 == n.addr || v4 == n.addr|^n.mask
}

// checkEndpoint returns the reason an endpoint of the service cannot be a backend, if
// it has one; dynamic is true for the reasons that depend on other objects (cluster
// IPs, node addresses). Only addresses outside the pod network can be either.
func (s *Service) checkEndpoint(ep renderer.Endpoint, ref targetRef) (reason int, rejected, dynamic bool) {
	if reason, ok := s.sp.node.staticRejection(ep.Address); ok {
		return reason, true, false
	}
	if !ep.HostNetwork {
		return 0, false, false
	}
	k := addrKey(ep.Address)
	if s.sp.clusterIPs[k] > 0 {
		return epRejectClusterIP, true, true
	}
	if ref.GetKind() == targetKindPod || s.id == apiServerService {
		return 0, false, false
	}
	if s.sp.nodeAddrs.has(k) || ep.Local {
		// Local host-network addresses are this node's IP and host IPs.
		return epRejectNodeIP, true, true
	}
	return 0, false, false
}

// rejectEndpoint logs and counts an endpoint address left out, naming the service,
// the address and the reason.
func (s *Service) rejectEndpoint(checks *endpointChecks, ep renderer.Endpoint, reason int, dynamic bool) {
	checks.counts[reason]++
	if dynamic {
		checks.dynamic = append(checks.dynamic, addrKey(ep.Address))
	}
	s.log().WithFields(logrus.Fields{"address": ep.Text, "reason": epRejectNames[reason]}).
		Warnf("service %s: endpoint %s rejected: %s", s.id, ep.Text, epRejectWhy[reason])
}

// addRejectedEndpoints adds the change of one object's rejected endpoints to the gauge.
func (st *stats) addRejectedEndpoints(old, cur *[numEpRejects]int) {
	if st == nil || *old == *cur {
		return
	}
	for r := range numEpRejects {
		if d := cur[r] - old[r]; d != 0 {
			st.rejectedEndpoints.WithLabelValues(epRejectNames[r]).Add(float64(d))
		}
	}
}

// sumRejected adds up the rejected endpoints of the legacy subsets.
func sumRejected(subs []endpointSubset) (sum [numEpRejects]int) {
	for i := range subs {
		for r, n := range subs[i].checks.counts {
			sum[r] += n
		}
	}
	return sum
}

// The address indexes that keep the dynamic checks O(the change):
//   - clusterIPs counts the services holding each cluster IP (the parsed
//     spec.clusterIPs of every Service, proxied or not), kept per service in
//     Service.indexedVIPs;
//   - nodeAddrs are the VPP and management addresses of every node;
//   - hostEps lists, per address outside the pod network, the services with an
//     endpoint there (accepted or rejected as dynamic), kept per service in
//     Service.indexedHost. When a cluster IP or a node address comes or goes, the
//     services of that address only are checked again.
//
// Pod addresses are never in hostEps: a service of pods only costs nothing here.

// vipsOf returns the parsed cluster IPs of a Service definition (nil: none).
func (sp *ServiceProcessor) vipsOf(meta interface {
	GetClusterIp() string
	GetClusterIps() []string
}, out []netip.Addr) []netip.Addr {
	if meta == nil {
		return out
	}
	add := func(ip string) {
		if ip == "" || ip == clusterIPNone {
			return
		}
		if a := sp.parseAddress(ip); a.Text != "" {
			out = append(out, addrKey(a))
		}
	}
	ips := meta.GetClusterIps()
	if len(ips) == 0 {
		add(meta.GetClusterIp())
	}
	for _, ip := range ips {
		add(ip)
	}
	return out
}

// indexVIPs sets the cluster IPs of s in the index to vips (copied: the caller may
// reuse it) and appends to changed the addresses that became or stopped being a cluster
// IP.
func (sp *ServiceProcessor) indexVIPs(s *Service, vips []netip.Addr, changed []netip.Addr) []netip.Addr {
	if slices.Equal(s.indexedVIPs, vips) {
		return changed
	}
	for _, a := range s.indexedVIPs {
		if sp.clusterIPs[a]--; sp.clusterIPs[a] <= 0 {
			delete(sp.clusterIPs, a)
			changed = append(changed, a)
		}
	}
	for _, a := range vips {
		if sp.clusterIPs[a]++; sp.clusterIPs[a] == 1 {
			changed = append(changed, a)
		}
	}
	if len(vips) <= len(s.vipArr) { // one cluster IP, the usual case, costs no allocation
		s.indexedVIPs = s.vipArr[:copy(s.vipArr[:], vips)]
	} else {
		s.indexedVIPs = slices.Clone(vips)
	}
	return changed
}

// hostAddrs returns the addresses of the service's endpoints outside the pod network,
// accepted or rejected as dynamic, sorted, each once.
func (s *Service) hostAddrs() []netip.Addr {
	var out []netip.Addr
	add := func(sub *endpointSubset) {
		for _, list := range [][]renderer.Endpoint{sub.addrs, sub.fallback} {
			for _, ep := range list {
				if ep.HostNetwork {
					out = append(out, addrKey(ep.Address))
				}
			}
		}
		out = append(out, sub.checks.dynamic...)
	}
	for i := range s.subsets {
		add(&s.subsets[i])
	}
	for _, st := range s.slices {
		add(&st.parsed)
	}
	if len(out) < 2 {
		return out
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// indexHost updates the index of the service's host addresses.
func (sp *ServiceProcessor) indexHost(s *Service) {
	addrs := s.hostAddrs()
	if slices.Equal(s.indexedHost, addrs) {
		return
	}
	for _, a := range s.indexedHost {
		if set := sp.hostEps[a]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(sp.hostEps, a)
			}
		}
	}
	for _, a := range addrs {
		set := sp.hostEps[a]
		if set == nil {
			set = make(map[*Service]struct{}, 1)
			sp.hostEps[a] = set
		}
		set[s] = struct{}{}
	}
	s.indexedHost = addrs
}

// servicesAt returns the services with an endpoint at one of the addresses (each once,
// ordered by ID so that the renderers see the same order on every run).
func (sp *ServiceProcessor) servicesAt(addrs []netip.Addr) []*Service {
	var out []*Service
	for _, a := range addrs {
		for s := range sp.hostEps[a] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b *Service) int {
		if c := strings.Compare(a.id.Namespace, b.id.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.id.Name, b.id.Name)
	})
	return out
}

// recheck makes the next refresh of the service parse its endpoints again (their
// checks depend on an address that changed).
func (s *Service) recheck() {
	s.classGen = staleGen
	for _, st := range s.slices {
		st.classGen = staleGen
	}
	s.dirty = true
}

// staleGen is a node context generation that never is the current one.
const staleGen = ^uint64(0)

// nodeAddrs are the VPP and management addresses of every node, with the nodes that
// hold each (setting a node's addresses twice, or removing a node twice, changes
// nothing: a NodeUpdate and a resync may both report a node).
type nodeAddrs struct {
	owners map[netip.Addr]map[string]struct{}
	byNode map[string][]netip.Addr
}

func newNodeAddrs() nodeAddrs {
	return nodeAddrs{owners: make(map[netip.Addr]map[string]struct{}), byNode: make(map[string][]netip.Addr)}
}

// has tells whether a is an address of a node.
func (m nodeAddrs) has(a netip.Addr) bool { return len(m.owners[a]) > 0 }

// setNode sets the addresses of the node called name to those of n (nil: none) and
// appends to changed those that became or stopped being a node address.
func (m nodeAddrs) setNode(name string, n *nodesync.Node, changed []netip.Addr) []netip.Addr {
	var addrs []netip.Addr
	add := func(ip net.IP) {
		if k, ok := netip.AddrFromSlice(ip); ok && !slices.Contains(addrs, k.Unmap()) {
			addrs = append(addrs, k.Unmap())
		}
	}
	if n != nil {
		for _, a := range n.VppIPAddresses {
			if a != nil {
				add(a.IP)
			}
		}
		for _, ip := range n.MgmtIPAddresses {
			add(ip)
		}
	}
	for _, a := range m.byNode[name] {
		if slices.Contains(addrs, a) {
			continue
		}
		delete(m.owners[a], name)
		if len(m.owners[a]) == 0 {
			delete(m.owners, a)
			changed = append(changed, a)
		}
	}
	for _, a := range addrs {
		set := m.owners[a]
		if set == nil {
			set = make(map[string]struct{}, 1)
			m.owners[a] = set
		}
		if _, ok := set[name]; !ok {
			set[name] = struct{}{}
			if len(set) == 1 {
				changed = append(changed, a)
			}
		}
	}
	if len(addrs) == 0 {
		delete(m.byNode, name)
	} else {
		m.byNode[name] = addrs
	}
	return changed
}

// resyncNodeAddrs sets the node addresses to those of every node nodesync knows and
// returns those that came or went.
func (sp *ServiceProcessor) resyncNodeAddrs() []netip.Addr {
	var changed []netip.Addr
	seen := make(map[string]struct{})
	for _, n := range sp.NodeSync.GetAllNodes() {
		seen[n.Name] = struct{}{}
		changed = sp.nodeAddrs.setNode(n.Name, n, changed)
	}
	for name := range sp.nodeAddrs.byNode {
		if _, ok := seen[name]; !ok {
			changed = sp.nodeAddrs.setNode(name, nil, changed)
		}
	}
	return changed
}

package nat44

import (
	"slices"
	"strings"

	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Traffic a service has no backend for. kube-proxy v1.34 rejects traffic to a service
// port that has no usable endpoint anywhere (ICMP unreachable: e2e "should be rejected
// when no endpoints exist"), and drops traffic that a traffic policy leaves without
// an endpoint on this node (internalTrafficPolicy Local for the cluster IPs,
// externalTrafficPolicy Local for external and load balancer IPs). Without a static
// mapping, NAT44 with forwarding on lets such a packet pass untranslated (a
// forwarding-bypass session) and the FIB sends it out of the node towards the
// default gateway, where the client waits for its timeout.
//
// The renderer stages, for every such address of a service, a /32 route in the main
// and the pod VRF: ICMP_PROHIBIT (reject) when a port of the address has no endpoint
// anywhere, else DROP when a port has none for its policy. NAT44 translates before
// the FIB lookup (nat44-ed runs on ip4-unicast, before ip4-lookup), so the ports that
// have a mapping keep working; only untranslated traffic to the address meets the
// route. One route per address, so a port that must be rejected makes the address
// reject the other unmapped ports too.
//
// Why ICMP_PROHIBIT rather than ICMP_UNREACH: VPP's ip4-null answers 3/10 or 3/1
// (src/vnet/dpo/ip_null_dpo.c); Linux aborts a TCP connect() on both, but reports
// only code 10 (fatal in net/ipv4/icmp.c icmp_err_convert) to a connected UDP socket,
// code 1 being a soft error there (plugins/vpp/l3plugin doc, w8/sim). kube-proxy's
// reject is ICMP port unreachable (ECONNREFUSED); VPP has no FIB path that answers
// with it, so the client sees EHOSTUNREACH at once instead of a refusal (the e2e test
// matches "REFUSED": it needs a port-unreachable answer, which would take a punt to
// a listener on this node; see docs/dev-guide/SERVICES.md).
//
// Node ports cannot get such a route (the address is the node's own); there, traffic
// without a mapping reaches ip4-local: UDP to a port nobody listens on gets ICMP port
// unreachable from VPP, TCP is dropped.
//
// Addresses that are a node's IP (an external IP set to a node address) never get a
// route, also when the node joins after the service (external.go nodeAddrsChanged). Several services may share an external or load balancer IP (on other
// ports): the route of an address is the strongest wanted by any of them (reject
// over drop), counted per service.

// serviceRoute is the route a service wants on one of its addresses.
type serviceRoute = rejects.Route

// wantedRoutes returns the routes the service wants, by address, in the order of its
// addresses: IPv4 ones only, never on a node's IP.
func (rndr *Renderer) wantedRoutes(svc *renderer.FlatService) []serviceRoute {
	return rejects.Wanted(svc, func(a renderer.Address, external bool) bool {
		return !a.IsIPv4() || (external && rndr.isNodeAddr(a.Text))
	})
}

// isNodeAddr tells whether the address is one of the nodes' IPs.
func (rndr *Renderer) isNodeAddr(text string) bool {
	if rndr.nodeIP != nil && rndr.nodeIP.String() == text {
		return true
	}
	for _, a := range rndr.nodeAddrs {
		if a.Text == text {
			return true
		}
	}
	return false
}

// stageRoute stages the route of an address in the main and pod VRF as its users
// want it (deleted without users; a resync transaction stages the wanted routes only).
func (rndr *Renderer) stageRoute(txn controller.ResyncOperations, addr string) {
	rejects.Stage(txn, addr, rndr.routeUsers.Type(addr), rejects.VRFs(rndr.mainVRF, rndr.podVRF))
}

// updateRoutes changes the routes of service id from old to wanted and stages the
// routes of the addresses concerned.
func (rndr *Renderer) updateRoutes(txn controller.UpdateOperations, id renderer.ServiceID, old, wanted []serviceRoute) {
	touched := rndr.routeUsers.Update(id, old, wanted)
	slices.Sort(touched)
	for _, addr := range slices.Compact(touched) {
		rndr.stageRoute(txn, addr)
	}
}

// resyncRoutes rebuilds the routes of every service and stages them all.
func (rndr *Renderer) resyncRoutes(txn controller.ResyncOperations, records []*renderedService) {
	rndr.routeUsers.Reset()
	for _, r := range records {
		rndr.routeUsers.Update(r.svc.ID, nil, r.routes)
	}
	addrs := rndr.routeUsers.Addrs()
	slices.SortFunc(addrs, strings.Compare)
	for _, a := range addrs {
		rndr.stageRoute(txn, a)
	}
}

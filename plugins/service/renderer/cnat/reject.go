package cnat

import (
	"slices"

	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Traffic a service has no backend for, as the NAT44 renderer handles it (its
// reject.go says why ICMP_PROHIBIT; package rejects chooses): a /32 (/128) route in
// the main and the pod VRF, ICMP_PROHIBIT when a port of the address has no endpoint
// of the address's family anywhere, else DROP when a port has none here for its
// traffic policy. With cnat, only while the address has no translation (of any
// service): cnat's FIB entry of a VIP is above the API's route in table 0, and a route
// in the pod VRF would catch every port of the address before the lookup reaches
// table 0, where cnat is. A VIP with translations drops what matches none of them
// (cnat's exclusive client). Node IPs never get a route.

// wantedRoutes returns the routes the service wants on its addresses of the families
// served (never on a node's IP).
func (rndr *Renderer) wantedRoutes(svc *renderer.FlatService) []rejects.Route {
	return rejects.Wanted(svc, func(a renderer.Address, external bool) bool {
		return !rndr.serves(a) || (external && rndr.isNodeAddr(a))
	})
}

// stageRoutes stages the route of each address as its users want it, none while the
// address has a translation; only the routes that change are staged (all of them in a
// resync, which starts with none).
func (rndr *Renderer) stageRoutes(txn controller.ResyncOperations, addrs []string) {
	slices.Sort(addrs)
	for _, addr := range slices.Compact(addrs) {
		typ := rndr.routeUsers.Type(addr)
		if rndr.ownership.vips[addr] > 0 || rndr.nodeAddrSet[addr] {
			typ = rejects.None
		}
		if cur, ok := rndr.routes[addr]; (ok && cur == typ) || (!ok && typ == rejects.None) {
			continue
		}
		if typ == rejects.None {
			delete(rndr.routes, addr)
		} else {
			rndr.routes[addr] = typ
		}
		rejects.Stage(txn, addr, typ, rejects.VRFs(rndr.mainVRF, rndr.podVRF))
	}
}

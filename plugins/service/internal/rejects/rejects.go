// Package rejects decides which service addresses the renderers reject or drop in the
// FIB, counts per address the services that want a route on it, and stages the
// routes. kube-proxy v1.34
// rejects traffic to a service port that has no usable endpoint anywhere (ICMP
// unreachable at once: e2e "should be rejected when no endpoints exist") and drops
// traffic that a traffic policy leaves without an endpoint on this node.
package rejects

import (
	"strings"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// None is the route type of an address that wants no route.
const None = l3.Route_INTRA_VRF

// Route is the route a service wants on one of its addresses.
type Route struct {
	// Addr is the address text.
	Addr string
	// Type is ICMP_PROHIBIT (reject) or DROP.
	Type l3.Route_RouteType
}

// Wanted returns the routes the service wants, by address, in the order of its
// addresses: ICMP_PROHIBIT when a port has no endpoint of the address's family
// anywhere (FlatPort.HasEndpointsOf), else DROP when a port has no backend for the
// address (Backends for the cluster IPs, ExternalBackends for the external ones) of
// its family. skip leaves an address out (a family not served, a node's IP).
func Wanted(svc *renderer.FlatService, skip func(a renderer.Address, external bool) bool) []Route {
	var out []Route
	want := func(a renderer.Address, external bool) {
		if skip(a, external) {
			return
		}
		typ := None
		for i := range svc.Ports {
			p := &svc.Ports[i]
			backends := p.Backends
			if external {
				backends = p.ExternalBackends
			}
			switch {
			case p.Port.Port == 0:
			case !p.HasEndpointsOf(a.IsIPv4()):
				typ = l3.Route_ICMP_PROHIBIT
			case !hasFamily(backends, a.IsIPv4()) && typ != l3.Route_ICMP_PROHIBIT:
				typ = l3.Route_DROP
			}
		}
		if typ == None {
			return
		}
		for _, r := range out {
			if r.Addr == a.Text {
				return
			}
		}
		out = append(out, Route{Addr: a.Text, Type: typ})
	}
	for _, a := range svc.ClusterIPs {
		want(a, false)
	}
	for _, a := range svc.ExternalIPs {
		want(a, true)
	}
	return out
}

// hasFamily tells whether a backend of the family is among the groups.
func hasFamily(groups []renderer.BackendGroup, ipv4 bool) bool {
	for _, g := range groups {
		for _, ep := range g.Endpoints {
			if ep.IsIPv4() == ipv4 {
				return true
			}
		}
	}
	return false
}

// Users holds, by address, the route each service wants on it. The zero value is
// empty and ready.
type Users struct {
	m map[string]map[renderer.ServiceID]l3.Route_RouteType
}

// Reset forgets every service.
func (u *Users) Reset() { u.m = nil }

// Update changes the routes of service id from old to wanted and returns the
// addresses concerned (with repetitions).
func (u *Users) Update(id renderer.ServiceID, old, wanted []Route) []string {
	if len(old) == 0 && len(wanted) == 0 {
		return nil
	}
	if u.m == nil {
		u.m = make(map[string]map[renderer.ServiceID]l3.Route_RouteType)
	}
	touched := make([]string, 0, len(old)+len(wanted))
	for _, r := range old {
		if users := u.m[r.Addr]; users != nil {
			delete(users, id)
			if len(users) == 0 {
				delete(u.m, r.Addr)
			}
		}
		touched = append(touched, r.Addr)
	}
	for _, r := range wanted {
		users := u.m[r.Addr]
		if users == nil {
			users = make(map[renderer.ServiceID]l3.Route_RouteType, 1)
			u.m[r.Addr] = users
		}
		users[id] = r.Type
		touched = append(touched, r.Addr)
	}
	return touched
}

// Type returns the route the users of an address want: reject over drop, None
// without users.
func (u *Users) Type(addr string) l3.Route_RouteType {
	typ := None
	for _, t := range u.m[addr] {
		if t == l3.Route_ICMP_PROHIBIT {
			return t
		}
		typ = t
	}
	return typ
}

// Addrs returns every address some service wants a route on.
func (u *Users) Addrs() []string {
	out := make([]string, 0, len(u.m))
	for a := range u.m {
		out = append(out, a)
	}
	return out
}

// VRFs returns the VRFs the routes go into: the main VRF (traffic from the host, other
// nodes and outside) and the pod VRF (traffic from pods).
func VRFs(mainVRF, podVRF uint32) []uint32 {
	if podVRF == mainVRF {
		return []uint32{mainVRF}
	}
	return []uint32{mainVRF, podVRF}
}

// Stage stages the route of type typ to the address (a /32 or /128) in every VRF; with
// None it deletes them (in an update transaction; a resync transaction stages the
// wanted routes only).
func Stage(txn controller.ResyncOperations, addr string, typ l3.Route_RouteType, vrfs []uint32) {
	dst := addr + "/32"
	if strings.Contains(addr, ":") {
		dst = addr + "/128"
	}
	for _, vrf := range vrfs {
		key := l3.RouteKey(vrf, dst, "")
		if typ != None {
			txn.Put(key, &l3.Route{Type: typ, VrfId: vrf, DstNetwork: dst})
		} else if u, ok := txn.(controller.UpdateOperations); ok {
			u.Delete(key)
		}
	}
}

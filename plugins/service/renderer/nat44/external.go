package nat44

import (
	"slices"
	"strings"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// External and load balancer ingress IPs reached from outside the cluster (issue #26
// item 7). A client's packet to extIP:port enters on the default interface, whose NAT
// output feature DNATs it (out2in of a static mapping, the client's address kept or
// twice-NATed). The backend's answer, rewritten back to extIP:port by the session on
// the pod's TAP, is routed to the default interface, where in2out-output runs again
// (VPP 25.10 nat44_ed_in2out.c): it finds no flow of the session in the egress FIB nor
// a reverse one in the pod FIB (the session's outside flow lives in the FIB of the
// default interface) and no static mapping by local (extIP, port) in the pod FIB, so
// the slow path treats the answer as a new connection: TCP (not a SYN) is dropped, UDP
// gets a second session, source-NATed to the node IP. NodePorts escape this through
// the identity mappings of the node IP (DNAT-identities); an external IP needs the same:
//
//   - an address-only identity mapping of the IP in the pod VRF: the answer matches it by
//     local address and passes untranslated. Not in the main VRF: an answer received
//     there (a host-network backend behind the host interconnect, a remote one in
//     no-overlay mode) passes already, since the output feature finds its reverse, the
//     session's outside flow, in the FIB it was received in, the uplink's
//     (nat44_ed_not_translate_output_feature, "dst NAT check");
//   - the IP as a NAT pool address (nat44_add_del_address_range) of a VRF no packet is
//     received in (externalPoolVRF, a VRF table of its own). nat44-ed-classify, on the
//     pods' interfaces (both inside and outside), tries the address-only mapping of a
//     destination before the port-specific one, and an identity sends the packet in2out
//     untranslated: pods would no longer reach extIP:port. Classify sends packets to a
//     pool address out2in before it looks at mappings, and out2in finds the port-specific
//     mapping first. Dynamic SNAT picks pool addresses of the receiving VRF or of VRF ~0
//     only (nat_ed_alloc_addr_and_port), so an address of an unused VRF is never a
//     source.
//
// Side effect (VPP does it for every pool address and identity): the IP becomes local in
// the FIB of the NAT outside and output-feature interfaces, so VPP answers ARP for it on
// the default interface, and unmapped ports of it reach ip4-local (UDP: port
// unreachable) unless a reject or drop route (reject.go, API routes outrank NAT's) takes
// them.
//
// These values exist only with a default interface (the output feature); without one the
// answer leaves untouched. Services may share an IP (on other ports): the values of an
// IP are staged when its first service appears and removed with its last one. Node IPs
// are left out (DNAT-identities covers this node's; any node's IP is no VIP to add), and
// so are the pool's own addresses.

// externalDNATLabelPrefix starts the label of the DNat44 with the identity mappings of
// one external IP ("DNAT-external-IP-20.0.0.2"); no Service's label ("<namespace>/<name>")
// can be one.
const externalDNATLabelPrefix = vpp_nat.ExternalIPDNAT44LabelPrefix

// externalPoolVRF is the VRF of the external IPs' pool addresses: one no interface is
// in, so that dynamic SNAT never picks them. ^0 - 1 leaves every VRF an operator numbers
// by hand free; the renderer creates it (VrfTable labelled externalPoolVRFLabel).
const externalPoolVRF = ^uint32(0) - 1

// externalPoolVRFLabel labels the VRF table of externalPoolVRF.
const externalPoolVRFLabel = "NAT-external-IPs"

// wantedExternalIPs returns the external and load balancer ingress IPs of the service
// that need identity and pool values, in the order of the service's addresses.
func (rndr *Renderer) wantedExternalIPs(svc *renderer.FlatService) []string {
	if rndr.defaultIfName == "" {
		return nil
	}
	var out []string
	for _, a := range svc.ExternalIPs {
		if a.IsIPv4() && !rndr.isNodeAddr(a.Text) && !rndr.isPoolAddr(a.Text) && !slices.Contains(out, a.Text) {
			out = append(out, a.Text)
		}
	}
	return out
}

// isPoolAddr tells whether the address is a pool address of the global configuration
// already (the SNAT address, the NAT loopback): VPP refuses an address twice.
func (rndr *Renderer) isPoolAddr(text string) bool {
	return text == ipString(rndr.defaultIfIP) || text == ipString(rndr.natLoopbackIP)
}

// externalDNAT builds the identity mapping of one external IP.
func (rndr *Renderer) externalDNAT(addr string) *vpp_nat.DNat44 {
	return &vpp_nat.DNat44{Label: externalDNATLabelPrefix + addr, IdMappings: []*vpp_nat.DNat44_IdentityMapping{
		// Address-only mappings carry UDP: VPP dumps them so.
		{IpAddress: addr, Protocol: vpp_nat.DNat44_UDP, VrfId: rndr.podVRF},
	}}
}

// externalPool returns the pool addresses of the external IPs in use.
func (rndr *Renderer) externalPool() []*vpp_nat.Nat44Global_Address {
	out := make([]*vpp_nat.Nat44Global_Address, 0, len(rndr.extAddrs))
	for _, a := range rndr.extAddrs {
		out = append(out, &vpp_nat.Nat44Global_Address{Address: a, VrfId: externalPoolVRF})
	}
	return out
}

// externalVRFKey is the key of the VRF table of externalPoolVRF.
func externalVRFKey() string { return l3.VrfTableKey(externalPoolVRF, l3.VrfTable_IPV4) }

// externalVRF is the VRF table of externalPoolVRF.
func externalVRF() *l3.VrfTable {
	return &l3.VrfTable{Id: externalPoolVRF, Protocol: l3.VrfTable_IPV4, Label: externalPoolVRFLabel}
}

// updateExternalIPs changes the external IPs used by service id from old to wanted and
// stages what changes: the identity DNat44 of an IP gaining its first or losing its
// last service, and then the global configuration (pool) and the pool's VRF table.
func (rndr *Renderer) updateExternalIPs(txn controller.UpdateOperations, id renderer.ServiceID, old, wanted []string) {
	if len(old) == 0 && len(wanted) == 0 {
		return
	}
	if rndr.extUsers == nil {
		rndr.extUsers = make(map[string]map[renderer.ServiceID]struct{})
	}
	hadAny, changed := len(rndr.extAddrs) > 0, false
	for _, a := range old {
		users := rndr.extUsers[a]
		delete(users, id)
		if len(users) == 0 && !slices.Contains(wanted, a) {
			delete(rndr.extUsers, a)
			rndr.removeExtAddr(a)
			txn.Delete(vpp_nat.DNAT44Key(externalDNATLabelPrefix + a))
			changed = true
		}
	}
	for _, a := range wanted {
		users := rndr.extUsers[a]
		if users == nil {
			users = make(map[renderer.ServiceID]struct{}, 1)
			rndr.extUsers[a] = users
		}
		users[id] = struct{}{}
		if rndr.insertExtAddr(a) {
			txn.Put(vpp_nat.DNAT44Key(externalDNATLabelPrefix+a), rndr.externalDNAT(a))
			changed = true
		}
	}
	if !changed {
		return
	}
	switch hasAny := len(rndr.extAddrs) > 0; {
	case hasAny && !hadAny:
		txn.Put(externalVRFKey(), externalVRF())
	case !hasAny && hadAny:
		txn.Delete(externalVRFKey())
	}
	rndr.natGlobalCfg = rndr.globalConfig()
	txn.Put(vpp_nat.GlobalNAT44Key, rndr.natGlobalCfg)
}

// insertExtAddr adds an address to the sorted list of external IPs in use; false if it
// was there.
func (rndr *Renderer) insertExtAddr(a string) bool {
	i, found := slices.BinarySearch(rndr.extAddrs, a)
	if !found {
		rndr.extAddrs = slices.Insert(rndr.extAddrs, i, a)
	}
	return !found
}

// removeExtAddr removes an address from the sorted list of external IPs in use.
func (rndr *Renderer) removeExtAddr(a string) {
	if i, found := slices.BinarySearch(rndr.extAddrs, a); found {
		rndr.extAddrs = slices.Delete(rndr.extAddrs, i, i+1)
	}
}

// resyncExternalIPs rebuilds the users of every external IP from the rendered services
// and stages the identity DNat44s and the pool's VRF table (the pool itself is part of
// the global configuration, built after this).
func (rndr *Renderer) resyncExternalIPs(txn controller.ResyncOperations, records []*renderedService) {
	rndr.extUsers = make(map[string]map[renderer.ServiceID]struct{})
	rndr.extAddrs = rndr.extAddrs[:0]
	for _, r := range records {
		r.externals = rndr.wantedExternalIPs(r.svc)
		for _, a := range r.externals {
			users := rndr.extUsers[a]
			if users == nil {
				users = make(map[renderer.ServiceID]struct{}, 1)
				rndr.extUsers[a] = users
			}
			users[r.svc.ID] = struct{}{}
		}
	}
	for a := range rndr.extUsers {
		rndr.extAddrs = append(rndr.extAddrs, a)
	}
	slices.Sort(rndr.extAddrs)
	for _, a := range rndr.extAddrs {
		txn.Put(vpp_nat.DNAT44Key(externalDNATLabelPrefix+a), rndr.externalDNAT(a))
	}
	if len(rndr.extAddrs) > 0 {
		txn.Put(externalVRFKey(), externalVRF())
	}
}

// indexExternalIPs moves the service from the external IPs of old (nil: none) to those
// of svc (nil: none) in extIPServices.
func (rndr *Renderer) indexExternalIPs(old, svc *renderer.FlatService) {
	if old != nil {
		for _, a := range old.ExternalIPs {
			if set := rndr.extIPServices[a.Text]; set != nil {
				delete(set, old.ID)
				if len(set) == 0 {
					delete(rndr.extIPServices, a.Text)
				}
			}
		}
	}
	if svc == nil {
		return
	}
	for _, a := range svc.ExternalIPs {
		if !a.IsIPv4() {
			continue
		}
		if rndr.extIPServices == nil {
			rndr.extIPServices = make(map[string]map[renderer.ServiceID]*renderer.FlatService)
		}
		set := rndr.extIPServices[a.Text]
		if set == nil {
			set = make(map[renderer.ServiceID]*renderer.FlatService, 1)
			rndr.extIPServices[a.Text] = set
		}
		set[svc.ID] = svc
	}
}

// nodeAddrsChanged re-evaluates, after the node IPs changed from previous (by text) to
// rndr.nodeAddrs, the reject or drop routes and the identity and pool values of the
// services exposed on an external IP that became a node IP (a node joined with it:
// the values go, a route there would cut the node off) or stopped being one (they
// come). It costs O(node IPs) to find the changed IPs, as the caller already pays,
// plus the services on those IPs.
func (rndr *Renderer) nodeAddrsChanged(txn controller.UpdateOperations, previous map[string]int) {
	current := make(map[string]struct{}, len(rndr.nodeAddrs))
	var changed []string
	for _, a := range rndr.nodeAddrs {
		current[a.Text] = struct{}{}
		if _, ok := previous[a.Text]; !ok {
			changed = append(changed, a.Text)
		}
	}
	for a := range previous {
		if _, ok := current[a]; !ok {
			changed = append(changed, a)
		}
	}
	slices.Sort(changed)
	var services []*renderer.FlatService
	for _, a := range changed {
		for _, svc := range rndr.extIPServices[a] {
			if !slices.Contains(services, svc) {
				services = append(services, svc)
			}
		}
	}
	slices.SortFunc(services, func(a, b *renderer.FlatService) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	for _, svc := range services {
		r := rndr.rendered[svc]
		if r == nil {
			continue
		}
		routes, externals := rndr.wantedRoutes(svc), rndr.wantedExternalIPs(svc)
		rndr.updateRoutes(txn, svc.ID, r.routes, routes)
		rndr.updateExternalIPs(txn, svc.ID, r.externals, externals)
		r.routes, r.externals = routes, externals
	}
}

package l3plugin

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// RouteDescriptorName names the descriptor of static routes.
const RouteDescriptorName = "vpp-route"

// Dependency labels of routes and the other L3 values.
const (
	// DepInterfaceExists waits for an interface the value uses.
	DepInterfaceExists = "interface-exists"
	// DepVrfTableExists waits for a non-zero VRF table the value uses.
	DepVrfTableExists = "vrf-table-exists"
	// DepViaVrfTableExists waits for the table an INTER_VRF route resolves in.
	DepViaVrfTableExists = "via-vrf-table-exists"
)

// routeDescriptor implements the callbacks of the route descriptor.
type routeDescriptor struct {
	base
}

// NewRouteDescriptor returns the descriptor of VPP static routes.
//
// Every Route is one path of a multipath FIB entry: it is added with
// ip_route_add_del is_add=1 is_multipath=1 and removed with is_add=0
// is_multipath=1, so that routes to the same destination through different
// next hops coexist (ECMP) and removing one leaves the others. The path:
//
//	INTRA_VRF with outgoing_interface  via that interface (and next hop, if any)
//	INTRA_VRF without interface        next hop resolved recursively in vrf_id
//	INTER_VRF                          looked up again in via_vrf_id (next hop optional)
//	DROP                               a drop path
//	ICMP_UNREACH                       an ICMP-unreachable path (VPP's ip4-null: ICMP 3/1, rate-limited)
//	ICMP_PROHIBIT                      an ICMP-prohibited path (ip4-null: ICMP 3/10, rate-limited)
//
// A change of a route is a delete and a create (the path is VPP's identity
// of it); nothing depends on routes, so nothing else is disturbed.
func NewRouteDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &routeDescriptor{base: vppbase.NewDescriptor(deps, RouteDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*l3.Route, kvapi.Metadata]{
		Name:        RouteDescriptorName,
		NBKeyPrefix: l3.RoutePrefix,
		KeySelector: func(key string) bool {
			_, _, _, ok := l3.ParseRouteKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *l3.Route) bool { return EquivalentRoutes(a, b) },
		Validate:        func(key string, v *l3.Route) error { return ValidateRoute(key, v) },
		Create: func(_ string, v *l3.Route) (kvapi.Metadata, error) {
			return nil, d.addDel(v, true)
		},
		Delete:               func(_ string, v *l3.Route, _ kvapi.Metadata) error { return d.addDel(v, false) },
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies:         func(_ string, v *l3.Route) []kvapi.Dependency { return RouteDependencies(v) },
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// route is a Route parsed into VPP's terms.
type route struct {
	typ    l3.Route_RouteType
	vrf    uint32
	dst    netip.Prefix // masked
	nh     netip.Addr   // invalid: none
	iface  string       // "" for none (always "" unless INTRA_VRF)
	viaVrf uint32
	weight uint8
	pref   uint8
}

// parseRoute parses and checks a route; the error is an
// *kvapi.InvalidValueError naming every wrong field.
func parseRoute(r *l3.Route) (route, error) {
	var problems, fields []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	out := route{typ: r.GetType(), vrf: r.GetVrfId(), viaVrf: r.GetViaVrfId()}
	if _, known := l3.Route_RouteType_name[int32(r.GetType())]; !known {
		bad("type", "unknown route type %d", r.GetType())
	}
	dst, err := netip.ParsePrefix(r.GetDstNetwork())
	if err != nil || dst.Addr().Zone() != "" {
		bad("dst_network", "dst_network %q is not a network in CIDR notation", r.GetDstNetwork())
	} else {
		if dst.Addr().Is4In6() {
			dst = netip.PrefixFrom(dst.Addr().Unmap(), dst.Bits()-96)
		}
		out.dst = dst.Masked()
	}
	if s := r.GetNextHopAddr(); s != "" {
		nh, err := parseAddr(s)
		switch {
		case err != nil:
			bad("next_hop_addr", "next_hop_addr %q is not an IP address", s)
		case out.dst.IsValid() && nh.Is4() != out.dst.Addr().Is4():
			bad("next_hop_addr", "next_hop_addr %s is not of the family of dst_network %s", nh, out.dst)
		case !nh.IsUnspecified():
			out.nh = nh
		}
	}
	switch r.GetType() {
	case l3.Route_INTRA_VRF:
		out.iface = r.GetOutgoingInterface()
		if out.iface == "" && !out.nh.IsValid() {
			bad("next_hop_addr", "an INTRA_VRF route needs a next hop or an outgoing interface")
		}
	case l3.Route_INTER_VRF:
		if r.GetOutgoingInterface() != "" {
			bad("outgoing_interface", "an INTER_VRF route resolves in via_vrf_id and takes no outgoing interface")
		}
	case l3.Route_DROP, l3.Route_ICMP_UNREACH, l3.Route_ICMP_PROHIBIT:
		// VPP ignores the interface and next hop of these path types
		// (fib_api.c fib_api_path_decode); refuse them rather than let a
		// route look as if it went somewhere.
		if s := r.GetNextHopAddr(); s != "" {
			bad("next_hop_addr", "a %s route takes no next hop, got next_hop_addr %q", r.GetType(), s)
		}
		if s := r.GetOutgoingInterface(); s != "" {
			bad("outgoing_interface", "a %s route takes no outgoing interface, got outgoing_interface %q", r.GetType(), s)
		}
	}
	if r.GetWeight() > 255 {
		bad("weight", "weight %d is above 255", r.GetWeight())
	}
	if r.GetPreference() > 255 {
		bad("preference", "preference %d is above 255", r.GetPreference())
	}
	out.weight, out.pref = uint8(r.GetWeight()), uint8(r.GetPreference())
	if len(problems) > 0 {
		return route{}, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return out, nil
}

// ValidateRoute checks a route and that key is its key.
func ValidateRoute(key string, r *l3.Route) error {
	if _, err := parseRoute(r); err != nil {
		return err
	}
	if want := l3.RouteKey(r.GetVrfId(), r.GetDstNetwork(), r.GetNextHopAddr()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("route key %q does not match its value (want %q)", key, want),
			"vrf_id", "dst_network", "next_hop_addr")
	}
	return nil
}

// EquivalentRoutes reports whether a and b program the same path (weight 0
// counts as VPP's 1, addresses are compared in canonical form).
func EquivalentRoutes(a, b *l3.Route) bool {
	x, errA := parseRoute(a)
	y, errB := parseRoute(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return x.normalized() == y.normalized()
}

// normalized is the route with VPP's defaults applied.
func (r route) normalized() route {
	if r.weight == 0 {
		r.weight = 1
	}
	return r
}

// RouteDependencies lists what a route needs: its outgoing interface and
// the non-zero VRF tables it is in and resolves in.
func RouteDependencies(r *l3.Route) []kvapi.Dependency {
	proto := l3.VrfTable_IPV4
	if p, err := netip.ParsePrefix(r.GetDstNetwork()); err == nil && !p.Addr().Unmap().Is4() {
		proto = l3.VrfTable_IPV6
	}
	var deps []kvapi.Dependency
	if r.GetType() == l3.Route_INTRA_VRF && r.GetOutgoingInterface() != "" {
		deps = append(deps, kvapi.Dependency{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(r.GetOutgoingInterface())})
	}
	if r.GetVrfId() != 0 {
		deps = append(deps, kvapi.Dependency{Label: DepVrfTableExists, Key: l3.VrfTableKey(r.GetVrfId(), proto)})
	}
	if r.GetType() == l3.Route_INTER_VRF && r.GetViaVrfId() != 0 && r.GetViaVrfId() != r.GetVrfId() {
		deps = append(deps, kvapi.Dependency{Label: DepViaVrfTableExists, Key: l3.VrfTableKey(r.GetViaVrfId(), proto)})
	}
	return deps
}

// path builds the FIB path of the route; sw is the sw_if_index of the
// outgoing interface (ignored without one).
func (r route) path(sw uint32) fib_types.FibPath {
	ipv6 := r.dst.Addr().Is6()
	p := fib_types.FibPath{SwIfIndex: noIndex, TableID: r.vrf, Weight: r.weight, Preference: r.pref,
		Type: fib_types.FIB_API_PATH_TYPE_NORMAL, Proto: nhProto(ipv6)}
	switch r.typ {
	case l3.Route_DROP:
		p.Type = fib_types.FIB_API_PATH_TYPE_DROP
	case l3.Route_ICMP_UNREACH:
		p.Type = fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH
	case l3.Route_ICMP_PROHIBIT:
		p.Type = fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT
	case l3.Route_INTER_VRF:
		p.TableID = r.viaVrf
	default:
		if r.iface != "" {
			p.SwIfIndex = sw
		}
	}
	if r.nh.IsValid() {
		p.Nh.Address = vppbase.AddrToAPI(r.nh).Un
	}
	return p
}

// samePath tells whether two FIB paths are the same path of a route as VPP
// dumps it: the table of a path through an interface or of a special path
// (drop, ICMP unreachable or prohibited: VPP dumps table 0 for them), and
// weight 0 versus 1, do not matter.
func samePath(a, b fib_types.FibPath) bool {
	norm := func(p fib_types.FibPath) fib_types.FibPath {
		if p.Weight == 0 {
			p.Weight = 1
		}
		if p.SwIfIndex != noIndex || specialPathType(p.Type) {
			p.TableID = 0
		}
		nh := pathNextHop(p)
		p.Nh = fib_types.FibPathNh{}
		if nh.IsValid() {
			p.Nh.Address = vppbase.AddrToAPI(nh).Un
		}
		p.Flags, p.RpfID = 0, 0
		return p
	}
	return norm(a) == norm(b)
}

// specialPathType tells whether VPP makes paths of type t special paths
// that forward nowhere (fib_path.c: FIB_PATH_TYPE_SPECIAL): they carry no
// interface, next hop or table.
func specialPathType(t fib_types.FibPathType) bool {
	switch t {
	case fib_types.FIB_API_PATH_TYPE_DROP, fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		return true
	}
	return false
}

func (d *routeDescriptor) addDel(r *l3.Route, isAdd bool) error {
	op := "delete"
	if isAdd {
		op = "add"
	}
	rt, err := parseRoute(r)
	if err != nil {
		return fmt.Errorf("%s route %s: %w", op, describeRoute(r), err)
	}
	var sw uint32
	if rt.iface != "" {
		if sw, err = d.SwIfIndex(rt.iface, op+" route "+describeRoute(r)); err != nil {
			return err
		}
	}
	req := &ip.IPRouteAddDel{IsAdd: isAdd, IsMultipath: true, Route: ip.IPRoute{
		TableID: rt.vrf, Prefix: vppbase.PrefixToAPI(rt.dst), NPaths: 1, Paths: []fib_types.FibPath{rt.path(sw)}}}
	if err := vppbase.Call(d.Ch, req, &ip.IPRouteAddDelReply{}); err != nil {
		return fmt.Errorf("%s route %s: %w", op, describeRoute(r), err)
	}
	d.Log.WithField("route", describeRoute(r)).Debugf("route %s done", op)
	return nil
}

// describeRoute names a route in messages.
func describeRoute(r *l3.Route) string {
	s := fmt.Sprintf("vrf %d %s %s", r.GetVrfId(), r.GetDstNetwork(), r.GetType())
	if r.GetNextHopAddr() != "" {
		s += " via " + r.GetNextHopAddr()
	}
	if r.GetOutgoingInterface() != "" {
		s += " dev " + r.GetOutgoingInterface()
	}
	if r.GetType() == l3.Route_INTER_VRF {
		s += fmt.Sprintf(" via-vrf %d", r.GetViaVrfId())
	}
	return s
}

// retrieve dumps the FIB of every table and reports each path as a route:
// the route NB asks for when the path is its path, otherwise a route built
// from the path with an unknown origin (so the scheduler leaves it alone
// unless it configured it itself). Paths VPP makes by itself are skipped:
// receive (local) paths, the drop entries VPP puts in every table, the
// connected and the broadcast/network entries of interface addresses
// (configured or leased), the default routes of DHCP leases, the host
// entries of neighbors, and paths through interfaces the agent does not
// know.
func (d *routeDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	nb := nbValues[*l3.Route](correlate)
	tables, err := govppmux.Dump[ip.IPTableDetails](d.Ch, &ip.IPTableDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve routes: %w", err)
	}
	names := d.IfaceNames()
	auto := autoEntries(ifaceAddrs(d.base))
	auto.addLeases(d.dhcpLeases())
	seen := map[string]bool{}
	var out []kvapi.KVWithMetadata
	for _, t := range tables {
		entries, err := govppmux.Dump[ip.IPRouteDetails](d.Ch, &ip.IPRouteDump{Table: t.Table})
		if err != nil {
			return nil, fmt.Errorf("retrieve routes of VRF %d: %w", t.Table.TableID, err)
		}
		for _, e := range entries {
			dst, ok := vppbase.PrefixFromAPI(e.Route.Prefix)
			if !ok {
				continue
			}
			dst = dst.Masked()
			for _, p := range e.Route.Paths {
				key := l3.RouteKey(e.Route.TableID, dst.String(), addrString(pathNextHop(p)))
				if seen[key] {
					continue
				}
				if want, ok := nb[key]; ok && d.isPathOf(want, p) {
					seen[key] = true
					out = append(out, kvapi.KVWithMetadata{Key: key, Value: want, Origin: kvapi.UnknownOrigin})
					continue
				}
				if auto.owns(dst, p) {
					continue
				}
				r, ok := routeFromPath(e.Route.TableID, dst, p, names)
				if !ok {
					continue
				}
				seen[key] = true
				out = append(out, kvapi.KVWithMetadata{Key: key, Value: r, Origin: kvapi.UnknownOrigin})
			}
		}
	}
	return out, nil
}

// isPathOf tells whether p is the path route r programs.
func (d *routeDescriptor) isPathOf(r *l3.Route, p fib_types.FibPath) bool {
	rt, err := parseRoute(r)
	if err != nil {
		return false
	}
	var sw uint32
	if rt.iface != "" {
		if sw, err = d.SwIfIndex(rt.iface, ""); err != nil {
			return false
		}
	}
	return samePath(rt.path(sw), p)
}

// addrString formats an address, "" for none.
func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// routeFromPath builds the Route of a dumped path; ok is false for paths a
// Route cannot express (other path types, unknown interfaces).
func routeFromPath(vrf uint32, dst netip.Prefix, p fib_types.FibPath, names map[uint32]string) (*l3.Route, bool) {
	r := &l3.Route{VrfId: vrf, DstNetwork: dst.String(), Weight: uint32(p.Weight), Preference: uint32(p.Preference)}
	nh := pathNextHop(p)
	switch {
	case p.Type == fib_types.FIB_API_PATH_TYPE_DROP:
		r.Type = l3.Route_DROP
		return r, true
	case p.Type == fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH:
		r.Type = l3.Route_ICMP_UNREACH
		return r, true
	case p.Type == fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		r.Type = l3.Route_ICMP_PROHIBIT
		return r, true
	case p.Type != fib_types.FIB_API_PATH_TYPE_NORMAL:
		return nil, false
	case p.SwIfIndex != noIndex:
		name, ok := names[p.SwIfIndex]
		if !ok {
			return nil, false
		}
		r.Type, r.OutgoingInterface, r.NextHopAddr = l3.Route_INTRA_VRF, name, addrString(nh)
	case p.TableID == vrf:
		if !nh.IsValid() {
			return nil, false
		}
		r.Type, r.NextHopAddr = l3.Route_INTRA_VRF, nh.String()
	default:
		r.Type, r.ViaVrfId, r.NextHopAddr = l3.Route_INTER_VRF, p.TableID, addrString(nh)
	}
	return r, true
}

// autoRoutes knows the FIB entries VPP creates by itself.
type autoRoutes struct {
	// connected are the networks of interface addresses by sw_if_index.
	connected map[uint32][]netip.Prefix
	// edges are the network and broadcast addresses of IPv4 interface
	// networks (VPP installs drop entries for them).
	edges map[netip.Addr]bool
	// dhcpRouter is the router of the DHCP lease of an interface (VPP's
	// DHCP client installs a default route via it).
	dhcpRouter map[uint32]netip.Addr
}

// dhcpLease is what the route retrieval needs of a DHCP lease.
type dhcpLease struct {
	sw     uint32
	addr   netip.Prefix // invalid: none
	router netip.Addr   // invalid: none
}

// dhcpLeases reads the bound DHCP leases (dhcp_client_dump). A VPP without
// the DHCP plugin has none: an error is logged, not returned.
func (d *routeDescriptor) dhcpLeases() []dhcpLease {
	list, err := govppmux.Dump[dhcp.DHCPClientDetails](d.Ch, &dhcp.DHCPClientDump{})
	if err != nil {
		d.Log.WithError(err).Debug("no DHCP leases to tell DHCP routes apart")
		return nil
	}
	var out []dhcpLease
	for _, c := range list {
		l := c.Lease
		if l.State != dhcp.DHCP_CLIENT_STATE_API_BOUND {
			continue
		}
		lease := dhcpLease{sw: uint32(l.SwIfIndex)}
		if a, ok := vppbase.AddrFromAPI(l.HostAddress); ok && !a.IsUnspecified() && int(l.MaskWidth) <= a.BitLen() {
			lease.addr = netip.PrefixFrom(a, int(l.MaskWidth))
		}
		if r, ok := vppbase.AddrFromAPI(l.RouterAddress); ok && !r.IsUnspecified() {
			lease.router = r
		}
		out = append(out, lease)
	}
	return out
}

// addLeases adds what DHCP leases make VPP install: the connected entries
// of the leased address and the default route via the router.
func (a autoRoutes) addLeases(leases []dhcpLease) {
	for _, l := range leases {
		if l.addr.IsValid() {
			a.addAddress(l.sw, l.addr)
		}
		if l.router.IsValid() {
			a.dhcpRouter[l.sw] = l.router
		}
	}
}

// addAddress records the entries an interface address makes VPP install.
func (a autoRoutes) addAddress(sw uint32, p netip.Prefix) {
	a.connected[sw] = append(a.connected[sw], p.Masked())
	if p.Addr().Is4() && p.Bits() < 31 {
		a.edges[p.Masked().Addr()] = true
		a.edges[lastAddr(p)] = true
	}
}

// isSpecialDrop tells whether VPP installs a drop entry for p in every
// table by itself.
func isSpecialDrop(p netip.Prefix) bool {
	switch p.String() {
	case "0.0.0.0/0", "0.0.0.0/32", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32", "::/0":
		return true
	}
	return false
}

// autoEntries prepares the recognition of VPP's own entries from the
// interface addresses (sw_if_index -> addresses in CIDR notation).
func autoEntries(addrs map[uint32][]string) autoRoutes {
	a := autoRoutes{connected: map[uint32][]netip.Prefix{}, edges: map[netip.Addr]bool{}, dhcpRouter: map[uint32]netip.Addr{}}
	for sw, list := range addrs {
		for _, s := range list {
			if p, err := netip.ParsePrefix(s); err == nil {
				a.addAddress(sw, p)
			}
		}
	}
	return a
}

// owns reports whether a dumped path of dst is one VPP made by itself.
func (a autoRoutes) owns(dst netip.Prefix, p fib_types.FibPath) bool {
	switch p.Type {
	case fib_types.FIB_API_PATH_TYPE_NORMAL:
	case fib_types.FIB_API_PATH_TYPE_DROP:
		return isSpecialDrop(dst) || (dst.IsSingleIP() && a.edges[dst.Addr()])
	case fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		return false // VPP installs none by itself
	default:
		return true // local (receive) and other special paths
	}
	nh := pathNextHop(p)
	if dst.Bits() == 0 && dst.Addr().Is4() && nh.IsValid() && a.dhcpRouter[p.SwIfIndex] == nh {
		return true // the default route of a DHCP lease
	}
	if p.SwIfIndex != noIndex && !nh.IsValid() {
		for _, c := range a.connected[p.SwIfIndex] {
			if c == dst {
				return true
			}
		}
	}
	// the host entry of a neighbor: dst/32 (or /128) via dst on an interface
	return p.SwIfIndex != noIndex && dst.IsSingleIP() && nh == dst.Addr()
}

// lastAddr returns the broadcast address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

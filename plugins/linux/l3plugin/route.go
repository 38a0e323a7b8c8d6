package l3plugin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
)

const (
	// RouteDescriptorName names the descriptor of Linux routes.
	RouteDescriptorName = "linux-route"
	// DepGatewayReachable labels the dependency of a route via a gateway on
	// the gateway being reachable (see the package doc).
	DepGatewayReachable = "gateway-reachable"

	// ipv6DefaultMetric is the metric the kernel gives an IPv6 route added
	// with metric 0.
	ipv6DefaultMetric = 1024
)

// routeDescriptor implements the callbacks of the route descriptor.
type routeDescriptor struct {
	base
}

// NewRouteDescriptor returns the descriptor of Linux routes.
func NewRouteDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &routeDescriptor{base: newBase(deps, RouteDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*linuxl3.Route, kvapi.Metadata]{
		Name:        RouteDescriptorName,
		NBKeyPrefix: linuxl3.RoutePrefix,
		KeySelector: func(key string) bool {
			_, _, ok := linuxl3.ParseRouteKey(key)
			return ok
		},
		ValueComparator:      func(_ string, a, b *linuxl3.Route) bool { return EquivalentRoutes(a, b) },
		Validate:             func(key string, v *linuxl3.Route) error { return ValidateRoute(key, v) },
		Create:               func(_ string, v *linuxl3.Route) (kvapi.Metadata, error) { return nil, d.create(v) },
		Delete:               func(_ string, v *linuxl3.Route, _ kvapi.Metadata) error { return d.delete(v) },
		Retrieve:             d.retrieve,
		IsRetriableFailure:   linuxcalls.IsRetriable,
		Dependencies:         func(_ string, v *linuxl3.Route) []kvapi.Dependency { return RouteDependencies(v) },
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	})
}

// parsedRoute is a valid route in parsed form.
type parsedRoute struct {
	dst   netip.Prefix // masked
	gw    netip.Addr   // invalid when there is none
	scope netlink.Scope
}

// parseDst parses a destination network, a bare address being a host route.
func parseDst(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Zone() == "" {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("dst_network %q is not an IP network", s)
}

// kernelScope maps a model scope to the kernel's (unset is GLOBAL).
func kernelScope(s linuxl3.Route_Scope) (netlink.Scope, bool) {
	switch s {
	case linuxl3.Route_UNDEFINED, linuxl3.Route_GLOBAL:
		return netlink.SCOPE_UNIVERSE, true
	case linuxl3.Route_SITE:
		return netlink.SCOPE_SITE, true
	case linuxl3.Route_LINK:
		return netlink.SCOPE_LINK, true
	case linuxl3.Route_HOST:
		return netlink.SCOPE_HOST, true
	}
	return 0, false
}

// parseRoute parses and checks a route; the error names every wrong field.
func parseRoute(r *linuxl3.Route) (parsedRoute, error) {
	var (
		pr       parsedRoute
		problems []string
		fields   []string
	)
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	if r.GetOutgoingInterface() == "" {
		bad("outgoing_interface", "empty outgoing_interface")
	}
	dst, err := parseDst(r.GetDstNetwork())
	if err != nil {
		bad("dst_network", "%v", err)
	}
	pr.dst = dst
	scope, ok := kernelScope(r.GetScope())
	if !ok {
		bad("scope", "unknown scope %v", r.GetScope())
	}
	pr.scope = scope
	if gw := r.GetGwAddr(); gw != "" {
		a, err := netip.ParseAddr(gw)
		switch {
		case err != nil || a.Zone() != "":
			bad("gw_addr", "gw_addr %q is not an IP address", gw)
		case dst.IsValid() && a.Is4() != dst.Addr().Is4():
			bad("gw_addr", "gw_addr %s and dst_network %s are of different IP versions", gw, r.GetDstNetwork())
		case r.GetScope() == linuxl3.Route_LINK || r.GetScope() == linuxl3.Route_HOST:
			bad("gw_addr", "a %v-scope route cannot have gw_addr %s", r.GetScope(), gw)
		default:
			pr.gw = a
		}
	}
	if len(problems) > 0 {
		return pr, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return pr, nil
}

// ValidateRoute checks a route and that key is its key; the error is an
// *kvapi.InvalidValueError naming the wrong fields and values.
func ValidateRoute(key string, r *linuxl3.Route) error {
	if _, err := parseRoute(r); err != nil {
		return err
	}
	if want := linuxl3.RouteKey(r.GetDstNetwork(), r.GetOutgoingInterface()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("route key %q does not match its value (want %q)", key, want),
			"dst_network", "outgoing_interface")
	}
	return nil
}

// EquivalentRoutes reports whether a and b configure the same route
// (addresses compared in canonical form, unset scope equal to GLOBAL).
func EquivalentRoutes(a, b *linuxl3.Route) bool {
	pa, errA := parseRoute(a)
	pb, errB := parseRoute(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return a.GetOutgoingInterface() == b.GetOutgoingInterface() && pa == pb && a.GetMetric() == b.GetMetric()
}

// RouteDependencies lists what a route needs: its interface and, for a route
// via a gateway, the gateway being reachable (see the package doc).
func RouteDependencies(r *linuxl3.Route) []kvapi.Dependency {
	iface := r.GetOutgoingInterface()
	if iface == "" {
		return nil
	}
	deps := []kvapi.Dependency{ifaceDependency(iface)}
	if dep, ok := gatewayDependency(r); ok {
		deps = append(deps, dep)
	}
	return deps
}

// gatewayDependency is the "gateway-reachable" dependency of a route via a
// gateway: the host route to the gateway on the same interface, or an
// address of the interface whose network contains the gateway.
func gatewayDependency(r *linuxl3.Route) (kvapi.Dependency, bool) {
	gw, err := netip.ParseAddr(r.GetGwAddr())
	if err != nil || gw.Zone() != "" || (gw.Is6() && gw.IsLinkLocalUnicast()) {
		return kvapi.Dependency{}, false
	}
	iface := r.GetOutgoingInterface()
	hostRoute := linuxl3.RouteKey(netip.PrefixFrom(gw, gw.BitLen()).String(), iface)
	if hostRoute == linuxl3.RouteKey(r.GetDstNetwork(), iface) {
		return kvapi.Dependency{}, false // the route to the gateway itself
	}
	addrPrefix := linuxif.InterfaceAddressPrefix(iface)
	return kvapi.Dependency{
		Label: DepGatewayReachable,
		AnyOf: kvapi.AnyOfDependency{
			KeyPrefixes: []string{hostRoute, addrPrefix},
			KeySelector: func(key string) bool {
				if key == hostRoute {
					return true
				}
				ifName, addr, ok := linuxif.ParseInterfaceAddressKey(key)
				if !ok || ifName != iface {
					return false
				}
				p, err := netip.ParsePrefix(addr)
				return err == nil && p.Bits() < p.Addr().BitLen() && p.Masked().Contains(gw)
			},
		},
	}, true
}

// toNetlink builds the kernel route of r out of the link with the given
// index.
func toNetlink(pr parsedRoute, r *linuxl3.Route, linkIndex int) *netlink.Route {
	nr := &netlink.Route{
		LinkIndex: linkIndex,
		Dst:       linuxcalls.PrefixToIPNet(pr.dst),
		Scope:     pr.scope,
		Priority:  int(r.GetMetric()),
		Table:     unix.RT_TABLE_MAIN,
		Protocol:  unix.RTPROT_STATIC,
		Type:      unix.RTN_UNICAST,
	}
	if pr.gw.IsValid() {
		nr.Gw = net.IP(pr.gw.AsSlice())
	}
	return nr
}

// describe names a route in messages.
func describe(r *linuxl3.Route, path string) string {
	s := fmt.Sprintf("route %s", r.GetDstNetwork())
	if r.GetGwAddr() != "" {
		s += " via " + r.GetGwAddr()
	}
	return fmt.Sprintf("%s dev %s metric %d in namespace %s", s, r.GetOutgoingInterface(), r.GetMetric(), path)
}

// create adds (or replaces) the route in the interface's namespace.
func (d *routeDescriptor) create(r *linuxl3.Route) error {
	pr, err := parseRoute(r)
	if err != nil {
		return err
	}
	l, err := d.openLink(r.GetOutgoingInterface())
	if err != nil {
		return fmt.Errorf("add route %s: %w", r.GetDstNetwork(), err)
	}
	defer l.close()
	if err := l.h.RouteReplace(toNetlink(pr, r, l.link.Attrs().Index)); err != nil {
		return fmt.Errorf("add %s: %w", describe(r, l.path), err)
	}
	d.log.WithFields(logrus.Fields{"dst": r.GetDstNetwork(), "gw": r.GetGwAddr(), "interface": r.GetOutgoingInterface(),
		"namespace": l.path}).Info("linux route added")
	return nil
}

// delete removes the route; a route whose link or namespace is gone is gone
// too.
func (d *routeDescriptor) delete(r *linuxl3.Route) error {
	pr, err := parseRoute(r)
	if err != nil {
		return err
	}
	l, err := d.openLink(r.GetOutgoingInterface())
	if err != nil {
		if linuxcalls.IsGone(err) {
			return nil
		}
		return fmt.Errorf("delete route %s: %w", r.GetDstNetwork(), err)
	}
	defer l.close()
	nr := toNetlink(pr, r, l.link.Attrs().Index)
	nr.Protocol = 0 // match whoever added it
	if pr.dst.Addr().Is6() && r.GetMetric() == 0 {
		nr.Priority = ipv6DefaultMetric
	}
	if err := l.h.RouteDel(nr); err != nil && !linuxcalls.IsGone(err) {
		return fmt.Errorf("delete %s: %w", describe(r, l.path), err)
	}
	d.log.WithFields(logrus.Fields{"dst": r.GetDstNetwork(), "interface": r.GetOutgoingInterface(),
		"namespace": l.path}).Info("linux route deleted")
	return nil
}

// retrieve reads back the correlated routes.
func (d *routeDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	cache := &linkCache{b: &d.base, links: make(map[string]*ifLink)}
	defer cache.closeAll()
	type listKey struct {
		iface  string
		family int
	}
	lists := make(map[listKey][]netlink.Route)
	var out []kvapi.KVWithMetadata
	for _, kv := range correlate {
		r, ok := kv.Value.(*linuxl3.Route)
		if !ok {
			continue
		}
		pr, err := parseRoute(r)
		if err != nil {
			continue
		}
		l, err := cache.get(r.GetOutgoingInterface())
		if err != nil {
			return nil, fmt.Errorf("retrieve route %s: %w", r.GetDstNetwork(), err)
		}
		if l == nil {
			continue
		}
		family := netlink.FAMILY_V4
		if pr.dst.Addr().Is6() {
			family = netlink.FAMILY_V6
		}
		lk := listKey{r.GetOutgoingInterface(), family}
		routes, listed := lists[lk]
		if !listed {
			filter := &netlink.Route{LinkIndex: l.link.Attrs().Index, Table: unix.RT_TABLE_MAIN}
			routes, err = linuxcalls.Retry(func() ([]netlink.Route, error) {
				return l.h.RouteListFiltered(family, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
			})
			if err != nil {
				return nil, fmt.Errorf("list routes of %s in namespace %s: %w", r.GetOutgoingInterface(), l.path, err)
			}
			lists[lk] = routes
		}
		if found, ok := matchRoute(routes, pr, r); ok {
			out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: found, Origin: kvapi.FromNB})
		}
	}
	return out, nil
}

// matchRoute finds the kernel route with the destination and metric of r and
// returns it in the shape of r.
func matchRoute(routes []netlink.Route, pr parsedRoute, r *linuxl3.Route) (*linuxl3.Route, bool) {
	for _, kr := range routes {
		dst, ok := linuxcalls.IPNetToPrefix(kr.Dst)
		if !ok || dst.Masked() != pr.dst {
			continue
		}
		metric := uint32(kr.Priority)
		if pr.dst.Addr().Is6() && r.GetMetric() == 0 && kr.Priority == ipv6DefaultMetric {
			metric = 0
		}
		if metric != r.GetMetric() {
			continue
		}
		v := proto.Clone(r).(*linuxl3.Route)
		gw, _ := netip.AddrFromSlice(kr.Gw)
		gw = gw.Unmap()
		switch {
		case kr.Gw == nil:
			v.GwAddr = ""
		case !pr.gw.IsValid() || gw != pr.gw:
			v.GwAddr = gw.String()
		}
		if pr.dst.Addr().Is4() && kr.Scope != pr.scope {
			// IPv6 routes carry no scope; keep the NB one for them.
			v.Scope = modelScope(kr.Scope)
		}
		return v, true
	}
	return nil, false
}

// modelScope maps a kernel scope to the model.
func modelScope(s netlink.Scope) linuxl3.Route_Scope {
	switch s {
	case netlink.SCOPE_SITE:
		return linuxl3.Route_SITE
	case netlink.SCOPE_LINK:
		return linuxl3.Route_LINK
	case netlink.SCOPE_HOST:
		return linuxl3.Route_HOST
	}
	return linuxl3.Route_GLOBAL
}

package natplugin

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Conflicts over an external endpoint. VPP holds one static mapping per external
// (address, port, protocol): of two DNat44 values under different keys mapping the same
// one, whichever VPP got first would keep it, so after a VPP or agent restart a value
// written by someone else (etcd, /vnf-agent/<node>/config/) could take a Service over,
// depending on the order of the resync. Instead the agent's values win, whatever the
// order:
//
//	preferred (the agent's: Preferred(label))    external (any other label)
//	────────────────────────────────────────     ──────────────────────────────────────
//	created as usual; a mapping of an applied    depends on DNAT44FreeKey(label), an SB
//	external value on one of its endpoints is    value the descriptor notifies while no
//	deleted first (the external value then       preferred value claims its endpoints:
//	goes PENDING, its status naming the key)     PENDING (with the dependency named)
//	                                             while one does; Create/Update refuse
//	                                             it, naming both keys and the endpoint,
//	                                             when it would win; created again when
//	                                             the preferred value lets the endpoint go
//
// The bookkeeping costs nothing while no external value exists; with some, a change of
// a preferred value costs a map lookup per mapping and parses those on a port an
// external value uses; a new external endpoint is looked for among the agent's values
// once (parsing their mappings on its port).

// DNAT44FreeKeyPrefix starts the keys of the SB values that say an external DNat44's
// endpoints are free of the agent's values (see DNAT44FreeKey).
const DNAT44FreeKeyPrefix = "vpp/nat44/dnat44-endpoints-free/"

// DepEndpointsFree labels the dependency of an external DNat44 on DNAT44FreeKey.
const DepEndpointsFree = "external-endpoints-free-of-the-agents-dnat44"

// DNAT44FreeKey is the key of the SB value the descriptor notifies while no preferred
// DNat44 maps an external endpoint of the external DNat44 labelled label.
func DNAT44FreeKey(label string) string { return DNAT44FreeKeyPrefix + label }

// DefaultPreferred tells the labels of the agent's own DNat44 values: those the service
// renderer writes, "<namespace>/<name>" of a Service (lower-case DNS names),
// nat.IdentityDNAT44Label and the labels starting with
// nat.ExternalIPDNAT44LabelPrefix. Any other label is external.
func DefaultPreferred(label string) bool {
	if label == nat.IdentityDNAT44Label || strings.HasPrefix(label, nat.ExternalIPDNAT44LabelPrefix) {
		return true
	}
	ns, name, ok := strings.Cut(label, "/")
	return ok && dnsName(ns, 63, false) && dnsName(name, 253, true)
}

// dnsName tells whether s is a lower-case DNS label (dots: subdomain) of at most max
// bytes.
func dnsName(s string, max int, dots bool) bool {
	if s == "" || len(s) > max || s[0] == '-' || s[len(s)-1] == '-' || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || dots && c == '.') {
			return false
		}
	}
	return true
}

// endpoint is an external (address, port, protocol) of a static mapping, as VPP tells
// mappings apart (protocol 0 for address-only mappings).
type endpoint struct {
	ip    netip.Addr
	port  uint16
	proto uint8
}

func (e endpoint) String() string {
	if e.port == 0 {
		return e.ip.String()
	}
	return fmt.Sprintf("%s %s", protoName(e.proto), netip.AddrPortFrom(e.ip, e.port))
}

// endpointOf returns the external endpoint of a static mapping; ok is false for one
// that names an interface instead of an address.
func endpointOf(sm *nat.DNat44_StaticMapping) (endpoint, bool) {
	if sm.GetExternalInterface() != "" {
		return endpoint{}, false
	}
	ip, err := netip.ParseAddr(sm.GetExternalIp())
	if err != nil {
		return endpoint{}, false
	}
	e := endpoint{ip: ip.Unmap(), port: uint16(sm.GetExternalPort())}
	if e.port != 0 {
		e.proto, _ = protoNumber(sm.GetProtocol())
	}
	return e, true
}

// endpointsOf lists the external endpoints of v's static mappings.
func endpointsOf(v *nat.DNat44) []endpoint {
	var out []endpoint
	for _, sm := range v.GetStMappings() {
		if e, ok := endpointOf(sm); ok {
			out = append(out, e)
		}
	}
	return out
}

// conflicts is the DNat44 descriptor's bookkeeping of external values (see above).
type conflicts struct {
	// preferred tells the agent's labels; nil turns the bookkeeping off.
	preferred func(label string) bool
	// push notifies the scheduler of SB values (nil: the scheduler cannot be told).
	push func(values ...kvapi.KVWithMetadata) error

	ext     map[string][]endpoint            // external label -> its endpoints (desired)
	wanted  map[endpoint]map[string]struct{} // endpoint -> external labels mapping it
	ports   map[uint16]int                   // port -> wanted endpoints with it
	claimed map[endpoint]map[string]struct{} // wanted endpoint -> preferred labels mapping it
	free    map[string]bool                  // external label -> the free state last notified
	applied map[string]*nat.DNat44           // external label -> its value in VPP
}

func (c *conflicts) on() bool { return c.preferred != nil }

// isExternal tells whether label is another's than the agent's.
func (c *conflicts) isExternal(label string) bool { return c.on() && !c.preferred(label) }

// dependency is the dependency of an external value on its endpoints being free.
func (c *conflicts) dependency(label string) (kvapi.Dependency, bool) {
	if !c.isExternal(label) {
		return kvapi.Dependency{}, false
	}
	return kvapi.Dependency{Label: DepEndpointsFree, Key: DNAT44FreeKey(label)}, true
}

// validated records v, accepted for label (old: the value accepted before, if any);
// others are the values accepted for other keys, scanned when an external value maps
// an endpoint no external value mapped before.
func (c *conflicts) validated(label string, old, v *nat.DNat44, others func(func(*nat.DNat44))) {
	if !c.on() {
		return
	}
	if !c.isExternal(label) {
		if len(c.wanted) > 0 {
			c.notify(c.reclaim(label, old, v))
		}
		return
	}
	c.forgetExternal(label)
	eps := endpointsOf(v)
	c.ext[label] = eps
	var fresh []endpoint
	for _, e := range eps {
		if c.wanted[e] == nil {
			c.wanted[e] = map[string]struct{}{}
			c.ports[e.port]++
			fresh = append(fresh, e)
		}
		c.wanted[e][label] = struct{}{}
	}
	if len(fresh) > 0 {
		others(func(p *nat.DNat44) {
			if p.GetLabel() == label || c.isExternal(p.GetLabel()) {
				return
			}
			for _, sm := range p.GetStMappings() {
				if !slices.ContainsFunc(fresh, func(e endpoint) bool { return uint32(e.port) == sm.GetExternalPort() }) {
					continue // only mappings on a port of the new endpoints are parsed
				}
				if e, ok := endpointOf(sm); ok && slices.Contains(fresh, e) {
					c.claim(e, p.GetLabel())
				}
			}
		})
	}
	c.notify([]string{label})
}

// deleted forgets the value of label that was deleted.
func (c *conflicts) deleted(label string, v *nat.DNat44) {
	if !c.on() {
		return
	}
	if c.isExternal(label) {
		c.forgetExternal(label)
		delete(c.applied, label)
		return
	}
	if len(c.wanted) > 0 {
		c.notify(c.reclaim(label, v, nil))
	}
}

// init makes the maps.
func (c *conflicts) init() {
	if c.ext == nil {
		c.ext, c.wanted, c.ports = map[string][]endpoint{}, map[endpoint]map[string]struct{}{}, map[uint16]int{}
		c.claimed, c.free, c.applied = map[endpoint]map[string]struct{}{}, map[string]bool{}, map[string]*nat.DNat44{}
	}
}

func (c *conflicts) claim(e endpoint, label string) {
	if c.claimed[e] == nil {
		c.claimed[e] = map[string]struct{}{}
	}
	c.claimed[e][label] = struct{}{}
}

// forgetExternal drops the endpoints of external label.
func (c *conflicts) forgetExternal(label string) {
	c.init()
	for _, e := range c.ext[label] {
		delete(c.wanted[e], label)
		if len(c.wanted[e]) == 0 {
			delete(c.wanted, e)
			delete(c.claimed, e)
			if c.ports[e.port]--; c.ports[e.port] == 0 {
				delete(c.ports, e.port)
			}
		}
	}
	delete(c.ext, label)
}

// reclaim moves the claims of preferred label from the endpoints of old to those of v
// (nil: none) and returns the external labels whose endpoints this touched.
func (c *conflicts) reclaim(label string, old, v *nat.DNat44) (touched []string) {
	visit := func(d *nat.DNat44, add bool) {
		for _, sm := range d.GetStMappings() {
			if c.ports[uint16(sm.GetExternalPort())] == 0 {
				continue // no external value maps this port: nothing parsed
			}
			e, ok := endpointOf(sm)
			if !ok || c.wanted[e] == nil {
				continue
			}
			if add {
				c.claim(e, label)
			} else {
				delete(c.claimed[e], label)
			}
			for ext := range c.wanted[e] {
				if !slices.Contains(touched, ext) {
					touched = append(touched, ext)
				}
			}
		}
	}
	visit(old, false)
	visit(v, true)
	return touched
}

// blockedBy returns an endpoint of external label that a preferred value maps, and
// that value's label (the least, for a stable message); ok is false when none is.
func (c *conflicts) blockedBy(label string) (e endpoint, by string, ok bool) {
	for _, e := range c.ext[label] {
		for p := range c.claimed[e] {
			if !ok || p < by {
				by, ok = p, true
			}
		}
		if ok {
			return e, by, true
		}
	}
	return endpoint{}, "", false
}

// notify tells the scheduler, for each external label whose state changed, whether
// its endpoints are free (DNAT44FreeKey present) or not (absent).
func (c *conflicts) notify(labels []string) {
	if c.push == nil {
		return
	}
	var kvs []kvapi.KVWithMetadata
	for _, l := range labels {
		if _, known := c.ext[l]; !known {
			continue
		}
		_, _, blocked := c.blockedBy(l)
		free := !blocked
		if was, ok := c.free[l]; ok && was == free {
			continue
		}
		c.free[l] = free
		kv := kvapi.KVWithMetadata{Key: DNAT44FreeKey(l)}
		if free {
			kv.Value = wrapperspb.String(l)
		}
		kvs = append(kvs, kv)
	}
	if len(kvs) > 0 {
		_ = c.push(kvs...) // fails only when the scheduler is closing
	}
}

// refusal is the error of a Create or Update of external label while a preferred value
// maps one of its endpoints; nil when none does.
func (c *conflicts) refusal(label string) error {
	if !c.isExternal(label) {
		return nil
	}
	e, by, blocked := c.blockedBy(label)
	if !blocked {
		return nil
	}
	return fmt.Errorf("external endpoint %s is mapped by the agent's DNAT44 %s (key %s), which wins conflicts on an external endpoint: "+
		"this value (key %s) waits until %s lets it go; change or remove this value to end the conflict",
		e, by, nat.DNAT44Key(by), nat.DNAT44Key(label), by)
}

// takeovers lists, for the preferred value v about to be applied, the applied external
// values that map one of its endpoints, each with what of it may stay (the value
// without those mappings).
func (c *conflicts) takeovers(v *nat.DNat44) (from []*nat.DNat44, keep []*nat.DNat44) {
	if !c.on() || len(c.applied) == 0 || c.isExternal(v.GetLabel()) {
		return nil, nil
	}
	theirs := map[endpoint]bool{} // the endpoints of the applied external values (few)
	ports := map[uint32]bool{}
	labels := make([]string, 0, len(c.applied))
	for l, x := range c.applied {
		labels = append(labels, l)
		for _, e := range endpointsOf(x) {
			theirs[e], ports[uint32(e.port)] = true, true
		}
	}
	slices.Sort(labels)
	mine := map[endpoint]bool{} // v's endpoints among them: only mappings on their ports are parsed
	for _, sm := range v.GetStMappings() {
		if !ports[sm.GetExternalPort()] {
			continue
		}
		if e, ok := endpointOf(sm); ok && theirs[e] {
			mine[e] = true
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	for _, l := range labels {
		x := c.applied[l]
		var rest []*nat.DNat44_StaticMapping
		for _, sm := range x.GetStMappings() {
			if e, ok := endpointOf(sm); !ok || !mine[e] {
				rest = append(rest, sm)
			}
		}
		if len(rest) == len(x.GetStMappings()) {
			continue
		}
		from = append(from, x)
		keep = append(keep, &nat.DNat44{Label: x.GetLabel(), StMappings: rest, IdMappings: x.GetIdMappings()})
	}
	return from, keep
}

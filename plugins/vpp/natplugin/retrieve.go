package natplugin

import (
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// retrieve rebuilds DNat44 values from the mapping dumps, grouped by tag.
func (d *dnatDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	nbByTag := make(map[string]*nat.DNat44, len(correlate))
	for _, kv := range correlate {
		v, ok := kv.Value.(*nat.DNat44)
		if !ok {
			continue
		}
		t := Tag(v.GetLabel())
		if prev, ok := nbByTag[t]; !ok || prev.GetLabel() != t {
			nbByTag[t] = v
		}
	}
	groups, order, err := d.dumpMappings()
	if err != nil {
		return nil, fmt.Errorf("retrieve DNAT44: %w", err)
	}
	out := make([]kvapi.KVWithMetadata, 0, len(order)+len(correlate))
	for _, tag := range order {
		v := rebuild(tag, groups[tag], nbByTag[tag])
		out = append(out, kvapi.KVWithMetadata{Key: nat.DNAT44Key(v.GetLabel()), Value: v, Origin: kvapi.FromNB})
	}
	for _, kv := range correlate {
		v, ok := kv.Value.(*nat.DNat44)
		if !ok {
			continue
		}
		if len(v.GetStMappings()) == 0 && len(v.GetIdMappings()) == 0 && groups[Tag(v.GetLabel())] == nil {
			// an empty set of mappings exists as soon as it is asked for
			out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: v, Origin: kvapi.FromNB})
		}
	}
	return out, nil
}

// dumpMappings reads the static, LB and identity mappings with a tag,
// grouped by tag (order: tags in the order first seen).
func (d *dnatDescriptor) dumpMappings() (map[string][]mapping, []string, error) {
	groups := map[string][]mapping{}
	var order []string
	add := func(tag string, m mapping) {
		if tag == "" {
			return
		}
		if _, ok := groups[tag]; !ok {
			order = append(order, tag)
		}
		groups[tag] = append(groups[tag], m)
	}
	names := d.IfaceNames()
	statics, err := govppmux.Dump[nat44_ed.Nat44StaticMappingDetails](d.Ch, &nat44_ed.Nat44StaticMappingDump{})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range statics {
		if m, ok := staticFromDump(s, names); ok {
			add(s.Tag, m)
		}
	}
	lbs, err := govppmux.Dump[nat44_ed.Nat44LbStaticMappingDetails](d.Ch, &nat44_ed.Nat44LbStaticMappingDump{})
	if err != nil {
		return nil, nil, err
	}
	for _, lb := range lbs {
		add(lb.Tag, lbFromDump(lb))
	}
	ids, err := govppmux.Dump[nat44_ed.Nat44IdentityMappingDetails](d.Ch, &nat44_ed.Nat44IdentityMappingDump{})
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if m, ok := identityFromDump(id, names); ok {
			add(id.Tag, m)
		}
	}
	return groups, order, nil
}

// rebuild makes the DNat44 of one tag. Mappings NB has (paired by
// matchKey) are reported as NB wrote them; if all of them match, the NB
// value itself is returned.
func rebuild(tag string, ms []mapping, want *nat.DNat44) *nat.DNat44 {
	nbSt := map[string][]*nat.DNat44_StaticMapping{}
	nbID := map[string][]*nat.DNat44_IdentityMapping{}
	label := tag
	if want != nil {
		label = want.GetLabel()
		for _, sm := range want.GetStMappings() {
			var p problems
			if m, ok := parseStatic(&p, fieldPath{}, sm, nil); ok {
				nbSt[m.matchKey()] = append(nbSt[m.matchKey()], sm)
			}
		}
		for _, im := range want.GetIdMappings() {
			var p problems
			if m, ok := parseIdentity(&p, fieldPath{}, im); ok {
				nbID[m.matchKey()] = append(nbID[m.matchKey()], im)
			}
		}
	}
	v := &nat.DNat44{Label: label}
	matched := 0
	for i := range ms {
		m := &ms[i]
		k := m.matchKey()
		if l := nbSt[k]; len(l) > 0 && m.kind != kindIdentity {
			v.StMappings, nbSt[k] = append(v.StMappings, l[0]), l[1:]
			matched++
			continue
		}
		if l := nbID[k]; len(l) > 0 && m.kind == kindIdentity {
			v.IdMappings, nbID[k] = append(v.IdMappings, l[0]), l[1:]
			matched++
			continue
		}
		st, id, ok := m.toModel()
		switch {
		case !ok:
		case st != nil:
			v.StMappings = append(v.StMappings, st)
		default:
			v.IdMappings = append(v.IdMappings, id)
		}
	}
	if want != nil && matched == len(ms) && matched == len(want.GetStMappings())+len(want.GetIdMappings()) {
		return want
	}
	return v
}

// toModel turns a mapping back into the model (for Retrieve).
func (m *mapping) toModel() (st *nat.DNat44_StaticMapping, id *nat.DNat44_IdentityMapping, ok bool) {
	proto, ok := protoModel(m.proto)
	if !ok {
		return nil, nil, false
	}
	ext := ""
	if m.extIf == "" {
		ext = m.extIP.String()
	}
	if m.kind == kindIdentity {
		return nil, &nat.DNat44_IdentityMapping{VrfId: m.vrf, Interface: m.extIf, IpAddress: ext,
			Port: uint32(m.extPort), Protocol: proto}, true
	}
	st = &nat.DNat44_StaticMapping{ExternalInterface: m.extIf, ExternalIp: ext, ExternalPort: uint32(m.extPort),
		Protocol: proto, TwiceNat: twiceModel(m.twice), SessionAffinity: m.affinity}
	if m.pool.IsValid() {
		st.TwiceNatPoolIp = m.pool.String()
	}
	for _, l := range m.locals {
		st.LocalIps = append(st.LocalIps, &nat.DNat44_StaticMapping_LocalIP{VrfId: l.vrf, LocalIp: l.ip.String(),
			LocalPort: uint32(l.port), Probability: uint32(l.prob)})
	}
	return st, nil, true
}

// staticFromDump rebuilds a static mapping from its details; ok is false
// when its external interface is unknown.
func staticFromDump(d *nat44_ed.Nat44StaticMappingDetails, names map[uint32]string) (mapping, bool) {
	m := mapping{kind: kindStatic, proto: d.Protocol, extPort: d.ExternalPort, twice: d.Flags & (nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT),
		locals: []local{{ip: netip.AddrFrom4(d.LocalIPAddress), port: d.LocalPort, vrf: d.VrfID}}}
	if sw := uint32(d.ExternalSwIfIndex); sw != noIndex {
		name, ok := names[sw]
		if !ok {
			return mapping{}, false
		}
		m.extIf = name
	} else {
		m.extIP = netip.AddrFrom4(d.ExternalIPAddress)
	}
	if d.Flags&nat_types.NAT_IS_ADDR_ONLY != 0 {
		m.extPort, m.proto, m.locals[0].port = 0, 0, 0
	}
	return m, true
}

// lbFromDump rebuilds a load-balancing mapping from its details.
func lbFromDump(d *nat44_ed.Nat44LbStaticMappingDetails) mapping {
	m := mapping{kind: kindLB, proto: d.Protocol, extIP: netip.AddrFrom4(d.ExternalAddr), extPort: d.ExternalPort,
		twice: d.Flags & (nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT), affinity: d.Affinity}
	for _, l := range d.Locals {
		m.locals = append(m.locals, local{ip: netip.AddrFrom4(l.Addr), port: l.Port, vrf: l.VrfID, prob: l.Probability})
	}
	sortLocals(m.locals)
	return m
}

// identityFromDump rebuilds an identity mapping (one VRF) from its details;
// ok is false when its interface is unknown.
func identityFromDump(d *nat44_ed.Nat44IdentityMappingDetails, names map[uint32]string) (mapping, bool) {
	m := mapping{kind: kindIdentity, proto: d.Protocol, extPort: d.Port, vrf: d.VrfID}
	if sw := uint32(d.SwIfIndex); sw != noIndex {
		name, ok := names[sw]
		if !ok {
			return mapping{}, false
		}
		m.extIf = name
	} else {
		m.extIP = netip.AddrFrom4(d.IPAddress)
	}
	if d.Flags&nat_types.NAT_IS_ADDR_ONLY != 0 {
		m.extPort, m.proto = 0, 0
	}
	return m, true
}

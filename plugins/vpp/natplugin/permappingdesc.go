//go:build natpermapping

package natplugin

// The descriptors of the mappings derived from a DNat44 in the build tag natpermapping
// (see permapping.go): each value is one VPP mapping, added and deleted with one
// request (nat44_add_del_static_mapping_v2, nat44_add_del_lb_static_mapping,
// nat44_add_del_identity_mapping). An LB mapping whose locals change is updated with
// nat44_lb_static_mapping_add_del_local (new locals first, the planner's order), its
// other locals keeping their sessions, as in the default build; any other change is a
// delete and an add, ordered by the scheduler (UpdateWithRecreate).

import (
	"fmt"
	"strings"

	govppapi "go.fd.io/govpp/api"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Names of the descriptors of the mappings derived from a DNat44.
const (
	// StaticMappingDescriptorName names the descriptor of derived static and LB mappings.
	StaticMappingDescriptorName = "vpp-dnat44-static-mapping"
	// IdentityMappingDescriptorName names the descriptor of derived identity mappings.
	IdentityMappingDescriptorName = "vpp-dnat44-identity-mapping"
)

// mappingDescriptor implements the callbacks of the derived mappings over the DNat44
// descriptor's channel, interface resolver and executor (its undo of a failed update).
type mappingDescriptor struct {
	dnat *dnatDescriptor
	// memo shares the parsed locals of consecutive mappings listing the same ones
	// (every mapping of a port of a NodePort Service): [0] for old values, [1] for new.
	memo [2]localsMemo
}

// staticDescriptor returns the descriptor of derived static and LB mappings.
func (m *mappingDescriptor) staticDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.DNat44_StaticMapping, kvapi.Metadata]{
		Name: StaticMappingDescriptorName,
		KeySelector: func(key string) bool {
			_, ok := mappingKeyLabel(key)
			return ok && strings.HasPrefix(key, StaticMappingKeyPrefix)
		},
		ValueComparator: func(_ string, a, b *nat.DNat44_StaticMapping) bool {
			var c staticComparer
			if c.same(a, b) {
				return true
			}
			pa, errA := m.parseStatic(a, 0)
			pb, errB := m.parseStatic(b, 1)
			return errA == nil && errB == nil && pa.equal(&pb)
		},
		Create: func(key string, v *nat.DNat44_StaticMapping) (kvapi.Metadata, error) {
			p, err := m.parseStatic(v, 1)
			if err != nil {
				return nil, err
			}
			return nil, m.addDel(key, &p, true)
		},
		Delete: func(key string, v *nat.DNat44_StaticMapping, _ kvapi.Metadata) error {
			p, err := m.parseStatic(v, 0)
			if err != nil {
				return err
			}
			return m.addDel(key, &p, false)
		},
		UpdateWithRecreate: func(_ string, old, v *nat.DNat44_StaticMapping, _ kvapi.Metadata) bool {
			po, errO := m.parseStatic(old, 0)
			pn, errN := m.parseStatic(v, 1)
			return errO != nil || errN != nil || !(po.equal(&pn) || po.sameButLocals(&pn) && diffLocals(po.locals, pn.locals).diffable)
		},
		Update:             m.updateLocals,
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *nat.DNat44_StaticMapping) []kvapi.Dependency {
			var deps []kvapi.Dependency
			for _, l := range v.GetLocalIps() {
				deps = addVrfDep(deps, l.GetVrfId())
			}
			return addIfaceDep(deps, v.GetExternalInterface())
		},
	})
}

// identityDescriptor returns the descriptor of derived identity mappings: a change is
// a delete and an add (no Update).
func (m *mappingDescriptor) identityDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.DNat44_IdentityMapping, kvapi.Metadata]{
		Name: IdentityMappingDescriptorName,
		KeySelector: func(key string) bool {
			_, ok := mappingKeyLabel(key)
			return ok && strings.HasPrefix(key, IdentityMappingKeyPrefix)
		},
		ValueComparator: func(_ string, a, b *nat.DNat44_IdentityMapping) bool {
			if sameIdentity(a, b) {
				return true
			}
			pa, errA := parseIdentityMapping(a)
			pb, errB := parseIdentityMapping(b)
			return errA == nil && errB == nil && pa.equal(&pb)
		},
		Create: func(key string, v *nat.DNat44_IdentityMapping) (kvapi.Metadata, error) {
			p, err := parseIdentityMapping(v)
			if err != nil {
				return nil, err
			}
			return nil, m.addDel(key, &p, true)
		},
		Delete: func(key string, v *nat.DNat44_IdentityMapping, _ kvapi.Metadata) error {
			p, err := parseIdentityMapping(v)
			if err != nil {
				return err
			}
			return m.addDel(key, &p, false)
		},
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *nat.DNat44_IdentityMapping) []kvapi.Dependency {
			return addIfaceDep(addVrfDep(nil, v.GetVrfId()), v.GetInterface())
		},
	})
}

// parseStatic parses a derived static mapping (checked by the Validate of its DNat44),
// sharing the parsed locals with the mapping parsed before it on the same side (0: old
// values, 1: new values) when they list the same ones.
func (m *mappingDescriptor) parseStatic(sm *nat.DNat44_StaticMapping, side int) (mapping, error) {
	var p problems
	pm, _ := parseStatic(&p, fieldPath{"st_mappings", 0}, sm, &m.memo[side])
	return pm, p.err()
}

// parseIdentityMapping parses a derived identity mapping.
func parseIdentityMapping(im *nat.DNat44_IdentityMapping) (mapping, error) {
	var p problems
	pm, _ := parseIdentity(&p, fieldPath{"id_mappings", 0}, im)
	return pm, p.err()
}

// addDel adds or deletes the mapping of key in VPP, tagged with its DNat44's label
// (Tag); deleting what VPP no longer has is done.
func (m *mappingDescriptor) addDel(key string, p *mapping, isAdd bool) error {
	label, _ := mappingKeyLabel(key)
	r, err := p.request(isAdd, Tag(label), m.dnat.SwIfIndex)
	if err != nil {
		return fmt.Errorf("DNAT44 %s: %w", label, err)
	}
	err = vppbase.Call(m.dnat.Ch, r.req, r.reply)
	if err == nil || (!isAdd && vppbase.IsRetval(err, govppapi.NO_SUCH_ENTRY)) {
		return nil
	}
	return fmt.Errorf("DNAT44 %s: %s: %w", label, r.what(), err)
}

// updateLocals updates an LB mapping whose locals change (UpdateWithRecreate sends the
// other changes to a delete and an add): the planner's requests for the one mapping,
// sent by the DNat44 executor, which undoes those that succeeded when one fails.
func (m *mappingDescriptor) updateLocals(key string, old, v *nat.DNat44_StaticMapping, _ kvapi.Metadata) (kvapi.Metadata, error) {
	label, _ := mappingKeyLabel(key)
	po, err := m.parseStatic(old, 0)
	if err != nil {
		return nil, err
	}
	pn, err := m.parseStatic(v, 1)
	if err != nil {
		return nil, err
	}
	tag := Tag(label)
	steps, err := planMappings(tag, []mapping{po}, []mapping{pn}, m.dnat.SwIfIndex)
	if err == nil {
		err = m.dnat.run(tag, steps)
	}
	if err != nil {
		return nil, fmt.Errorf("update DNAT44 %s mapping %s: %w", label, pn.ext(), err)
	}
	return nil, nil
}

// addVrfDep adds the dependency on VRF table id (IDs other than 0 and ~0), once.
func addVrfDep(deps []kvapi.Dependency, id uint32) []kvapi.Dependency {
	if id == 0 || id == noIndex {
		return deps
	}
	return addDep(deps, DepVrfTableExists, l3.VrfTableKey(id, l3.VrfTable_IPV4))
}

// addIfaceDep adds the dependency on interface name (if any), once.
func addIfaceDep(deps []kvapi.Dependency, name string) []kvapi.Dependency {
	if name == "" {
		return deps
	}
	return addDep(deps, DepInterfaceExists, ifmodel.InterfaceKey(name))
}

func addDep(deps []kvapi.Dependency, label, key string) []kvapi.Dependency {
	for _, d := range deps {
		if d.Key == key {
			return deps
		}
	}
	return append(deps, kvapi.Dependency{Label: label, Key: key})
}

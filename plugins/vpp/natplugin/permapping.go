//go:build natpermapping

package natplugin

// The DNat44 path of the build tag natpermapping: a measurement of the alternative
// design of issue #32 item 3, not the design (docs/ARCHITECTURE.md, "The DNat44
// path"). The DNat44 descriptor derives one value per static mapping and one per
// identity mapping, and does nothing in VPP itself; the KV scheduler diffs the derived
// values of the old and the new DNat44, orders, retries and reverts them; the
// descriptors of the derived values (permappingdesc.go) add and delete one VPP mapping
// each. Validate, the comparator and Retrieve are the DNat44 descriptor's as built:
// Retrieve still reads the mappings back grouped by tag into DNat44 values, and the
// derived values follow from the retrieved value (their descriptors have no Retrieve).
//
// Derived keys (the label last, so that it may contain slashes; an interface name is
// escaped, see escapeKeyPart):
//
//	vpp/nat44/dnat44-mapping/static/<external ip | if:<iface>>/<port>/<proto>/<label>
//	vpp/nat44/dnat44-mapping/identity/<ip | if:<iface>>/<port>/<proto>/<vrf>/<label>
//
// The entries of a valid DNat44 have distinct keys: two entries of one external
// address, port and protocol (and VRF) are duplicates Validate rejects, and the text of
// a valid address is that of one address.

import (
	"strconv"
	"strings"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Prefixes of the keys derived from a DNat44, one per mapping.
const (
	// MappingKeyPrefix starts the key of every mapping derived from a DNat44.
	MappingKeyPrefix = "vpp/nat44/dnat44-mapping/"
	// StaticMappingKeyPrefix starts the key of a static (or load-balancing) mapping.
	StaticMappingKeyPrefix = MappingKeyPrefix + "static/"
	// IdentityMappingKeyPrefix starts the key of an identity mapping.
	IdentityMappingKeyPrefix = MappingKeyPrefix + "identity/"
)

// newDNat44Descriptors builds the descriptors of the DNat44 path of this build: the
// DNat44 descriptor deriving one value per mapping, and the descriptors of those
// values. The plugin keeps the DNat44 descriptor's state (as the default build does).
func (p *Plugin) newDNat44Descriptors(deps DescriptorDeps) []*kvapi.KVDescriptor {
	descs, d := newDNat44PerMapping(deps)
	p.dnat = d
	return descs
}

// newDNat44PerMapping returns the DNat44 descriptor of this build, followed by the
// descriptors of its static and identity mappings, and the DNat44 descriptor's state.
// The DNat44 descriptor is the one of the default build (its key space, Validate,
// comparator, Retrieve), with its VPP callbacks replaced: Create, Update and Delete
// only keep its caches (the parsed mappings, the last valid value), the mappings being
// the derived values' to program.
func newDNat44PerMapping(deps DescriptorDeps) ([]*kvapi.KVDescriptor, *dnatDescriptor) {
	whole, d := newDNat44(deps)
	own := kvapi.Typed(kvapi.TypedDescriptor[*nat.DNat44, kvapi.Metadata]{
		Name: DNAT44DescriptorName,
		Create: func(_ string, v *nat.DNat44) (kvapi.Metadata, error) {
			d.parsed.drop(v) // what Validate parsed: the derived values parse their own mapping
			return nil, nil
		},
		Update: func(_ string, _, v *nat.DNat44, _ kvapi.Metadata) (kvapi.Metadata, error) {
			d.parsed.drop(v)
			return nil, nil
		},
		Delete: func(key string, _ *nat.DNat44, _ kvapi.Metadata) error {
			delete(d.lastValid, key)
			return nil
		},
		DerivedValues: func(_ string, v *nat.DNat44) []kvapi.KeyValuePair { return dnatMappings(v) },
		Dependencies: func(string, *nat.DNat44) []kvapi.Dependency {
			// the plugin must be enabled; VRFs and interfaces are the mappings' own
			return []kvapi.Dependency{{Label: DepNAT44Global, Key: nat.GlobalNAT44Key}}
		},
	})
	parent := *whole
	parent.Create, parent.Update, parent.Delete = own.Create, own.Update, own.Delete
	parent.CreateAsync, parent.UpdateAsync = nil, nil // (the scheduler runs no value with derived values asynchronously)
	parent.DerivedValues, parent.Dependencies = own.DerivedValues, own.Dependencies
	m := &mappingDescriptor{dnat: d}
	return []*kvapi.KVDescriptor{&parent, m.staticDescriptor(), m.identityDescriptor()}, d
}

// dnatMappings derives the values of the mappings of v: one per static mapping and one
// per identity mapping, the entry itself as the value.
func dnatMappings(v *nat.DNat44) []kvapi.KeyValuePair {
	sts, ids := v.GetStMappings(), v.GetIdMappings()
	if len(sts)+len(ids) == 0 {
		return nil
	}
	out := make([]kvapi.KeyValuePair, 0, len(sts)+len(ids))
	for _, sm := range sts {
		out = append(out, kvapi.KeyValuePair{Key: StaticMappingKey(v.GetLabel(), sm), Value: sm})
	}
	for _, im := range ids {
		out = append(out, kvapi.KeyValuePair{Key: IdentityMappingKey(v.GetLabel(), im), Value: im})
	}
	return out
}

// StaticMappingKey returns the key of static mapping sm of the DNat44 of label.
func StaticMappingKey(label string, sm *nat.DNat44_StaticMapping) string {
	ext := escapeKeyPart(sm.GetExternalIp())
	if sm.GetExternalInterface() != "" {
		ext = "if:" + escapeKeyPart(sm.GetExternalInterface())
	}
	return StaticMappingKeyPrefix + ext + "/" + strconv.FormatUint(uint64(sm.GetExternalPort()), 10) + "/" +
		modelProtoName(sm.GetProtocol()) + "/" + label
}

// IdentityMappingKey returns the key of identity mapping im of the DNat44 of label.
func IdentityMappingKey(label string, im *nat.DNat44_IdentityMapping) string {
	ext := escapeKeyPart(im.GetIpAddress())
	if im.GetInterface() != "" {
		ext = "if:" + escapeKeyPart(im.GetInterface())
	}
	return IdentityMappingKeyPrefix + ext + "/" + strconv.FormatUint(uint64(im.GetPort()), 10) + "/" +
		modelProtoName(im.GetProtocol()) + "/" + strconv.FormatUint(uint64(im.GetVrfId()), 10) + "/" + label
}

// mappingKeyLabel returns the label of the DNat44 a mapping key was derived from: what
// follows the key's fixed parts (3 of a static mapping, 4 of an identity mapping).
func mappingKeyLabel(key string) (string, bool) {
	rest, parts := key, 0
	switch {
	case strings.HasPrefix(key, StaticMappingKeyPrefix):
		rest, parts = key[len(StaticMappingKeyPrefix):], 3
	case strings.HasPrefix(key, IdentityMappingKeyPrefix):
		rest, parts = key[len(IdentityMappingKeyPrefix):], 4
	default:
		return "", false
	}
	for range parts {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return "", false
		}
		rest = rest[i+1:]
	}
	return rest, rest != ""
}

// modelProtoName names a protocol of the model in keys (as protoName names VPP's).
func modelProtoName(p nat.DNat44_Protocol) string {
	if n, ok := protoNumber(p); ok {
		return protoName(n)
	}
	return strconv.Itoa(int(p))
}

// escapeKeyPart escapes "%" and "/" (interface names such as GigabitEthernet0/8/0 hold
// slashes), so that a key part never holds the separator.
func escapeKeyPart(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(s)
}

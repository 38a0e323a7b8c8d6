package cnatplugin

import (
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Names of the SNAT descriptors.
const (
	// SnatAddressesDescriptorName names the descriptor of the SNAT addresses.
	SnatAddressesDescriptorName = "vpp-cnat-snat-addresses"
	// SnatPolicyDescriptorName names the descriptor of the SNAT policy.
	SnatPolicyDescriptorName = "vpp-cnat-snat-policy"
	// SnatExcludePrefixDescriptorName names the descriptor of excluded prefixes.
	SnatExcludePrefixDescriptorName = "vpp-cnat-snat-exclude-prefix"
	// SnatPolicyInterfaceDescriptorName names the descriptor of SNAT policy interfaces.
	SnatPolicyInterfaceDescriptorName = "vpp-cnat-snat-policy-interface"
)

// SnatAddressPrefix starts the derived keys (properties, no descriptor) that say a
// SNAT address of a family is configured: vpp/cnat/snat-address/<IPV4|IPV6>.
const SnatAddressPrefix = "vpp/cnat/snat-address/"

// DepSnatAddress waits for a SNAT address of the family a value needs.
const DepSnatAddress = "cnat-snat-address-exists"

// SnatAddressKey is the derived key of a configured SNAT address of family.
func SnatAddressKey(family cnatmodel.AddressFamily) string {
	return SnatAddressPrefix + family.String()
}

type snatDescriptor struct {
	vppbase.Descriptor
}

// interfaceDep is the dependency of a value on the interface name (none for "").
func interfaceDep(name string) []kvapi.Dependency {
	if name == "" {
		return nil
	}
	return []kvapi.Dependency{{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(name)}}
}

// NewSnatAddressesDescriptor returns the descriptor of the SNAT addresses (one value).
func NewSnatAddressesDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &snatDescriptor{Descriptor: vppbase.NewDescriptor(deps, SnatAddressesDescriptorName)}
	set := func(_ string, v *cnatmodel.SnatAddresses) (kvapi.Metadata, error) {
		return nil, d.setAddresses(v, "set")
	}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.SnatAddresses, kvapi.Metadata]{
		Name:        SnatAddressesDescriptorName,
		NBKeyPrefix: cnatmodel.SnatAddressesKey,
		KeySelector: func(key string) bool { return key == cnatmodel.SnatAddressesKey },
		ValueComparator: func(_ string, a, b *cnatmodel.SnatAddresses) bool {
			return canonicalAddresses(a) == canonicalAddresses(b)
		},
		Validate: func(_ string, v *cnatmodel.SnatAddresses) error { return invalid(cnatmodel.ValidateSnatAddresses(v)) },
		Create:   set,
		Update: func(key string, _, v *cnatmodel.SnatAddresses, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return set(key, v)
		},
		Delete: func(_ string, _ *cnatmodel.SnatAddresses, _ kvapi.Metadata) error {
			return d.setAddresses(&cnatmodel.SnatAddresses{}, "clear")
		},
		Retrieve:           d.retrieveAddresses,
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *cnatmodel.SnatAddresses) []kvapi.Dependency {
			return interfaceDep(v.GetInterface())
		},
		DerivedValues:        snatAddressFamilies,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// snatAddressFamilies derives one property per family the addresses give (an
// interface may give both).
func snatAddressFamilies(_ string, v *cnatmodel.SnatAddresses) []kvapi.KeyValuePair {
	var out []kvapi.KeyValuePair
	if v.GetIp4() != "" || v.GetInterface() != "" {
		out = append(out, kvapi.KeyValuePair{Key: SnatAddressKey(cnatmodel.AddressFamily_IPV4), Value: v})
	}
	if v.GetIp6() != "" || v.GetInterface() != "" {
		out = append(out, kvapi.KeyValuePair{Key: SnatAddressKey(cnatmodel.AddressFamily_IPV6), Value: v})
	}
	return out
}

// canonicalAddresses writes the addresses in canonical form, for comparisons.
func canonicalAddresses(v *cnatmodel.SnatAddresses) string {
	ip4, ip6 := v.GetIp4(), v.GetIp6()
	if a, ok := cnatmodel.ParseAddr(ip4); ok {
		ip4 = a.String()
	}
	if a, ok := cnatmodel.ParseAddr(ip6); ok {
		ip6 = a.String()
	}
	return ip4 + "|" + ip6 + "|" + v.GetInterface()
}

// setAddresses sends cnat_set_snat_addresses. An empty family is sent as the zero
// address. VPP has no way back to "no address": it takes a literal address (zero
// included) as resolved (cnat_types.c, cnat_resolve_ep), so after a clear a
// cnat-snat feature would translate sources to 0.0.0.0 or ::. That is why a
// SnatFeature depends on the SnatAddressKey property of its family: the scheduler
// removes the features before it clears the addresses, and enables a family's
// feature only once that family has an address.
func (d *snatDescriptor) setAddresses(v *cnatmodel.SnatAddresses, op string) error {
	what := fmt.Sprintf("%s cnat SNAT addresses (ip4 %q, ip6 %q, interface %q)", op, v.GetIp4(), v.GetIp6(), v.GetInterface())
	req := &cnat.CnatSetSnatAddresses{SwIfIndex: interface_types.InterfaceIndex(noInterface)}
	if a, ok := cnatmodel.ParseAddr(v.GetIp4()); ok && a.Is4() {
		req.SnatIP4 = a.As4()
	}
	if a, ok := cnatmodel.ParseAddr(v.GetIp6()); ok && a.Is6() {
		req.SnatIP6 = a.As16()
	}
	if v.GetInterface() != "" {
		sw, err := d.SwIfIndex(v.GetInterface(), what)
		if err != nil {
			return err
		}
		req.SwIfIndex = interface_types.InterfaceIndex(sw)
	}
	if err := vppbase.Call(d.Ch, req, &cnat.CnatSetSnatAddressesReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.Debugf("%s done", what)
	return nil
}

// retrieveAddresses reads the SNAT addresses back; addresses VPP has not been
// given (see snatState) are no value.
func (d *snatDescriptor) retrieveAddresses(_ []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	v, err := d.snatState()
	if err != nil || v == nil {
		return nil, err
	}
	return []kvapi.KVWithMetadata{{Key: cnatmodel.SnatAddressesKey, Value: v, Origin: kvapi.FromNB}}, nil
}

// snatState reads VPP's SNAT addresses: nil when VPP has none, which is its state
// after a start and after Delete: zero addresses with sw_if_index ~0 (Delete), 0
// (VPP's start: cnat keeps the SNAT endpoints in a zeroed global that nothing
// initialises, cnat_snat_policy.c; sw_if_index 0 is local0, which never has an
// address) or an index the agent does not know.
func (d *snatDescriptor) snatState() (*cnatmodel.SnatAddresses, error) {
	reply := &cnat.CnatGetSnatAddressesReply{}
	if err := vppbase.Call(d.Ch, &cnat.CnatGetSnatAddresses{}, reply); err != nil {
		return nil, fmt.Errorf("retrieve cnat SNAT addresses: %w", err)
	}
	v := &cnatmodel.SnatAddresses{}
	if a := netip.AddrFrom4(reply.SnatIP4); !a.IsUnspecified() {
		v.Ip4 = a.String()
	}
	if a := netip.AddrFrom16(reply.SnatIP6); !a.IsUnspecified() {
		v.Ip6 = a.String()
	}
	zero := v.Ip4 == "" && v.Ip6 == ""
	if sw := uint32(reply.SwIfIndex); sw != noInterface {
		// With an interface VPP reports the addresses it took from it: not NB's.
		v.Ip4, v.Ip6 = "", ""
		name, ok := d.IfaceNames()[sw]
		switch {
		case zero && sw == 0:
			return nil, nil
		case ok:
			v.Interface = name
		case zero:
			return nil, nil
		default:
			v.Interface = fmt.Sprintf("sw_if_index=%d", sw)
		}
	}
	if v.Interface == "" && zero {
		return nil, nil
	}
	return v, nil
}

// retrieveUnreadable stands in for the Retrieve of values VPP cannot read back
// (the SNAT policy, excluded prefixes, policy interfaces): it reports the values NB
// wants as present unless VPP has no SNAT addresses, which is what a VPP that
// restarted empty shows (a renderer that uses SNAT sets them first, and the
// feature depends on them); then it reports none, and the resync sets them again.
// Without it the scheduler would trust its record and leave a restarted VPP
// without them. The price: with no SNAT addresses in NB, every full resync sends
// them again (each request is idempotent in VPP: set policy, add prefix and add
// interface replace or re-add). A value VPP has and NB no longer wants is not seen.
func (d *snatDescriptor) retrieveUnreadable(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	v, err := d.snatState()
	if err != nil || v == nil {
		return nil, err
	}
	idx := ifaceidx.New(d.Ifaces())
	out := make([]kvapi.KVWithMetadata, 0, len(correlate))
	for _, kv := range correlate {
		if pi, ok := kv.Value.(*cnatmodel.SnatPolicyInterface); ok {
			if _, known := idx.LookupByName(pi.GetInterface()); !known {
				continue // its interface is not in VPP, so neither is it
			}
		}
		out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: kv.Value, Metadata: kv.Metadata, Origin: kvapi.FromNB})
	}
	return out, nil
}

// NewSnatPolicyDescriptor returns the descriptor of the SNAT policy (one value).
// VPP has no message that reads the policy back: see retrieveUnreadable.
func NewSnatPolicyDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &snatDescriptor{Descriptor: vppbase.NewDescriptor(deps, SnatPolicyDescriptorName)}
	set := func(_ string, v *cnatmodel.SnatPolicy) (kvapi.Metadata, error) {
		return nil, d.setPolicy(v.GetPolicy())
	}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.SnatPolicy, kvapi.Metadata]{
		Name:        SnatPolicyDescriptorName,
		NBKeyPrefix: cnatmodel.SnatPolicyKey,
		KeySelector: func(key string) bool { return key == cnatmodel.SnatPolicyKey },
		Validate:    func(_ string, v *cnatmodel.SnatPolicy) error { return invalid(cnatmodel.ValidateSnatPolicy(v)) },
		Create:      set,
		Update: func(key string, _, v *cnatmodel.SnatPolicy, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return set(key, v)
		},
		// Delete restores VPP's default policy, NONE (cnat_snat_policy.c).
		Delete: func(_ string, _ *cnatmodel.SnatPolicy, _ kvapi.Metadata) error {
			return d.setPolicy(cnatmodel.SnatPolicy_NONE)
		},
		Retrieve:           d.retrieveUnreadable,
		IsRetriableFailure: vppbase.IsRetriable,
	})
}

func (d *snatDescriptor) setPolicy(p cnatmodel.SnatPolicy_Policy) error {
	if err := vppbase.Call(d.Ch, &cnat.CnatSetSnatPolicy{Policy: cnat.CnatSnatPolicies(p)}, &cnat.CnatSetSnatPolicyReply{}); err != nil {
		return fmt.Errorf("set cnat SNAT policy %s: %w", p, err)
	}
	d.Log.Debugf("cnat SNAT policy %s set", p)
	return nil
}

// NewSnatExcludePrefixDescriptor returns the descriptor of excluded prefixes (VPP
// has no dump of them: see retrieveUnreadable).
func NewSnatExcludePrefixDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &snatDescriptor{Descriptor: vppbase.NewDescriptor(deps, SnatExcludePrefixDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.SnatExcludePrefix, kvapi.Metadata]{
		Name:        SnatExcludePrefixDescriptorName,
		NBKeyPrefix: cnatmodel.SnatExcludePrefixPrefix,
		KeySelector: func(key string) bool { _, ok := cnatmodel.ParseSnatExcludePrefixKey(key); return ok },
		ValueComparator: func(_ string, a, b *cnatmodel.SnatExcludePrefix) bool {
			return cnatmodel.SnatExcludePrefixKey(a.GetPrefix()) == cnatmodel.SnatExcludePrefixKey(b.GetPrefix())
		},
		Validate: func(key string, v *cnatmodel.SnatExcludePrefix) error {
			if err := cnatmodel.ValidateSnatExcludePrefix(v); err != nil {
				return invalid(err)
			}
			if want := cnatmodel.SnatExcludePrefixKey(v.GetPrefix()); key != "" && key != want {
				return keyMismatch("cnat SNAT excluded prefix", key, want, "prefix")
			}
			return nil
		},
		Create: func(_ string, v *cnatmodel.SnatExcludePrefix) (kvapi.Metadata, error) {
			return nil, d.addDelPrefix(v, true)
		},
		Delete: func(_ string, v *cnatmodel.SnatExcludePrefix, _ kvapi.Metadata) error {
			return d.addDelPrefix(v, false)
		},
		Retrieve:           d.retrieveUnreadable,
		IsRetriableFailure: vppbase.IsRetriable,
	})
}

func (d *snatDescriptor) addDelPrefix(v *cnatmodel.SnatExcludePrefix, isAdd bool) error {
	what := opName(isAdd) + " cnat SNAT excluded prefix " + v.GetPrefix()
	pfx, ok := cnatmodel.ParsePrefix(v.GetPrefix())
	if !ok {
		return fmt.Errorf("%s: %w", what, invalid(cnatmodel.ValidateSnatExcludePrefix(v)))
	}
	req := &cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: boolU8(isAdd), Prefix: vppbase.PrefixToAPI(pfx)}
	if err := vppbase.Call(d.Ch, req, &cnat.CnatSnatPolicyAddDelExcludePfxReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.Debugf("%s done", what)
	return nil
}

// NewSnatPolicyInterfaceDescriptor returns the descriptor of SNAT policy interfaces
// (VPP has no dump of the policy's interface maps: see retrieveUnreadable).
func NewSnatPolicyInterfaceDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &snatDescriptor{Descriptor: vppbase.NewDescriptor(deps, SnatPolicyInterfaceDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.SnatPolicyInterface, kvapi.Metadata]{
		Name:        SnatPolicyInterfaceDescriptorName,
		NBKeyPrefix: cnatmodel.SnatPolicyInterfacePrefix,
		KeySelector: func(key string) bool { _, _, ok := cnatmodel.ParseSnatPolicyInterfaceKey(key); return ok },
		Validate: func(key string, v *cnatmodel.SnatPolicyInterface) error {
			if err := cnatmodel.ValidateSnatPolicyInterface(v); err != nil {
				return invalid(err)
			}
			if want, _ := cnatmodel.ModelKey(v); key != "" && key != want {
				return keyMismatch("cnat SNAT policy interface", key, want, "interface", "table")
			}
			return nil
		},
		Create: func(_ string, v *cnatmodel.SnatPolicyInterface) (kvapi.Metadata, error) {
			return nil, d.addDelInterface(v, true)
		},
		Delete: func(_ string, v *cnatmodel.SnatPolicyInterface, _ kvapi.Metadata) error {
			return d.addDelInterface(v, false)
		},
		Retrieve:             d.retrieveUnreadable,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies: func(_ string, v *cnatmodel.SnatPolicyInterface) []kvapi.Dependency {
			return interfaceDep(v.GetInterface())
		},
	})
}

func (d *snatDescriptor) addDelInterface(v *cnatmodel.SnatPolicyInterface, isAdd bool) error {
	what := fmt.Sprintf("%s interface %s in cnat SNAT policy table %s", opName(isAdd), v.GetInterface(), v.GetTable())
	sw, err := d.SwIfIndex(v.GetInterface(), what)
	if err != nil {
		return err
	}
	req := &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: boolU8(isAdd), Table: cnat.CnatSnatPolicyTable(v.GetTable())}
	if err := vppbase.Call(d.Ch, req, &cnat.CnatSnatPolicyAddDelIfReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.Debugf("%s done", what)
	return nil
}

func opName(isAdd bool) string {
	if isAdd {
		return "add"
	}
	return "delete"
}

func boolU8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

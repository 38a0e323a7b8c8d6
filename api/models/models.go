package models

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
	linux_interfaces "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linux_l3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	vpp_interfaces "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vpp_l2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vpp_l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	vpp_stn "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
)

// ErrUnknownModel is wrapped by the errors ModelKey (and the ModelKey of
// every model package) returns for a message type that is not a model.
var ErrUnknownModel = keyutil.ErrUnknownModel

// ErrInvalidValue is wrapped by the errors ModelKey (and the ModelKey of
// every model package) returns for a value of a model type that cannot be
// given a key, such as an interface with an empty name or a DNAT44 with an
// empty label.
var ErrInvalidValue = keyutil.ErrInvalidValue

// Model describes one northbound model: a message type and where its values
// are stored.
type Model struct {
	// Name is the full protobuf name of the message type, e.g.
	// "contiv.vpp.interfaces.Interface".
	Name protoreflect.FullName
	// KeyPrefix is the prefix of the keys of all values of the model; for a
	// singleton model it is the one key.
	KeyPrefix string
	// Singleton tells whether the model has a single value, stored under
	// KeyPrefix itself (Nat44Global, IPScanNeighbor, ProxyARP).
	Singleton bool
	// Config tells whether values of the model are configuration (keys under
	// "config/"); DHCPLease is state notified by the agent.
	Config bool

	prototype proto.Message
	key       func(proto.Message) (string, error)
	isKey     func(string) bool
}

// New returns a new empty value of the model's message type.
func (m Model) New() proto.Message {
	return m.prototype.ProtoReflect().New().Interface()
}

// Key returns the key of v, a value of the model; it fails like ModelKey,
// and with ErrUnknownModel for a value of another type.
func (m Model) Key(v proto.Message) (string, error) {
	if v == nil || v.ProtoReflect().Descriptor().FullName() != m.Name {
		return "", keyutil.UnknownModel("models: model "+string(m.Name), v)
	}
	return m.key(v)
}

// registry lists every model; the order is that of the package list in the
// package documentation.
var registry = []Model{
	{
		KeyPrefix: vpp_interfaces.InterfacePrefix, Config: true,
		prototype: (*vpp_interfaces.Interface)(nil), key: vpp_interfaces.ModelKey,
		isKey: parsed1(vpp_interfaces.ParseNameFromKey),
	},
	{
		KeyPrefix: vpp_interfaces.DHCPLeasePrefix,
		prototype: (*vpp_interfaces.DHCPLease)(nil), key: vpp_interfaces.ModelKey,
		isKey: parsed1(vpp_interfaces.ParseNameFromDHCPLeaseKey),
	},
	{
		KeyPrefix: vpp_l2.BridgeDomainPrefix, Config: true,
		prototype: (*vpp_l2.BridgeDomain)(nil), key: vpp_l2.ModelKey,
		isKey: parsed1(vpp_l2.ParseBDNameFromKey),
	},
	{
		KeyPrefix: vpp_l2.FIBPrefix, Config: true,
		prototype: (*vpp_l2.FIBEntry)(nil), key: vpp_l2.ModelKey,
		isKey: parsed2(vpp_l2.ParseFIBKey),
	},
	{
		KeyPrefix: vpp_l3.RoutePrefix, Config: true,
		prototype: (*vpp_l3.Route)(nil), key: vpp_l3.ModelKey,
		isKey: func(k string) bool { _, _, _, ok := vpp_l3.ParseRouteKey(k); return ok },
	},
	{
		KeyPrefix: vpp_l3.ARPPrefix, Config: true,
		prototype: (*vpp_l3.ARPEntry)(nil), key: vpp_l3.ModelKey,
		isKey: parsed2(vpp_l3.ParseARPEntryKey),
	},
	{
		KeyPrefix: vpp_l3.ProxyNDPrefix, Config: true,
		prototype: (*vpp_l3.ProxyNDEntry)(nil), key: vpp_l3.ModelKey,
		isKey: parsed2(vpp_l3.ParseProxyNDEntryKey),
	},
	{
		KeyPrefix: vpp_l3.VrfTablePrefix, Config: true,
		prototype: (*vpp_l3.VrfTable)(nil), key: vpp_l3.ModelKey,
		isKey: func(k string) bool { _, _, ok := vpp_l3.ParseVrfTableKey(k); return ok },
	},
	{
		KeyPrefix: vpp_l3.IPScanNeighborKey, Singleton: true, Config: true,
		prototype: (*vpp_l3.IPScanNeighbor)(nil), key: vpp_l3.ModelKey,
	},
	{
		KeyPrefix: vpp_l3.ProxyARPKey, Singleton: true, Config: true,
		prototype: (*vpp_l3.ProxyARP)(nil), key: vpp_l3.ModelKey,
	},
	{
		KeyPrefix: vpp_stn.RulePrefix, Config: true,
		prototype: (*vpp_stn.Rule)(nil), key: vpp_stn.ModelKey,
		isKey: parsed2(vpp_stn.ParseRuleKey),
	},
	{
		KeyPrefix: vpp_stn.HostLinkPrefix, Config: true,
		prototype: (*vpp_stn.HostLink)(nil), key: vpp_stn.ModelKey,
		isKey: parsed1(vpp_stn.ParseHostLinkKey),
	},
	{
		KeyPrefix: vpp_nat.GlobalNAT44Key, Singleton: true, Config: true,
		prototype: (*vpp_nat.Nat44Global)(nil), key: vpp_nat.ModelKey,
	},
	{
		KeyPrefix: vpp_nat.DNAT44Prefix, Config: true,
		prototype: (*vpp_nat.DNat44)(nil), key: vpp_nat.ModelKey,
		isKey: parsed1(vpp_nat.ParseDNAT44Key),
	},
	{
		KeyPrefix: vpp_cnat.TranslationSetPrefix, Config: true,
		prototype: (*vpp_cnat.TranslationSet)(nil), key: vpp_cnat.ModelKey,
		isKey: parsed1(vpp_cnat.ParseTranslationSetKey),
	},
	{
		KeyPrefix: vpp_cnat.SnatAddressesKey, Singleton: true, Config: true,
		prototype: (*vpp_cnat.SnatAddresses)(nil), key: vpp_cnat.ModelKey,
	},
	{
		KeyPrefix: vpp_cnat.SnatPolicyKey, Singleton: true, Config: true,
		prototype: (*vpp_cnat.SnatPolicy)(nil), key: vpp_cnat.ModelKey,
	},
	{
		KeyPrefix: vpp_cnat.SnatExcludePrefixPrefix, Config: true,
		prototype: (*vpp_cnat.SnatExcludePrefix)(nil), key: vpp_cnat.ModelKey,
		isKey: parsed1(vpp_cnat.ParseSnatExcludePrefixKey),
	},
	{
		KeyPrefix: vpp_cnat.SnatPolicyInterfacePrefix, Config: true,
		prototype: (*vpp_cnat.SnatPolicyInterface)(nil), key: vpp_cnat.ModelKey,
		isKey: func(k string) bool { _, _, ok := vpp_cnat.ParseSnatPolicyInterfaceKey(k); return ok },
	},
	{
		KeyPrefix: vpp_cnat.SnatFeaturePrefix, Config: true,
		prototype: (*vpp_cnat.SnatFeature)(nil), key: vpp_cnat.ModelKey,
		isKey: func(k string) bool { _, _, _, ok := vpp_cnat.ParseSnatFeatureKey(k); return ok },
	},
	{
		KeyPrefix: vpp_acl.ACLPrefix, Config: true,
		prototype: (*vpp_acl.ACL)(nil), key: vpp_acl.ModelKey,
		isKey: parsed1(vpp_acl.ParseACLKey),
	},
	{
		KeyPrefix: vpp_acl.InterfacePrefix, Config: true,
		prototype: (*vpp_acl.InterfaceACLs)(nil), key: vpp_acl.ModelKey,
		isKey: parsed1(vpp_acl.ParseInterfaceKey),
	},
	{
		KeyPrefix: linux_interfaces.InterfacePrefix, Config: true,
		prototype: (*linux_interfaces.Interface)(nil), key: linux_interfaces.ModelKey,
		isKey: parsed1(linux_interfaces.ParseNameFromKey),
	},
	{
		KeyPrefix: linux_l3.RoutePrefix, Config: true,
		prototype: (*linux_l3.Route)(nil), key: linux_l3.ModelKey,
		isKey: parsed2(linux_l3.ParseRouteKey),
	},
	{
		KeyPrefix: linux_l3.ARPPrefix, Config: true,
		prototype: (*linux_l3.ARPEntry)(nil), key: linux_l3.ModelKey,
		isKey: parsed2(linux_l3.ParseARPEntryKey),
	},
}

// byName indexes registry by message name.
var byName = make(map[protoreflect.FullName]int, len(registry))

// init fills in the names of the registry entries from their prototypes and
// indexes them.
func init() {
	for i := range registry {
		registry[i].Name = registry[i].prototype.ProtoReflect().Descriptor().FullName()
		byName[registry[i].Name] = i
	}
}

// parsed1 adapts a one-result key parser to a key predicate.
func parsed1(parse func(string) (string, bool)) func(string) bool {
	return func(k string) bool { _, ok := parse(k); return ok }
}

// parsed2 adapts a two-result key parser to a key predicate.
func parsed2(parse func(string) (string, string, bool)) func(string) bool {
	return func(k string) bool { _, _, ok := parse(k); return ok }
}

// Models returns every registered model, in a fixed order.
func Models() []Model {
	return append([]Model(nil), registry...)
}

// ModelKey returns the key of msg, a value of any model of the
// sub-packages, by its type. The error wraps ErrUnknownModel for a message
// that is not a model (naming its type) and ErrInvalidValue for a value
// that cannot be given a key (an empty name or label, a route destination
// that is not a network, ...).
func ModelKey(msg proto.Message) (string, error) {
	if msg == nil {
		return "", keyutil.UnknownModel("models", msg)
	}
	i, ok := byName[msg.ProtoReflect().Descriptor().FullName()]
	if !ok {
		return "", keyutil.UnknownModel("models", msg)
	}
	return registry[i].key(msg)
}

// ModelForKey returns the model whose values are stored under key: key is
// the key of a singleton model or a well-formed key of another model (as
// its package's parser accepts it). Derived keys belong to no model.
func ModelForKey(key string) (Model, bool) {
	for _, m := range registry {
		if m.Singleton {
			if key == m.KeyPrefix {
				return m, true
			}
			continue
		}
		if strings.HasPrefix(key, m.KeyPrefix) && m.isKey(key) {
			return m, true
		}
	}
	return Model{}, false
}

// UnmarshalConfig decodes the protobuf-JSON value of a configuration key (as written
// under /vnf-agent/<node>/ by external tools) into its model. It returns (nil, nil) for
// keys that are not configuration of a known model, so callers can skip them.
func UnmarshalConfig(key string, data []byte) (proto.Message, error) {
	m, ok := ModelForKey(key)
	if !ok || !m.Config {
		return nil, nil
	}
	v := m.New()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("%s: decode %s: %w", key, m.Name, err)
	}
	return v, nil
}

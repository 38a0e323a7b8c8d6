// Package vpp_cnat is the northbound model of VPP's cnat plugin (cnat.proto): the
// translations of virtual endpoints to backends, the source NAT addresses, policy,
// excluded prefixes and policy interfaces, and the cnat-snat feature on interfaces;
// and the keys the KV scheduler stores them under.
//
// Configuration keys:
//
//	config/vpp/cnat/v2/translation-set/<label>                          TranslationSet (label may contain slashes)
//	config/vpp/cnat/v2/snat-addresses                                   SnatAddresses (a single value)
//	config/vpp/cnat/v2/snat-policy                                      SnatPolicy (a single value)
//	config/vpp/cnat/v2/snat-exclude/<prefix>                            SnatExcludePrefix
//	config/vpp/cnat/v2/snat-interface/<interface>/table/<TABLE>         SnatPolicyInterface
//	config/vpp/cnat/v2/feature/<interface>/<NODE>/family/<IPV4|IPV6>    SnatFeature
//
// Translations are configured in labelled sets (one per Service), not one value each:
// the scheduler then keeps one value per Service, as it keeps one DNat44. Within a
// set a translation is known by its ID, VPP's own identity of a translation: (VIP
// address, VIP port, protocol), written "<vip>/<port>/<protocol>" (TranslationID). A
// change of anything else (paths, flags, load balancing) changes the translation of
// the same ID. VPP changes paths and flags in place; the descriptor re-creates the
// translation for what VPP keeps from the creation (lb_type, flow_hash_config,
// is_real_ip). The ids VPP allocates are the descriptor's metadata, not part of the
// value.
//
// Addresses and prefixes are written in canonical form (netip's String; a prefix
// masked), so two spellings never make two keys. <TABLE> is INCLUDE_V4, INCLUDE_V6,
// POD or HOST; <NODE> is SNAT, INPUT or OUTPUT. Interface names may contain slashes
// but not "/table/" or "/family/".
package vpp_cnat

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// TranslationSetPrefix is the key prefix of translation sets.
	TranslationSetPrefix = "config/vpp/cnat/v2/translation-set/"
	// SnatAddressesKey is the key of the single SnatAddresses value.
	SnatAddressesKey = "config/vpp/cnat/v2/snat-addresses"
	// SnatPolicyKey is the key of the single SnatPolicy value.
	SnatPolicyKey = "config/vpp/cnat/v2/snat-policy"
	// SnatExcludePrefixPrefix is the key prefix of excluded prefixes.
	SnatExcludePrefixPrefix = "config/vpp/cnat/v2/snat-exclude/"
	// SnatPolicyInterfacePrefix is the key prefix of SNAT policy interfaces.
	SnatPolicyInterfacePrefix = "config/vpp/cnat/v2/snat-interface/"
	// SnatFeaturePrefix is the key prefix of the cnat features (cnat-snat,
	// cnat-input, cnat-output) on interfaces.
	SnatFeaturePrefix = "config/vpp/cnat/v2/feature/"

	pkgName   = "vpp_cnat"
	tableSep  = "/table/"
	familySep = "/family/"
)

// TranslationSetKey returns the key of the translation set labelled label:
// config/vpp/cnat/v2/translation-set/<label>.
func TranslationSetKey(label string) string { return TranslationSetPrefix + label }

// ParseTranslationSetKey returns the label of a key built by TranslationSetKey; ok is
// false for any other key and for a label ValidateLabel refuses.
func ParseTranslationSetKey(key string) (label string, ok bool) {
	label, ok = keyutil.Rest(key, TranslationSetPrefix)
	if !ok || ValidateLabel(label) != nil {
		return "", false
	}
	return label, true
}

// TranslationID returns the identity of the translation of (vip, port, protocol)
// within a set: "<vip>/<port>/<protocol>", vip in canonical form when it parses.
func TranslationID(vip string, port uint32, protocol Protocol) string {
	vip, _ = keyutil.IP(vip)
	return vip + "/" + strconv.FormatUint(uint64(port), 10) + "/" + protocol.String()
}

// TranslationIDOf returns the identity of a translation (TranslationID of its VIP
// and protocol).
func TranslationIDOf(t *Translation) string {
	return TranslationID(t.GetVipAddress(), t.GetVipPort(), t.GetProtocol())
}

// ParseTranslationID splits an identity built by TranslationID; ok is false for
// anything else, and for a VIP that is not an IP address, a port above 65535 or an
// unknown protocol.
func ParseTranslationID(id string) (vip string, port uint32, protocol Protocol, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	if _, ok := keyutil.IP(parts[0]); !ok {
		return "", 0, 0, false
	}
	port, ok = keyutil.Uint32(parts[1])
	if !ok || port > maxPort {
		return "", 0, 0, false
	}
	p, known := Protocol_value[parts[2]]
	if !known {
		return "", 0, 0, false
	}
	return parts[0], port, Protocol(p), true
}

// SnatExcludePrefixKey returns the key of an excluded prefix:
// config/vpp/cnat/v2/snat-exclude/<prefix>, the prefix masked when it parses
// ("10.1.2.3/16" -> "10.1.0.0/16").
func SnatExcludePrefixKey(prefix string) string {
	prefix, _ = keyutil.Network(prefix)
	return SnatExcludePrefixPrefix + prefix
}

// ParseSnatExcludePrefixKey returns the prefix of a key built by
// SnatExcludePrefixKey; ok is false for any other key and for a prefix that is not
// in canonical form.
func ParseSnatExcludePrefixKey(key string) (prefix string, ok bool) {
	prefix, ok = keyutil.Rest(key, SnatExcludePrefixPrefix)
	if !ok {
		return "", false
	}
	if c, valid := keyutil.Network(prefix); !valid || c != prefix {
		return "", false
	}
	return prefix, true
}

// SnatPolicyInterfaceKey returns the key of iface in a SNAT policy table:
// config/vpp/cnat/v2/snat-interface/<iface>/table/<table>.
func SnatPolicyInterfaceKey(iface string, table SnatPolicyInterface_Table) string {
	return SnatPolicyInterfacePrefix + iface + tableSep + table.String()
}

// ParseSnatPolicyInterfaceKey splits a key built by SnatPolicyInterfaceKey; ok is
// false for any other key.
func ParseSnatPolicyInterfaceKey(key string) (iface string, table SnatPolicyInterface_Table, ok bool) {
	iface, t, ok := parseInterfaceEnumKey(key, SnatPolicyInterfacePrefix, tableSep, SnatPolicyInterface_Table_value)
	return iface, SnatPolicyInterface_Table(t), ok
}

// parseInterfaceEnumKey splits <prefix><iface><sep><enum name>; ok is false when
// key is not of that form or the name is not in names.
func parseInterfaceEnumKey(key, prefix, sep string, names map[string]int32) (iface string, value int32, ok bool) {
	rest, ok := keyutil.Rest(key, prefix)
	if !ok {
		return "", 0, false
	}
	iface, name, ok := keyutil.SplitLast(rest, sep)
	if !ok {
		return "", 0, false
	}
	value, known := names[name]
	if !known {
		return "", 0, false
	}
	return iface, value, true
}

// SnatFeatureKey returns the key of the cnat feature node of family on iface:
// config/vpp/cnat/v2/feature/<iface>/<node>/family/<family>.
func SnatFeatureKey(iface string, node SnatFeature_Node, family AddressFamily) string {
	return SnatFeaturePrefix + iface + "/" + node.String() + familySep + family.String()
}

// ParseSnatFeatureKey splits a key built by SnatFeatureKey; ok is false for any
// other key.
func ParseSnatFeatureKey(key string) (iface string, node SnatFeature_Node, family AddressFamily, ok bool) {
	ifNode, f, ok := parseInterfaceEnumKey(key, SnatFeaturePrefix, familySep, AddressFamily_value)
	if !ok {
		return "", 0, 0, false
	}
	iface, name, ok := keyutil.SplitLast(ifNode, "/")
	if !ok {
		return "", 0, 0, false
	}
	n, known := SnatFeature_Node_value[name]
	if !known {
		return "", 0, 0, false
	}
	return iface, SnatFeature_Node(n), AddressFamily(f), true
}

// ModelKey returns the key of a value of this package by its type. The error wraps
// models.ErrUnknownModel for other types and models.ErrInvalidValue for a value that
// has no valid key (it names the field and its value).
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *TranslationSet:
		if err := ValidateLabel(v.GetLabel()); err != nil {
			return "", keyutil.InvalidValue(pkgName, msg, err.Error())
		}
		return TranslationSetKey(v.GetLabel()), nil
	case *SnatAddresses:
		return SnatAddressesKey, nil
	case *SnatPolicy:
		return SnatPolicyKey, nil
	case *SnatExcludePrefix:
		if _, ok := keyutil.Network(v.GetPrefix()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "prefix "+strconv.Quote(v.GetPrefix())+" is not a prefix")
		}
		return SnatExcludePrefixKey(v.GetPrefix()), nil
	case *SnatPolicyInterface:
		if v.GetInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
		}
		return SnatPolicyInterfaceKey(v.GetInterface(), v.GetTable()), nil
	case *SnatFeature:
		if v.GetInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
		}
		return SnatFeatureKey(v.GetInterface(), v.GetNode(), v.GetFamily()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

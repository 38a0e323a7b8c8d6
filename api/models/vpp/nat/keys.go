// Package vpp_nat is the northbound model of VPP NAT44 configuration
// (nat.proto): the global NAT44 settings and labelled sets of DNAT
// mappings, and the keys the KV scheduler stores them and their derived
// values under.
//
// Configuration keys:
//
//	config/vpp/nat/v2/nat44-global       Nat44Global (a single value)
//	config/vpp/nat/v2/dnat44/<label>     DNat44 (label may contain slashes)
//
// Derived keys of Nat44Global (scheduler-internal):
//
//	vpp/nat44/interface/<interface>/feature/<in|out>    NAT on one interface
//	vpp/nat44/address/<ip>/twice-nat/<on|off>           one pool address
//
// The interface feature key is "in" for is_inside interfaces and "out" for
// the others, including output-feature interfaces; the value (a
// Nat44Global_Interface) carries output_feature. Interface names may contain
// slashes but not "/feature/".
package vpp_nat

import (
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// GlobalNAT44Key is the key of the single Nat44Global value.
	GlobalNAT44Key = "config/vpp/nat/v2/nat44-global"

	// DNAT44Prefix is the key prefix of DNat44 values.
	DNAT44Prefix = "config/vpp/nat/v2/dnat44/"

	// InterfaceNAT44Prefix is the key prefix of the derived values that
	// enable NAT44 on one interface.
	InterfaceNAT44Prefix = "vpp/nat44/interface/"

	// AddressNAT44Prefix is the key prefix of the derived values that add
	// one address to the NAT44 address pool.
	AddressNAT44Prefix = "vpp/nat44/address/"

	pkgName     = "vpp_nat"
	featureSep  = "/feature/"
	featureIn   = "in"
	featureOut  = "out"
	twiceNATSep = "/twice-nat/"
	twiceNATOn  = "on"
	twiceNATOff = "off"
)

// Labels of the DNat44 values the service renderer writes besides one per Service
// ("<namespace>/<name>"); natplugin prefers all of them to DNat44 values of any other
// label when two map the same external endpoint.
const (
	// IdentityDNAT44Label labels the identity mappings that keep node-bound traffic
	// (VXLAN, the node's own address) out of translation.
	IdentityDNAT44Label = "DNAT-identities"
	// ExternalIPDNAT44LabelPrefix starts the label of the identity mappings of one
	// Service external or load-balancer IP ("DNAT-external-IP-20.0.0.2").
	ExternalIPDNAT44LabelPrefix = "DNAT-external-IP-"
)

// DNAT44Key returns the key of the DNat44 with the given label:
// config/vpp/nat/v2/dnat44/<label>. The label may contain slashes
// (Kubernetes services use "<namespace>/<name>").
func DNAT44Key(label string) string {
	return DNAT44Prefix + label
}

// ParseDNAT44Key returns the label from a key built by DNAT44Key; ok is
// false for any other key.
func ParseDNAT44Key(key string) (label string, ok bool) {
	return keyutil.Rest(key, DNAT44Prefix)
}

// InterfaceNAT44Key returns the derived key of the NAT44 feature on an
// interface: vpp/nat44/interface/<iface>/feature/<in|out>.
func InterfaceNAT44Key(iface string, isInside bool) string {
	feature := featureOut
	if isInside {
		feature = featureIn
	}
	return InterfaceNAT44Prefix + iface + featureSep + feature
}

// ParseInterfaceNAT44Key splits a key built by InterfaceNAT44Key; ok is
// false for any other key.
func ParseInterfaceNAT44Key(key string) (iface string, isInside bool, ok bool) {
	rest, ok := keyutil.Rest(key, InterfaceNAT44Prefix)
	if !ok {
		return "", false, false
	}
	iface, feature, ok := keyutil.SplitLast(rest, featureSep)
	if !ok || (feature != featureIn && feature != featureOut) {
		return "", false, false
	}
	return iface, feature == featureIn, true
}

// AddressNAT44Key returns the derived key of one NAT44 pool address:
// vpp/nat44/address/<address>/twice-nat/<on|off>. The address is written
// in canonical form when it parses.
func AddressNAT44Key(address string, twiceNAT bool) string {
	address, _ = keyutil.IP(address)
	mode := twiceNATOff
	if twiceNAT {
		mode = twiceNATOn
	}
	return AddressNAT44Prefix + address + twiceNATSep + mode
}

// ParseAddressNAT44Key splits a key built by AddressNAT44Key; ok is false
// for any other key and for keys whose address is not an IP address.
func ParseAddressNAT44Key(key string) (address string, twiceNAT bool, ok bool) {
	rest, ok := keyutil.Rest(key, AddressNAT44Prefix)
	if !ok {
		return "", false, false
	}
	address, mode, ok := keyutil.SplitFirst(rest, twiceNATSep)
	if !ok || (mode != twiceNATOn && mode != twiceNATOff) {
		return "", false, false
	}
	if _, ok := keyutil.IP(address); !ok {
		return "", false, false
	}
	return address, mode == twiceNATOn, true
}

// ModelKey returns the key of a value of this package by its type:
// GlobalNAT44Key for a Nat44Global, DNAT44Key for a DNat44. The error wraps
// models.ErrUnknownModel for other types and models.ErrInvalidValue for a
// DNat44 with an empty label.
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *Nat44Global:
		return GlobalNAT44Key, nil
	case *DNat44:
		if v.GetLabel() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty label")
		}
		return DNAT44Key(v.GetLabel()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

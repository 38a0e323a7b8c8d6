// Package vpp_l2 is the northbound model of VPP L2 configuration
// (l2.proto): bridge domains and static L2 FIB entries, and the keys the KV
// scheduler stores them and their derived values under.
//
// Configuration keys:
//
//	config/vpp/l2/v2/bridge-domain/<name>             BridgeDomain
//	config/vpp/l2/v2/fib/<bridge-domain>/mac/<mac>    FIBEntry
//
// Derived keys (scheduler-internal):
//
//	vpp/bd/<bridge-domain>/interface/<interface>      membership of one interface
//
// Bridge domain and interface names may contain slashes
// (GigabitEthernet0/8/0); a bridge domain name must not contain the
// separators "/mac/" or "/interface/", which the parsers look for.
package vpp_l2

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// BridgeDomainPrefix is the key prefix of VPP bridge domains.
	BridgeDomainPrefix = "config/vpp/l2/v2/bridge-domain/"

	// FIBPrefix is the key prefix of VPP static L2 FIB entries.
	FIBPrefix = "config/vpp/l2/v2/fib/"

	// BDInterfacePrefix is the key prefix of the derived values that
	// represent the membership of an interface in a bridge domain.
	BDInterfacePrefix = "vpp/bd/"

	pkgName    = "vpp_l2"
	fibMACSep  = "/mac/"
	bdIfaceSep = "/interface/"
)

// BridgeDomainKey returns the key of the bridge domain with the given name:
// config/vpp/l2/v2/bridge-domain/<name>.
func BridgeDomainKey(name string) string {
	return BridgeDomainPrefix + name
}

// ParseBDNameFromKey returns the bridge domain name from a key built by
// BridgeDomainKey; ok is false for any other key.
func ParseBDNameFromKey(key string) (name string, ok bool) {
	return keyutil.Rest(key, BridgeDomainPrefix)
}

// BDInterfaceKey returns the derived key of the membership of an interface
// in a bridge domain: vpp/bd/<bd>/interface/<iface>. Its value is the
// BridgeDomain_Interface message; it depends on the interface existing.
func BDInterfaceKey(bd, iface string) string {
	return BDInterfacePrefix + bd + bdIfaceSep + iface
}

// ParseBDInterfaceKey splits a key built by BDInterfaceKey; ok is false
// for any other key.
func ParseBDInterfaceKey(key string) (bd, iface string, ok bool) {
	rest, ok := keyutil.Rest(key, BDInterfacePrefix)
	if !ok {
		return "", "", false
	}
	return keyutil.SplitFirst(rest, bdIfaceSep)
}

// FIBKey returns the key of a static L2 FIB entry:
// config/vpp/l2/v2/fib/<bd>/mac/<mac>. The MAC address is written in
// canonical form (lower-case, colon-separated) when it parses.
func FIBKey(bd, mac string) string {
	mac, _ = keyutil.MAC(mac)
	return FIBPrefix + bd + fibMACSep + mac
}

// ParseFIBKey splits a key built by FIBKey; ok is false for any other key
// and for keys whose last part is not a MAC address.
func ParseFIBKey(key string) (bd, mac string, ok bool) {
	rest, ok := keyutil.Rest(key, FIBPrefix)
	if !ok {
		return "", "", false
	}
	bd, mac, ok = keyutil.SplitFirst(rest, fibMACSep)
	if !ok {
		return "", "", false
	}
	if _, ok := keyutil.MAC(mac); !ok {
		return "", "", false
	}
	return bd, mac, true
}

// ModelKey returns the key of a value of this package by its type:
// BridgeDomainKey for a BridgeDomain, FIBKey for a FIBEntry. The error
// wraps models.ErrUnknownModel for other types and models.ErrInvalidValue
// for a bridge domain without a name or a FIB entry without a bridge
// domain or a valid MAC address.
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *BridgeDomain:
		if v.GetName() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty name")
		}
		return BridgeDomainKey(v.GetName()), nil
	case *FIBEntry:
		if v.GetBridgeDomain() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty bridge_domain")
		}
		if _, ok := keyutil.MAC(v.GetPhysAddress()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "phys_address "+strconv.Quote(v.GetPhysAddress())+" is not a MAC address")
		}
		return FIBKey(v.GetBridgeDomain(), v.GetPhysAddress()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

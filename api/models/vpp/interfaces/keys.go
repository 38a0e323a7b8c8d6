// Package vpp_interfaces is the northbound model of VPP interfaces
// (interface.proto) and the keys the KV scheduler stores them and their
// derived values under.
//
// Configuration keys:
//
//	config/vpp/v2/interfaces/<name>                          Interface
//
// State keys (values notified by the agent, not configured):
//
//	vpp/interface/dhcp-lease/<interface>                     DHCPLease
//
// Derived keys (scheduler-internal; they live and die with the interface
// they are derived from and exist so that other values can depend on them):
//
//	vpp/interface/<interface>/address/<source>/<ip>/<len>    one IP address
//	vpp/interface/unnumbered/<interface>                     unnumbered setting
//	vpp/interface/<interface>/vrf/<vrf>/ip-version/<v4|v6>   VRF membership
//
// Interface names may contain slashes (GigabitEthernet0/8/0). They must not
// contain the separators "/address/" or "/vrf/", which the derived-key
// parsers look for.
package vpp_interfaces

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// InterfacePrefix is the key prefix of VPP interface configuration.
	InterfacePrefix = "config/vpp/v2/interfaces/"

	// DHCPLeasePrefix is the key prefix of the DHCP leases of VPP
	// interfaces (state, not configuration).
	DHCPLeasePrefix = "vpp/interface/dhcp-lease/"

	// DerivedPrefix is the prefix shared by every derived key of VPP
	// interfaces (and by the DHCP lease keys).
	DerivedPrefix = "vpp/interface/"

	// UnnumberedPrefix is the key prefix of the derived values representing
	// unnumbered interface settings.
	UnnumberedPrefix = "vpp/interface/unnumbered/"

	pkgName      = "vpp_interfaces"
	addressSep   = "/address/"
	vrfSep       = "/vrf/"
	ipVersionSep = "/ip-version/"
	ipVersion4   = "v4"
	ipVersion6   = "v6"
)

// AddressSource tells where an interface IP address comes from; it is part
// of the derived address key, so that dependents can wait for any address of
// an interface (see InterfaceAddressPrefix) whatever its source.
type AddressSource string

const (
	// AddressStatic marks an address from Interface.ip_addresses.
	AddressStatic AddressSource = "static"
	// AddressDHCP marks an address leased by the VPP DHCP client.
	AddressDHCP AddressSource = "dhcp"
)

// valid tells whether s is a known address source.
func (s AddressSource) valid() bool {
	return s == AddressStatic || s == AddressDHCP
}

// InterfaceKey returns the configuration key of the VPP interface with the
// given logical name: config/vpp/v2/interfaces/<name>.
func InterfaceKey(name string) string {
	return InterfacePrefix + name
}

// ParseNameFromKey returns the logical interface name from a key built by
// InterfaceKey; ok is false for any other key.
func ParseNameFromKey(key string) (name string, ok bool) {
	return keyutil.Rest(key, InterfacePrefix)
}

// DHCPLeaseKey returns the key of the DHCP lease of the given interface:
// vpp/interface/dhcp-lease/<iface>.
func DHCPLeaseKey(iface string) string {
	return DHCPLeasePrefix + iface
}

// ParseNameFromDHCPLeaseKey returns the interface name from a key built by
// DHCPLeaseKey; ok is false for any other key, including the derived keys
// of an interface named "dhcp-lease".
func ParseNameFromDHCPLeaseKey(key string) (iface string, ok bool) {
	iface, ok = keyutil.Rest(key, DHCPLeasePrefix)
	if !ok || isOtherDerivedKey(key) {
		return "", false
	}
	return iface, true
}

// InterfaceAddressKey returns the derived key of one IP address of an
// interface: vpp/interface/<iface>/address/<source>/<address>. The address
// is in CIDR notation and is written in canonical form (host bits kept,
// IPv6 lower-case and compressed) when it parses.
func InterfaceAddressKey(iface string, source AddressSource, address string) string {
	address, _ = keyutil.Address(address)
	return InterfaceAddressPrefix(iface) + string(source) + "/" + address
}

// InterfaceAddressPrefix returns the prefix of the derived keys of all IP
// addresses of an interface, of any source: vpp/interface/<iface>/address/.
// A value that needs the interface to have an IP address (an unnumbered
// interface, for instance) depends on any key with this prefix.
func InterfaceAddressPrefix(iface string) string {
	return DerivedPrefix + iface + addressSep
}

// ParseInterfaceAddressKey splits a key built by InterfaceAddressKey; ok is
// false for any other key and for keys with an unknown source or an address
// that is not in CIDR notation.
func ParseInterfaceAddressKey(key string) (iface string, source AddressSource, address string, ok bool) {
	rest, ok := keyutil.Rest(key, DerivedPrefix)
	if !ok {
		return "", "", "", false
	}
	iface, srcAddr, ok := keyutil.SplitLast(rest, addressSep)
	if !ok {
		return "", "", "", false
	}
	src, addr, ok := keyutil.SplitFirst(srcAddr, "/")
	if !ok || !AddressSource(src).valid() {
		return "", "", "", false
	}
	if _, ok := keyutil.Address(addr); !ok {
		return "", "", "", false
	}
	return iface, AddressSource(src), addr, true
}

// UnnumberedKey returns the derived key of the unnumbered setting of an
// interface: vpp/interface/unnumbered/<iface>. Its value is the
// Interface_Unnumbered message; it depends on the interface with the IP
// having an address.
func UnnumberedKey(iface string) string {
	return UnnumberedPrefix + iface
}

// ParseUnnumberedKey returns the interface name from a key built by
// UnnumberedKey; ok is false for any other key, including the derived keys
// of an interface named "unnumbered".
func ParseUnnumberedKey(key string) (iface string, ok bool) {
	iface, ok = keyutil.Rest(key, UnnumberedPrefix)
	if !ok || isOtherDerivedKey(key) {
		return "", false
	}
	return iface, true
}

// InterfaceVrfKey returns the derived key of the membership of an interface
// in a VRF table of one IP version:
// vpp/interface/<iface>/vrf/<vrf>/ip-version/<v4|v6>. It depends on the VRF
// table existing.
func InterfaceVrfKey(iface string, vrf uint32, ipv6 bool) string {
	version := ipVersion4
	if ipv6 {
		version = ipVersion6
	}
	return DerivedPrefix + iface + vrfSep + strconv.FormatUint(uint64(vrf), 10) + ipVersionSep + version
}

// ParseInterfaceVrfKey splits a key built by InterfaceVrfKey; ok is false
// for any other key.
func ParseInterfaceVrfKey(key string) (iface string, vrf uint32, ipv6 bool, ok bool) {
	rest, ok := keyutil.Rest(key, DerivedPrefix)
	if !ok {
		return "", 0, false, false
	}
	ifVrf, version, ok := keyutil.SplitLast(rest, ipVersionSep)
	if !ok || (version != ipVersion4 && version != ipVersion6) {
		return "", 0, false, false
	}
	iface, vrfStr, ok := keyutil.SplitLast(ifVrf, vrfSep)
	if !ok {
		return "", 0, false, false
	}
	vrf, ok = keyutil.Uint32(vrfStr)
	if !ok {
		return "", 0, false, false
	}
	return iface, vrf, version == ipVersion6, true
}

// isOtherDerivedKey tells whether key is a well-formed address or VRF key;
// the unnumbered and DHCP lease parsers use it to tell their keys apart
// from the derived keys of interfaces named "unnumbered" or "dhcp-lease".
func isOtherDerivedKey(key string) bool {
	if _, _, _, ok := ParseInterfaceAddressKey(key); ok {
		return true
	}
	_, _, _, ok := ParseInterfaceVrfKey(key)
	return ok
}

// ModelKey returns the key of a value of this package by its type:
// InterfaceKey for an Interface, DHCPLeaseKey for a DHCPLease. The error
// wraps keyutil's ErrUnknownModel (models.ErrUnknownModel) for other types
// and ErrInvalidValue (models.ErrInvalidValue) for an empty name.
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *Interface:
		if v.GetName() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty name")
		}
		return InterfaceKey(v.GetName()), nil
	case *DHCPLease:
		if v.GetInterfaceName() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface_name")
		}
		return DHCPLeaseKey(v.GetInterfaceName()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

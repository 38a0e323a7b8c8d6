// Package linux_interfaces is the northbound model of Linux interfaces
// (interface.proto) and the keys the KV scheduler stores them and their
// derived values under.
//
// Configuration keys:
//
//	config/linux/interfaces/v2/interface/<name>    Interface
//
// Derived keys (scheduler-internal):
//
//	linux/interface/host-name/<host-if-name>       the interface exists under
//	                                               this kernel name (what a
//	                                               VPP AF_PACKET depends on)
//	linux/interface/<name>/address/<ip>/<len>      one IP address
//
// Kernel interface names never contain slashes; logical names must not
// contain "/address/".
package linux_interfaces

import (
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// InterfacePrefix is the key prefix of Linux interface configuration.
	InterfacePrefix = "config/linux/interfaces/v2/interface/"

	// DerivedPrefix is the prefix shared by every derived key of Linux
	// interfaces.
	DerivedPrefix = "linux/interface/"

	// HostNamePrefix is the key prefix of the derived values announcing
	// that an interface exists under a kernel name.
	HostNamePrefix = "linux/interface/host-name/"

	pkgName    = "linux_interfaces"
	addressSep = "/address/"
)

// InterfaceKey returns the configuration key of the Linux interface with
// the given logical name: config/linux/interfaces/v2/interface/<name>.
func InterfaceKey(name string) string {
	return InterfacePrefix + name
}

// ParseNameFromKey returns the logical interface name from a key built by
// InterfaceKey; ok is false for any other key.
func ParseNameFromKey(key string) (name string, ok bool) {
	return keyutil.Rest(key, InterfacePrefix)
}

// InterfaceHostNameKey returns the derived key announcing an interface with
// the given kernel name: linux/interface/host-name/<hostName>.
func InterfaceHostNameKey(hostName string) string {
	return HostNamePrefix + hostName
}

// ParseInterfaceHostNameKey returns the kernel name from a key built by
// InterfaceHostNameKey; ok is false for any other key, including names with
// a slash (which the kernel refuses), so the address keys of an interface
// named "host-name" are not mistaken for host-name keys.
func ParseInterfaceHostNameKey(key string) (hostName string, ok bool) {
	hostName, ok = keyutil.Rest(key, HostNamePrefix)
	if !ok || strings.Contains(hostName, "/") {
		return "", false
	}
	return hostName, true
}

// InterfaceAddressKey returns the derived key of one IP address of an
// interface: linux/interface/<iface>/address/<address>. The address is in
// CIDR notation and is written in canonical form (host bits kept, IPv6
// lower-case and compressed) when it parses.
func InterfaceAddressKey(iface, address string) string {
	address, _ = keyutil.Address(address)
	return InterfaceAddressPrefix(iface) + address
}

// InterfaceAddressPrefix returns the prefix of the derived keys of all IP
// addresses of an interface: linux/interface/<iface>/address/.
func InterfaceAddressPrefix(iface string) string {
	return DerivedPrefix + iface + addressSep
}

// ParseInterfaceAddressKey splits a key built by InterfaceAddressKey; ok is
// false for any other key and for keys whose address is not in CIDR
// notation.
func ParseInterfaceAddressKey(key string) (iface, address string, ok bool) {
	rest, ok := keyutil.Rest(key, DerivedPrefix)
	if !ok {
		return "", "", false
	}
	iface, address, ok = keyutil.SplitLast(rest, addressSep)
	if !ok {
		return "", "", false
	}
	if _, ok := keyutil.Address(address); !ok {
		return "", "", false
	}
	return iface, address, true
}

// ModelKey returns the key of a value of this package by its type:
// InterfaceKey for an Interface. The error wraps models.ErrUnknownModel for
// other types and models.ErrInvalidValue for an interface without a name.
func ModelKey(msg proto.Message) (string, error) {
	if v, ok := msg.(*Interface); ok {
		if v.GetName() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty name")
		}
		return InterfaceKey(v.GetName()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

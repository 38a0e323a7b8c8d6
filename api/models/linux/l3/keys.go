// Package linux_l3 is the northbound model of Linux L3 configuration
// (l3.proto): static routes and static ARP entries, and the keys the KV
// scheduler stores them under.
//
// Configuration keys:
//
//	config/linux/l3/v2/route/<ip>/<len>/<interface>    Route
//	config/linux/l3/v2/arp/<interface>/<ip>            ARPEntry
//
// Addresses in keys are written in canonical form, so that two spellings
// of the same route or neighbor never make two keys.
package linux_l3

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// RoutePrefix is the key prefix of Linux routes.
	RoutePrefix = "config/linux/l3/v2/route/"

	// ARPPrefix is the key prefix of Linux static ARP entries.
	ARPPrefix = "config/linux/l3/v2/arp/"

	pkgName = "linux_l3"
)

// RouteKey returns the key of a route: config/linux/l3/v2/route/<dst>/<iface>.
// dst is written as its canonical network (host bits cleared, IPv6
// lower-case and compressed; a bare address becomes a /32 or /128 host
// route) when it parses, as given otherwise.
func RouteKey(dst, iface string) string {
	dst, _ = keyutil.Network(dst)
	return RoutePrefix + dst + "/" + iface
}

// ParseRouteKey splits a key built by RouteKey: the destination is the
// first two parts (address and prefix length), the interface the rest. ok
// is false for any other key and for keys whose destination is not a
// network in CIDR notation.
func ParseRouteKey(key string) (dst, iface string, ok bool) {
	rest, ok := keyutil.Rest(key, RoutePrefix)
	if !ok {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", false
	}
	dst = parts[0] + "/" + parts[1]
	if _, ok := keyutil.Network(dst); !ok {
		return "", "", false
	}
	return dst, parts[2], true
}

// ARPEntryKey returns the key of a static ARP entry:
// config/linux/l3/v2/arp/<iface>/<ip>. ip is written in canonical form when
// it parses.
func ARPEntryKey(iface, ip string) string {
	ip, _ = keyutil.IP(ip)
	return ARPPrefix + iface + "/" + ip
}

// ParseARPEntryKey splits a key built by ARPEntryKey; ok is false for any
// other key and for keys whose last part is not an IP address.
func ParseARPEntryKey(key string) (iface, ip string, ok bool) {
	rest, ok := keyutil.Rest(key, ARPPrefix)
	if !ok {
		return "", "", false
	}
	iface, ip, ok = keyutil.SplitLast(rest, "/")
	if !ok {
		return "", "", false
	}
	if _, ok := keyutil.IP(ip); !ok {
		return "", "", false
	}
	return iface, ip, true
}

// ModelKey returns the key of a value of this package by its type:
// RouteKey for a Route, ARPEntryKey for an ARPEntry. The error wraps
// models.ErrUnknownModel for other types and models.ErrInvalidValue for a
// route without an outgoing interface or a valid destination network, or
// an ARP entry without an interface or a valid IP address.
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *Route:
		if v.GetOutgoingInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty outgoing_interface")
		}
		if _, ok := keyutil.Network(v.GetDstNetwork()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "dst_network "+strconv.Quote(v.GetDstNetwork())+" is not a network")
		}
		return RouteKey(v.GetDstNetwork(), v.GetOutgoingInterface()), nil
	case *ARPEntry:
		if v.GetInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
		}
		if _, ok := keyutil.IP(v.GetIpAddress()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "ip_address "+strconv.Quote(v.GetIpAddress())+" is not an IP address")
		}
		return ARPEntryKey(v.GetInterface(), v.GetIpAddress()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

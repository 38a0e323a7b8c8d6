// Package vpp_l3 is the northbound model of VPP L3 configuration (l3.proto):
// routes, ARP entries, VRF tables, IP neighbor scanning, proxy ARP and IPv6
// proxy ND, and the keys the KV scheduler stores them under.
//
// Configuration keys:
//
//	config/vpp/v2/route/vrf/<vrf>/dst/<ip>/<len>/gw/<gw>      Route
//	config/vpp/v2/arp/<interface>/<ip>                        ARPEntry
//	config/vpp/v2/vrf-table/id/<id>/protocol/<IPV4|IPV6>      VrfTable
//	config/vpp/v2/ipscanneigh-global                          IPScanNeighbor
//	config/vpp/v2/proxyarp-global                             ProxyARP
//	config/vpp/v2/proxynd/<interface>/<ip>                    ProxyNDEntry
//
// Addresses in keys are written in canonical form (see RouteKey and
// ARPEntryKey), so that two spellings of the same route or neighbor never
// make two keys.
package vpp_l3

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// RoutePrefix is the key prefix of VPP routes.
	RoutePrefix = "config/vpp/v2/route/"

	// ARPPrefix is the key prefix of VPP static ARP entries.
	ARPPrefix = "config/vpp/v2/arp/"

	// VrfTablePrefix is the key prefix of VPP VRF tables.
	VrfTablePrefix = "config/vpp/v2/vrf-table/"

	// IPScanNeighborKey is the key of the single IPScanNeighbor value.
	IPScanNeighborKey = "config/vpp/v2/ipscanneigh-global"

	// ProxyARPKey is the key of the single ProxyARP value.
	ProxyARPKey = "config/vpp/v2/proxyarp-global"

	// ProxyNDPrefix is the key prefix of VPP's IPv6 proxy ND entries.
	ProxyNDPrefix = "config/vpp/v2/proxynd/"

	pkgName      = "vpp_l3"
	routeVrfPart = RoutePrefix + "vrf/"
	routeDstSep  = "/dst/"
	routeGwSep   = "/gw/"
	vrfIDPart    = VrfTablePrefix + "id/"
	vrfProtoSep  = "/protocol/"
)

// RouteKey returns the key of a route:
// config/vpp/v2/route/vrf/<vrf>/dst/<dst>/gw/<gw>. dst is written as its
// canonical network (host bits cleared, IPv6 lower-case and compressed; a
// bare address becomes a /32 or /128 host route) and gw as its canonical
// address when they parse, as given otherwise. gw may be empty (a route
// without a next hop), which leaves the key ending in "/gw/".
func RouteKey(vrf uint32, dst, gw string) string {
	dst, _ = keyutil.Network(dst)
	gw, _ = keyutil.IP(gw)
	return routeVrfPart + strconv.FormatUint(uint64(vrf), 10) + routeDstSep + dst + routeGwSep + gw
}

// ParseRouteKey splits a key built by RouteKey. ok is false for any other
// key and for keys whose destination is not a network in CIDR notation or
// whose gateway is neither empty nor an IP address. dst and gw are returned
// as written in the key.
func ParseRouteKey(key string) (vrf uint32, dst, gw string, ok bool) {
	rest, ok := keyutil.Rest(key, routeVrfPart)
	if !ok {
		return 0, "", "", false
	}
	vrfStr, dstGw, ok := keyutil.SplitFirst(rest, routeDstSep)
	if !ok {
		return 0, "", "", false
	}
	if vrf, ok = keyutil.Uint32(vrfStr); !ok {
		return 0, "", "", false
	}
	i := strings.LastIndex(dstGw, routeGwSep)
	if i <= 0 {
		return 0, "", "", false
	}
	dst, gw = dstGw[:i], dstGw[i+len(routeGwSep):]
	if !strings.Contains(dst, "/") {
		return 0, "", "", false
	}
	if _, ok := keyutil.Network(dst); !ok {
		return 0, "", "", false
	}
	if gw != "" {
		if _, ok := keyutil.IP(gw); !ok {
			return 0, "", "", false
		}
	}
	return vrf, dst, gw, true
}

// ARPEntryKey returns the key of a static ARP entry:
// config/vpp/v2/arp/<iface>/<ip>. ip is written in canonical form when it
// parses.
func ARPEntryKey(iface, ip string) string {
	ip, _ = keyutil.IP(ip)
	return ARPPrefix + iface + "/" + ip
}

// ParseARPEntryKey splits a key built by ARPEntryKey; the interface name
// may contain slashes. ok is false for any other key and for keys whose last
// part is not an IP address.
func ParseARPEntryKey(key string) (iface, ip string, ok bool) {
	return parseIfaceIPKey(key, ARPPrefix)
}

// ProxyNDEntryKey returns the key of an IPv6 proxy ND entry:
// config/vpp/v2/proxynd/<iface>/<ip>. ip is written in canonical form when
// it parses.
func ProxyNDEntryKey(iface, ip string) string {
	ip, _ = keyutil.IP(ip)
	return ProxyNDPrefix + iface + "/" + ip
}

// ParseProxyNDEntryKey splits a key built by ProxyNDEntryKey, as
// ParseARPEntryKey does for ARP keys.
func ParseProxyNDEntryKey(key string) (iface, ip string, ok bool) {
	return parseIfaceIPKey(key, ProxyNDPrefix)
}

// parseIfaceIPKey splits <prefix><interface>/<ip>; the interface name may
// contain slashes, the last part must be an IP address.
func parseIfaceIPKey(key, prefix string) (iface, ip string, ok bool) {
	rest, ok := keyutil.Rest(key, prefix)
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

// VrfTableKey returns the key of a VRF table:
// config/vpp/v2/vrf-table/id/<id>/protocol/<IPV4|IPV6>.
func VrfTableKey(id uint32, protocol VrfTable_Protocol) string {
	return vrfIDPart + strconv.FormatUint(uint64(id), 10) + vrfProtoSep + protocol.String()
}

// ParseVrfTableKey splits a key built by VrfTableKey; ok is false for any
// other key and for unknown protocols.
func ParseVrfTableKey(key string) (id uint32, protocol VrfTable_Protocol, ok bool) {
	rest, ok := keyutil.Rest(key, vrfIDPart)
	if !ok {
		return 0, 0, false
	}
	idStr, protoStr, ok := keyutil.SplitFirst(rest, vrfProtoSep)
	if !ok {
		return 0, 0, false
	}
	if id, ok = keyutil.Uint32(idStr); !ok {
		return 0, 0, false
	}
	p, known := VrfTable_Protocol_value[protoStr]
	if !known {
		return 0, 0, false
	}
	return id, VrfTable_Protocol(p), true
}

// ModelKey returns the key of a value of this package by its type: a
// Route, ARPEntry, VrfTable, IPScanNeighbor, ProxyARP or ProxyNDEntry. The error wraps
// models.ErrUnknownModel for other types and models.ErrInvalidValue for a
// route without a valid destination network, an ARP entry without an
// interface or IP address (a proxy ND entry likewise), or a VRF table with
// an unknown protocol.
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *Route:
		if _, ok := keyutil.Network(v.GetDstNetwork()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "dst_network "+strconv.Quote(v.GetDstNetwork())+" is not a network")
		}
		if gw := v.GetNextHopAddr(); gw != "" {
			if _, ok := keyutil.IP(gw); !ok {
				return "", keyutil.InvalidValue(pkgName, msg, "next_hop_addr "+strconv.Quote(gw)+" is not an IP address")
			}
		}
		return RouteKey(v.GetVrfId(), v.GetDstNetwork(), v.GetNextHopAddr()), nil
	case *ARPEntry:
		if v.GetInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
		}
		if _, ok := keyutil.IP(v.GetIpAddress()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "ip_address "+strconv.Quote(v.GetIpAddress())+" is not an IP address")
		}
		return ARPEntryKey(v.GetInterface(), v.GetIpAddress()), nil
	case *ProxyNDEntry:
		if v.GetInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
		}
		if _, ok := keyutil.IP(v.GetIpAddress()); !ok {
			return "", keyutil.InvalidValue(pkgName, msg, "ip_address "+strconv.Quote(v.GetIpAddress())+" is not an IP address")
		}
		return ProxyNDEntryKey(v.GetInterface(), v.GetIpAddress()), nil
	case *VrfTable:
		if _, known := VrfTable_Protocol_name[int32(v.GetProtocol())]; !known {
			return "", keyutil.InvalidValue(pkgName, msg, "unknown protocol "+strconv.Itoa(int(v.GetProtocol())))
		}
		return VrfTableKey(v.GetId(), v.GetProtocol()), nil
	case *IPScanNeighbor:
		return IPScanNeighborKey, nil
	case *ProxyARP:
		return ProxyARPKey, nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}

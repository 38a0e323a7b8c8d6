package l3plugin

import (
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/fib_types"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// noIndex is VPP's ~0: "no interface", "no table".
const noIndex = ^uint32(0)

// pathNextHop returns the next hop of a FIB path, invalid if it has none.
func pathNextHop(p fib_types.FibPath) netip.Addr {
	var a netip.Addr
	switch p.Proto {
	case fib_types.FIB_API_PATH_NH_PROTO_IP4:
		a = netip.AddrFrom4(p.Nh.Address.GetIP4())
	case fib_types.FIB_API_PATH_NH_PROTO_IP6:
		a = netip.AddrFrom16(p.Nh.Address.GetIP6())
	default:
		return netip.Addr{}
	}
	if a.IsUnspecified() {
		return netip.Addr{}
	}
	return a
}

// nhProto is the FIB next-hop protocol of an address family.
func nhProto(ipv6 bool) fib_types.FibPathNhProto {
	if ipv6 {
		return fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	return fib_types.FIB_API_PATH_NH_PROTO_IP4
}

// parseAddr parses an IP address (IPv4-mapped IPv6 becomes IPv4); zones are
// refused.
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("address %q has a zone", s)
	}
	return a.Unmap(), nil
}

// nbValues indexes by key the values of type V that NB asks for (Retrieve's
// correlate argument).
func nbValues[V any](correlate []kvapi.KVWithMetadata) map[string]V {
	nb := make(map[string]V, len(correlate))
	for _, kv := range correlate {
		if v, ok := kv.Value.(V); ok {
			nb[kv.Key] = v
		}
	}
	return nb
}

package l3plugin

import (
	"errors"
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip_types"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// noIndex is VPP's ~0: "no interface", "no table".
const noIndex = ^uint32(0)

// call sends one request and waits for its reply; a non-zero retval comes
// back as a *govppapi.VPPApiError.
func call(ch govppapi.Channel, req, reply govppapi.Message) error {
	if err := ch.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return nil
}

// isRetval tells whether err is a VPP error with the given retval.
func isRetval(err error, code govppapi.VPPApiError) bool {
	var e govppapi.VPPApiError
	return errors.As(err, &e) && e == code
}

// isRetriable reports whether an operation that failed with err may succeed
// when tried again: invalid values never do; VPP errors might (a missing
// table or interface may appear in the meantime).
func isRetriable(err error) bool {
	var inv *kvapi.InvalidValueError
	return !errors.As(err, &inv)
}

// apiAddr converts an address to VPP's representation.
func apiAddr(a netip.Addr) ip_types.Address {
	if a.Is4() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
}

// fromAPIAddr converts VPP's address; ok is false for an unknown family.
func fromAPIAddr(a ip_types.Address) (netip.Addr, bool) {
	switch a.Af {
	case ip_types.ADDRESS_IP4:
		return netip.AddrFrom4(a.Un.GetIP4()), true
	case ip_types.ADDRESS_IP6:
		return netip.AddrFrom16(a.Un.GetIP6()), true
	}
	return netip.Addr{}, false
}

// apiPrefix converts a prefix to VPP's representation.
func apiPrefix(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: apiAddr(p.Addr()), Len: uint8(p.Bits())}
}

// fromAPIPrefix converts VPP's prefix (masked); ok is false if it is not one.
func fromAPIPrefix(p ip_types.Prefix) (netip.Prefix, bool) {
	a, ok := fromAPIAddr(p.Address)
	if !ok {
		return netip.Prefix{}, false
	}
	pfx, err := a.Prefix(int(p.Len))
	return pfx, err == nil
}

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

// addrFamily is VPP's address family of an IP version.
func addrFamily(ipv6 bool) ip_types.AddressFamily {
	if ipv6 {
		return ip_types.ADDRESS_IP6
	}
	return ip_types.ADDRESS_IP4
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

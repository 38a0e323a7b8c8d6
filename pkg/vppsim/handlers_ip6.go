package vppsim

import (
	"crypto/rand"
	"net/netip"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
)

// IPv6 enablement of an interface: the link-local address, its locks and
// router advertisement settings (docs/dev-guide/VPP-FORWARDING.md §11).

func registerIP6(r *registry) {
	on(r, hSwInterfaceIP6EnableDisable)
	on(r, hSwInterfaceIP6SetLinkLocalAddress)
	on(r, hSwInterfaceIP6GetLinkLocalAddress)
	on(r, hSwInterfaceIP6ndRaConfig)
	on(r, hIP6ndProxyAddDel) // nd6proxy.go
	on(r, hIP6ndProxyDump)
}

// ip6Link is VPP's ip6_link_t (ip/ip6_link.c): it exists while someone
// holds a lock on it - each global IPv6 address and each successful or
// repeated sw_interface_ip6_enable_disable(enable) - and while it exists
// the interface is IPv6-enabled: it has a link-local address, accepts the
// multicast groups of ND and runs ND.
type ip6Link struct {
	ll    netip.Addr
	locks int
	// raOn is set once sw_interface_ip6nd_ra_config turned router
	// advertisements on (ip6_ra.c); VPP then also sets the Router flag of
	// the NAs it sends. The periodic RAs themselves are not simulated.
	raOn bool
}

// ip6LinkLock is ip6_link_enable: the first lock creates the link with
// the given link-local address, else one made from the MAC (modified
// EUI-64), else a random one. It reports whether the link already
// existed (VPP then answers VALUE_EXIST but keeps the new lock).
func (st *state) ip6LinkLock(i *iface, ll netip.Addr) (existed bool) {
	if i.ip6 != nil {
		i.ip6.locks++
		return true
	}
	if !ll.IsValid() {
		ll = linkLocalFor(i)
	}
	i.ip6 = &ip6Link{ll: ll, locks: 1}
	return false
}

// ip6LinkUnlock is ip6_link_disable: the last lock gone disables IPv6
// on the interface. It reports whether there was a link.
func (st *state) ip6LinkUnlock(i *iface) bool {
	if i.ip6 == nil {
		return false
	}
	if i.ip6.locks--; i.ip6.locks <= 0 {
		i.ip6 = nil
	}
	return true
}

// linkLocalFor is ip6_link_local_address_from_mac: fe80::/64 and the
// modified EUI-64 of the MAC (universal/local bit flipped, ff:fe in the
// middle); an interface without an Ethernet MAC gets a random interface
// ID with that bit cleared.
func linkLocalFor(i *iface) netip.Addr {
	var a [16]byte
	a[0], a[1] = 0xfe, 0x80
	if i.kind.ethernet() {
		m := i.mac
		a[8], a[9], a[10], a[11] = m[0]^0x02, m[1], m[2], 0xff
		a[12], a[13], a[14], a[15] = 0xfe, m[3], m[4], m[5]
		return netip.AddrFrom16(a)
	}
	_, _ = rand.Read(a[8:])
	a[8] &= 0xfd
	return netip.AddrFrom16(a)
}

// ip6Enabled tells whether IPv6 is accepted on i: ip6-not-enabled is off
// while the interface has an IPv6 link or is unnumbered
// (interface.c vnet_sw_interface_update_unnumbered enables both families).
func (st *state) ip6Enabled(i *iface) bool {
	return i.ip6 != nil || i.unnumOf != noIndex
}

// setLinkLocalAddress is the link-local branch of
// ip6_add_del_interface_address: the length must be 128; adding replaces
// the link-local address (enabling IPv6 with it if needed) and is not
// added to the address list; deleting the current one is refused
// (ADDRESS_NOT_DELETABLE), deleting any other is ADDRESS_NOT_FOUND.
func (st *state) setLinkLocalAddress(i *iface, p netip.Prefix, isAdd bool) int32 {
	switch {
	case p.Bits() != 128:
		return retvalAddressLengthMismatch
	case !isAdd && i.ip6 != nil && i.ip6.ll == p.Addr():
		return retvalAddressNotDeletable
	case !isAdd:
		return retvalAddressNotFoundForInterface
	case i.ip6 == nil:
		st.ip6LinkLock(i, p.Addr())
	default:
		i.ip6.ll = p.Addr()
	}
	return retvalOK
}

// hSwInterfaceIP6EnableDisable is ip_api.c's handler: enable is
// ip6_link_enable (VALUE_EXIST when already enabled, the lock taken
// anyway), disable is ip6_link_disable (IP6_NOT_ENABLED without a link).
func hSwInterfaceIP6EnableDisable(cl *call, m *ip.SwInterfaceIP6EnableDisable) {
	cl.send(&ip.SwInterfaceIP6EnableDisableReply{Retval: cl.st.ip6EnableDisable(m.SwIfIndex, m.Enable)})
}

func (st *state) ip6EnableDisable(sw interface_types.InterfaceIndex, enable bool) int32 {
	i := st.iface(sw)
	if i == nil {
		return retvalInvalidSwIfIndex
	}
	if enable {
		if st.ip6LinkLock(i, netip.Addr{}) {
			return retvalValueExist
		}
		return retvalOK
	}
	if !st.ip6LinkUnlock(i) {
		return retvalIP6NotEnabled
	}
	return retvalOK
}

// hSwInterfaceIP6SetLinkLocalAddress is ip6_link_set_local_address: it
// enables IPv6 with that address if needed. VPP does not check that the
// address is link-local.
func hSwInterfaceIP6SetLinkLocalAddress(cl *call, m *ip.SwInterfaceIP6SetLinkLocalAddress) {
	st := cl.st
	rv := retvalOK
	if i := st.iface(m.SwIfIndex); i == nil {
		rv = retvalInvalidSwIfIndex
	} else if i.ip6 == nil {
		st.ip6LinkLock(i, netip.AddrFrom16(m.IP))
	} else {
		i.ip6.ll = netip.AddrFrom16(m.IP)
	}
	cl.send(&ip.SwInterfaceIP6SetLinkLocalAddressReply{Retval: rv})
}

func hSwInterfaceIP6GetLinkLocalAddress(cl *call, m *ip.SwInterfaceIP6GetLinkLocalAddress) {
	rep := &ip.SwInterfaceIP6GetLinkLocalAddressReply{}
	switch i := cl.st.iface(m.SwIfIndex); {
	case i == nil:
		rep.Retval = retvalInvalidSwIfIndex
	case i.ip6 == nil:
		rep.Retval = retvalIP6NotEnabled
	default:
		rep.IP = i.ip6.ll.As16()
	}
	cl.send(rep)
}

// hSwInterfaceIP6ndRaConfig records whether router advertisements are on
// (ip6_nd_api.c, ip6_ra.c ip6_ra_config): IP6_NOT_ENABLED without IPv6;
// any call turns sending on unless it has suppress=1 (is_no=0), and
// suppress=1 with is_no=1 turns it back on; the interval, lifetime and
// initial-burst checks answer INVALID_VALUE. Only the on/off state is
// kept: it sets the Router flag of NAs; periodic RAs are not sent.
func hSwInterfaceIP6ndRaConfig(cl *call, m *ip6_nd.SwInterfaceIP6ndRaConfig) {
	cl.send(&ip6_nd.SwInterfaceIP6ndRaConfigReply{Retval: cl.st.raConfig(m)})
}

func (st *state) raConfig(m *ip6_nd.SwInterfaceIP6ndRaConfig) int32 {
	i := st.iface(m.SwIfIndex)
	if i == nil {
		return retvalInvalidSwIfIndex
	}
	if i.ip6 == nil {
		return retvalIP6NotEnabled
	}
	if !raConfigValid(m) {
		return retvalInvalidValue
	}
	i.ip6.raOn = m.Suppress == 0 || m.IsNo
	return retvalOK
}

// raConfigValid applies ip6_ra_config's checks. max_interval 0 keeps the
// current value (200 s by default here: the simulator does not track
// intervals); a min_interval of 0 becomes 0.75 x max. lifetime counts
// only with default_router=1 and then must exceed max_interval (values
// above 9000 are capped first).
func raConfigValid(m *ip6_nd.SwInterfaceIP6ndRaConfig) bool {
	maxI := float64(m.MaxInterval)
	if maxI == 0 {
		maxI = 200
	}
	minI := float64(m.MinInterval)
	if minI == 0 {
		minI = 0.75 * maxI
	}
	if m.DefaultRouter != 0 && m.Lifetime != 0 {
		if lt := min(float64(m.Lifetime), 9000); lt <= maxI {
			return false
		}
	}
	if minI < 3 || minI > 0.75*maxI {
		return false
	}
	return m.InitialCount <= 3 && m.InitialInterval <= 16
}

package ifplugin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Limits VPP and Linux put on interface settings.
const (
	maxTagLen       = 63 // VPP keeps 63 characters of a tag
	maxLinuxNameLen = 15 // IFNAMSIZ-1
	maxMTU          = 9216
	maxTapRing      = 32768
	maxVNI          = 1<<24 - 1
)

// isNIC tells whether the type is a pre-existing NIC that is configured, never created.
func isNIC(t ifmodel.Interface_Type) bool {
	return t == ifmodel.Interface_DPDK || t == ifmodel.Interface_VMXNET3_INTERFACE
}

// parseMAC parses a MAC address in any notation net.ParseMAC accepts (6 bytes only).
func parseMAC(s string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(s)
	if err != nil {
		return nil, err
	}
	if len(mac) != 6 {
		return nil, fmt.Errorf("%q is not a 6-byte MAC address", s)
	}
	return mac, nil
}

// sameMAC tells whether two MAC strings denote the same address.
func sameMAC(a, b string) bool {
	ma, errA := parseMAC(a)
	mb, errB := parseMAC(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return slices.Equal(ma, mb)
}

// canonicalPrefixes returns the canonical spellings of list, sorted; unparsable
// entries are kept as they are.
func canonicalPrefixes(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			s = p.String()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// samePrefixes tells whether two address lists hold the same addresses.
func samePrefixes(a, b []string) bool {
	return slices.Equal(canonicalPrefixes(a), canonicalPrefixes(b))
}

// hasIPv6 tells whether any address of list is IPv6.
func hasIPv6(list []string) bool {
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is6() {
			return true
		}
	}
	return false
}

// families tells whether list holds an IPv4 and an IPv6 address.
func families(list []string) (v4, v6 bool) {
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			v4, v6 = v4 || p.Addr().Is4(), v6 || p.Addr().Is6()
		}
	}
	return v4, v6
}

// sameAddr tells whether two IP strings denote the same address.
func sameAddr(a, b string) bool {
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa == pb
}

// normalized returns a copy of iface in a canonical form, for comparison: MAC in
// lower case, addresses canonical and sorted, TAP version 0 as 2, VXLAN addresses
// canonical.
func normalized(iface *ifmodel.Interface) *ifmodel.Interface {
	n := proto.Clone(iface).(*ifmodel.Interface)
	if mac, err := parseMAC(n.PhysAddress); err == nil {
		n.PhysAddress = mac.String()
	}
	n.IpAddresses = canonicalPrefixes(n.IpAddresses)
	if t := n.GetTap(); t != nil && t.Version == 0 {
		t.Version = 2
	}
	if v := n.GetVxlan(); v != nil {
		if a, err := netip.ParseAddr(v.SrcAddress); err == nil {
			v.SrcAddress = a.String()
		}
		if a, err := netip.ParseAddr(v.DstAddress); err == nil {
			v.DstAddress = a.String()
		}
	}
	return n
}

// interfacesEqual is the value comparator of the interface descriptor.
func interfacesEqual(ia, ib *ifmodel.Interface) bool {
	return proto.Equal(normalized(ia), normalized(ib))
}

// sameLink tells whether two interfaces have the same type-specific settings.
func sameLink(a, b *ifmodel.Interface) bool {
	na, nb := normalized(a), normalized(b)
	return proto.Equal(na.GetTap(), nb.GetTap()) && proto.Equal(na.GetAfpacket(), nb.GetAfpacket()) &&
		proto.Equal(na.GetVxlan(), nb.GetVxlan())
}

// validateInterface checks an interface value; the error names every bad field.
func validateInterface(key string, iface *ifmodel.Interface) error {
	var fields, problems []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	name, _ := ifmodel.ParseNameFromKey(key)
	switch {
	case iface.Name == "":
		bad("name", "must not be empty")
	case iface.Name != name:
		bad("name", "%q does not match the key %q", iface.Name, key)
	case len(iface.Name) > maxTagLen:
		bad("name", "%q is longer than the %d characters of a VPP tag", iface.Name, maxTagLen)
	case strings.Contains(iface.Name, "/address/") || strings.Contains(iface.Name, "/vrf/"):
		bad("name", "%q contains a reserved separator", iface.Name)
	}
	t := iface.Type
	switch t {
	case ifmodel.Interface_SOFTWARE_LOOPBACK, ifmodel.Interface_DPDK, ifmodel.Interface_VMXNET3_INTERFACE:
		if iface.Link != nil {
			bad("link", "type %s takes no link settings", t)
		}
	case ifmodel.Interface_TAP:
		if iface.Link != nil && iface.GetTap() == nil {
			bad("link", "type TAP takes tap link settings")
		}
		validateTap(iface.GetTap(), bad)
	case ifmodel.Interface_AF_PACKET:
		host := iface.GetAfpacket().GetHostIfName()
		switch {
		case iface.GetAfpacket() == nil:
			bad("link", "type AF_PACKET needs afpacket link settings")
		case host == "":
			bad("afpacket.host_if_name", "must not be empty")
		case len(host) > maxLinuxNameLen || strings.Contains(host, "/"):
			bad("afpacket.host_if_name", "%q is not a Linux interface name", host)
		}
	case ifmodel.Interface_VXLAN_TUNNEL:
		validateVxlan(iface.GetVxlan(), bad)
	default:
		bad("type", "%s is not a supported interface type", t)
	}
	if iface.PhysAddress != "" {
		if t == ifmodel.Interface_VXLAN_TUNNEL {
			bad("phys_address", "a VXLAN tunnel has no MAC address")
		} else if _, err := parseMAC(iface.PhysAddress); err != nil {
			bad("phys_address", "%v", err)
		}
	}
	seen := map[netip.Prefix]bool{}
	for _, s := range iface.IpAddresses {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			bad("ip_addresses", "%q is not an address in CIDR notation", s)
		case seen[p]:
			bad("ip_addresses", "%s is listed twice", s)
		}
		seen[p] = true
	}
	if u := iface.Unnumbered; u != nil {
		switch {
		case len(iface.IpAddresses) > 0:
			bad("unnumbered", "an unnumbered interface has no addresses of its own")
		case u.InterfaceWithIp == "":
			bad("unnumbered.interface_with_ip", "must not be empty")
		case u.InterfaceWithIp == iface.Name:
			bad("unnumbered.interface_with_ip", "an interface cannot borrow its own addresses")
		}
	}
	if iface.Mtu > maxMTU {
		bad("mtu", "%d is above the maximum %d", iface.Mtu, maxMTU)
	}
	if iface.RxMode != ifmodel.Interface_UNKNOWN {
		if _, known := ifmodel.Interface_RxMode_name[int32(iface.RxMode)]; !known {
			bad("rx_mode", "unknown mode %d", iface.RxMode)
		} else if t == ifmodel.Interface_SOFTWARE_LOOPBACK || t == ifmodel.Interface_VXLAN_TUNNEL {
			bad("rx_mode", "type %s has no receive queues", t)
		}
	}
	if iface.SetDhcpClient && t == ifmodel.Interface_VXLAN_TUNNEL {
		bad("set_dhcp_client", "a VXLAN tunnel cannot run a DHCP client")
	}
	if len(problems) == 0 {
		return nil
	}
	return kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
}

func validateTap(tap *ifmodel.TapLink, bad func(field, format string, args ...any)) {
	if tap == nil {
		return
	}
	if tap.Version != 0 && tap.Version != 2 {
		bad("tap.version", "only TAP version 2 is supported, got %d", tap.Version)
	}
	if len(tap.HostIfName) > maxLinuxNameLen || strings.Contains(tap.HostIfName, "/") {
		bad("tap.host_if_name", "%q is not a Linux interface name", tap.HostIfName)
	}
	rings := []struct {
		field string
		size  uint32
	}{{"tap.rx_ring_size", tap.RxRingSize}, {"tap.tx_ring_size", tap.TxRingSize}}
	for _, r := range rings {
		if r.size > maxTapRing || r.size&(r.size-1) != 0 {
			bad(r.field, "%d is not a power of 2 up to %d", r.size, maxTapRing)
		}
	}
}

func validateVxlan(v *ifmodel.VxlanLink, bad func(field, format string, args ...any)) {
	if v == nil {
		bad("link", "type VXLAN_TUNNEL needs vxlan link settings")
		return
	}
	src, errS := netip.ParseAddr(v.SrcAddress)
	dst, errD := netip.ParseAddr(v.DstAddress)
	if errS != nil {
		bad("vxlan.src_address", "%q is not an IP address", v.SrcAddress)
	}
	if errD != nil {
		bad("vxlan.dst_address", "%q is not an IP address", v.DstAddress)
	}
	if errS == nil && errD == nil {
		if src.Is4() != dst.Is4() {
			bad("vxlan.dst_address", "%s is not of the family of the source %s", dst, src)
		} else if src == dst {
			bad("vxlan.dst_address", "equals the source address")
		}
	}
	if v.Vni > maxVNI {
		bad("vxlan.vni", "%d does not fit 24 bits", v.Vni)
	}
}

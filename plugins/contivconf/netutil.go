package contivconf

import (
	"math/big"
	"net"
)

// addrBits returns the address length of n in bits (32 or 128).
func addrBits(n *net.IPNet) int {
	_, bits := n.Mask.Size()
	return bits
}

// prefixLen returns the prefix length of n.
func prefixLen(n *net.IPNet) int {
	ones, _ := n.Mask.Size()
	return ones
}

// family names the IP family of n.
func family(n *net.IPNet) string {
	if addrBits(n) == 128 {
		return "IPv6"
	}
	return "IPv4"
}

// ipFamily names the IP family of ip.
func ipFamily(ip net.IP) string {
	if ip.To4() != nil {
		return "IPv4"
	}
	return "IPv6"
}

// overlaps tells whether two networks share any address.
func overlaps(a, b *net.IPNet) bool {
	if addrBits(a) != addrBits(b) {
		return false
	}
	return a.Contains(b.IP) || b.Contains(a.IP)
}

// normalizeIP returns ip in its shortest form (4 bytes for IPv4).
func normalizeIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip.To16()
}

// ipToInt converts ip to an integer.
func ipToInt(ip net.IP) *big.Int {
	return new(big.Int).SetBytes(normalizeIP(ip))
}

// intToIP converts v to an IP of size bytes; v must fit.
func intToIP(v *big.Int, size int) net.IP {
	ip := make(net.IP, size)
	v.FillBytes(ip)
	return ip
}

// subnetAt returns block number index of size /newPrefix inside base (no bounds check:
// callers check that the block fits).
func subnetAt(base *net.IPNet, newPrefix int, index int64) *net.IPNet {
	bits := addrBits(base)
	offset := new(big.Int).Lsh(big.NewInt(index), uint(bits-newPrefix))
	start := new(big.Int).Add(ipToInt(base.IP), offset)
	return &net.IPNet{IP: intToIP(start, bits/8), Mask: net.CIDRMask(newPrefix, bits)}
}

// hostAt returns the address at offset from the start of n (negative: from its end, -1
// being the last address of n).
func hostAt(n *net.IPNet, offset int64) net.IP {
	bits := addrBits(n)
	base := ipToInt(n.IP.Mask(n.Mask))
	if offset < 0 {
		size := new(big.Int).Lsh(big.NewInt(1), uint(bits-prefixLen(n)))
		base.Add(base, size)
	}
	return intToIP(base.Add(base, big.NewInt(offset)), bits/8)
}

// cloneIP returns a copy of ip (nil stays nil).
func cloneIP(ip net.IP) net.IP {
	if ip == nil {
		return nil
	}
	return append(net.IP(nil), ip...)
}

// cloneIPNet returns a deep copy of n (nil stays nil).
func cloneIPNet(n *net.IPNet) *net.IPNet {
	if n == nil {
		return nil
	}
	return &net.IPNet{IP: cloneIP(n.IP), Mask: append(net.IPMask(nil), n.Mask...)}
}

// ipNetString prints n, or "" for nil.
func ipNetString(n *net.IPNet) string {
	if n == nil {
		return ""
	}
	return n.String()
}

// ipString prints ip, or "" for nil.
func ipString(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}

// clone returns a deep copy of the list.
func (ips IPsWithNetworks) clone() IPsWithNetworks {
	if ips == nil {
		return nil
	}
	out := make(IPsWithNetworks, len(ips))
	for i, ip := range ips {
		out[i] = &IPWithNetwork{Address: cloneIP(ip.Address), Network: cloneIPNet(ip.Network)}
	}
	return out
}

// clone returns a deep copy of the list.
func (ifs OtherInterfaces) clone() OtherInterfaces {
	if ifs == nil {
		return nil
	}
	out := make(OtherInterfaces, len(ifs))
	for i, oif := range ifs {
		out[i] = &OtherInterfaceConfig{InterfaceName: oif.InterfaceName, UseDHCP: oif.UseDHCP, IPs: oif.IPs.clone()}
	}
	return out
}

// clone returns a deep copy of the IPAM configuration.
func (c *IPAMConfig) clone() *IPAMConfig {
	out := *c
	out.ContivCIDR = cloneIPNet(c.ContivCIDR)
	out.FamilyPlan = c.FamilyPlan.clone()
	out.DefaultGateway = cloneIP(c.DefaultGateway)
	if c.DualStackIPv6 != nil {
		v6 := c.DualStackIPv6.clone()
		out.DualStackIPv6 = &v6
	}
	s := &out.SRv6
	for _, p := range []**net.IPNet{
		&s.ServicePolicyBSIDSubnetCIDR, &s.ServicePodLocalSIDSubnetCIDR,
		&s.ServiceHostLocalSIDSubnetCIDR, &s.ServiceNodeLocalSIDSubnetCIDR,
		&s.NodeToNodePodLocalSIDSubnetCIDR, &s.NodeToNodeHostLocalSIDSubnetCIDR,
		&s.NodeToNodePodPolicySIDSubnetCIDR, &s.NodeToNodeHostPolicySIDSubnetCIDR,
	} {
		*p = cloneIPNet(*p)
	}
	return &out
}

// clone returns a copy of j that shares nothing with it.
func (j IPAMConfigForJSON) clone() IPAMConfigForJSON {
	if j.IPv6 != nil {
		v6 := *j.IPv6
		j.IPv6 = &v6
	}
	return j
}

// clone returns a copy of fp that shares no network with it.
func (fp FamilyPlan) clone() FamilyPlan {
	for _, n := range []**net.IPNet{&fp.ServiceCIDR, &fp.PodSubnetCIDR, &fp.VPPHostSubnetCIDR, &fp.NodeInterconnectCIDR, &fp.VxlanCIDR} {
		*n = cloneIPNet(*n)
	}
	return fp
}

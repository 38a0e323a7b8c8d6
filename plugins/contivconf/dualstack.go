package contivconf

import (
	"net"
)

// dropIPv4DefaultsIfIPv6Only clears the IPv4 defaults of the address plan when the file
// sets ipamConfig.ipv6 and none of the top-level address-plan keys (contivCIDR,
// serviceCIDR, podSubnetCIDR, podSubnetOneNodePrefixLen, vppHostSubnetCIDR,
// vppHostSubnetOneNodePrefixLen, nodeInterconnectCIDR, vxlanCIDR): "only IPv6 keys" is
// a single-stack IPv6 cluster, not a dual-stack one with the default IPv4 ranges. load
// parses the same file again onto its argument; the keys the file sets are those it
// fills on a Config whose plan keys are empty.
func (c *Config) dropIPv4DefaultsIfIPv6Only(load func(*Config) error) error {
	if c.IPAMConfig.IPv6 == nil {
		return nil
	}
	probe := DefaultConfig()
	probe.IPAMConfig = IPAMConfigForJSON{}
	if err := load(probe); err != nil {
		return err
	}
	if probe.IPAMConfig.IPv6 = nil; probe.IPAMConfig.topLevelPlanSet() {
		return nil
	}
	j := &c.IPAMConfig
	j.ServiceCIDR, j.PodSubnetCIDR, j.VPPHostSubnetCIDR, j.VxlanCIDR = "", "", "", ""
	j.PodSubnetOneNodePrefixLen, j.VPPHostSubnetOneNodePrefixLen = 0, 0
	return nil
}

// topLevelPlanSet tells whether any top-level address-plan key of j is set.
func (j *IPAMConfigForJSON) topLevelPlanSet() bool {
	return j.ContivCIDR != "" || j.ServiceCIDR != "" || j.PodSubnetCIDR != "" || j.PodSubnetOneNodePrefixLen != 0 ||
		j.VPPHostSubnetCIDR != "" || j.VPPHostSubnetOneNodePrefixLen != 0 || j.NodeInterconnectCIDR != "" || j.VxlanCIDR != ""
}

// ipv6Only tells whether j is a single-stack IPv6 plan written with ipamConfig.ipv6
// only (no IPv4 pod range at the top level).
func ipv6Only(j *IPAMConfigForJSON) bool {
	return j.IPv6 != nil && j.ContivCIDR == "" && j.PodSubnetCIDR == ""
}

// checkIPv6OnlyLeftovers reports the top-level ranges set beside an ipamConfig.ipv6
// that is the whole plan: without an IPv4 pod range they would configure nothing.
func (v *validator) checkIPv6OnlyLeftovers(j *IPAMConfigForJSON) {
	for _, f := range []struct{ key, value string }{
		{"serviceCIDR", j.ServiceCIDR}, {"vppHostSubnetCIDR", j.VPPHostSubnetCIDR},
		{"nodeInterconnectCIDR", j.NodeInterconnectCIDR}, {"vxlanCIDR", j.VxlanCIDR},
	} {
		if f.value != "" {
			v.fail("ipamConfig."+f.key, f.value, "is set, but ipamConfig.podSubnetCIDR is empty: a single-stack IPv6 "+
				"plan takes all its ranges from ipamConfig.ipv6 (or set ipamConfig.podSubnetCIDR for dual-stack)")
		}
	}
}

// ipv6CIDR parses a range of ipamConfig.ipv6: a canonical IPv6 CIDR that is neither
// IPv4-mapped (::ffff:0:0/96, which VPP and Linux treat as IPv4), link-local
// (fe80::/10) nor multicast (ff00::/8). It returns nil after a problem, and nil without
// one for an empty optional value.
func (v *validator) ipv6CIDR(key, value string, required bool, why string) *net.IPNet {
	if value == "" && required {
		v.fail(key, value, "must be set%s", why)
		return nil
	}
	n := v.cidr(key, value, false)
	if n == nil {
		return nil
	}
	_, mapped, _ := net.ParseCIDR("::ffff:0:0/96")
	switch {
	case family(n) != "IPv6":
		v.fail(key, value, "is IPv4: the keys of ipamConfig.ipv6 take IPv6 ranges")
	case overlaps(n, mapped):
		v.fail(key, value, "overlaps the IPv4-mapped range ::ffff:0:0/96, which is IPv4 on the wire")
	case n.IP.IsLinkLocalUnicast():
		v.fail(key, value, "is link-local (fe80::/10): every interface has its own, so it cannot be routed between nodes")
	case n.IP.IsMulticast():
		v.fail(key, value, "is multicast (ff00::/8)")
	default:
		return n
	}
	return nil
}

// checkIPv6Plan validates ipamConfig.ipv6 and returns its plan with the defaults
// applied (nil networks where a problem was reported), its effective JSON and its
// ranges for the overlap check.
func (v *validator) checkIPv6Plan(j *IPv6ConfigForJSON, vxlanUsed bool) (*FamilyPlan, *IPv6ConfigForJSON, []namedRange) {
	const p = "ipamConfig.ipv6."
	fp := &FamilyPlan{
		PodSubnetOneNodePrefixLen:     j.PodSubnetOneNodePrefixLen,
		VPPHostSubnetOneNodePrefixLen: j.VPPHostSubnetOneNodePrefixLen,
	}
	if fp.PodSubnetOneNodePrefixLen == 0 {
		fp.PodSubnetOneNodePrefixLen = DefaultIPv6PodSubnetOneNodePrefixLen
	}
	if fp.VPPHostSubnetOneNodePrefixLen == 0 {
		fp.VPPHostSubnetOneNodePrefixLen = DefaultIPv6VPPHostSubnetOneNodePrefixLen
	}
	fp.PodSubnetCIDR = v.ipv6CIDR(p+"podSubnetCIDR", j.PodSubnetCIDR, true, ": it is the IPv6 pod range")
	fp.VPPHostSubnetCIDR = v.ipv6CIDR(p+"vppHostSubnetCIDR", j.VPPHostSubnetCIDR, true,
		": pods with IPv6 need the IPv6 VPP-host interconnect")
	fp.VxlanCIDR = v.ipv6CIDR(p+"vxlanCIDR", j.VxlanCIDR, vxlanUsed,
		" for the VXLAN overlay (useNoOverlay and useSRv6Interconnect are off): IPv6 between nodes needs the BVIs' IPv6")
	fp.NodeInterconnectCIDR = v.ipv6CIDR(p+"nodeInterconnectCIDR", j.NodeInterconnectCIDR, false, "")
	fp.ServiceCIDR = v.ipv6CIDR(p+"serviceCIDR", j.ServiceCIDR, false, "")
	v.checkOneNodePrefix(p+"podSubnetOneNodePrefixLen", fp.PodSubnetOneNodePrefixLen,
		"ipv6.podSubnetCIDR", fp.PodSubnetCIDR, podSubnetMinHostBits,
		"leaves no room for the gateway, the NAT loopback and a pod")
	v.checkOneNodePrefix(p+"vppHostSubnetOneNodePrefixLen", fp.VPPHostSubnetOneNodePrefixLen,
		"ipv6.vppHostSubnetCIDR", fp.VPPHostSubnetCIDR, vppHostMinHostBits,
		"cannot hold the VPP (::1) and host (::2) addresses")

	eff := &IPv6ConfigForJSON{
		ServiceCIDR: ipNetString(fp.ServiceCIDR), PodSubnetCIDR: ipNetString(fp.PodSubnetCIDR),
		PodSubnetOneNodePrefixLen: fp.PodSubnetOneNodePrefixLen, VPPHostSubnetCIDR: ipNetString(fp.VPPHostSubnetCIDR),
		VPPHostSubnetOneNodePrefixLen: fp.VPPHostSubnetOneNodePrefixLen,
		NodeInterconnectCIDR:          ipNetString(fp.NodeInterconnectCIDR), VxlanCIDR: ipNetString(fp.VxlanCIDR),
	}
	ranges := []namedRange{
		{key: "ipv6.podSubnetCIDR", value: j.PodSubnetCIDR, net: fp.PodSubnetCIDR},
		{key: "ipv6.vppHostSubnetCIDR", value: j.VPPHostSubnetCIDR, net: fp.VPPHostSubnetCIDR},
		{key: "ipv6.serviceCIDR", value: j.ServiceCIDR, net: fp.ServiceCIDR},
		{key: "ipv6.vxlanCIDR", value: j.VxlanCIDR, net: fp.VxlanCIDR},
		{key: "ipv6.nodeInterconnectCIDR", value: j.NodeInterconnectCIDR, net: fp.NodeInterconnectCIDR},
	}
	return fp, eff, ranges
}

// checkDualStack checks the IPv6 plan against the IPv4 one (v4, the top-level ranges):
// the top-level ranges must be IPv4, and every IPv6 range must have room for every
// node ID the matching IPv4 range has room for, so that no node gets one family
// without the other. top names the key that decided the family of the top level.
func (v *validator) checkDualStack(j *IPAMConfigForJSON, v4, v6 *FamilyPlan, top *namedRange) {
	const p = "ipamConfig."
	if top != nil && family(top.net) == "IPv6" {
		v.fail(p+top.key, top.value, "is IPv6, but ipamConfig.ipv6 is set: with ipamConfig.ipv6 the top-level ranges "+
			"are the IPv4 half of a dual-stack plan (for single-stack IPv6 leave the top-level ranges out)")
		return
	}
	if j.UseExternalIPAM {
		v.fail(p+"useExternalIPAM", j.UseExternalIPAM, "is not supported with ipamConfig.ipv6 yet: "+
			"the external IPAM result gives one address per pod")
	}
	for _, c := range []struct {
		key          string
		v6Bits       int
		v4Key        string
		v4Bits, have int
	}{
		{"ipv6.podSubnetOneNodePrefixLen", nodeBits(v6.PodSubnetCIDR, v6.PodSubnetOneNodePrefixLen),
			"podSubnetCIDR cut into /podSubnetOneNodePrefixLen", nodeBits(v4.PodSubnetCIDR, v4.PodSubnetOneNodePrefixLen),
			int(v6.PodSubnetOneNodePrefixLen)},
		{"ipv6.vppHostSubnetOneNodePrefixLen", nodeBits(v6.VPPHostSubnetCIDR, v6.VPPHostSubnetOneNodePrefixLen),
			"vppHostSubnetCIDR cut into /vppHostSubnetOneNodePrefixLen", nodeBits(v4.VPPHostSubnetCIDR, v4.VPPHostSubnetOneNodePrefixLen),
			int(v6.VPPHostSubnetOneNodePrefixLen)},
	} {
		if c.v6Bits >= 0 && c.v4Bits >= 0 && c.v6Bits < min(c.v4Bits, 32) {
			v.fail(p+c.key, c.have, "leaves %d node-ID bits, fewer than the %d of %s: nodes with higher IDs "+
				"would get no IPv6 subnet", c.v6Bits, c.v4Bits, c.v4Key)
		}
	}
	for _, c := range []struct {
		key    string
		value  string
		v6, v4 *net.IPNet
	}{
		{"ipv6.vxlanCIDR", j.IPv6.VxlanCIDR, v6.VxlanCIDR, v4.VxlanCIDR},
		{"ipv6.nodeInterconnectCIDR", j.IPv6.NodeInterconnectCIDR, v6.NodeInterconnectCIDR, v4.NodeInterconnectCIDR},
	} {
		if c.v6 != nil && c.v4 != nil && hostBits(c.v6) < min(hostBits(c.v4), 32) {
			v.fail(p+c.key, c.value, "has %d host bits, fewer than the %d of its IPv4 range %s: nodes with higher IDs "+
				"would get no IPv6 address", hostBits(c.v6), hostBits(c.v4), c.v4)
		}
	}
}

// nodeBits returns the node-ID bits of a range cut into /perNode blocks, -1 when the
// range is missing or the cut is invalid (reported elsewhere).
func nodeBits(cluster *net.IPNet, perNode uint8) int {
	if cluster == nil || int(perNode) <= prefixLen(cluster) || int(perNode) > addrBits(cluster) {
		return -1
	}
	return int(perNode) - prefixLen(cluster)
}

// hostBits returns the number of host bits of n.
func hostBits(n *net.IPNet) int { return addrBits(n) - prefixLen(n) }

// checkOverlaps reports each range that overlaps one listed before it.
func (v *validator) checkOverlaps(ranges []namedRange) {
	for i := range ranges {
		for k := 0; k < i; k++ {
			a, b := ranges[k], ranges[i]
			if a.net != nil && b.net != nil && overlaps(a.net, b.net) {
				v.fail("ipamConfig."+b.key, b.value, "overlaps %s", a.describe())
			}
		}
	}
}

// setPrimary makes fp the plan of the top-level ranges of c (single-stack IPv6 written
// in ipamConfig.ipv6 only).
func (c *IPAMConfig) setPrimary(fp *FamilyPlan) { c.FamilyPlan = *fp }

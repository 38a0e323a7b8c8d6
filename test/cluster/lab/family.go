package lab

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// IPFamily is the lab's address families (Config.IPFamily).
type IPFamily string

// The lab's IP families.
const (
	// IPv4 is a single-stack IPv4 cluster (the default).
	IPv4 IPFamily = "ipv4"
	// DualStack is a dual-stack cluster, IPv4 primary: every node, pod and Service range
	// has an address of each family, IPv4 first.
	DualStack IPFamily = "dual"
	// IPv6 is a single-stack IPv6 cluster. Its nodes route the pod subnets over the node
	// network without VXLAN (contiv.conf useNoOverlay): VPP would carry VXLAN over an
	// IPv6 underlay, but vpp-sim does not simulate that (pkg/vppsim doc.go), so the
	// overlay of an IPv6-only node network cannot be tested here.
	IPv6 IPFamily = "ipv6"
)

// ParseIPFamily parses the name of an IPFamily ("" is IPv4).
func ParseIPFamily(s string) (IPFamily, error) {
	switch f := IPFamily(s); f {
	case "":
		return IPv4, nil
	case IPv4, DualStack, IPv6:
		return f, nil
	}
	return "", fmt.Errorf("IP family %q: use %s, %s or %s", s, IPv4, DualStack, IPv6)
}

// HasIPv4 and HasIPv6 tell whether the lab's nodes and pods have addresses of the family.
func (f IPFamily) HasIPv4() bool { return f != IPv6 }

// HasIPv6 tells whether the lab's nodes and pods have IPv6 addresses.
func (f IPFamily) HasIPv6() bool { return f == DualStack || f == IPv6 }

// The IPv6 ranges of the lab, beside the IPv4 ones of lab.go, node.go and
// controlplane.go. Each has room for every node ID its IPv4 counterpart has room for,
// as contiv.conf's validation requires of a dual-stack plan.
const (
	// NodeNetworkIPv6 is the IPv6 node interconnect (ipamConfig.ipv6.nodeInterconnectCIDR):
	// node N has host #N of it on its VPP NIC.
	NodeNetworkIPv6 = "fd00:168:16::/64"
	// ClientIPv6 and GatewayIPv6 are the external client's and the "internet"
	// namespace's IPv6 addresses on the node network.
	ClientIPv6  = "fd00:168:16::c8"
	GatewayIPv6 = "fd00:168:16::fe"
	// ServiceCIDRIPv6 is the IPv6 ClusterIP range (kube-apiserver's IPv6
	// --service-cluster-ip-range, ipamConfig.ipv6.serviceCIDR).
	ServiceCIDRIPv6 = "fd00:96::/112"
	// PodCIDR and PodCIDRIPv6 are the cluster's pod ranges (ipamConfig podSubnetCIDR,
	// kube-controller-manager --cluster-cidr) and PodCIDRNodeMask, PodCIDRNodeMaskIPv6
	// the size of one node's subnet of each.
	PodCIDR             = "10.1.0.0/16"
	PodCIDRNodeMask     = 24
	PodCIDRIPv6         = "fd00:10:1::/48"
	PodCIDRNodeMaskIPv6 = 64
	// vppHostCIDRIPv6 and vxlanCIDRIPv6 are the IPv6 VPP-host interconnects (one /112
	// per node) and VXLAN BVI range.
	vppHostCIDRIPv6 = "fd00:172:30::/96"
	vxlanCIDRIPv6   = "fd00:192:168:30::/64"
)

// nodeIPv6 is node ID's IPv6 on the node network: host #id of NodeNetworkIPv6, as the
// agent's IPAM gives it (ipamConfig.ipv6.nodeInterconnectCIDR).
func nodeIPv6(id uint32) net.IP {
	b := netip.MustParsePrefix(NodeNetworkIPv6).Addr().As16()
	b[12], b[13], b[14], b[15] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	return net.IP(b[:])
}

// serviceCIDRs is kube-apiserver's --service-cluster-ip-range for the families, the
// primary first.
func (f IPFamily) serviceCIDRs() string { return f.pick(ServiceCIDR, ServiceCIDRIPv6) }

// clusterCIDRs is kube-controller-manager's --cluster-cidr for the families.
func (f IPFamily) clusterCIDRs() string { return f.pick(PodCIDR, PodCIDRIPv6) }

// pick joins the IPv4 and the IPv6 value of the lab's families with a comma, IPv4 first.
func (f IPFamily) pick(v4, v6 string) string {
	var out []string
	if f.HasIPv4() {
		out = append(out, v4)
	}
	if f.HasIPv6() {
		out = append(out, v6)
	}
	return strings.Join(out, ",")
}

// controllerManagerFlags are kube-controller-manager's flags of the pod address plan,
// as a dual-stack kubeadm cluster has them: --cluster-cidr of each family and each
// family's node mask size. The lab runs no node-ipam-controller (--allocate-node-cidrs
// is off): Contiv's IPAM gives every node its subnets (by node ID), and the kubelet
// stand-in publishes them as the Node's podCIDRs; the flags state the same plan, so a
// controller reading them (and an operator reading the command line) sees contiv.conf's.
func (f IPFamily) controllerManagerFlags() []string {
	out := []string{"--cluster-cidr=" + f.clusterCIDRs()}
	switch f {
	case DualStack:
		out = append(out, fmt.Sprintf("--node-cidr-mask-size-ipv4=%d", PodCIDRNodeMask),
			fmt.Sprintf("--node-cidr-mask-size-ipv6=%d", PodCIDRNodeMaskIPv6))
	case IPv6:
		out = append(out, fmt.Sprintf("--node-cidr-mask-size=%d", PodCIDRNodeMaskIPv6))
	default:
		out = append(out, fmt.Sprintf("--node-cidr-mask-size=%d", PodCIDRNodeMask))
	}
	return out
}

// ipamConfigIPv6 is contiv.conf's ipamConfig.ipv6 section (indented under ipamConfig)
// for a lab with IPv6, "" without.
func (f IPFamily) ipamConfigIPv6() string {
	if !f.HasIPv6() {
		return ""
	}
	s := fmt.Sprintf(`  ipv6:
    serviceCIDR: %s
    podSubnetCIDR: %s
    podSubnetOneNodePrefixLen: %d
    vppHostSubnetCIDR: %s
    vppHostSubnetOneNodePrefixLen: 112
    nodeInterconnectCIDR: %s
`, ServiceCIDRIPv6, PodCIDRIPv6, PodCIDRNodeMaskIPv6, vppHostCIDRIPv6, NodeNetworkIPv6)
	if f != IPv6 { // the IPv6-only lab has no overlay (see IPv6)
		s += "    vxlanCIDR: " + vxlanCIDRIPv6 + "\n"
	}
	return s
}

// sortByFamily orders ips as kubelet orders a pod's or a node's IPs: the primary
// family's first (the cluster's first family: IPv4 unless single-stack IPv6).
func (f IPFamily) sortByFamily(ips []net.IP) []net.IP {
	var first, second []net.IP
	for _, ip := range ips {
		if (ip.To4() != nil) == f.HasIPv4() {
			first = append(first, ip)
		} else {
			second = append(second, ip)
		}
	}
	return append(first, second...)
}

package processor

import (
	"encoding/binary"
	"net"
	"slices"

	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// family is an IP family as an index of per-family arrays. kube-proxy runs one proxier
// per family, each with the Services' IPs and the EndpointSlices of its family only
// (pkg/proxy/servicechangetracker.go, endpointschangetracker.go); the processor
// classifies and selects per family the same way.
type family uint8

// The families, IPv4 first (a FlatPort lists the IPv4 backend groups first).
const (
	famIPv4 family = iota
	famIPv6
	numFamilies
)

// String names the family as Kubernetes does ("IPv4", "IPv6").
func (f family) String() string {
	if f == famIPv6 {
		return addressTypeIPv6
	}
	return addressTypeIPv4
}

// familyOf returns the family of an address.
func familyOf(a renderer.Address) family {
	if a.IsIPv4() {
		return famIPv4
	}
	return famIPv6
}

// familyOfIP returns the family of an IP (an IPv4-mapped IPv6 address is IPv4, as
// parseIP reads it).
func familyOfIP(ip net.IP) family {
	if ip.To4() != nil {
		return famIPv4
	}
	return famIPv6
}

// familyOfIPAM returns the index of an IPAM family.
func familyOfIPAM(f ipam.Family) family {
	if f == ipam.IPv6 {
		return famIPv6
	}
	return famIPv4
}

// familyNets are this node's networks of one IP family (nil: not configured).
type familyNets struct {
	serviceNet        *net.IPNet // the service CIDR; cluster IPs outside it are rejected
	podSubnetThisNode *net.IPNet
	podSubnetAllNodes *net.IPNet
}

// family returns the family of the networks (IPv4 when none is set).
func (f *familyNets) family() family {
	for _, n := range []*net.IPNet{f.podSubnetAllNodes, f.podSubnetThisNode, f.serviceNet} {
		if n != nil {
			return familyOfIP(n.IP)
		}
	}
	return famIPv4
}

// nodeContext is what the processor knows about this node while it classifies
// backends. It is read from IPAM and IPNet at every resync and every Kubernetes
// change, so that classifying thousands of backends costs no calls to them.
type nodeContext struct {
	// nets are the networks of each family: the primary family's from the IPAM's
	// getters of the IPv4 era (PodSubnetThisNode, ...), the other family's of a
	// dual-stack cluster from ThisNodeAddresses.
	nets [numFamilies]familyNets
	// nodeIPs are this node's IPs: ipnet's node IP (primary family) and, on a
	// dual-stack cluster, the IPAM plan's node IP of the other family.
	nodeIPs []net.IP
	hostIPs []net.IP

	// The same as numbers for the IPv4 family (prepare).
	service4, thisNode4, allNodes4 net4
	nodeIP4, hostIPs4              []uint32
}

// readNodeContext reads this node's networks and addresses of every family from the
// IPAM and ipnet.
func readNodeContext(ipm ipam.API, ipn IPNet) nodeContext {
	primary := familyNets{
		serviceNet:        ipm.ServiceNetwork(),
		podSubnetThisNode: ipm.PodSubnetThisNode(),
		podSubnetAllNodes: ipm.PodSubnetAllNodes(),
	}
	n := nodeContext{hostIPs: ipn.GetHostIPs()}
	if nodeIP, _ := ipn.GetNodeIP(); nodeIP != nil {
		n.nodeIPs = append(n.nodeIPs, nodeIP)
	}
	pf := primary.family()
	n.nets[pf] = primary
	for _, f := range ipm.Families() {
		fi := familyOfIPAM(f)
		if fi == pf {
			continue
		}
		a := ipm.ThisNodeAddresses(f)
		if a == nil {
			continue
		}
		n.nets[fi] = familyNets{serviceNet: a.ServiceNetwork, podSubnetThisNode: a.PodSubnet, podSubnetAllNodes: a.PodSubnetAllNodes}
		if a.NodeIP != nil {
			n.nodeIPs = append(n.nodeIPs, a.NodeIP)
		}
	}
	return n
}

// net4 is an IPv4 network as numbers; ok is false when the network is not IPv4.
type net4 struct {
	addr, mask uint32
	ok         bool
}

// newNet4 returns the IPv4 network of n, the way net.IPNet.Contains sees it.
func newNet4(n *net.IPNet) net4 {
	if n == nil {
		return net4{}
	}
	ip := n.IP.To4()
	mask := n.Mask
	if len(mask) == net.IPv6len {
		mask = mask[12:]
	}
	if ip == nil || len(mask) != net.IPv4len {
		return net4{}
	}
	m := binary.BigEndian.Uint32(mask)
	return net4{addr: binary.BigEndian.Uint32(ip) & m, mask: m, ok: true}
}

func (n net4) contains(v4 uint32) bool { return n.ok && v4&n.mask == n.addr }

// appendV4 appends the IPv4 addresses among ips as numbers.
func appendV4(list []uint32, ips ...net.IP) []uint32 {
	for _, ip := range ips {
		if ip4 := ip.To4(); ip4 != nil {
			list = append(list, binary.BigEndian.Uint32(ip4))
		}
	}
	return list
}

// prepare computes the numeric forms of the IPv4 networks and addresses.
func (n *nodeContext) prepare() {
	v4 := &n.nets[famIPv4]
	n.service4 = newNet4(v4.serviceNet)
	n.thisNode4, n.allNodes4 = newNet4(v4.podSubnetThisNode), newNet4(v4.podSubnetAllNodes)
	n.nodeIP4 = appendV4(nil, n.nodeIPs...)
	n.hostIPs4 = appendV4(nil, n.hostIPs...)
}

// serviceNetOf returns the service CIDR of the address's family; checked is false when
// no family has one (cluster IPs are then not checked).
func (n *nodeContext) serviceNetOf(a renderer.Address) (serviceNet *net.IPNet, checked bool) {
	for f := range n.nets {
		checked = checked || n.nets[f].serviceNet != nil
	}
	return n.nets[familyOf(a)].serviceNet, checked
}

// inServiceNet tells whether the address is in the service CIDR of its family.
func (n *nodeContext) inServiceNet(a renderer.Address) bool {
	if v4, ok := a.IPv4(); ok {
		return n.service4.contains(v4)
	}
	sn := n.nets[famIPv6].serviceNet
	return sn != nil && sn.Contains(a.IP())
}

// classifyAddress is classify for an Address: IPv4 addresses are compared as numbers.
func (n *nodeContext) classifyAddress(a renderer.Address) (local, hostNetwork bool) {
	v4, ok := a.IPv4()
	if !ok {
		return n.classify(a.IP())
	}
	if n.allNodes4.contains(v4) {
		return n.thisNode4.contains(v4), false
	}
	if n.thisNode4.contains(v4) {
		return true, false
	}
	if slices.Contains(n.nodeIP4, v4) || slices.Contains(n.hostIPs4, v4) {
		return true, true
	}
	return false, true
}

// equal tells whether two contexts classify every address the same way.
func (n *nodeContext) equal(o *nodeContext) bool {
	sameNet := func(a, b *net.IPNet) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.IP.Equal(b.IP) && slices.Equal(a.Mask, b.Mask)
	}
	for f := range n.nets {
		a, b := &n.nets[f], &o.nets[f]
		if !sameNet(a.serviceNet, b.serviceNet) || !sameNet(a.podSubnetThisNode, b.podSubnetThisNode) ||
			!sameNet(a.podSubnetAllNodes, b.podSubnetAllNodes) {
			return false
		}
	}
	return slices.EqualFunc(n.nodeIPs, o.nodeIPs, net.IP.Equal) && slices.EqualFunc(n.hostIPs, o.hostIPs, net.IP.Equal)
}

// classify tells whether an endpoint runs on this node and whether it lies outside
// the pod network, against the networks of the IP's family. A pod IP is local when
// it is in this node's pod subnet; an address outside the cluster's pod subnet is a
// host-network endpoint, local when it is one of this node's IPs or host IPs.
func (n *nodeContext) classify(ip net.IP) (local, hostNetwork bool) {
	nets := &n.nets[familyOfIP(ip)]
	if nets.podSubnetAllNodes != nil && nets.podSubnetAllNodes.Contains(ip) {
		return nets.podSubnetThisNode != nil && nets.podSubnetThisNode.Contains(ip), false
	}
	if nets.podSubnetThisNode != nil && nets.podSubnetThisNode.Contains(ip) {
		return true, false // pod subnet outside the cluster range (external IPAM)
	}
	if slices.ContainsFunc(n.nodeIPs, ip.Equal) || slices.ContainsFunc(n.hostIPs, ip.Equal) {
		return true, true
	}
	return false, true
}

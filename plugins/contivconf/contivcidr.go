package contivconf

import (
	"fmt"
	"net"
)

// Layout of ipamConfig.contivCIDR. With L address bits, the range is cut into:
//
//	block (L-16 prefix) #0        pod subnet,       per node /(L-7)   (IPv4: x.y.0.0/16, /25)
//	block (L-16 prefix) #1        VPP-host subnet,  per node /(L-7)
//	block (L-9 prefix)  #256      node interconnect (starts right after the two blocks above)
//	block (L-9 prefix)  #257      VXLAN
//
// so the range needs at least 18 host bits.
const (
	contivCIDRMinHostBits   = 18
	contivCIDRBigBlockBits  = 16 // host bits of the pod and VPP-host blocks
	contivCIDRNodeBits      = 7  // host bits of one node's pod / VPP-host subnet
	contivCIDRSmallBlockBit = 9  // host bits of the node-interconnect and VXLAN blocks
	contivCIDRInterconnectN = 256
	contivCIDRVxlanN        = 257
)

// ContivCIDRSubnets are the subnets that DissectContivCIDR carves from contivCIDR.
type ContivCIDRSubnets struct {
	PodSubnetCIDR                 *net.IPNet
	PodSubnetOneNodePrefixLen     uint8
	VPPHostSubnetCIDR             *net.IPNet
	VPPHostSubnetOneNodePrefixLen uint8
	// NodeInterconnectCIDR is used only when nodeInterconnectCIDR is not configured and
	// nodeInterconnectDHCP is off.
	NodeInterconnectCIDR *net.IPNet
	VxlanCIDR            *net.IPNet
}

// DissectContivCIDR carves the pod, VPP-host, node-interconnect and VXLAN subnets out of
// contivCIDR (see the layout above). The range must have at least 18 host bits.
func DissectContivCIDR(contivCIDR *net.IPNet) (*ContivCIDRSubnets, error) {
	if contivCIDR == nil {
		return nil, fmt.Errorf("dissect contivCIDR: no range given")
	}
	if reason := contivCIDRSizeProblem(contivCIDR); reason != "" {
		return nil, fmt.Errorf("dissect contivCIDR %s: %s", contivCIDR, reason)
	}
	base := &net.IPNet{IP: normalizeIP(contivCIDR.IP.Mask(contivCIDR.Mask)), Mask: contivCIDR.Mask}
	bits := addrBits(base)
	bigPrefix := bits - contivCIDRBigBlockBits
	smallPrefix := bits - contivCIDRSmallBlockBit
	nodePrefix := uint8(bits - contivCIDRNodeBits)
	return &ContivCIDRSubnets{
		PodSubnetCIDR:                 subnetAt(base, bigPrefix, 0),
		PodSubnetOneNodePrefixLen:     nodePrefix,
		VPPHostSubnetCIDR:             subnetAt(base, bigPrefix, 1),
		VPPHostSubnetOneNodePrefixLen: nodePrefix,
		NodeInterconnectCIDR:          subnetAt(base, smallPrefix, contivCIDRInterconnectN),
		VxlanCIDR:                     subnetAt(base, smallPrefix, contivCIDRVxlanN),
	}, nil
}

// contivCIDRSizeProblem explains why n is too small for contivCIDR, or returns "".
func contivCIDRSizeProblem(n *net.IPNet) string {
	bits := addrBits(n)
	if bits-prefixLen(n) < contivCIDRMinHostBits {
		return fmt.Sprintf("is too small: contivCIDR needs at least %d host bits (%s: at most /%d)",
			contivCIDRMinHostBits, family(n), bits-contivCIDRMinHostBits)
	}
	return ""
}

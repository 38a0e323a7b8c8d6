package ipam

import (
	"bytes"
	"fmt"
	"math/big"
	"net"

	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
)

// addressPlan is the pure arithmetic of the cluster address plan (docs/IPAM.md, "The rules"): which
// subnets and addresses belong to the node with ID N. Every node computes the same
// answers from the same contiv.conf, which is what lets nodes route to each other
// without asking. It keeps no state besides the plan of one IP family of the effective
// ipamConfig (contivCIDR is already dissected by contivconf); a dual-stack node has
// one addressPlan per family.
//
//	pod subnet of N         podSubnetCIDR cut into /podSubnetOneNodePrefixLen, block N
//	VPP-host subnet of N    vppHostSubnetCIDR cut into /vppHostSubnetOneNodePrefixLen, block N
//	node IP of N            host N of nodeInterconnectCIDR, +1 if the static GW <= it
//	VXLAN IP of N           host N of vxlanCIDR
//
// With b node bits, IDs 1..2^b-1 are blocks 1..2^b-1 and ID 2^b wraps to block 0;
// larger IDs are out of range. Host number 0 (the network address) is never a node IP.
type addressPlan struct {
	fp *contivconf.FamilyPlan
}

// nodeIndex maps a node ID to its index in a range with the given number of node bits:
// the ID itself, except that 2^bits wraps to 0.
func nodeIndex(nodeID uint32, bits int) (uint64, error) {
	if bits >= 32 {
		return uint64(nodeID), nil // every uint32 is below 2^bits
	}
	limit := uint64(1) << uint(bits)
	switch id := uint64(nodeID); {
	case id < limit:
		return id, nil
	case id == limit:
		return 0, nil
	}
	return 0, fmt.Errorf("%w: nodeID %d is not in 1-%d", ErrNodeIDOutOfRange, nodeID, limit)
}

// nodeSubnet cuts cluster into /perNodePrefix blocks and returns the block of nodeID.
func nodeSubnet(cluster *net.IPNet, perNodePrefix uint8, nodeID uint32) (*net.IPNet, error) {
	if cluster == nil {
		return nil, fmt.Errorf("no cluster range is configured")
	}
	cp, ab := prefixLen(cluster), addrBits(cluster)
	switch {
	case int(perNodePrefix) <= cp:
		return nil, fmt.Errorf("the prefix length per node /%d must be longer than the prefix of %s",
			perNodePrefix, cluster)
	case int(perNodePrefix) > ab:
		return nil, fmt.Errorf("the prefix length per node /%d is longer than an address of %s",
			perNodePrefix, cluster)
	}
	idx, err := nodeIndex(nodeID, int(perNodePrefix)-cp)
	if err != nil {
		return nil, fmt.Errorf("%s cut into /%d per node: %w", cluster, perNodePrefix, err)
	}
	return subnetAt(cluster, int(perNodePrefix), idx), nil
}

// nodeHost returns host number nodeID of n (ID 2^hostbits wraps to host 0, which no
// node may have), together with its host number.
func nodeHost(n *net.IPNet, nodeID uint32) (net.IP, uint64, error) {
	idx, err := nodeIndex(nodeID, hostBits(n))
	if err != nil {
		return nil, 0, fmt.Errorf("hosts of %s: %w", n, err)
	}
	if idx == 0 {
		return nil, 0, fmt.Errorf("%w %d: it maps to host 0, the network address of %s",
			ErrNoAddressForNodeID, nodeID, networkOf(n))
	}
	return hostAt(n, idx), idx, nil
}

// checkNodeAddress rejects an address a node cannot use: outside n, or the IPv4
// broadcast address of n (ranges of at least 4 addresses).
func checkNodeAddress(n *net.IPNet, nodeID uint32, ip net.IP, what string) error {
	if !n.Contains(ip) {
		return fmt.Errorf("%w %d: %s %s is outside %s", ErrNoAddressForNodeID, nodeID, what, ip, networkOf(n))
	}
	if len(ip) == net.IPv4len && hostBits(n) >= 2 && ip.Equal(lastAddr(n)) {
		return fmt.Errorf("%w %d: %s %s is the broadcast address of %s",
			ErrNoAddressForNodeID, nodeID, what, ip, networkOf(n))
	}
	return nil
}

// podSubnet returns the pod subnet of the node with the given ID.
func (pl addressPlan) podSubnet(nodeID uint32) (*net.IPNet, error) {
	n, err := nodeSubnet(pl.fp.PodSubnetCIDR, pl.fp.PodSubnetOneNodePrefixLen, nodeID)
	if err != nil {
		return nil, fmt.Errorf("pod subnet of nodeID %d: %w", nodeID, err)
	}
	return n, nil
}

// hostSubnet returns the VPP-host interconnect subnet of the node with the given ID.
func (pl addressPlan) hostSubnet(nodeID uint32) (*net.IPNet, error) {
	n, err := nodeSubnet(pl.fp.VPPHostSubnetCIDR, pl.fp.VPPHostSubnetOneNodePrefixLen, nodeID)
	if err != nil {
		return nil, fmt.Errorf("VPP-host subnet of nodeID %d: %w", nodeID, err)
	}
	return n, nil
}

// nodeIP returns the node interconnect IP of the node with the given ID and the
// interconnect network. gw is the static default gateway (nil: none); when it lies in
// the interconnect network at or below the computed address, the address moves up by
// one so that no node takes the gateway's address.
func (pl addressPlan) nodeIP(nodeID uint32, gw net.IP) (net.IP, *net.IPNet, error) {
	n := pl.fp.NodeInterconnectCIDR
	if n == nil {
		return nil, nil, fmt.Errorf("node IP of nodeID %d: nodeInterconnectCIDR is not configured "+
			"(node IPs come from DHCP or the node configuration)", nodeID)
	}
	ip, _, err := nodeHost(n, nodeID)
	if err != nil {
		return nil, nil, fmt.Errorf("node IP of nodeID %d: %w", nodeID, err)
	}
	what := "node IP"
	if gw = normalizeIP(gw); gw != nil && len(gw) == len(ip) && n.Contains(gw) && bytes.Compare(gw, ip) <= 0 {
		ip = ipAdd(ip, 1)
		what = fmt.Sprintf("node IP (moved up past the default gateway %s)", gw)
	}
	if err := checkNodeAddress(n, nodeID, ip, what); err != nil {
		return nil, nil, fmt.Errorf("node IP of nodeID %d: %w", nodeID, err)
	}
	return ip, networkOf(n), nil
}

// vxlanIP returns the VXLAN BVI IP of the node with the given ID and the VXLAN network.
func (pl addressPlan) vxlanIP(nodeID uint32) (net.IP, *net.IPNet, error) {
	n := pl.fp.VxlanCIDR
	if n == nil {
		return nil, nil, fmt.Errorf("VXLAN IP of nodeID %d: vxlanCIDR is not configured", nodeID)
	}
	ip, _, err := nodeHost(n, nodeID)
	if err == nil {
		err = checkNodeAddress(n, nodeID, ip, "VXLAN IP")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("VXLAN IP of nodeID %d: %w", nodeID, err)
	}
	return ip, networkOf(n), nil
}

// nodeIDFromPodIP returns the ID of the node whose pod subnet holds ip: the node part
// of the address ((ip XOR cluster prefix) >> host bits), where block 0 belongs to the
// node with ID 2^nodebits (the ID that wraps to it).
func (pl addressPlan) nodeIDFromPodIP(ip net.IP) (uint32, error) {
	cluster := pl.fp.PodSubnetCIDR
	v := normalizeIP(ip)
	if cluster == nil || v == nil || !cluster.Contains(v) {
		return 0, fmt.Errorf("node ID of pod IP %s: it is not in the pod subnet %s", ip, netString(cluster))
	}
	per, cp := int(pl.fp.PodSubnetOneNodePrefixLen), prefixLen(cluster)
	if per <= cp || per > addrBits(cluster) {
		return 0, fmt.Errorf("node ID of pod IP %s: the prefix length per node /%d does not fit %s", ip, per, cluster)
	}
	x := new(big.Int).Xor(new(big.Int).SetBytes(v), new(big.Int).SetBytes(networkOf(cluster).IP))
	x.Rsh(x, uint(len(v)*8-per))
	if !x.IsUint64() || x.Uint64() > uint64(^uint32(0)) {
		return 0, fmt.Errorf("node ID of pod IP %s: node part %s does not fit 32 bits", ip, x)
	}
	id := x.Uint64()
	if id == 0 {
		nodeBits := per - cp
		if nodeBits >= 32 {
			return 0, fmt.Errorf("node ID of pod IP %s: it is in block 0 of %s, which belongs to no node", ip, cluster)
		}
		id = uint64(1) << uint(nodeBits)
	}
	return uint32(id), nil
}

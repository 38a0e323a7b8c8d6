package ipam

import (
	"encoding/binary"
	"math/big"
	"math/bits"
	"net"
)

// This file holds the address arithmetic the plan and the allocator are built on. All
// functions work for IPv4 (4-byte form) and IPv6 (16-byte form) alike.

// normalizeIP returns ip in its shortest form (4 bytes for IPv4), nil if ip is invalid.
func normalizeIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip.To16()
}

// addrBits returns the address length of n in bits (32 or 128).
func addrBits(n *net.IPNet) int {
	_, b := n.Mask.Size()
	return b
}

// prefixLen returns the prefix length of n.
func prefixLen(n *net.IPNet) int {
	ones, _ := n.Mask.Size()
	return ones
}

// hostBits returns the number of host bits of n.
func hostBits(n *net.IPNet) int {
	ones, b := n.Mask.Size()
	return b - ones
}

// networkOf returns n in canonical form: the network address (normalised) and the mask.
func networkOf(n *net.IPNet) *net.IPNet {
	ip := normalizeIP(n.IP)
	mask := n.Mask
	if len(mask) != len(ip) {
		mask = net.CIDRMask(prefixLen(n), len(ip)*8)
	}
	return &net.IPNet{IP: ip.Mask(mask), Mask: append(net.IPMask(nil), mask...)}
}

// subnetAt returns block number index of prefix length newPrefix inside cluster (the
// caller checks that the block fits).
func subnetAt(cluster *net.IPNet, newPrefix int, index uint64) *net.IPNet {
	base := networkOf(cluster)
	size := len(base.IP)
	offset := new(big.Int).Lsh(new(big.Int).SetUint64(index), uint(size*8-newPrefix))
	start := new(big.Int).Add(new(big.Int).SetBytes(base.IP), offset)
	ip := make(net.IP, size)
	start.FillBytes(ip)
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(newPrefix, size*8)}
}

// ipAdd returns ip + off; the sum wraps around the address space, callers bound it.
func ipAdd(ip net.IP, off uint64) net.IP {
	out := append(net.IP(nil), ip...)
	carry := off
	for i := len(out) - 1; i >= 0 && carry != 0; i-- {
		sum := uint64(out[i]) + carry&0xff
		out[i] = byte(sum)
		carry = carry>>8 + sum>>8
	}
	return out
}

// ipDec returns ip - 1 (wrapping below zero).
func ipDec(ip net.IP) net.IP {
	out := append(net.IP(nil), ip...)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]--
		if out[i] != 0xff {
			break
		}
	}
	return out
}

// hostAt returns the address at offset off from the start of n.
func hostAt(n *net.IPNet, off uint64) net.IP {
	return ipAdd(networkOf(n).IP, off)
}

// lastAddr returns the last address of n (the broadcast address for IPv4).
func lastAddr(n *net.IPNet) net.IP {
	base := networkOf(n)
	out := make(net.IP, len(base.IP))
	for i := range out {
		out[i] = base.IP[i] | ^base.Mask[i]
	}
	return out
}

// ipOffset returns ip - base when ip is not below base and the difference fits 64 bits.
// Both must have the same length (use normalizeIP).
func ipOffset(base, ip net.IP) (uint64, bool) {
	if len(base) != len(ip) {
		return 0, false
	}
	if len(ip) == net.IPv4len {
		b, v := binary.BigEndian.Uint32(base), binary.BigEndian.Uint32(ip)
		if v < b {
			return 0, false
		}
		return uint64(v - b), true
	}
	lo, borrow := bits.Sub64(binary.BigEndian.Uint64(ip[8:]), binary.BigEndian.Uint64(base[8:]), 0)
	hi, borrow := bits.Sub64(binary.BigEndian.Uint64(ip[:8]), binary.BigEndian.Uint64(base[:8]), borrow)
	if borrow != 0 || hi != 0 {
		return 0, false
	}
	return lo, true
}

// fullMask returns the host mask (/32 or /128) for ip.
func fullMask(ip net.IP) net.IPMask {
	return net.CIDRMask(len(ip)*8, len(ip)*8)
}

// hostNet returns ip as a host network (/32 or /128).
func hostNet(ip net.IP) *net.IPNet {
	ip = normalizeIP(ip)
	return &net.IPNet{IP: ip, Mask: fullMask(ip)}
}

// cloneIP returns a copy of ip (nil stays nil).
func cloneIP(ip net.IP) net.IP {
	if ip == nil {
		return nil
	}
	return append(net.IP(nil), ip...)
}

// cloneNet returns a deep copy of n (nil stays nil).
func cloneNet(n *net.IPNet) *net.IPNet {
	if n == nil {
		return nil
	}
	return &net.IPNet{IP: cloneIP(n.IP), Mask: append(net.IPMask(nil), n.Mask...)}
}

// sameNet tells whether a and b are the same network (both nil counts as the same).
func sameNet(a, b *net.IPNet) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.String() == b.String()
}

// netString prints n, or "<none>" for nil.
func netString(n *net.IPNet) string {
	if n == nil {
		return "<none>"
	}
	return n.String()
}

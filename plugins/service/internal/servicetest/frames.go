package servicetest

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// IP protocol numbers of the frames built here.
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// L4Frame builds an Ethernet frame with an IPv4 or IPv6 (by the addresses) UDP
// datagram or TCP SYN (no L4 checksum) from src:sport to dst:dport.
func L4Frame(proto uint8, dstMAC, srcMAC [6]byte, src string, sport uint16, dst string, dport uint16) []byte {
	payload := []byte("query")
	l4len := 8 + len(payload)
	if proto == ProtoTCP {
		l4len = 20
	}
	s, d := netip.MustParseAddr(src), netip.MustParseAddr(dst)
	hdr, etype := 20, uint16(0x0800)
	if s.Is6() {
		hdr, etype = 40, 0x86dd
	}
	f := make([]byte, 14+hdr+l4len)
	copy(f[0:6], dstMAC[:])
	copy(f[6:12], srcMAC[:])
	binary.BigEndian.PutUint16(f[12:14], etype)
	ip := f[14:]
	if s.Is6() {
		ip[0], ip[6], ip[7] = 0x60, proto, 64
		binary.BigEndian.PutUint16(ip[4:6], uint16(l4len))
		s16, d16 := s.As16(), d.As16()
		copy(ip[8:24], s16[:])
		copy(ip[24:40], d16[:])
	} else {
		ip[0], ip[8], ip[9] = 0x45, 64, proto
		binary.BigEndian.PutUint16(ip[2:4], uint16(len(ip)))
		s4, d4 := s.As4(), d.As4()
		copy(ip[12:16], s4[:])
		copy(ip[16:20], d4[:])
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(ip[i : i+2]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(ip[10:12], ^uint16(sum))
	}
	l4 := ip[hdr:]
	binary.BigEndian.PutUint16(l4[0:2], sport)
	binary.BigEndian.PutUint16(l4[2:4], dport)
	if proto == ProtoTCP {
		l4[12], l4[13] = 5<<4, 0x02 // data offset 5 words, SYN
		binary.BigEndian.PutUint16(l4[14:16], 64240)
		return f
	}
	binary.BigEndian.PutUint16(l4[4:6], uint16(len(l4)))
	copy(l4[8:], payload)
	return f
}

// Flow describes an IPv4 or IPv6 TCP or UDP frame as "proto src:sport -> dst:dport"
// ("" for any other frame).
func Flow(frame []byte) string {
	if len(frame) < 14+20+4 {
		return ""
	}
	ip := frame[14:]
	var proto uint8
	var src, dst netip.Addr
	var l4 []byte
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800:
		proto, l4 = ip[9], ip[int(ip[0]&0x0f)*4:]
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	case 0x86dd:
		if len(ip) < 40+4 {
			return ""
		}
		proto, l4 = ip[6], ip[40:]
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
	default:
		return ""
	}
	if proto != ProtoTCP && proto != ProtoUDP {
		return ""
	}
	name := "tcp"
	if proto == ProtoUDP {
		name = "udp"
	}
	return fmt.Sprintf("%s %s -> %s", name, netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4[0:2])),
		netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:4])))
}

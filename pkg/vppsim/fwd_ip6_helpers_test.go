package vppsim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// IPv6 packet builders and decoders for the IPv6 forwarding tests.

// ip6Pkt builds an IPv6 packet with a correct upper-layer checksum.
func ip6Pkt(src, dst string, nh, hop uint8, l4 []byte) []byte {
	h := make([]byte, ip6HdrLen+len(l4))
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:6], uint16(len(l4)))
	h[6], h[7] = nh, hop
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(h[8:24], s[:])
	copy(h[24:40], d[:])
	copy(h[40:], l4)
	ip6SetL4Checksum(h)
	return h
}

// nsL4 is a neighbour solicitation for target, with a source link-layer
// option when sll is not nil.
func nsL4(target string, sll *[6]byte) []byte {
	return ndL4(icmp6NeighborSolicit, target, icmp6OptSrcLinkLayer, sll)
}

// naL4 is a neighbour advertisement for target (flags S|O), with a
// target link-layer option when tll is not nil.
func naL4(target string, tll *[6]byte) []byte {
	b := ndL4(icmp6NeighborAdvert, target, icmp6OptTgtLinkLayer, tll)
	b[4] = icmp6NAFlagSolicited | icmp6NAFlagOverride
	return b
}

func ndL4(typ uint8, target string, opt uint8, mac *[6]byte) []byte {
	b := make([]byte, icmp6NSNALen, icmp6NSNALen+8)
	b[0] = typ
	t := netip.MustParseAddr(target).As16()
	copy(b[8:24], t[:])
	if mac != nil {
		b = append(b, opt, 1, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])
	}
	return b
}

// solicitedMAC is the Ethernet group of the solicited-node group of a.
func solicitedMAC(a string) [6]byte {
	b := netip.MustParseAddr(a).As16()
	return [6]byte{0x33, 0x33, 0xff, b[13], b[14], b[15]}
}

// solicitedNode is ff02::1:ffXX:XXXX of a.
func solicitedNode(a string) string {
	b := netip.MustParseAddr(a).As16()
	return netip.MustParseAddr(fmt.Sprintf("ff02::1:ff%02x:%02x%02x", b[13], b[14], b[15])).String()
}

// pkt6Info is a decoded IPv6 frame.
type pkt6Info struct {
	dstMAC, srcMAC [6]byte
	etype          uint16
	src, dst       netip.Addr
	nh, hop        uint8
	icmpType       uint8
	icmpCode       uint8
	icmpData       uint32
	target         netip.Addr // NS/NA
	optType        uint8      // the first ND option, 0 if none
	optMAC         [6]byte
	sport, dport   uint16
	quoted         []byte // the packet an ICMPv6 error carries
	l4             []byte
	csumOK         bool
}

func decode6(t *testing.T, f []byte) pkt6Info {
	t.Helper()
	var p pkt6Info
	p.dstMAC, p.srcMAC, p.etype = decodeEth(f)
	if p.etype != etherTypeIP6 {
		t.Fatalf("frame of ethertype %#x, want IPv6", p.etype)
	}
	h := f[ethHdrLen:]
	p.src, p.dst = addr6(ip6Src(h)), addr6(ip6Dst(h))
	p.nh, p.hop = ip6NH(h), uint8(ip6HopLimit(h))
	l4 := ip6L4(h)
	p.l4 = l4
	p.csumOK = ip6Checksum(h, l4, p.nh) == 0
	switch p.nh {
	case protoICMP6:
		p.icmpType, p.icmpCode = l4[0], l4[1]
		p.icmpData = binary.BigEndian.Uint32(l4[4:8])
		if p.icmpType == icmp6NeighborSolicit || p.icmpType == icmp6NeighborAdvert {
			p.target = addr6([16]byte(l4[8:24]))
			if len(l4) >= icmp6NSNALen+8 {
				p.optType = l4[icmp6NSNALen]
				p.optMAC = [6]byte(l4[icmp6NSNALen+2 : icmp6NSNALen+8])
			}
		}
		if p.icmpType < 128 {
			p.quoted = l4[8:]
		}
	case protoTCP, protoUDP:
		p.sport, p.dport = be16(l4[0:2]), be16(l4[2:4])
	}
	return p
}

func (p pkt6Info) String() string {
	return fmt.Sprintf("%s %s -> %s hop %d icmp %d/%d %s->%s", protoName(p.nh), p.src, p.dst, p.hop, p.icmpType, p.icmpCode,
		macString(p.srcMAC), macString(p.dstMAC))
}

// one6 asserts exactly one frame left ifName and decodes it.
func one6(t *testing.T, c *capture, ifName string) pkt6Info {
	t.Helper()
	fs := c.take(ifName)
	if len(fs) != 1 {
		t.Fatalf("%d frames left %s, want 1 (all: %v)", len(fs), ifName, c.frames)
	}
	return decode6(t, fs[0])
}

// viaPath6 is a path through an interface to an IPv6 next hop.
func viaPath6(sw interface_types.InterfaceIndex, nh string) fib_types.FibPath {
	p := viaPath(sw, nh)
	p.Proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	return p
}

// eth6 frames an IPv6 packet.
func eth6(dst, src [6]byte, pkt []byte) []byte { return ethFrame(dst, src, etherTypeIP6, pkt) }

// l3Env6: NIC1 2001:db8:1::1/64 (host A 2001:db8:1::2 behind it, static
// neighbour) and NIC2 2001:db8:2::1/64, both up, on a fake clock.
func l3Env6(t *testing.T) (*testEnv, *capture, *testkit.Clock) {
	clk := testkit.NewClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnvWith(t, func(o *Options) { o.Clock = clk })
	c := newCapture(e)
	e.l3Up("2001:db8:1::1/64", "2001:db8:2::1/64")
	e.neighbor(1, hostA6, hostAMAC)
	return e, c, clk
}

const (
	hostA6 = "2001:db8:1::2"
	hostB6 = "2001:db8:2::2"
	nic1G6 = "2001:db8:1::1"
	nic2G6 = "2001:db8:2::1"
)

// eui64 is the link-local address VPP makes from a MAC.
func eui64(m [6]byte) string {
	a := linkLocalFor(&iface{kind: kindNIC, mac: m})
	return a.String()
}

// traceOf runs f with tracing of dpdk-input armed and returns "show trace".
func traceOf(e *testEnv, f func()) string {
	e.t.Helper()
	cli(e, "clear trace")
	cli(e, "trace add dpdk-input 10")
	f()
	return cli(e, "show trace")
}

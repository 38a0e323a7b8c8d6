package vppsim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
)

// MACs of the test NICs (newState) and of hosts on their wires.
var (
	nic1MAC  = [6]byte{0x08, 0x00, 0x27, 0x5a, 0, 1}
	nic2MAC  = [6]byte{0x08, 0x00, 0x27, 0x5a, 0, 2}
	hostAMAC = [6]byte{0x52, 0x54, 0, 0, 0, 0xa}
	hostBMAC = [6]byte{0x52, 0x54, 0, 0, 0, 0xb}
)

// capture collects what the simulator transmits, per interface.
type capture struct {
	mu     sync.Mutex
	frames map[string][][]byte
}

func newCapture(e *testEnv) *capture {
	c := &capture{frames: map[string][][]byte{}}
	e.sim.SetTxHook(func(ifName string, f []byte) {
		c.mu.Lock()
		c.frames[ifName] = append(c.frames[ifName], append([]byte(nil), f...))
		c.mu.Unlock()
	})
	return c
}

// take returns and forgets what left ifName.
func (c *capture) take(ifName string) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.frames[ifName]
	delete(c.frames, ifName)
	return f
}

// reset forgets everything.
func (c *capture) reset() {
	c.mu.Lock()
	clear(c.frames)
	c.mu.Unlock()
}

// total counts the frames captured on all interfaces.
func (c *capture) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.frames {
		n += len(f)
	}
	return n
}

func ethFrame(dst, src [6]byte, etype uint16, payload []byte) []byte {
	f := make([]byte, ethHdrLen, ethHdrLen+len(payload))
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:14], etype)
	return append(f, payload...)
}

// ipPkt builds an IPv4 packet with correct checksums.
func ipPkt(src, dst string, proto uint8, ttl uint8, l4 []byte) []byte {
	h := make([]byte, ip4HdrLen+len(l4))
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:4], uint16(len(h)))
	h[6] = 0x40 // DF
	h[8] = ttl
	h[9] = proto
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(h[12:16], s[:])
	copy(h[16:20], d[:])
	copy(h[20:], l4)
	ip4SetChecksum(h)
	setL4Checksum(h)
	return h
}

func udpL4(sport, dport uint16, payload string) []byte {
	b := make([]byte, udpHdrLen+len(payload))
	binary.BigEndian.PutUint16(b[0:2], sport)
	binary.BigEndian.PutUint16(b[2:4], dport)
	binary.BigEndian.PutUint16(b[4:6], uint16(len(b)))
	copy(b[8:], payload)
	return b
}

func tcpL4(sport, dport uint16, flags uint8) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:2], sport)
	binary.BigEndian.PutUint16(b[2:4], dport)
	b[12] = 5 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:16], 65535)
	return b
}

func icmpEcho(typ uint8, id, seq uint16) []byte {
	b := make([]byte, 16)
	b[0] = typ
	binary.BigEndian.PutUint16(b[4:6], id)
	binary.BigEndian.PutUint16(b[6:8], seq)
	copy(b[8:], "pingdata")
	return b
}

func arpPkt(op uint16, sha [6]byte, spa string, tha [6]byte, tpa string) []byte {
	a := make([]byte, arpLen)
	binary.BigEndian.PutUint16(a[0:2], 1)
	binary.BigEndian.PutUint16(a[2:4], etherTypeIP4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], op)
	copy(a[8:14], sha[:])
	s, t := netip.MustParseAddr(spa).As4(), netip.MustParseAddr(tpa).As4()
	copy(a[14:18], s[:])
	copy(a[18:24], tha[:])
	copy(a[24:28], t[:])
	return a
}

// pktInfo is a decoded frame for assertions.
type pktInfo struct {
	dstMAC, srcMAC [6]byte
	etype          uint16
	src, dst       netip.Addr
	proto, ttl     uint8
	sport, dport   uint16
	icmpType       uint8
	icmpCode       uint8
	tcpFlags       uint8
	arpOp          uint16
	arpSHA         [6]byte
	arpSPA, arpTPA netip.Addr
	payload        []byte // L4 payload (UDP) or inner frame (VXLAN)
	csumOK         bool
}

func decodeFrame(t *testing.T, f []byte) pktInfo {
	t.Helper()
	var p pktInfo
	p.dstMAC, p.srcMAC, p.etype = decodeEth(f)
	b := f[ethHdrLen:]
	switch p.etype {
	case etherTypeARP:
		p.arpOp = be16(b[6:8])
		copy(p.arpSHA[:], b[8:14])
		p.arpSPA = addr4([4]byte(b[14:18]))
		p.arpTPA = addr4([4]byte(b[24:28]))
	case etherTypeIP4:
		p.src, p.dst = addr4(ip4Src(b)), addr4(ip4Dst(b))
		p.proto, p.ttl = ip4Proto(b), ip4TTL(b)
		p.csumOK = checksum(b[:ip4IHL(b)], 0) == 0
		l4 := ip4L4(b)
		switch p.proto {
		case protoTCP, protoUDP:
			p.sport, p.dport = be16(l4[0:2]), be16(l4[2:4])
			p.csumOK = p.csumOK && l4ChecksumOK(b)
			if p.proto == protoUDP {
				p.payload = l4[udpHdrLen:]
			} else {
				p.tcpFlags = l4[13]
			}
		case protoICMP:
			p.icmpType, p.icmpCode = l4[0], l4[1]
			p.sport = be16(l4[4:6])
			p.csumOK = p.csumOK && checksum(l4, 0) == 0
		}
	}
	return p
}

// decodeEth returns the MACs and ethertype of a frame.
func decodeEth(f []byte) (dst, src [6]byte, etype uint16) {
	return [6]byte(f[0:6]), [6]byte(f[6:12]), be16(f[12:14])
}

func (p pktInfo) String() string {
	if p.etype == etherTypeARP {
		return fmt.Sprintf("ARP op %d %s(%s) -> %s", p.arpOp, p.arpSPA, macString(p.arpSHA), p.arpTPA)
	}
	return fmt.Sprintf("%s %s:%d -> %s:%d ttl %d icmp %d/%d %s->%s", protoName(p.proto), p.src, p.sport, p.dst, p.dport, p.ttl,
		p.icmpType, p.icmpCode, macString(p.srcMAC), macString(p.dstMAC))
}

// up sets an interface admin-up.
func (e *testEnv) up(sw interface_types.InterfaceIndex) {
	e.t.Helper()
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: sw, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
}

// neighbor adds a static neighbour.
func (e *testEnv) neighbor(sw interface_types.InterfaceIndex, ipAddr string, m [6]byte) {
	e.t.Helper()
	e.ok(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: sw,
		Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: m, IPAddress: addr(ipAddr)}})
}

func (e *testEnv) addRoute(r ip.IPRoute) {
	e.t.Helper()
	r.NPaths = uint8(len(r.Paths))
	e.ok(&ip.IPRouteAddDel{IsAdd: true, Route: r})
}

// inject sends a frame into an interface, failing the test on error.
func (e *testEnv) inject(ifName string, frame []byte) {
	e.t.Helper()
	if err := e.sim.InjectFrame(ifName, frame); err != nil {
		e.t.Fatal(err)
	}
}

// oneFrame asserts exactly one frame left ifName and decodes it.
func oneFrame(t *testing.T, c *capture, ifName string) pktInfo {
	t.Helper()
	fs := c.take(ifName)
	if len(fs) != 1 {
		t.Fatalf("%d frames left %s, want 1 (all: %v)", len(fs), ifName, c.frames)
	}
	return decodeFrame(t, fs[0])
}

// none asserts nothing left any interface.
func none(t *testing.T, c *capture) {
	t.Helper()
	if n := c.total(); n != 0 {
		t.Fatalf("%d frames transmitted, want none: %v", n, c.frames)
	}
}

func contains(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// cliForTest runs a CLI command on the current state.
func (s *Sim) cliForTest(cmd string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.cli(cmd)
}

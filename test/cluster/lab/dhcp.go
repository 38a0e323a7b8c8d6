package lab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// DHCP on the node network (single-NIC nodes): a small DHCPv4 server in the internet
// namespace (GatewayIP, the node network's router) hands every node its address by a
// binding of its NIC's MAC, and the node's host gets its address from it before
// anything of Contiv starts, as a cloud VM does. The client here is the stand-in for the
// host's DHCP client (this machine has no dhclient, udhcpc or dnsmasq): the initial
// lease (DISCOVER, OFFER, REQUEST, ACK broadcast on the NIC) and a renewal (RFC 2131
// RENEWING: a REQUEST with ciaddr, unicast to the server through the host's routes, the
// ACK unicast back to the node IP), which after the takeover crosses VPP both ways and
// reaches the host by VPP's STN punt.

// dhcpLease is the lease time the server gives (the address's lifetimes on the NIC).
const dhcpLease = time.Hour

// DHCP message types (RFC 2132 option 53) and option codes.
const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpAck      = 5
	dhcpNak      = 6

	optSubnetMask  = 1
	optRouter      = 3
	optRequestedIP = 50
	optLeaseTime   = 51
	optMsgType     = 53
	optServerID    = 54
	optEnd         = 255
)

// dhcpMsg is the part of a DHCPv4 message (RFC 2131 §2) the lab uses.
type dhcpMsg struct {
	op     byte // 1 request, 2 reply
	xid    uint32
	flags  uint16
	ciaddr net.IP
	yiaddr net.IP
	chaddr net.HardwareAddr
	opts   map[byte][]byte
}

var dhcpMagic = []byte{99, 130, 83, 99}

// marshal encodes the message (Ethernet hardware, options in code order of the map
// walk: the lab's peers do not care).
func (m *dhcpMsg) marshal() []byte {
	b := make([]byte, 240, 300)
	b[0], b[1], b[2] = m.op, 1, 6
	binary.BigEndian.PutUint32(b[4:], m.xid)
	binary.BigEndian.PutUint16(b[10:], m.flags)
	copy(b[12:16], m.ciaddr.To4())
	copy(b[16:20], m.yiaddr.To4())
	copy(b[28:34], m.chaddr)
	copy(b[236:240], dhcpMagic)
	for code, v := range m.opts {
		b = append(b, code, byte(len(v)))
		b = append(b, v...)
	}
	return append(b, optEnd)
}

// parseDHCP decodes a message; it fails on anything but an Ethernet DHCP message.
func parseDHCP(b []byte) (*dhcpMsg, error) {
	if len(b) < 240 || b[1] != 1 || b[2] != 6 || string(b[236:240]) != string(dhcpMagic) {
		return nil, errors.New("not a DHCP message over Ethernet")
	}
	m := &dhcpMsg{op: b[0], xid: binary.BigEndian.Uint32(b[4:]), flags: binary.BigEndian.Uint16(b[10:]),
		ciaddr: net.IP(append([]byte(nil), b[12:16]...)), yiaddr: net.IP(append([]byte(nil), b[16:20]...)),
		chaddr: net.HardwareAddr(append([]byte(nil), b[28:34]...)), opts: map[byte][]byte{}}
	for o := b[240:]; len(o) > 0 && o[0] != optEnd; {
		if o[0] == 0 { // pad
			o = o[1:]
			continue
		}
		if len(o) < 2 || len(o) < 2+int(o[1]) {
			return nil, errors.New("truncated DHCP option")
		}
		m.opts[o[0]] = append([]byte(nil), o[2:2+int(o[1])]...)
		o = o[2+int(o[1]):]
	}
	return m, nil
}

// msgType returns the message's DHCP type (0: none).
func (m *dhcpMsg) msgType() byte {
	if v := m.opts[optMsgType]; len(v) == 1 {
		return v[0]
	}
	return 0
}

// dhcpConn opens a UDP socket in the namespace at nsPath, bound to addr, allowed to
// broadcast and, when device is set, bound to that link (SO_BINDTODEVICE).
func dhcpConn(nsPath, addr, device string) (*net.UDPConn, error) {
	var pc net.PacketConn
	err := nsrun.Run(nsPath, func() error {
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = errors.Join(unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1),
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1))
				if device != "" {
					serr = errors.Join(serr, unix.BindToDevice(int(fd), device))
				}
			})
			return errors.Join(err, serr)
		}}
		var err error
		pc, err = lc.ListenPacket(context.Background(), "udp4", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("DHCP socket on %s in %s: %w", addr, nsPath, err)
	}
	return pc.(*net.UDPConn), nil
}

// dhcpServer answers DISCOVER and REQUEST of the MACs it has a binding for.
type dhcpServer struct {
	conn   *net.UDPConn
	id     net.IP
	router net.IP
	mask   net.IPMask
	done   chan struct{}

	mu       sync.Mutex
	bindings map[string]net.IP
	renewals map[string]int
}

// startDHCPServer serves on port 67 of the link device in the namespace at nsPath, as
// serverIP (its address there), offering router and mask.
func startDHCPServer(nsPath, device string, serverIP, router net.IP, mask net.IPMask) (*dhcpServer, error) {
	conn, err := dhcpConn(nsPath, "0.0.0.0:67", device)
	if err != nil {
		return nil, err
	}
	s := &dhcpServer{conn: conn, id: serverIP.To4(), router: router.To4(), mask: mask, done: make(chan struct{}),
		bindings: map[string]net.IP{}, renewals: map[string]int{}}
	go s.serve()
	return s, nil
}

// bind gives the MAC its address.
func (s *dhcpServer) bind(mac net.HardwareAddr, ip net.IP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindings[mac.String()] = ip.To4()
}

// renewalsOf counts the renewals (REQUEST with ciaddr) the server acknowledged for mac.
func (s *dhcpServer) renewalsOf(mac net.HardwareAddr) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals[mac.String()]
}

// close stops the server and waits for it.
func (s *dhcpServer) close() error {
	err := s.conn.Close()
	<-s.done
	return err
}

func (s *dhcpServer) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		n, _, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		m, err := parseDHCP(buf[:n])
		if err != nil || m.op != 1 {
			continue
		}
		if reply, to := s.answer(m); reply != nil {
			_, _ = s.conn.WriteToUDP(reply.marshal(), to)
		}
	}
}

// answer returns the reply to a client message and where it goes: unicast to ciaddr
// when the client has an address, else broadcast (RFC 2131 §4.1); nil to stay silent.
func (s *dhcpServer) answer(m *dhcpMsg) (*dhcpMsg, *net.UDPAddr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip := s.bindings[m.chaddr.String()]
	if ip == nil {
		return nil, nil
	}
	reply := &dhcpMsg{op: 2, xid: m.xid, flags: m.flags, ciaddr: m.ciaddr, yiaddr: ip, chaddr: m.chaddr,
		opts: map[byte][]byte{optServerID: s.id}}
	switch m.msgType() {
	case dhcpDiscover:
		reply.opts[optMsgType] = []byte{dhcpOffer}
	case dhcpRequest:
		if id := m.opts[optServerID]; id != nil && !net.IP(id).Equal(s.id) {
			return nil, nil // the client chose another server
		}
		want := net.IP(m.opts[optRequestedIP])
		if want == nil {
			want = m.ciaddr
		}
		if !want.Equal(ip) {
			reply.opts = map[byte][]byte{optMsgType: {dhcpNak}, optServerID: s.id}
			reply.yiaddr = net.IPv4zero
			break
		}
		reply.opts[optMsgType] = []byte{dhcpAck}
		if !m.ciaddr.Equal(net.IPv4zero) {
			s.renewals[m.chaddr.String()]++
		}
	default:
		return nil, nil
	}
	if reply.msgType() != dhcpNak {
		lease := make([]byte, 4)
		binary.BigEndian.PutUint32(lease, uint32(dhcpLease/time.Second))
		reply.opts[optLeaseTime], reply.opts[optSubnetMask], reply.opts[optRouter] = lease, []byte(s.mask), s.router
	}
	to := &net.UDPAddr{IP: net.IPv4bcast, Port: 68}
	if !m.ciaddr.Equal(net.IPv4zero) {
		to.IP = m.ciaddr
	}
	return reply, to
}

// dhcpLeaseInfo is what a client got.
type dhcpLeaseInfo struct {
	ip     *net.IPNet
	router net.IP
	server net.IP
	lease  time.Duration
}

// exchange sends msg to dst from conn and waits until timeout for the reply with the
// same xid, trying three times.
func exchange(conn *net.UDPConn, msg *dhcpMsg, dst *net.UDPAddr, timeout time.Duration) (*dhcpMsg, error) {
	buf := make([]byte, 1500)
	for try := 0; try < 3; try++ {
		if _, err := conn.WriteToUDP(msg.marshal(), dst); err != nil {
			return nil, fmt.Errorf("send DHCP type %d to %s: %w", msg.msgType(), dst, err)
		}
		if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			return nil, err
		}
		for {
			n, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				break // timed out: send again
			}
			if r, err := parseDHCP(buf[:n]); err == nil && r.op == 2 && r.xid == msg.xid {
				return r, nil
			}
		}
	}
	return nil, fmt.Errorf("no answer to DHCP type %d sent to %s", msg.msgType(), dst)
}

func newXID() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// dhcpAcquire gets a lease for the link with the MAC, in the namespace at nsPath: a
// DISCOVER and a REQUEST broadcast on the link.
func dhcpAcquire(nsPath, link string, mac net.HardwareAddr) (*dhcpLeaseInfo, error) {
	conn, err := dhcpConn(nsPath, "0.0.0.0:68", link)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	bcast := &net.UDPAddr{IP: net.IPv4bcast, Port: 67}
	xid := newXID()
	offer, err := exchange(conn, &dhcpMsg{op: 1, xid: xid, flags: 0x8000, chaddr: mac,
		opts: map[byte][]byte{optMsgType: {dhcpDiscover}}}, bcast, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if offer.msgType() != dhcpOffer {
		return nil, fmt.Errorf("DHCP: type %d in answer to DISCOVER, want OFFER", offer.msgType())
	}
	ack, err := exchange(conn, &dhcpMsg{op: 1, xid: xid, flags: 0x8000, chaddr: mac, opts: map[byte][]byte{
		optMsgType: {dhcpRequest}, optRequestedIP: offer.yiaddr.To4(), optServerID: offer.opts[optServerID],
	}}, bcast, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return leaseFrom(ack)
}

// leaseFrom reads an ACK (anything else is an error).
func leaseFrom(ack *dhcpMsg) (*dhcpLeaseInfo, error) {
	if ack.msgType() != dhcpAck {
		return nil, fmt.Errorf("DHCP: type %d, want ACK", ack.msgType())
	}
	mask, lease := ack.opts[optSubnetMask], ack.opts[optLeaseTime]
	if len(mask) != 4 || len(lease) != 4 {
		return nil, errors.New("DHCP ACK without subnet mask or lease time")
	}
	return &dhcpLeaseInfo{ip: &net.IPNet{IP: ack.yiaddr, Mask: net.IPMask(mask)}, router: net.IP(ack.opts[optRouter]),
		server: net.IP(ack.opts[optServerID]), lease: time.Duration(binary.BigEndian.Uint32(lease)) * time.Second}, nil
}

// dhcpRenew renews the lease of ip from server as the host's client in RENEWING state
// does (RFC 2131 §4.4.5): a REQUEST with ciaddr = ip, unicast from ip:68 through the
// host's routes, no device binding; the ACK comes back unicast to ip:68.
func dhcpRenew(nsPath string, ip, server net.IP, mac net.HardwareAddr) (*dhcpLeaseInfo, error) {
	conn, err := dhcpConn(nsPath, net.JoinHostPort(ip.String(), "68"), "")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ack, err := exchange(conn, &dhcpMsg{op: 1, xid: newXID(), ciaddr: ip, chaddr: mac,
		opts: map[byte][]byte{optMsgType: {dhcpRequest}}}, &net.UDPAddr{IP: server, Port: 67}, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return leaseFrom(ack)
}

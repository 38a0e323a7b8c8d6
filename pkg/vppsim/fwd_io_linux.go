//go:build linux

package vppsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Packet I/O with Linux: a TAP's file descriptor (the simulator owns the
// device it creates) and AF_PACKET raw sockets on existing interfaces of
// the simulator's namespace (af_packet interfaces and NICs bound with
// NAME=LINUXIF). One reader goroutine per port feeds frames into the graph
// under the state lock; transmission is a non-blocking write done by the
// graph (a full queue drops the frame, as a full ring would).

// virtio_net_hdr, which packet sockets with PACKET_VNET_HDR prepend.
const (
	vnetHdrLen       = 10
	vnetNeedsCsum    = 1
	vnetGSONone      = 0
	portReadBufBytes = 65536 + vnetHdrLen + 256
)

// filePort moves frames through a Linux file descriptor.
type filePort struct {
	s      *Sim
	i      *iface
	name   string
	fd     int
	f      *os.File // owns fd; reads go through the runtime poller
	vnet   bool
	closed atomic.Bool
	once   sync.Once
	txbuf  []byte
}

// startPort starts the reader of a port of interface i. The caller holds
// s.mu.
func (s *Sim) startPort(i *iface, f *os.File, fd int, vnet bool) *filePort {
	p := &filePort{s: s, i: i, name: i.name, fd: fd, f: f, vnet: vnet}
	if vnet {
		p.txbuf = make([]byte, vnetHdrLen+pktMaxFrame+pktHeadroom)
	}
	s.portWG.Add(1)
	go p.run()
	return p
}

func (p *filePort) run() {
	defer p.s.portWG.Done()
	buf := make([]byte, portReadBufBytes)
	var seg []byte
	for {
		n, err := p.f.Read(buf)
		if err != nil {
			if !p.closed.Load() && !errors.Is(err, os.ErrClosed) {
				p.s.log.WithError(err).WithField("interface", p.name).Warn("port read failed; port stopped")
			}
			return
		}
		frame := buf[:n]
		if !p.vnet {
			p.input(frame)
			continue
		}
		h, frame, ok := parseVnet(frame)
		if !ok {
			continue
		}
		switch {
		case h.gsoType == vnetGSONone:
			if h.flags&vnetNeedsCsum != 0 {
				completeChecksum(frame, h.csumStart, h.csumOffset)
			}
			p.input(frame)
		case h.gsoType == vnetGSOTCPv4:
			if seg == nil {
				seg = make([]byte, pktMaxFrame)
			}
			if !segmentTCP4(frame, int(h.gsoSize), seg, p.input) {
				p.countDrop("GSO frame not segmentable")
			}
		default:
			p.countDrop("GSO frame of an unsupported type (disable GSO on the sender)")
		}
	}
}

// input runs one received frame through the graph.
func (p *filePort) input(frame []byte) {
	p.s.mu.Lock()
	if !p.closed.Load() && p.s.st.ifaces[p.i.idx] == p.i {
		p.s.st.rxFrame(p.i, frame)
	}
	p.s.mu.Unlock()
}

func (p *filePort) countDrop(reason string) {
	p.s.mu.Lock()
	p.s.st.count(inputNode(p.i.kind), reason)
	p.s.mu.Unlock()
}

// vnetHdr is a parsed virtio_net_hdr.
type vnetHdr struct {
	flags, gsoType        uint8
	hdrLen, gsoSize       uint16
	csumStart, csumOffset int
}

const vnetGSOTCPv4 = 1

func parseVnet(b []byte) (vnetHdr, []byte, bool) {
	if len(b) < vnetHdrLen {
		return vnetHdr{}, nil, false
	}
	return vnetHdr{
		flags: b[0], gsoType: b[1],
		hdrLen:     binary.LittleEndian.Uint16(b[2:4]),
		gsoSize:    binary.LittleEndian.Uint16(b[4:6]),
		csumStart:  int(binary.LittleEndian.Uint16(b[6:8])),
		csumOffset: int(binary.LittleEndian.Uint16(b[8:10])),
	}, b[vnetHdrLen:], true
}

// completeChecksum finishes a checksum the Linux sender offloaded: the
// field holds the pseudo-header sum, the bytes from start are folded in
// (a UDP checksum of 0 is sent as 0xffff).
func completeChecksum(f []byte, start, off int) {
	if start < ethHdrLen+ip4HdrLen || start+off+2 > len(f) {
		return
	}
	sum := checksum(f[start:], 0)
	if sum == 0 && off == 6 {
		sum = 0xffff
	}
	put16(f[start+off:], sum)
}

// segmentTCP4 cuts a TCP/IPv4 GSO super-frame into frames of at most mss
// payload bytes, as the sender's NIC would have, and hands each to fn with
// full checksums. out is scratch space of pktMaxFrame bytes.
func segmentTCP4(f []byte, mss int, out []byte, fn func([]byte)) bool {
	if len(f) < ethHdrLen+ip4HdrLen || be16(f[12:14]) != etherTypeIP4 || mss <= 0 {
		return false
	}
	ip := f[ethHdrLen:]
	ihl := ip4IHL(ip)
	if ip4Proto(ip) != protoTCP || ihl < ip4HdrLen || len(ip) < ihl+20 {
		return false
	}
	thl := int(ip[ihl+12]>>4) * 4
	hdrs := ethHdrLen + ihl + thl
	if thl < 20 || len(f) < hdrs || hdrs+mss > len(out) {
		return false
	}
	payload := f[hdrs:]
	seq := binary.BigEndian.Uint32(ip[ihl+4:])
	id := be16(ip[4:6])
	flags := ip[ihl+13]
	for k, off := 0, 0; off < len(payload); k, off = k+1, off+mss {
		end := min(off+mss, len(payload))
		n := copy(out, f[:hdrs])
		n += copy(out[n:], payload[off:end])
		oip := out[ethHdrLen:n]
		put16(oip[2:4], uint16(len(oip)))
		put16(oip[4:6], id+uint16(k))
		ip4SetChecksum(oip)
		tcp := oip[ihl:]
		binary.BigEndian.PutUint32(tcp[4:8], seq+uint32(off))
		fl := flags
		if end < len(payload) {
			fl &^= tcpFIN | 0x08 // FIN and PSH only on the last segment
		}
		if k > 0 {
			fl &^= 0x80 // CWR only on the first
		}
		tcp[13] = fl
		setL4Checksum(oip)
		fn(out[:n])
	}
	return true
}

// send writes one frame; it never blocks (EAGAIN drops the frame).
func (p *filePort) send(frame []byte) {
	if p.closed.Load() {
		return
	}
	out := frame
	if p.vnet {
		clear(p.txbuf[:vnetHdrLen])
		n := copy(p.txbuf[vnetHdrLen:], frame)
		out = p.txbuf[:vnetHdrLen+n]
	}
	if _, err := unix.Write(p.fd, out); err != nil {
		p.s.st.count(p.name+"-output", "tx write failed: "+errName(err))
	}
}

func errName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return "error"
}

// close stops the reader and releases the descriptor.
func (p *filePort) close() {
	p.once.Do(func() {
		p.closed.Store(true)
		_ = p.f.Close()
	})
}

// openRawSocket opens a non-blocking AF_PACKET socket on a Linux interface
// of the simulator's namespace that sees only what the interface receives.
func openRawSocket(ifName string) (*os.File, int, error) {
	ifc, err := net.InterfaceByName(ifName)
	if err != nil {
		return nil, 0, fmt.Errorf("find Linux interface %q: %w", ifName, err)
	}
	proto := htons(unix.ETH_P_ALL)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return nil, 0, fmt.Errorf("raw socket for %q: %w", ifName, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("PACKET_VNET_HDR on %q: %w", ifName, err)
	}
	// Frames the interface sends are not input; ignore them (Linux 4.20+).
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifc.Index}); err != nil {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("bind raw socket to %q: %w", ifName, err)
	}
	return os.NewFile(uintptr(fd), "packet:"+ifName), fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// attachRaw binds interface i to Linux interface ifName with a raw socket.
// The caller holds s.mu.
func (s *Sim) attachRaw(i *iface, ifName string) error {
	f, fd, err := openRawSocket(ifName)
	if err != nil {
		return err
	}
	i.port = s.startPort(i, f, fd, true)
	return nil
}

// attachTap starts the I/O of a TAP whose Linux end the simulator created.
func (s *Sim) attachTap(i *iface, t hostTap) {
	lt, ok := t.(*linuxTap)
	if !ok || lt.file == nil {
		return
	}
	i.port = s.startPort(i, lt.file, lt.fd, false)
}

// setPromisc makes a Linux interface of the simulator's namespace
// promiscuous.
func setPromisc(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find Linux interface %q: %w", name, err)
	}
	if err := netlink.SetPromiscOn(link); err != nil {
		return fmt.Errorf("set Linux interface %q promiscuous: %w", name, err)
	}
	return nil
}

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
	portReadBufBytes = 65536 + vnetHdrLen
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
	for {
		n, err := p.f.Read(buf)
		if err != nil {
			if !p.closed.Load() && !errors.Is(err, os.ErrClosed) {
				p.s.log.WithError(err).WithField("interface", p.name).Warn("port read failed; port stopped")
			}
			return
		}
		frame := buf[:n]
		if p.vnet {
			var ok bool
			if frame, ok = p.fromVnet(frame); !ok {
				continue
			}
		}
		p.s.mu.Lock()
		if !p.closed.Load() && p.s.st.ifaces[p.i.idx] == p.i {
			p.s.st.rxFrame(p.i, frame)
		}
		p.s.mu.Unlock()
	}
}

// fromVnet strips the virtio header, completing a partial checksum (the
// Linux sender offloaded it). GSO super-frames are dropped and counted:
// disable TSO/GSO on the peer to send through a raw-socket port.
func (p *filePort) fromVnet(b []byte) ([]byte, bool) {
	if len(b) < vnetHdrLen {
		return nil, false
	}
	flags, gso := b[0], b[1]
	csumStart := int(binary.LittleEndian.Uint16(b[6:8]))
	csumOff := int(binary.LittleEndian.Uint16(b[8:10]))
	f := b[vnetHdrLen:]
	if gso != vnetGSONone {
		p.s.mu.Lock()
		p.s.st.count(inputNode(p.i.kind), "GSO frame dropped (disable TSO/GSO on the sender)")
		p.s.mu.Unlock()
		return nil, false
	}
	if flags&vnetNeedsCsum != 0 && csumStart+csumOff+2 <= len(f) {
		c := f[csumStart+csumOff : csumStart+csumOff+2]
		// The field holds the pseudo-header sum; fold in the payload.
		sum := checksum(f[csumStart:], 0)
		if sum == 0 {
			sum = 0xffff
		}
		put16(c, sum)
	}
	return f, true
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

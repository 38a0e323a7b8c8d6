package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// ErrNoSCTP is the error of the SCTP functions when the kernel has no SCTP (the sctp
// module is not loaded or not built).
var ErrNoSCTP = errors.New("the kernel does not support SCTP")

// sctpSocket opens an SCTP socket of the one-to-one style (SOCK_STREAM), which behaves
// as a TCP socket: bind, listen, accept or connect, then a byte stream.
func sctpSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ESOCKTNOSUPPORT) {
		return -1, ErrNoSCTP
	}
	if err != nil {
		return -1, fmt.Errorf("SCTP socket: %w", err)
	}
	return fd, nil
}

// SCTPSupported tells whether the kernel supports SCTP (ErrNoSCTP otherwise).
func SCTPSupported() error {
	fd, err := sctpSocket()
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// sockaddr converts "ip:port" (IPv4) to a socket address.
func sockaddr(addr string) (*unix.SockaddrInet4, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("SCTP address %q: want IPv4:port", addr)
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
}

// withSCTPSocket runs fn with a new SCTP socket (its fd, and a file holding it, closed
// afterwards) and the socket address of addr, inside the namespace at netnsPath.
func withSCTPSocket(netnsPath, addr string, fn func(fd int, sa *unix.SockaddrInet4, f *os.File) error) error {
	sa, err := sockaddr(addr)
	if err != nil {
		return err
	}
	return nsrun.Run(netnsPath, func() error {
		fd, err := sctpSocket()
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), "sctp "+addr)
		defer f.Close()
		return fn(fd, sa, f)
	})
}

// listenSCTP listens on SCTP addr inside the namespace at netnsPath; the listener is
// Go's stream listener over the SCTP socket.
func listenSCTP(netnsPath, addr string) (net.Listener, error) {
	var ln net.Listener
	err := withSCTPSocket(netnsPath, addr, func(fd int, sa *unix.SockaddrInet4, f *os.File) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fmt.Errorf("SCTP %s: %w", addr, err)
		}
		if err := unix.Bind(fd, sa); err != nil {
			return fmt.Errorf("SCTP bind %s: %w", addr, err)
		}
		if err := unix.Listen(fd, 128); err != nil {
			return fmt.Errorf("SCTP listen %s: %w", addr, err)
		}
		var err error
		ln, err = net.FileListener(f)
		return err
	})
	return ln, err
}

// DialSCTP opens an SCTP association to addr (IPv4:port) from inside the network
// namespace at netnsPath; the connection is a byte stream as TCP's. It returns ErrNoSCTP
// when the kernel lacks SCTP.
func DialSCTP(ctx context.Context, netnsPath, addr string) (net.Conn, error) {
	var conn net.Conn
	err := withSCTPSocket(netnsPath, addr, func(fd int, sa *unix.SockaddrInet4, f *os.File) error {
		if d, ok := ctx.Deadline(); ok {
			tv := unix.NsecToTimeval(max(int64(time.Millisecond), time.Until(d).Nanoseconds()))
			_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
		}
		if err := unix.Connect(fd, sa); err != nil {
			return fmt.Errorf("SCTP connect %s: %w", addr, err)
		}
		var err error
		conn, err = net.FileConn(f)
		return err
	})
	return conn, err
}

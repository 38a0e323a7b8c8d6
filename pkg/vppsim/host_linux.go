//go:build linux

package vppsim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Linux mode creates the Linux end of a TAP the way VPP does: it opens
// /dev/net/tun in the requested network namespace and keeps the file
// descriptor, so the device has carrier while the simulator runs and
// disappears when the TAP is deleted, the simulator restarts or the process
// dies. Names, MAC, MTU, addresses, default routes and the bridge are set
// with netlink, from the thread that entered the namespace.

const (
	tunSetIff = 0x400454ca // TUNSETIFF
	iffTun    = 0x0001
	iffTap    = 0x0002
	iffNoPI   = 0x1000
)

type linuxNet struct {
	log logrus.FieldLogger
}

// newHostNet checks that Linux mode can work here.
func newHostNet(log logrus.FieldLogger) (hostNet, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("requires root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return nil, fmt.Errorf("no TUN/TAP support: %w", err)
	}
	return &linuxNet{log: log}, nil
}

func (h *linuxNet) interfaceMAC(name string) ([6]byte, bool) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return [6]byte{}, false
	}
	var mac [6]byte
	copy(mac[:], ifc.HardwareAddr)
	return mac, true
}

// nsPath turns a TAP's host_namespace into the path VPP opens
// (vppinfra/linux/netns.c clib_netns_open): "pid:N" is /proc/N/ns/net (N
// read as atoi does), a leading "/" makes a path, anything else is a name
// under /var/run/netns.
func nsPath(ns string) string {
	switch {
	case strings.HasPrefix(ns, "pid:"):
		return "/proc/" + strconv.FormatUint(uint64(atoiU32(ns[4:])), 10) + "/ns/net"
	case strings.HasPrefix(ns, "/"):
		return ns
	}
	return "/var/run/netns/" + ns
}

// atoiU32 is C's atoi printed with %u: optional blanks and sign, then
// the leading decimal digits (none: 0), wrapped to 32 bits.
func atoiU32(s string) uint32 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var v uint32
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + uint32(c-'0')
	}
	if neg {
		v = -v
	}
	return v
}

type linuxTap struct {
	fd   int
	file *os.File // owns fd (non-blocking, read through the runtime poller)
	name string
	ns   string
	once sync.Once
}

// Close releases the TUN file descriptor; the kernel removes the device.
func (t *linuxTap) Close() error {
	var err error
	t.once.Do(func() {
		if e := t.file.Close(); e != nil && !errors.Is(e, os.ErrClosed) {
			err = fmt.Errorf("close tap %s in %q: %w", t.name, t.ns, e)
		}
	})
	return err
}

// setLinkUp sets a Linux interface of the simulator's namespace up or
// down (af_packet admin state follows to the host veth, docs/dev-guide/VPP-FORWARDING.md §1).
func (h *linuxNet) setLinkUp(name string, up bool) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if up {
		err = netlink.LinkSetUp(link)
	} else {
		err = netlink.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("set %s up=%v: %w", name, up, err)
	}
	return nil
}

func (h *linuxNet) createTap(cfg hostTapConfig) (hostTap, error) {
	type result struct {
		tap *linuxTap
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The namespace is switched for this OS thread only. If it cannot
		// be switched back the thread stays locked and is discarded when
		// the goroutine ends.
		runtime.LockOSThread()
		tap, restored, err := h.createTapInNS(cfg)
		if restored {
			runtime.UnlockOSThread()
		}
		ch <- result{tap, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	return r.tap, nil
}

func setns(fd int) error {
	if sysSetns < 0 {
		return syscall.ENOSYS
	}
	_, _, e := syscall.RawSyscall(uintptr(sysSetns), uintptr(fd), syscall.CLONE_NEWNET, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (h *linuxNet) createTapInNS(cfg hostTapConfig) (tap *linuxTap, restored bool, err error) {
	restored = true
	if cfg.ns != "" {
		target, err := syscall.Open(nsPath(cfg.ns), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, true, &hostError{retvalSyscallError2, fmt.Errorf("open namespace %q: %w", cfg.ns, err)}
		}
		defer syscall.Close(target)
		orig, err := syscall.Open("/proc/thread-self/ns/net", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, true, &hostError{retvalSyscallError2, fmt.Errorf("open own namespace: %w", err)}
		}
		defer syscall.Close(orig)
		if err := setns(target); err != nil {
			return nil, true, &hostError{retvalSyscallError2, fmt.Errorf("enter namespace %q: %w", cfg.ns, err)}
		}
		defer func() {
			if e := setns(orig); e != nil {
				restored = false
				h.log.WithError(e).Error("cannot return to the simulator's network namespace; discarding thread")
			}
		}()
	}
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, true, &hostError{retvalSyscallError2, fmt.Errorf("open /dev/net/tun: %w", err)}
	}
	var ifr [40]byte
	copy(ifr[:15], cfg.name)
	flags := uint16(iffTap | iffNoPI)
	if cfg.tun {
		flags = iffTun | iffNoPI
	}
	*(*uint16)(unsafe.Pointer(&ifr[16])) = flags
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), tunSetIff, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		syscall.Close(fd)
		return nil, true, &hostError{retvalSyscallError3, fmt.Errorf("TUNSETIFF %s: %w", cfg.name, e)}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, true, &hostError{retvalSyscallError3, fmt.Errorf("set %s non-blocking: %w", cfg.name, err)}
	}
	tap = &linuxTap{fd: fd, file: os.NewFile(uintptr(fd), "tap:"+cfg.name), name: cfg.name, ns: cfg.ns}
	if err := h.configure(cfg); err != nil {
		_ = tap.Close()
		return nil, true, &hostError{retvalSyscallError3, err}
	}
	return tap, true, nil
}

// configure sets the requested attributes of the new device with netlink, from the
// thread that entered its namespace (netlink's package-level calls open their socket in
// the calling thread's namespace).
func (h *linuxNet) configure(cfg hostTapConfig) error {
	link, err := netlink.LinkByName(cfg.name)
	if err != nil {
		return fmt.Errorf("find %s: %w", cfg.name, err)
	}
	if !cfg.tun {
		if err := netlink.LinkSetHardwareAddr(link, net.HardwareAddr(cfg.mac[:])); err != nil {
			return fmt.Errorf("set MAC of %s: %w", cfg.name, err)
		}
	}
	if cfg.mtu != 0 {
		if err := netlink.LinkSetMTU(link, int(cfg.mtu)); err != nil {
			return fmt.Errorf("set MTU %d of %s: %w", cfg.mtu, cfg.name, err)
		}
	}
	if cfg.bridge != "" {
		br, err := netlink.LinkByName(cfg.bridge)
		if err != nil {
			return fmt.Errorf("find bridge %s: %w", cfg.bridge, err)
		}
		if err := netlink.LinkSetMaster(link, br); err != nil {
			return fmt.Errorf("put %s into bridge %s: %w", cfg.name, cfg.bridge, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", cfg.name, err)
	}
	for _, a := range []struct {
		prefix netip.Prefix
		flags  int
	}{{cfg.ip4, 0}, {cfg.ip6, unix.IFA_F_NODAD}} {
		if !a.prefix.IsValid() {
			continue
		}
		addr := &netlink.Addr{IPNet: prefixNet(a.prefix), Flags: a.flags}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("add address %s to %s: %w", a.prefix, cfg.name, err)
		}
	}
	for _, gw := range []netip.Addr{cfg.gw4, cfg.gw6} {
		if !gw.IsValid() {
			continue
		}
		r := &netlink.Route{LinkIndex: link.Attrs().Index, Gw: net.IP(gw.AsSlice())}
		if err := netlink.RouteAdd(r); err != nil {
			return fmt.Errorf("add default route via %s on %s: %w", gw, cfg.name, err)
		}
	}
	return nil
}

// prefixNet converts an address with its prefix length (host bits kept) for netlink.
func prefixNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}

//go:build linux

package vppsim

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/sirupsen/logrus"
)

// Linux mode creates the Linux end of a TAP the way VPP does: it opens
// /dev/net/tun in the requested network namespace and keeps the file
// descriptor, so the device has carrier while the simulator runs and
// disappears when the TAP is deleted, the simulator restarts or the process
// dies. Names, MAC, MTU, addresses, default routes and the bridge are set
// with iproute2's "ip", run from the thread that entered the namespace.

const (
	tunSetIff = 0x400454ca // TUNSETIFF
	iffTun    = 0x0001
	iffTap    = 0x0002
	iffNoPI   = 0x1000
)

type linuxNet struct {
	log    logrus.FieldLogger
	ipPath string
}

// newHostNet checks that Linux mode can work here.
func newHostNet(log logrus.FieldLogger) (hostNet, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("requires root")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("iproute2 is missing: %w", err)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return nil, fmt.Errorf("no TUN/TAP support: %w", err)
	}
	return &linuxNet{log: log, ipPath: ipPath}, nil
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

// nsPath turns a namespace name into its path under /var/run/netns.
func nsPath(ns string) string {
	if strings.Contains(ns, "/") {
		return ns
	}
	return "/var/run/netns/" + ns
}

type linuxTap struct {
	fd   int
	name string
	ns   string
	once sync.Once
}

// Close releases the TUN file descriptor; the kernel removes the device.
func (t *linuxTap) Close() error {
	var err error
	t.once.Do(func() {
		if e := syscall.Close(t.fd); e != nil {
			err = fmt.Errorf("close tap %s in %q: %w", t.name, t.ns, e)
		}
	})
	return err
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
	tap = &linuxTap{fd: fd, name: cfg.name, ns: cfg.ns}
	if err := h.configure(cfg); err != nil {
		_ = tap.Close()
		return nil, true, &hostError{retvalSyscallError3, err}
	}
	return tap, true, nil
}

// configure sets the requested attributes of the new device.
func (h *linuxNet) configure(cfg hostTapConfig) error {
	var cmds [][]string
	if !cfg.tun {
		cmds = append(cmds, []string{"link", "set", "dev", cfg.name, "address", net.HardwareAddr(cfg.mac[:]).String()})
	}
	if cfg.mtu != 0 {
		cmds = append(cmds, []string{"link", "set", "dev", cfg.name, "mtu", strconv.Itoa(int(cfg.mtu))})
	}
	if cfg.bridge != "" {
		cmds = append(cmds, []string{"link", "set", "dev", cfg.name, "master", cfg.bridge})
	}
	cmds = append(cmds, []string{"link", "set", "dev", cfg.name, "up"})
	if cfg.ip4.IsValid() {
		cmds = append(cmds, []string{"-4", "addr", "add", cfg.ip4.String(), "dev", cfg.name})
	}
	if cfg.ip6.IsValid() {
		cmds = append(cmds, []string{"-6", "addr", "add", cfg.ip6.String(), "dev", cfg.name, "nodad"})
	}
	if cfg.gw4.IsValid() {
		cmds = append(cmds, []string{"-4", "route", "add", "default", "via", cfg.gw4.String(), "dev", cfg.name})
	}
	if cfg.gw6.IsValid() {
		cmds = append(cmds, []string{"-6", "route", "add", "default", "via", cfg.gw6.String(), "dev", cfg.name})
	}
	for _, args := range cmds {
		out, err := exec.Command(h.ipPath, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

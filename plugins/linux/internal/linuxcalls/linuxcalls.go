// Package linuxcalls holds the kernel helpers shared by the Linux
// descriptors: failure classification, link lookup with errors that name the
// link and namespace, address parsing and the ethtool checksum ioctls. It
// keeps no state and knows nothing of keys or the scheduler.
package linuxcalls

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

// ErrLinkNotFound is matched by the error for a link that is not (yet) in
// its namespace.
var ErrLinkNotFound = errors.New("link not found")

// IsRetriable tells whether err means that a kernel object is just not there
// yet (a namespace, a link, an address or route a value relies on), so the
// same operation may succeed later. Invalid input, and everything else the
// kernel refuses (EEXIST, EINVAL, EPERM, ...), is not retriable.
func IsRetriable(err error) bool {
	if err == nil {
		return false
	}
	var invalid *api.InvalidValueError
	if errors.As(err, &invalid) || errors.Is(err, nsplugin.ErrUnsupportedReference) {
		return false
	}
	var notFound netlink.LinkNotFoundError
	if errors.Is(err, nsplugin.ErrNamespaceNotFound) || errors.Is(err, ErrLinkNotFound) ||
		errors.As(err, &notFound) || errors.Is(err, netlink.ErrDumpInterrupted) {
		return true
	}
	for _, errno := range []unix.Errno{unix.ENOENT, unix.ENODEV, unix.ENXIO, unix.ESRCH,
		unix.ENETUNREACH, unix.EAGAIN, unix.EBUSY, unix.EINTR} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// IsGone tells whether err says that the object an operation was about no
// longer exists (its namespace or link is gone, the address or route is not
// there): what a Delete may treat as done.
func IsGone(err error) bool {
	var notFound netlink.LinkNotFoundError
	return errors.Is(err, nsplugin.ErrNamespaceNotFound) || errors.Is(err, ErrLinkNotFound) ||
		errors.As(err, &notFound) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ESRCH) ||
		errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT)
}

// LinkByName finds a link by its kernel name; nsPath names the namespace in
// the error. A missing link gives an error matching ErrLinkNotFound.
func LinkByName(h *netlink.Handle, name, nsPath string) (netlink.Link, error) {
	link, err := h.LinkByName(name)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) || errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("link %q in namespace %s: %w", name, nsPath, ErrLinkNotFound)
		}
		return nil, fmt.Errorf("look up link %q in namespace %s: %w", name, nsPath, err)
	}
	return link, nil
}

// Retry runs a netlink dump again (up to 3 times) while the kernel reports
// that it was interrupted by a concurrent change.
func Retry[T any](dump func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for range 3 {
		v, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return v, err
}

// PrefixToIPNet converts p to a *net.IPNet keeping its host bits; IPv4
// addresses use the 4-byte form.
func PrefixToIPNet(p netip.Prefix) *net.IPNet {
	a := p.Addr().Unmap()
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(p.Bits(), a.BitLen())}
}

// IPNetToPrefix converts n to a netip.Prefix keeping its host bits.
func IPNetToPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, bits := n.Mask.Size()
	if bits != a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

// CanonicalAddress returns s in canonical CIDR form (host bits kept), or s
// unchanged when it does not parse.
func CanonicalAddress(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String()
	}
	return s
}

// CanonicalMAC returns s as a lower-case colon-separated MAC, or s unchanged
// (lower-cased) when it does not parse.
func CanonicalMAC(s string) string {
	if hw, err := net.ParseMAC(s); err == nil {
		return hw.String()
	}
	return strings.ToLower(s)
}

// ParseMAC parses a 6-byte MAC address.
func ParseMAC(s string) (net.HardwareAddr, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("%q is not a 6-byte MAC address", s)
	}
	return hw, nil
}

// IsIPv6LinkLocal tells whether p is an IPv6 link-local address, which the
// kernel adds by itself.
func IsIPv6LinkLocal(p netip.Prefix) bool {
	return p.Addr().Is6() && p.Addr().IsLinkLocalUnicast()
}

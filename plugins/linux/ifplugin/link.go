package ifplugin

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
)

// builtinLoopbackAddrs are the addresses the kernel gives a loopback itself;
// Delete never removes them.
var builtinLoopbackAddrs = [...]netip.Prefix{
	netip.MustParsePrefix("127.0.0.1/8"),
	netip.MustParsePrefix("::1/128"),
}

// nsLink is one link, with a netlink handle open in its namespace.
type nsLink struct {
	d    *interfaceDescriptor
	h    *netlink.Handle
	ref  *linuxif.NetNamespace
	path string
	link netlink.Link
}

// nsHandle is a netlink handle open in a namespace, with the namespace path
// for messages.
type nsHandle struct {
	h     *netlink.Handle
	ref   *linuxif.NetNamespace
	path  string
	close func()
}

// openNs opens a netlink handle in the namespace of ref.
func (d *interfaceDescriptor) openNs(ref *linuxif.NetNamespace) (*nsHandle, error) {
	h, closeH, err := d.ns.NetlinkHandle(ref)
	if err != nil {
		return nil, err
	}
	return &nsHandle{h: h, ref: ref, path: d.nsPath(ref), close: closeH}, nil
}

// find returns the link with the given kernel name.
func (n *nsHandle) find(d *interfaceDescriptor, name string) (*nsLink, error) {
	link, err := linuxcalls.LinkByName(n.h, name, n.path)
	if err != nil {
		return nil, err
	}
	return &nsLink{d: d, h: n.h, ref: n.ref, path: n.path, link: link}, nil
}

// inLink runs fn on the link of iface in its namespace.
func (d *interfaceDescriptor) inLink(iface *linuxif.Interface, fn func(l *nsLink) error) error {
	n, err := d.openNs(iface.GetNamespace())
	if err != nil {
		return err
	}
	defer n.close()
	l, err := n.find(d, hostName(iface))
	if err != nil {
		return err
	}
	return fn(l)
}

// name is the current kernel name of the link.
func (l *nsLink) name() string { return l.link.Attrs().Name }

// refresh reads the link again by its index.
func (l *nsLink) refresh() error {
	link, err := l.h.LinkByIndex(l.link.Attrs().Index)
	if err != nil {
		return fmt.Errorf("read link %q (index %d) in namespace %s: %w", l.name(), l.link.Attrs().Index, l.path, err)
	}
	l.link = link
	return nil
}

// metadata describes the link for the scheduler.
func (l *nsLink) metadata(iface *linuxif.Interface) *InterfaceMetadata {
	return &InterfaceMetadata{
		LinkIndex:  l.link.Attrs().Index,
		HostIfName: l.name(),
		Type:       iface.GetType(),
		Namespace:  iface.GetNamespace(),
	}
}

// setDown sets the link down.
func (l *nsLink) setDown() error {
	if l.link.Attrs().Flags&net.FlagUp == 0 {
		return nil
	}
	if err := l.h.LinkSetDown(l.link); err != nil {
		return fmt.Errorf("set link %q down in namespace %s: %w", l.name(), l.path, err)
	}
	return l.refresh()
}

// rename gives the link a new kernel name (it must be down).
func (l *nsLink) rename(name string) error {
	if l.name() == name {
		return nil
	}
	if err := l.h.LinkSetName(l.link, name); err != nil {
		return fmt.Errorf("rename link %q to %q in namespace %s: %w", l.name(), name, l.path, err)
	}
	return l.refresh()
}

// moveTo moves the link into the namespace of dst and returns it there.
func (l *nsLink) moveTo(dst *nsHandle) (*nsLink, error) {
	ns, err := l.d.ns.NsHandle(dst.ref)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	name := l.name()
	if err := l.h.LinkSetNsFd(l.link, int(ns)); err != nil {
		return nil, fmt.Errorf("move link %q from namespace %s to %s: %w", name, l.path, dst.path, err)
	}
	return dst.find(l.d, name)
}

// configure applies MAC, MTU, addresses, checksum offloading and admin state
// of iface to the link. With old set it also removes the addresses old had
// and iface has not.
func (l *nsLink) configure(iface, old *linuxif.Interface) error {
	attrs := l.link.Attrs()
	if mac := iface.GetPhysAddress(); mac != "" {
		hw, err := linuxcalls.ParseMAC(mac)
		if err != nil {
			return err
		}
		if !bytes.Equal(attrs.HardwareAddr, hw) {
			if err := l.h.LinkSetHardwareAddr(l.link, hw); err != nil {
				return fmt.Errorf("set MAC %s of link %q in namespace %s: %w", hw, l.name(), l.path, err)
			}
		}
	}
	if mtu := int(iface.GetMtu()); mtu != 0 && attrs.MTU != mtu {
		if err := l.h.LinkSetMTU(l.link, mtu); err != nil {
			return fmt.Errorf("set MTU %d of link %q in namespace %s: %w", mtu, l.name(), l.path, err)
		}
	}
	if old != nil {
		want := make(map[netip.Prefix]bool)
		for _, a := range iface.GetIpAddresses() {
			if p, err := netip.ParsePrefix(a); err == nil {
				want[p] = true
			}
		}
		for _, a := range old.GetIpAddresses() {
			if p, err := netip.ParsePrefix(a); err == nil && !want[p] {
				if err := l.delAddress(p); err != nil {
					return err
				}
			}
		}
	}
	for _, a := range iface.GetIpAddresses() {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return fmt.Errorf("ip address %q: %w", a, err)
		}
		if err := l.addAddress(p); err != nil {
			return err
		}
	}
	if iface.GetType() == linuxif.Interface_VETH {
		if err := l.setChecksumOffload(iface.GetVeth()); err != nil {
			return err
		}
	}
	up := attrs.Flags&net.FlagUp != 0
	switch {
	case iface.GetEnabled() && !up:
		if err := l.h.LinkSetUp(l.link); err != nil {
			return fmt.Errorf("set link %q up in namespace %s: %w", l.name(), l.path, err)
		}
	case !iface.GetEnabled() && up && iface.GetType() != linuxif.Interface_LOOPBACK:
		if err := l.h.LinkSetDown(l.link); err != nil {
			return fmt.Errorf("set link %q down in namespace %s: %w", l.name(), l.path, err)
		}
	}
	return l.refresh()
}

// addAddress adds one address; one that is already there is fine.
func (l *nsLink) addAddress(p netip.Prefix) error {
	addr := &netlink.Addr{IPNet: linuxcalls.PrefixToIPNet(p)}
	if p.Addr().Is6() {
		addr.Flags = unix.IFA_F_NODAD // IPAM-assigned: duplicate detection only delays use
	}
	if err := l.h.AddrAdd(l.link, addr); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add address %s to link %q in namespace %s: %w", p, l.name(), l.path, err)
	}
	return nil
}

// delAddress removes one address; one that is not there is fine.
func (l *nsLink) delAddress(p netip.Prefix) error {
	addr := &netlink.Addr{IPNet: linuxcalls.PrefixToIPNet(p)}
	if err := l.h.AddrDel(l.link, addr); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("remove address %s from link %q in namespace %s: %w", p, l.name(), l.path, err)
	}
	return nil
}

// delAddresses removes the addresses of iface from the link, except the
// kernel's own loopback addresses.
func (l *nsLink) delAddresses(iface *linuxif.Interface) error {
	for _, a := range iface.GetIpAddresses() {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			continue
		}
		if iface.GetType() == linuxif.Interface_LOOPBACK && isBuiltinLoopbackAddr(p) {
			continue
		}
		if err := l.delAddress(p); err != nil {
			return err
		}
	}
	return nil
}

// isBuiltinLoopbackAddr tells whether p is 127.0.0.1/8 or ::1/128.
func isBuiltinLoopbackAddr(p netip.Prefix) bool {
	for _, b := range builtinLoopbackAddrs {
		if p == b {
			return true
		}
	}
	return false
}

// addresses lists the addresses of the link.
func (l *nsLink) addresses() ([]netip.Prefix, error) {
	addrs, err := linuxcalls.Retry(func() ([]netlink.Addr, error) { return l.h.AddrList(l.link, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("list addresses of link %q in namespace %s: %w", l.name(), l.path, err)
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if p, ok := linuxcalls.IPNetToPrefix(a.IPNet); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// offloadSetting converts a model checksum setting to what to set (nil:
// leave alone).
func offloadSetting(s linuxif.VethLink_ChecksumOffloading) *bool {
	var on bool
	switch s {
	case linuxif.VethLink_CHKSM_OFFLOAD_ENABLED:
		on = true
	case linuxif.VethLink_CHKSM_OFFLOAD_DISABLED:
		on = false
	default:
		return nil
	}
	return &on
}

// setChecksumOffload applies the rx/tx checksum offloading of a VETH end.
func (l *nsLink) setChecksumOffload(veth *linuxif.VethLink) error {
	rx, tx := offloadSetting(veth.GetRxChecksumOffloading()), offloadSetting(veth.GetTxChecksumOffloading())
	if rx == nil && tx == nil {
		return nil
	}
	return l.withSocket(func(sock int) error {
		if err := linuxcalls.SetChecksumOffload(sock, l.name(), rx, tx); err != nil {
			return fmt.Errorf("in namespace %s: %w", l.path, err)
		}
		return nil
	})
}

// checksumOffload reads the rx/tx checksum offloading of the link.
func (l *nsLink) checksumOffload() (rx, tx bool, err error) {
	err = l.withSocket(func(sock int) error {
		var e error
		rx, tx, e = linuxcalls.ChecksumOffload(sock, l.name())
		if e != nil {
			return fmt.Errorf("in namespace %s: %w", l.path, e)
		}
		return nil
	})
	return rx, tx, err
}

// withSocket runs fn with a datagram socket opened in the link's namespace;
// only the socket is created inside it, the ioctls run on the caller's
// thread.
func (l *nsLink) withSocket(fn func(sock int) error) error {
	sock := -1
	err := l.d.ns.WithNamespace(l.ref, func() error {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open ioctl socket in namespace %s: %w", l.path, err)
		}
		sock = s
		return nil
	})
	if err != nil {
		return err
	}
	defer unix.Close(sock)
	return fn(sock)
}

// createLoopback configures the loopback of a namespace.
func (d *interfaceDescriptor) createLoopback(iface *linuxif.Interface) (*InterfaceMetadata, error) {
	var meta *InterfaceMetadata
	err := d.inLink(iface, func(l *nsLink) error {
		if err := l.configure(iface, nil); err != nil {
			_ = l.delAddresses(iface) // undo what was added
			return err
		}
		meta = l.metadata(iface)
		return nil
	})
	return meta, err
}

// deleteLoopback removes the addresses the value added; the loopback stays.
func (d *interfaceDescriptor) deleteLoopback(iface *linuxif.Interface) error {
	err := d.inLink(iface, func(l *nsLink) error { return l.delAddresses(iface) })
	if linuxcalls.IsGone(err) {
		return nil
	}
	return err
}

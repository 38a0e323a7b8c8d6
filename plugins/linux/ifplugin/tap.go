package ifplugin

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
)

// locate asks the TapLocator, if any, where VPP put a TAP.
func (d *interfaceDescriptor) locate(vppTap string) (TapLocation, bool) {
	if d.locator == nil {
		return TapLocation{}, false
	}
	return d.locator(vppTap)
}

// createTap finds the Linux side of the VPP TAP, moves it into the value's
// namespace under its host name and configures it (see the package doc for
// where it is looked for).
func (d *interfaceDescriptor) createTap(iface *linuxif.Interface) (*InterfaceMetadata, error) {
	dst, err := d.openNs(iface.GetNamespace())
	if err != nil {
		return nil, err
	}
	defer dst.close()
	host, vppTap := hostName(iface), iface.GetTap().GetVppTapIfName()
	loc, located := d.locate(vppTap)

	var (
		l      *nsLink
		origin TapLocation
		moved  bool
	)
	found, err := dst.find(d, host)
	switch {
	case err == nil:
		l, origin = found, TapLocation{HostIfName: host, Namespace: iface.GetNamespace()}
		if located {
			origin = loc
		}
	case !errors.Is(err, linuxcalls.ErrLinkNotFound):
		return nil, err
	default:
		if !located {
			loc = TapLocation{HostIfName: host} // the agent's namespace
		}
		origin = loc
		src, err := d.openNs(loc.Namespace)
		if err != nil {
			return nil, err
		}
		defer src.close()
		if l, err = src.find(d, loc.HostIfName); err != nil {
			return nil, fmt.Errorf("linux side of VPP TAP %s: %w", vppTap, err)
		}
		if err := checkTap(l); err != nil {
			return nil, err
		}
		same, err := d.sameNamespace(loc.Namespace, iface.GetNamespace())
		if err != nil {
			return nil, err
		}
		if !same {
			if err := l.setDown(); err != nil {
				return nil, err
			}
			if l, err = l.moveTo(dst); err != nil {
				return nil, err
			}
			moved = true
		}
	}
	err = checkTap(l)
	if err == nil && l.name() != host {
		if err = l.setDown(); err == nil {
			err = l.rename(host)
		}
		moved = true
	}
	if err == nil {
		err = l.configure(iface, nil)
	}
	if err != nil {
		undo := l.delAddresses(iface)
		if moved && undo == nil {
			undo = d.returnTap(l, &origin)
		}
		if undo != nil {
			err = errors.Join(err, fmt.Errorf("undo: %w", undo))
		}
		return nil, err
	}
	meta := l.metadata(iface)
	meta.TapOrigin = &origin
	return meta, nil
}

// deleteTap removes the value's addresses, sets the TAP down and returns it
// to its origin. VPP deletes the device with the VPP TAP.
func (d *interfaceDescriptor) deleteTap(iface *linuxif.Interface, meta *InterfaceMetadata) error {
	var origin *TapLocation
	if meta != nil {
		origin = meta.TapOrigin
	}
	err := d.inLink(iface, func(l *nsLink) error {
		if err := l.delAddresses(iface); err != nil {
			return err
		}
		if err := l.setDown(); err != nil {
			return err
		}
		return d.returnTap(l, origin)
	})
	if linuxcalls.IsGone(err) {
		return nil // the TAP or its origin namespace is gone: nothing to return
	}
	return err
}

// returnTap renames l to its origin name and moves it to its origin
// namespace. A nil origin leaves it where it is.
func (d *interfaceDescriptor) returnTap(l *nsLink, origin *TapLocation) error {
	if origin == nil || origin.HostIfName == "" {
		return nil
	}
	same, err := d.sameNamespace(l.ref, origin.Namespace)
	if err != nil {
		return err
	}
	if same && l.name() == origin.HostIfName {
		return nil
	}
	if err := l.setDown(); err != nil {
		return err
	}
	if err := l.rename(origin.HostIfName); err != nil {
		return err
	}
	if same {
		return nil
	}
	home, err := d.openNs(origin.Namespace)
	if err != nil {
		return err
	}
	defer home.close()
	_, err = l.moveTo(home)
	return err
}

// checkTap makes sure l is a TAP device, so another link that happens to
// have the name is never taken over.
func checkTap(l *nsLink) error {
	t, ok := l.link.(*netlink.Tuntap)
	if !ok {
		return fmt.Errorf("link %q in namespace %s is a %s, not a TAP", l.name(), l.path, l.link.Type())
	}
	if t.Mode != 0 && t.Mode != netlink.TUNTAP_MODE_TAP {
		return fmt.Errorf("link %q in namespace %s is a TUN, not a TAP", l.name(), l.path)
	}
	return nil
}

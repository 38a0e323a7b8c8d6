package ifplugin

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
)

// createVethPrimary creates the pair in the primary's namespace: the primary
// configured under its host name, the peer down under its temporary name.
func (d *interfaceDescriptor) createVethPrimary(iface *linuxif.Interface) (*InterfaceMetadata, error) {
	n, err := d.openNs(iface.GetNamespace())
	if err != nil {
		return nil, err
	}
	defer n.close()
	host, tmp := hostName(iface), vethTempName(iface.GetVeth().GetPeerIfName())
	if stale, err := n.h.LinkByName(tmp); err == nil {
		// Left by an interrupted earlier run: the name is ours.
		if err := n.h.LinkDel(stale); err != nil {
			return nil, fmt.Errorf("remove stale veth end %q in namespace %s: %w", tmp, n.path, err)
		}
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = host
	if err := n.h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: tmp}); err != nil {
		return nil, fmt.Errorf("add veth pair %q/%q in namespace %s: %w", host, tmp, n.path, err)
	}
	l, err := n.find(d, host)
	if err == nil {
		err = l.configure(iface, nil)
	}
	if err != nil {
		if link, lerr := n.h.LinkByName(host); lerr == nil {
			_ = n.h.LinkDel(link) // nothing of a failed Create may remain
		}
		return nil, err
	}
	return l.metadata(iface), nil
}

// createVethSecondary takes the temporary peer from the primary's namespace,
// moves it into its own namespace under its host name and configures it.
func (d *interfaceDescriptor) createVethSecondary(iface *linuxif.Interface) (*InterfaceMetadata, error) {
	peer := iface.GetVeth().GetPeerIfName()
	pm, ok := d.peerMetadata(peer)
	if !ok {
		return nil, fmt.Errorf("primary end %s of the veth pair is not created yet: %w", peer, linuxcalls.ErrLinkNotFound)
	}
	src, err := d.openNs(pm.Namespace)
	if err != nil {
		return nil, err
	}
	defer src.close()
	tmp := vethTempName(iface.GetName())
	l, err := src.find(d, tmp)
	if err != nil {
		return nil, fmt.Errorf("peer of veth %s (%q): %w", peer, tmp, err)
	}
	dst := src
	same, err := d.sameNamespace(pm.Namespace, iface.GetNamespace())
	if err != nil {
		return nil, err
	}
	if !same {
		if dst, err = d.openNs(iface.GetNamespace()); err != nil {
			return nil, err
		}
		defer dst.close()
		if l, err = l.moveTo(dst); err != nil {
			return nil, err
		}
	}
	err = l.rename(hostName(iface))
	if err == nil {
		err = l.configure(iface, nil)
	}
	if err != nil {
		if rerr := d.detachVethEnd(l, iface, src); rerr != nil {
			err = errors.Join(err, fmt.Errorf("undo: %w", rerr))
		}
		return nil, err
	}
	return l.metadata(iface), nil
}

// deleteVethPrimary deletes the pair.
func (d *interfaceDescriptor) deleteVethPrimary(iface *linuxif.Interface) error {
	err := d.inLink(iface, func(l *nsLink) error {
		if err := l.h.LinkDel(l.link); err != nil {
			return fmt.Errorf("delete veth %q in namespace %s: %w", l.name(), l.path, err)
		}
		return nil
	})
	if linuxcalls.IsGone(err) {
		return nil // the pair went with its namespace
	}
	return err
}

// deleteVethSecondary hands the end back to the primary: without its
// addresses, down, under its temporary name, in the primary's namespace. If
// the primary is not known, the pair is deleted.
func (d *interfaceDescriptor) deleteVethSecondary(iface *linuxif.Interface) error {
	err := d.inLink(iface, func(l *nsLink) error {
		pm, ok := d.peerMetadata(iface.GetVeth().GetPeerIfName())
		if !ok {
			if err := l.h.LinkDel(l.link); err != nil {
				return fmt.Errorf("delete veth %q in namespace %s: %w", l.name(), l.path, err)
			}
			return nil
		}
		home, err := d.openNs(pm.Namespace)
		if err != nil {
			return err
		}
		defer home.close()
		return d.detachVethEnd(l, iface, home)
	})
	if linuxcalls.IsGone(err) {
		return nil
	}
	return err
}

// detachVethEnd returns the secondary end l to the state the primary's Create
// left it in, in the namespace of home.
func (d *interfaceDescriptor) detachVethEnd(l *nsLink, iface *linuxif.Interface, home *nsHandle) error {
	if err := l.delAddresses(iface); err != nil {
		return err
	}
	if err := l.setDown(); err != nil {
		return err
	}
	if err := l.rename(vethTempName(iface.GetName())); err != nil {
		return err
	}
	same, err := d.sameNamespace(l.ref, home.ref)
	if err != nil || same {
		return err
	}
	_, err = l.moveTo(home)
	return err
}

// sameNamespace tells whether two references name the same namespace.
func (d *interfaceDescriptor) sameNamespace(a, b *linuxif.NetNamespace) (bool, error) {
	if sameNamespaceRef(a, b) {
		return true, nil
	}
	pa, errA := d.ns.NamespacePath(a)
	pb, errB := d.ns.NamespacePath(b)
	if errA == nil && errB == nil && pa == pb {
		return true, nil
	}
	na, err := d.ns.NsHandle(a)
	if err != nil {
		return false, err
	}
	defer na.Close()
	nb, err := d.ns.NsHandle(b)
	if err != nil {
		return false, err
	}
	defer nb.Close()
	return na.Equal(nb), nil
}

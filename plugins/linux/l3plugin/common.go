package l3plugin

import (
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

// DepInterface labels the dependency of a route or ARP entry on its Linux
// interface.
const DepInterface = "interface-exists"

// DescriptorDeps is what the route and ARP descriptors need.
type DescriptorDeps struct {
	// Log receives one line per change (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// NsPlugin opens namespaces. Required.
	NsPlugin nsplugin.API
	// IfMetadata returns the metadata map of the Linux interface descriptor
	// (ifplugin.InterfaceDescriptorName). Required.
	IfMetadata func() kvapi.MetadataMap
}

// base is what both descriptors share: finding the link of an interface.
type base struct {
	log    logrus.FieldLogger
	ns     nsplugin.API
	ifMeta func() kvapi.MetadataMap
}

func newBase(deps DescriptorDeps, name string) base {
	return base{log: infra.LoggerOr(deps.Log, name), ns: deps.NsPlugin, ifMeta: deps.IfMetadata}
}

// ifLink is the link of a Linux interface, with a netlink handle open in its
// namespace.
type ifLink struct {
	h     *netlink.Handle
	link  netlink.Link
	path  string
	close func()
}

// interfaceMetadata returns the ifplugin metadata of a Linux interface.
func (b *base) interfaceMetadata(iface string) (*ifplugin.InterfaceMetadata, error) {
	var m kvapi.MetadataMap
	if b.ifMeta != nil {
		m = b.ifMeta()
	}
	if m != nil {
		if v, ok := m.GetValue(iface); ok {
			if meta, ok := v.(*ifplugin.InterfaceMetadata); ok && meta != nil {
				return meta, nil
			}
		}
	}
	return nil, fmt.Errorf("linux interface %s is not configured: %w", iface, linuxcalls.ErrLinkNotFound)
}

// openLink finds the link of a Linux interface in its namespace; close the
// result when done.
func (b *base) openLink(iface string) (*ifLink, error) {
	meta, err := b.interfaceMetadata(iface)
	if err != nil {
		return nil, err
	}
	return b.openLinkOf(meta)
}

// openLinkOf finds the link described by meta.
func (b *base) openLinkOf(meta *ifplugin.InterfaceMetadata) (*ifLink, error) {
	path, err := b.ns.NamespacePath(meta.Namespace)
	if err != nil {
		return nil, err
	}
	h, closeH, err := b.ns.NetlinkHandle(meta.Namespace)
	if err != nil {
		return nil, err
	}
	link, err := linuxcalls.LinkByName(h, meta.HostIfName, path)
	if err != nil {
		closeH()
		return nil, err
	}
	return &ifLink{h: h, link: link, path: path, close: closeH}, nil
}

// linkCache opens each interface's link once during a Retrieve.
type linkCache struct {
	b     *base
	links map[string]*ifLink // nil entry: interface, namespace or link missing
}

// get returns the link of iface, or nil if it is not there.
func (c *linkCache) get(iface string) (*ifLink, error) {
	if l, ok := c.links[iface]; ok {
		return l, nil
	}
	l, err := c.b.openLink(iface)
	if err != nil && !linuxcalls.IsGone(err) {
		return nil, err
	}
	c.links[iface] = l
	return l, nil
}

// closeAll closes every open handle.
func (c *linkCache) closeAll() {
	for _, l := range c.links {
		if l != nil {
			l.close()
		}
	}
}

// ifaceDependency is the dependency on a Linux interface.
func ifaceDependency(iface string) kvapi.Dependency {
	return kvapi.Dependency{Label: DepInterface, Key: linuxif.InterfaceKey(iface)}
}

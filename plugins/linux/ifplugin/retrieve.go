package ifplugin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"google.golang.org/protobuf/proto"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
)

// retrieve reads back the correlated interfaces (see the package doc). A
// namespace or link that is not there means the value is not there; other
// failures fail the whole Retrieve.
func (d *interfaceDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	handles := make(map[string]*nsHandle) // by namespace path; nil: namespace missing
	defer func() {
		for _, n := range handles {
			if n != nil {
				n.close()
			}
		}
	}()
	var out []kvapi.KVWithMetadata
	for _, kv := range correlate {
		iface, ok := kv.Value.(*linuxif.Interface)
		if !ok || ValidateInterface(kv.Key, iface) != nil {
			continue
		}
		path := d.nsPath(iface.GetNamespace())
		n, seen := handles[path]
		if !seen {
			var err error
			n, err = d.openNs(iface.GetNamespace())
			if err != nil && !linuxcalls.IsGone(err) {
				return nil, fmt.Errorf("retrieve interface %s: %w", iface.GetName(), err)
			}
			handles[path] = n // nil when the namespace is gone
		}
		if n == nil {
			d.log.WithField("interface", iface.GetName()).Debugf("namespace %s not found: interface not retrieved", path)
			continue
		}
		l, err := n.find(d, hostName(iface))
		if errors.Is(err, linuxcalls.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("retrieve interface %s: %w", iface.GetName(), err)
		}
		if err := matchType(l, iface); err != nil {
			d.log.WithField("interface", iface.GetName()).Warnf("not adopted: %v", err)
			continue
		}
		value, err := l.observe(iface)
		if err != nil {
			return nil, fmt.Errorf("retrieve interface %s: %w", iface.GetName(), err)
		}
		meta := l.metadata(iface)
		if iface.GetType() == linuxif.Interface_TAP_TO_VPP {
			prev, _ := kv.Metadata.(*InterfaceMetadata)
			meta.TapOrigin = d.retrievedTapOrigin(iface, prev)
		}
		out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: value, Metadata: meta, Origin: kvapi.FromNB})
	}
	return out, nil
}

// retrievedTapOrigin is the origin of a TAP found in place: the one the
// scheduler still holds, else the locator's answer, else where it is.
func (d *interfaceDescriptor) retrievedTapOrigin(iface *linuxif.Interface, held *InterfaceMetadata) *TapLocation {
	if held != nil && held.TapOrigin != nil {
		return held.TapOrigin
	}
	if loc, ok := d.locate(iface.GetTap().GetVppTapIfName()); ok {
		return &loc
	}
	return &TapLocation{HostIfName: hostName(iface), Namespace: iface.GetNamespace()}
}

// matchType checks that the link found under the host name is of the
// value's kind.
func matchType(l *nsLink, iface *linuxif.Interface) error {
	switch iface.GetType() {
	case linuxif.Interface_VETH:
		if l.link.Type() != "veth" {
			return fmt.Errorf("link %q in namespace %s is a %s, not a veth", l.name(), l.path, l.link.Type())
		}
	case linuxif.Interface_TAP_TO_VPP:
		return checkTap(l)
	case linuxif.Interface_LOOPBACK:
		if l.link.Attrs().Flags&net.FlagLoopback == 0 {
			return fmt.Errorf("link %q in namespace %s is not a loopback", l.name(), l.path)
		}
	}
	return nil
}

// observe returns the kernel state of the link in the shape of the NB value
// iface: what iface leaves to the kernel is reported unset, what it sets is
// reported as the kernel has it (in the NB spelling when equal).
func (l *nsLink) observe(iface *linuxif.Interface) (*linuxif.Interface, error) {
	v := proto.Clone(iface).(*linuxif.Interface)
	attrs := l.link.Attrs()
	if mac := iface.GetPhysAddress(); mac != "" && linuxcalls.CanonicalMAC(mac) != attrs.HardwareAddr.String() {
		v.PhysAddress = attrs.HardwareAddr.String()
	}
	if iface.GetMtu() != 0 {
		v.Mtu = uint32(attrs.MTU)
	}
	if iface.GetType() != linuxif.Interface_LOOPBACK || iface.GetEnabled() {
		v.Enabled = attrs.Flags&net.FlagUp != 0
	}

	kernel, err := l.addresses()
	if err != nil {
		return nil, err
	}
	present := make(map[netip.Prefix]bool, len(kernel))
	for _, p := range kernel {
		present[p] = true
	}
	wanted := make(map[netip.Prefix]bool)
	v.IpAddresses = nil
	for _, a := range iface.GetIpAddresses() {
		if p, err := netip.ParsePrefix(a); err == nil {
			wanted[p] = true
			if present[p] {
				v.IpAddresses = append(v.IpAddresses, a)
			}
		}
	}
	for _, p := range kernel {
		if wanted[p] || linuxcalls.IsIPv6LinkLocal(p) ||
			(iface.GetType() == linuxif.Interface_LOOPBACK && isBuiltinLoopbackAddr(p)) {
			continue
		}
		v.IpAddresses = append(v.IpAddresses, p.String())
	}

	if veth := iface.GetVeth(); veth != nil && iface.GetType() == linuxif.Interface_VETH &&
		(offloadSetting(veth.GetRxChecksumOffloading()) != nil || offloadSetting(veth.GetTxChecksumOffloading()) != nil) {
		rx, tx, err := l.checksumOffload()
		if err != nil {
			return nil, err
		}
		if offloadSetting(veth.GetRxChecksumOffloading()) != nil {
			v.GetVeth().RxChecksumOffloading = offloadState(rx)
		}
		if offloadSetting(veth.GetTxChecksumOffloading()) != nil {
			v.GetVeth().TxChecksumOffloading = offloadState(tx)
		}
	}
	return v, nil
}

// offloadState converts a kernel checksum offloading state to the model.
func offloadState(on bool) linuxif.VethLink_ChecksumOffloading {
	if on {
		return linuxif.VethLink_CHKSM_OFFLOAD_ENABLED
	}
	return linuxif.VethLink_CHKSM_OFFLOAD_DISABLED
}

package ifplugin

import (
	"fmt"
	"net/netip"

	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/vppcalls"
)

// addressDescriptor describes the static interface addresses, derived from
// Interface.ip_addresses under vpp/interface/<iface>/address/static/<ip>. They are
// added after the interface is created (and bound to its VRF) and removed before it is
// deleted. They have no Retrieve: the interface's Retrieve reports its addresses.
func (p *Plugin) addressDescriptor() *kvapi.KVDescriptor {
	return &kvapi.KVDescriptor{
		Name: AddressDescriptorName,
		KeySelector: func(key string) bool {
			_, src, _, ok := ifmodel.ParseInterfaceAddressKey(key)
			return ok && src == ifmodel.AddressStatic
		},
		Create: func(key string, _ proto.Message) (kvapi.Metadata, error) {
			return nil, p.setAddress(key, true)
		},
		Delete: func(key string, _ proto.Message, _ kvapi.Metadata) error {
			return p.setAddress(key, false)
		},
		IsRetriableFailure: isRetriable,
	}
}

func (p *Plugin) setAddress(key string, isAdd bool) error {
	iface, _, addr, _ := ifmodel.ParseInterfaceAddressKey(key)
	op := "add"
	if !isAdd {
		op = "delete"
	}
	prefix, err := netip.ParsePrefix(addr)
	if err != nil {
		return kvapi.NewInvalidValueError(fmt.Errorf("%s address %s of interface %s: %w", op, addr, iface, err), "ip_addresses")
	}
	md, err := p.ifaceMeta(iface)
	if err != nil {
		return fmt.Errorf("%s address %s: %w", op, addr, err)
	}
	if err := p.h.NewBatch().AddDelAddress(md.SwIfIndex, prefix, isAdd).Send(); err != nil {
		return fmt.Errorf("%s address %s of interface %s (sw_if_index %d): %w", op, addr, iface, md.SwIfIndex, err)
	}
	return nil
}

// unnumberedDescriptor describes the unnumbered settings, derived from
// Interface.unnumbered under vpp/interface/unnumbered/<iface>. A setting waits until
// the interface it borrows from has an address (of any source, including a DHCP
// lease).
func (p *Plugin) unnumberedDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*ifmodel.Interface_Unnumbered, kvapi.Metadata]{
		Name: UnnumberedDescriptorName,
		KeySelector: func(key string) bool {
			_, ok := ifmodel.ParseUnnumberedKey(key)
			return ok
		},
		Dependencies: func(_ string, u *ifmodel.Interface_Unnumbered) []kvapi.Dependency {
			if u.GetInterfaceWithIp() == "" {
				return nil
			}
			return []kvapi.Dependency{{Label: InterfaceWithIPDep,
				AnyOf: kvapi.AnyOfDependency{KeyPrefixes: []string{ifmodel.InterfaceAddressPrefix(u.InterfaceWithIp)}}}}
		},
		Create: func(key string, u *ifmodel.Interface_Unnumbered) (kvapi.Metadata, error) {
			return nil, p.setUnnumbered(key, u, true)
		},
		Delete: func(key string, u *ifmodel.Interface_Unnumbered, _ kvapi.Metadata) error {
			return p.setUnnumbered(key, u, false)
		},
		IsRetriableFailure: isRetriable,
	})
}

func (p *Plugin) setUnnumbered(key string, u *ifmodel.Interface_Unnumbered, enable bool) error {
	iface, _ := ifmodel.ParseUnnumberedKey(key)
	target := u.GetInterfaceWithIp()
	md, err := p.ifaceMeta(iface)
	if err != nil {
		return fmt.Errorf("unnumbered %s: %w", iface, err)
	}
	withIP, ok := p.GetInterfaceIndex().LookupByName(target)
	if !ok {
		return fmt.Errorf("unnumbered %s to %s: %w", iface, target, errUnnumberedTarget)
	}
	sw := md.SwIfIndex
	if enable {
		err = p.enableUnnumbered(sw, withIP)
	} else {
		err = p.disableUnnumbered(sw, withIP.SwIfIndex)
	}
	if err != nil {
		return fmt.Errorf("unnumbered %s (sw_if_index %d) to %s (sw_if_index %d), enable=%t: %w",
			iface, sw, target, withIP.SwIfIndex, enable, err)
	}
	return nil
}

// enableUnnumbered makes sw borrow the addresses of withIP. VPP 25.10 refuses
// sw_interface_set_unnumbered with UNEXPECTED_INTF_STATE unless both interfaces share
// their IPv4 and their IPv6 table (src/vnet/interface.c,
// vnet_sw_interface_check_table_same). The interface descriptor binds an unnumbered
// interface to no table of its own (boundTables), so sw first takes both tables of
// withIP, each of which exists because withIP is bound to it (on a single-stack IPv6
// node the donor's VRF has no IPv4 table: its IPv4 table stays 0, and so does sw's).
// When withIP has an IPv6 address IPv6 is also enabled on sw: unnumbered alone turns
// on only the ip6-unicast arc of sw (ip6_sw_interface_enable_disable), not its IPv6
// link (ip6_link.c ip6_link_enable): no link-local address, no IPv6 multicast, so no
// neighbour discovery with the host on the other side. Each enable is one lock in VPP,
// so sw is enabled only if it is not yet: after a restart or a retry the lock taken
// before is reused, and disableUnnumbered gives back exactly one. A failure undoes
// what was done.
func (p *Plugin) enableUnnumbered(sw uint32, withIP *ifaceidx.Metadata) error {
	do, undo := p.h.NewBatch(), p.h.NewBatch()
	for _, ipv6 := range []bool{false, true} {
		want, err := p.h.Table(withIP.SwIfIndex, ipv6)
		if err != nil {
			return err
		}
		have, err := p.h.Table(sw, ipv6)
		if err != nil {
			return err
		}
		if have != want {
			do.SetTable(sw, want, ipv6)
			undo.SetTable(sw, have, ipv6)
		}
	}
	if hasIPv6(withIP.IPAddresses) {
		enabled, err := p.h.IP6Enabled(sw)
		if err != nil {
			return err
		}
		if !enabled {
			do.SetIP6Enabled(sw, true)
			undo.SetIP6Enabled(sw, false)
		}
	}
	if err := do.Send(); err != nil {
		p.undo(sw, undo)
		return err
	}
	if err := p.h.NewBatch().SetUnnumbered(sw, withIP.SwIfIndex, true).Send(); err != nil {
		p.undo(sw, undo)
		return err
	}
	return nil
}

// disableUnnumbered stops sw borrowing the addresses of withIP, then gives back the
// IPv6 enable (an unnumbered interface has no address of its own, so an enabled IPv6
// link on it is enableUnnumbered's single lock) and puts sw back into the tables 0
// the interface descriptor leaves an unnumbered interface in (if sw stays, numbered,
// its update binds the tables it wants after this).
func (p *Plugin) disableUnnumbered(sw, withIP uint32) error {
	if err := p.h.NewBatch().SetUnnumbered(sw, withIP, false).Send(); err != nil {
		return err
	}
	enabled, err := p.h.IP6Enabled(sw)
	if err != nil {
		return err
	}
	b := p.h.NewBatch()
	if enabled {
		b.SetIP6Enabled(sw, false)
	}
	for _, ipv6 := range []bool{false, true} {
		have, err := p.h.Table(sw, ipv6)
		if err != nil {
			return err
		}
		if have != 0 {
			b.SetTable(sw, 0, ipv6)
		}
	}
	return b.Send()
}

// undo sends the requests that revert a partly applied change, logging what fails
// (some of them may revert what VPP refused anyway).
func (p *Plugin) undo(sw uint32, b *vppcalls.Batch) {
	if err := b.Send(); err != nil {
		p.log.WithError(err).WithField("sw_if_index", sw).Debug("undo of a failed unnumbered setting")
	}
}

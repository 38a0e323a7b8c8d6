package ifplugin

import (
	"fmt"
	"net/netip"

	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
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
	if err := p.h.NewBatch().SetUnnumbered(md.SwIfIndex, withIP.SwIfIndex, enable).Send(); err != nil {
		return fmt.Errorf("unnumbered %s (sw_if_index %d) to %s (sw_if_index %d), enable=%t: %w",
			iface, md.SwIfIndex, target, withIP.SwIfIndex, enable, err)
	}
	return nil
}

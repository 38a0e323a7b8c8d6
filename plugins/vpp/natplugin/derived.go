package natplugin

import (
	"fmt"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Descriptor names of the values derived from Nat44Global.
const (
	// InterfaceDescriptorName names the descriptor of NAT interface features.
	InterfaceDescriptorName = "vpp-nat44-interface"
	// AddressDescriptorName names the descriptor of NAT pool addresses.
	AddressDescriptorName = "vpp-nat44-address"
)

// Dependency labels of the NAT values.
const (
	// DepInterfaceExists waits for an interface the value uses.
	DepInterfaceExists = "interface-exists"
	// DepVrfTableExists waits for a non-zero VRF table the value uses.
	DepVrfTableExists = "vrf-table-exists"
	// DepNAT44Global waits for the global NAT44 configuration, whose
	// creation enables the NAT44-ED plugin.
	DepNAT44Global = "nat44-global-exists"
)

// ifaceFeatureDescriptor implements the callbacks of the derived values
// vpp/nat44/interface/<if>/feature/<in|out>: inside and outside features
// with nat44_interface_add_del_feature, the output feature with
// nat44_ed_add_del_output_interface. They are read back through
// Nat44Global's Retrieve. A change (output feature on/off) is a delete and
// a create.
type ifaceFeatureDescriptor struct {
	base
}

// NewNat44InterfaceDescriptor returns the descriptor of NAT interface
// features (derived from Nat44Global).
func NewNat44InterfaceDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &ifaceFeatureDescriptor{base: vppbase.NewDescriptor(deps, InterfaceDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.Nat44Global_Interface, kvapi.Metadata]{
		Name: InterfaceDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := nat.ParseInterfaceNAT44Key(key)
			return ok
		},
		Create: func(key string, v *nat.Nat44Global_Interface) (kvapi.Metadata, error) {
			return nil, d.addDel(key, v, true)
		},
		Delete:             func(key string, v *nat.Nat44Global_Interface, _ kvapi.Metadata) error { return d.addDel(key, v, false) },
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(key string, _ *nat.Nat44Global_Interface) []kvapi.Dependency {
			iface, _, _ := nat.ParseInterfaceNAT44Key(key)
			return []kvapi.Dependency{{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(iface)}}
		},
	})
}

func (d *ifaceFeatureDescriptor) addDel(key string, itf *nat.Nat44Global_Interface, isAdd bool) error {
	name, inside, _ := nat.ParseInterfaceNAT44Key(key)
	op := "disable"
	if isAdd {
		op = "enable"
	}
	feature := "outside"
	switch {
	case itf.GetOutputFeature():
		feature = "output"
	case inside:
		feature = "inside"
	}
	what := fmt.Sprintf("%s NAT44 %s feature on %s", op, feature, name)
	sw, err := d.SwIfIndex(name, what)
	if err != nil {
		return err
	}
	var req, reply govppapi.Message
	if itf.GetOutputFeature() {
		req = &nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: isAdd, SwIfIndex: interface_types.InterfaceIndex(sw)}
		reply = &nat44_ed.Nat44EdAddDelOutputInterfaceReply{}
	} else {
		flags := nat_types.NAT_IS_OUTSIDE
		if inside {
			flags = nat_types.NAT_IS_INSIDE
		}
		req = &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: isAdd, Flags: flags, SwIfIndex: interface_types.InterfaceIndex(sw)}
		reply = &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
	}
	if err := vppbase.Call(d.Ch, req, reply); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithField("interface", name).Debugf("NAT44 %s feature %sd", feature, op)
	return nil
}

// addressDescriptor implements the callbacks of the derived values
// vpp/nat44/address/<ip>/twice-nat/<on|off>: one pool address each, added
// and removed with nat44_add_del_address_range (first = last = the address,
// flag NAT_IS_TWICE_NAT for the twice-NAT pool). vrf_id is passed as is:
// VPP's API takes 0xFFFFFFFF as "any tenant VRF", and any other value makes
// VPP lock (and create) that FIB, so a non-zero one waits for its VrfTable.
// A change of the VRF is a delete and a create.
type addressDescriptor struct {
	base
}

// NewNat44AddressDescriptor returns the descriptor of NAT pool addresses
// (derived from Nat44Global).
func NewNat44AddressDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &addressDescriptor{base: vppbase.NewDescriptor(deps, AddressDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.Nat44Global_Address, kvapi.Metadata]{
		Name: AddressDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := nat.ParseAddressNAT44Key(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *nat.Nat44Global_Address) bool {
			return a.GetVrfId() == b.GetVrfId()
		},
		Create: func(key string, v *nat.Nat44Global_Address) (kvapi.Metadata, error) {
			return nil, d.addDel(key, v, true)
		},
		Delete:             func(key string, v *nat.Nat44Global_Address, _ kvapi.Metadata) error { return d.addDel(key, v, false) },
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *nat.Nat44Global_Address) []kvapi.Dependency {
			if vrf := v.GetVrfId(); vrf != 0 && vrf != noIndex {
				return []kvapi.Dependency{{Label: DepVrfTableExists, Key: l3.VrfTableKey(vrf, l3.VrfTable_IPV4)}}
			}
			return nil
		},
	})
}

func (d *addressDescriptor) addDel(key string, a *nat.Nat44Global_Address, isAdd bool) error {
	addr, twice, _ := nat.ParseAddressNAT44Key(key)
	op := "remove"
	if isAdd {
		op = "add"
	}
	what := fmt.Sprintf("%s NAT44 pool address %s (twice-NAT %v, VRF %d)", op, addr, twice, a.GetVrfId())
	ip, ok := parseIPv4(addr)
	if !ok {
		return kvapi.NewInvalidValueError(fmt.Errorf("%s: not an IPv4 address", what), "address")
	}
	req := &nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip.As4(), LastIPAddress: ip.As4(), VrfID: a.GetVrfId(), IsAdd: isAdd}
	if twice {
		req.Flags = nat_types.NAT_IS_TWICE_NAT
	}
	if err := vppbase.Call(d.Ch, req, &nat44_ed.Nat44AddDelAddressRangeReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithField("address", addr).Debugf("NAT44 pool address %s done", op)
	return nil
}

package natplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// GlobalDescriptorName names the descriptor of the global NAT44 configuration.
const GlobalDescriptorName = "vpp-nat44-global"

// Sessions is the translation table size per thread the plugin enables
// NAT44-ED with: VPP's default (63 × 1024), given explicitly because
// nat44_show_running_config reports it, and a non-zero value there is how
// Retrieve tells that the plugin is enabled (VPP 25.10 has no
// nat44_ed_plugin_is_enabled).
const Sessions = 63 * 1024

// VPP 25.10's shallow virtual reassembly defaults for IPv4 (ip4_sv_reass.c),
// restored when virtual_reassembly is removed.
const (
	defaultReassTimeoutMs    = 100
	defaultReassMax          = 1024
	defaultReassMaxLength    = 3
	defaultReassExpireWalkMs = 10000
	msPerSecond              = 1000
)

// globalDescriptor implements the callbacks of the Nat44Global descriptor:
// the plugin enable, forwarding and reassembly (see the package
// documentation); pool addresses and interface features are derived values
// with descriptors of their own.
type globalDescriptor struct {
	base
}

// NewNat44GlobalDescriptor returns the descriptor of the global NAT44
// configuration.
func NewNat44GlobalDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &globalDescriptor{base: vppbase.NewDescriptor(deps, GlobalDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.Nat44Global, kvapi.Metadata]{
		Name:        GlobalDescriptorName,
		NBKeyPrefix: nat.GlobalNAT44Key,
		KeySelector: func(key string) bool { return key == nat.GlobalNAT44Key },
		ValueComparator: func(_ string, a, b *nat.Nat44Global) bool {
			return EquivalentNat44Global(a, b)
		},
		Validate: func(_ string, v *nat.Nat44Global) error { return ValidateNat44Global(v) },
		Create: func(_ string, v *nat.Nat44Global) (kvapi.Metadata, error) {
			return nil, d.create(v)
		},
		Update: func(_ string, old, v *nat.Nat44Global, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.update(old, v)
		},
		Delete: func(_ string, v *nat.Nat44Global, _ kvapi.Metadata) error {
			return d.update(v, &nat.Nat44Global{})
		},
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		DerivedValues:        globalDerived,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// ValidateNat44Global checks the interfaces and the address pool. An
// interface may be inside and outside (two entries), but an output-feature
// interface has exactly one entry, which is not inside: VPP does not
// combine the output feature with the in/out features.
func ValidateNat44Global(g *nat.Nat44Global) error {
	var problems, fields []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	keys := map[string]bool{}
	output := map[string]bool{}
	count := map[string]int{}
	for _, itf := range g.GetNatInterfaces() {
		count[itf.GetName()]++
		if itf.GetOutputFeature() {
			output[itf.GetName()] = true
		}
	}
	for i, itf := range g.GetNatInterfaces() {
		field := fmt.Sprintf("nat_interfaces[%d]", i)
		switch {
		case itf.GetName() == "":
			bad(field+".name", "empty interface name")
		case itf.GetOutputFeature() && itf.GetIsInside():
			bad(field+".is_inside", "interface %s: the output feature cannot be inside", itf.GetName())
		case output[itf.GetName()] && count[itf.GetName()] > 1:
			bad(field+".output_feature", "interface %s: the output feature excludes other NAT features on it", itf.GetName())
		case keys[nat.InterfaceNAT44Key(itf.GetName(), itf.GetIsInside())]:
			bad(field, "interface %s (inside=%v) is listed twice", itf.GetName(), itf.GetIsInside())
		}
		keys[nat.InterfaceNAT44Key(itf.GetName(), itf.GetIsInside())] = true
	}
	addrs := map[string]bool{}
	for i, a := range g.GetAddressPool() {
		field := fmt.Sprintf("address_pool[%d]", i)
		ip, ok := parseIPv4(a.GetAddress())
		if !ok {
			bad(field+".address", "address %q is not an IPv4 address", a.GetAddress())
			continue
		}
		k := nat.AddressNAT44Key(ip.String(), a.GetTwiceNat())
		if addrs[k] {
			bad(field, "address %s (twice_nat=%v) is listed twice", ip, a.GetTwiceNat())
		}
		addrs[k] = true
	}
	validateTimeouts(g.GetTimeouts(), bad)
	if len(problems) > 0 {
		return kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return nil
}

// EquivalentNat44Global reports whether a and b are the same configuration:
// interfaces and addresses in any order, addresses in canonical form, timeouts
// as VPP runs with them (0 is the default).
func EquivalentNat44Global(a, b *nat.Nat44Global) bool {
	if a.GetForwarding() != b.GetForwarding() || !proto.Equal(a.GetVirtualReassembly(), b.GetVirtualReassembly()) ||
		effectiveTimeouts(a.GetTimeouts()) != effectiveTimeouts(b.GetTimeouts()) {
		return false
	}
	ifs := func(g *nat.Nat44Global) []nat.Nat44Global_Interface {
		var out []nat.Nat44Global_Interface
		for _, i := range g.GetNatInterfaces() {
			out = append(out, nat.Nat44Global_Interface{Name: i.GetName(), IsInside: i.GetIsInside(), OutputFeature: i.GetOutputFeature()})
		}
		return out
	}
	type addr struct {
		ip    string
		vrf   uint32
		twice bool
	}
	addrs := func(g *nat.Nat44Global) []addr {
		var out []addr
		for _, a := range g.GetAddressPool() {
			s := a.GetAddress()
			if ip, ok := parseIPv4(s); ok {
				s = ip.String()
			}
			out = append(out, addr{s, a.GetVrfId(), a.GetTwiceNat()})
		}
		return out
	}
	return sameIfaces(ifs(a), ifs(b)) && sameSet(addrs(a), addrs(b))
}

// sameIfaces compares interface lists as sets (the struct holds protobuf
// internals, so it is compared field by field).
func sameIfaces(a, b []nat.Nat44Global_Interface) bool {
	type key struct {
		name            string
		inside, outFeat bool
	}
	conv := func(l []nat.Nat44Global_Interface) []key {
		out := make([]key, len(l))
		for i := range l {
			out[i] = key{l[i].Name, l[i].IsInside, l[i].OutputFeature}
		}
		return out
	}
	return sameSet(conv(a), conv(b))
}

// sameSet tells whether two lists hold the same elements (with multiplicity).
func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	count := make(map[T]int, len(a))
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		if count[x] == 0 {
			return false
		}
		count[x]--
	}
	return true
}

// globalDerived derives one value per NAT interface feature and one per
// pool address.
func globalDerived(_ string, g *nat.Nat44Global) []kvapi.KeyValuePair {
	out := make([]kvapi.KeyValuePair, 0, len(g.GetNatInterfaces())+len(g.GetAddressPool()))
	for _, itf := range g.GetNatInterfaces() {
		if itf.GetName() != "" {
			out = append(out, kvapi.KeyValuePair{Key: nat.InterfaceNAT44Key(itf.GetName(), itf.GetIsInside()), Value: itf})
		}
	}
	for _, a := range g.GetAddressPool() {
		out = append(out, kvapi.KeyValuePair{Key: nat.AddressNAT44Key(a.GetAddress(), a.GetTwiceNat()), Value: a})
	}
	return out
}

// create enables the plugin and applies the global settings. It applies the
// timeouts as a change from VPP's defaults: enabling the plugin resets them
// (nat44_plugin_enable calls nat_reset_timeouts), and Retrieve reports an
// enabled plugin with other timeouts as a value, which is then updated, not
// created.
func (d *globalDescriptor) create(g *nat.Nat44Global) error {
	if err := EnableNAT44(d.Ch); err != nil {
		return fmt.Errorf("create NAT44 global configuration: %w", err)
	}
	return d.update(&nat.Nat44Global{}, g)
}

// EnableNAT44 enables the NAT44-ED plugin with the plugin's settings;
// "already enabled" is success.
func EnableNAT44(ch govppapi.Channel) error {
	req := &nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: Sessions}
	if err := vppbase.Call(ch, req, &nat44_ed.Nat44EdPluginEnableDisableReply{}); err != nil && !vppbase.IsRetval(err, govppapi.FEATURE_ALREADY_ENABLED) {
		return fmt.Errorf("enable NAT44-ED plugin: %w", err)
	}
	return nil
}

// update applies the global settings that differ between from and to.
func (d *globalDescriptor) update(from, to *nat.Nat44Global) error {
	if from.GetForwarding() != to.GetForwarding() {
		req := &nat44_ed.Nat44ForwardingEnableDisable{Enable: to.GetForwarding()}
		if err := vppbase.Call(d.Ch, req, &nat44_ed.Nat44ForwardingEnableDisableReply{}); err != nil {
			return fmt.Errorf("set NAT44 forwarding to %v: %w", to.GetForwarding(), err)
		}
	}
	if err := d.setTimeouts(from.GetTimeouts(), to.GetTimeouts()); err != nil {
		return err
	}
	oldR, newR := reassembly(from.GetVirtualReassembly()), reassembly(to.GetVirtualReassembly())
	if to.GetVirtualReassembly().GetDropFragments() && !from.GetVirtualReassembly().GetDropFragments() {
		d.Log.Warn("virtual_reassembly.drop_fragments has no counterpart in VPP 25.10: not applied")
	}
	if oldR != newR {
		if err := vppbase.Call(d.Ch, &newR, &ip.IPReassemblySetReply{}); err != nil {
			return fmt.Errorf("set IPv4 shallow virtual reassembly (timeout %dms, max %d, max length %d): %w",
				newR.TimeoutMs, newR.MaxReassemblies, newR.MaxReassemblyLength, err)
		}
	}
	d.Log.WithField("forwarding", to.GetForwarding()).Debug("NAT44 global configuration applied")
	return nil
}

// reassembly maps virtual_reassembly onto ip_reassembly_set; nil (or only
// drop_fragments) gives VPP's defaults.
func reassembly(v *nat.VirtualReassembly) ip.IPReassemblySet {
	r := ip.IPReassemblySet{TimeoutMs: defaultReassTimeoutMs, MaxReassemblies: defaultReassMax,
		MaxReassemblyLength: defaultReassMaxLength, ExpireWalkIntervalMs: defaultReassExpireWalkMs,
		Type: ip.IP_REASS_TYPE_SHALLOW_VIRTUAL}
	if t := v.GetTimeout(); t != 0 {
		r.TimeoutMs = t * msPerSecond
	}
	if m := v.GetMaxReassemblies(); m != 0 {
		r.MaxReassemblies = m
	}
	if f := v.GetMaxFragments(); f != 0 {
		r.MaxReassemblyLength = f
	}
	return r
}

// natEnabled tells whether the NAT44-ED plugin is enabled, and returns its
// running configuration.
func natEnabled(ch govppapi.Channel) (bool, *nat44_ed.Nat44ShowRunningConfigReply, error) {
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	if err := vppbase.Call(ch, &nat44_ed.Nat44ShowRunningConfig{}, rc); err != nil {
		return false, nil, err
	}
	return rc.Sessions != 0, rc, nil
}

// retrieve rebuilds the global configuration from VPP: forwarding and the
// timeouts (nat44_show_running_config: VPP 25.10 has no nat_get_timeouts), the
// interfaces with NAT features (inside/outside from nat44_interface_dump,
// output feature from nat44_ed_output_interface_get) and the address pool
// (nat44_address_dump). With NAT disabled there is nothing; with NAT
// enabled but nothing set, there is a value only when NB asks for one.
func (d *globalDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	var want *nat.Nat44Global
	if len(correlate) > 0 {
		want, _ = correlate[0].Value.(*nat.Nat44Global)
	}
	enabled, rc, err := natEnabled(d.Ch)
	if err != nil {
		return nil, fmt.Errorf("retrieve NAT44 global configuration: %w", err)
	}
	if !enabled {
		return nil, nil
	}
	g := &nat.Nat44Global{Forwarding: rc.ForwardingEnabled, VirtualReassembly: want.GetVirtualReassembly(), Timeouts: timeoutsOf(rc.Timeouts)}
	names := d.IfaceNames()
	ifaces, err := govppmux.Dump[nat44_ed.Nat44InterfaceDetails](d.Ch, &nat44_ed.Nat44InterfaceDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve NAT44 interfaces: %w", err)
	}
	for _, i := range ifaces {
		name, ok := names[uint32(i.SwIfIndex)]
		if !ok {
			continue
		}
		if i.Flags&nat_types.NAT_IS_INSIDE != 0 {
			g.NatInterfaces = append(g.NatInterfaces, &nat.Nat44Global_Interface{Name: name, IsInside: true})
		}
		if i.Flags&nat_types.NAT_IS_OUTSIDE != 0 {
			g.NatInterfaces = append(g.NatInterfaces, &nat.Nat44Global_Interface{Name: name})
		}
	}
	outs, err := d.outputInterfaces(want)
	if err != nil {
		return nil, fmt.Errorf("retrieve NAT44 output interfaces: %w", err)
	}
	for _, sw := range outs {
		if name, ok := names[sw]; ok {
			g.NatInterfaces = append(g.NatInterfaces, &nat.Nat44Global_Interface{Name: name, OutputFeature: true})
		}
	}
	addrs, err := govppmux.Dump[nat44_ed.Nat44AddressDetails](d.Ch, &nat44_ed.Nat44AddressDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve NAT44 address pool: %w", err)
	}
	for _, a := range addrs {
		g.AddressPool = append(g.AddressPool, &nat.Nat44Global_Address{Address: netip.AddrFrom4(a.IPAddress).String(),
			VrfId: a.VrfID, TwiceNat: a.Flags&nat_types.NAT_IS_TWICE_NAT != 0})
	}
	switch {
	case want != nil && EquivalentNat44Global(want, g):
		g = want
	case want == nil && !g.Forwarding && len(g.NatInterfaces) == 0 && len(g.AddressPool) == 0 && g.Timeouts == nil:
		return nil, nil // enabled, but nothing that is anybody's configuration
	}
	// FromNB: on a Contiv node the agent is the only one that enables NAT44-ED
	// (nat44_ed_plugin_enable_disable; VPP's nat44_ed_doc.md: the plugin is enabled by
	// "nat44 enable" or that message, Contiv's VPP startup config does neither) and
	// gives it forwarding, features and addresses, so what is found is the agent's, of
	// this run or of an earlier one. A restarted agent that wants no NAT44
	// (serviceRenderer: cnat) then removes it at its full resync; UnknownOrigin, with
	// nothing staged to correlate it, made it VPP's own and left it behind.
	return []kvapi.KVWithMetadata{{Key: nat.GlobalNAT44Key, Value: g, Origin: kvapi.FromNB}}, nil
}

// outputInterfaces lists the sw_if_index of the output-feature interfaces
// with nat44_ed_output_interface_get (a cursor-paged reply-and-details
// request) when a stream-capable connection is available; otherwise it
// reports the output interfaces NB asks for as present.
func (d *globalDescriptor) outputInterfaces(want *nat.Nat44Global) ([]uint32, error) {
	if d.Conn == nil {
		var out []uint32
		for _, itf := range want.GetNatInterfaces() {
			if itf.GetOutputFeature() {
				if sw, err := d.SwIfIndex(itf.GetName(), "output interface"); err == nil {
					out = append(out, sw)
				}
			}
		}
		return out, nil
	}
	var out []uint32
	client := nat44_ed.NewServiceClient(d.Conn)
	cursor := uint32(0)
	for {
		stream, err := client.Nat44EdOutputInterfaceGet(context.Background(), &nat44_ed.Nat44EdOutputInterfaceGet{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		var rep *nat44_ed.Nat44EdOutputInterfaceGetReply
		for {
			det, r, err := stream.Recv()
			if r != nil {
				rep = r
				if err != nil && !errors.Is(err, io.EOF) {
					if vppbase.IsRetval(err, govppapi.INVALID_VALUE) && len(out) == 0 && cursor == 0 {
						return nil, nil // VPP's answer when there is no output interface
					}
					return nil, err
				}
				break
			}
			if err != nil {
				_ = stream.Close()
				return nil, err
			}
			out = append(out, uint32(det.SwIfIndex))
		}
		if rep.Cursor == noIndex || rep.Cursor <= cursor {
			return out, nil
		}
		cursor = rep.Cursor
	}
}

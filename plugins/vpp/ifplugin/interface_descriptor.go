package ifplugin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/vppcalls"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Dependency labels of interface values.
const (
	// VrfTableDep is the label of the dependency on the interface's VRF table.
	VrfTableDep = "vrf-table-exists"
	// HostInterfaceDep is the label of an AF_PACKET's dependency on its Linux interface.
	HostInterfaceDep = "host-interface-exists"
	// InterfaceWithIPDep is the label of an unnumbered setting's dependency on an
	// address of the interface it borrows from.
	InterfaceWithIPDep = "interface-with-ip-has-address"
)

// localInterface is VPP's built-in interface; it is reported but never managed.
const localInterface = "local0"

// errUnnumberedTarget marks the failure to resolve the interface an unnumbered
// interface borrows from.
var errUnnumberedTarget = errors.New("interface with IP unknown")

func (p *Plugin) interfaceDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*ifmodel.Interface, *ifaceidx.Metadata]{
		Name:        ifaceidx.DescriptorName,
		NBKeyPrefix: ifmodel.InterfacePrefix,
		KeySelector: func(key string) bool {
			name, ok := ifmodel.ParseNameFromKey(key)
			return ok && name != ""
		},
		KeyLabel: func(key string) string {
			name, _ := ifmodel.ParseNameFromKey(key)
			return name
		},
		ValueComparator: func(_ string, a, b *ifmodel.Interface) bool { return interfacesEqual(a, b) },
		Validate:        validateInterface,
		Create:          func(_ string, v *ifmodel.Interface) (*ifaceidx.Metadata, error) { return p.createInterface(v) },
		Delete:          func(_ string, v *ifmodel.Interface, md *ifaceidx.Metadata) error { return p.deleteInterface(v, md) },
		Update: func(_ string, o, n *ifmodel.Interface, md *ifaceidx.Metadata) (*ifaceidx.Metadata, error) {
			out, err := p.updateInterface(o, n, md)
			if out == nil {
				return md, err
			}
			return out, err
		},
		UpdateWithRecreate: func(_ string, o, n *ifmodel.Interface, _ *ifaceidx.Metadata) bool { return needsRecreate(o, n) },
		Retrieve:           p.retrieveInterfaces,
		IsRetriableFailure: isRetriable,
		DerivedValues:      func(_ string, v *ifmodel.Interface) []kvapi.KeyValuePair { return interfaceDerived(v) },
		Dependencies:       func(_ string, v *ifmodel.Interface) []kvapi.Dependency { return interfaceDeps(v) },
		WithMetadata:       true,
	})
}

// interfaceDeps: the VRF tables the interface binds itself to (boundTables) and the
// Linux interface of an AF_PACKET.
func interfaceDeps(iface *ifmodel.Interface) []kvapi.Dependency {
	var deps []kvapi.Dependency
	v4, v6 := boundTables(iface)
	if v4 {
		deps = append(deps, kvapi.Dependency{Label: VrfTableDep, Key: l3model.VrfTableKey(iface.Vrf, l3model.VrfTable_IPV4)})
	}
	if v6 {
		deps = append(deps, kvapi.Dependency{Label: VrfTableDep, Key: l3model.VrfTableKey(iface.Vrf, l3model.VrfTable_IPV6)})
	}
	if iface.Type == ifmodel.Interface_AF_PACKET {
		deps = append(deps, kvapi.Dependency{Label: HostInterfaceDep,
			Key: linuxif.InterfaceHostNameKey(iface.GetAfpacket().GetHostIfName())})
	}
	return deps
}

// boundTables tells which tables of its non-zero VRF the interface descriptor binds the
// interface to: the IPv6 table when it has an IPv6 address of its own; the IPv4 table
// when it has an IPv4 address of its own, a DHCP client (an IPv4 lease), or no
// address at all (IPv4, VPP's default family). An unnumbered interface is bound to
// neither: it takes both tables of its donor (the unnumbered descriptor), because VPP
// 25.10 refuses sw_interface_set_unnumbered unless the interface and its donor share
// their IPv4 and IPv6 tables (src/vnet/interface.c, vnet_sw_interface_check_table_same),
// and a donor of a single-stack IPv6 node has no IPv4 table of its VRF at all.
func boundTables(iface *ifmodel.Interface) (v4, v6 bool) {
	if iface.Vrf == 0 || iface.Unnumbered != nil {
		return false, false
	}
	has4, has6 := families(iface.IpAddresses)
	return has4 || iface.SetDhcpClient || !has6, has6
}

// bindTables adds to b the binding of sw to the tables of vrf that iface binds
// (boundTables).
func bindTables(b *vppcalls.Batch, sw, vrf uint32, iface *ifmodel.Interface) {
	v4, v6 := boundTables(iface)
	if v4 {
		b.SetTable(sw, vrf, false)
	}
	if v6 {
		b.SetTable(sw, vrf, true)
	}
}

// interfaceDerived: one value per static address, the unnumbered setting, and the
// VRF membership properties (IPv4 always, IPv6 with IPv6 addresses).
func interfaceDerived(iface *ifmodel.Interface) []kvapi.KeyValuePair {
	var out []kvapi.KeyValuePair
	for _, a := range iface.IpAddresses {
		if p, err := netip.ParsePrefix(a); err == nil {
			a = p.String()
		}
		out = append(out, kvapi.KeyValuePair{Key: ifmodel.InterfaceAddressKey(iface.Name, ifmodel.AddressStatic, a),
			Value: wrapperspb.String(a)})
	}
	if iface.Unnumbered != nil {
		out = append(out, kvapi.KeyValuePair{Key: ifmodel.UnnumberedKey(iface.Name), Value: iface.Unnumbered})
	}
	v4, v6 := boundTables(iface)
	if v4 || iface.Vrf == 0 && !v6 { // VRF 0: the IPv4 membership every interface has
		out = append(out, kvapi.KeyValuePair{Key: ifmodel.InterfaceVrfKey(iface.Name, iface.Vrf, false), Value: wrapperspb.UInt32(iface.Vrf)})
	}
	if v6 || iface.Vrf == 0 && hasIPv6(iface.IpAddresses) {
		out = append(out, kvapi.KeyValuePair{Key: ifmodel.InterfaceVrfKey(iface.Name, iface.Vrf, true), Value: wrapperspb.UInt32(iface.Vrf)})
	}
	return out
}

// needsRecreate: a changed type or link, or a VRF change VPP refuses in place (the
// interface keeps addresses, borrowed ones or a DHCP lease across the change; a
// VXLAN tunnel's VRF is its encapsulation VRF).
func needsRecreate(old, new *ifmodel.Interface) bool {
	if old.Type != new.Type || !sameLink(old, new) {
		return true
	}
	if old.Vrf == new.Vrf {
		return false
	}
	keptAddrs := false
	oldSet := canonicalPrefixes(old.IpAddresses)
	for _, a := range canonicalPrefixes(new.IpAddresses) {
		if _, found := slices.BinarySearch(oldSet, a); found {
			keptAddrs = true
		}
	}
	return new.Type == ifmodel.Interface_VXLAN_TUNNEL || keptAddrs ||
		(old.Unnumbered != nil && new.Unnumbered != nil) || (old.SetDhcpClient && new.SetDhcpClient)
}

// --- create / update / delete ---

func (p *Plugin) createInterface(iface *ifmodel.Interface) (*ifaceidx.Metadata, error) {
	var mac net.HardwareAddr
	if iface.PhysAddress != "" {
		mac, _ = parseMAC(iface.PhysAddress) // validated
	}
	sw, hostName, err := p.createLink(iface, mac)
	if err != nil {
		return nil, fmt.Errorf("create interface %s (%s): %w", iface.Name, iface.Type, err)
	}
	b := p.h.NewBatch()
	if iface.Type != ifmodel.Interface_TAP { // a TAP is tagged at creation
		b.SetTag(sw, iface.Name)
	}
	if mac != nil && isNIC(iface.Type) {
		b.SetMAC(sw, mac)
	}
	if iface.Mtu != 0 {
		b.SetMTU(sw, iface.Mtu)
	}
	bindTables(b, sw, iface.Vrf, iface)
	if iface.RxMode != ifmodel.Interface_UNKNOWN {
		b.SetRxMode(sw, interface_types.RxMode(iface.RxMode))
	}
	if iface.SetDhcpClient {
		p.trackDHCP(sw, iface.Name)
		b.SetDHCPClient(sw, true, p.hostname, uint32(os.Getpid()))
	}
	if iface.Enabled {
		b.SetAdminUp(sw, true)
	}
	if err := b.Send(); err != nil {
		p.trackDHCP(sw, "")
		if cleanupErr := p.removeLink(iface, sw); cleanupErr != nil && !isNIC(iface.Type) {
			p.log.WithError(cleanupErr).WithField("interface", iface.Name).Warn("cannot remove the half-configured interface")
		}
		return nil, fmt.Errorf("configure interface %s (sw_if_index %d): %w", iface.Name, sw, err)
	}
	p.log.WithFields(logrus.Fields{"interface": iface.Name, "type": iface.Type.String(), "sw_if_index": sw}).Debug("interface created")
	return &ifaceidx.Metadata{SwIfIndex: sw, Vrf: iface.Vrf, IPAddresses: slices.Clone(iface.IpAddresses), TAPHostIfName: hostName}, nil
}

// createLink creates the VPP interface of the type (or finds the NIC) and returns its
// sw_if_index and, for a TAP, the Linux name of its host side.
func (p *Plugin) createLink(iface *ifmodel.Interface, mac net.HardwareAddr) (sw uint32, hostName string, err error) {
	switch iface.Type {
	case ifmodel.Interface_SOFTWARE_LOOPBACK:
		sw, err = p.h.CreateLoopback(mac)
	case ifmodel.Interface_TAP:
		tap := iface.GetTap()
		sw, err = p.h.CreateTap(vppcalls.Tap{HostIfName: tap.GetHostIfName(), HostNamespace: tap.GetHostNamespace(),
			RxRingSize: uint16(tap.GetRxRingSize()), TxRingSize: uint16(tap.GetTxRingSize()), MAC: mac, Tag: iface.Name})
		if err == nil {
			hostName = tap.GetHostIfName()
			if hostName == "" {
				hostName, err = p.h.TapHostIfName(sw)
				if err != nil {
					_ = p.h.DeleteTap(sw)
				}
			}
		}
	case ifmodel.Interface_AF_PACKET:
		sw, err = p.h.CreateAfPacket(iface.GetAfpacket().GetHostIfName(), mac)
	case ifmodel.Interface_VXLAN_TUNNEL:
		sw, err = p.h.AddVxlan(vxlanOf(iface))
	case ifmodel.Interface_DPDK, ifmodel.Interface_VMXNET3_INTERFACE:
		sw, err = p.h.FindInterface(iface.Name)
	default:
		err = fmt.Errorf("unsupported type %s", iface.Type)
	}
	return sw, hostName, err
}

func vxlanOf(iface *ifmodel.Interface) vppcalls.Vxlan {
	v := iface.GetVxlan()
	src, _ := netip.ParseAddr(v.GetSrcAddress())
	dst, _ := netip.ParseAddr(v.GetDstAddress())
	return vppcalls.Vxlan{Src: src, Dst: dst, VNI: v.GetVni(), EncapVRF: iface.Vrf}
}

// removeLink deletes the VPP interface (a NIC is put back to its unconfigured state:
// down, untagged, in VRF 0, without DHCP client).
func (p *Plugin) removeLink(iface *ifmodel.Interface, sw uint32) error {
	switch iface.Type {
	case ifmodel.Interface_SOFTWARE_LOOPBACK:
		return p.h.DeleteLoopback(sw)
	case ifmodel.Interface_TAP:
		return p.h.DeleteTap(sw)
	case ifmodel.Interface_AF_PACKET:
		return p.h.DeleteAfPacket(iface.GetAfpacket().GetHostIfName())
	case ifmodel.Interface_VXLAN_TUNNEL:
		return p.h.DeleteVxlan(vxlanOf(iface))
	}
	b := p.h.NewBatch().SetAdminUp(sw, false)
	if iface.SetDhcpClient {
		b.SetDHCPClient(sw, false, "", 0)
	}
	bindTables(b, sw, 0, iface)
	return b.SetTag(sw, "").Send()
}

func (p *Plugin) deleteInterface(iface *ifmodel.Interface, md *ifaceidx.Metadata) error {
	if md == nil {
		return fmt.Errorf("delete interface %s: no metadata", iface.Name)
	}
	if err := p.removeLink(iface, md.SwIfIndex); err != nil {
		return fmt.Errorf("delete interface %s (sw_if_index %d): %w", iface.Name, md.SwIfIndex, err)
	}
	if iface.SetDhcpClient {
		p.trackDHCP(md.SwIfIndex, "")
		p.dropLease(iface.Name)
	}
	p.log.WithFields(logrus.Fields{"interface": iface.Name, "sw_if_index": md.SwIfIndex}).Debug("interface deleted")
	return nil
}

// updateInterface changes in place what VPP allows: admin state, MAC, MTU, VRF (when
// no address is kept across, see needsRecreate), rx mode and the DHCP client.
// Addresses and the unnumbered setting follow as derived values.
func (p *Plugin) updateInterface(old, new *ifmodel.Interface, md *ifaceidx.Metadata) (*ifaceidx.Metadata, error) {
	if md == nil {
		return nil, fmt.Errorf("update interface %s: no metadata", new.Name)
	}
	sw := md.SwIfIndex
	b := p.h.NewBatch()
	if old.Enabled && !new.Enabled {
		b.SetAdminUp(sw, false)
	}
	if new.PhysAddress != "" && !sameMAC(old.PhysAddress, new.PhysAddress) {
		mac, _ := parseMAC(new.PhysAddress)
		b.SetMAC(sw, mac)
	}
	if new.Mtu != 0 && new.Mtu != old.Mtu {
		b.SetMTU(sw, new.Mtu)
	}
	rebindTables(b, sw, old, new)
	if new.RxMode != ifmodel.Interface_UNKNOWN && new.RxMode != old.RxMode {
		b.SetRxMode(sw, interface_types.RxMode(new.RxMode))
	}
	if old.SetDhcpClient != new.SetDhcpClient {
		if new.SetDhcpClient {
			p.trackDHCP(sw, new.Name)
		}
		b.SetDHCPClient(sw, new.SetDhcpClient, p.hostname, uint32(os.Getpid()))
	}
	if new.Enabled && !old.Enabled {
		b.SetAdminUp(sw, true)
	}
	if err := b.Send(); err != nil {
		return nil, fmt.Errorf("update interface %s (sw_if_index %d): %w", new.Name, sw, err)
	}
	if old.SetDhcpClient && !new.SetDhcpClient {
		p.trackDHCP(sw, "")
		p.dropLease(new.Name)
	}
	out := *md
	out.Vrf, out.IPAddresses = new.Vrf, slices.Clone(new.IpAddresses)
	return &out, nil
}

// rebindTables adds to b what moves sw from the tables old binds to those new binds
// (boundTables), family by family: a table new binds is set when it is not the one old
// bound; a table only old bound goes back to 0. (An unnumbered interface's tables are
// its donor's: the derived unnumbered value, deleted before this update and created
// after it, moves them.)
func rebindTables(b *vppcalls.Batch, sw uint32, old, new *ifmodel.Interface) {
	old4, old6 := boundTables(old)
	new4, new6 := boundTables(new)
	for _, f := range []struct {
		ipv6     bool
		had, has bool
	}{{false, old4, new4}, {true, old6, new6}} {
		switch {
		case f.has && (!f.had || old.Vrf != new.Vrf):
			b.SetTable(sw, new.Vrf, f.ipv6)
		case f.had && !f.has:
			b.SetTable(sw, 0, f.ipv6)
		}
	}
}

// isRetriable is the VPP plugins' retry rule (vppbase.IsRetriable) plus this
// plugin's own permanent errors: a NIC VPP does not have, an unnumbered target that
// cannot lend its address.
var isRetriable = vppbase.Retriable(vppcalls.ErrInterfaceNotFound, errUnnumberedTarget)

// --- retrieve ---

// retrieveInterfaces rebuilds interface values from VPP's dumps. Tagged interfaces
// are the agent's (FromNB, named by their tag); untagged ones exist on their own
// (FromSB, named by VPP): local0, and NICs NB does not configure. An untagged NIC
// NB wants is not reported, so the scheduler configures it (again). Fields VPP cannot
// report or fills with defaults (rx mode, an MTU or MAC NB leaves unset, TAP ring
// sizes, version and host name left to VPP) are taken from the NB value.
func (p *Plugin) retrieveInterfaces(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	list, err := p.h.DumpInterfaces()
	if err != nil {
		return nil, fmt.Errorf("retrieve interfaces: %w", err)
	}
	want := make(map[string]*ifmodel.Interface, len(correlate))
	for _, kv := range correlate {
		if iface, ok := kv.Value.(*ifmodel.Interface); ok {
			want[iface.Name] = iface
		}
	}
	names := make(map[uint32]string, len(list))
	for _, i := range list {
		names[i.SwIfIndex] = i.Name
		if i.Tag != "" {
			names[i.SwIfIndex] = i.Tag
		}
	}
	out := make([]kvapi.KVWithMetadata, 0, len(list))
	for _, i := range list {
		name, origin := i.Name, kvapi.FromSB
		if i.Tag != "" {
			name, origin = i.Tag, kvapi.FromNB
		}
		typ := interfaceType(i)
		if w := want[name]; origin == kvapi.FromSB && w != nil && typ == ifmodel.Interface_DPDK && isNIC(w.Type) {
			continue // NB wants this NIC and it is not configured: let the scheduler configure it
		}
		v := dumpedValue(name, typ, i, names)
		if w := want[name]; w != nil && origin == kvapi.FromNB {
			alignWithNB(v, w)
		}
		md := &ifaceidx.Metadata{SwIfIndex: i.SwIfIndex, Vrf: dumpedVRF(i), IPAddresses: slices.Clone(v.IpAddresses)}
		if i.Tap != nil {
			md.TAPHostIfName = i.Tap.HostIfName
		}
		out = append(out, kvapi.KVWithMetadata{Key: ifmodel.InterfaceKey(name), Value: v, Metadata: md, Origin: origin})
	}
	return out, nil
}

// interfaceType classifies a dumped interface.
func interfaceType(i *vppcalls.Interface) ifmodel.Interface_Type {
	switch {
	case i.Name == localInterface:
		return ifmodel.Interface_UNDEFINED_TYPE
	case i.Tap != nil:
		return ifmodel.Interface_TAP
	case i.AfPacketHost != "":
		return ifmodel.Interface_AF_PACKET
	case i.Vxlan != nil:
		return ifmodel.Interface_VXLAN_TUNNEL
	case i.DevType == "Loopback" || strings.HasPrefix(i.Name, "loop"):
		return ifmodel.Interface_SOFTWARE_LOOPBACK
	}
	return ifmodel.Interface_DPDK
}

// dumpedVRF is the VRF of a dumped interface: its IPv4 table, or its IPv6 table when
// it is only there (a single-stack IPv6 interface, see boundTables).
func dumpedVRF(i *vppcalls.Interface) uint32 {
	if i.VRF != 0 {
		return i.VRF
	}
	return i.VRF6
}

// dumpedValue is the interface value as VPP reports it.
func dumpedValue(name string, typ ifmodel.Interface_Type, i *vppcalls.Interface, names map[uint32]string) *ifmodel.Interface {
	v := &ifmodel.Interface{Name: name, Type: typ, Enabled: i.AdminUp, Vrf: dumpedVRF(i), Mtu: i.MTU,
		SetDhcpClient: i.DHCP != nil}
	if typ != ifmodel.Interface_VXLAN_TUNNEL && typ != ifmodel.Interface_UNDEFINED_TYPE {
		v.PhysAddress = i.MAC.String()
	}
	for _, a := range i.Addresses {
		if i.DHCP != nil && i.DHCP.Bound && a == i.DHCP.Address {
			continue // the lease's, not a static address
		}
		v.IpAddresses = append(v.IpAddresses, a.String())
	}
	if i.Unnumbered {
		v.Unnumbered = &ifmodel.Interface_Unnumbered{InterfaceWithIp: names[i.UnnumberedTo]}
	}
	switch {
	case i.Tap != nil:
		v.Link = &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{Version: 2, HostIfName: i.Tap.HostIfName,
			HostNamespace: i.Tap.HostNamespace, RxRingSize: uint32(i.Tap.RxRingSize), TxRingSize: uint32(i.Tap.TxRingSize)}}
	case i.AfPacketHost != "":
		v.Link = &ifmodel.Interface_Afpacket{Afpacket: &ifmodel.AfpacketLink{HostIfName: i.AfPacketHost}}
	case i.Vxlan != nil:
		v.Link = &ifmodel.Interface_Vxlan{Vxlan: &ifmodel.VxlanLink{SrcAddress: i.Vxlan.Src.String(),
			DstAddress: i.Vxlan.Dst.String(), Vni: i.Vxlan.VNI}}
	}
	return v
}

// alignWithNB replaces what VPP reports by the NB spelling where both mean the same,
// and fills in what VPP cannot report or reports as defaults NB left unset, so an
// unchanged interface compares equal to its NB value.
func alignWithNB(v, w *ifmodel.Interface) {
	if w.PhysAddress == "" || sameMAC(v.PhysAddress, w.PhysAddress) {
		v.PhysAddress = w.PhysAddress
	}
	if w.Mtu == 0 {
		v.Mtu = 0
	}
	if samePrefixes(v.IpAddresses, w.IpAddresses) {
		v.IpAddresses = slices.Clone(w.IpAddresses)
	}
	v.RxMode = w.RxMode // VPP has no dump of it
	if v.Type == ifmodel.Interface_DPDK && w.Type == ifmodel.Interface_VMXNET3_INTERFACE {
		v.Type = w.Type
	}
	if t, wt := v.GetTap(), w.GetTap(); t != nil {
		if wt == nil {
			wt = &ifmodel.TapLink{} // a TAP with VPP's defaults
		}
		t.Version = wt.Version
		if wt.HostIfName == "" {
			t.HostIfName = ""
		}
		if wt.RxRingSize == 0 {
			t.RxRingSize = 0
		}
		if wt.TxRingSize == 0 {
			t.TxRingSize = 0
		}
		if w.Link == nil && proto.Equal(t, wt) {
			v.Link = nil
		}
	}
	if x, wx := v.GetVxlan(), w.GetVxlan(); x != nil && wx != nil {
		if sameAddr(x.SrcAddress, wx.SrcAddress) {
			x.SrcAddress = wx.SrcAddress
		}
		if sameAddr(x.DstAddress, wx.DstAddress) {
			x.DstAddress = wx.DstAddress
		}
	}
}

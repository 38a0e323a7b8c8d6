package vppcalls

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/dhcp"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vxlan"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Interface is everything the dumps say about one VPP interface.
type Interface struct {
	SwIfIndex uint32
	// Name is VPP's own name (loop0, tap1, GigabitEthernet0/8/0, ...).
	Name string
	// Tag is the interface tag ("" if untagged).
	Tag string
	// DevType is VPP's device type ("dpdk", "Loopback", "virtio", ...).
	DevType string
	MAC     net.HardwareAddr
	AdminUp bool
	// MTU is the L3 MTU.
	MTU uint32
	// VRF is the IPv4 table the interface is bound to.
	VRF uint32
	// VRF6 is its IPv6 table, read only where VRF is 0 and the interface has an IPv6
	// address or is unnumbered (a single-stack IPv6 interface), else 0.
	VRF6 uint32
	// Addresses are the interface's own addresses (IPv4 first), empty for an
	// unnumbered interface.
	Addresses []netip.Prefix
	// UnnumberedTo is the sw_if_index of the interface whose addresses this one
	// uses; valid when Unnumbered is set.
	UnnumberedTo uint32
	Unnumbered   bool
	// Tap, AfPacketHost and Vxlan describe the link of those interface kinds.
	Tap          *TapDetails
	AfPacketHost string
	Vxlan        *Vxlan
	// DHCP is the DHCP client of the interface, nil if none.
	DHCP *DHCPClient
}

// TapDetails is the TAP-specific part of an Interface.
type TapDetails struct {
	HostIfName    string
	HostNamespace string
	RxRingSize    uint16
	TxRingSize    uint16
}

// DHCPClient is the DHCP client of an interface and its lease.
type DHCPClient struct {
	Hostname string
	// Bound tells whether a lease is held; the fields below are valid only then.
	Bound    bool
	IsIPv6   bool
	Address  netip.Prefix
	Router   netip.Addr
	LeaseMAC net.HardwareAddr
	// LeaseHostname is the host name in the lease.
	LeaseHostname string
}

// DHCPFromLease converts a lease (from a dump or a dhcp_compl_event).
func DHCPFromLease(hostname string, l dhcp.DHCPLease) *DHCPClient {
	c := &DHCPClient{Hostname: hostname, Bound: l.State == dhcp.DHCP_CLIENT_STATE_API_BOUND, IsIPv6: l.IsIPv6,
		LeaseMAC: net.HardwareAddr(append([]byte(nil), l.HostMac[:]...)), LeaseHostname: l.Hostname}
	if a, ok := vppbase.AddrFromAPI(l.HostAddress); ok && c.Bound {
		c.Address = netip.PrefixFrom(a, int(l.MaskWidth))
	}
	if a, ok := vppbase.AddrFromAPI(l.RouterAddress); ok && c.Bound && !a.IsUnspecified() {
		c.Router = a
	}
	return c
}

// DumpInterfaces returns every VPP interface with its settings, links, addresses,
// unnumbered and DHCP configuration, sorted by sw_if_index. The per-interface
// requests are pipelined.
func (h *Handler) DumpInterfaces() ([]*Interface, error) {
	details, err := govppmux.Dump[interfaces.SwInterfaceDetails](h.ch, &interfaces.SwInterfaceDump{SwIfIndex: swIdx(NoIndex)})
	if err != nil {
		return nil, fmt.Errorf("dump interfaces: %w", err)
	}
	list := make([]*Interface, 0, len(details))
	bySw := make(map[uint32]*Interface, len(details))
	for _, d := range details {
		i := &Interface{
			SwIfIndex: uint32(d.SwIfIndex), Name: d.InterfaceName, Tag: d.Tag, DevType: d.InterfaceDevType,
			MAC:     net.HardwareAddr(append([]byte(nil), d.L2Address[:]...)),
			AdminUp: d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0,
		}
		if len(d.Mtu) > 0 {
			i.MTU = d.Mtu[0]
		}
		list = append(list, i)
		bySw[i.SwIfIndex] = i
	}
	sort.Slice(list, func(a, b int) bool { return list[a].SwIfIndex < list[b].SwIfIndex })
	if err := h.dumpLinks(bySw); err != nil {
		return nil, err
	}
	if err := h.dumpL3(list, bySw); err != nil {
		return nil, err
	}
	if err := h.dumpDHCP(bySw); err != nil {
		return nil, err
	}
	return list, nil
}

func (h *Handler) dumpLinks(bySw map[uint32]*Interface) error {
	taps, err := govppmux.Dump[tapv2.SwInterfaceTapV2Details](h.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: swIdx(NoIndex)})
	if err != nil {
		return fmt.Errorf("dump TAP interfaces: %w", err)
	}
	for _, t := range taps {
		if i := bySw[t.SwIfIndex]; i != nil {
			i.Tap = &TapDetails{HostIfName: t.HostIfName, HostNamespace: t.HostNamespace, RxRingSize: t.RxRingSz, TxRingSize: t.TxRingSz}
		}
	}
	afps, err := govppmux.Dump[af_packet.AfPacketDetails](h.ch, &af_packet.AfPacketDump{})
	if err != nil {
		return fmt.Errorf("dump af_packet interfaces: %w", err)
	}
	for _, a := range afps {
		if i := bySw[uint32(a.SwIfIndex)]; i != nil {
			i.AfPacketHost = a.HostIfName
		}
	}
	vxlans, err := govppmux.Dump[vxlan.VxlanTunnelV2Details](h.ch, &vxlan.VxlanTunnelV2Dump{SwIfIndex: swIdx(NoIndex)})
	if err != nil {
		return fmt.Errorf("dump VXLAN tunnels: %w", err)
	}
	for _, v := range vxlans {
		i := bySw[uint32(v.SwIfIndex)]
		if i == nil {
			continue
		}
		src, _ := vppbase.AddrFromAPI(v.SrcAddress)
		dst, _ := vppbase.AddrFromAPI(v.DstAddress)
		i.Vxlan = &Vxlan{Src: src, Dst: dst, VNI: v.Vni, EncapVRF: v.EncapVrfID}
	}
	return nil
}

// dumpL3 reads the VRF, the addresses and the unnumbered setting of every interface.
func (h *Handler) dumpL3(list []*Interface, bySw map[uint32]*Interface) error {
	unnum, err := govppmux.Dump[ip.IPUnnumberedDetails](h.ch, &ip.IPUnnumberedDump{SwIfIndex: swIdx(NoIndex)})
	if err != nil {
		return fmt.Errorf("dump unnumbered interfaces: %w", err)
	}
	for _, u := range unnum {
		if i := bySw[uint32(u.SwIfIndex)]; i != nil {
			i.Unnumbered, i.UnnumberedTo = true, uint32(u.IPSwIfIndex)
		}
	}
	calls := make([]govppmux.Call, len(list))
	for k, i := range list {
		calls[k] = govppmux.Call{Request: &interfaces.SwInterfaceGetTable{SwIfIndex: swIdx(i.SwIfIndex)},
			Reply: &interfaces.SwInterfaceGetTableReply{}}
	}
	for k, err := range govppmux.PipelineEach(h.ch, 0, calls) {
		if err != nil {
			return fmt.Errorf("sw_interface_get_table of sw_if_index %d: %w", list[k].SwIfIndex, err)
		}
		list[k].VRF = calls[k].Reply.(*interfaces.SwInterfaceGetTableReply).VrfID
	}
	var reqs []govppapi.Message
	var owners []*Interface
	for _, i := range list {
		if i.Unnumbered {
			continue // VPP lists the addresses it borrows
		}
		for _, v6 := range []bool{false, true} {
			reqs = append(reqs, &ip.IPAddressDump{SwIfIndex: swIdx(i.SwIfIndex), IsIPv6: v6})
			owners = append(owners, i)
		}
	}
	out, errs := govppmux.DumpEach[ip.IPAddressDetails](h.ch, reqs)
	for k, details := range out {
		if errs[k] != nil {
			return fmt.Errorf("dump addresses of sw_if_index %d: %w", owners[k].SwIfIndex, errs[k])
		}
		for _, d := range details {
			if p, ok := vppbase.PrefixFromAPI(ip_types.Prefix(d.Prefix)); ok {
				owners[k].Addresses = append(owners[k].Addresses, p)
			}
		}
	}
	return h.dumpIPv6Tables(list)
}

// dumpIPv6Tables reads the IPv6 table of the interfaces in IPv4 table 0 that have an
// IPv6 address or are unnumbered: on a single-stack IPv6 node their VRF is only there.
func (h *Handler) dumpIPv6Tables(list []*Interface) error {
	var calls []govppmux.Call
	var owners []*Interface
	for _, i := range list {
		if i.VRF != 0 || !i.Unnumbered && !slices.ContainsFunc(i.Addresses, func(p netip.Prefix) bool { return p.Addr().Is6() }) {
			continue
		}
		calls = append(calls, govppmux.Call{Request: &interfaces.SwInterfaceGetTable{SwIfIndex: swIdx(i.SwIfIndex), IsIPv6: true},
			Reply: &interfaces.SwInterfaceGetTableReply{}})
		owners = append(owners, i)
	}
	for k, err := range govppmux.PipelineEach(h.ch, 0, calls) {
		if err != nil {
			return fmt.Errorf("sw_interface_get_table (IPv6) of sw_if_index %d: %w", owners[k].SwIfIndex, err)
		}
		owners[k].VRF6 = calls[k].Reply.(*interfaces.SwInterfaceGetTableReply).VrfID
	}
	return nil
}

func (h *Handler) dumpDHCP(bySw map[uint32]*Interface) error {
	clients, err := h.DumpDHCPClients()
	if err != nil {
		return err
	}
	for sw, c := range clients {
		if i := bySw[sw]; i != nil {
			i.DHCP = c
		}
	}
	return nil
}

// DumpDHCPClients returns the DHCP clients by sw_if_index.
func (h *Handler) DumpDHCPClients() (map[uint32]*DHCPClient, error) {
	list, err := govppmux.Dump[dhcp.DHCPClientDetails](h.ch, &dhcp.DHCPClientDump{})
	if err != nil {
		return nil, fmt.Errorf("dump DHCP clients: %w", err)
	}
	out := make(map[uint32]*DHCPClient, len(list))
	for _, d := range list {
		out[uint32(d.Client.SwIfIndex)] = DHCPFromLease(d.Client.Hostname, d.Lease)
	}
	return out, nil
}

// Package vppcalls turns the VPP interface operations the interface descriptors need
// into binary API requests (govpp binapi of VPP 25.10): creating and deleting
// loopback, TAP v2, af_packet and VXLAN interfaces, batches of interface settings sent
// as one pipeline, and the dumps from which the descriptors rebuild their values.
//
// It knows nothing about keys, models or the scheduler; errors name the VPP message
// and the interface (sw_if_index or name) they concern.
package vppcalls

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vxlan"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// NoIndex is VPP's ~0: "no interface", "any interface", "allocate one".
const NoIndex = ^uint32(0)

// Messages lists every message the handler sends or receives; the plugin registers
// them with govppmux so a VPP without one of them fails the agent's start-up.
func Messages() []govppapi.Message {
	return []govppapi.Message{
		&interfaces.CreateLoopback{}, &interfaces.CreateLoopbackReply{},
		&interfaces.DeleteLoopback{}, &interfaces.DeleteLoopbackReply{},
		&tapv2.TapCreateV3{}, &tapv2.TapCreateV3Reply{},
		&tapv2.TapDeleteV2{}, &tapv2.TapDeleteV2Reply{},
		&tapv2.SwInterfaceTapV2Dump{}, &tapv2.SwInterfaceTapV2Details{},
		&af_packet.AfPacketCreateV3{}, &af_packet.AfPacketCreateV3Reply{},
		&af_packet.AfPacketDelete{}, &af_packet.AfPacketDeleteReply{},
		&af_packet.AfPacketDump{}, &af_packet.AfPacketDetails{},
		&vxlan.VxlanAddDelTunnelV3{}, &vxlan.VxlanAddDelTunnelV3Reply{},
		&vxlan.VxlanTunnelV2Dump{}, &vxlan.VxlanTunnelV2Details{},
		&interfaces.SwInterfaceTagAddDel{}, &interfaces.SwInterfaceTagAddDelReply{},
		&interfaces.SwInterfaceSetFlags{}, &interfaces.SwInterfaceSetFlagsReply{},
		&interfaces.SwInterfaceSetMacAddress{}, &interfaces.SwInterfaceSetMacAddressReply{},
		&interfaces.SwInterfaceSetMtu{}, &interfaces.SwInterfaceSetMtuReply{},
		&interfaces.SwInterfaceSetTable{}, &interfaces.SwInterfaceSetTableReply{},
		&interfaces.SwInterfaceGetTable{}, &interfaces.SwInterfaceGetTableReply{},
		&interfaces.SwInterfaceSetRxMode{}, &interfaces.SwInterfaceSetRxModeReply{},
		&interfaces.SwInterfaceAddDelAddress{}, &interfaces.SwInterfaceAddDelAddressReply{},
		&interfaces.SwInterfaceSetUnnumbered{}, &interfaces.SwInterfaceSetUnnumberedReply{},
		&ip.SwInterfaceIP6EnableDisable{}, &ip.SwInterfaceIP6EnableDisableReply{},
		&ip.SwInterfaceIP6GetLinkLocalAddress{}, &ip.SwInterfaceIP6GetLinkLocalAddressReply{},
		&interfaces.SwInterfaceDump{}, &interfaces.SwInterfaceDetails{},
		&ip.IPAddressDump{}, &ip.IPAddressDetails{},
		&ip.IPUnnumberedDump{}, &ip.IPUnnumberedDetails{},
		&dhcp.DHCPClientConfig{}, &dhcp.DHCPClientConfigReply{},
		&dhcp.DHCPClientDump{}, &dhcp.DHCPClientDetails{},
		&dhcp.DHCPComplEvent{},
	}
}

// Handler sends interface requests over one govpp channel. Like the channel, it is
// not safe for concurrent use: the scheduler calls descriptors one at a time.
type Handler struct {
	ch govppapi.Channel
}

// New returns a handler using ch.
func New(ch govppapi.Channel) *Handler { return &Handler{ch: ch} }

// call sends one request and waits for its reply.
func (h *Handler) call(req, reply govppapi.Message) error {
	if err := h.ch.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return nil
}

func swIdx(sw uint32) interface_types.InterfaceIndex { return interface_types.InterfaceIndex(sw) }

func macToAPI(mac net.HardwareAddr) ethernet_types.MacAddress {
	var m ethernet_types.MacAddress
	copy(m[:], mac)
	return m
}

// CreateLoopback creates a loopback with the given MAC (nil: VPP chooses) and
// returns its sw_if_index.
func (h *Handler) CreateLoopback(mac net.HardwareAddr) (uint32, error) {
	reply := &interfaces.CreateLoopbackReply{}
	if err := h.call(&interfaces.CreateLoopback{MacAddress: macToAPI(mac)}, reply); err != nil {
		return 0, err
	}
	return uint32(reply.SwIfIndex), nil
}

// DeleteLoopback deletes a loopback.
func (h *Handler) DeleteLoopback(sw uint32) error {
	return h.call(&interfaces.DeleteLoopback{SwIfIndex: swIdx(sw)}, &interfaces.DeleteLoopbackReply{})
}

// Tap is what a TAP v2 interface is created with.
type Tap struct {
	// HostIfName is the Linux name of the TAP ("" lets VPP choose).
	HostIfName string
	// HostNamespace is the Linux namespace of the TAP ("" = VPP's).
	HostNamespace string
	// RxRingSize and TxRingSize are the ring sizes (0 = VPP default).
	RxRingSize, TxRingSize uint16
	// MAC is the VPP-side MAC address (nil = random).
	MAC net.HardwareAddr
	// Tag is the interface tag set at creation.
	Tag string
}

// CreateTap creates a TAP v2 interface (tap_create_v3) and returns its sw_if_index.
func (h *Handler) CreateTap(t Tap) (uint32, error) {
	req := &tapv2.TapCreateV3{
		ID:            NoIndex,
		UseRandomMac:  len(t.MAC) == 0,
		MacAddress:    macToAPI(t.MAC),
		NumRxQueues:   1,
		NumTxQueues:   1,
		RxRingSz:      t.RxRingSize,
		TxRingSz:      t.TxRingSize,
		HostIfNameSet: t.HostIfName != "",
		HostIfName:    t.HostIfName,
		Tag:           t.Tag,
	}
	if t.HostNamespace != "" {
		req.HostNamespaceSet, req.HostNamespace = true, t.HostNamespace
	}
	reply := &tapv2.TapCreateV3Reply{}
	if err := h.call(req, reply); err != nil {
		return 0, err
	}
	return uint32(reply.SwIfIndex), nil
}

// DeleteTap deletes a TAP v2 interface.
func (h *Handler) DeleteTap(sw uint32) error {
	return h.call(&tapv2.TapDeleteV2{SwIfIndex: swIdx(sw)}, &tapv2.TapDeleteV2Reply{})
}

// CreateAfPacket attaches VPP to the Linux interface hostIfName (af_packet_create_v3,
// Ethernet mode) and returns the sw_if_index. Without a MAC, VPP is asked for a random
// one: VPP 25.10 takes a zero hw_addr literally unless use_random_hw_addr is set.
func (h *Handler) CreateAfPacket(hostIfName string, mac net.HardwareAddr) (uint32, error) {
	req := &af_packet.AfPacketCreateV3{
		Mode:            af_packet.AF_PACKET_API_MODE_ETHERNET,
		HwAddr:          macToAPI(mac),
		UseRandomHwAddr: len(mac) == 0,
		HostIfName:      hostIfName,
		NumRxQueues:     1,
		NumTxQueues:     1,
	}
	reply := &af_packet.AfPacketCreateV3Reply{}
	if err := h.call(req, reply); err != nil {
		return 0, err
	}
	return uint32(reply.SwIfIndex), nil
}

// DeleteAfPacket deletes the af_packet interface of hostIfName.
func (h *Handler) DeleteAfPacket(hostIfName string) error {
	return h.call(&af_packet.AfPacketDelete{HostIfName: hostIfName}, &af_packet.AfPacketDeleteReply{})
}

// Vxlan identifies a VXLAN tunnel.
type Vxlan struct {
	// Src and Dst are the tunnel endpoints.
	Src, Dst netip.Addr
	// VNI is the VXLAN network identifier.
	VNI uint32
	// EncapVRF is the VRF the encapsulated packets are routed in.
	EncapVRF uint32
}

func (v Vxlan) request(isAdd bool) *vxlan.VxlanAddDelTunnelV3 {
	return &vxlan.VxlanAddDelTunnelV3{
		IsAdd:          isAdd,
		Instance:       NoIndex,
		SrcAddress:     vppbase.AddrToAPI(v.Src),
		DstAddress:     vppbase.AddrToAPI(v.Dst),
		McastSwIfIndex: swIdx(NoIndex),
		EncapVrfID:     v.EncapVRF,
		DecapNextIndex: NoIndex,
		Vni:            v.VNI,
	}
}

// AddVxlan creates a VXLAN tunnel interface and returns its sw_if_index.
func (h *Handler) AddVxlan(v Vxlan) (uint32, error) {
	reply := &vxlan.VxlanAddDelTunnelV3Reply{}
	if err := h.call(v.request(true), reply); err != nil {
		return 0, err
	}
	return uint32(reply.SwIfIndex), nil
}

// DeleteVxlan deletes a VXLAN tunnel.
func (h *Handler) DeleteVxlan(v Vxlan) error {
	return h.call(v.request(false), &vxlan.VxlanAddDelTunnelV3Reply{})
}

// ErrInterfaceNotFound is returned by FindInterface for a name VPP does not have.
var ErrInterfaceNotFound = errors.New("no such VPP interface")

// FindInterface returns the sw_if_index of the interface VPP knows under name.
func (h *Handler) FindInterface(name string) (uint32, error) {
	list, err := govppmux.Dump[interfaces.SwInterfaceDetails](h.ch, &interfaces.SwInterfaceDump{
		SwIfIndex: swIdx(NoIndex), NameFilterValid: true, NameFilter: name})
	if err != nil {
		return 0, fmt.Errorf("find interface %q: %w", name, err)
	}
	for _, d := range list {
		if d.InterfaceName == name {
			return uint32(d.SwIfIndex), nil
		}
	}
	return 0, fmt.Errorf("find interface %q: %w", name, ErrInterfaceNotFound)
}

// Batch collects interface settings to be sent as one pipeline.
type Batch struct {
	h     *Handler
	calls []govppmux.Call
}

// NewBatch starts an empty batch.
func (h *Handler) NewBatch() *Batch { return &Batch{h: h} }

// Len returns the number of requests in the batch.
func (b *Batch) Len() int { return len(b.calls) }

func (b *Batch) add(req, reply govppapi.Message) *Batch {
	b.calls = append(b.calls, govppmux.Call{Request: req, Reply: reply})
	return b
}

// SetTag sets the tag of an interface ("" removes it).
func (b *Batch) SetTag(sw uint32, tag string) *Batch {
	return b.add(&interfaces.SwInterfaceTagAddDel{IsAdd: tag != "", SwIfIndex: swIdx(sw), Tag: tag},
		&interfaces.SwInterfaceTagAddDelReply{})
}

// SetAdminUp sets the administrative state.
func (b *Batch) SetAdminUp(sw uint32, up bool) *Batch {
	var flags interface_types.IfStatusFlags
	if up {
		flags = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	return b.add(&interfaces.SwInterfaceSetFlags{SwIfIndex: swIdx(sw), Flags: flags}, &interfaces.SwInterfaceSetFlagsReply{})
}

// SetMAC sets the MAC address.
func (b *Batch) SetMAC(sw uint32, mac net.HardwareAddr) *Batch {
	return b.add(&interfaces.SwInterfaceSetMacAddress{SwIfIndex: swIdx(sw), MacAddress: macToAPI(mac)},
		&interfaces.SwInterfaceSetMacAddressReply{})
}

// SetMTU sets the L3 MTU (the per-protocol MTUs follow it).
func (b *Batch) SetMTU(sw uint32, mtu uint32) *Batch {
	return b.add(&interfaces.SwInterfaceSetMtu{SwIfIndex: swIdx(sw), Mtu: []uint32{mtu, 0, 0, 0}},
		&interfaces.SwInterfaceSetMtuReply{})
}

// SetTable binds the interface to a VRF table of one IP version.
func (b *Batch) SetTable(sw, vrf uint32, ipv6 bool) *Batch {
	return b.add(&interfaces.SwInterfaceSetTable{SwIfIndex: swIdx(sw), IsIPv6: ipv6, VrfID: vrf},
		&interfaces.SwInterfaceSetTableReply{})
}

// SetRxMode sets the receive mode of every queue.
func (b *Batch) SetRxMode(sw uint32, mode interface_types.RxMode) *Batch {
	return b.add(&interfaces.SwInterfaceSetRxMode{SwIfIndex: swIdx(sw), Mode: mode}, &interfaces.SwInterfaceSetRxModeReply{})
}

// SetDHCPClient enables (with the given host name) or disables the DHCP client;
// enabled clients report leases with dhcp_compl_event.
func (b *Batch) SetDHCPClient(sw uint32, enable bool, hostname string, pid uint32) *Batch {
	return b.add(&dhcp.DHCPClientConfig{IsAdd: enable, Client: dhcp.DHCPClient{
		SwIfIndex: swIdx(sw), Hostname: hostname, WantDHCPEvent: true, PID: pid}},
		&dhcp.DHCPClientConfigReply{})
}

// AddDelAddress adds or deletes an interface address.
func (b *Batch) AddDelAddress(sw uint32, p netip.Prefix, isAdd bool) *Batch {
	return b.add(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: swIdx(sw), IsAdd: isAdd, Prefix: ip_types.AddressWithPrefix(vppbase.PrefixToAPI(p))},
		&interfaces.SwInterfaceAddDelAddressReply{})
}

// SetUnnumbered makes sw use the addresses of withIP (or stops it).
func (b *Batch) SetUnnumbered(sw, withIP uint32, enable bool) *Batch {
	return b.add(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: swIdx(withIP), UnnumberedSwIfIndex: swIdx(sw), IsAdd: enable},
		&interfaces.SwInterfaceSetUnnumberedReply{})
}

// SetIP6Enabled enables IPv6 on the interface (link-local address, ND, IPv6
// multicast) or gives back one enable (sw_interface_ip6_enable_disable). VPP counts
// enables as locks: a second enable answers VALUE_EXIST and still takes one.
func (b *Batch) SetIP6Enabled(sw uint32, enable bool) *Batch {
	return b.add(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: swIdx(sw), Enable: enable},
		&ip.SwInterfaceIP6EnableDisableReply{})
}

// Send sends the whole batch as one pipeline and returns the failures, each named by
// its message (nil if all succeeded). Every request is sent even if one fails.
func (b *Batch) Send() error {
	if len(b.calls) == 0 {
		return nil
	}
	return govppmux.Pipeline(b.h.ch, b.calls...)
}

// TapHostIfName returns the Linux name of the host side of a TAP.
func (h *Handler) TapHostIfName(sw uint32) (string, error) {
	list, err := govppmux.Dump[tapv2.SwInterfaceTapV2Details](h.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: swIdx(sw)})
	if err != nil {
		return "", fmt.Errorf("host name of TAP sw_if_index %d: %w", sw, err)
	}
	for _, t := range list {
		if t.SwIfIndex == sw {
			return t.HostIfName, nil
		}
	}
	return "", fmt.Errorf("host name of TAP sw_if_index %d: %w", sw, ErrInterfaceNotFound)
}

// Table returns the VRF table of one IP version the interface is bound to.
func (h *Handler) Table(sw uint32, ipv6 bool) (uint32, error) {
	reply := &interfaces.SwInterfaceGetTableReply{}
	if err := h.call(&interfaces.SwInterfaceGetTable{SwIfIndex: swIdx(sw), IsIPv6: ipv6}, reply); err != nil {
		return 0, fmt.Errorf("sw_if_index %d, ipv6=%t: %w", sw, ipv6, err)
	}
	return reply.VrfID, nil
}

// IP6Enabled tells whether IPv6 is enabled on the interface: VPP answers
// sw_interface_ip6_get_link_local_address with IP6_NOT_ENABLED while it is not.
func (h *Handler) IP6Enabled(sw uint32) (bool, error) {
	err := h.call(&ip.SwInterfaceIP6GetLinkLocalAddress{SwIfIndex: swIdx(sw)}, &ip.SwInterfaceIP6GetLinkLocalAddressReply{})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, govppapi.IP6_NOT_ENABLED):
		return false, nil
	}
	return false, fmt.Errorf("sw_if_index %d: %w", sw, err)
}

package vppsim

import (
	"net/netip"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vxlan"
)

func TestStartStateIsLocal0AndNICs(t *testing.T) {
	e := newEnv(t)
	got := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces})
	if len(got) != 3 {
		t.Fatalf("%d interfaces at start, want 3", len(got))
	}
	want := []struct {
		idx     interface_types.InterfaceIndex
		name    string
		devType string
	}{{0, "local0", "local"}, {1, nic1, "dpdk"}, {2, nic2, "dpdk"}}
	for k, w := range want {
		d := got[k]
		if d.SwIfIndex != w.idx || d.InterfaceName != w.name || d.InterfaceDevType != w.devType || d.Flags != 0 {
			t.Errorf("interface %d = %d %q %q flags %v", k, d.SwIfIndex, d.InterfaceName, d.InterfaceDevType, d.Flags)
		}
	}
	if got[1].L2Address == got[2].L2Address || got[1].L2Address == [6]byte{} {
		t.Errorf("NIC MACs %v %v", got[1].L2Address, got[2].L2Address)
	}
	if got[1].LinkMtu != 9000 || got[1].Mtu[0] != 9000 || got[1].LinkSpeed == 0 {
		t.Errorf("NIC MTU/speed: %+v", got[1])
	}
	// sw_if_index 0 means "all", as in VPP; another index one interface.
	if n := len(dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: 0})); n != 3 {
		t.Errorf("dump with sw_if_index 0 returned %d", n)
	}
	if one := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: 2}); len(one) != 1 || one[0].InterfaceName != nic2 {
		t.Errorf("dump of sw_if_index 2: %+v", one)
	}
	if none := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: 99}); len(none) != 0 {
		t.Errorf("dump of a missing interface returned %d", len(none))
	}
	filtered := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces, NameFilterValid: true, NameFilter: "gigabitethernet0/9"})
	if len(filtered) != 1 || filtered[0].InterfaceName != nic2 {
		t.Errorf("name filter: %+v", filtered)
	}
}

func TestLoopbacks(t *testing.T) {
	e := newEnv(t)
	l0 := e.loopback()
	l1rep := &interfaces.CreateLoopbackInstanceReply{}
	e.ok(&interfaces.CreateLoopbackInstance{IsSpecified: true, UserInstance: 7, MacAddress: mac("02:00:00:00:00:07")}, l1rep)
	e.expect(retvalInvalidRegistration, &interfaces.CreateLoopbackInstance{IsSpecified: true, UserInstance: 7})
	lo, _ := e.sim.InterfaceByName("loop0")
	if lo.SwIfIndex != uint32(l0) || lo.MAC.String() != "de:ad:00:00:00:00" || lo.DevType != "Loopback" || lo.AdminUp {
		t.Errorf("loop0 = %+v", lo)
	}
	l7, _ := e.sim.InterfaceByName("loop7")
	if l7.MAC.String() != "02:00:00:00:00:07" {
		t.Errorf("loop7 MAC %v", l7.MAC)
	}
	e.expect(retvalInvalidSwIfIndex, &interfaces.DeleteLoopback{SwIfIndex: 1}) // a NIC
	e.expect(retvalInvalidSwIfIndex, &interfaces.DeleteLoopback{SwIfIndex: 99})
	e.ok(&interfaces.DeleteLoopback{SwIfIndex: l0})
	// VPP reuses freed indexes, and the lowest free instance.
	if again := e.loopback(); again != l0 {
		t.Errorf("new loopback got index %d, want reused %d", again, l0)
	}
	if _, ok := e.sim.InterfaceByName("loop0"); !ok {
		t.Error("instance 0 not reused")
	}
}

func TestTapCreateDumpDelete(t *testing.T) {
	e := newEnv(t)
	rep := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{
		ID: noIndex, UseRandomMac: true, NumRxQueues: 2,
		HostIfNameSet: true, HostIfName: "vpp1",
		HostNamespaceSet: true, HostNamespace: "pod1",
		HostMacAddrSet: true, HostMacAddr: mac("02:11:22:33:44:55"),
		HostMtuSet: true, HostMtuSize: 1450,
		HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix{Address: ip4("10.1.1.2"), Len: 24},
		Tag: "pod1-tap",
	}, rep)
	got := dump[tapv2.SwInterfaceTapV2Details](t, e.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: allIfaces})
	if len(got) != 1 {
		t.Fatalf("%d taps", len(got))
	}
	d := got[0]
	if d.SwIfIndex != uint32(rep.SwIfIndex) || d.DevName != "tap0" || d.HostIfName != "vpp1" || d.HostNamespace != "pod1" ||
		d.HostMtuSize != 1450 || d.HostMacAddr.String() != "02:11:22:33:44:55" || d.HostIP4Prefix.Len != 24 ||
		d.RxRingSz != 256 || d.TxRingSz != 256 {
		t.Errorf("tap details %+v", d)
	}
	ifc, _ := e.sim.InterfaceByTag("pod1-tap")
	if ifc.Name != "tap0" || ifc.MAC[0] != 0x02 || ifc.MAC[1] != 0xfe || !ifc.LinkUp {
		t.Errorf("tap interface %+v", ifc)
	}
	// sw_if_index 0 (local0) is not a tap: nothing.
	if n := len(dump[tapv2.SwInterfaceTapV2Details](t, e.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: 0})); n != 0 {
		t.Errorf("tap dump for local0 returned %d", n)
	}

	tests := []struct {
		name string
		req  *tapv2.TapCreateV3
		want int32
	}{
		{"id in use", &tapv2.TapCreateV3{ID: 0}, retvalInvalidInterface},
		{"ring not a power of 2", &tapv2.TapCreateV3{ID: noIndex, RxRingSz: 300}, retvalInvalidValue},
		{"ring too large", &tapv2.TapCreateV3{ID: noIndex, TxRingSz: 65535}, retvalInvalidValue},
		// VPP sets no limit on host names: Linux keeps the first 15 bytes.
		{"long host name", &tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "a-very-long-interface", HostNamespaceSet: true, HostNamespace: "pod3"}, 0},
		{"long host name, first 15 bytes taken", &tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "a-very-long-interface-2", HostNamespaceSet: true, HostNamespace: "pod3"}, retvalSyscallError3},
		{"host name taken in namespace", &tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "vpp1", HostNamespaceSet: true, HostNamespace: "pod1"}, retvalSyscallError3},
		{"bad host MTU", &tapv2.TapCreateV3{ID: noIndex, HostMtuSet: true, HostMtuSize: 10}, retvalSyscallError3},
		{"same host name in another namespace", &tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "vpp1", HostNamespaceSet: true, HostNamespace: "pod2"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}

	v2 := &tapv2.TapCreateV2Reply{}
	e.ok(&tapv2.TapCreateV2{ID: 10, UseRandomMac: true}, v2)
	if ifc, ok := e.sim.InterfaceByName("tap10"); !ok || ifc.Tap.HostIfName != "tap10" {
		t.Errorf("tap_create_v2: %+v", ifc)
	}
	e.expect(retvalInvalidSwIfIndex, &tapv2.TapDeleteV2{SwIfIndex: 1})
	e.ok(&tapv2.TapDeleteV2{SwIfIndex: rep.SwIfIndex})
	e.ok(&tapv2.TapDeleteV2{SwIfIndex: v2.SwIfIndex})
	if n := len(dump[tapv2.SwInterfaceTapV2Details](t, e.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: allIfaces})); n != 2 {
		t.Errorf("%d taps after deleting two of four", n)
	}
}

// Without use_random_hw_addr / use_random_mac, VPP 25.10 takes the MAC of
// the request as it is, a zero one included: it does not generate one.
func TestZeroMACWithoutRandomIsKeptAsVPPDoes(t *testing.T) {
	e := newEnv(t)
	e.ok(&af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "veth1"})
	e.ok(&af_packet.AfPacketCreate{HostIfName: "veth2"})
	e.ok(&tapv2.TapCreateV3{ID: 7, HostIfName: "tap7"})
	for _, name := range []string{"host-veth1", "host-veth2", "tap7"} {
		if ifc, _ := e.sim.InterfaceByName(name); ifc.MAC.String() != "00:00:00:00:00:00" {
			t.Errorf("%s MAC %v, want 00:00:00:00:00:00 (no random MAC asked for)", name, ifc.MAC)
		}
	}
	for _, d := range dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces}) {
		if d.InterfaceName == "host-veth1" && d.L2Address.String() != "00:00:00:00:00:00" {
			t.Errorf("sw_interface_details of host-veth1: l2_address %s", d.L2Address)
		}
	}
}

func TestAfPacket(t *testing.T) {
	e := newEnv(t)
	rep := &af_packet.AfPacketCreateV3Reply{}
	e.ok(&af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "veth1", UseRandomHwAddr: true}, rep)
	e.ok(&af_packet.AfPacketCreateV2{HostIfName: "veth2", HwAddr: mac("02:00:00:00:00:02")})
	e.ok(&af_packet.AfPacketCreate{HostIfName: "veth3", UseRandomHwAddr: true})
	dup := &af_packet.AfPacketCreateV3Reply{}
	if rv := e.call(&af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "veth1"}, dup); rv != retvalIfAlreadyExists {
		t.Errorf("duplicate af_packet: retval %d", rv)
	}
	e.expect(retvalInvalidValue, &af_packet.AfPacketCreateV3{Mode: 0, HostIfName: "veth9"})
	got := dump[af_packet.AfPacketDetails](t, e.ch, &af_packet.AfPacketDump{})
	if len(got) != 3 || got[0].HostIfName != "veth1" || got[0].SwIfIndex != rep.SwIfIndex {
		t.Fatalf("af_packet dump %+v", got)
	}
	if ifc, _ := e.sim.InterfaceByName("host-veth2"); ifc.MAC.String() != "02:00:00:00:00:02" {
		t.Errorf("host-veth2 MAC %v", ifc.MAC)
	}
	if ifc, _ := e.sim.InterfaceByName("host-veth1"); ifc.MAC[0] != 0x02 || ifc.MAC[1] != 0xfe {
		t.Errorf("host-veth1 MAC %v, want a random 02:fe one", ifc.MAC)
	}
	e.expect(retvalSyscallError1, &af_packet.AfPacketDelete{HostIfName: "nope"})
	e.ok(&af_packet.AfPacketDelete{HostIfName: "veth1"})
	if _, ok := e.sim.InterfaceByName("host-veth1"); ok {
		t.Error("host-veth1 still exists")
	}
}

func TestVxlanTunnels(t *testing.T) {
	e := newEnv(t)
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 5}})
	base := vxlan.VxlanAddDelTunnelV3{IsAdd: true, Instance: noIndex, SrcAddress: addr("192.168.16.1"),
		DstAddress: addr("192.168.16.2"), Vni: 10, DecapNextIndex: noIndex}
	rep := &vxlan.VxlanAddDelTunnelV3Reply{}
	first := base
	e.ok(&first, rep)
	tests := []struct {
		name string
		mod  func(*vxlan.VxlanAddDelTunnelV3)
		want int32
	}{
		{"duplicate", func(*vxlan.VxlanAddDelTunnelV3) {}, retvalTunnelExist},
		{"same source and destination", func(m *vxlan.VxlanAddDelTunnelV3) { m.DstAddress = m.SrcAddress }, retvalSameSrcDst},
		{"missing encap VRF", func(m *vxlan.VxlanAddDelTunnelV3) { m.EncapVrfID = 9 }, retvalNoSuchFIB},
		{"mixed families", func(m *vxlan.VxlanAddDelTunnelV3) { m.DstAddress = addr("fd00::1") }, retvalInvalidValue},
		{"bad decap next", func(m *vxlan.VxlanAddDelTunnelV3) { m.Vni = 11; m.DecapNextIndex = 7 }, retvalInvalidDecapNext},
		{"instance in use", func(m *vxlan.VxlanAddDelTunnelV3) { m.Vni = 12; m.Instance = 0 }, retvalInstanceInUse},
		{"delete missing", func(m *vxlan.VxlanAddDelTunnelV3) { m.IsAdd = false; m.Vni = 99 }, retvalNoSuchEntry},
		{"other VNI in VRF 5", func(m *vxlan.VxlanAddDelTunnelV3) { m.Vni = 13; m.EncapVrfID = 5 }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			tc.mod(&m)
			e.expect(tc.want, &m)
		})
	}
	got := dump[vxlan.VxlanTunnelV2Details](t, e.ch, &vxlan.VxlanTunnelV2Dump{SwIfIndex: allIfaces})
	if len(got) != 2 {
		t.Fatalf("%d tunnels", len(got))
	}
	d := got[0]
	if d.SwIfIndex != rep.SwIfIndex || d.Vni != 10 || d.SrcPort != 4789 || d.DstPort != 4789 || d.DecapNextIndex != 1 ||
		d.SrcAddress.String() != "192.168.16.1" || d.Instance != 0 {
		t.Errorf("tunnel details %+v", d)
	}
	if ifc, _ := e.sim.InterfaceByName("vxlan_tunnel0"); ifc.DevType != "VXLAN" || !ifc.AdminUp || !ifc.LinkUp { // VPP creates tunnels admin-up
		t.Errorf("vxlan interface %+v", ifc)
	}
	del := base
	del.IsAdd = false
	e.ok(&del)
	if n := len(dump[vxlan.VxlanTunnelV2Details](t, e.ch, &vxlan.VxlanTunnelV2Dump{SwIfIndex: allIfaces})); n != 1 {
		t.Errorf("%d tunnels after delete", n)
	}
	e.ok(&vxlan.VxlanAddDelTunnelV2{IsAdd: true, Instance: noIndex, SrcAddress: addr("10.0.0.1"), DstAddress: addr("10.0.0.2"), Vni: 1, DecapNextIndex: noIndex})
	e.ok(&vxlan.VxlanAddDelTunnel{IsAdd: true, Instance: 40, SrcAddress: addr("10.0.0.1"), DstAddress: addr("10.0.0.3"), Vni: 1, DecapNextIndex: noIndex})
	if n := len(dump[vxlan.VxlanTunnelDetails](t, e.ch, &vxlan.VxlanTunnelDump{SwIfIndex: allIfaces})); n != 3 {
		t.Errorf("vxlan_tunnel_dump returned %d", n)
	}
}

func TestInterfaceSettingsRejectUnknownInterface(t *testing.T) {
	e := newEnv(t)
	const bad = interface_types.InterfaceIndex(77)
	reqs := []api.Message{
		&interfaces.SwInterfaceSetFlags{SwIfIndex: bad},
		&interfaces.SwInterfaceAddDelAddress{SwIfIndex: bad, IsAdd: true, Prefix: awp("10.0.0.1/24")},
		&interfaces.SwInterfaceSetTable{SwIfIndex: bad},
		&interfaces.SwInterfaceGetTable{SwIfIndex: bad},
		&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: bad, UnnumberedSwIfIndex: 1, IsAdd: true},
		&interfaces.SwInterfaceSetMacAddress{SwIfIndex: bad},
		&interfaces.SwInterfaceSetMtu{SwIfIndex: bad, Mtu: []uint32{1500, 0, 0, 0}},
		&interfaces.HwInterfaceSetMtu{SwIfIndex: bad, Mtu: 1500},
		&interfaces.SwInterfaceSetRxMode{SwIfIndex: bad, Mode: interface_types.RX_MODE_API_POLLING},
		&interfaces.SwInterfaceTagAddDel{SwIfIndex: bad, IsAdd: true, Tag: "x"},
		&interfaces.DeleteLoopback{SwIfIndex: bad},
	}
	for _, r := range reqs {
		t.Run(r.GetMessageName(), func(t *testing.T) {
			e.expect(retvalInvalidSwIfIndex, r)
		})
	}
	// The second interface of set_unnumbered has its own code.
	e.expect(retvalInvalidSwIfIndex2, &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: 1, UnnumberedSwIfIndex: bad, IsAdd: true})
}

func TestInterfaceSettings(t *testing.T) {
	e := newEnv(t)
	lo := e.loopback()
	tap := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex, NumRxQueues: 1}, tap)
	vx := &vxlan.VxlanAddDelTunnelV3Reply{}
	e.ok(&vxlan.VxlanAddDelTunnelV3{IsAdd: true, Instance: noIndex, SrcAddress: addr("1.1.1.1"), DstAddress: addr("1.1.1.2"), Vni: 5, DecapNextIndex: noIndex}, vx)

	tests := []struct {
		name string
		req  api.Message
		want int32
	}{
		{"admin up", &interfaces.SwInterfaceSetFlags{SwIfIndex: lo, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, 0},
		{"mac of loopback", &interfaces.SwInterfaceSetMacAddress{SwIfIndex: lo, MacAddress: mac("02:01:02:03:04:05")}, 0},
		{"mac of vxlan", &interfaces.SwInterfaceSetMacAddress{SwIfIndex: vx.SwIfIndex, MacAddress: mac("02:01:02:03:04:05")}, retvalUnimplemented},
		{"sw mtu", &interfaces.SwInterfaceSetMtu{SwIfIndex: lo, Mtu: []uint32{1500, 0, 1400, 0}}, 0},
		{"hw mtu", &interfaces.HwInterfaceSetMtu{SwIfIndex: tap.SwIfIndex, Mtu: 1450}, 0},
		{"hw mtu too small", &interfaces.HwInterfaceSetMtu{SwIfIndex: tap.SwIfIndex, Mtu: 10}, retvalInvalidValue},
		{"hw mtu too large", &interfaces.HwInterfaceSetMtu{SwIfIndex: tap.SwIfIndex, Mtu: 10000}, retvalInvalidValue},
		{"hw mtu of vxlan", &interfaces.HwInterfaceSetMtu{SwIfIndex: vx.SwIfIndex, Mtu: 1450}, retvalFeatureDisabled},
		{"rx mode of tap", &interfaces.SwInterfaceSetRxMode{SwIfIndex: tap.SwIfIndex, Mode: interface_types.RX_MODE_API_INTERRUPT}, 0},
		{"rx mode of loopback", &interfaces.SwInterfaceSetRxMode{SwIfIndex: lo, Mode: interface_types.RX_MODE_API_POLLING}, retvalInvalidInterface},
		{"rx mode unknown", &interfaces.SwInterfaceSetRxMode{SwIfIndex: tap.SwIfIndex}, retvalInvalidInterface},
		{"rx mode bad queue", &interfaces.SwInterfaceSetRxMode{SwIfIndex: tap.SwIfIndex, QueueIDValid: true, QueueID: 3, Mode: interface_types.RX_MODE_API_POLLING}, retvalInvalidInterface},
		{"tag", &interfaces.SwInterfaceTagAddDel{SwIfIndex: lo, IsAdd: true, Tag: "vxlanBVI"}, 0},
		{"empty tag", &interfaces.SwInterfaceTagAddDel{SwIfIndex: lo, IsAdd: true}, retvalInvalidValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.expect(tc.want, tc.req)
		})
	}
	d := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: lo})[0]
	if d.Flags != interface_types.IF_STATUS_API_FLAG_ADMIN_UP|interface_types.IF_STATUS_API_FLAG_LINK_UP ||
		d.L2Address.String() != "02:01:02:03:04:05" || d.Tag != "vxlanBVI" || d.Mtu[0] != 1500 || d.Mtu[2] != 1400 {
		t.Errorf("loopback after settings: %+v", d)
	}
	td := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: tap.SwIfIndex})[0]
	if td.LinkMtu != 1450 || td.Mtu[0] != 1450 {
		t.Errorf("tap MTU after hw_interface_set_mtu: %d %v", td.LinkMtu, td.Mtu)
	}
	e.ok(&interfaces.SwInterfaceTagAddDel{SwIfIndex: lo, IsAdd: false})
	if ifc, _ := e.sim.InterfaceByName("loop0"); ifc.Tag != "" {
		t.Errorf("tag not removed: %q", ifc.Tag)
	}
}

func TestInterfaceEvents(t *testing.T) {
	e := newEnv(t)
	events := make(chan api.Message, 10)
	sub, err := e.ch.SubscribeNotification(events, &interfaces.SwInterfaceEvent{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	e.ok(&interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 42})
	e.expect(retvalInvalidRegistration, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 42})
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: 1, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
	select {
	case m := <-events:
		ev := m.(*interfaces.SwInterfaceEvent)
		if ev.PID != 42 || ev.SwIfIndex != 1 || ev.Flags != interface_types.IF_STATUS_API_FLAG_ADMIN_UP|interface_types.IF_STATUS_API_FLAG_LINK_UP || ev.Deleted {
			t.Errorf("event %+v", ev)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no sw_interface_event")
	}
	e.ok(&interfaces.WantInterfaceEvents{EnableDisable: 0, PID: 42})
	e.expect(retvalInvalidRegistration, &interfaces.WantInterfaceEvents{EnableDisable: 0, PID: 42})
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: 1})
	select {
	case m := <-events:
		t.Errorf("event after unsubscribing: %+v", m)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestAddressesAndUnnumbered(t *testing.T) {
	e := newEnv(t)
	lo := e.loopback()
	tap := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex}, tap)
	tests := []struct {
		name string
		sw   interface_types.InterfaceIndex
		add  bool
		pfx  string
		want int32
	}{
		{"add", lo, true, "10.1.1.1/24", 0},
		{"second address in the same subnet", lo, true, "10.1.1.5/24", 0},
		{"ipv6", lo, true, "fd00::1/64", 0},
		{"duplicate", lo, true, "10.1.1.1/24", retvalDuplicateIfAddress},
		{"overlap on another interface", 1, true, "10.1.1.9/24", retvalAddressInUse},
		{"same subnet other length", lo, true, "10.1.1.7/16", retvalAddressInUse},
		{"non-overlapping on another interface", 1, true, "192.168.16.1/24", 0},
		{"delete missing", lo, false, "10.9.9.9/24", retvalAddressNotFoundForInterface},
		{"delete", lo, false, "10.1.1.5/24", 0},
		{"prefix length too long", lo, true, "10.2.2.2/40", retvalInvalidValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &interfaces.SwInterfaceAddDelAddress{SwIfIndex: tc.sw, IsAdd: tc.add}
			if tc.pfx == "10.2.2.2/40" {
				req.Prefix = ip_types.AddressWithPrefix{Address: addr("10.2.2.2"), Len: 40}
			} else {
				req.Prefix = awp(tc.pfx)
			}
			e.expect(tc.want, req)
		})
	}
	got := dump[ip.IPAddressDetails](t, e.ch, &ip.IPAddressDump{SwIfIndex: lo})
	if len(got) != 1 || got[0].Prefix.String() != "10.1.1.1/24" {
		t.Errorf("ipv4 addresses of loop0: %+v", got)
	}
	got6 := dump[ip.IPAddressDetails](t, e.ch, &ip.IPAddressDump{SwIfIndex: lo, IsIPv6: true})
	if len(got6) != 1 || got6[0].Prefix.String() != "fd00::1/64" {
		t.Errorf("ipv6 addresses of loop0: %+v", got6)
	}

	// Unnumbered: the tap borrows loop0's addresses; the dump shows them
	// for the tap, as VPP's ip_address_dump honours unnumbered.
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: tap.SwIfIndex, IsAdd: true})
	un := dump[ip.IPUnnumberedDetails](t, e.ch, &ip.IPUnnumberedDump{SwIfIndex: allIfaces})
	if len(un) != 1 || un[0].SwIfIndex != tap.SwIfIndex || un[0].IPSwIfIndex != lo {
		t.Errorf("unnumbered dump %+v", un)
	}
	if b := dump[ip.IPAddressDetails](t, e.ch, &ip.IPAddressDump{SwIfIndex: tap.SwIfIndex}); len(b) != 1 || b[0].SwIfIndex != tap.SwIfIndex {
		t.Errorf("borrowed addresses %+v", b)
	}
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: tap.SwIfIndex, IsAdd: false})
	if n := len(dump[ip.IPUnnumberedDetails](t, e.ch, &ip.IPUnnumberedDump{SwIfIndex: allIfaces})); n != 0 {
		t.Errorf("unnumbered entries after removal: %d", n)
	}

	// Deleting the donor clears the unnumbered configuration.
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: tap.SwIfIndex, IsAdd: true})
	e.ok(&interfaces.DeleteLoopback{SwIfIndex: lo})
	if ifc, _ := e.sim.InterfaceByName("tap0"); ifc.Unnumbered != NoIndex {
		t.Errorf("tap still unnumbered to a deleted interface")
	}

	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, DelAll: true})
	if ifc, _ := e.sim.InterfaceByName(nic1); len(ifc.Addresses) != 0 {
		t.Errorf("addresses after del_all: %v", ifc.Addresses)
	}
	// Overlap checks are per VRF: the same subnet is fine in another table.
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 1}})
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap.SwIfIndex, VrfID: 1})
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: true, Prefix: awp("172.16.0.1/24")})
	e.expect(0, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: tap.SwIfIndex, IsAdd: true, Prefix: awp("172.16.0.2/24")})
	want := []netip.Prefix{netip.MustParsePrefix("172.16.0.2/24")}
	if ifc, _ := e.sim.InterfaceByName("tap0"); len(ifc.Addresses) != 1 || ifc.Addresses[0] != want[0] || ifc.VRF != 1 {
		t.Errorf("tap0 = %+v", ifc)
	}
}

// VPP 25.10 (src/vnet/interface.c vnet_sw_interface_check_table_same) refuses an
// unnumbered setting between interfaces of different IPv4 or IPv6 tables, on every
// enable; the disable is not checked.
func TestUnnumberedNeedsTheDonorsIPv4AndIPv6Tables(t *testing.T) {
	e := newEnv(t)
	lo := e.loopback()
	tap := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex}, tap)
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 1}})
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 1, IsIP6: true}})
	for _, v6 := range []bool{false, true} {
		e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: lo, VrfID: 1, IsIPv6: v6})
	}
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: lo, IsAdd: true, Prefix: awp("10.1.1.1/24")})
	set := &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: tap.SwIfIndex, IsAdd: true}
	e.expect(retvalUnexpectedIntfState, set) // IPv4 0 vs 1
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap.SwIfIndex, VrfID: 1})
	e.expect(retvalUnexpectedIntfState, set) // IPv6 0 vs 1
	if un := dump[ip.IPUnnumberedDetails](t, e.ch, &ip.IPUnnumberedDump{SwIfIndex: allIfaces}); len(un) != 0 {
		t.Fatalf("a refused setting is in place: %+v", un)
	}
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: tap.SwIfIndex, VrfID: 1, IsIPv6: true})
	e.ok(set)
	e.ok(set) // checked again, still the same tables
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: tap.SwIfIndex})
}

package ifplugin

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func vrf(id uint32) *l3model.VrfTable {
	return &l3model.VrfTable{Id: id, Protocol: l3model.VrfTable_IPV4}
}

func loop(name string, vrfID uint32, ips ...string) *ifmodel.Interface {
	return &ifmodel.Interface{Name: name, Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: vrfID, IpAddresses: ips}
}

func podTap(name, withIP string) *ifmodel.Interface {
	return &ifmodel.Interface{Name: name, Type: ifmodel.Interface_TAP, Enabled: true,
		Unnumbered: &ifmodel.Interface_Unnumbered{InterfaceWithIp: withIP},
		Link:       &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{Version: 2, HostIfName: "eth0", HostNamespace: "/proc/1/ns/net"}}}
}

func TestUnnumberedWaitsForAnAddressOfItsTarget(t *testing.T) {
	e := newEnv(t)
	tapKey, gwKey := ifmodel.InterfaceKey("vpp-tap-1"), ifmodel.InterfaceKey("podGwLoop")
	e.mustCommit(map[string]proto.Message{tapKey: podTap("vpp-tap-1", "podGwLoop")})
	if st := e.state(ifmodel.UnnumberedKey("vpp-tap-1")); st != kvapi.StatePending {
		t.Fatalf("unnumbered without target: %v", st)
	}
	if e.simIface("vpp-tap-1").Unnumbered != vppsim.NoIndex {
		t.Fatal("unnumbered set without target")
	}
	e.mustCommit(map[string]proto.Message{gwKey: loop("podGwLoop", 0, "10.1.1.1/24")})
	gw := e.simIface("podGwLoop")
	if got := e.simIface("vpp-tap-1").Unnumbered; got != gw.SwIfIndex {
		t.Fatalf("unnumbered to %d, want %d", got, gw.SwIfIndex)
	}
	// Addresses change through the derived diff; the target keeps one, so the
	// unnumbered setting stays.
	e.mustCommit(map[string]proto.Message{gwKey: loop("podGwLoop", 0, "10.1.1.1/24", "fd00::1/64")})
	if got := e.prefixes("podGwLoop"); !slices.Equal(got, []string{"10.1.1.1/24", "fd00::1/64"}) {
		t.Fatalf("addresses %v", got)
	}
	e.mustCommit(map[string]proto.Message{gwKey: loop("podGwLoop", 0)})
	if got := e.prefixes("podGwLoop"); len(got) != 0 {
		t.Fatalf("addresses left: %v", got)
	}
	if st := e.state(ifmodel.UnnumberedKey("vpp-tap-1")); st != kvapi.StatePending {
		t.Errorf("unnumbered after the target lost its addresses: %v", st)
	}
	if e.simIface("vpp-tap-1").Unnumbered != vppsim.NoIndex {
		t.Error("VPP still has the unnumbered setting")
	}
	if e.simIface("podGwLoop").SwIfIndex != gw.SwIfIndex {
		t.Error("address change re-created the interface")
	}
}

func TestInterfaceWaitsForVRFTableAndHostInterface(t *testing.T) {
	e := newEnv(t)
	key := ifmodel.InterfaceKey("vxlanBVI")
	e.mustCommit(map[string]proto.Message{key: loop("vxlanBVI", 1, "192.168.30.1/24")})
	if st := e.state(key); st != kvapi.StatePending {
		t.Fatalf("interface in a missing VRF: %v", st)
	}
	e.mustCommit(map[string]proto.Message{l3model.VrfTableKey(1, l3model.VrfTable_IPV4): vrf(1)})
	if i := e.simIface("vxlanBVI"); i.VRF != 1 || len(i.Addresses) != 1 {
		t.Fatalf("interface in VPP: %+v", i)
	}
	md, ok := e.p.GetInterfaceIndex().LookupByName("vxlanBVI")
	if !ok || md.Vrf != 1 || !slices.Equal(md.IPAddresses, []string{"192.168.30.1/24"}) {
		t.Fatalf("index: %+v %v", md, ok)
	}
	if st := e.state(ifmodel.InterfaceVrfKey("vxlanBVI", 1, false)); st != kvapi.StateConfigured {
		t.Errorf("VRF membership property: %v", st)
	}

	afKey := ifmodel.InterfaceKey("afpacket-vpp2")
	af := &ifmodel.Interface{Name: "afpacket-vpp2", Type: ifmodel.Interface_AF_PACKET, Enabled: true,
		Link: &ifmodel.Interface_Afpacket{Afpacket: &ifmodel.AfpacketLink{HostIfName: "vpp2"}}}
	e.mustCommit(map[string]proto.Message{afKey: af})
	if st := e.state(afKey); st != kvapi.StatePending {
		t.Fatalf("AF_PACKET without its host interface: %v", st)
	}
	hostKey := linuxif.InterfaceHostNameKey("vpp2")
	if err := e.kvs.PushSBNotification(kvapi.KVWithMetadata{Key: hostKey, Value: &emptypb.Empty{}, Origin: kvapi.FromSB}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "AF_PACKET configured", func() bool { return e.state(afKey) == kvapi.StateConfigured })
	if e.simIface("afpacket-vpp2").AfPacketHost != "vpp2" {
		t.Error("af_packet not bound to vpp2")
	}
	if err := e.kvs.PushSBNotification(kvapi.KVWithMetadata{Key: hostKey, Origin: kvapi.FromSB}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "AF_PACKET removed with its host interface", func() bool { return e.state(afKey) == kvapi.StatePending })
	if _, ok := e.sim.InterfaceByName("host-vpp2"); ok {
		t.Error("af_packet still in VPP")
	}
}

func TestDHCPLeaseIsNotifiedAndLendsItsAddress(t *testing.T) {
	e := newEnv(t)
	nicKey := ifmodel.InterfaceKey(nic)
	nicVal := &ifmodel.Interface{Name: nic, Type: ifmodel.Interface_DPDK, Enabled: true, SetDhcpClient: true}
	e.mustCommit(map[string]proto.Message{
		nicKey:                           nicVal,
		ifmodel.InterfaceKey("tap-vpp2"): podTap("tap-vpp2", nic),
	})
	if st := e.state(ifmodel.UnnumberedKey("tap-vpp2")); st != kvapi.StatePending {
		t.Fatalf("unnumbered before the lease: %v", st)
	}
	watched := make(chan *ifmodel.DHCPLease, 4)
	e.p.WatchDHCPLeases(func(l *ifmodel.DHCPLease) { watched <- l })
	sw := e.simIface(nic).SwIfIndex
	err := e.sim.PushDHCPLease(sw, vppsim.DHCPLease{Address: netip.MustParsePrefix("192.168.16.5/24"),
		Router: netip.MustParseAddr("192.168.16.1"), Hostname: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	leaseKey := ifmodel.DHCPLeaseKey(nic)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "lease obtained", func() bool { return e.state(leaseKey) == kvapi.StateObtained })
	lease, ok := e.p.GetDHCPLease(nic)
	want := &ifmodel.DHCPLease{InterfaceName: nic, HostName: "node1", HostIpAddress: "192.168.16.5/24",
		RouterIpAddress: "192.168.16.1/24", HostPhysAddress: e.simIface(nic).MAC.String()}
	if !ok || !proto.Equal(lease, want) {
		t.Fatalf("GetDHCPLease = %v %v, want %v", lease, ok, want)
	}
	select {
	case l := <-watched:
		if !proto.Equal(l, want) {
			t.Errorf("watcher got %v, want %v", l, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watcher not told about the lease")
	}
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "unnumbered to the leased address", func() bool {
		return e.state(ifmodel.UnnumberedKey("tap-vpp2")) == kvapi.StateConfigured
	})
	// The leased address is not reported as a static one.
	d := e.descriptor("vpp-interface")
	got := retrieved(t, d, []kvapi.KVWithMetadata{{Key: nicKey, Value: nicVal}}, nicKey)
	if !proto.Equal(got.Value, nicVal) {
		t.Errorf("Retrieve of the DHCP NIC = %v", got.Value)
	}
	leases, err := e.descriptor(DHCPLeaseDescriptorName).Retrieve(nil)
	if err != nil || len(leases) != 1 || !proto.Equal(leases[0].Value, want) || leases[0].Origin != kvapi.FromSB {
		t.Fatalf("lease Retrieve = %v, %v", leases, err)
	}
	// Turning the client off drops the lease and what depended on it.
	e.mustCommit(map[string]proto.Message{nicKey: &ifmodel.Interface{Name: nic, Type: ifmodel.Interface_DPDK, Enabled: true}})
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "lease removed", func() bool { return e.state(leaseKey) == kvapi.StateNonexistent })
	if _, ok := e.p.GetDHCPLease(nic); ok {
		t.Error("lease still readable")
	}
	select {
	case l := <-watched:
		if l.GetInterfaceName() != nic || l.GetHostIpAddress() != "" {
			t.Errorf("watcher got %v, want a lost lease of %s", l, nic)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watcher not told about the lost lease")
	}
	if st := e.state(ifmodel.UnnumberedKey("tap-vpp2")); st != kvapi.StatePending {
		t.Errorf("unnumbered after the lease went: %v", st)
	}
}

func TestFullResyncAfterVPPRestartRecreatesInterfaces(t *testing.T) {
	e := newEnv(t)
	desired := map[string]proto.Message{
		ifmodel.InterfaceKey("loop1"):     loop("loop1", 0, "10.10.0.1/24"),
		ifmodel.InterfaceKey("vpp-tap-1"): podTap("vpp-tap-1", "loop1"),
	}
	e.mustCommit(desired)
	e.sim.Restart()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "reconnect", func() bool { return e.mux.VPPInfo().Reconnects == 1 && e.mux.IsConnected() })
	if _, ok := e.sim.InterfaceByTag("loop1"); ok {
		t.Fatal("restarted VPP still has the loopback")
	}
	if err := e.resync(desired); err != nil {
		t.Fatalf("full resync: %v", err)
	}
	l := e.simIface("loop1")
	if got := e.simIface("vpp-tap-1").Unnumbered; got != l.SwIfIndex || len(l.Addresses) != 1 {
		t.Fatalf("after resync: loop1 %+v, tap unnumbered to %d", l, got)
	}
	md, _ := e.p.GetInterfaceIndex().LookupByName("loop1")
	if md.SwIfIndex != l.SwIfIndex {
		t.Errorf("index has sw_if_index %d, VPP %d", md.SwIfIndex, l.SwIfIndex)
	}
	// A second resync finds nothing to do.
	e.sim.ResetMessageCounts()
	if err := e.resync(desired); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"create_loopback", "tap_create_v3", "sw_interface_add_del_address", "sw_interface_set_unnumbered"} {
		if n := e.sim.MessageCount(m); n != 0 {
			t.Errorf("idle resync sent %d %s", n, m)
		}
	}
}

func TestDumpDPDKInterfacesListsTheNICs(t *testing.T) {
	e := newEnv(t)
	// A loopback and a TAP are not NICs.
	e.mustCommit(map[string]proto.Message{ifmodel.InterfaceKey("loop1"): loop("loop1", 0, "10.10.0.1/24")})
	got, err := e.p.DumpDPDKInterfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != nic {
		t.Errorf("NICs = %v, want [%s]", got, nic)
	}
}

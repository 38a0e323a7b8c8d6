package ifplugin

import (
	"errors"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/vppcalls"
)

// retrieved returns the value Retrieve reports under key, failing if absent.
func retrieved(t *testing.T, d *kvapi.KVDescriptor, corr []kvapi.KVWithMetadata, key string) kvapi.KVWithMetadata {
	t.Helper()
	list, err := d.Retrieve(corr)
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	for _, kv := range list {
		if kv.Key == key {
			return kv
		}
	}
	t.Fatalf("Retrieve did not report %s", key)
	return kvapi.KVWithMetadata{}
}

func TestEachInterfaceTypeIsCreatedRetrievedAfterRestartAndDeleted(t *testing.T) {
	tests := []struct {
		name  string
		iface *ifmodel.Interface
		check func(t *testing.T, i vppsim.Interface)
	}{
		{"loopback", &ifmodel.Interface{Name: "loop-a", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			PhysAddress: "DE:AD:00:00:00:AA", Mtu: 1500},
			func(t *testing.T, i vppsim.Interface) {
				if i.DevType != "Loopback" || i.MAC.String() != "de:ad:00:00:00:aa" || i.MTU[0] != 1500 || !i.AdminUp {
					t.Errorf("loopback in VPP: %+v", i)
				}
			}},
		{"tap", &ifmodel.Interface{Name: "tap-vpp2", Type: ifmodel.Interface_TAP, Enabled: true, PhysAddress: "34:3c:00:00:00:01",
			Mtu: 1450, RxMode: ifmodel.Interface_INTERRUPT,
			Link: &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{Version: 2, HostIfName: "vpp1", HostNamespace: "/var/run/netns/x", RxRingSize: 1024, TxRingSize: 512}}},
			func(t *testing.T, i vppsim.Interface) {
				if i.Tap == nil || i.Tap.HostIfName != "vpp1" || i.Tap.HostNamespace != "/var/run/netns/x" || i.MAC.String() != "34:3c:00:00:00:01" {
					t.Errorf("TAP in VPP: %+v %+v", i, i.Tap)
				}
			}},
		{"tap with defaults", &ifmodel.Interface{Name: "tap-default", Type: ifmodel.Interface_TAP},
			func(t *testing.T, i vppsim.Interface) {
				if i.Tap == nil || i.AdminUp {
					t.Errorf("TAP in VPP: %+v", i)
				}
			}},
		{"af_packet", &ifmodel.Interface{Name: "afpacket-vpp2", Type: ifmodel.Interface_AF_PACKET, Enabled: true,
			Link: &ifmodel.Interface_Afpacket{Afpacket: &ifmodel.AfpacketLink{HostIfName: "vpp2"}}},
			func(t *testing.T, i vppsim.Interface) {
				if i.AfPacketHost != "vpp2" || i.Name != "host-vpp2" {
					t.Errorf("af_packet in VPP: %+v", i)
				}
				// No MAC in the model: VPP must be asked for a random one. A zero
				// hw_addr without use_random_hw_addr is taken literally by VPP 25.10
				// (af_packet_create_if copies it), leaving the interface 00:00:00:00:00:00.
				if len(i.MAC) != 6 || i.MAC.String() == "00:00:00:00:00:00" {
					t.Errorf("af_packet without a MAC in the model got MAC %q in VPP", i.MAC)
				}
			}},
		{"vxlan", &ifmodel.Interface{Name: "vxlan2", Type: ifmodel.Interface_VXLAN_TUNNEL, Enabled: true,
			Link: &ifmodel.Interface_Vxlan{Vxlan: &ifmodel.VxlanLink{SrcAddress: "192.168.16.1", DstAddress: "192.168.16.2", Vni: 10}}},
			func(t *testing.T, i vppsim.Interface) {
				if i.Vxlan == nil || i.Vxlan.VNI != 10 || i.Vxlan.Dst.String() != "192.168.16.2" {
					t.Errorf("VXLAN in VPP: %+v", i)
				}
			}},
		{"dpdk nic", &ifmodel.Interface{Name: nic, Type: ifmodel.Interface_DPDK, Enabled: true, Mtu: 9000,
			PhysAddress: "08:00:27:aa:bb:cc", RxMode: ifmodel.Interface_POLLING},
			func(t *testing.T, i vppsim.Interface) {
				if i.Name != nic || i.MAC.String() != "08:00:27:aa:bb:cc" || !i.AdminUp {
					t.Errorf("NIC in VPP: %+v", i)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			d := e.descriptor(ifaceidx.DescriptorName)
			key := ifmodel.InterfaceKey(tc.iface.Name)
			if err := d.Validate(key, tc.iface); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			md, err := d.Create(key, tc.iface)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			meta := md.(*ifaceidx.Metadata)
			vppIf := e.simIface(tc.iface.Name)
			if vppIf.SwIfIndex != meta.SwIfIndex {
				t.Fatalf("metadata sw_if_index %d, VPP %d", meta.SwIfIndex, vppIf.SwIfIndex)
			}
			tc.check(t, vppIf)
			corr := []kvapi.KVWithMetadata{{Key: key, Value: tc.iface, Metadata: md, Origin: kvapi.FromNB}}
			got := retrieved(t, d, corr, key)
			if !proto.Equal(got.Value, tc.iface) || got.Origin != kvapi.FromNB {
				t.Fatalf("Retrieve = %v (%v), want %v", got.Value, got.Origin, tc.iface)
			}
			// The agent restarts: a new plugin instance adopts what VPP holds.
			_, p2 := e.newAgent()
			d2 := p2.Descriptors()[0]
			got2 := retrieved(t, d2, []kvapi.KVWithMetadata{{Key: key, Value: tc.iface, Origin: kvapi.FromNB}}, key)
			if !proto.Equal(got2.Value, tc.iface) || got2.Metadata.(*ifaceidx.Metadata).SwIfIndex != meta.SwIfIndex {
				t.Fatalf("Retrieve after restart = %v %+v", got2.Value, got2.Metadata)
			}
			if tc.iface.Type == ifmodel.Interface_TAP && got2.Metadata.(*ifaceidx.Metadata).TAPHostIfName == "" {
				t.Error("TAP host name missing from retrieved metadata")
			}
			if err := d2.Delete(key, tc.iface, got2.Metadata); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if _, ok := e.sim.InterfaceByTag(tc.iface.Name); ok {
				t.Error("interface still tagged in VPP after Delete")
			}
			if tc.iface.Type == ifmodel.Interface_DPDK {
				if i, ok := e.sim.InterfaceByName(nic); !ok || i.AdminUp {
					t.Errorf("NIC after Delete: %+v, present %v (want it kept, down)", i, ok)
				}
			} else if _, ok := e.sim.InterfaceByName(vppIf.Name); ok {
				t.Errorf("%s still in VPP after Delete", vppIf.Name)
			}
		})
	}
}

func TestRetrieveReportsUntaggedInterfacesAsFromSB(t *testing.T) {
	e := newEnv(t)
	d := e.descriptor(ifaceidx.DescriptorName)
	list, err := d.Retrieve(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kvapi.KVWithMetadata{}
	for _, kv := range list {
		got[kv.Key] = kv
	}
	for _, name := range []string{"local0", nic} {
		kv, ok := got[ifmodel.InterfaceKey(name)]
		if !ok || kv.Origin != kvapi.FromSB {
			t.Errorf("%s: %+v present=%v, want FromSB", name, kv, ok)
		}
	}
	if v := got[ifmodel.InterfaceKey(nic)].Value.(*ifmodel.Interface); v.Type != ifmodel.Interface_DPDK || v.PhysAddress == "" {
		t.Errorf("NIC value %v", v)
	}
	// An unconfigured NIC that NB wants is left out, so the scheduler configures it.
	want := &ifmodel.Interface{Name: nic, Type: ifmodel.Interface_DPDK, Enabled: true}
	list, _ = d.Retrieve([]kvapi.KVWithMetadata{{Key: ifmodel.InterfaceKey(nic), Value: want}})
	for _, kv := range list {
		if kv.Key == ifmodel.InterfaceKey(nic) {
			t.Errorf("untagged NIC wanted by NB reported: %+v", kv)
		}
	}
}

func TestUpdateChangesSettingsInPlace(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(map[string]proto.Message{"config/vpp/v2/vrf-table/id/5/protocol/IPV4": vrf(5)})
	d := e.descriptor(ifaceidx.DescriptorName)
	old := &ifmodel.Interface{Name: "loop1", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Mtu: 1500}
	key := ifmodel.InterfaceKey("loop1")
	md, err := d.Create(key, old)
	if err != nil {
		t.Fatal(err)
	}
	upd := &ifmodel.Interface{Name: "loop1", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Enabled: true, Mtu: 1400,
		PhysAddress: "02:00:00:00:00:05", Vrf: 5}
	if d.UpdateWithRecreate(key, old, upd, md) {
		t.Fatal("in-place change classified as re-create")
	}
	e.sim.ResetMessageCounts()
	md2, err := d.Update(key, old, upd, md)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	i := e.simIface("loop1")
	if i.SwIfIndex != md.(*ifaceidx.Metadata).SwIfIndex || !i.AdminUp || i.MTU[0] != 1400 || i.VRF != 5 || i.MAC.String() != "02:00:00:00:00:05" {
		t.Fatalf("after Update VPP has %+v", i)
	}
	if md2.(*ifaceidx.Metadata).Vrf != 5 {
		t.Errorf("metadata not updated: %+v", md2)
	}
	if n := e.sim.MessageCount("create_loopback") + e.sim.MessageCount("delete_loopback"); n != 0 {
		t.Errorf("Update re-created the loopback (%d messages)", n)
	}
}

func TestRecreateDecisions(t *testing.T) {
	base := func() *ifmodel.Interface {
		return &ifmodel.Interface{Name: "i", Type: ifmodel.Interface_TAP, IpAddresses: []string{"10.0.0.1/24"},
			Link: &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{HostIfName: "h"}}}
	}
	tests := []struct {
		name   string
		modify func(*ifmodel.Interface)
		want   bool
	}{
		{"admin state", func(i *ifmodel.Interface) { i.Enabled = true }, false},
		{"addresses", func(i *ifmodel.Interface) { i.IpAddresses = []string{"10.0.1.1/24"} }, false},
		{"tap version 0 vs 2", func(i *ifmodel.Interface) { i.GetTap().Version = 2 }, false},
		{"type", func(i *ifmodel.Interface) { i.Type = ifmodel.Interface_SOFTWARE_LOOPBACK; i.Link = nil }, true},
		{"host name", func(i *ifmodel.Interface) { i.GetTap().HostIfName = "h2" }, true},
		{"vrf keeping an address", func(i *ifmodel.Interface) { i.Vrf = 3 }, true},
		{"vrf with new addresses", func(i *ifmodel.Interface) { i.Vrf = 3; i.IpAddresses = []string{"10.9.0.1/24"} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.modify(n)
			if got := needsRecreate(base(), n); got != tc.want {
				t.Errorf("needsRecreate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateNamesInvalidFields(t *testing.T) {
	tests := []struct {
		name  string
		iface *ifmodel.Interface
		field string
	}{
		{"no type", &ifmodel.Interface{Name: "x"}, "type"},
		{"bad mac", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, PhysAddress: "zz"}, "phys_address"},
		{"bad ip", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, IpAddresses: []string{"10.0.0.1"}}, "ip_addresses"},
		{"unnumbered with ip", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, IpAddresses: []string{"10.0.0.1/24"},
			Unnumbered: &ifmodel.Interface_Unnumbered{InterfaceWithIp: "y"}}, "unnumbered"},
		{"afpacket without host", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_AF_PACKET,
			Link: &ifmodel.Interface_Afpacket{Afpacket: &ifmodel.AfpacketLink{}}}, "afpacket.host_if_name"},
		{"vxlan same endpoints", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_VXLAN_TUNNEL,
			Link: &ifmodel.Interface_Vxlan{Vxlan: &ifmodel.VxlanLink{SrcAddress: "1.1.1.1", DstAddress: "1.1.1.1"}}}, "vxlan.dst_address"},
		{"tap ring", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_TAP,
			Link: &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{RxRingSize: 1000}}}, "tap.rx_ring_size"},
		{"loopback rx mode", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, RxMode: ifmodel.Interface_POLLING}, "rx_mode"},
		{"mtu", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Mtu: 100000}, "mtu"},
		{"link of wrong type", &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_SOFTWARE_LOOPBACK,
			Link: &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{}}}, "link"},
	}
	p := &Plugin{}
	d := p.interfaceDescriptor()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Validate(ifmodel.InterfaceKey(tc.iface.Name), tc.iface)
			var ive *kvapi.InvalidValueError
			if !errors.As(err, &ive) {
				t.Fatalf("Validate = %v, want an InvalidValueError", err)
			}
			found := false
			for _, f := range ive.InvalidFields {
				found = found || f == tc.field
			}
			if !found {
				t.Errorf("fields %v lack %s (%v)", ive.InvalidFields, tc.field, err)
			}
		})
	}
	if err := d.Validate(ifmodel.InterfaceKey("other"), &ifmodel.Interface{Name: "x", Type: ifmodel.Interface_DPDK}); err == nil {
		t.Error("name not matching the key accepted")
	}
}

func TestVPPErrorsFailCreateCleanlyAndAreClassified(t *testing.T) {
	tests := []struct {
		name      string
		fail      string
		retval    govppapi.VPPApiError
		iface     *ifmodel.Interface
		retriable bool
	}{
		{"create refused by a syscall", "tap_create_v3", govppapi.SYSCALL_ERROR_3,
			&ifmodel.Interface{Name: "t", Type: ifmodel.Interface_TAP}, true},
		{"host interface missing", "af_packet_create_v3", govppapi.INVALID_INTERFACE,
			&ifmodel.Interface{Name: "a", Type: ifmodel.Interface_AF_PACKET, Link: &ifmodel.Interface_Afpacket{Afpacket: &ifmodel.AfpacketLink{HostIfName: "h"}}}, true},
		{"setting rejected as invalid", "sw_interface_set_mtu", govppapi.INVALID_VALUE,
			&ifmodel.Interface{Name: "l", Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Mtu: 1500, Enabled: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			d := e.descriptor(ifaceidx.DescriptorName)
			before := len(e.sim.Interfaces())
			if err := e.sim.FailMessage(tc.fail, int32(tc.retval), 1); err != nil {
				t.Fatal(err)
			}
			_, err := d.Create(ifmodel.InterfaceKey(tc.iface.Name), tc.iface)
			if !errors.Is(err, tc.retval) {
				t.Fatalf("Create = %v, want %v", err, tc.retval)
			}
			if !strings.Contains(err.Error(), tc.iface.Name) || !strings.Contains(err.Error(), tc.fail) {
				t.Errorf("error %q names neither interface nor message", err)
			}
			if got := d.IsRetriableFailure(err); got != tc.retriable {
				t.Errorf("IsRetriableFailure = %v, want %v", got, tc.retriable)
			}
			if after := len(e.sim.Interfaces()); after != before {
				t.Errorf("a failed Create left %d interface(s) in VPP", after-before)
			}
		})
	}
	t.Run("missing NIC", func(t *testing.T) {
		e := newEnv(t)
		d := e.descriptor(ifaceidx.DescriptorName)
		_, err := d.Create(ifmodel.InterfaceKey("GigabitEthernet9/9/9"), &ifmodel.Interface{Name: "GigabitEthernet9/9/9", Type: ifmodel.Interface_DPDK})
		if !errors.Is(err, vppcalls.ErrInterfaceNotFound) || d.IsRetriableFailure(err) {
			t.Fatalf("Create of a missing NIC = %v (retriable %v)", err, d.IsRetriableFailure(err))
		}
	})
}

// prefixes returns the addresses VPP holds on the interface tagged tag.
func (e *env) prefixes(tag string) []string {
	var out []string
	for _, p := range e.simIface(tag).Addresses {
		out = append(out, p.String())
	}
	return out
}

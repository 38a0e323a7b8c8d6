//go:build natpermapping

package natplugin

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// TestMappingKeysKeepTheLabelWithItsSlashes: the label of a derived key is read back
// whole, whatever slashes the label and an interface name hold, and the keys of the
// entries of one DNat44 are distinct.
func TestMappingKeysKeepTheLabelWithItsSlashes(t *testing.T) {
	const label = "ns/a/b"
	v := &nat.DNat44{Label: label,
		StMappings: []*nat.DNat44_StaticMapping{
			{ExternalIp: "10.96.0.1", ExternalPort: 80, LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8080, 0, 0)}},
			{ExternalInterface: "GigabitEthernet0/8/0", ExternalPort: 80, LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8080, 0, 0)}},
			{ExternalIp: "10.96.0.1", ExternalPort: 80, Protocol: nat.DNat44_UDP, LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8080, 0, 0)}},
		},
		IdMappings: []*nat.DNat44_IdentityMapping{
			{IpAddress: "10.96.0.1", Port: 80},
			{IpAddress: "10.96.0.1", Port: 80, VrfId: 3},
			{Interface: "tap/%x", Port: 22},
		},
	}
	seen := map[string]bool{}
	for _, kv := range dnatMappings(v) {
		if seen[kv.Key] {
			t.Errorf("key %s derived twice", kv.Key)
		}
		seen[kv.Key] = true
		if got, ok := mappingKeyLabel(kv.Key); !ok || got != label {
			t.Errorf("mappingKeyLabel(%s) = %q, %v; want %q", kv.Key, got, ok, label)
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d keys, want 6", len(seen))
	}
	for _, bad := range []string{"vpp/nat44/dnat44-mapping/static/10.0.0.1/80/TCP/", "vpp/nat44/dnat44-mapping/identity/10.0.0.1/80/TCP/x", "config/vpp/nat/v2/dnat44/x"} {
		if l, ok := mappingKeyLabel(bad); ok {
			t.Errorf("mappingKeyLabel(%s) = %q, want no label", bad, l)
		}
	}
}

// TestPerMappingDNat44ProgramsIdentityAndInterfaceMappings: through the scheduler, a
// DNat44 of an interface's static mapping and identity mappings programs one VPP
// mapping per entry once the interface exists, and deleting it removes them all.
func TestPerMappingDNat44ProgramsIdentityAndInterfaceMappings(t *testing.T) {
	e := newEnv(t)
	a := newAgent(t, e.conn)
	const nic = "host/eth0"
	v := &nat.DNat44{Label: "ns/id",
		StMappings: []*nat.DNat44_StaticMapping{{ExternalInterface: nic, ExternalPort: 8080,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 80, 0, 0)}}},
		IdMappings: []*nat.DNat44_IdentityMapping{{IpAddress: "10.96.0.9", Port: 53, Protocol: nat.DNat44_UDP}, {Interface: nic}},
	}
	want := map[string]proto.Message{
		nat.GlobalNAT44Key:        &nat.Nat44Global{Forwarding: true},
		nat.DNAT44Key(v.Label):    v,
		ifmodel.InterfaceKey(nic): &ifmodel.Interface{Name: nic, IpAddresses: []string{"192.168.16.1/24"}},
	}
	if err := a.commit(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	for _, kv := range dnatMappings(v) {
		if st := a.s.GetValueStatus(kv.Key); st.State != kvapi.StateConfigured {
			t.Errorf("%s is %v, want CONFIGURED", kv.Key, st.State)
		}
	}
	expectSameNATAsFreshCreate(t, e.sim, want)
	want[nat.DNAT44Key(v.Label)] = nil // deleted
	if err := a.commit(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	if n := len(e.sim.NAT().StaticMappings) + len(e.sim.NAT().IdentityMappings); n != 0 {
		t.Errorf("%d mappings left in VPP after the delete", n)
	}
}

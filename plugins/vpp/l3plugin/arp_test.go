package l3plugin

import (
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func arpKey(a *l3.ARPEntry) string { return l3.ARPEntryKey(a.Interface, a.IpAddress) }

func TestARPCreateUpdateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	lo := e.loopback("lo1", "10.10.0.1/24")
	d := NewARPDescriptor(e.deps())
	v4 := &l3.ARPEntry{Interface: "lo1", IpAddress: "10.10.0.2", PhysAddress: "AA:BB:CC:00:00:02", Static: true}
	v6 := &l3.ARPEntry{Interface: "lo1", IpAddress: "fd00::2", PhysAddress: "aa:bb:cc:00:00:06", Static: true}
	values := map[string]proto.Message{arpKey(v4): v4, arpKey(v6): v6}
	create(t, d, values)
	ns := e.sim.Neighbors()
	if len(ns) != 2 || ns[0].SwIfIndex != lo || ns[0].MAC.String() != "aa:bb:cc:00:00:02" || !ns[0].Static || ns[1].IP.String() != "fd00::2" {
		t.Fatalf("VPP neighbors %+v", ns)
	}

	// a learned (dynamic) neighbor in VPP is not configuration
	learned := ip_neighbor.IPNeighbor{SwIfIndex: interface_types.InterfaceIndex(lo), IPAddress: vppbase.AddrToAPI(mustAddr("10.10.0.9")),
		MacAddress: ethernet_types.MacAddress{2, 0, 0, 0, 0, 9}}
	if err := vppbase.Call(e.ch, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: learned}, &ip_neighbor.IPNeighborAddDelReply{}); err != nil {
		t.Fatal(err)
	}
	expectRetrieved(t, NewARPDescriptor(e.freshDeps()), values)

	// update the MAC in place
	v4b := proto.Clone(v4).(*l3.ARPEntry)
	v4b.PhysAddress = "aa:bb:cc:00:00:22"
	if d.ValueComparator(arpKey(v4), v4, v4b) {
		t.Fatal("MAC change compared as equal")
	}
	if _, err := d.Update(arpKey(v4), v4, v4b, nil); err != nil {
		t.Fatal(err)
	}
	values[arpKey(v4)] = v4b
	expectRetrieved(t, NewARPDescriptor(e.freshDeps()), values)

	for _, k := range sortedKeys(values) {
		if err := d.Delete(k, values[k], nil); err != nil {
			t.Fatal(err)
		}
	}
	if ns := e.sim.Neighbors(); len(ns) != 1 || ns[0].Static {
		t.Errorf("neighbors after delete: %+v", ns)
	}
}

func TestARPValidateDependenciesErrors(t *testing.T) {
	tests := []struct {
		name  string
		a     *l3.ARPEntry
		field string
	}{
		{"ok", &l3.ARPEntry{Interface: "x", IpAddress: "1.1.1.1", PhysAddress: "02:00:00:00:00:01"}, ""},
		{"no interface", &l3.ARPEntry{IpAddress: "1.1.1.1", PhysAddress: "02:00:00:00:00:01"}, "interface"},
		{"bad IP", &l3.ARPEntry{Interface: "x", IpAddress: "1.1.1", PhysAddress: "02:00:00:00:00:01"}, "ip_address"},
		{"bad MAC", &l3.ARPEntry{Interface: "x", IpAddress: "1.1.1.1", PhysAddress: "02:00"}, "phys_address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := ""
			if tt.field == "" {
				key = arpKey(tt.a)
			}
			checkInvalid(t, ValidateARP(key, tt.a), tt.field)
		})
	}
	deps := ARPDependencies(&l3.ARPEntry{Interface: "tap1"})
	if len(deps) != 1 || deps[0].Key != ifmodel.InterfaceKey("tap1") {
		t.Errorf("dependencies %v", deps)
	}

	e := newEnv(t)
	e.loopback("lo1")
	d := NewARPDescriptor(e.deps())
	a := &l3.ARPEntry{Interface: "lo1", IpAddress: "1.1.1.1", PhysAddress: "02:00:00:00:00:01", Static: true}
	if err := e.sim.FailMessage("ip_neighbor_add_del", int32(govppapi.INVALID_VALUE), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(arpKey(a), a); !vppbase.IsRetval(err, govppapi.INVALID_VALUE) {
		t.Errorf("create error %v, want INVALID_VALUE", err)
	}
	// deleting what VPP does not have is VPP's error
	if err := d.Delete(arpKey(a), a, nil); !vppbase.IsRetval(err, govppapi.NO_SUCH_ENTRY) {
		t.Errorf("delete error %v, want NO_SUCH_ENTRY", err)
	}
}

func TestStaticARPLeftOnAnAgentInterfaceIsTheAgents(t *testing.T) {
	e := newEnv(t)
	e.loopback("lo1", "10.10.0.1/24")
	d := NewARPDescriptor(e.deps())
	stale := &l3.ARPEntry{Interface: "lo1", IpAddress: "10.10.0.7", PhysAddress: "aa:bb:cc:00:00:07", Static: true}
	create(t, d, map[string]proto.Message{arpKey(stale): stale})
	// A restarted agent that no longer wants the entry sees it as its own, so a full
	// resync removes it instead of leaving it behind.
	got, err := NewARPDescriptor(e.freshDeps()).Retrieve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != arpKey(stale) || got[0].Origin != kvapi.FromNB {
		t.Fatalf("Retrieve = %+v, want the stale entry with origin NB", got)
	}
}

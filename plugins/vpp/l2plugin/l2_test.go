package l2plugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l2model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

const vxlanMAC = "12:2B:00:00:00:02"

// topology is a small node configuration: a loopback with an IP in VRF 0, a host TAP
// with an IP, a pod TAP unnumbered to the pod gateway loopback, the VXLAN bridge
// domain with its BVI loopback and a tunnel, and a static FIB entry to the tunnel.
func topology() map[string]proto.Message {
	loop := func(name, ip, mac string) *ifmodel.Interface {
		return &ifmodel.Interface{Name: name, Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			IpAddresses: []string{ip}, PhysAddress: mac}
	}
	bd := &l2model.BridgeDomain{Name: "vxlanBD", Forward: true, Interfaces: []*l2model.BridgeDomain_Interface{
		{Name: "vxlanBVI", BridgedVirtualInterface: true},
		{Name: "vxlan2", SplitHorizonGroup: 1},
	}}
	return map[string]proto.Message{
		ifmodel.InterfaceKey("loopbackNIC"): loop("loopbackNIC", "192.168.16.1/24", ""),
		ifmodel.InterfaceKey("tap-vpp2"): &ifmodel.Interface{Name: "tap-vpp2", Type: ifmodel.Interface_TAP, Enabled: true,
			IpAddresses: []string{"172.30.1.1/24"}, Mtu: 1450, PhysAddress: "34:3c:00:00:00:01",
			Link: &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{Version: 2, HostIfName: "vpp1"}}},
		ifmodel.InterfaceKey("podGwLoop"): loop("podGwLoop", "10.1.1.1/24", ""),
		ifmodel.InterfaceKey("vpp-tap-pod1"): &ifmodel.Interface{Name: "vpp-tap-pod1", Type: ifmodel.Interface_TAP, Enabled: true,
			Unnumbered: &ifmodel.Interface_Unnumbered{InterfaceWithIp: "podGwLoop"},
			Link:       &ifmodel.Interface_Tap{Tap: &ifmodel.TapLink{Version: 2, HostIfName: "eth0", HostNamespace: "/proc/42/ns/net"}}},
		ifmodel.InterfaceKey("vxlanBVI"): loop("vxlanBVI", "192.168.30.1/24", "12:2b:00:00:00:01"),
		ifmodel.InterfaceKey("vxlan2"): &ifmodel.Interface{Name: "vxlan2", Type: ifmodel.Interface_VXLAN_TUNNEL, Enabled: true,
			Link: &ifmodel.Interface_Vxlan{Vxlan: &ifmodel.VxlanLink{SrcAddress: "192.168.16.1", DstAddress: "192.168.16.2", Vni: 10}}},
		l2model.BridgeDomainKey("vxlanBD"): bd,
		l2model.FIBKey("vxlanBD", vxlanMAC): &l2model.FIBEntry{BridgeDomain: "vxlanBD", PhysAddress: vxlanMAC,
			OutgoingInterface: "vxlan2", StaticConfig: true},
	}
}

func deletions(values map[string]proto.Message) map[string]proto.Message {
	out := make(map[string]proto.Message, len(values))
	for k := range values {
		out[k] = nil
	}
	return out
}

func TestTopologyInOneTransactionThenDeleted(t *testing.T) {
	e := newEnv(t)
	desired := topology()
	initial := e.snapshot(desired)
	e.mustCommit(desired)
	for key := range desired {
		if st := e.state(key); st != kvapi.StateConfigured {
			t.Errorf("%s: %v %s", key, st, e.kvs.GetValueStatus(key).Error)
		}
	}
	bvi, tunnel := e.simIface("vxlanBVI"), e.simIface("vxlan2")
	bds := e.sim.BridgeDomains()
	if len(bds) != 1 || bds[0].Tag != "vxlanBD" || bds[0].BVI != bvi.SwIfIndex || !slices.Contains(bds[0].Members, tunnel.SwIfIndex) {
		t.Fatalf("bridge domains %+v", bds)
	}
	if tunnel.SHG != 1 || !bvi.BVI {
		t.Errorf("members: BVI %+v, tunnel %+v", bvi, tunnel)
	}
	md, ok := e.l2p.GetBDIndex().LookupByName("vxlanBD")
	if !ok || md.ID != bds[0].ID {
		t.Errorf("BD index %+v %v, VPP ID %d", md, ok, bds[0].ID)
	}
	found := false
	for _, f := range e.sim.L2FIB() {
		if f.MAC.String() == strings.ToLower(vxlanMAC) && f.SwIfIndex == tunnel.SwIfIndex && f.Static {
			found = true
		}
	}
	if !found {
		t.Errorf("static FIB entry missing: %+v", e.sim.L2FIB())
	}
	if got := e.simIface("vpp-tap-pod1").Unnumbered; got != e.simIface("podGwLoop").SwIfIndex {
		t.Errorf("pod TAP unnumbered to %d", got)
	}

	e.mustCommit(deletions(desired))
	if got := e.snapshot(desired); !slices.Equal(got, initial) {
		t.Fatalf("after deleting everything VPP holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(initial, "\n"))
	}
}

func TestFullResyncAfterVPPRestartRestoresExactlyTheDesiredState(t *testing.T) {
	e := newEnv(t)
	desired := topology()
	e.mustCommit(desired)
	want := e.snapshot(desired)
	e.sim.Restart()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "govppmux reconnected", func() bool { return e.mux.VPPInfo().Reconnects == 1 && e.mux.IsConnected() })
	if len(e.sim.BridgeDomains()) != 0 {
		t.Fatal("restarted VPP kept its bridge domains")
	}
	if err := e.fullResync(e.agent, desired); err != nil {
		t.Fatalf("full resync: %v", err)
	}
	if got := e.snapshot(desired); !slices.Equal(got, want) {
		t.Fatalf("after resync VPP holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for key := range desired {
		if st := e.state(key); st != kvapi.StateConfigured {
			t.Errorf("%s: %v", key, st)
		}
	}
}

func TestRestartedAgentAdoptsWhatVPPHolds(t *testing.T) {
	e := newEnv(t)
	desired := topology()
	e.mustCommit(desired)
	want := e.snapshot(desired)
	// A new agent (new scheduler and plugins) resyncs the same desired state.
	a := e.newAgent()
	e.sim.ResetMessageCounts()
	if err := e.fullResync(a, desired); err != nil {
		t.Fatalf("full resync of the new agent: %v", err)
	}
	for name, n := range e.sim.MessageCounts() {
		if !strings.HasSuffix(name, "_dump") && name != "sw_interface_get_table" && name != "control_ping" {
			t.Errorf("adopting resync sent %d %s", n, name)
		}
	}
	if got := e.snapshot(desired); !slices.Equal(got, want) {
		t.Fatalf("VPP changed:\n%s", strings.Join(got, "\n"))
	}
	for _, d := range []string{BDDescriptorName, FIBDescriptorName, "vpp-interface"} {
		sb, err := a.kvs.DumpValuesByDescriptor(d, kvapi.SBView)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range sb {
			if w, ok := desired[kv.Key]; ok && !proto.Equal(kv.Value, w) {
				t.Errorf("%s: retrieved %v, want %v", kv.Key, kv.Value, w)
			}
		}
	}
	for key := range desired {
		if st := a.kvs.GetValueStatus(key).State; st != kvapi.StateConfigured {
			t.Errorf("%s after adoption: %v", key, st)
		}
	}
}

func TestBridgeDomainChanges(t *testing.T) {
	e := newEnv(t)
	desired := topology()
	e.mustCommit(desired)
	id := e.sim.BridgeDomains()[0].ID
	bdKey := l2model.BridgeDomainKey("vxlanBD")

	// Members change in place: the tunnel leaves, the bridge domain stays.
	bd := proto.Clone(desired[bdKey]).(*l2model.BridgeDomain)
	bd.Interfaces = bd.Interfaces[:1]
	e.mustCommit(map[string]proto.Message{bdKey: bd})
	bds := e.sim.BridgeDomains()
	if len(bds) != 1 || bds[0].ID != id || len(bds[0].Members) != 1 {
		t.Fatalf("after removing a member: %+v", bds)
	}
	fibKey := l2model.FIBKey("vxlanBD", vxlanMAC)
	if st := e.state(fibKey); st != kvapi.StatePending {
		t.Errorf("FIB entry to a removed member: %v", st)
	}
	if len(e.sim.L2FIB()) != 1 { // only VPP's own BVI entry
		t.Errorf("L2 FIB %+v", e.sim.L2FIB())
	}
	// Settings VPP cannot change in place re-create the bridge domain with its members.
	bd2 := proto.Clone(desired[bdKey]).(*l2model.BridgeDomain)
	bd2.Learn, bd2.MacAge = true, 10
	e.mustCommit(map[string]proto.Message{bdKey: bd2})
	bds = e.sim.BridgeDomains()
	if len(bds) != 1 || !bds[0].Learn || bds[0].MacAge != 10 || len(bds[0].Members) != 2 {
		t.Fatalf("after the settings change: %+v", bds)
	}
	if st := e.state(fibKey); st != kvapi.StateConfigured {
		t.Errorf("FIB entry after the re-create: %v", st)
	}
	// A member's split-horizon group changes in place.
	bd3 := proto.Clone(bd2).(*l2model.BridgeDomain)
	bd3.Interfaces[1].SplitHorizonGroup = 2
	e.mustCommit(map[string]proto.Message{bdKey: bd3})
	if shg := e.simIface("vxlan2").SHG; shg != 2 {
		t.Errorf("split-horizon group %d", shg)
	}
}

func TestFIBEntryWaitsForBridgeDomainAndMembership(t *testing.T) {
	e := newEnv(t)
	fibKey := l2model.FIBKey("bd1", "02:00:00:00:00:09")
	e.mustCommit(map[string]proto.Message{
		fibKey:                        &l2model.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:09", OutgoingInterface: "loop9", StaticConfig: true},
		ifmodel.InterfaceKey("loop9"): &ifmodel.Interface{Name: "loop9", Type: ifmodel.Interface_SOFTWARE_LOOPBACK},
	})
	if st := e.state(fibKey); st != kvapi.StatePending {
		t.Fatalf("FIB entry without bridge domain: %v", st)
	}
	bdKey := l2model.BridgeDomainKey("bd1")
	e.mustCommit(map[string]proto.Message{bdKey: &l2model.BridgeDomain{Name: "bd1", Forward: true}})
	if st := e.state(fibKey); st != kvapi.StatePending {
		t.Fatalf("FIB entry to a non-member: %v", st)
	}
	e.mustCommit(map[string]proto.Message{bdKey: &l2model.BridgeDomain{Name: "bd1", Forward: true,
		Interfaces: []*l2model.BridgeDomain_Interface{{Name: "loop9"}}}})
	if st := e.state(fibKey); st != kvapi.StateConfigured {
		t.Fatalf("FIB entry once the interface joined: %v %s", st, e.kvs.GetValueStatus(fibKey).Error)
	}
	// Deleting the interface takes the membership and the FIB entry with it.
	e.mustCommit(map[string]proto.Message{ifmodel.InterfaceKey("loop9"): nil})
	if st := e.state(fibKey); st != kvapi.StatePending {
		t.Errorf("FIB entry after its interface went: %v", st)
	}
	if n := len(e.sim.L2FIB()); n != 0 {
		t.Errorf("L2 FIB keeps %d entries", n)
	}
}

func TestL2VPPErrorsAndValidation(t *testing.T) {
	e := newEnv(t)
	bdDesc := e.l2p.Descriptors()[0]
	if err := e.sim.FailMessage("bridge_domain_add_del_v2", int32(govppapi.BD_ID_EXCEED_MAX), 1); err != nil {
		t.Fatal(err)
	}
	bdKey := l2model.BridgeDomainKey("bd1")
	err := e.commit(context.Background(), map[string]proto.Message{bdKey: &l2model.BridgeDomain{Name: "bd1"}})
	if !errors.Is(err, govppapi.BD_ID_EXCEED_MAX) || !strings.Contains(err.Error(), "bd1") {
		t.Fatalf("commit = %v", err)
	}
	if bdDesc.IsRetriableFailure(err) {
		t.Error("BD_ID_EXCEED_MAX classified retriable")
	}
	if st := e.state(bdKey); st != kvapi.StateFailed {
		t.Errorf("state %v", st)
	}
	if !bdDesc.IsRetriableFailure(govppapi.NO_SUCH_ENTRY) {
		t.Error("NO_SUCH_ENTRY classified permanent")
	}

	if err := e.sim.FailMessage("l2fib_add_del", int32(govppapi.INVALID_SW_IF_INDEX), 1); err != nil {
		t.Fatal(err)
	}
	fibKey := l2model.FIBKey("bd1", "02:00:00:00:00:01")
	err = e.commit(kvapi.WithRetry(context.Background(), 0, 0, false), map[string]proto.Message{
		bdKey:                         &l2model.BridgeDomain{Name: "bd1", Interfaces: []*l2model.BridgeDomain_Interface{{Name: "loop1"}}},
		ifmodel.InterfaceKey("loop1"): &ifmodel.Interface{Name: "loop1", Type: ifmodel.Interface_SOFTWARE_LOOPBACK},
		fibKey:                        &l2model.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:01", OutgoingInterface: "loop1"},
	})
	if !errors.Is(err, govppapi.INVALID_SW_IF_INDEX) {
		t.Fatalf("commit with a failing FIB entry = %v", err)
	}
	if st := e.state(bdKey); st != kvapi.StateConfigured {
		t.Errorf("bridge domain after the FIB failure: %v", st)
	}

	tests := []struct {
		name  string
		key   string
		value proto.Message
		field string
	}{
		{"two BVIs", bdKey, &l2model.BridgeDomain{Name: "bd1", Interfaces: []*l2model.BridgeDomain_Interface{
			{Name: "a", BridgedVirtualInterface: true}, {Name: "b", BridgedVirtualInterface: true}}}, "interfaces.bridged_virtual_interface"},
		{"mac age", bdKey, &l2model.BridgeDomain{Name: "bd1", MacAge: 300}, "mac_age"},
		{"duplicate member", bdKey, &l2model.BridgeDomain{Name: "bd1", Interfaces: []*l2model.BridgeDomain_Interface{{Name: "a"}, {Name: "a"}}}, "interfaces.name"},
		{"forward without interface", fibKey, &l2model.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:01"}, "outgoing_interface"},
		{"mac not of the key", fibKey, &l2model.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:02", OutgoingInterface: "x"}, "phys_address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := bdDesc
			if strings.HasPrefix(tc.key, l2model.FIBPrefix) {
				d = e.l2p.Descriptors()[2]
			}
			var ive *kvapi.InvalidValueError
			if err := d.Validate(tc.key, tc.value); !errors.As(err, &ive) || !slices.Contains(ive.InvalidFields, tc.field) {
				t.Errorf("Validate = %v, want field %s", err, tc.field)
			}
		})
	}
}

package natplugin

import (
	"errors"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// testGlobal is a global configuration like the service renderer's: an
// output-feature main interface, in+out pod interfaces, SNAT and twice-NAT
// pool addresses.
func testGlobal() *nat.Nat44Global {
	return &nat.Nat44Global{
		Forwarding: true,
		NatInterfaces: []*nat.Nat44Global_Interface{
			{Name: "main", OutputFeature: true},
			{Name: "tap1", IsInside: true},
			{Name: "tap1"},
			{Name: "vxlanBVI"},
		},
		AddressPool: []*nat.Nat44Global_Address{
			{Address: "192.168.16.1", VrfId: noIndex},
			{Address: "10.1.1.254", VrfId: noIndex, TwiceNat: true},
		},
		VirtualReassembly: &nat.VirtualReassembly{DropFragments: true},
	}
}

// applyGlobal creates a global value and its derived values as the
// scheduler would.
func applyGlobal(t *testing.T, e *env, g *nat.Nat44Global) {
	t.Helper()
	gd := NewNat44GlobalDescriptor(e.deps())
	if err := gd.Validate(nat.GlobalNAT44Key, g); err != nil {
		t.Fatal(err)
	}
	if _, err := gd.Create(nat.GlobalNAT44Key, g); err != nil {
		t.Fatal(err)
	}
	ifd, ad := NewNat44InterfaceDescriptor(e.deps()), NewNat44AddressDescriptor(e.deps())
	for _, kv := range gd.DerivedValues(nat.GlobalNAT44Key, g) {
		d := ifd
		if ad.KeySelector(kv.Key) {
			d = ad
		} else if !ifd.KeySelector(kv.Key) {
			t.Fatalf("derived key %s selected by no descriptor", kv.Key)
		}
		if _, err := d.Create(kv.Key, kv.Value); err != nil {
			t.Fatalf("create %s: %v", kv.Key, err)
		}
	}
}

func TestNat44GlobalCreateUpdateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	main, tap1, bvi := e.loopback("main"), e.loopback("tap1"), e.loopback("vxlanBVI")
	g := testGlobal()
	e.sim.ResetMessageCounts()
	applyGlobal(t, e, g)
	if n := e.sim.MessageCount("ip_reassembly_set"); n != 0 {
		t.Errorf("drop_fragments alone sent %d ip_reassembly_set", n)
	}
	n := e.sim.NAT()
	if !n.Enabled || !n.Forwarding {
		t.Fatalf("NAT enabled=%v forwarding=%v", n.Enabled, n.Forwarding)
	}
	wantIfs := map[uint32]vppsim.NATInterface{
		tap1: {SwIfIndex: tap1, Inside: true, Outside: true},
		bvi:  {SwIfIndex: bvi, Outside: true},
		main: {SwIfIndex: main, OutputFeature: true},
	}
	if len(n.Interfaces) != 3 {
		t.Errorf("NAT interfaces %+v", n.Interfaces)
	}
	for _, i := range n.Interfaces {
		if wantIfs[i.SwIfIndex] != i {
			t.Errorf("NAT interface %+v, want %+v", i, wantIfs[i.SwIfIndex])
		}
	}
	if len(n.Addresses) != 2 || n.Addresses[0].VRF != vppsim.NoIndex || n.Addresses[0].TwiceNAT || !n.Addresses[1].TwiceNAT {
		t.Errorf("NAT addresses %+v", n.Addresses)
	}

	// a restarted agent reads back exactly NB's value, with and without a
	// stream-capable connection for the output interfaces
	want := map[string]proto.Message{nat.GlobalNAT44Key: g}
	expectRetrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), want)
	noStreams := e.freshDeps()
	noStreams.Conn = nil
	expectRetrieved(t, NewNat44GlobalDescriptor(noStreams), want)
	// without NB: rebuilt from VPP (no reassembly, VPP's order)
	got := retrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), nil)[nat.GlobalNAT44Key].Value
	g2 := proto.Clone(g).(*nat.Nat44Global)
	g2.VirtualReassembly = nil
	if got == nil || !EquivalentNat44Global(got.(*nat.Nat44Global), g2) {
		t.Errorf("retrieve without NB: %v", got)
	}

	// update: forwarding off
	gd := NewNat44GlobalDescriptor(e.deps())
	off := proto.Clone(g).(*nat.Nat44Global)
	off.Forwarding = false
	if _, err := gd.Update(nat.GlobalNAT44Key, g, off, nil); err != nil {
		t.Fatal(err)
	}
	if e.sim.NAT().Forwarding {
		t.Error("forwarding still on")
	}

	// delete: derived values first, then the global value; NAT stays enabled
	ifd, ad := NewNat44InterfaceDescriptor(e.deps()), NewNat44AddressDescriptor(e.deps())
	for _, kv := range gd.DerivedValues(nat.GlobalNAT44Key, off) {
		d := ifd
		if ad.KeySelector(kv.Key) {
			d = ad
		}
		if err := d.Delete(kv.Key, kv.Value, nil); err != nil {
			t.Fatalf("delete %s: %v", kv.Key, err)
		}
	}
	if err := gd.Delete(nat.GlobalNAT44Key, g, nil); err != nil {
		t.Fatal(err)
	}
	n = e.sim.NAT()
	if !n.Enabled || n.Forwarding || len(n.Interfaces) != 0 || len(n.Addresses) != 0 {
		t.Errorf("after delete: %+v", n)
	}
	if got := retrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), nil); len(got) != 0 {
		t.Errorf("empty configuration retrieved: %v", got)
	}
	// an empty global value exists as soon as NB asks for it (NAT enabled)
	expectRetrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{}})
}

func TestNat44GlobalReassembly(t *testing.T) {
	e := newEnv(t)
	gd := NewNat44GlobalDescriptor(e.deps())
	g := &nat.Nat44Global{VirtualReassembly: &nat.VirtualReassembly{Timeout: 2, MaxReassemblies: 512, MaxFragments: 5}}
	_, err := gd.Create(nat.GlobalNAT44Key, g)
	// the simulator does not implement ip_reassembly_set: the request is
	// sent and its failure reported
	if e.sim.MessageCount("ip_reassembly_set") != 1 || !vppbase.IsRetval(err, govppapi.UNIMPLEMENTED) {
		t.Errorf("ip_reassembly_set sent %d times, error %v", e.sim.MessageCount("ip_reassembly_set"), err)
	}
	r := reassembly(g.VirtualReassembly)
	if r.TimeoutMs != 2000 || r.MaxReassemblies != 512 || r.MaxReassemblyLength != 5 || r.ExpireWalkIntervalMs != defaultReassExpireWalkMs {
		t.Errorf("reassembly mapping %+v", r)
	}
	if reassembly(nil) != reassembly(&nat.VirtualReassembly{DropFragments: true}) {
		t.Error("drop_fragments alone should keep VPP's defaults")
	}
}

func TestNat44GlobalValidateAndDerived(t *testing.T) {
	tests := []struct {
		name  string
		g     *nat.Nat44Global
		field string
	}{
		{"renderer-like", testGlobal(), ""},
		{"empty name", &nat.Nat44Global{NatInterfaces: []*nat.Nat44Global_Interface{{}}}, "nat_interfaces[0].name"},
		{"inside output", &nat.Nat44Global{NatInterfaces: []*nat.Nat44Global_Interface{{Name: "a", IsInside: true, OutputFeature: true}}}, "nat_interfaces[0].is_inside"},
		{"output and inside", &nat.Nat44Global{NatInterfaces: []*nat.Nat44Global_Interface{{Name: "a", OutputFeature: true}, {Name: "a", IsInside: true}}}, "nat_interfaces[0].output_feature"},
		{"twice", &nat.Nat44Global{NatInterfaces: []*nat.Nat44Global_Interface{{Name: "a"}, {Name: "a"}}}, "nat_interfaces[1]"},
		{"bad address", &nat.Nat44Global{AddressPool: []*nat.Nat44Global_Address{{Address: "fd::1"}}}, "address_pool[0].address"},
		{"address twice", &nat.Nat44Global{AddressPool: []*nat.Nat44Global_Address{{Address: "1.1.1.1"}, {Address: "1.1.1.1", VrfId: 3}}}, "address_pool[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkInvalid(t, ValidateNat44Global(tt.g), tt.field) })
	}

	g := testGlobal()
	var keys []string
	for _, kv := range globalDerived(nat.GlobalNAT44Key, g) {
		keys = append(keys, kv.Key)
	}
	wantKeys := []string{
		nat.InterfaceNAT44Key("main", false), nat.InterfaceNAT44Key("tap1", true), nat.InterfaceNAT44Key("tap1", false),
		nat.InterfaceNAT44Key("vxlanBVI", false), nat.AddressNAT44Key("192.168.16.1", false), nat.AddressNAT44Key("10.1.1.254", true),
	}
	if len(keys) != len(wantKeys) {
		t.Fatalf("derived keys %v", keys)
	}
	for i := range keys {
		if keys[i] != wantKeys[i] {
			t.Errorf("derived keys %v, want %v", keys, wantKeys)
		}
	}
	ifd := NewNat44InterfaceDescriptor(DescriptorDeps{})
	if deps := ifd.Dependencies(wantKeys[1], g.NatInterfaces[1]); len(deps) != 1 || deps[0].Key != ifmodel.InterfaceKey("tap1") {
		t.Errorf("interface feature dependencies %v", deps)
	}
	ad := NewNat44AddressDescriptor(DescriptorDeps{})
	if deps := ad.Dependencies(wantKeys[4], &nat.Nat44Global_Address{Address: "1.1.1.1", VrfId: 2}); len(deps) != 1 || deps[0].Key != l3.VrfTableKey(2, l3.VrfTable_IPV4) {
		t.Errorf("address dependencies %v", deps)
	}
	if deps := ad.Dependencies(wantKeys[4], g.AddressPool[0]); len(deps) != 0 {
		t.Errorf("address in any VRF depends on %v", deps)
	}
	// order does not matter
	r := proto.Clone(g).(*nat.Nat44Global)
	r.NatInterfaces[0], r.NatInterfaces[3] = r.NatInterfaces[3], r.NatInterfaces[0]
	if !EquivalentNat44Global(g, r) {
		t.Error("interface order compared")
	}
}

func TestNat44FeaturesNeedNATEnabled(t *testing.T) {
	e := newEnv(t)
	e.loopback("tap1")
	ifd, ad := NewNat44InterfaceDescriptor(e.deps()), NewNat44AddressDescriptor(e.deps())
	_, err := ifd.Create(nat.InterfaceNAT44Key("tap1", true), &nat.Nat44Global_Interface{Name: "tap1", IsInside: true})
	if !vppbase.IsRetval(err, govppapi.UNSUPPORTED) {
		t.Errorf("interface feature with NAT disabled: %v", err)
	}
	_, err = ad.Create(nat.AddressNAT44Key("1.2.3.4", false), &nat.Nat44Global_Address{Address: "1.2.3.4"})
	if !vppbase.IsRetval(err, govppapi.UNSUPPORTED) {
		t.Errorf("pool address with NAT disabled: %v", err)
	}
	if _, err := ifd.Create(nat.InterfaceNAT44Key("nope", true), &nat.Nat44Global_Interface{Name: "nope"}); err == nil {
		t.Error("feature on an unknown interface accepted")
	}
	e.enableNAT()
	e.enableNAT() // enabling again is fine
	if err := e.sim.FailMessage("nat44_interface_add_del_feature", int32(govppapi.INVALID_SW_IF_INDEX), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ifd.Create(nat.InterfaceNAT44Key("tap1", true), &nat.Nat44Global_Interface{Name: "tap1", IsInside: true}); !vppbase.IsRetval(err, govppapi.INVALID_SW_IF_INDEX) {
		t.Errorf("injected failure: %v", err)
	}
}

// checkInvalid checks that err is nil (field "") or an InvalidValueError
// naming field.
func checkInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	var inv *kvapi.InvalidValueError
	if !errors.As(err, &inv) {
		t.Fatalf("error %v is not an InvalidValueError", err)
	}
	for _, f := range inv.InvalidFields {
		if f == field {
			return
		}
	}
	t.Errorf("error %v does not name field %s", err, field)
}

package natplugin

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func lip(ip string, port, vrf, prob uint32) *nat.DNat44_StaticMapping_LocalIP {
	return &nat.DNat44_StaticMapping_LocalIP{LocalIp: ip, LocalPort: port, VrfId: vrf, Probability: prob}
}

// testDNAT is a service-like DNat44: a cluster IP with a TCP port (one
// backend, self-twice-NAT), a UDP port (two backends, affinity), a second
// cluster IP with three backends, an address-only mapping and identities.
func testDNAT(label string) *nat.DNat44 {
	return &nat.DNat44{
		Label: label,
		StMappings: []*nat.DNat44_StaticMapping{
			{ExternalIp: "10.96.0.10", ExternalPort: 80, Protocol: nat.DNat44_TCP, TwiceNat: nat.DNat44_StaticMapping_SELF,
				LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8080, 2, 0)}},
			{ExternalIp: "10.96.0.10", ExternalPort: 53, Protocol: nat.DNat44_UDP, TwiceNat: nat.DNat44_StaticMapping_ENABLED, SessionAffinity: 300,
				LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.3", 5353, 2, 1), lip("10.1.2.3", 5353, 0, 2)}},
			{ExternalIp: "10.96.0.11", ExternalPort: 443, Protocol: nat.DNat44_TCP,
				LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.4", 8443, 2, 1), lip("10.1.1.5", 8443, 2, 1), lip("10.1.1.6", 8443, 2, 1)}},
			{ExternalIp: "192.168.16.10", LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.7", 0, 2, 0)}},
		},
		IdMappings: []*nat.DNat44_IdentityMapping{
			{IpAddress: "192.168.16.1", Port: 4789, Protocol: nat.DNat44_UDP},
			{IpAddress: "192.168.16.1", VrfId: 2, Protocol: nat.DNat44_UDP},
		},
	}
}

func createDNAT(t *testing.T, d *kvapi.KVDescriptor, v *nat.DNat44) {
	t.Helper()
	key := nat.DNAT44Key(v.Label)
	if err := d.Validate(key, v); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(key, v); err != nil {
		t.Fatal(err)
	}
}

func TestDNat44CreateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	e.enableNAT()
	d := dnatDescriptor44(e.deps())
	v := testDNAT("default/kube-dns")
	e.sim.ResetMessageCounts()
	createDNAT(t, d, v)
	counts := e.sim.MessageCounts()
	if counts["nat44_add_del_static_mapping_v2"] != 2 || counts["nat44_add_del_lb_static_mapping"] != 2 ||
		counts["nat44_add_del_identity_mapping"] != 2 || e.sim.TotalMessageCount() != 6 {
		t.Errorf("messages sent: %v", counts)
	}
	n := e.sim.NAT()
	if len(n.StaticMappings) != 2 || len(n.LBMappings) != 2 || len(n.IdentityMappings) != 2 {
		t.Fatalf("VPP mappings: %+v", n)
	}
	sm := n.StaticMappings[0]
	if sm.Tag != "default/kube-dns" || !sm.Out2InOnly || !sm.SelfTwiceNAT || sm.TwiceNAT || sm.VRF != 2 {
		t.Errorf("static mapping %+v", sm)
	}
	if !n.StaticMappings[1].AddrOnly || n.IdentityMappings[1].AddrOnly != true || n.IdentityMappings[0].AddrOnly {
		t.Errorf("address-only flags: %+v %+v", n.StaticMappings[1], n.IdentityMappings)
	}
	if lb := n.LBMappings[0]; lb.Affinity != 300 || !lb.TwiceNAT || len(lb.Locals) != 2 || lb.Locals[1].Probability != 2 {
		t.Errorf("LB mapping %+v", lb)
	}
	// a TCP packet to the service port is translated to the backend,
	// its source rewritten only when it comes from the backend itself
	pkt := vppsim.Packet{Protocol: 6, Src: netip.MustParseAddrPort("10.1.1.9:40000"), Dst: netip.MustParseAddrPort("10.96.0.10:80")}
	if out := e.sim.Translate(pkt); len(out) != 1 || out[0].Dst.String() != "10.1.1.2:8080" || out[0].Src != pkt.Src {
		t.Errorf("translated to %+v", out)
	}
	if b := e.sim.LookupDNAT(6, netip.MustParseAddr("10.96.0.11"), 443); len(b) != 3 {
		t.Errorf("LB backends %+v", b)
	}

	// a restarted agent reads back exactly NB's value
	want := map[string]proto.Message{nat.DNAT44Key(v.Label): v}
	expectRetrieved(t, dnatDescriptor44(e.freshDeps()), want)
	// without NB: the label comes from the tag, the content from VPP
	got := retrieved(t, dnatDescriptor44(e.freshDeps()), nil)
	if kv, ok := got[nat.DNAT44Key(v.Label)]; !ok || kv.Origin != kvapi.FromNB || !EquivalentDNat44(kv.Value.(*nat.DNat44), v) {
		t.Errorf("retrieve without NB: %+v", got)
	}

	e.sim.ResetMessageCounts()
	if err := d.Delete(nat.DNAT44Key(v.Label), v, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.NAT(); len(n.StaticMappings)+len(n.LBMappings)+len(n.IdentityMappings) != 0 {
		t.Errorf("mappings left: %+v", n)
	}
	if e.sim.TotalMessageCount() != 6 {
		t.Errorf("delete sent %v", e.sim.MessageCounts())
	}
	// deleting what VPP no longer has is fine
	if err := d.Delete(nat.DNAT44Key(v.Label), v, nil); err != nil {
		t.Errorf("second delete: %v", err)
	}
}

func TestDNat44UpdateSendsOnlyChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(v *nat.DNat44)
		want   map[string]int64 // message -> count; every other message: 0
	}{
		{"nothing but order", func(v *nat.DNat44) {
			v.StMappings[0], v.StMappings[3] = v.StMappings[3], v.StMappings[0]
			v.StMappings[2].LocalIps[0], v.StMappings[2].LocalIps[2] = v.StMappings[2].LocalIps[2], v.StMappings[2].LocalIps[0]
		}, map[string]int64{}},
		{"backend added to an LB mapping", func(v *nat.DNat44) {
			v.StMappings[2].LocalIps = append(v.StMappings[2].LocalIps, lip("10.1.1.8", 8443, 2, 1))
		}, map[string]int64{"nat44_lb_static_mapping_add_del_local": 1}},
		{"backend removed from an LB mapping of three", func(v *nat.DNat44) {
			v.StMappings[2].LocalIps = v.StMappings[2].LocalIps[1:]
		}, map[string]int64{"nat44_lb_static_mapping_add_del_local": 1}},
		{"backend replaced", func(v *nat.DNat44) {
			v.StMappings[1].LocalIps[0] = lip("10.1.1.30", 5353, 2, 1)
		}, map[string]int64{"nat44_lb_static_mapping_add_del_local": 2}},
		{"LB mapping down to one backend", func(v *nat.DNat44) {
			v.StMappings[1].LocalIps = v.StMappings[1].LocalIps[:1]
		}, map[string]int64{"nat44_add_del_lb_static_mapping": 1, "nat44_add_del_static_mapping_v2": 1}},
		{"probability changed", func(v *nat.DNat44) {
			v.StMappings[1].LocalIps[0].Probability = 5
		}, map[string]int64{"nat44_add_del_lb_static_mapping": 2}},
		{"backend port changed", func(v *nat.DNat44) {
			v.StMappings[0].LocalIps[0].LocalPort = 9090
		}, map[string]int64{"nat44_add_del_static_mapping_v2": 2}},
		{"port mapping added, identity removed", func(v *nat.DNat44) {
			v.StMappings = append(v.StMappings, &nat.DNat44_StaticMapping{ExternalIp: "10.96.0.12", ExternalPort: 80,
				LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 80, 0, 0)}})
			v.IdMappings = v.IdMappings[:1]
		}, map[string]int64{"nat44_add_del_static_mapping_v2": 1, "nat44_add_del_identity_mapping": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.enableNAT()
			d := dnatDescriptor44(e.deps())
			old := testDNAT("svc")
			createDNAT(t, d, old)
			v := proto.Clone(old).(*nat.DNat44)
			tt.change(v)
			if err := d.Validate(nat.DNAT44Key("svc"), v); err != nil {
				t.Fatal(err)
			}
			if equal := d.ValueComparator("", old, v); equal != (len(tt.want) == 0) {
				t.Errorf("comparator says equal=%v", equal)
			}
			e.sim.ResetMessageCounts()
			if _, err := d.Update(nat.DNAT44Key("svc"), old, v, nil); err != nil {
				t.Fatal(err)
			}
			got := e.sim.MessageCounts()
			for m, n := range tt.want {
				if got[m] != n {
					t.Errorf("%s sent %d times, want %d (all: %v)", m, got[m], n, got)
				}
			}
			for m, n := range got {
				if _, ok := tt.want[m]; !ok {
					t.Errorf("unexpected %s x%d", m, n)
				}
			}
			expectRetrieved(t, dnatDescriptor44(e.freshDeps()), map[string]proto.Message{nat.DNAT44Key("svc"): v})
		})
	}
}

func TestDNat44VPPErrorsLeaveOldState(t *testing.T) {
	e := newEnv(t)
	d := dnatDescriptor44(e.deps())
	v := testDNAT("svc")
	// NAT disabled: VPP refuses every mapping
	_, err := d.Create(nat.DNAT44Key("svc"), v)
	if !vppbase.IsRetval(err, govppapi.UNSUPPORTED) || !strings.Contains(err.Error(), "svc") {
		t.Fatalf("create with NAT disabled: %v", err)
	}
	e.enableNAT()

	// one failing request: the others are undone
	if err := e.sim.FailMessage("nat44_add_del_lb_static_mapping", int32(govppapi.VALUE_EXIST), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(nat.DNAT44Key("svc"), v); !vppbase.IsRetval(err, govppapi.VALUE_EXIST) {
		t.Fatalf("create with an injected failure: %v", err)
	}
	if n := e.sim.NAT(); len(n.StaticMappings)+len(n.LBMappings)+len(n.IdentityMappings) != 0 {
		t.Fatalf("failed create left mappings: %+v", n)
	}

	createDNAT(t, d, v)
	before := e.sim.NAT()
	// a failed update leaves the old mappings
	v2 := proto.Clone(v).(*nat.DNat44)
	v2.StMappings[2].LocalIps[0] = lip("10.1.1.40", 8443, 2, 1)
	v2.StMappings[0].LocalIps[0].LocalPort = 9999
	if err := e.sim.FailMessage("nat44_lb_static_mapping_add_del_local", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(nat.DNAT44Key("svc"), v, v2, nil); !vppbase.IsRetval(err, govppapi.UNSPECIFIED) {
		t.Fatalf("update with an injected failure: %v", err)
	}
	after := e.sim.NAT()
	if !sameNATMappings(before, after) {
		t.Errorf("failed update changed VPP:\nbefore %+v\nafter  %+v", before, after)
	}

	// a second DNat44 with the same external endpoint is VPP's error
	dup := &nat.DNat44{Label: "other", StMappings: v.StMappings[:1]}
	if _, err := d.Create(nat.DNAT44Key("other"), dup); !vppbase.IsRetval(err, govppapi.VALUE_EXIST) {
		t.Errorf("duplicate external endpoint: %v", err)
	}
}

// sameNATMappings compares the mappings of two NAT snapshots, ignoring
// their order.
func sameNATMappings(a, b vppsim.NAT) bool {
	key := func(n vppsim.NAT) []string {
		var out []string
		for _, m := range n.StaticMappings {
			out = append(out, "s"+m.External.String()+m.Local.String()+m.Tag)
		}
		for _, m := range n.LBMappings {
			s := "lb" + m.External.String() + m.Tag
			var ls []string
			for _, l := range m.Locals {
				ls = append(ls, l.Addr.String())
			}
			sortStrings(ls)
			out = append(out, s+strings.Join(ls, ","))
		}
		for _, m := range n.IdentityMappings {
			out = append(out, "i"+m.Addr.String()+m.Tag)
		}
		return out
	}
	return sameSet(key(a), key(b))
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestDNat44RetrieveGroupsByTag(t *testing.T) {
	e := newEnv(t)
	e.enableNAT()
	e.loopback("main")
	d := dnatDescriptor44(e.deps())
	long := "very-long-namespace-name-for-testing/" + strings.Repeat("x", 40)
	a := &nat.DNat44{Label: long, StMappings: []*nat.DNat44_StaticMapping{{ExternalInterface: "main", ExternalPort: 30080,
		LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 80, 0, 0)}, TwiceNatPoolIp: "10.1.1.254", TwiceNat: nat.DNat44_StaticMapping_ENABLED}}}
	b := &nat.DNat44{Label: "ns/b", IdMappings: []*nat.DNat44_IdentityMapping{{Interface: "main", Port: 22, Protocol: nat.DNat44_TCP}}}
	empty := &nat.DNat44{Label: "DNAT-identities"}
	for _, v := range []*nat.DNat44{a, b, empty} {
		createDNAT(t, d, v)
	}
	// a mapping without tag is not the agent's
	untagged := &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: 4, LocalIPAddress: [4]byte{10, 9, 9, 9},
		ExternalIPAddress: [4]byte{10, 96, 9, 9}, Protocol: 6, LocalPort: 1, ExternalPort: 1, ExternalSwIfIndex: 0xffffffff}
	if err := vppbase.Call(e.ch, untagged, &nat44_ed.Nat44AddDelStaticMappingV2Reply{}); err != nil {
		t.Fatal(err)
	}
	if tag := e.sim.NAT().StaticMappings[0].Tag; tag != Tag(long) || len(tag) != MaxTagLen {
		t.Errorf("VPP tag %q", tag)
	}
	want := map[string]proto.Message{nat.DNAT44Key(long): a, nat.DNAT44Key("ns/b"): b, nat.DNAT44Key("DNAT-identities"): empty}
	expectRetrieved(t, dnatDescriptor44(e.freshDeps()), want)

	got := retrieved(t, dnatDescriptor44(e.freshDeps()), nil)
	if len(got) != 2 {
		t.Errorf("retrieve without NB: %v", got)
	}
	if kv := got[nat.DNAT44Key(Tag(long))]; kv.Value == nil || kv.Value.(*nat.DNat44).StMappings[0].GetExternalInterface() != "main" {
		t.Errorf("the tag of a long label: %+v", kv)
	}
}

func TestDNat44Validate(t *testing.T) {
	ok := func() *nat.DNat44 { return testDNAT("svc") }
	tests := []struct {
		name   string
		change func(v *nat.DNat44)
		field  string
	}{
		{"service-like", func(*nat.DNat44) {}, ""},
		{"empty label", func(v *nat.DNat44) { v.Label = "" }, "label"},
		{"bad external IP", func(v *nat.DNat44) { v.StMappings[0].ExternalIp = "fd::1" }, "st_mappings[0].external_ip"},
		{"external IP and interface", func(v *nat.DNat44) { v.StMappings[0].ExternalInterface = "x" }, "st_mappings[0].external_ip"},
		{"no locals", func(v *nat.DNat44) { v.StMappings[0].LocalIps = nil }, "st_mappings[0].local_ips"},
		{"bad local IP", func(v *nat.DNat44) { v.StMappings[1].LocalIps[1].LocalIp = "x" }, "st_mappings[1].local_ips[1].local_ip"},
		{"port too big", func(v *nat.DNat44) { v.StMappings[0].ExternalPort = 70000 }, "st_mappings[0].external_port"},
		{"missing local port", func(v *nat.DNat44) { v.StMappings[0].LocalIps[0].LocalPort = 0 }, "st_mappings[0].local_ips[0].local_port"},
		{"address-only with local port", func(v *nat.DNat44) { v.StMappings[3].LocalIps[0].LocalPort = 80 }, "st_mappings[3].local_ips[0].local_port"},
		{"address-only twice-NAT", func(v *nat.DNat44) { v.StMappings[3].TwiceNat = nat.DNat44_StaticMapping_SELF }, "st_mappings[3].twice_nat"},
		{"probability too big", func(v *nat.DNat44) { v.StMappings[1].LocalIps[0].Probability = 256 }, "st_mappings[1].local_ips[0].probability"},
		{"LB with pool IP", func(v *nat.DNat44) { v.StMappings[1].TwiceNatPoolIp = "1.1.1.1" }, "st_mappings[1].twice_nat_pool_ip"},
		{"LB duplicate local", func(v *nat.DNat44) { v.StMappings[1].LocalIps[1] = v.StMappings[1].LocalIps[0] }, "st_mappings[1].local_ips"},
		{"unknown protocol", func(v *nat.DNat44) { v.StMappings[0].Protocol = 7 }, "st_mappings[0].protocol"},
		{"mapping twice", func(v *nat.DNat44) { v.StMappings = append(v.StMappings, v.StMappings[0]) }, "st_mappings"},
		{"bad identity IP", func(v *nat.DNat44) { v.IdMappings[0].IpAddress = "" }, "id_mappings[0].ip_address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ok()
			tt.change(v)
			key := nat.DNAT44Key(v.Label)
			checkInvalid(t, ValidateDNat44(key, v), tt.field)
		})
	}
	if err := ValidateDNat44(nat.DNAT44Key("other"), ok()); err == nil {
		t.Error("key of another label accepted")
	}
}

func TestDNat44Dependencies(t *testing.T) {
	v := testDNAT("svc")
	v.StMappings[0].ExternalIp, v.StMappings[0].ExternalInterface = "", "main"
	var got []string
	for _, dep := range DNat44Dependencies(v) {
		got = append(got, dep.Key)
	}
	want := []string{nat.GlobalNAT44Key, l3.VrfTableKey(2, l3.VrfTable_IPV4), ifmodel.InterfaceKey("main")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dependencies %v, want %v", got, want)
	}
}

func TestTag(t *testing.T) {
	for _, label := range []string{"default/kubernetes", strings.Repeat("a", 63)} {
		if got := Tag(label); got != label {
			t.Errorf("Tag(%q) = %q, want the label itself", label, got)
		}
	}
	// Two labels sharing their first 63 bytes (two Services of one long namespace
	// with long names) get distinct tags that VPP keeps whole, the same each time.
	ns := strings.Repeat("n", 40) + "/"
	a, b := ns+strings.Repeat("s", 30)+"-frontend", ns+strings.Repeat("s", 30)+"-backend"
	ta, tb := Tag(a), Tag(b)
	if ta == tb || len(ta) > MaxTagLen || len(tb) > MaxTagLen || Tag(a) != ta {
		t.Errorf("Tag(%q) = %q, Tag(%q) = %q: want distinct, stable tags of at most %d bytes", a, ta, b, tb, MaxTagLen)
	}
	if !strings.HasPrefix(ta, a[:40]) || !strings.Contains(ta, tagSeparator) {
		t.Errorf("Tag(%q) = %q: want the label's start, %q and a hash", a, ta, tagSeparator)
	}
	// A multi-byte rune is never cut in half.
	long := strings.Repeat("a", 45) + "é" + strings.Repeat("b", 30)
	if got := Tag(long); !utf8.ValidString(got) || len(got) > MaxTagLen {
		t.Errorf("Tag(%q) = %q: not valid UTF-8 or too long", long, got)
	}
}

// TestLongLabelsSharingTheirStartAreTwoValues: two DNat44 values whose labels share
// their first 63 bytes are created, retrieved and deleted as two (a plain cut gave both
// one VPP tag: a resync then took them for one value and failed to re-create the other).
func TestLongLabelsSharingTheirStartAreTwoValues(t *testing.T) {
	e := newEnv(t)
	e.enableNAT()
	e.loopback("main")
	d := dnatDescriptor44(e.deps())
	ns := strings.Repeat("n", 40) + "/"
	mk := func(label string, port uint32) *nat.DNat44 {
		return &nat.DNat44{Label: label, StMappings: []*nat.DNat44_StaticMapping{{ExternalInterface: "main", ExternalPort: port,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 80, 0, 0)}}}}
	}
	a, b := mk(ns+strings.Repeat("s", 30)+"-frontend", 30080), mk(ns+strings.Repeat("s", 30)+"-backend", 30081)
	createDNAT(t, d, a)
	createDNAT(t, d, b)
	want := map[string]proto.Message{nat.DNAT44Key(a.Label): a, nat.DNAT44Key(b.Label): b}
	expectRetrieved(t, dnatDescriptor44(e.freshDeps()), want)
}

func TestDNat44AnyVRFMeansInsideVRF(t *testing.T) {
	e := newEnv(t)
	e.enableNAT()
	d := dnatDescriptor44(e.deps())
	v := &nat.DNat44{Label: "ids",
		StMappings: []*nat.DNat44_StaticMapping{{ExternalIp: "10.96.0.1", ExternalPort: 80,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 80, noIndex, 0)}}},
		IdMappings: []*nat.DNat44_IdentityMapping{{IpAddress: "192.168.16.1", VrfId: noIndex}}}
	createDNAT(t, d, v)
	if n := e.sim.NAT(); n.StaticMappings[0].VRF != 0 || n.IdentityMappings[0].VRFs[0] != 0 {
		t.Errorf("VPP mappings %+v", n)
	}
	if deps := DNat44Dependencies(v); len(deps) != 1 {
		t.Errorf("~0 VRF is a dependency: %v", deps)
	}
	expectRetrieved(t, dnatDescriptor44(e.freshDeps()), map[string]proto.Message{nat.DNAT44Key("ids"): v})
}

// TestDNat44ValidateChecksSharedLocalsForEveryMapping: mappings listing the same locals
// share their parsed form, but what depends on the mapping is still checked for each
// (local ports of an address-only mapping), and so are locals that were wrong.
func TestDNat44ValidateChecksSharedLocalsForEveryMapping(t *testing.T) {
	locals := []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.1", 8080, 0, 1), lip("10.1.1.2", 8080, 0, 1)}
	port := func(ip string, p uint32) *nat.DNat44_StaticMapping {
		return &nat.DNat44_StaticMapping{ExternalIp: ip, ExternalPort: p, LocalIps: locals}
	}
	v := &nat.DNat44{Label: "svc", StMappings: []*nat.DNat44_StaticMapping{port("10.96.0.1", 80), port("10.96.0.2", 80)}}
	if err := ValidateDNat44(nat.DNAT44Key("svc"), v); err != nil {
		t.Fatalf("valid value refused: %v", err)
	}
	// the same locals on an address-only mapping: their ports are wrong there
	v.StMappings = append(v.StMappings, port("10.96.0.3", 0))
	checkInvalid(t, ValidateDNat44(nat.DNAT44Key("svc"), v), "st_mappings[2].local_ips[0].local_port")
	// wrong locals shared by two mappings are reported for both
	bad := []*nat.DNat44_StaticMapping_LocalIP{lip("x", 8080, 0, 1), lip("10.1.1.2", 8080, 0, 1)}
	v.StMappings = []*nat.DNat44_StaticMapping{port("10.96.0.1", 80), port("10.96.0.2", 80)}
	v.StMappings[0].LocalIps, v.StMappings[1].LocalIps = bad, bad
	err := ValidateDNat44(nat.DNAT44Key("svc"), v)
	checkInvalid(t, err, "st_mappings[0].local_ips[0].local_ip")
	checkInvalid(t, err, "st_mappings[1].local_ips[0].local_ip")
}

// TestEquivalentDNat44 compares values by the mappings they program: equal field by
// field, reordered, or written differently (an IPv4-mapped address, the probability of
// a single local) they are equivalent; a changed local is not.
func TestEquivalentDNat44(t *testing.T) {
	a := testDNAT("svc")
	if !EquivalentDNat44(a, testDNAT("svc")) {
		t.Error("equal values not equivalent")
	}
	b := testDNAT("svc")
	b.StMappings[0], b.StMappings[1] = b.StMappings[1], b.StMappings[0]
	b.StMappings[1].LocalIps[0].Probability = 7 // one local: VPP ignores it
	b.StMappings[2].LocalIps[0], b.StMappings[2].LocalIps[1] = b.StMappings[2].LocalIps[1], b.StMappings[2].LocalIps[0]
	b.StMappings[2].LocalIps[0].LocalIp = "::ffff:" + b.StMappings[2].LocalIps[0].LocalIp
	if !EquivalentDNat44(a, b) {
		t.Error("reordered value not equivalent")
	}
	b.StMappings[2].LocalIps[0].LocalPort++
	if EquivalentDNat44(a, b) {
		t.Error("changed local port not seen")
	}
	// entries changed in place (the order kept): the first pair that differs decides
	// when it is a different mapping; when it is the same mapping, the rest is compared
	c := testDNAT("svc")
	c.StMappings[0].LocalIps[0].Probability = 9 // one local: VPP ignores it
	if !EquivalentDNat44(a, c) {
		t.Error("value differing only in what VPP ignores, in its first entry, not equivalent")
	}
	c.StMappings[3].LocalIps[0].LocalIp = "10.1.1.8"
	if EquivalentDNat44(a, c) {
		t.Error("changed local of a later entry not seen after an equivalent first entry")
	}
	c = testDNAT("svc")
	c.StMappings[1].LocalIps[1].LocalIp = "10.1.2.4"
	if EquivalentDNat44(a, c) {
		t.Error("changed local of an LB mapping (same external key) not seen")
	}
	c.StMappings[1].LocalIps[1].LocalIp = "not an address"
	if EquivalentDNat44(a, c) {
		t.Error("an invalid local taken as equivalent")
	}
}

// TestDNat44CreateCompletesWhatAFailedUndoLeft: a create fails (one add refused) and
// the undo of an add that succeeded fails too, with an error other than BUSY, so that
// mapping stays in VPP. The retried create finds it existing and takes it for done
// instead of failing with "already exists" for good. A mapping on the same external
// endpoint that no failed undo left (another service's) is still an error.
func TestDNat44CreateCompletesWhatAFailedUndoLeft(t *testing.T) {
	e := newEnv(t)
	e.enableNAT()
	_, d := newDNat44(e.deps())
	v := &nat.DNat44{Label: "svc",
		StMappings: []*nat.DNat44_StaticMapping{{ExternalIp: "10.96.0.10", ExternalPort: 80, Protocol: nat.DNat44_TCP,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8080, 0, 0)}}},
		IdMappings: []*nat.DNat44_IdentityMapping{{IpAddress: "192.168.16.1", Port: 4789, Protocol: nat.DNat44_UDP}}}
	key := nat.DNAT44Key("svc")
	if err := e.sim.FailMessage("nat44_add_del_identity_mapping", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	// Once VPP has executed the static mapping's add (its request hook sees it before
	// the reply goes out), its next static mapping request fails: the undo of that add.
	staticAdded := make(chan struct{})
	var once sync.Once
	e.sim.SetRequestHook(func(name string) {
		if name == "nat44_add_del_static_mapping_v2" {
			once.Do(func() { close(staticAdded) })
		}
	})
	defer e.sim.SetRequestHook(nil)
	wait := d.createAsync(key, v)
	select {
	case <-staticAdded:
	case <-time.After(10 * time.Second):
		t.Fatal("the static mapping's add never reached VPP")
	}
	if err := e.sim.FailMessage("nat44_add_del_static_mapping_v2", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := wait(); err == nil || !strings.Contains(err.Error(), "undo") {
		t.Fatalf("create with a failed add and a failed undo: %v, want both errors", err)
	}
	if n := len(e.sim.NAT().StaticMappings); n != 1 {
		t.Fatalf("%d static mappings in VPP, want the one the failed undo left", n)
	}
	// another service on the same endpoint: VPP's error stays
	other := &nat.DNat44{Label: "other", StMappings: v.StMappings}
	if err := d.update(nil, other); !vppbase.IsRetval(err, govppapi.VALUE_EXIST) {
		t.Errorf("create over another service's mapping: %v, want VPP's VALUE_EXIST", err)
	}
	if err := d.update(nil, v); err != nil {
		t.Fatalf("retried create: %v", err)
	}
	expectRetrieved(t, dnatDescriptor44(e.deps()), map[string]proto.Message{key: v})
}

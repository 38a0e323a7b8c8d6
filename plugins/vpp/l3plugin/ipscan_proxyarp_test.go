package l3plugin

import (
	"net/netip"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestIPScanNeighborValidate(t *testing.T) {
	tests := []struct {
		name  string
		v     *l3.IPScanNeighbor
		field string
	}{
		{"ok", &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_BOTH, ScanInterval: 1, StaleThreshold: 4}, ""},
		{"unknown mode", &l3.IPScanNeighbor{Mode: 8}, "mode"},
		{"threshold overflows max_age", &l3.IPScanNeighbor{StaleThreshold: 1 << 30}, "stale_threshold"},
		{"interval overflows max_age", &l3.IPScanNeighbor{ScanInterval: 1 << 28}, "scan_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkInvalid(t, ValidateIPScanNeighbor(tt.v), tt.field) })
	}
}

func TestNeighborAgingMapping(t *testing.T) {
	on := func(sec uint32) AgingConfig { return AgingConfig{MaxAge: sec, Recycle: true} }
	tests := []struct {
		name string
		v    *l3.IPScanNeighbor
		want [2]AgingConfig
	}{
		{"disabled", &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_DISABLED, StaleThreshold: 9}, [2]AgingConfig{}},
		{"IPv4 with threshold", &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_IPV4, StaleThreshold: 5}, [2]AgingConfig{on(300), {}}},
		{"IPv6 from interval", &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_IPV6, ScanInterval: 2}, [2]AgingConfig{{}, on(480)}},
		{"both with defaults", &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_BOTH}, [2]AgingConfig{on(240), on(240)}},
		{"unmapped fields ignored", &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_BOTH, MaxProcTime: 20, MaxUpdate: 10, ScanIntDelay: 1}, [2]AgingConfig{on(240), on(240)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeighborAging(tt.v); got != tt.want {
				t.Errorf("NeighborAging = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// agingInVPP reads the neighbor config of both families.
func agingInVPP(t *testing.T, e *env) [2]ip_neighbor.IPNeighborConfigGetReply {
	t.Helper()
	var out [2]ip_neighbor.IPNeighborConfigGetReply
	for af := range out {
		if err := vppbase.Call(e.ch, &ip_neighbor.IPNeighborConfigGet{Af: ip_types.AddressFamily(af)}, &out[af]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestIPScanNeighborCreateUpdateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	d := NewIPScanNeighborDescriptor(e.deps())
	before := agingInVPP(t, e)
	if got := retrieved(t, NewIPScanNeighborDescriptor(e.freshDeps()), nil); len(got) != 0 {
		t.Errorf("VPP defaults retrieved as %v", got)
	}
	v := &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_BOTH, ScanInterval: 1, StaleThreshold: 4, MaxProcTime: 20}
	create(t, d, map[string]proto.Message{l3.IPScanNeighborKey: v})
	got := agingInVPP(t, e)
	for af := range got {
		if got[af].MaxAge != 240 || !got[af].Recycle || got[af].MaxNumber != before[af].MaxNumber {
			t.Errorf("af %d: %+v (max_number before %d)", af, got[af], before[af].MaxNumber)
		}
	}
	expectRetrieved(t, NewIPScanNeighborDescriptor(e.freshDeps()), map[string]proto.Message{l3.IPScanNeighborKey: v})
	// without NB: what VPP can tell
	want := &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_BOTH, StaleThreshold: 4}
	if g := retrieved(t, NewIPScanNeighborDescriptor(e.freshDeps()), nil)[l3.IPScanNeighborKey]; !proto.Equal(g, want) {
		t.Errorf("retrieve without NB = %v, want %v", g, want)
	}

	v2 := &l3.IPScanNeighbor{Mode: l3.IPScanNeighbor_IPV6, StaleThreshold: 10}
	if _, err := d.Update(l3.IPScanNeighborKey, v, v2, nil); err != nil {
		t.Fatal(err)
	}
	if got := agingInVPP(t, e); got[0].MaxAge != 0 || got[0].Recycle || got[1].MaxAge != 600 {
		t.Errorf("after update: %+v", got)
	}
	if err := d.Delete(l3.IPScanNeighborKey, v2, nil); err != nil {
		t.Fatal(err)
	}
	if got := agingInVPP(t, e); got != before {
		t.Errorf("after delete %+v, want VPP's defaults %+v", got, before)
	}
	// DISABLED is VPP's default state: it exists as soon as NB asks for it
	disabled := map[string]proto.Message{l3.IPScanNeighborKey: &l3.IPScanNeighbor{}}
	expectRetrieved(t, NewIPScanNeighborDescriptor(e.freshDeps()), disabled)

	if err := e.sim.FailMessage("ip_neighbor_config", int32(govppapi.INVALID_VALUE), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(l3.IPScanNeighborKey, v); !vppbase.IsRetval(err, govppapi.INVALID_VALUE) {
		t.Errorf("create error %v", err)
	}
}

func TestProxyARPCreateUpdateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	create(t, NewVrfTableDescriptor(e.deps()), map[string]proto.Message{l3.VrfTableKey(3, l3.VrfTable_IPV4): &l3.VrfTable{Id: 3}})
	lo1 := e.loopback("lo1")
	lo2 := e.loopback("lo2")
	d := NewProxyARPDescriptor(e.deps())
	ifd := NewProxyARPInterfaceDescriptor(e.deps())
	v := &l3.ProxyARP{
		Interfaces: []*l3.ProxyARP_Interface{{Name: "lo1"}, {Name: "lo2"}},
		Ranges: []*l3.ProxyARP_Range{{FirstIpAddr: "10.1.0.1", LastIpAddr: "10.1.0.254"},
			{FirstIpAddr: "10.3.0.1", LastIpAddr: "10.3.0.9", VrfId: 3}},
	}
	if err := d.Validate(l3.ProxyARPKey, v); err != nil {
		t.Fatal(err)
	}
	if deps := d.Dependencies(l3.ProxyARPKey, v); len(deps) != 1 || deps[0].Key != l3.VrfTableKey(3, l3.VrfTable_IPV4) {
		t.Errorf("dependencies %v", deps)
	}
	create(t, d, map[string]proto.Message{l3.ProxyARPKey: v})
	derived := d.DerivedValues(l3.ProxyARPKey, v)
	if len(derived) != 2 || derived[0].Key != ProxyARPInterfaceKey("lo1") {
		t.Fatalf("derived %v", derived)
	}
	for _, kv := range derived {
		if !ifd.KeySelector(kv.Key) {
			t.Fatalf("%s not selected by the interface descriptor", kv.Key)
		}
		if deps := ifd.Dependencies(kv.Key, kv.Value); len(deps) != 1 || deps[0].Key != ifmodel.InterfaceKey(kv.Value.(*l3.ProxyARP_Interface).Name) {
			t.Errorf("dependencies of %s: %v", kv.Key, deps)
		}
		if _, err := ifd.Create(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.sim.ProxyARPRanges(); len(r) != 2 || r[1].VRF != 3 || r[1].High.String() != "10.3.0.9" {
		t.Errorf("VPP ranges %+v", r)
	}
	for _, sw := range []uint32{lo1, lo2} {
		if i, _ := e.sim.InterfaceByTag(map[uint32]string{lo1: "lo1", lo2: "lo2"}[sw]); !i.ProxyARP {
			t.Errorf("proxy ARP not enabled on %d", sw)
		}
	}
	expectRetrieved(t, NewProxyARPDescriptor(e.freshDeps()), map[string]proto.Message{l3.ProxyARPKey: v})

	// update: one range replaced, one kept; only the difference is sent
	v2 := proto.Clone(v).(*l3.ProxyARP)
	v2.Ranges[0] = &l3.ProxyARP_Range{FirstIpAddr: "10.2.0.1", LastIpAddr: "10.2.0.2"}
	e.sim.ResetMessageCounts()
	if _, err := d.Update(l3.ProxyARPKey, v, v2, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.MessageCount("proxy_arp_add_del"); n != 2 {
		t.Errorf("update sent %d proxy_arp_add_del, want 2", n)
	}
	if !d.ValueComparator(l3.ProxyARPKey, v2, &l3.ProxyARP{Interfaces: v2.Interfaces, Ranges: []*l3.ProxyARP_Range{v2.Ranges[1], v2.Ranges[0]}}) {
		t.Error("order of ranges should not matter")
	}

	// missing VRF is VPP's error
	bad := &l3.ProxyARP{Ranges: []*l3.ProxyARP_Range{{FirstIpAddr: "10.9.0.1", LastIpAddr: "10.9.0.2", VrfId: 9}}}
	if _, err := d.Create(l3.ProxyARPKey, bad); !vppbase.IsRetval(err, govppapi.NO_SUCH_FIB) {
		t.Errorf("range in missing VRF: %v", err)
	}

	for _, kv := range derived {
		if err := ifd.Delete(kv.Key, kv.Value, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Delete(l3.ProxyARPKey, v2, nil); err != nil {
		t.Fatal(err)
	}
	if r := e.sim.ProxyARPRanges(); len(r) != 0 {
		t.Errorf("ranges left: %+v", r)
	}
	if got := retrieved(t, NewProxyARPDescriptor(e.freshDeps()), nil); len(got) != 0 {
		t.Errorf("retrieved after delete: %v", got)
	}
	// an empty ProxyARP exists as soon as NB asks for it
	expectRetrieved(t, NewProxyARPDescriptor(e.freshDeps()), map[string]proto.Message{l3.ProxyARPKey: &l3.ProxyARP{}})
}

func TestProxyARPValidate(t *testing.T) {
	tests := []struct {
		name  string
		v     *l3.ProxyARP
		field string
	}{
		{"ok", &l3.ProxyARP{Ranges: []*l3.ProxyARP_Range{{FirstIpAddr: "1.1.1.1", LastIpAddr: "1.1.1.1"}}}, ""},
		{"IPv6", &l3.ProxyARP{Ranges: []*l3.ProxyARP_Range{{FirstIpAddr: "fd::1", LastIpAddr: "1.1.1.1"}}}, "ranges[0].first_ip_addr"},
		{"reversed", &l3.ProxyARP{Ranges: []*l3.ProxyARP_Range{{FirstIpAddr: "1.1.1.2", LastIpAddr: "1.1.1.1"}}}, "ranges[0]"},
		{"twice", &l3.ProxyARP{Ranges: []*l3.ProxyARP_Range{{FirstIpAddr: "1.1.1.1", LastIpAddr: "1.1.1.1"}, {FirstIpAddr: "1.1.1.1", LastIpAddr: "1.1.1.1"}}}, "ranges[1]"},
		{"empty interface", &l3.ProxyARP{Interfaces: []*l3.ProxyARP_Interface{{}}}, "interfaces[0].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkInvalid(t, ValidateProxyARP(tt.v), tt.field) })
	}
	if _, ok := ParseProxyARPInterfaceKey(ProxyARPInterfaceKey("Gig0/8/0")); !ok {
		t.Error("interface key does not parse")
	}
}

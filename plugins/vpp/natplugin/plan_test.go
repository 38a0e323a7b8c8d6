package natplugin

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// The planner's tests: a change of a DNat44 goes in, the VPP requests come out, in
// order, with no VPP and no scheduler around.

// a4 is the VPP form of an IPv4 address.
func a4(s string) ip_types.IP4Address { return netip.MustParseAddr(s).As4() }

// testResolve knows one interface, eth0 at sw_if_index 5.
func testResolve(name, what string) (uint32, error) {
	if name == "eth0" {
		return 5, nil
	}
	return 0, fmt.Errorf("%s: interface %s not found", what, name)
}

const (
	out2in   = nat_types.NAT_IS_OUT2IN_ONLY
	addrOnly = nat_types.NAT_IS_ADDR_ONLY
	noSwIf   = interface_types.InterfaceIndex(noIndex)
)

// planned is one step as the tests see it: the message and whether a missing entry
// counts as done.
type planned struct {
	msg       govppapi.Message
	missingOK bool
}

func (p planned) String() string { return fmt.Sprintf("%T%+v missingOK=%v", p.msg, p.msg, p.missingOK) }

func plannedOf(steps []step) []planned {
	out := make([]planned, len(steps))
	for i, s := range steps {
		out[i] = planned{msg: s.do.req, missingOK: s.missingOK}
	}
	return out
}

// sm builds a static mapping of the model.
func sm(ip string, port uint32, proto nat.DNat44_Protocol, locals ...*nat.DNat44_StaticMapping_LocalIP) *nat.DNat44_StaticMapping {
	return &nat.DNat44_StaticMapping{ExternalIp: ip, ExternalPort: port, Protocol: proto, LocalIps: locals}
}

// with returns a copy of m changed by f.
func with(m *nat.DNat44_StaticMapping, f func(*nat.DNat44_StaticMapping)) *nat.DNat44_StaticMapping {
	c := cloneStatic(m)
	f(c)
	return c
}

func cloneStatic(m *nat.DNat44_StaticMapping) *nat.DNat44_StaticMapping {
	c := &nat.DNat44_StaticMapping{ExternalInterface: m.ExternalInterface, ExternalIp: m.ExternalIp, ExternalPort: m.ExternalPort,
		Protocol: m.Protocol, TwiceNat: m.TwiceNat, TwiceNatPoolIp: m.TwiceNatPoolIp, SessionAffinity: m.SessionAffinity}
	for _, l := range m.LocalIps {
		c.LocalIps = append(c.LocalIps, lip(l.LocalIp, l.LocalPort, l.VrfId, l.Probability))
	}
	return c
}

func dnat(label string, sts []*nat.DNat44_StaticMapping, ids ...*nat.DNat44_IdentityMapping) *nat.DNat44 {
	return &nat.DNat44{Label: label, StMappings: sts, IdMappings: ids}
}

func sts(ms ...*nat.DNat44_StaticMapping) []*nat.DNat44_StaticMapping { return ms }

// Messages of the table, written out field by field.
var (
	// web: 10.96.0.10:80/TCP -> 10.1.1.2:8080 in VRF 2, self-twice-NAT
	webSingle = sm("10.96.0.10", 80, nat.DNat44_TCP, lip("10.1.1.2", 8080, 2, 0))
	webMsg    = func(isAdd bool) *nat44_ed.Nat44AddDelStaticMappingV2 {
		return &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: isAdd, Flags: out2in, LocalIPAddress: a4("10.1.1.2"),
			ExternalIPAddress: a4("10.96.0.10"), Protocol: 6, LocalPort: 8080, ExternalPort: 80, ExternalSwIfIndex: noSwIf,
			VrfID: 2, Tag: "svc"}
	}
	// dns: 10.96.0.10:53/UDP load-balanced to two locals (given unsorted), affinity 300
	dnsLB = &nat.DNat44_StaticMapping{ExternalIp: "10.96.0.10", ExternalPort: 53, Protocol: nat.DNat44_UDP, SessionAffinity: 300,
		LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.2.3", 5353, 0, 2), lip("10.1.1.3", 5353, 2, 1)}}
	dnsLocal3 = nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.1.3"), Port: 5353, Probability: 1, VrfID: 2}
	dnsLocal4 = nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.2.3"), Port: 5353, Probability: 2}
	dnsLocal5 = nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.2.5"), Port: 5353, Probability: 2}
	dnsMsg    = func(isAdd bool, locals ...nat44_ed.Nat44LbAddrPort) *nat44_ed.Nat44AddDelLbStaticMapping {
		return &nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: isAdd, Flags: out2in, ExternalAddr: a4("10.96.0.10"), ExternalPort: 53,
			Protocol: 17, Affinity: 300, Tag: "svc", LocalNum: uint32(len(locals)), Locals: locals}
	}
	dnsLocalMsg = func(isAdd bool, l nat44_ed.Nat44LbAddrPort) *nat44_ed.Nat44LbStaticMappingAddDelLocal {
		return &nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: isAdd, ExternalAddr: a4("10.96.0.10"), ExternalPort: 53,
			Protocol: 17, Local: l}
	}
)

func TestPlanChange(t *testing.T) {
	vxlan := &nat.DNat44_IdentityMapping{IpAddress: "192.168.16.1", Port: 4789, Protocol: nat.DNat44_UDP}
	vxlanMsg := func(isAdd bool) *nat44_ed.Nat44AddDelIdentityMapping {
		return &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: isAdd, IPAddress: a4("192.168.16.1"), Protocol: 17, Port: 4789,
			SwIfIndex: noSwIf, Tag: "svc"}
	}
	tests := []struct {
		name     string
		from, to *nat.DNat44
		want     []planned
	}{
		{
			name: "create a single-local mapping: a static mapping, out2in-only, in the local's VRF",
			to:   dnat("svc", sts(webSingle)),
			want: []planned{{msg: webMsg(true)}},
		},
		{
			name: "create with twice-NAT SELF and a pool address",
			to: dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) {
				m.TwiceNat, m.TwiceNatPoolIp = nat.DNat44_StaticMapping_SELF, "10.200.0.1"
			}))),
			want: []planned{{msg: func() govppapi.Message {
				m := webMsg(true)
				m.Flags |= nat_types.NAT_IS_SELF_TWICE_NAT
				m.MatchPool, m.PoolIPAddress = true, a4("10.200.0.1")
				return m
			}()}},
		},
		{
			name: "create with twice-NAT ENABLED and session affinity (ignored for one local), VRF ~0 is VRF 0",
			to: dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) {
				m.TwiceNat, m.SessionAffinity, m.LocalIps[0].VrfId = nat.DNat44_StaticMapping_ENABLED, 60, noIndex
			}))),
			want: []planned{{msg: func() govppapi.Message {
				m := webMsg(true)
				m.Flags |= nat_types.NAT_IS_TWICE_NAT
				m.VrfID = 0
				return m
			}()}},
		},
		{
			name: "create an address-only mapping: no protocol, no ports",
			to:   dnat("svc", sts(sm("192.168.16.10", 0, nat.DNat44_UDP, lip("10.1.1.7", 0, 2, 0)))),
			want: []planned{{msg: &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: out2in | addrOnly,
				LocalIPAddress: a4("10.1.1.7"), ExternalIPAddress: a4("192.168.16.10"), ExternalSwIfIndex: noSwIf, VrfID: 2, Tag: "svc"}}},
		},
		{
			name: "create a mapping of an interface's address: its sw_if_index, no external address",
			to: dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) {
				m.ExternalIp, m.ExternalInterface = "", "eth0"
			}))),
			want: []planned{{msg: func() govppapi.Message {
				m := webMsg(true)
				m.ExternalIPAddress, m.ExternalSwIfIndex = ip_types.IP4Address{}, 5
				return m
			}()}},
		},
		{
			name: "create an LB mapping: locals sorted, with probabilities and affinity",
			to:   dnat("svc", sts(dnsLB)),
			want: []planned{{msg: dnsMsg(true, dnsLocal3, dnsLocal4)}},
		},
		{
			name: "create identity mappings: with a port, and address-only in VRF ~0 (VRF 0)",
			to: dnat("svc", nil, vxlan,
				&nat.DNat44_IdentityMapping{IpAddress: "192.168.16.1", VrfId: noIndex, Protocol: nat.DNat44_UDP}),
			want: []planned{
				{msg: vxlanMsg(true)},
				{msg: &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: addrOnly, IPAddress: a4("192.168.16.1"),
					SwIfIndex: noSwIf, Tag: "svc"}},
			},
		},
		{
			name: "create: static mappings first, then identities; a long label's tag is its start and hash",
			to:   dnat(strings.Repeat("x", 70), sts(webSingle), vxlan),
			want: func() []planned {
				w, v := webMsg(true), vxlanMsg(true)
				w.Tag, v.Tag = Tag(strings.Repeat("x", 70)), Tag(strings.Repeat("x", 70))
				return []planned{{msg: w}, {msg: v}}
			}(),
		},
		{
			name: "delete: every mapping deleted, a missing one counts as done",
			from: dnat("svc", sts(webSingle, dnsLB), vxlan),
			want: []planned{{msg: webMsg(false), missingOK: true}, {msg: dnsMsg(false, dnsLocal3, dnsLocal4), missingOK: true},
				{msg: vxlanMsg(false), missingOK: true}},
		},
		{
			name: "unchanged: nothing",
			from: dnat("svc", sts(webSingle, dnsLB), vxlan),
			to:   dnat("svc", sts(cloneStatic(webSingle), cloneStatic(dnsLB)), vxlan),
		},
		{
			name: "reordered mappings and locals: nothing",
			from: dnat("svc", sts(webSingle, dnsLB)),
			to: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
				m.LocalIps[0], m.LocalIps[1] = m.LocalIps[1], m.LocalIps[0]
			}), webSingle)),
		},
		{
			name: "what VPP ignores changed (affinity of one local): nothing",
			from: dnat("svc", sts(webSingle)),
			to:   dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) { m.SessionAffinity = 60 }))),
		},
		{
			name: "a mapping added: its add only",
			from: dnat("svc", sts(webSingle)),
			to:   dnat("svc", sts(webSingle, dnsLB)),
			want: []planned{{msg: dnsMsg(true, dnsLocal3, dnsLocal4)}},
		},
		{
			name: "a mapping removed: its delete only",
			from: dnat("svc", sts(webSingle, dnsLB)),
			to:   dnat("svc", sts(dnsLB)),
			want: []planned{{msg: webMsg(false), missingOK: true}},
		},
		{
			name: "a local added to an LB mapping: that local only, sessions of the others kept",
			from: dnat("svc", sts(dnsLB)),
			to: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
				m.LocalIps = append(m.LocalIps, lip("10.1.2.5", 5353, 0, 2))
			}))),
			want: []planned{{msg: dnsLocalMsg(true, dnsLocal5)}},
		},
		{
			name: "a local removed from an LB mapping of three: its removal only",
			from: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
				m.LocalIps = append(m.LocalIps, lip("10.1.2.5", 5353, 0, 2))
			}))),
			to:   dnat("svc", sts(dnsLB)),
			want: []planned{{msg: dnsLocalMsg(false, dnsLocal5), missingOK: true}},
		},
		{
			name: "a local of an LB mapping replaced: the new one added before the old one is removed",
			from: dnat("svc", sts(dnsLB)),
			to: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
				m.LocalIps[0] = lip("10.1.2.5", 5353, 0, 2)
			}))),
			want: []planned{{msg: dnsLocalMsg(true, dnsLocal5)}, {msg: dnsLocalMsg(false, dnsLocal4), missingOK: true}},
		},
		{
			name: "the probability of a local changed: the LB mapping deleted and added again",
			from: dnat("svc", sts(dnsLB)),
			to:   dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) { m.LocalIps[0].Probability = 5 }))),
			want: []planned{{msg: dnsMsg(false, dnsLocal3, dnsLocal4), missingOK: true},
				{msg: dnsMsg(true, dnsLocal3, nat44_ed.Nat44LbAddrPort{Addr: a4("10.1.2.3"), Port: 5353, Probability: 5})}},
		},
		{
			name: "the affinity of an LB mapping changed: deleted and added again",
			from: dnat("svc", sts(dnsLB)),
			to:   dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) { m.SessionAffinity = 0 }))),
			want: []planned{{msg: dnsMsg(false, dnsLocal3, dnsLocal4), missingOK: true}, {msg: func() govppapi.Message {
				m := dnsMsg(true, dnsLocal3, dnsLocal4)
				m.Affinity = 0
				return m
			}()}},
		},
		{
			name: "twice-NAT of an LB mapping changed: deleted and added again",
			from: dnat("svc", sts(dnsLB)),
			to: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
				m.TwiceNat = nat.DNat44_StaticMapping_ENABLED
			}))),
			want: []planned{{msg: dnsMsg(false, dnsLocal3, dnsLocal4), missingOK: true}, {msg: func() govppapi.Message {
				m := dnsMsg(true, dnsLocal3, dnsLocal4)
				m.Flags |= nat_types.NAT_IS_TWICE_NAT
				return m
			}()}},
		},
		{
			name: "the local of a single-local mapping changed: deleted and added again",
			from: dnat("svc", sts(webSingle)),
			to:   dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) { m.LocalIps[0].LocalPort = 9090 }))),
			want: []planned{{msg: webMsg(false), missingOK: true}, {msg: func() govppapi.Message {
				m := webMsg(true)
				m.LocalPort = 9090
				return m
			}()}},
		},
		{
			name: "the protocol changed: another mapping, the old deleted and the new added",
			from: dnat("svc", sts(webSingle)),
			to:   dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) { m.Protocol = nat.DNat44_UDP }))),
			want: []planned{{msg: webMsg(false), missingOK: true}, {msg: func() govppapi.Message {
				m := webMsg(true)
				m.Protocol = 17
				return m
			}()}},
		},
		{
			name: "the external port changed: the old deleted and the new added",
			from: dnat("svc", sts(webSingle)),
			to:   dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) { m.ExternalPort = 81 }))),
			want: []planned{{msg: webMsg(false), missingOK: true}, {msg: func() govppapi.Message {
				m := webMsg(true)
				m.ExternalPort = 81
				return m
			}()}},
		},
		{
			name: "a single-local mapping becomes an LB mapping: the static mapping deleted, the LB one added",
			from: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) { m.LocalIps = m.LocalIps[1:] }))),
			to:   dnat("svc", sts(dnsLB)),
			want: []planned{
				{msg: &nat44_ed.Nat44AddDelStaticMappingV2{Flags: out2in, LocalIPAddress: a4("10.1.1.3"),
					ExternalIPAddress: a4("10.96.0.10"), Protocol: 17, LocalPort: 5353, ExternalPort: 53, ExternalSwIfIndex: noSwIf,
					VrfID: 2, Tag: "svc"}, missingOK: true},
				{msg: dnsMsg(true, dnsLocal3, dnsLocal4)},
			},
		},
		{
			name: "an LB mapping becomes a single-local one: the LB mapping deleted, the static one added",
			from: dnat("svc", sts(dnsLB)),
			to:   dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) { m.LocalIps = m.LocalIps[:1] }))),
			want: []planned{
				{msg: dnsMsg(false, dnsLocal3, dnsLocal4), missingOK: true},
				{msg: &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: out2in, LocalIPAddress: a4("10.1.2.3"),
					ExternalIPAddress: a4("10.96.0.10"), Protocol: 17, LocalPort: 5353, ExternalPort: 53, ExternalSwIfIndex: noSwIf,
					Tag: "svc"}},
			},
		},
		{
			name: "the VRF of an identity mapping changed: another mapping, deleted and added",
			from: dnat("svc", nil, vxlan),
			to:   dnat("svc", nil, &nat.DNat44_IdentityMapping{IpAddress: "192.168.16.1", Port: 4789, Protocol: nat.DNat44_UDP, VrfId: 3}),
			want: []planned{{msg: vxlanMsg(false), missingOK: true}, {msg: func() govppapi.Message {
				m := vxlanMsg(true)
				m.VrfID = 3
				return m
			}()}},
		},
		{
			name: "deletes first, then adds, then local changes, whatever the order of the entries",
			from: dnat("svc", sts(dnsLB, webSingle), vxlan),
			to: dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
				m.LocalIps = append(m.LocalIps, lip("10.1.2.5", 5353, 0, 2))
			}), with(webSingle, func(m *nat.DNat44_StaticMapping) { m.ExternalPort = 81 }))),
			want: []planned{
				{msg: webMsg(false), missingOK: true},
				{msg: vxlanMsg(false), missingOK: true},
				{msg: func() govppapi.Message {
					m := webMsg(true)
					m.ExternalPort = 81
					return m
				}()},
				{msg: dnsLocalMsg(true, dnsLocal5)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, validated []mapping) {
				t.Helper()
				steps, err := planChange(tt.from, tt.to, validated, testResolve)
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if got := plannedOf(steps); !reflect.DeepEqual(got, tt.want) && (len(got) > 0 || len(tt.want) > 0) {
					t.Errorf("%s: planned\n%v\nwant\n%v", how, got, tt.want)
				}
			}
			check("parsing the new value", nil)
			if tt.to != nil {
				// the same plan from what Validate parsed of the new value
				validated, err := validDNat44("", tt.to, nil)
				if err != nil {
					t.Fatal(err)
				}
				check("with what Validate parsed", validated)
			}
		})
	}
}

// TestPlanChangeNeedsKnownInterfaces: a mapping of an interface the resolver does not
// know cannot be planned; the error names the request.
func TestPlanChangeNeedsKnownInterfaces(t *testing.T) {
	to := dnat("svc", sts(with(webSingle, func(m *nat.DNat44_StaticMapping) { m.ExternalIp, m.ExternalInterface = "", "eth9" })))
	_, err := planChange(nil, to, nil, testResolve)
	if err == nil || !strings.Contains(err.Error(), "add static mapping if:eth9:80/TCP") || !strings.Contains(err.Error(), "eth9 not found") {
		t.Errorf("planChange = %v, want the add of the mapping of eth9 named, with the resolver's error", err)
	}
}

// TestPlanUndo: the undo of a failed call reverts the steps that succeeded, last first,
// each with the opposite request; failed steps are left alone.
func TestPlanUndo(t *testing.T) {
	from := dnat("svc", sts(webSingle, dnsLB))
	to := dnat("svc", sts(with(dnsLB, func(m *nat.DNat44_StaticMapping) {
		m.LocalIps[0] = lip("10.1.2.5", 5353, 0, 2)
	})), vxlanOf())
	steps, err := planChange(from, to, nil, testResolve)
	if err != nil {
		t.Fatal(err)
	}
	// delete web, add vxlan, add local 5, remove local 4
	if len(steps) != 4 {
		t.Fatalf("planned %v, want 4 steps", plannedOf(steps))
	}
	failed := errors.New("failed")
	undo, undone := planUndo("svc", steps, []error{nil, failed, nil, nil}, testResolve)
	var got []govppapi.Message
	for _, r := range undo {
		got = append(got, r.req)
	}
	want := []govppapi.Message{dnsLocalMsg(true, dnsLocal4), dnsLocalMsg(false, dnsLocal5), webMsg(true)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("undo = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(undone, []int{3, 2, 0}) {
		t.Errorf("undone steps = %v, want [3 2 0]", undone)
	}
	if undo, _ := planUndo("svc", steps, []error{failed, failed, failed, failed}, testResolve); len(undo) != 0 {
		t.Errorf("undo of a call where everything failed = %d requests, want none", len(undo))
	}
}

func vxlanOf() *nat.DNat44_IdentityMapping {
	return &nat.DNat44_IdentityMapping{IpAddress: "192.168.16.1", Port: 4789, Protocol: nat.DNat44_UDP}
}

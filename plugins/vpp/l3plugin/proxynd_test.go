package l3plugin

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_types"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func proxyNDKey(v *l3.ProxyNDEntry) string { return l3.ProxyNDEntryKey(v.Interface, v.IpAddress) }

// vppProxyND lists VPP's proxy ND entries (ip6nd_proxy_dump) as
// "<sw_if_index> <ip>", sorted.
func (e *env) vppProxyND() []string {
	e.t.Helper()
	list, err := govppmux.Dump[ip6_nd.IP6ndProxyDetails](e.ch, &ip6_nd.IP6ndProxyDump{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range list {
		out = append(out, fmt.Sprintf("%d %s", d.SwIfIndex, netip.AddrFrom16(d.IP)))
	}
	slices.Sort(out)
	return out
}

func TestProxyNDCreateRetrieveDelete(t *testing.T) {
	e := newEnv(t)
	nic := e.loopback("nic", "2001:db8:1::10/64")
	tap := e.loopback("tap", "fd00:30::1/64")
	d := NewProxyNDDescriptor(e.deps())
	gw := &l3.ProxyNDEntry{Interface: "nic", IpAddress: "2001:DB8:1::0001"}
	peer := &l3.ProxyNDEntry{Interface: "nic", IpAddress: "2001:db8:1::20"}
	host := &l3.ProxyNDEntry{Interface: "tap", IpAddress: "fd00:30::2"}
	values := map[string]proto.Message{proxyNDKey(gw): gw, proxyNDKey(peer): peer, proxyNDKey(host): host}
	create(t, d, values)
	want := []string{fmt.Sprintf("%d 2001:db8:1::1", nic), fmt.Sprintf("%d 2001:db8:1::20", nic), fmt.Sprintf("%d fd00:30::2", tap)}
	slices.Sort(want)
	if got := e.vppProxyND(); !slices.Equal(got, want) {
		t.Fatalf("VPP's proxy ND entries %v, want %v", got, want)
	}
	// A restarted agent reads them back as NB asks for them (the address as NB spelt it).
	expectRetrieved(t, NewProxyNDDescriptor(e.freshDeps()), values)

	if err := d.Delete(proxyNDKey(peer), peer, nil); err != nil {
		t.Fatal(err)
	}
	delete(values, proxyNDKey(peer))
	expectRetrieved(t, NewProxyNDDescriptor(e.freshDeps()), values)
	for _, k := range sortedKeys(values) {
		if err := d.Delete(k, values[k], nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.vppProxyND(); len(got) != 0 {
		t.Errorf("VPP's proxy ND entries after delete: %v", got)
	}
}

func TestProxyNDLeftOnAnAgentInterfaceIsTheAgentsAndOthersAreNot(t *testing.T) {
	e := newEnv(t)
	e.loopback("nic", "2001:db8:1::10/64")
	d := NewProxyNDDescriptor(e.deps())
	stale := &l3.ProxyNDEntry{Interface: "nic", IpAddress: "2001:db8:1::7"}
	create(t, d, map[string]proto.Message{proxyNDKey(stale): stale})
	// An entry on an interface the agent does not know (configured by someone else).
	other := e.loopback("other", "2001:db8:2::10/64")
	delete(e.ifs, "other")
	req := &ip6_nd.IP6ndProxyAddDel{SwIfIndex: interface_types.InterfaceIndex(other), IsAdd: true,
		IP: [16]byte(mustAddr("2001:db8:2::9").AsSlice())}
	if err := vppbase.Call(e.ch, req, &ip6_nd.IP6ndProxyAddDelReply{}); err != nil {
		t.Fatal(err)
	}
	// A restarted agent that no longer wants the stale entry sees it as its own, so a
	// full resync removes it; the other one is left alone.
	got, err := NewProxyNDDescriptor(e.freshDeps()).Retrieve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != proxyNDKey(stale) || got[0].Origin != kvapi.FromNB {
		t.Fatalf("Retrieve = %+v, want only the stale entry, with origin NB", got)
	}
}

func TestProxyNDValidateDependenciesErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		v     *l3.ProxyNDEntry
		field string
		text  string
	}{
		{"ok", &l3.ProxyNDEntry{Interface: "x", IpAddress: "2001:db8::1"}, "", ""},
		{"no interface", &l3.ProxyNDEntry{IpAddress: "2001:db8::1"}, "interface", "empty interface"},
		{"bad IP", &l3.ProxyNDEntry{Interface: "x", IpAddress: "2001:db8::g"}, "ip_address", `"2001:db8::g" is not an IP address`},
		{"IPv4", &l3.ProxyNDEntry{Interface: "x", IpAddress: "10.0.0.1"}, "ip_address", `"10.0.0.1" is not an IPv6 address`},
		{"link-local", &l3.ProxyNDEntry{Interface: "x", IpAddress: "fe80::1"}, "ip_address", `"fe80::1" is link-local`},
		{"multicast", &l3.ProxyNDEntry{Interface: "x", IpAddress: "ff02::1"}, "ip_address", "not a unicast address"},
		{"unspecified", &l3.ProxyNDEntry{Interface: "x", IpAddress: "::"}, "ip_address", "not a unicast address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := ""
			if tt.field == "" {
				key = proxyNDKey(tt.v)
			}
			err := ValidateProxyND(key, tt.v)
			checkInvalid(t, err, tt.field)
			if err != nil && !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q does not say %q", err, tt.text)
			}
		})
	}
	if err := ValidateProxyND(l3.ProxyNDEntryKey("y", "2001:db8::1"), &l3.ProxyNDEntry{Interface: "x", IpAddress: "2001:db8::1"}); err == nil {
		t.Error("a key of another entry validated")
	}
	deps := ProxyNDDependencies(&l3.ProxyNDEntry{Interface: "tap1", IpAddress: "2001:db8::1"})
	if len(deps) != 1 || deps[0].Key != ifmodel.InterfaceKey("tap1") || deps[0].Label != DepInterfaceExists {
		t.Errorf("dependencies %v", deps)
	}

	e := newEnv(t)
	e.loopback("lo1")
	d := NewProxyNDDescriptor(e.deps())
	v := &l3.ProxyNDEntry{Interface: "lo1", IpAddress: "2001:db8::1"}
	if err := e.sim.FailMessage("ip6nd_proxy_add_del", int32(govppapi.INVALID_VALUE), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(proxyNDKey(v), v); !vppbase.IsRetval(err, govppapi.INVALID_VALUE) {
		t.Errorf("create error %v, want INVALID_VALUE", err)
	}
	if got := e.vppProxyND(); len(got) != 0 {
		t.Errorf("a failed create left %v in VPP", got)
	}
	// an interface the agent does not know yet
	missing := &l3.ProxyNDEntry{Interface: "nope", IpAddress: "2001:db8::1"}
	if _, err := d.Create(proxyNDKey(missing), missing); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("create on an unknown interface: %v", err)
	}
}

// nsFrame builds a neighbour solicitation from src (MAC srcMAC, given as the source
// link-layer option) for target, to target's solicited-node group.
func nsFrame(t *testing.T, srcMAC net.HardwareAddr, src, target netip.Addr) []byte {
	t.Helper()
	t16 := target.As16()
	group := netip.AddrFrom16([16]byte{0: 0xff, 1: 0x02, 11: 1, 12: 0xff, 13: t16[13], 14: t16[14], 15: t16[15]})
	body := append(append(make([]byte, 4), t16[:]...), append([]byte{1, 1}, srcMAC...)...)
	msg := icmp.Message{Type: ipv6.ICMPTypeNeighborSolicitation, Body: &icmp.RawBody{Data: body}}
	l4, err := msg.Marshal(icmp.IPv6PseudoHeader(src.AsSlice(), group.AsSlice()))
	if err != nil {
		t.Fatal(err)
	}
	g16 := group.As16()
	frame := append([]byte{0x33, 0x33, g16[12], g16[13], g16[14], g16[15]}, srcMAC...)
	frame = append(frame, 0x86, 0xdd, 0x60, 0, 0, 0, byte(len(l4)>>8), byte(len(l4)), 58, 255)
	frame = append(append(frame, src.AsSlice()...), group.AsSlice()...)
	return append(frame, l4...)
}

// TestProxyNDAnswersForTheAddressAndRoutesItOutOfItsInterface checks by traffic what an
// entry makes VPP do: a neighbour solicitation for the proxied address, arriving on
// another interface (the NIC), is answered with an advertisement from VPP, which it was
// not before the entry nor is after its delete; and VPP routes the address out of the
// entry's interface.
func TestProxyNDAnswersForTheAddressAndRoutesItOutOfItsInterface(t *testing.T) {
	e := newEnv(t)
	nicIf, ok := e.sim.InterfaceByName("GigabitEthernet0/8/0")
	if !ok {
		t.Fatal("the simulator has no NIC")
	}
	nic := interface_types.InterfaceIndex(nicIf.SwIfIndex)
	if err := vppbase.Call(e.ch, &interfaces.SwInterfaceSetFlags{SwIfIndex: nic, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP},
		&interfaces.SwInterfaceSetFlagsReply{}); err != nil {
		t.Fatal(err)
	}
	addr := &interfaces.SwInterfaceAddDelAddress{SwIfIndex: nic, IsAdd: true, Prefix: ip_types.AddressWithPrefix{
		Address: vppbase.AddrToAPI(mustAddr("2001:db8:1::10")), Len: 64}}
	if err := vppbase.Call(e.ch, addr, &interfaces.SwInterfaceAddDelAddressReply{}); err != nil {
		t.Fatal(err)
	}
	behind := e.loopback("behind", "2001:db8:2::1/64")
	var advertised []netip.Addr
	e.sim.SetTxHook(func(ifName string, f []byte) {
		if ifName == nicIf.Name && len(f) >= 78 && f[12] == 0x86 && f[13] == 0xdd && f[20] == 58 && f[54] == 136 {
			advertised = append(advertised, netip.AddrFrom16([16]byte(f[62:78])))
		}
	})
	solicit := func() []netip.Addr {
		t.Helper()
		advertised = nil
		frame := nsFrame(t, net.HardwareAddr{2, 0, 0, 0, 0, 0x20}, mustAddr("2001:db8:1::20"), mustAddr("2001:db8:1::7"))
		if err := e.sim.InjectFrame(nicIf.Name, frame); err != nil {
			t.Fatal(err)
		}
		return advertised
	}
	if got := solicit(); len(got) != 0 {
		t.Fatalf("VPP advertised %v before any proxy entry", got)
	}
	d := NewProxyNDDescriptor(e.deps())
	v := &l3.ProxyNDEntry{Interface: "behind", IpAddress: "2001:db8:1::7"}
	create(t, d, map[string]proto.Message{proxyNDKey(v): v})
	if got := solicit(); len(got) != 1 || got[0] != mustAddr("2001:db8:1::7") {
		t.Errorf("advertisements %v, want one for 2001:db8:1::7", got)
	}
	if !slices.ContainsFunc(e.sim.Routes(0, true), func(r vppsim.Route) bool {
		return r.Prefix == netip.MustParsePrefix("2001:db8:1::7/128") && slices.ContainsFunc(r.Paths, func(p vppsim.RoutePath) bool {
			return p.SwIfIndex == behind
		})
	}) {
		t.Errorf("no route to 2001:db8:1::7/128 out of %d in %+v", behind, e.sim.Routes(0, true))
	}
	if err := d.Delete(proxyNDKey(v), v, nil); err != nil {
		t.Fatal(err)
	}
	if got := solicit(); len(got) != 0 {
		t.Errorf("VPP advertised %v after the entry's delete", got)
	}
}

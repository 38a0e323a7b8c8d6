package vppsim

import (
	"errors"
	"io"
	"net/netip"
	"slices"
	"testing"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

func enableNAT(e *testEnv) {
	e.t.Helper()
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
}

func TestNATConfigFailsWhilePluginDisabled(t *testing.T) {
	e := newEnv(t)
	reqs := []api.Message{
		&nat44_ed.Nat44AddDelAddressRange{IsAdd: true, FirstIPAddress: ip4("1.1.1.1"), LastIPAddress: ip4("1.1.1.1")},
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, SwIfIndex: 1},
		&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 1},
		&nat44_ed.Nat44AddDelInterfaceAddr{IsAdd: true, SwIfIndex: 1},
		&nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, ExternalSwIfIndex: allIfaces},
		&nat44_ed.Nat44AddDelStaticMapping{IsAdd: true, ExternalSwIfIndex: allIfaces},
		&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, SwIfIndex: allIfaces},
		&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true},
		&nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: true},
		&nat44_ed.Nat44EdAddDelVrfTable{IsAdd: true, TableVrfID: 1},
	}
	for _, r := range reqs {
		t.Run(r.GetMessageName(), func(t *testing.T) { e.expect(retvalUnsupported, r) })
	}
	// VPP does not guard these with the plugin state.
	for _, r := range []api.Message{&nat44_ed.Nat44ForwardingEnableDisable{Enable: true}, &nat44_ed.NatSetTimeouts{UDP: 1}} {
		e.expect(0, r)
	}
	// nat44_ed_del_session: "if (!sm->enabled) return UNSUPPORTED".
	e.expect(retvalUnsupported, &nat44_ed.Nat44DelSession{})
	if n := len(dump[nat44_ed.Nat44StaticMappingDetails](t, e.ch, &nat44_ed.Nat44StaticMappingDump{})); n != 0 {
		t.Errorf("static mapping dump while disabled: %d", n)
	}
	e.expect(retvalFeatureAlreadyDisabled, &nat44_ed.Nat44EdPluginEnableDisable{Enable: false})
}

func TestNATEnableDisable(t *testing.T) {
	e := newEnv(t)
	e.expect(retvalUnsupported, &nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Flags: nat44_ed.NAT44_IS_STATIC_MAPPING_ONLY})
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true, InsideVrf: 0, OutsideVrf: 0, Sessions: 1000})
	e.expect(retvalFeatureAlreadyEnabled, &nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
	e.ok(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	e.ok(&nat44_ed.NatSetTimeouts{UDP: 10, TCPEstablished: 20, TCPTransitory: 30, ICMP: 40})
	cfg := &nat44_ed.Nat44ShowRunningConfigReply{}
	e.ok(&nat44_ed.Nat44ShowRunningConfig{}, cfg)
	if !cfg.ForwardingEnabled || cfg.Sessions != 1000 || cfg.Timeouts.TCPTransitory != 30 {
		t.Errorf("running config %+v", cfg)
	}
	e.ok(&nat44_ed.Nat44AddDelAddressRange{IsAdd: true, FirstIPAddress: ip4("1.1.1.1"), LastIPAddress: ip4("1.1.1.2"), VrfID: noIndex})
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: false})
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
	if n := e.sim.NAT(); len(n.Addresses) != 0 || n.Forwarding {
		t.Errorf("NAT config survived disable: %+v", n)
	}
}

func TestNATAddressPools(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	rng := func(isAdd bool, first, last string, vrf uint32, flags nat_types.NatConfigFlags) *nat44_ed.Nat44AddDelAddressRange {
		return &nat44_ed.Nat44AddDelAddressRange{IsAdd: isAdd, FirstIPAddress: ip4(first), LastIPAddress: ip4(last), VrfID: vrf, Flags: flags}
	}
	tests := []struct {
		name string
		req  *nat44_ed.Nat44AddDelAddressRange
		want int32
	}{
		{"range", rng(true, "10.0.0.1", "10.0.0.3", noIndex, 0), 0},
		{"overlapping range stops at the duplicate", rng(true, "10.0.0.0", "10.0.0.1", noIndex, 0), retvalValueExist},
		{"twice-nat pool is separate", rng(true, "10.0.0.1", "10.0.0.1", 0, nat_types.NAT_IS_TWICE_NAT), 0},
		{"last before first", rng(true, "10.0.0.9", "10.0.0.8", noIndex, 0), retvalInvalidValue},
		{"delete missing", rng(false, "10.9.9.9", "10.9.9.9", noIndex, 0), retvalNoSuchEntry},
		{"delete one", rng(false, "10.0.0.2", "10.0.0.2", noIndex, 0), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	got := dump[nat44_ed.Nat44AddressDetails](t, e.ch, &nat44_ed.Nat44AddressDump{})
	var list []string
	for _, d := range got {
		s := d.IPAddress.String()
		if d.Flags&nat_types.NAT_IS_TWICE_NAT != 0 {
			s += "/twice"
		}
		list = append(list, s)
	}
	// 10.0.0.0 was added before the duplicate stopped the range, as in VPP.
	if want := []string{"10.0.0.1", "10.0.0.3", "10.0.0.0", "10.0.0.1/twice"}; !slices.Equal(list, want) {
		t.Errorf("pool = %v, want %v", list, want)
	}
}

func TestNATInterfacesAndOutputInterfaces(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	lo := e.loopback()
	feat := func(isAdd bool, sw interface_types.InterfaceIndex, flags nat_types.NatConfigFlags) *nat44_ed.Nat44InterfaceAddDelFeature {
		return &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: isAdd, SwIfIndex: sw, Flags: flags}
	}
	out := func(isAdd bool, sw interface_types.InterfaceIndex) *nat44_ed.Nat44EdAddDelOutputInterface {
		return &nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: isAdd, SwIfIndex: sw}
	}
	tests := []struct {
		name string
		req  api.Message
		want int32
	}{
		{"outside", feat(true, 1, 0), 0},
		{"inside", feat(true, lo, nat_types.NAT_IS_INSIDE), 0},
		{"loop also outside", feat(true, lo, nat_types.NAT_IS_OUTSIDE), 0},
		{"same direction again is accepted", feat(true, 1, nat_types.NAT_IS_OUTSIDE), 0},
		{"unknown interface", feat(true, 55, 0), retvalInvalidSwIfIndex},
		{"delete missing", feat(false, 2, nat_types.NAT_IS_INSIDE), retvalNoSuchEntry},
		{"output interface", out(true, 2), 0},
		{"output duplicate", out(true, 2), retvalValueExist},
		{"output on a feature interface", out(true, 1), retvalValueExist},
		{"feature on an output interface", feat(true, 2, 0), retvalValueExist},
		{"output unknown", out(true, 55), retvalInvalidSwIfIndex},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	ifs := dump[nat44_ed.Nat44InterfaceDetails](t, e.ch, &nat44_ed.Nat44InterfaceDump{})
	if len(ifs) != 2 || ifs[0].SwIfIndex != 1 || ifs[0].Flags != nat_types.NAT_IS_OUTSIDE ||
		ifs[1].Flags != nat_types.NAT_IS_INSIDE|nat_types.NAT_IS_OUTSIDE {
		t.Errorf("nat44_interface_dump %+v", ifs)
	}

	// nat44_ed_output_interface_get: details, then the reply with cursor ~0.
	stream, err := nat44_ed.NewServiceClient(e.conn).Nat44EdOutputInterfaceGet(t.Context(), &nat44_ed.Nat44EdOutputInterfaceGet{})
	if err != nil {
		t.Fatal(err)
	}
	var outs []interface_types.InterfaceIndex
	for {
		d, rep, err := stream.Recv()
		if rep != nil {
			// The generated client reports the final reply with io.EOF.
			if !errors.Is(err, io.EOF) || rep.Retval != 0 || rep.Cursor != noIndex {
				t.Errorf("reply %+v, %v", rep, err)
			}
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		outs = append(outs, d.SwIfIndex)
	}
	if len(outs) != 1 || outs[0] != 2 {
		t.Errorf("output interfaces %v", outs)
	}
	e.ok(out(false, 2))
	e.expect(retvalNoSuchEntry, out(false, 2))
	// With no output interface VPP's cursor macro answers INVALID_VALUE.
	e.expect(retvalInvalidValue, &nat44_ed.Nat44EdOutputInterfaceGet{})

	e.ok(feat(false, lo, nat_types.NAT_IS_INSIDE))
	if n := e.sim.NAT(); len(n.Interfaces) != 2 || n.Interfaces[1].Inside || !n.Interfaces[1].Outside {
		t.Errorf("NAT interfaces %+v", n.Interfaces)
	}
}

// static builds a port mapping request.
func static(isAdd bool, proto uint8, local string, lport uint16, ext string, eport uint16, flags nat_types.NatConfigFlags) *nat44_ed.Nat44AddDelStaticMappingV2 {
	return &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: isAdd, Flags: flags, Protocol: proto,
		LocalIPAddress: ip4(local), LocalPort: lport, ExternalIPAddress: ip4(ext), ExternalPort: eport,
		ExternalSwIfIndex: allIfaces, VrfID: 0, Tag: "svc"}
}

func TestNATStaticAndIdentityMappings(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	out2in := nat_types.NAT_IS_OUT2IN_ONLY
	tests := []struct {
		name string
		req  api.Message
		want int32
	}{
		{"add", static(true, protoTCP, "10.1.1.2", 8080, "10.96.0.10", 80, out2in), 0},
		{"same external", static(true, protoTCP, "10.1.1.3", 8080, "10.96.0.10", 80, out2in), retvalValueExist},
		{"same external other protocol", static(true, protoUDP, "10.1.1.2", 53, "10.96.0.10", 80, out2in), 0},
		{"same local, out2in-only", static(true, protoTCP, "10.1.1.2", 8080, "192.168.16.1", 30080, out2in), 0},
		{"bidirectional", static(true, protoTCP, "10.1.1.5", 22, "20.0.0.5", 2222, 0), 0},
		{"same local as a bidirectional", static(true, protoTCP, "10.1.1.5", 22, "20.0.0.6", 2222, 0), retvalValueExist},
		{"twice-NAT without ports", static(true, 0, "10.1.1.6", 0, "20.0.0.6", 0, nat_types.NAT_IS_TWICE_NAT|nat_types.NAT_IS_ADDR_ONLY), retvalUnsupported},
		{"address only", static(true, 0, "10.1.1.7", 0, "20.0.0.7", 0, nat_types.NAT_IS_ADDR_ONLY), 0},
		{"delete missing", static(false, protoTCP, "10.1.1.2", 8080, "10.96.0.99", 80, out2in), retvalNoSuchEntry},
		{"v1 add", &nat44_ed.Nat44AddDelStaticMapping{IsAdd: true, Protocol: protoUDP, LocalIPAddress: ip4("10.1.1.8"), LocalPort: 53,
			ExternalIPAddress: ip4("10.96.0.53"), ExternalPort: 53, ExternalSwIfIndex: allIfaces, Flags: out2in}, 0},
		{"identity", &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4("192.168.16.1"), Protocol: protoTCP, Port: 22, SwIfIndex: allIfaces, VrfID: 0}, 0},
		{"identity in another vrf", &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4("192.168.16.1"), Protocol: protoTCP, Port: 22, SwIfIndex: allIfaces, VrfID: 1}, 0},
		{"identity duplicate", &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4("192.168.16.1"), Protocol: protoTCP, Port: 22, SwIfIndex: allIfaces, VrfID: 1}, retvalValueExist},
		{"identity on a static external", &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, IPAddress: ip4("10.96.0.10"), Protocol: protoTCP, Port: 80, SwIfIndex: allIfaces}, retvalValueExist},
		{"identity delete missing", &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: false, IPAddress: ip4("192.168.16.1"), Protocol: protoTCP, Port: 22, SwIfIndex: allIfaces, VrfID: 5}, retvalNoSuchEntry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	sms := dump[nat44_ed.Nat44StaticMappingDetails](t, e.ch, &nat44_ed.Nat44StaticMappingDump{})
	if len(sms) != 6 {
		t.Fatalf("%d static mappings, want 6", len(sms))
	}
	first := sms[0]
	if first.LocalIPAddress.String() != "10.1.1.2" || first.LocalPort != 8080 || first.ExternalIPAddress.String() != "10.96.0.10" ||
		first.ExternalPort != 80 || first.Protocol != protoTCP || first.Flags != out2in || first.Tag != "svc" || first.ExternalSwIfIndex != allIfaces {
		t.Errorf("first mapping %+v", first)
	}
	ids := dump[nat44_ed.Nat44IdentityMappingDetails](t, e.ch, &nat44_ed.Nat44IdentityMappingDump{})
	if len(ids) != 2 || ids[0].VrfID != 0 || ids[1].VrfID != 1 || ids[0].Port != 22 {
		t.Errorf("identity mappings %+v", ids)
	}
	// Deleting removes exactly the mapping.
	e.ok(static(false, protoTCP, "10.1.1.2", 8080, "10.96.0.10", 80, out2in))
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: false, IPAddress: ip4("192.168.16.1"), Protocol: protoTCP, Port: 22, SwIfIndex: allIfaces, VrfID: 0})
	n := e.sim.NAT()
	if len(n.StaticMappings) != 5 || len(n.IdentityMappings) != 1 || !slices.Equal(n.IdentityMappings[0].VRFs, []uint32{1}) {
		t.Errorf("after deletes: %+v %+v", n.StaticMappings, n.IdentityMappings)
	}
	// The freed external can be used again.
	e.ok(static(true, protoTCP, "10.1.1.9", 8080, "10.96.0.10", 80, out2in))
}

func TestNATLoadBalancingMappings(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	locals := func(addrs ...string) []nat44_ed.Nat44LbAddrPort {
		var out []nat44_ed.Nat44LbAddrPort
		for _, a := range addrs {
			out = append(out, nat44_ed.Nat44LbAddrPort{Addr: ip4(a), Port: 8080, Probability: uint8(100 / len(addrs))})
		}
		return out
	}
	lb := func(isAdd bool, ext string, flags nat_types.NatConfigFlags, l []nat44_ed.Nat44LbAddrPort) *nat44_ed.Nat44AddDelLbStaticMapping {
		return &nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: isAdd, Flags: flags, ExternalAddr: ip4(ext), ExternalPort: 80,
			Protocol: protoTCP, Affinity: 0, Tag: "svc-b", LocalNum: uint32(len(l)), Locals: l}
	}
	out2in := nat_types.NAT_IS_OUT2IN_ONLY
	e.ok(lb(true, "10.96.0.10", out2in|nat_types.NAT_IS_SELF_TWICE_NAT, locals("10.1.1.2", "10.1.1.3")))
	e.expect(retvalValueExist, lb(true, "10.96.0.10", out2in, locals("10.1.1.4", "10.1.1.5")))
	e.expect(retvalInvalidValue, lb(true, "10.96.0.11", out2in, locals("10.1.1.4")))
	e.expect(retvalValueExist, static(true, protoTCP, "10.1.1.9", 8080, "10.96.0.10", 80, out2in))
	e.expect(retvalNoSuchEntry, lb(false, "10.96.0.12", out2in, nil))

	local := func(isAdd bool, a string) *nat44_ed.Nat44LbStaticMappingAddDelLocal {
		return &nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: isAdd, ExternalAddr: ip4("10.96.0.10"), ExternalPort: 80, Protocol: protoTCP,
			Local: nat44_ed.Nat44LbAddrPort{Addr: ip4(a), Port: 8080, Probability: 33}}
	}
	e.ok(local(true, "10.1.1.4"))
	e.expect(retvalValueExist, local(true, "10.1.1.4"))
	e.ok(local(false, "10.1.1.2"))
	e.expect(retvalNoSuchEntry, local(false, "10.1.1.2"))
	e.expect(retvalUnspecified, local(false, "10.1.1.3")) // two must remain

	got := dump[nat44_ed.Nat44LbStaticMappingDetails](t, e.ch, &nat44_ed.Nat44LbStaticMappingDump{})
	if len(got) != 1 || got[0].LocalNum != 2 || got[0].Locals[0].Addr.String() != "10.1.1.3" || got[0].Locals[1].Addr.String() != "10.1.1.4" ||
		got[0].Flags != out2in|nat_types.NAT_IS_SELF_TWICE_NAT || got[0].Tag != "svc-b" {
		t.Errorf("lb mappings %+v", got)
	}
	// LB mappings are not in the static mapping dump.
	if n := len(dump[nat44_ed.Nat44StaticMappingDetails](t, e.ch, &nat44_ed.Nat44StaticMappingDump{})); n != 0 {
		t.Errorf("static dump shows %d entries", n)
	}
}

// TestNATTranslatesServicePacketToABackend checks behaviour, not config:
// a TCP packet from pod A to the service 10.96.0.10:80 leaves NAT towards
// one of the backends B or C, and with self-twice-NAT a packet from B to
// its own service gets the twice-NAT pool address as source.
func TestNATTranslatesServicePacketToABackend(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	e.ok(&nat44_ed.Nat44AddDelAddressRange{IsAdd: true, FirstIPAddress: ip4("10.1.1.254"), LastIPAddress: ip4("10.1.1.254"),
		VrfID: noIndex, Flags: nat_types.NAT_IS_TWICE_NAT})
	e.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_SELF_TWICE_NAT,
		ExternalAddr: ip4("10.96.0.10"), ExternalPort: 80, Protocol: protoTCP, LocalNum: 2,
		Locals: []nat44_ed.Nat44LbAddrPort{{Addr: ip4("10.1.1.2"), Port: 8080, Probability: 50}, {Addr: ip4("10.1.1.3"), Port: 8080, Probability: 50}}})
	e.ok(static(true, protoUDP, "10.1.1.5", 5353, "10.96.0.53", 53, nat_types.NAT_IS_OUT2IN_ONLY))

	podA := netip.MustParseAddrPort("10.1.1.9:40000")
	svc := netip.MustParseAddrPort("10.96.0.10:80")
	got := e.sim.Translate(Packet{Protocol: protoTCP, Src: podA, Dst: svc})
	var dsts []string
	for _, p := range got {
		if p.Src != podA {
			t.Errorf("source rewritten for a foreign client: %v", p.Src)
		}
		dsts = append(dsts, p.Dst.String())
	}
	if !slices.Equal(dsts, []string{"10.1.1.2:8080", "10.1.1.3:8080"}) {
		t.Errorf("backends %v", dsts)
	}
	hairpin := e.sim.Translate(Packet{Protocol: protoTCP, Src: netip.MustParseAddrPort("10.1.1.2:40000"), Dst: svc})
	if hairpin[0].Src.Addr().String() != "10.1.1.254" || hairpin[1].Src.Addr().String() != "10.1.1.2" {
		t.Errorf("self-twice-NAT: %+v", hairpin)
	}
	if b := e.sim.LookupDNAT(protoUDP, netip.MustParseAddr("10.96.0.53"), 53); len(b) != 1 || b[0].Addr.String() != "10.1.1.5:5353" {
		t.Errorf("LookupDNAT protoUDP: %+v", b)
	}
	if b := e.sim.LookupDNAT(protoTCP, netip.MustParseAddr("10.96.0.53"), 53); b != nil {
		t.Errorf("LookupDNAT matched the wrong protocol: %+v", b)
	}
	if p := e.sim.Translate(Packet{Protocol: protoTCP, Src: podA, Dst: netip.MustParseAddrPort("10.96.0.99:80")}); p != nil {
		t.Errorf("Translate of an unknown service: %+v", p)
	}
}

func TestNATSessions(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.InjectSession(Session{}); err == nil {
		t.Error("InjectSession accepted an empty session")
	}
	enableNAT(e)
	sessions := []Session{
		{Protocol: protoTCP, InsideAddr: netip.MustParseAddrPort("10.1.1.2:8080"), OutsideAddr: netip.MustParseAddrPort("10.96.0.10:80"),
			ExtHostAddr: netip.MustParseAddrPort("10.1.1.9:40000"), Static: true, TotalPkts: 3, LastHeard: 100},
		{Protocol: protoUDP, InsideAddr: netip.MustParseAddrPort("10.1.1.2:5000"), OutsideAddr: netip.MustParseAddrPort("192.168.16.1:61000"),
			ExtHostAddr: netip.MustParseAddrPort("8.8.8.8:53")},
		{Protocol: protoTCP, InsideAddr: netip.MustParseAddrPort("10.1.1.3:8080"), OutsideAddr: netip.MustParseAddrPort("10.96.0.10:80"),
			ExtHostAddr: netip.MustParseAddrPort("10.1.1.9:40001"), ExtHostNATAddr: netip.MustParseAddrPort("10.1.1.254:1025"), Static: true, TwiceNAT: true},
	}
	for _, s := range sessions {
		if err := e.sim.InjectSession(s); err != nil {
			t.Fatal(err)
		}
	}
	users := dump[nat44_ed.Nat44UserDetails](t, e.ch, &nat44_ed.Nat44UserDump{})
	if len(users) != 2 || users[0].IPAddress.String() != "10.1.1.2" || users[0].Nsessions != 1 || users[0].Nstaticsessions != 1 {
		t.Errorf("users %+v", users)
	}
	us := dump[nat44_ed.Nat44UserSessionDetails](t, e.ch, &nat44_ed.Nat44UserSessionDump{IPAddress: ip4("10.1.1.2")})
	if len(us) != 2 || us[0].InsidePort != 8080 || us[0].Flags&nat_types.NAT_IS_STATIC == 0 || us[0].TotalPkts != 3 || us[0].ExtHostPort != 40000 {
		t.Errorf("user sessions %+v", us)
	}
	if v2 := dump[nat44_ed.Nat44UserSessionV2Details](t, e.ch, &nat44_ed.Nat44UserSessionV2Dump{IPAddress: ip4("10.1.1.3")}); len(v2) != 1 ||
		v2[0].ExtHostNatPort != 1025 || v2[0].Flags&nat_types.NAT_IS_TWICE_NAT == 0 {
		t.Errorf("v2 sessions %+v", v2)
	}
	if v3 := dump[nat44_ed.Nat44UserSessionV3Details](t, e.ch, &nat44_ed.Nat44UserSessionV3Dump{IPAddress: ip4("10.1.1.2")}); len(v3) != 2 {
		t.Errorf("v3 sessions %+v", v3)
	}
	tests := []struct {
		name string
		req  *nat44_ed.Nat44DelSession
		want int32
	}{
		{"inside side", &nat44_ed.Nat44DelSession{Address: ip4("10.1.1.2"), Port: 5000, Protocol: protoUDP, Flags: nat_types.NAT_IS_INSIDE | nat_types.NAT_IS_EXT_HOST_VALID,
			ExtHostAddress: ip4("8.8.8.8"), ExtHostPort: 53}, 0},
		{"again", &nat44_ed.Nat44DelSession{Address: ip4("10.1.1.2"), Port: 5000, Protocol: protoUDP, Flags: nat_types.NAT_IS_INSIDE | nat_types.NAT_IS_EXT_HOST_VALID,
			ExtHostAddress: ip4("8.8.8.8"), ExtHostPort: 53}, retvalNoSuchEntry},
		// VPP looks the key up among the flows of both directions: for
		// twice-NAT the i2o flow's external host is the twice-NAT address;
		// the inside flag is ignored.
		{"outside address and twice-NAT host is no flow", &nat44_ed.Nat44DelSession{Address: ip4("10.96.0.10"), Port: 80, Protocol: protoTCP, Flags: nat_types.NAT_IS_EXT_HOST_VALID,
			ExtHostAddress: ip4("10.1.1.254"), ExtHostPort: 1025}, retvalNoSuchEntry},
		{"twice-NAT by the twice-NAT host", &nat44_ed.Nat44DelSession{Address: ip4("10.1.1.3"), Port: 8080, Protocol: protoTCP, Flags: nat_types.NAT_IS_EXT_HOST_VALID,
			ExtHostAddress: ip4("10.1.1.254"), ExtHostPort: 1025}, 0},
		{"wrong protocol", &nat44_ed.Nat44DelSession{Address: ip4("10.1.1.2"), Port: 8080, Protocol: protoUDP, Flags: nat_types.NAT_IS_INSIDE,
			ExtHostAddress: ip4("10.1.1.9"), ExtHostPort: 40000}, retvalNoSuchEntry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	if left := e.sim.Sessions(); len(left) != 1 || left[0].InsideAddr.Port() != 8080 {
		t.Errorf("sessions left %+v", left)
	}
}

func TestNATVRFTablesAndMisc(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	e.ok(&nat44_ed.Nat44EdAddDelVrfTable{IsAdd: true, TableVrfID: 1})
	e.expect(retvalValueExist, &nat44_ed.Nat44EdAddDelVrfTable{IsAdd: true, TableVrfID: 1})
	e.ok(&nat44_ed.Nat44EdAddDelVrfRoute{IsAdd: true, TableVrfID: 1, VrfID: 0})
	e.expect(retvalValueExist, &nat44_ed.Nat44EdAddDelVrfRoute{IsAdd: true, TableVrfID: 1, VrfID: 0})
	e.expect(retvalNoSuchEntry, &nat44_ed.Nat44EdAddDelVrfRoute{IsAdd: true, TableVrfID: 2, VrfID: 0})
	if got := dump[nat44_ed.Nat44EdVrfTablesV2Details](t, e.ch, &nat44_ed.Nat44EdVrfTablesV2Dump{}); len(got) != 1 || !slices.Equal(got[0].VrfIds, []uint32{0}) {
		t.Errorf("vrf tables %+v", got)
	}
	e.ok(&nat44_ed.Nat44EdAddDelVrfTable{IsAdd: false, TableVrfID: 1})
	e.expect(retvalNoSuchEntry, &nat44_ed.Nat44EdAddDelVrfTable{IsAdd: false, TableVrfID: 1})

	e.ok(&nat44_ed.NatSetMssClamping{MssValue: 1400, Enable: true})
	mss := &nat44_ed.NatGetMssClampingReply{}
	e.ok(&nat44_ed.NatGetMssClamping{}, mss)
	if mss.MssValue != 1400 || !mss.Enable {
		t.Errorf("mss %+v", mss)
	}
	e.expect(retvalNoSuchFIB, &nat44_ed.Nat44SetSessionLimit{SessionLimit: 10, VrfID: 3})
	e.ok(&nat44_ed.Nat44SetSessionLimit{SessionLimit: 10, VrfID: 0})

	e.ok(&nat44_ed.Nat44AddDelInterfaceAddr{IsAdd: true, SwIfIndex: 1, Flags: nat_types.NAT_IS_TWICE_NAT})
	e.expect(retvalValueExist, &nat44_ed.Nat44AddDelInterfaceAddr{IsAdd: true, SwIfIndex: 1, Flags: nat_types.NAT_IS_TWICE_NAT})
	if got := dump[nat44_ed.Nat44InterfaceAddrDetails](t, e.ch, &nat44_ed.Nat44InterfaceAddrDump{}); len(got) != 1 || got[0].Flags != nat_types.NAT_IS_TWICE_NAT {
		t.Errorf("interface addresses %+v", got)
	}
}

// A mapping may take its external address from an interface (external_sw_if_index):
// a lookup by that address finds it, and no more once it is deleted.
func TestLookupDNATOfAMappingOnAnInterfaceAddress(t *testing.T) {
	e := newEnv(t)
	enableNAT(e)
	var lo interfaces.CreateLoopbackReply
	e.call(&interfaces.CreateLoopback{}, &lo)
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: lo.SwIfIndex, IsAdd: true, Prefix: awp("192.168.77.1/24")})
	onIface := static(true, protoTCP, "10.1.1.7", 8080, "0.0.0.0", 80, nat_types.NAT_IS_OUT2IN_ONLY)
	onIface.ExternalSwIfIndex = lo.SwIfIndex
	ifAddr := netip.MustParseAddr("192.168.77.1")
	if b := e.sim.LookupDNAT(protoTCP, ifAddr, 80); b != nil {
		t.Fatalf("found %+v before the mapping exists", b)
	}
	e.ok(onIface)
	if b := e.sim.LookupDNAT(protoTCP, ifAddr, 80); len(b) != 1 || b[0].Addr.String() != "10.1.1.7:8080" {
		t.Fatalf("LookupDNAT of the interface's address: %+v", b)
	}
	onIface.IsAdd = false
	e.ok(onIface)
	if b := e.sim.LookupDNAT(protoTCP, ifAddr, 80); b != nil {
		t.Errorf("found %+v after the mapping was deleted", b)
	}
}

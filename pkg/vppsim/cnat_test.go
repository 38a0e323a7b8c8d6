package vppsim

import (
	"net/netip"

	"testing"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// cnatEP returns a literal cnat endpoint.
func apiEP(ip string, port uint16) cnat.CnatEndpoint {
	return cnat.CnatEndpoint{Addr: addr(ip), SwIfIndex: ^interface_types.InterfaceIndex(0), Port: port}
}

// apiTr returns a translation of vip:port (UDP unless proto is given) to the
// given backends (dst only).
func apiTr(vip string, port uint16, realIP bool, backends ...cnat.CnatEndpoint) cnat.CnatTranslation {
	t := cnat.CnatTranslation{Vip: apiEP(vip, port), IPProto: ip_types.IP_API_PROTO_UDP}
	if realIP {
		t.IsRealIP = 1
	}
	for _, b := range backends {
		src := apiEP("0.0.0.0", 0)
		if b.Addr.Af == ip_types.ADDRESS_IP6 {
			src = apiEP("::", 0)
		}
		t.Paths = append(t.Paths, cnat.CnatEndpointTuple{DstEp: b, SrcEp: src})
	}
	t.NPaths = uint32(len(t.Paths))
	return t
}

func (e *testEnv) cnatUpdate(t cnat.CnatTranslation) (uint32, int32) {
	e.t.Helper()
	rep := &cnat.CnatTranslationUpdateReply{}
	rv := e.call(&cnat.CnatTranslationUpdate{Translation: t}, rep)
	return rep.ID, rv
}

func TestCnatTranslationUpdateKeysByVIPPortProtoAndReusesIDs(t *testing.T) {
	e := newEnv(t)
	id0, rv := e.cnatUpdate(apiTr("10.96.0.10", 53, false, apiEP("10.1.1.2", 5353)))
	if rv != 0 || id0 != 0 {
		t.Fatalf("first update: id %d rv %d, want 0 0", id0, rv)
	}
	id1, _ := e.cnatUpdate(apiTr("10.96.0.10", 80, false, apiEP("10.1.1.2", 8080)))
	// Same key, a different request id and new paths: changed in place.
	tr := apiTr("10.96.0.10", 53, false, apiEP("10.1.1.3", 5353), apiEP("10.1.1.4", 5353))
	tr.ID = 77
	if id, rv := e.cnatUpdate(tr); rv != 0 || id != id0 {
		t.Fatalf("update of the same key: id %d rv %d, want %d 0", id, rv, id0)
	}
	ds := dump[cnat.CnatTranslationDetails](t, e.ch, &cnat.CnatTranslationDump{})
	if len(ds) != 2 || ds[0].Translation.ID != 0 || len(ds[0].Translation.Paths) != 2 ||
		ds[0].Translation.Paths[1].DstEp.Addr.String() != "10.1.1.4" || ds[1].Translation.ID != id1 {
		t.Fatalf("dump %+v, want ids 0 (two paths) and %d", ds, id1)
	}
	if ds[0].Translation.IsRealIP != 0 || ds[0].Translation.Flags != 0 {
		t.Errorf("dump fills is_real_ip/flags (%d/%d); VPP leaves them 0", ds[0].Translation.IsRealIP, ds[0].Translation.Flags)
	}
	e.ok(&cnat.CnatTranslationDel{ID: id0})
	e.expect(retvalNoSuchEntry, &cnat.CnatTranslationDel{ID: id0})
	if id, _ := e.cnatUpdate(apiTr("2001:db8::10", 80, true, apiEP("2001:db8:1::2", 80))); id != id0 {
		t.Fatalf("new translation after a delete got id %d, want the freed %d", id, id0)
	}
	e.ok(&cnat.CnatSessionPurge{})
	if ds := dump[cnat.CnatTranslationDetails](t, e.ch, &cnat.CnatTranslationDump{}); len(ds) != 0 {
		t.Fatalf("session purge left translations %+v; VPP purges them too", ds)
	}
}

func TestCnatTranslationUpdateRefusesWhatVPPRefuses(t *testing.T) {
	e := newEnv(t)
	bad := apiTr("10.96.0.10", 53, false, apiEP("10.1.1.2", 53))
	bad.IPProto = 99
	if id, rv := e.cnatUpdate(bad); rv != retvalInvalidProtocol || id != ^uint32(0) {
		t.Errorf("protocol 99: id %d rv %d, want ~0 %d", id, rv, retvalInvalidProtocol)
	}
	bad = apiTr("10.96.0.10", 53, false, apiEP("10.1.1.2", 53))
	bad.Paths[0].DstEp = cnat.CnatEndpoint{SwIfIndex: 1, IfAf: 7}
	if _, rv := e.cnatUpdate(bad); rv != retvalInvalidAddressFamily {
		t.Errorf("interface endpoint with if_af 7: rv %d, want %d", rv, retvalInvalidAddressFamily)
	}
	if _, rv := e.cnatUpdate(apiTr("10.96.0.10", 53, false)); rv != retvalInvalidValue {
		t.Errorf("no paths: rv %d, want %d (VPP 25.10 aborts)", rv, retvalInvalidValue)
	}
	if ds := dump[cnat.CnatTranslationDetails](t, e.ch, &cnat.CnatTranslationDump{}); len(ds) != 0 {
		t.Fatalf("refused updates left %+v", ds)
	}
}

func TestCnatInterfaceEndpointsResolveFromTheInterface(t *testing.T) {
	e := newEnv(t)
	tr := apiTr("10.96.0.10", 53, false, apiEP("10.1.1.2", 53))
	tr.Paths[0].SrcEp = cnat.CnatEndpoint{SwIfIndex: 1, IfAf: ip_types.ADDRESS_IP4, Port: 0}
	if _, rv := e.cnatUpdate(tr); rv != 0 {
		t.Fatalf("rv %d", rv)
	}
	src := func() string {
		ds := dump[cnat.CnatTranslationDetails](t, e.ch, &cnat.CnatTranslationDump{})
		return ds[0].Translation.Paths[0].SrcEp.Addr.String()
	}
	if s := src(); s != "0.0.0.0" {
		t.Fatalf("unresolved src endpoint dumps %s, want 0.0.0.0", s)
	}
	e.addAddr(1, "192.168.16.1/24")
	if s := src(); s != "192.168.16.1" {
		t.Fatalf("src endpoint after the interface got an address dumps %s", s)
	}
}

func TestCnatSnatAPI(t *testing.T) {
	e := newEnv(t)
	get := func() *cnat.CnatGetSnatAddressesReply {
		rep := &cnat.CnatGetSnatAddressesReply{}
		e.ok(&cnat.CnatGetSnatAddresses{}, rep)
		return rep
	}
	e.ok(&cnat.CnatSetSnatAddresses{SnatIP4: ip4("192.168.16.1"), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if r := get(); r.SnatIP4.String() != "192.168.16.1" || r.SwIfIndex != ^interface_types.InterfaceIndex(0) {
		t.Fatalf("get %+v", r)
	}
	e.ok(&cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S})
	e.expect(1, &cnat.CnatSetSnatPolicy{Policy: 3})
	e.ok(&cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: 1, Prefix: pfx("10.1.0.0/16")})
	e.ok(&cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: 0, Prefix: pfx("10.1.0.0/16")})
	e.expect(1, &cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: 0, Prefix: pfx("10.1.0.0/16")})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 1, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
	e.expect(retvalInvalidValue, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 1, IsAdd: 1, Table: 4})
	e.expect(retvalInvalidSwIfIndex, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 99, IsAdd: 1})
	st := e.sim.st
	if st.cnat.snat.policy != cnat.CNAT_POLICY_K8S || !st.cnat.snat.inMap(cnatMapPod, 1) {
		t.Fatalf("policy state %+v", st.cnat.snat)
	}
}

func TestFeatureEnableDisableKnowsCnatFeaturesAndTheirArcs(t *testing.T) {
	e := newEnv(t)
	fe := func(arc, name string, on bool) *feature.FeatureEnableDisable {
		return &feature.FeatureEnableDisable{SwIfIndex: 1, Enable: on, ArcName: arc, FeatureName: name}
	}
	isOn := func(arc, name string) bool {
		rep := &feature.FeatureIsEnabledReply{}
		e.ok(&feature.FeatureIsEnabled{SwIfIndex: 1, ArcName: arc, FeatureName: name}, rep)
		return rep.IsEnabled
	}
	e.ok(fe("ip4-unicast", "cnat-snat-ip4", true))
	e.ok(fe("ip6-output", "cnat-output-ip6", true))
	if !isOn("ip4-unicast", "cnat-snat-ip4") || !isOn("ip6-output", "cnat-output-ip6") {
		t.Fatal("enabled features not reported enabled")
	}
	e.expect(retvalInvalidValue, fe("ip6-unicast", "cnat-snat-ip4", true))
	e.expect(retvalInvalidValue, fe("ip4-unicast", "cnat-snat-ip5", true))
	e.expect(retvalInvalidValue, fe("ip9-unicast", "whatever", true))
	e.expect(retvalUnimplemented, fe("ip4-unicast", "acl-plugin-in-ip4-fa", true))
	if e.sim.st.cnatFeatureOn(1, "cnat-snat-ip6") {
		t.Fatal("cnat-snat-ip6 on without an enable")
	}
	e.expect(retvalInvalidSwIfIndex, &feature.FeatureEnableDisable{SwIfIndex: 99, Enable: true, ArcName: "ip4-unicast", FeatureName: "cnat-snat-ip4"})
	// Counted: enabled twice, one disable leaves it on.
	e.ok(fe("ip4-unicast", "cnat-snat-ip4", true))
	e.ok(fe("ip4-unicast", "cnat-snat-ip4", false))
	if !isOn("ip4-unicast", "cnat-snat-ip4") {
		t.Fatal("one disable after two enables turned the feature off")
	}
	e.ok(fe("ip4-unicast", "cnat-snat-ip4", false))
	e.ok(fe("ip4-unicast", "cnat-snat-ip4", false)) // disabling what is off succeeds
	if isOn("ip4-unicast", "cnat-snat-ip4") {
		t.Fatal("feature still on")
	}
}

func TestCnatSNATPolicies(t *testing.T) {
	e := newEnv(t)
	st := e.sim.st
	e.ok(&cnat.CnatSetSnatAddresses{SnatIP4: ip4("192.168.16.1"), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	e.ok(&cnat.CnatSnatPolicyAddDelExcludePfx{IsAdd: 1, Prefix: pfx("10.1.0.0/16")})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 1, IsAdd: 1, Table: cnat.CNAT_POLICY_INCLUDE_V4})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 2, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
	flow := func(src, dst string, in, out uint32) cnatSNATFlow {
		return cnatSNATFlow{src: netip.MustParseAddr(src), dst: netip.MustParseAddr(dst), in: in, out: out}
	}
	for _, tc := range []struct {
		name   string
		policy cnat.CnatSnatPolicies
		f      cnatSNATFlow
		want   bool
	}{
		{"none: everything", cnat.CNAT_POLICY_NONE, flow("10.1.1.2", "10.1.1.3", 2, noIndex), true},
		{"if-pfx: included interface, destination outside the excluded prefix", cnat.CNAT_POLICY_IF_PFX, flow("10.1.1.2", "8.8.8.8", 1, noIndex), true},
		{"if-pfx: destination excluded", cnat.CNAT_POLICY_IF_PFX, flow("10.1.1.2", "10.1.9.9", 1, noIndex), false},
		{"if-pfx: interface not included", cnat.CNAT_POLICY_IF_PFX, flow("10.1.1.2", "8.8.8.8", 2, noIndex), false},
		{"k8s: from outside the pods", cnat.CNAT_POLICY_K8S, flow("172.16.0.5", "10.1.1.3", 3, noIndex), true},
		{"k8s: from outside, already the SNAT address", cnat.CNAT_POLICY_K8S, flow("192.168.16.1", "10.1.1.3", 3, noIndex), false},
		{"k8s: pod to another pod", cnat.CNAT_POLICY_K8S, flow("10.1.1.2", "10.1.1.3", 2, noIndex), false},
		{"k8s: pod to itself (hairpin)", cnat.CNAT_POLICY_K8S, flow("10.1.1.2", "10.1.1.2", 2, noIndex), true},
	} {
		st.cnat.snat.policy = tc.policy
		if got := st.cnatSNATWants(tc.f); got != tc.want {
			t.Errorf("%s: SNAT %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCnatPortAllocationStartsAt49152PerProtocol(t *testing.T) {
	var s cnatSessions
	for i, proto := range []uint8{protoTCP, protoTCP, protoUDP} {
		p, ok := s.allocPort(proto)
		want := uint16(49152)
		if i == 1 {
			want = 49153
		}
		if !ok || p != want {
			t.Fatalf("allocation %d (proto %d): %d %v, want %d", i, proto, p, ok, want)
		}
	}
	if _, ok := s.allocPort(protoSCTP); ok {
		t.Fatal("SCTP has no port allocator in cnat")
	}
	for p := 49154; p < 0xffff; p++ {
		s.allocPort(protoTCP)
	}
	if p, ok := s.allocPort(protoTCP); ok {
		t.Fatalf("allocated %d after the range was used up", p)
	}
	if !s.addIfAbsent(&cnatSess{key: cnatSessKey{proto: protoTCP}, ts: &cnatTimestamp{}}) ||
		s.addIfAbsent(&cnatSess{key: cnatSessKey{proto: protoTCP}, ts: &cnatTimestamp{}}) {
		t.Fatal("addIfAbsent must add once and refuse the same key")
	}
}

// LookupCNAT finds a translation by VIP, port and protocol and follows its
// changes: new paths in place, nothing once it is deleted.
func TestLookupCNATFollowsTheTranslationOfAVIP(t *testing.T) {
	e := newEnv(t)
	vip := netip.MustParseAddr("10.96.0.10")
	tr := apiTr("10.96.0.10", 53, false, apiEP("10.1.1.2", 5353))
	id, rv := e.cnatUpdate(tr)
	if rv != 0 {
		t.Fatalf("update: rv %d", rv)
	}
	if got := e.sim.LookupCNAT(protoUDP, vip, 53); len(got) != 1 || got[0] != netip.MustParseAddrPort("10.1.1.2:5353") {
		t.Fatalf("LookupCNAT UDP 10.96.0.10:53 = %v, want [10.1.1.2:5353]", got)
	}
	if got := e.sim.LookupCNAT(protoTCP, vip, 53); got != nil {
		t.Fatalf("LookupCNAT TCP 10.96.0.10:53 = %v, want nil (the translation is UDP)", got)
	}
	if _, rv := e.cnatUpdate(apiTr("10.96.0.10", 53, false, apiEP("10.1.1.3", 5353), apiEP("10.1.1.4", 5353))); rv != 0 {
		t.Fatalf("second update: rv %d", rv)
	}
	if got := e.sim.LookupCNAT(protoUDP, vip, 53); len(got) != 2 || got[1] != netip.MustParseAddrPort("10.1.1.4:5353") {
		t.Fatalf("after the update LookupCNAT = %v, want [10.1.1.3:5353 10.1.1.4:5353]", got)
	}
	e.ok(&cnat.CnatTranslationDel{ID: id})
	if got := e.sim.LookupCNAT(protoUDP, vip, 53); got != nil {
		t.Fatalf("after the delete LookupCNAT = %v, want nil", got)
	}
}

// TestCnatTranslationsWithTheSamePathsKeepTheirOwn: two translations given the same
// paths (as a node port's on two node IPs), then one given others: the other keeps
// its paths; a bad path after a good identical list is still refused.
func TestCnatTranslationsWithTheSamePathsKeepTheirOwn(t *testing.T) {
	e := newEnv(t)
	backends := []cnat.CnatEndpoint{apiEP("10.1.1.2", 8080), apiEP("10.1.1.3", 8080)}
	if _, rv := e.cnatUpdate(apiTr("192.168.16.1", 30080, true, backends...)); rv != 0 {
		t.Fatal(rv)
	}
	if _, rv := e.cnatUpdate(apiTr("192.168.16.2", 30080, true, backends...)); rv != 0 {
		t.Fatal(rv)
	}
	if _, rv := e.cnatUpdate(apiTr("192.168.16.2", 30080, true, apiEP("10.1.1.9", 8080))); rv != 0 {
		t.Fatal(rv)
	}
	ds := dump[cnat.CnatTranslationDetails](t, e.ch, &cnat.CnatTranslationDump{})
	if len(ds) != 2 || len(ds[0].Translation.Paths) != 2 || ds[0].Translation.Paths[1].DstEp.Addr.String() != "10.1.1.3" ||
		len(ds[1].Translation.Paths) != 1 || ds[1].Translation.Paths[0].DstEp.Addr.String() != "10.1.1.9" {
		t.Fatalf("dump %+v: want the first translation's two paths kept and the second's one", ds)
	}
	bad := apiTr("192.168.16.3", 30080, true, backends...)
	bad.Paths[0].DstEp.Addr.Af = 7
	if _, rv := e.cnatUpdate(bad); rv == 0 {
		t.Error("a path of an unknown family was taken")
	}
}

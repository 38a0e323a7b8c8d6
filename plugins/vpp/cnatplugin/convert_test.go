package cnatplugin

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// fakeIfaces resolves loop0 to 5 and tap0 to 7.
var fakeIfaces = map[string]uint32{"loop0": 5, "tap0": 7}

func fakeSw(name, what string) (uint32, error) {
	if sw, ok := fakeIfaces[name]; ok {
		return sw, nil
	}
	return 0, fmt.Errorf("%s: interface %q unknown", what, name)
}

func fakeNames() map[uint32]string {
	out := map[uint32]string{}
	for n, sw := range fakeIfaces {
		out[sw] = n
	}
	return out
}

func TestTranslationSurvivesTheRoundTripThroughVPPsEncoding(t *testing.T) {
	v := &cnatmodel.Translation{
		VipAddress: "FD00::A", VipPort: 443, Protocol: cnatmodel.Protocol_SCTP, IsRealIp: true, AllocPort: true, NoReturnSession: true,
		LbType: cnatmodel.Translation_MAGLEV, FlowHashConfig: 0x1f,
		Paths: []*cnatmodel.Path{
			{Dst: ep("fd00:1::2", 8443)},
			{Dst: &cnatmodel.Endpoint{Interface: "loop0", InterfaceFamily: cnatmodel.AddressFamily_IPV6, Port: 8443}, Src: ep("fd00::1", 0)},
			{Dst: ep("fd00:1::3", 8443), Src: ep("::", 0)},
		},
	}
	api, err := translationToAPI(v, fakeSw)
	if err != nil {
		t.Fatal(err)
	}
	if api.IPProto != ip_types.IP_API_PROTO_SCTP || api.IsRealIP != 1 || api.NPaths != 3 ||
		api.Flags != uint8(cnat.CNAT_TRANSLATION_ALLOC_PORT|cnat.CNAT_TRANSLATION_NO_RETURN_SESSION) {
		t.Fatalf("translationToAPI = %+v", api)
	}
	if src := api.Paths[0].SrcEp; uint32(src.SwIfIndex) != noInterface || src.Addr.Af != ip_types.ADDRESS_IP6 {
		t.Errorf("an unset source is %+v, want the zero IPv6 address", src)
	}
	if dst := api.Paths[1].DstEp; dst.SwIfIndex != 5 || dst.IfAf != ip_types.ADDRESS_IP6 {
		t.Errorf("an interface endpoint is %+v, want sw_if_index 5, IPv6", dst)
	}
	// VPP's dump leaves out is_real_ip, flags and flow_hash_config: they come from NB.
	dumped := api
	dumped.IsRealIP, dumped.Flags, dumped.FlowHashConfig = 0, 0, 0
	back, ok := translationFromAPI(dumped, fakeNames(), v)
	if !ok || !sameTranslation(back, v) {
		t.Fatalf("translationFromAPI = %v, %v; want %v", back, ok, v)
	}
	if back2, _ := translationFromAPI(dumped, fakeNames(), nil); sameTranslation(back2, v) {
		t.Error("without the NB value the fields VPP does not dump still matched")
	}
	id, ok := dumpedIdentity(api)
	if want := identityOf(v); !ok || id != want {
		t.Errorf("dumpedIdentity = %v, %v; want %v", id, ok, want)
	}
}

func TestTranslationOfAnUnknownInterfaceFailsNamingIt(t *testing.T) {
	v := &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80, Paths: []*cnatmodel.Path{{Dst: &cnatmodel.Endpoint{Interface: "tap9"}}}}
	if _, err := translationToAPI(v, fakeSw); err == nil || !strings.Contains(err.Error(), `cnat translation 10.96.0.10:80/TCP paths[0].dst: interface "tap9"`) {
		t.Errorf("translationToAPI = %v", err)
	}
}

func TestTranslationOfABadVIPFailsNamingIt(t *testing.T) {
	v := &cnatmodel.Translation{VipAddress: "10.96.0", VipPort: 80, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.2", 8080)}}}
	if _, err := translationToAPI(v, fakeSw); err == nil || !strings.Contains(err.Error(), `cnat translation 10.96.0:80/TCP: address "10.96.0" is not an IP address`) {
		t.Errorf("translationToAPI = %v", err)
	}
}

func TestDumpedTranslationOnAForeignInterfaceDiffersFromNB(t *testing.T) {
	dumped := cnat.CnatTranslation{
		Vip: cnat.CnatEndpoint{Addr: vppbase.AddrToAPI(mustAddr("10.96.0.10")), SwIfIndex: ^ifIdx(0), Port: 80}, IPProto: ip_types.IP_API_PROTO_TCP,
		Paths: []cnat.CnatEndpointTuple{{DstEp: cnat.CnatEndpoint{SwIfIndex: 42, Port: 80}, SrcEp: cnat.CnatEndpoint{SwIfIndex: ^ifIdx(0)}}},
	}
	got, ok := translationFromAPI(dumped, fakeNames(), nil)
	if !ok || got.GetPaths()[0].GetDst().GetInterface() != "sw_if_index=42" {
		t.Fatalf("translationFromAPI = %v, %v", got, ok)
	}
}

func TestDependenciesWaitForInterfacesAndTheFamilysSnatAddress(t *testing.T) {
	ds := descriptors(vppbase.DescriptorDeps{})
	tr := &cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80, Paths: []*cnatmodel.Path{
		{Dst: &cnatmodel.Endpoint{Interface: "loop0"}, Src: &cnatmodel.Endpoint{Interface: "loop0"}},
		{Dst: ep("10.1.1.2", 80), Src: &cnatmodel.Endpoint{Interface: "tap0"}},
	}}
	deps := ds[TranslationSetDescriptorName].Dependencies("", inSet(tr, backend("10.96.0.10", 443, "10.1.1.2")))
	if len(deps) != 2 || deps[0].Key != ifmodel.InterfaceKey("loop0") || deps[1].Key != ifmodel.InterfaceKey("tap0") {
		t.Errorf("set deps %v, want loop0 and tap0 once each", deps)
	}
	f := &cnatmodel.SnatFeature{Interface: "tap0", Family: cnatmodel.AddressFamily_IPV6}
	deps = ds[SnatFeatureDescriptorName].Dependencies("", f)
	if len(deps) != 2 || deps[0].Key != ifmodel.InterfaceKey("tap0") || deps[1].Key != "vpp/cnat/snat-address/IPV6" {
		t.Errorf("feature deps %v", deps)
	}
	for _, node := range []cnatmodel.SnatFeature_Node{cnatmodel.SnatFeature_INPUT, cnatmodel.SnatFeature_OUTPUT} {
		f := &cnatmodel.SnatFeature{Interface: "tap0", Node: node}
		if deps := ds[SnatFeatureDescriptorName].Dependencies("", f); len(deps) != 1 || deps[0].Key != ifmodel.InterfaceKey("tap0") {
			t.Errorf("%s feature deps %v, want only its interface (no SNAT address)", node, deps)
		}
	}
	for _, tc := range []struct {
		v    *cnatmodel.SnatAddresses
		want string
	}{
		{&cnatmodel.SnatAddresses{Ip4: "10.0.0.1"}, "vpp/cnat/snat-address/IPV4"},
		{&cnatmodel.SnatAddresses{Ip6: "fd00::1"}, "vpp/cnat/snat-address/IPV6"},
		{&cnatmodel.SnatAddresses{Interface: "tap0"}, "vpp/cnat/snat-address/IPV4 vpp/cnat/snat-address/IPV6"},
	} {
		var keys string
		for i, kv := range ds[SnatAddressesDescriptorName].DerivedValues(cnatmodel.SnatAddressesKey, tc.v) {
			if i > 0 {
				keys += " "
			}
			keys += kv.Key
		}
		if keys != tc.want {
			t.Errorf("derived of %v = %s, want %s", tc.v, keys, tc.want)
		}
	}
}

type ifIdx = interface_types.InterfaceIndex

func mustAddr(s string) netip.Addr {
	a, ok := cnatmodel.ParseAddr(s)
	if !ok {
		panic(s)
	}
	return a
}

// Translations equal in canonical form compare equal, whatever the spelling of their
// endpoints; any field that VPP is given makes them differ.
// A translation update converts the translation for every message: the conversion of
// one of 10 backends allocates only its path list, not the texts of its error messages.
func TestTranslationToAPIAllocatesOnlyThePaths(t *testing.T) {
	v := &cnatmodel.Translation{VipAddress: "10.20.0.11", VipPort: 30000, Protocol: cnatmodel.Protocol_TCP, IsRealIp: true, AllocPort: true}
	for i := 0; i < 10; i++ {
		v.Paths = append(v.Paths, &cnatmodel.Path{Dst: ep(fmt.Sprintf("10.1.%d.2", i), 8080), Src: ep("192.168.16.1", 0)})
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := translationToAPI(v, fakeSw); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("translationToAPI allocates %.0f times per call, want 1 (the paths)", n)
	}
}

// sameTranslation is the descriptor's comparison of two translations (one
// cnatmodel.Comparer per call).
func sameTranslation(a, b *cnatmodel.Translation) bool {
	var c cnatmodel.Comparer
	return c.Same(a, b)
}

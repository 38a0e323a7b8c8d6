package vpp_cnat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func addr(a string, port uint32) *Endpoint { return &Endpoint{Address: a, Port: port} }

func TestValidateAcceptsWellFormedValues(t *testing.T) {
	for _, err := range []error{
		ValidateTranslation(&Translation{VipAddress: "10.96.0.10", VipPort: 80, Paths: []*Path{
			{Dst: addr("10.1.1.2", 8080)},
			{Dst: &Endpoint{Interface: "loop0", Port: 8080}, Src: addr("10.1.1.1", 0)},
		}, LbType: Translation_MAGLEV, FlowHashConfig: 0x9f, AllocPort: true}),
		ValidateTranslation(&Translation{VipAddress: "fd00::a", VipPort: 53, Protocol: Protocol_UDP, Paths: []*Path{
			{Dst: &Endpoint{Interface: "loop0", InterfaceFamily: AddressFamily_IPV6, Port: 53}},
		}}),
		ValidateTranslation(&Translation{VipAddress: "10.96.0.10", VipPort: 0, Paths: []*Path{{Dst: addr("10.1.1.2", 0)}}}),
		ValidateSnatAddresses(&SnatAddresses{Ip4: "192.168.16.1", Ip6: "fd00::1"}),
		ValidateSnatAddresses(&SnatAddresses{Interface: "GigabitEthernet0/8/0"}),
		ValidateSnatPolicy(&SnatPolicy{Policy: SnatPolicy_K8S}),
		ValidateSnatExcludePrefix(&SnatExcludePrefix{Prefix: "10.1.0.0/16"}),
		ValidateSnatPolicyInterface(&SnatPolicyInterface{Interface: "tap0", Table: SnatPolicyInterface_HOST}),
		ValidateSnatFeature(&SnatFeature{Interface: "tap0", Family: AddressFamily_IPV6}),
	} {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestValidateNamesEveryBadFieldWithItsValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		fields []string
		texts  []string
	}{
		{"no vip", ValidateTranslation(&Translation{Paths: []*Path{{Dst: addr("10.1.1.2", 0)}}}), []string{"vip_address"}, []string{"vip_address is missing"}},
		{"bad vip", ValidateTranslation(&Translation{VipAddress: "10.96.0", Paths: []*Path{{Dst: addr("10.1.1.2", 0)}}}),
			[]string{"vip_address"}, []string{`vip_address "10.96.0" is not an IP address`}},
		{"no path", ValidateTranslation(&Translation{VipAddress: "10.96.0.10", VipPort: 80}), []string{"paths"}, []string{"paths is empty"}},
		{"bad translation", ValidateTranslation(&Translation{
			VipAddress: "10.96.0.10", VipPort: 65536, Protocol: 7, LbType: 3, FlowHashConfig: 0x400,
			Paths: []*Path{
				{},
				{Dst: addr("fd00::1", 80), Src: &Endpoint{Address: "10.0.0.1", Interface: "tap0"}},
				{Dst: &Endpoint{Interface: "tap0", InterfaceFamily: AddressFamily_IPV6}, Src: addr("10.0.0", 0)},
			},
		}), []string{"vip_port", "protocol", "lb_type", "flow_hash_config", "paths[0].dst", "paths[1].dst.address",
			"paths[1].src", "paths[2].dst.interface_family", "paths[2].src.address"},
			[]string{"vip_port 65536", "protocol 7", "lb_type 3", "flow_hash_config 0x400", "fd00::1 is not of the VIP's family IPV4",
				`address "10.0.0.1" and interface "tap0"`, `paths[2].src.address "10.0.0"`}},
		{"snat addresses", ValidateSnatAddresses(&SnatAddresses{Ip4: "fd00::1", Ip6: "10.0.0.1"}),
			[]string{"ip4", "ip6"}, []string{`ip4 "fd00::1" is not an IPv4`, `ip6 "10.0.0.1" is not an IPv6`}},
		{"snat both", ValidateSnatAddresses(&SnatAddresses{Ip4: "10.0.0.1", Interface: "tap0"}),
			[]string{"interface"}, []string{`interface "tap0" is set with ip4 "10.0.0.1"`}},
		{"snat none", ValidateSnatAddresses(&SnatAddresses{}), []string{"ip4"}, []string{"all empty"}},
		{"policy", ValidateSnatPolicy(&SnatPolicy{Policy: 5}), []string{"policy"}, []string{"policy 5"}},
		{"prefix", ValidateSnatExcludePrefix(&SnatExcludePrefix{Prefix: "10.0.0/8"}), []string{"prefix"}, []string{`prefix "10.0.0/8"`}},
		{"policy if", ValidateSnatPolicyInterface(&SnatPolicyInterface{Table: 4}), []string{"interface", "table"}, []string{"table 4"}},
		{"feature", ValidateSnatFeature(&SnatFeature{Family: 2, Node: 3}), []string{"interface", "node", "family"}, []string{"family 2", "node 3"}},
	} {
		var ie *InvalidError
		if !errors.As(tc.err, &ie) {
			t.Errorf("%s: %v is not an *InvalidError", tc.name, tc.err)
			continue
		}
		if strings.Join(ie.Fields, ",") != strings.Join(tc.fields, ",") {
			t.Errorf("%s: fields %v, want %v", tc.name, ie.Fields, tc.fields)
		}
		for _, text := range tc.texts {
			if !strings.Contains(tc.err.Error(), text) {
				t.Errorf("%s: %q does not say %q", tc.name, tc.err, text)
			}
		}
	}
}

func TestFormatEndpoint(t *testing.T) {
	for _, tc := range []struct {
		e    *Endpoint
		want string
	}{
		{addr("10.96.0.10", 80), "10.96.0.10:80"},
		{addr("FD00::A", 80), "[fd00::a]:80"},
		{&Endpoint{Interface: "tap0", InterfaceFamily: AddressFamily_IPV6, Port: 1}, "tap0(IPV6):1"},
		{nil, "-"},
	} {
		if got := FormatEndpoint(tc.e); got != tc.want {
			t.Errorf("FormatEndpoint(%v) = %s, want %s", tc.e, got, tc.want)
		}
	}
	if got := FormatTranslation(&Translation{VipAddress: "10.96.0.10", VipPort: 80, Protocol: Protocol_UDP}); got != "10.96.0.10:80/UDP" {
		t.Errorf("FormatTranslation = %s", got)
	}
}

// endpointValid, the check without messages, agrees with the check that names the
// problems, for every kind of endpoint and VIP family.
func TestEndpointValidAgreesWithTheProblemsFound(t *testing.T) {
	endpoints := []*Endpoint{nil, {}, {Port: 80}, {Port: 70000}, {Address: "10.1.1.2", Port: 8080}, {Address: "fd00::2"},
		{Address: "::ffff:10.1.1.2"}, {Address: "0.0.0.0"}, {Address: "x"}, {Address: "fe80::1%eth0"},
		{Address: "10.1.1.2", Interface: "tap0"}, {Interface: "tap0"}, {Interface: "tap0", InterfaceFamily: AddressFamily_IPV6},
		{Interface: "tap0", InterfaceFamily: 7}, {Address: "10.1.1.2", Port: 65536}}
	for _, family := range []AddressFamily{unknownFamily, AddressFamily_IPV4, AddressFamily_IPV6} {
		for _, e := range endpoints {
			var p problems
			p.endpoint("e", e, family)
			if want := len(p.e.Problems) == 0; endpointValid(e, family) != want {
				t.Errorf("endpoint %v, VIP family %v: endpointValid %v, but the problems found are %q", e, family, !want, p.e.Problems)
			}
		}
	}
}

// The scheduler validates every translation of a first resync: a valid one of 10
// paths is checked without allocating.
func TestValidateTranslationOfAValidTranslationDoesNotAllocate(t *testing.T) {
	v := &Translation{VipAddress: "10.20.0.11", VipPort: 30000, Protocol: Protocol_TCP, IsRealIp: true, AllocPort: true}
	for i := 0; i < 10; i++ {
		v.Paths = append(v.Paths, &Path{Dst: &Endpoint{Address: fmt.Sprintf("10.1.%d.2", i), Port: 8080},
			Src: &Endpoint{Address: "192.168.16.1"}})
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := ValidateTranslation(v); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ValidateTranslation allocates %.0f times per call, want 0", n)
	}
}

func TestValidateTranslationSetNamesTheTranslationAndItsField(t *testing.T) {
	good := func(vip string, port uint32) *Translation {
		return &Translation{VipAddress: vip, VipPort: port, Paths: []*Path{{Dst: &Endpoint{Address: "10.1.1.2", Port: 8080}}}}
	}
	if err := ValidateTranslationSet(&TranslationSet{Label: "default/web", Translations: []*Translation{good("10.96.0.10", 80), good("10.96.0.10", 443)}}); err != nil {
		t.Fatalf("a valid set refused: %v", err)
	}
	if err := ValidateTranslationSet(&TranslationSet{Label: "empty/set"}); err != nil {
		t.Fatalf("an empty set refused: %v", err)
	}
	bad := good("10.96.0.10", 70000)
	err := ValidateTranslationSet(&TranslationSet{Label: "a b", Translations: []*Translation{
		good("10.96.0.10", 80), bad, good("10.96.0.010", 80), nil, good("10.96.0.10", 80),
	}})
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("ValidateTranslationSet = %v, want an *InvalidError", err)
	}
	want := []string{"label", "translations[1].vip_port", "translations[2].vip_address", "translations[3]", "translations[4]"}
	if !slices.Equal(ie.Fields, want) {
		t.Errorf("fields %q, want %q (%v)", ie.Fields, want, err)
	}
	for _, s := range []string{`label "a b"`, "translations[1].vip_port 70000", "is also translations[0]"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestValidateTranslationSetOfAValidSmallSetDoesNotAllocate(t *testing.T) {
	s := &TranslationSet{Label: "default/web"}
	for _, port := range []uint32{80, 443, 8080} {
		s.Translations = append(s.Translations, &Translation{VipAddress: "10.96.0.10", VipPort: port, Paths: []*Path{{Dst: addr("10.1.1.2", 8080)}}})
	}
	if n := testing.AllocsPerRun(100, func() { _ = ValidateTranslationSet(s) }); n != 0 {
		t.Errorf("ValidateTranslationSet of a valid set of 3 allocates %v times", n)
	}
}

func TestDuplicatesAreFoundInEverySpellingOfAnAddress(t *testing.T) {
	tr := func(vip string) *Translation {
		return &Translation{VipAddress: vip, VipPort: 80, Paths: []*Path{{Dst: addr("fd00::2", 8080)}}}
	}
	v4 := func(vip string) *Translation {
		return &Translation{VipAddress: vip, VipPort: 80, Paths: []*Path{{Dst: addr("10.1.1.2", 8080)}}}
	}
	for _, pair := range [][2]*Translation{
		{tr("fd00::a"), tr("FD00:0::A")},
		{v4("10.96.0.10"), v4("::ffff:10.96.0.10")},
	} {
		err := ValidateTranslationSet(&TranslationSet{Label: "default/web", Translations: pair[:]})
		if err == nil || !strings.Contains(err.Error(), "is also translations[0]") {
			t.Errorf("%s and %s: %v, want a duplicate", pair[0].GetVipAddress(), pair[1].GetVipAddress(), err)
		}
	}
	// A new IPv4 spelling beside a known IPv4-mapped one (the duplicates of the few
	// translations not known are found in one pass over the set).
	known := v4("::ffff:10.96.0.10")
	set := &TranslationSet{Label: "default/web", Translations: []*Translation{known, v4("10.96.0.11"), v4("10.96.0.10")}}
	err := ValidateTranslationSetKnowing(set, func(t *Translation) bool { return t == known })
	if err == nil || !strings.Contains(err.Error(), "translations[2]") || !strings.Contains(err.Error(), "is also translations[0]") {
		t.Errorf("10.96.0.10 new beside a known ::ffff:10.96.0.10: %v, want translations[2] a duplicate of translations[0]", err)
	}
}

// TestSharedPathsAreCheckedForEachFamily: two translations sharing one slice of
// paths (as a node port's do) are both valid when their VIPs are of the paths'
// family; a VIP of the other family sharing them is refused.
func TestSharedPathsAreCheckedForEachFamily(t *testing.T) {
	paths := []*Path{{Dst: addr("10.1.1.2", 8080)}, {Dst: addr("10.1.1.3", 8080)}}
	s := &TranslationSet{Label: "default/np", Translations: []*Translation{
		{VipAddress: "192.168.16.1", VipPort: 30080, Paths: paths},
		{VipAddress: "192.168.16.2", VipPort: 30080, Paths: paths},
	}}
	if err := ValidateTranslationSet(s); err != nil {
		t.Fatalf("two IPv4 node ports sharing their paths: %v", err)
	}
	s.Translations = append(s.Translations, &Translation{VipAddress: "fd00:168:16::1", VipPort: 30080, Paths: paths})
	err := ValidateTranslationSet(s)
	if err == nil || !strings.Contains(err.Error(), "translations[2].paths[0].dst.address 10.1.1.2 is not of the VIP's family IPV6") {
		t.Errorf("an IPv6 VIP sharing IPv4 paths: %v, want its paths refused", err)
	}
}

// TestKnownPathsAreValidOnlyForTheirFamily: paths shared with a known translation are
// taken as valid for a new translation of the same family only.
func TestKnownPathsAreValidOnlyForTheirFamily(t *testing.T) {
	paths := []*Path{{Dst: addr("10.1.1.2", 8080)}}
	known := &Translation{VipAddress: "192.168.16.1", VipPort: 30080, Paths: paths}
	isKnown := func(tr *Translation) bool { return tr == known }
	same := &TranslationSet{Label: "default/np", Translations: []*Translation{known, {VipAddress: "192.168.16.2", VipPort: 30080, Paths: paths}}}
	if err := ValidateTranslationSetKnowing(same, isKnown); err != nil {
		t.Errorf("an IPv4 node port sharing a known one's paths: %v", err)
	}
	other := &TranslationSet{Label: "default/np", Translations: []*Translation{known, {VipAddress: "fd00::1", VipPort: 30080, Paths: paths}}}
	if err := ValidateTranslationSetKnowing(other, isKnown); err == nil || !strings.Contains(err.Error(), "translations[1].paths[0].dst.address") {
		t.Errorf("an IPv6 VIP sharing a known IPv4 translation's paths: %v, want its paths refused", err)
	}
}

func TestValidateTranslationSetEditedReadsTheNewTranslationsOnly(t *testing.T) {
	tr := func(vip string, paths []*Path) *Translation {
		return &Translation{VipAddress: vip, VipPort: 30080, IsRealIp: true, Paths: paths}
	}
	v4 := []*Path{{Dst: addr("10.1.1.2", 8080)}}
	set := &TranslationSet{Label: "default/np", Translations: []*Translation{
		tr("192.168.16.1", v4),
		tr("192.168.16.2", v4),                                // new, the paths of the one before: valid
		tr("fd00::1", []*Path{{Dst: addr("10.1.1.2", 8080)}}), // new, an IPv4 path on an IPv6 VIP
		tr("fd00::2", nil),                                    // new, no path
		nil,                                                   // new, missing
		{VipAddress: "192.168.16.9", VipPort: 70000, Paths: v4}, // known: not read
	}}
	err := ValidateTranslationSetEdited(set, []int{1, 2, 3, 4})
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("ValidateTranslationSetEdited = %v, want an InvalidError", err)
	}
	want := []string{"translations[2].paths[0].dst.address", "translations[3].paths", "translations[4]"}
	if !slices.Equal(ie.Fields, want) {
		t.Errorf("fields %q, want %q (%v)", ie.Fields, want, err)
	}

	// A new translation sharing the paths of a new one found invalid has them checked
	// on its own.
	bad := []*Path{{Dst: addr("10.1.1.2", 8080)}}
	set = &TranslationSet{Label: "default/np", Translations: []*Translation{tr("fd00::1", bad), tr("fd00::2", bad)}}
	if err := ValidateTranslationSetEdited(set, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "translations[1].paths[0]") {
		t.Errorf("ValidateTranslationSetEdited = %v, want translations[1]'s path refused too", err)
	}
	if err := ValidateTranslationSetEdited(set, nil); err != nil {
		t.Errorf("ValidateTranslationSetEdited with nothing new = %v, want nil", err)
	}
}

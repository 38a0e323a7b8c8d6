package vpp_cnat

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

func TestTranslationIDIsVPPsIdentityAndParsesBack(t *testing.T) {
	for _, tc := range []struct {
		vip   string
		port  uint32
		proto Protocol
		want  string
	}{
		{"10.96.0.10", 80, Protocol_TCP, "10.96.0.10/80/TCP"},
		{"FD00::0:A", 53, Protocol_UDP, "fd00::a/53/UDP"},
		{"192.168.16.1", 0, Protocol_SCTP, "192.168.16.1/0/SCTP"},
	} {
		id := TranslationID(tc.vip, tc.port, tc.proto)
		if id != tc.want {
			t.Errorf("TranslationID(%s, %d, %s) = %s, want %s", tc.vip, tc.port, tc.proto, id, tc.want)
		}
		vip, port, proto, ok := ParseTranslationID(id)
		if !ok || port != tc.port || proto != tc.proto || TranslationID(vip, port, proto) != id {
			t.Errorf("ParseTranslationID(%s) = %s %d %s %v", id, vip, port, proto, ok)
		}
		if got := TranslationIDOf(&Translation{VipAddress: tc.vip, VipPort: tc.port, Protocol: tc.proto}); got != tc.want {
			t.Errorf("TranslationIDOf = %s; want %s", got, tc.want)
		}
	}
	for _, bad := range []string{
		"10.96.0.10/80",
		"10.96.0.10/65536/TCP",
		"10.96.0.10/080/TCP",
		"10.96.0.10/80/ICMP",
		"x/80/TCP",
		"10.96.0.10/80/TCP/x",
	} {
		if _, _, _, ok := ParseTranslationID(bad); ok {
			t.Errorf("ParseTranslationID(%s) accepted", bad)
		}
	}
}

func TestTranslationSetKeyIsItsLabel(t *testing.T) {
	key := TranslationSetKey("default/web")
	if key != "config/vpp/cnat/v2/translation-set/default/web" {
		t.Errorf("TranslationSetKey = %s", key)
	}
	if l, ok := ParseTranslationSetKey(key); !ok || l != "default/web" {
		t.Errorf("ParseTranslationSetKey(%s) = %q %v", key, l, ok)
	}
	k, err := ModelKey(&TranslationSet{Label: "default/web"})
	if err != nil || k != key {
		t.Errorf("ModelKey = %s, %v; want %s", k, err, key)
	}
	for _, bad := range []string{"config/vpp/cnat/v2/translation-set/", "config/vpp/cnat/v2/translation-set/a b", "config/vpp/cnat/v2/translation/10.96.0.10/80/TCP"} {
		if _, ok := ParseTranslationSetKey(bad); ok {
			t.Errorf("ParseTranslationSetKey(%q) accepted", bad)
		}
	}
	if _, err := ModelKey(&TranslationSet{Label: "tab\there"}); !errors.Is(err, keyutil.ErrInvalidValue) || !strings.Contains(err.Error(), "label") {
		t.Errorf("ModelKey of a label with a tab: %v, want an invalid value naming the label", err)
	}
	if _, err := ModelKey(&Translation{}); !errors.Is(err, keyutil.ErrUnknownModel) {
		t.Errorf("ModelKey of a single translation: %v, want ErrUnknownModel (translations live in sets)", err)
	}
}

func TestSnatKeysParseBack(t *testing.T) {
	if k := SnatExcludePrefixKey("10.1.2.3/16"); k != "config/vpp/cnat/v2/snat-exclude/10.1.0.0/16" {
		t.Errorf("SnatExcludePrefixKey = %s", k)
	}
	if p, ok := ParseSnatExcludePrefixKey(SnatExcludePrefixKey("FD00::1/64")); !ok || p != "fd00::/64" {
		t.Errorf("ParseSnatExcludePrefixKey = %s %v", p, ok)
	}
	if _, ok := ParseSnatExcludePrefixKey("config/vpp/cnat/v2/snat-exclude/10.1.2.3/16"); ok {
		t.Error("ParseSnatExcludePrefixKey accepted a prefix that is not masked")
	}
	key := SnatPolicyInterfaceKey("GigabitEthernet0/8/0", SnatPolicyInterface_POD)
	if key != "config/vpp/cnat/v2/snat-interface/GigabitEthernet0/8/0/table/POD" {
		t.Errorf("SnatPolicyInterfaceKey = %s", key)
	}
	if i, tb, ok := ParseSnatPolicyInterfaceKey(key); !ok || i != "GigabitEthernet0/8/0" || tb != SnatPolicyInterface_POD {
		t.Errorf("ParseSnatPolicyInterfaceKey = %s %s %v", i, tb, ok)
	}
	key = SnatFeatureKey("tap-vpp2", SnatFeature_OUTPUT, AddressFamily_IPV6)
	if key != "config/vpp/cnat/v2/feature/tap-vpp2/OUTPUT/family/IPV6" {
		t.Errorf("SnatFeatureKey = %s", key)
	}
	if i, n, f, ok := ParseSnatFeatureKey(key); !ok || i != "tap-vpp2" || n != SnatFeature_OUTPUT || f != AddressFamily_IPV6 {
		t.Errorf("ParseSnatFeatureKey = %s %s %s %v", i, n, f, ok)
	}
	if i, n, _, ok := ParseSnatFeatureKey("config/vpp/cnat/v2/feature/a/b/INPUT/family/IPV4"); !ok || i != "a/b" || n != SnatFeature_INPUT {
		t.Errorf("ParseSnatFeatureKey of an interface with a slash = %s %s %v", i, n, ok)
	}
	for _, bad := range []string{
		"config/vpp/cnat/v2/snat-interface/tap0/table/NAT",
		"config/vpp/cnat/v2/snat-interface/tap0",
		"config/vpp/cnat/v2/feature/tap0/SNAT/family/IPV5",
		"config/vpp/cnat/v2/feature//SNAT/family/IPV4",
		"config/vpp/cnat/v2/feature/tap0/family/IPV4",
		"config/vpp/cnat/v2/feature/tap0/DNAT/family/IPV4",
		"config/vpp/cnat/v2/feature/tap0/INPUTX/family/IPV4",
	} {
		_, _, ok1 := ParseSnatPolicyInterfaceKey(bad)
		_, _, _, ok2 := ParseSnatFeatureKey(bad)
		if ok1 || ok2 {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestModelKeyNamesTheBadFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    func() (string, error)
		want string
	}{
		{"label", func() (string, error) { return ModelKey(&TranslationSet{}) }, "label is empty"},
		{"prefix", func() (string, error) { return ModelKey(&SnatExcludePrefix{Prefix: "10.0.0.0/33"}) }, `prefix "10.0.0.0/33"`},
		{"iface", func() (string, error) { return ModelKey(&SnatFeature{}) }, "empty interface"},
		{"policy iface", func() (string, error) { return ModelKey(&SnatPolicyInterface{}) }, "empty interface"},
	} {
		_, err := tc.k()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, keyutil.ErrInvalidValue) {
			t.Errorf("%s: ModelKey = %v, want ErrInvalidValue naming %s", tc.name, err, tc.want)
		}
	}
	if k, err := ModelKey(&SnatAddresses{}); err != nil || k != SnatAddressesKey {
		t.Errorf("ModelKey(SnatAddresses) = %s, %v", k, err)
	}
	if k, err := ModelKey(&SnatPolicy{}); err != nil || k != SnatPolicyKey {
		t.Errorf("ModelKey(SnatPolicy) = %s, %v", k, err)
	}
	if _, err := ModelKey(wrapperspb.String("x")); !errors.Is(err, keyutil.ErrUnknownModel) {
		t.Errorf("ModelKey of a foreign message = %v", err)
	}
}

package cnatplugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// descriptors returns the plugin's descriptors by name, with no VPP behind them.
func descriptors(deps vppbase.DescriptorDeps) map[string]*kvapi.KVDescriptor {
	if deps.Log == nil {
		deps.Log = logrus.New()
	}
	out := map[string]*kvapi.KVDescriptor{}
	for _, d := range Descriptors(deps) {
		out[d.Name] = d
	}
	return out
}

func ep(addr string, port uint32) *cnatmodel.Endpoint {
	return &cnatmodel.Endpoint{Address: addr, Port: port}
}

// inSet returns the set "default/web" of the translations ts.
func inSet(ts ...*cnatmodel.Translation) *cnatmodel.TranslationSet {
	return &cnatmodel.TranslationSet{Label: "default/web", Translations: ts}
}

// backend returns the TCP translation of vip:port to one backend on port 8080.
func backend(vip string, port uint32, dst string) *cnatmodel.Translation {
	return &cnatmodel.Translation{VipAddress: vip, VipPort: port, Paths: []*cnatmodel.Path{{Dst: ep(dst, 8080)}}}
}

func TestValidateRejectsBadValuesNamingFieldAndValue(t *testing.T) {
	ds := descriptors(vppbase.DescriptorDeps{})
	for _, tc := range []struct {
		desc  string
		key   string
		value proto.Message
		field string
		text  string
	}{
		{TranslationSetDescriptorName, "", inSet(&cnatmodel.Translation{VipAddress: "10.96.0", VipPort: 80}), "translations[0].vip_address",
			`translations[0].vip_address "10.96.0" is not an IP address`},
		{TranslationSetDescriptorName, "", inSet(&cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80}), "translations[0].paths", "translations[0].paths is empty"},
		{TranslationSetDescriptorName, "", inSet(&cnatmodel.Translation{VipAddress: "10.96.0.10", VipPort: 80, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.2", 70000)}}}),
			"translations[0].paths[0].dst.port", "translations[0].paths[0].dst.port 70000 is above 65535"},
		{TranslationSetDescriptorName, "", inSet(&cnatmodel.Translation{VipAddress: "fd00::a", VipPort: 80, Paths: []*cnatmodel.Path{{Dst: ep("10.1.1.2", 80)}}}),
			"translations[0].paths[0].dst.address", "paths[0].dst.address 10.1.1.2 is not of the VIP's family IPV6"},
		{TranslationSetDescriptorName, "", inSet(backend("10.96.0.10", 80, "10.1.1.2"), backend("10.96.0.10", 80, "10.1.1.3")),
			"translations[1]", "is also translations[0]"},
		{TranslationSetDescriptorName, "", &cnatmodel.TranslationSet{Label: "no space"}, "label", `label "no space" contains whitespace`},
		{TranslationSetDescriptorName, cnatmodel.TranslationSetKey("default/db"), inSet(backend("10.96.0.10", 80, "10.1.1.2")),
			"label", `does not match its value (want "config/vpp/cnat/v2/translation-set/default/web")`},
		{SnatAddressesDescriptorName, cnatmodel.SnatAddressesKey, &cnatmodel.SnatAddresses{Ip4: "fd00::1"}, "ip4", `ip4 "fd00::1" is not an IPv4 address`},
		{SnatPolicyDescriptorName, cnatmodel.SnatPolicyKey, &cnatmodel.SnatPolicy{Policy: 9}, "policy", "policy 9 is not NONE, IF_PFX or K8S"},
		{SnatExcludePrefixDescriptorName, "", &cnatmodel.SnatExcludePrefix{Prefix: "10.0.0.0/40"}, "prefix", `prefix "10.0.0.0/40" is not a prefix`},
		{SnatExcludePrefixDescriptorName, cnatmodel.SnatExcludePrefixKey("10.0.0.0/8"), &cnatmodel.SnatExcludePrefix{Prefix: "10.0.0.0/16"}, "prefix", "does not match"},
		{SnatPolicyInterfaceDescriptorName, "", &cnatmodel.SnatPolicyInterface{Interface: "tap0", Table: 4}, "table", "table 4 is not INCLUDE_V4"},
		{SnatFeatureDescriptorName, "", &cnatmodel.SnatFeature{Family: cnatmodel.AddressFamily_IPV6}, "interface", "interface is empty"},
		{SnatFeatureDescriptorName, cnatmodel.SnatFeatureKey("tap0", cnatmodel.SnatFeature_SNAT, cnatmodel.AddressFamily_IPV4), &cnatmodel.SnatFeature{Interface: "tap0", Family: cnatmodel.AddressFamily_IPV6}, "family", "does not match"},
		{SnatFeatureDescriptorName, "", &cnatmodel.SnatFeature{Interface: "tap0", Node: 7}, "node", "node 7 is not SNAT, INPUT or OUTPUT"},
		{SnatFeatureDescriptorName, cnatmodel.SnatFeatureKey("tap0", cnatmodel.SnatFeature_SNAT, cnatmodel.AddressFamily_IPV4), &cnatmodel.SnatFeature{Interface: "tap0", Node: cnatmodel.SnatFeature_INPUT}, "node", "does not match"},
	} {
		err := ds[tc.desc].Validate(tc.key, tc.value)
		var ive *kvapi.InvalidValueError
		if !errors.As(err, &ive) {
			t.Errorf("%s: Validate(%v) = %v, want an InvalidValueError", tc.desc, tc.value, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.text) || !strings.Contains(strings.Join(ive.InvalidFields, ","), tc.field) {
			t.Errorf("%s: Validate(%v) = %v (fields %v), want field %s and %q", tc.desc, tc.value, err, ive.InvalidFields, tc.field, tc.text)
		}
		if ds[tc.desc].IsRetriableFailure(err) {
			t.Errorf("%s: an invalid value is retried", tc.desc)
		}
	}
}

func TestValidateAcceptsValuesUnderTheirKey(t *testing.T) {
	ds := descriptors(vppbase.DescriptorDeps{})
	for _, v := range []proto.Message{
		inSet(&cnatmodel.Translation{VipAddress: "FD00::A", VipPort: 80, Protocol: cnatmodel.Protocol_UDP, Paths: []*cnatmodel.Path{{Dst: ep("fd00:1::2", 8080)}}}),
		&cnatmodel.TranslationSet{Label: "empty/set"},
		&cnatmodel.SnatAddresses{Ip4: "192.168.16.1"},
		&cnatmodel.SnatPolicy{Policy: cnatmodel.SnatPolicy_K8S},
		&cnatmodel.SnatExcludePrefix{Prefix: "10.1.2.3/16"},
		&cnatmodel.SnatPolicyInterface{Interface: "GigabitEthernet0/8/0", Table: cnatmodel.SnatPolicyInterface_HOST},
		&cnatmodel.SnatFeature{Interface: "tap0", Family: cnatmodel.AddressFamily_IPV6},
	} {
		key, err := cnatmodel.ModelKey(v)
		if err != nil {
			t.Fatal(err)
		}
		var d *kvapi.KVDescriptor
		for _, c := range ds {
			if c.KeySelector(key) {
				if d != nil {
					t.Fatalf("%s is selected by %s and %s", key, d.Name, c.Name)
				}
				d = c
			}
		}
		if d == nil {
			t.Fatalf("no descriptor selects %s", key)
		}
		if err := d.Validate(key, v); err != nil {
			t.Errorf("%s: Validate(%s) = %v", d.Name, key, err)
		}
	}
}

// TestAChangedSetIsValidatedForWhatItDoesNotShare: a set validated once, then given
// again with a new message and one of its messages twice: the duplicate is found
// although both are messages of the value validated before.
func TestAChangedSetIsValidatedForWhatItDoesNotShare(t *testing.T) {
	d := descriptors(vppbase.DescriptorDeps{})[TranslationSetDescriptorName]
	key := cnatmodel.TranslationSetKey("default/web")
	a, b := backend("10.96.0.10", 80, "10.1.1.2"), backend("10.96.0.10", 443, "10.1.1.2")
	if err := d.Validate(key, inSet(a, b)); err != nil {
		t.Fatal(err)
	}
	err := d.Validate(key, inSet(a, backend("10.96.0.10", 8080, "10.1.1.2"), b, a))
	if err == nil || !strings.Contains(err.Error(), "translations[3]") || !strings.Contains(err.Error(), "is also translations[0]") {
		t.Errorf("Validate of a set holding a shared message twice = %v, want translations[3] named as a duplicate", err)
	}
	if err := d.Validate(key, inSet(b, a)); err != nil {
		t.Errorf("Validate of the shared messages in another order = %v", err)
	}
}

// TestAnOrderedSetsChangeIsCheckedByTheNeighboursOfItsNewMessages: a set in the
// order of sets (the renderer's) changed by a few messages is checked for duplicates
// through the order of its new messages; a new message breaking the order, or
// written in another spelling of an address it has, is checked against the whole
// set: its duplicate is found.
func TestAnOrderedSetsChangeIsCheckedByTheNeighboursOfItsNewMessages(t *testing.T) {
	key := cnatmodel.TranslationSetKey("default/web")
	a, b, c := backend("192.168.16.1", 30080, "10.1.1.2"), backend("192.168.16.2", 30080, "10.1.1.2"), backend("192.168.16.3", 30080, "10.1.1.2")
	for _, tc := range []struct {
		name string
		next []*cnatmodel.Translation
		dup  string // the duplicate reported, "" for a valid set
	}{
		{"a node joining in the middle", []*cnatmodel.Translation{a, backend("192.168.16.15", 30080, "10.1.1.2"), b, c}, ""},
		{"a node leaving from the middle", []*cnatmodel.Translation{a, c}, ""},
		{"a new message after its twin", []*cnatmodel.Translation{a, b, backend("192.168.16.2", 30080, "10.1.1.3"), c}, "translations[2]"},
		{"a new message far from its twin", []*cnatmodel.Translation{a, b, c, backend("192.168.16.1", 30080, "10.1.1.3")}, "translations[3]"},
		{"a new message of a twin's spelling", []*cnatmodel.Translation{a, b, c, backend("::ffff:192.168.16.3", 30080, "10.1.1.3")}, "translations[3]"},
		{"a new message in place of a kept one's twin", []*cnatmodel.Translation{backend("192.168.16.3", 30080, "10.1.1.3"), b, c}, "translations[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := descriptors(vppbase.DescriptorDeps{})[TranslationSetDescriptorName]
			if err := d.Validate(key, inSet(a, b, c)); err != nil {
				t.Fatal(err)
			}
			err := d.Validate(key, inSet(tc.next...))
			switch {
			case tc.dup == "" && err != nil:
				t.Errorf("Validate = %v, want the set accepted", err)
			case tc.dup != "" && (err == nil || !strings.Contains(err.Error(), tc.dup) || !strings.Contains(err.Error(), "is also translations[")):
				t.Errorf("Validate = %v, want %s named as a duplicate", err, tc.dup)
			}
		})
	}
}

func TestDiffIndexesFindsAFewEditsAndGivesUpBeyondMaxEdits(t *testing.T) {
	var m [20]*cnatmodel.Translation
	for i := range m {
		m[i] = backend(fmt.Sprintf("192.168.16.%d", i+1), 30080, "10.1.1.2")
	}
	list := func(idx ...int) []*cnatmodel.Translation {
		out := make([]*cnatmodel.Translation, len(idx))
		for k, i := range idx {
			out[k] = m[i]
		}
		return out
	}
	seq := func(lo, hi int) []int {
		var out []int
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		ot, nt      []*cnatmodel.Translation
		gone, fresh []int
		ok          bool
	}{
		{"same", list(0, 1, 2), list(0, 1, 2), nil, nil, true},
		{"inserted", list(0, 1, 2), list(0, 5, 1, 2), nil, []int{1}, true},
		{"removed", list(0, 1, 2), list(0, 2), []int{1}, nil, true},
		{"replaced", list(0, 1, 2), list(0, 5, 2), []int{1}, []int{1}, true},
		{"appended", list(0, 1), list(0, 1, 5, 6), nil, []int{2, 3}, true},
		{"eight new", list(0), list(append([]int{0}, seq(10, 18)...)...), nil, seq(1, 9), true},
		{"nine new", list(0), list(append([]int{0}, seq(10, 19)...)...), nil, nil, false},
		{"five replaced", list(seq(0, 5)...), list(seq(10, 15)...), nil, nil, false},
	} {
		gone, fresh, ok := diffIndexes(tc.ot, tc.nt)
		if ok != tc.ok || !slices.Equal(gone.list(), tc.gone) || !slices.Equal(fresh.list(), tc.fresh) {
			t.Errorf("%s: diffIndexes = %v %v %v, want %v %v %v", tc.name, gone.list(), fresh.list(), ok, tc.gone, tc.fresh, tc.ok)
		}
	}
}

func TestAnOrderedSetsNewMessagesAreValidated(t *testing.T) {
	key := cnatmodel.TranslationSetKey("default/web")
	a, b := backend("192.168.16.1", 30080, "10.1.1.2"), backend("192.168.16.2", 30080, "10.1.1.2")
	d := descriptors(vppbase.DescriptorDeps{})[TranslationSetDescriptorName]
	if err := d.Validate(key, inSet(a, b)); err != nil {
		t.Fatal(err)
	}
	err := d.Validate(key, inSet(a, backend("192.168.16.15", 30080, "fd00::2"), b))
	if err == nil || !strings.Contains(err.Error(), "translations[1].paths[0].dst.address") {
		t.Errorf("Validate = %v, want the new translation's IPv6 path on an IPv4 VIP refused", err)
	}
	// The set accepted before stays the reference: a valid join after the refusal is
	// accepted.
	if err := d.Validate(key, inSet(a, backend("192.168.16.15", 30080, "10.1.1.2"), b)); err != nil {
		t.Errorf("Validate = %v, want a valid join accepted", err)
	}
}

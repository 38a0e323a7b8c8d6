package models

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linux_interfaces "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linux_l3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	vpp_interfaces "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vpp_l2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vpp_l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	vpp_stn "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
)

// sampleValues holds one value of every model with the key it must have.
var sampleValues = []struct {
	msg  proto.Message
	want string
}{
	{&vpp_interfaces.Interface{Name: "GigabitEthernet0/8/0", Type: vpp_interfaces.Interface_DPDK}, "config/vpp/v2/interfaces/GigabitEthernet0/8/0"},
	{&vpp_interfaces.DHCPLease{InterfaceName: "GigabitEthernet0/8/0"}, "vpp/interface/dhcp-lease/GigabitEthernet0/8/0"},
	{&vpp_l2.BridgeDomain{Name: "vxlanBD"}, "config/vpp/l2/v2/bridge-domain/vxlanBD"},
	{&vpp_l2.FIBEntry{BridgeDomain: "vxlanBD", PhysAddress: "12:2b:00:00:00:02"}, "config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:02"},
	{&vpp_l3.Route{VrfId: 1, DstNetwork: "fd00:10::/64", NextHopAddr: "fd00::2"}, "config/vpp/v2/route/vrf/1/dst/fd00:10::/64/gw/fd00::2"},
	{&vpp_l3.ARPEntry{Interface: "vxlanBVI", IpAddress: "192.168.30.2"}, "config/vpp/v2/arp/vxlanBVI/192.168.30.2"},
	{&vpp_l3.ProxyNDEntry{Interface: "GigabitEthernet0/8/0", IpAddress: "2001:db8:16::5"}, "config/vpp/v2/proxynd/GigabitEthernet0/8/0/2001:db8:16::5"},
	{&vpp_l3.VrfTable{Id: 1, Protocol: vpp_l3.VrfTable_IPV6}, "config/vpp/v2/vrf-table/id/1/protocol/IPV6"},
	{&vpp_l3.IPScanNeighbor{Mode: vpp_l3.IPScanNeighbor_BOTH}, "config/vpp/v2/ipscanneigh-global"},
	{&vpp_l3.ProxyARP{}, "config/vpp/v2/proxyarp-global"},
	{&vpp_stn.Rule{IpAddress: "192.168.16.5", Interface: "tap-vpp2"}, "config/vpp/stn/v2/rule/tap-vpp2/ip/192.168.16.5"},
	{&vpp_stn.HostLink{Name: "eth0"}, "config/vpp/stn/v2/host-link/eth0"},
	{&vpp_nat.Nat44Global{Forwarding: true}, "config/vpp/nat/v2/nat44-global"},
	{&vpp_nat.DNat44{Label: "default/nginx"}, "config/vpp/nat/v2/dnat44/default/nginx"},
	{&vpp_cnat.TranslationSet{Label: "default/web"}, "config/vpp/cnat/v2/translation-set/default/web"},
	{&vpp_cnat.SnatAddresses{Ip4: "192.168.16.1"}, "config/vpp/cnat/v2/snat-addresses"},
	{&vpp_cnat.SnatPolicy{Policy: vpp_cnat.SnatPolicy_K8S}, "config/vpp/cnat/v2/snat-policy"},
	{&vpp_cnat.SnatExcludePrefix{Prefix: "10.1.0.0/16"}, "config/vpp/cnat/v2/snat-exclude/10.1.0.0/16"},
	{&vpp_cnat.SnatPolicyInterface{Interface: "tap-vpp2", Table: vpp_cnat.SnatPolicyInterface_HOST}, "config/vpp/cnat/v2/snat-interface/tap-vpp2/table/HOST"},
	{&vpp_cnat.SnatFeature{Interface: "tap-vpp2", Family: vpp_cnat.AddressFamily_IPV6, Node: vpp_cnat.SnatFeature_INPUT}, "config/vpp/cnat/v2/feature/tap-vpp2/INPUT/family/IPV6"},
	{&vpp_acl.ACL{Name: "contiv-policy-NODE-GLOBAL"}, "config/vpp/acls/v2/acl/contiv-policy-NODE-GLOBAL"},
	{&vpp_acl.InterfaceACLs{Interface: "tap-1234"}, "config/vpp/acls/v2/interface/tap-1234"},
	{&linux_interfaces.Interface{Name: "tap-vpp1"}, "config/linux/interfaces/v2/interface/tap-vpp1"},
	{&linux_l3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "tap-vpp1"}, "config/linux/l3/v2/route/10.1.0.0/16/tap-vpp1"},
	{&linux_l3.ARPEntry{Interface: "tap-vpp1", IpAddress: "172.30.1.2"}, "config/linux/l3/v2/arp/tap-vpp1/172.30.1.2"},
}

func TestModelKeyReturnsKeyOfEveryModelType(t *testing.T) {
	for _, tt := range sampleValues {
		name := string(proto.MessageName(tt.msg))
		t.Run(name, func(t *testing.T) {
			got, err := ModelKey(tt.msg)
			if err != nil || got != tt.want {
				t.Errorf("ModelKey = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestModelKeyErrorsNameTheTypeAndWrapSentinels(t *testing.T) {
	tests := []struct {
		name     string
		msg      proto.Message
		wantErr  error
		wantText string
	}{
		{"foreign message", wrapperspb.String("x"), ErrUnknownModel, "google.protobuf.StringValue"},
		{"helper message of a model package", &vpp_interfaces.TapLink{}, ErrUnknownModel, "contiv.vpp.interfaces.TapLink"},
		{"nil message", nil, ErrUnknownModel, "<nil>"},
		{"VPP interface without name", &vpp_interfaces.Interface{}, ErrInvalidValue, "contiv.vpp.interfaces.Interface: empty name"},
		{"DNAT44 without label", &vpp_nat.DNat44{}, ErrInvalidValue, "contiv.vpp.nat.DNat44: empty label"},
		{"Linux interface without name", &linux_interfaces.Interface{}, ErrInvalidValue, "contiv.linux.interfaces.Interface"},
		{"VPP route without destination", &vpp_l3.Route{}, ErrInvalidValue, "contiv.vpp.l3.Route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ModelKey(tt.msg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ModelKey = %q, %v; want error wrapping %v", key, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not mention %q", err, tt.wantText)
			}
		})
	}
}

func TestModelForKeyFindsTheModelOfEveryKey(t *testing.T) {
	for _, tt := range sampleValues {
		name := proto.MessageName(tt.msg)
		t.Run(string(name), func(t *testing.T) {
			m, ok := ModelForKey(tt.want)
			if !ok || m.Name != name {
				t.Fatalf("ModelForKey(%q) = %q, %v; want %q", tt.want, m.Name, ok, name)
			}
			if got := m.New(); proto.MessageName(got) != name || !proto.Equal(got, tt.msg.ProtoReflect().Type().New().Interface()) {
				t.Errorf("New() = %v (%s), want an empty %s", got, proto.MessageName(got), name)
			}
			if key, err := m.Key(tt.msg); err != nil || key != tt.want {
				t.Errorf("Key() = %q, %v; want %q", key, err, tt.want)
			}
		})
	}
}

func TestModelForKeyRejectsDerivedAndMalformedKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"config/",
		"config/vpp/v2/interfaces/",
		"config/vpp/v2/ipscanneigh-global/x",
		"config/vpp/nat/v2/nat44-global/",
		"config/vpp/v2/route/vrf/1/dst/bogus/gw/",
		"config/vpp/l2/v2/fib/vxlanBD/mac/bogus",
		"config/vpp/v2/vrf-table/id/1/protocol/IPV7",
		"config/linux/l3/v2/route/10.1.0.0/tap-vpp1",
		"vpp/interface/tap-vpp2/address/static/10.1.1.1/24",
		"vpp/interface/unnumbered/vpp-tap-1",
		"vpp/interface/dhcp-lease/address/dhcp/10.0.0.5/24",
		"vpp/bd/vxlanBD/interface/vxlan2",
		"vpp/nat44/interface/tap/feature/in",
		"vpp/nat44/address/10.0.0.1/twice-nat/on",
		"linux/interface/host-name/vpp1",
		"/vnf-agent/contiv-ksr/k8s/pod/default/nginx",
	} {
		if m, ok := ModelForKey(key); ok {
			t.Errorf("ModelForKey(%q) = %s, want no model", key, m.Name)
		}
	}
}

func TestModelsAreRegisteredOnceWithDisjointPrefixes(t *testing.T) {
	models := Models()
	if len(models) != len(sampleValues) {
		t.Errorf("Models() has %d entries, the samples cover %d", len(models), len(sampleValues))
	}
	seen := map[protoreflect.FullName]bool{}
	for i, a := range models {
		if a.Name == "" || seen[a.Name] {
			t.Errorf("model %d: missing or duplicate name %q", i, a.Name)
		}
		seen[a.Name] = true
		if a.Config != strings.HasPrefix(a.KeyPrefix, "config/") {
			t.Errorf("%s: Config = %v but key prefix is %q", a.Name, a.Config, a.KeyPrefix)
		}
		if a.Singleton == strings.HasSuffix(a.KeyPrefix, "/") {
			t.Errorf("%s: Singleton = %v but key prefix is %q", a.Name, a.Singleton, a.KeyPrefix)
		}
		for _, b := range models[i+1:] {
			if strings.HasPrefix(a.KeyPrefix, b.KeyPrefix) || strings.HasPrefix(b.KeyPrefix, a.KeyPrefix) {
				t.Errorf("key prefixes of %s (%q) and %s (%q) overlap", a.Name, a.KeyPrefix, b.Name, b.KeyPrefix)
			}
		}
	}
}

// helperMessages are the top-level messages of the model files that are
// parts of a model value, not values of their own.
var helperMessages = map[protoreflect.FullName]bool{
	"contiv.vpp.interfaces.TapLink":        true,
	"contiv.vpp.interfaces.AfpacketLink":   true,
	"contiv.vpp.interfaces.VxlanLink":      true,
	"contiv.vpp.nat.VirtualReassembly":     true,
	"contiv.vpp.nat.Timeouts":              true,
	"contiv.linux.interfaces.NetNamespace": true,
	"contiv.linux.interfaces.VethLink":     true,
	"contiv.linux.interfaces.TapLink":      true,
}

func TestEveryTopLevelMessageIsAModelOrAKnownHelper(t *testing.T) {
	files := []string{
		"api/models/vpp/interfaces/interface.proto",
		"api/models/vpp/l2/l2.proto",
		"api/models/vpp/l3/l3.proto",
		"api/models/vpp/nat/nat.proto",
		"api/models/linux/interfaces/interface.proto",
		"api/models/linux/l3/l3.proto",
	}
	registered := map[protoreflect.FullName]bool{}
	for _, m := range Models() {
		registered[m.Name] = true
	}
	for _, path := range files {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			t.Errorf("file %s is not registered: %v", path, err)
			continue
		}
		msgs := fd.Messages()
		for i := 0; i < msgs.Len(); i++ {
			name := msgs.Get(i).FullName()
			if !registered[name] && !helperMessages[name] {
				t.Errorf("%s: message %s is neither a registered model nor a known helper", path, name)
			}
		}
	}
}

func TestModelKeyMethodRefusesValuesOfOtherTypes(t *testing.T) {
	m, ok := ModelForKey(vpp_l3.RouteKey(0, "10.0.0.0/8", ""))
	if !ok {
		t.Fatal("no model for a VPP route key")
	}
	key, err := m.Key(&vpp_l3.ARPEntry{Interface: "tap-vpp2", IpAddress: "10.0.0.1"})
	if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "contiv.vpp.l3.ARPEntry") {
		t.Errorf("Route model Key(ARPEntry) = %q, %v; want ErrUnknownModel naming the type", key, err)
	}
	if _, err := m.Key(nil); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("Route model Key(nil) error = %v, want ErrUnknownModel", err)
	}
}

func TestUnmarshalConfigDecodesByKey(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		data    string
		want    proto.Message
		wantErr string
	}{
		{name: "vpp interface", key: "config/vpp/v2/interfaces/loop1", data: `{"name":"loop1","enabled":true,"unknownField":1}`,
			want: &vpp_interfaces.Interface{Name: "loop1", Enabled: true}},
		{name: "singleton", key: "config/vpp/nat/v2/nat44-global", data: `{"forwarding":true}`,
			want: &vpp_nat.Nat44Global{Forwarding: true}},
		{name: "not a model key", key: "status/whatever", data: `{}`},
		{name: "derived key", key: "vpp/interface/unnumbered/tap1", data: `{}`},
		{name: "garbage", key: "config/vpp/v2/interfaces/loop1", data: `{"enabled":"yes"`,
			wantErr: "config/vpp/v2/interfaces/loop1: decode contiv.vpp.interfaces.Interface"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UnmarshalConfig(tc.key, []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && !proto.Equal(got, tc.want)) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

package vpp_nat

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

func TestKeyBuildersFollowVppAgentV2Scheme(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"NAT44 global", GlobalNAT44Key, "config/vpp/nat/v2/nat44-global"},
		{"DNAT44 of a service", DNAT44Key("default/nginx"), "config/vpp/nat/v2/dnat44/default/nginx"},
		{"DNAT44 identities", DNAT44Key("DNAT-identities"), "config/vpp/nat/v2/dnat44/DNAT-identities"},
		{"inside interface", InterfaceNAT44Key("vpp-tap-1234", true), "vpp/nat44/interface/vpp-tap-1234/feature/in"},
		{"outside interface with slashes", InterfaceNAT44Key("GigabitEthernet0/8/0", false), "vpp/nat44/interface/GigabitEthernet0/8/0/feature/out"},
		{"pool address", AddressNAT44Key("192.168.16.1", false), "vpp/nat44/address/192.168.16.1/twice-nat/off"},
		{"twice-NAT pool address", AddressNAT44Key("10.1.255.254", true), "vpp/nat44/address/10.1.255.254/twice-nat/on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestDNAT44KeyRoundTripKeepsSlashesInLabels(t *testing.T) {
	for _, label := range []string{"default/nginx", "kube-system/kube-dns", "DNAT-identities", "a/b/c", "/leading"} {
		got, ok := ParseDNAT44Key(DNAT44Key(label))
		if !ok || got != label {
			t.Errorf("ParseDNAT44Key(DNAT44Key(%q)) = %q, %v", label, got, ok)
		}
	}
}

func TestParseDNAT44KeyRejectsOtherKeys(t *testing.T) {
	for _, key := range []string{"", "config/vpp/nat/v2/dnat44/", "config/vpp/nat/v2/dnat44", "config/vpp/nat/v2/nat44-global", "config/vpp/nat/v1/dnat44/default/nginx"} {
		if label, ok := ParseDNAT44Key(key); ok {
			t.Errorf("ParseDNAT44Key(%q) = %q, want rejection", key, label)
		}
	}
}

func TestInterfaceNAT44KeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct {
		iface    string
		isInside bool
	}{{"vpp-tap-1234", true}, {"vpp-tap-1234", false}, {"GigabitEthernet0/8/0", false}} {
		key := InterfaceNAT44Key(tt.iface, tt.isInside)
		iface, isInside, ok := ParseInterfaceNAT44Key(key)
		if !ok || iface != tt.iface || isInside != tt.isInside {
			t.Errorf("ParseInterfaceNAT44Key(%q) = %q, %v, %v", key, iface, isInside, ok)
		}
	}
	for _, key := range []string{
		"",
		"vpp/nat44/interface/",
		"vpp/nat44/interface/tap",
		"vpp/nat44/interface/tap/feature/",
		"vpp/nat44/interface/tap/feature/output",
		"vpp/nat44/interface//feature/in",
		"vpp/nat44/address/10.0.0.1/twice-nat/on",
	} {
		if iface, isInside, ok := ParseInterfaceNAT44Key(key); ok {
			t.Errorf("ParseInterfaceNAT44Key(%q) = %q, %v, want rejection", key, iface, isInside)
		}
	}
}

func TestAddressNAT44KeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct {
		address  string
		twiceNAT bool
	}{{"192.168.16.1", false}, {"10.1.255.254", true}} {
		key := AddressNAT44Key(tt.address, tt.twiceNAT)
		address, twiceNAT, ok := ParseAddressNAT44Key(key)
		if !ok || address != tt.address || twiceNAT != tt.twiceNAT {
			t.Errorf("ParseAddressNAT44Key(%q) = %q, %v, %v", key, address, twiceNAT, ok)
		}
	}
	for _, key := range []string{
		"",
		"vpp/nat44/address/",
		"vpp/nat44/address/10.0.0.1",
		"vpp/nat44/address/10.0.0.1/twice-nat/",
		"vpp/nat44/address/10.0.0.1/twice-nat/yes",
		"vpp/nat44/address//twice-nat/on",
		"vpp/nat44/address/10.0.0.1/24/twice-nat/on",
		"vpp/nat44/address/bogus/twice-nat/on",
		"vpp/nat44/interface/tap/feature/in",
	} {
		if address, twiceNAT, ok := ParseAddressNAT44Key(key); ok {
			t.Errorf("ParseAddressNAT44Key(%q) = %q, %v, want rejection", key, address, twiceNAT)
		}
	}
}

func TestModelKeyReturnsKeyOfEachModelType(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"Nat44Global", &Nat44Global{Forwarding: true, VirtualReassembly: &VirtualReassembly{DropFragments: true}}, "config/vpp/nat/v2/nat44-global"},
		{"empty Nat44Global", &Nat44Global{}, "config/vpp/nat/v2/nat44-global"},
		{"DNat44 of a service", &DNat44{
			Label: "default/nginx",
			StMappings: []*DNat44_StaticMapping{{
				ExternalIp: "10.96.0.10", ExternalPort: 80, Protocol: DNat44_TCP,
				TwiceNat: DNat44_StaticMapping_SELF,
				LocalIps: []*DNat44_StaticMapping_LocalIP{{LocalIp: "10.1.1.3", LocalPort: 8080, VrfId: 1}},
			}},
		}, "config/vpp/nat/v2/dnat44/default/nginx"},
		{"DNat44 identities", &DNat44{Label: "DNAT-identities", IdMappings: []*DNat44_IdentityMapping{{IpAddress: "192.168.16.1", Port: 4789, Protocol: DNat44_UDP}}}, "config/vpp/nat/v2/dnat44/DNAT-identities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ModelKey(tt.msg)
			if err != nil || got != tt.want {
				t.Errorf("ModelKey = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestModelKeyRejectsEmptyLabelsAndForeignTypes(t *testing.T) {
	tests := []struct {
		name     string
		msg      proto.Message
		wantErr  error
		wantText string
	}{
		{"DNat44 without label", &DNat44{}, keyutil.ErrInvalidValue, "contiv.vpp.nat.DNat44: empty label"},
		{"nil DNat44", (*DNat44)(nil), keyutil.ErrInvalidValue, "empty label"},
		{"foreign message", wrapperspb.String("default/nginx"), keyutil.ErrUnknownModel, "google.protobuf.StringValue"},
		{"nested message", &DNat44_StaticMapping{}, keyutil.ErrUnknownModel, "contiv.vpp.nat.DNat44.StaticMapping"},
		{"top-level message without key", &VirtualReassembly{}, keyutil.ErrUnknownModel, "contiv.vpp.nat.VirtualReassembly"},
		{"nil message", nil, keyutil.ErrUnknownModel, "vpp_nat"},
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

package vpp_interfaces

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
		{"interface", InterfaceKey("tap-vpp2"), "config/vpp/v2/interfaces/tap-vpp2"},
		{"interface with slashes in its name", InterfaceKey("GigabitEthernet0/8/0"), "config/vpp/v2/interfaces/GigabitEthernet0/8/0"},
		{"DHCP lease", DHCPLeaseKey("GigabitEthernet0/8/0"), "vpp/interface/dhcp-lease/GigabitEthernet0/8/0"},
		{"static IPv4 address", InterfaceAddressKey("podGwLoop", AddressStatic, "10.1.1.1/24"), "vpp/interface/podGwLoop/address/static/10.1.1.1/24"},
		{"DHCP IPv4 address", InterfaceAddressKey("GigabitEthernet0/8/0", AddressDHCP, "192.168.16.5/24"), "vpp/interface/GigabitEthernet0/8/0/address/dhcp/192.168.16.5/24"},
		{"IPv6 address is canonicalised with host bits kept", InterfaceAddressKey("tap-vpp2", AddressStatic, "FD00:0:0::0001/64"), "vpp/interface/tap-vpp2/address/static/fd00::1/64"},
		{"unparsable address is written unchanged", InterfaceAddressKey("tap-vpp2", AddressStatic, "bogus"), "vpp/interface/tap-vpp2/address/static/bogus"},
		{"address prefix", InterfaceAddressPrefix("podGwLoop"), "vpp/interface/podGwLoop/address/"},
		{"unnumbered", UnnumberedKey("vpp-tap-1234"), "vpp/interface/unnumbered/vpp-tap-1234"},
		{"IPv4 VRF membership", InterfaceVrfKey("vxlanBVI", 1, false), "vpp/interface/vxlanBVI/vrf/1/ip-version/v4"},
		{"IPv6 VRF membership", InterfaceVrfKey("vxlanBVI", 4294967295, true), "vpp/interface/vxlanBVI/vrf/4294967295/ip-version/v6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestInterfaceKeyRoundTrip(t *testing.T) {
	for _, name := range []string{"tap-vpp2", "GigabitEthernet0/8/0", "vxlan5", "unnumbered", "a"} {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseNameFromKey(InterfaceKey(name))
			if !ok || got != name {
				t.Errorf("ParseNameFromKey(InterfaceKey(%q)) = %q, %v", name, got, ok)
			}
		})
	}
}

func TestParseNameFromKeyRejectsOtherKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"config/vpp/v2/interfaces/",
		"config/vpp/v2/interfaces",
		"config/vpp/v2/interface/tap-vpp2",
		"config/linux/interfaces/v2/interface/tap-vpp1",
		"/config/vpp/v2/interfaces/tap-vpp2",
	} {
		if name, ok := ParseNameFromKey(key); ok {
			t.Errorf("ParseNameFromKey(%q) = %q, want rejection", key, name)
		}
	}
}

func TestDHCPLeaseKeyRoundTripAndRejection(t *testing.T) {
	for _, name := range []string{"GigabitEthernet0/8/0", "eth0"} {
		got, ok := ParseNameFromDHCPLeaseKey(DHCPLeaseKey(name))
		if !ok || got != name {
			t.Errorf("ParseNameFromDHCPLeaseKey(DHCPLeaseKey(%q)) = %q, %v", name, got, ok)
		}
	}
	for _, key := range []string{
		"",
		"vpp/interface/dhcp-lease/",
		"vpp/interface/unnumbered/eth0",
		// the derived keys of an interface named "dhcp-lease":
		InterfaceAddressKey("dhcp-lease", AddressStatic, "10.0.0.1/24"),
		InterfaceVrfKey("dhcp-lease", 0, false),
	} {
		if name, ok := ParseNameFromDHCPLeaseKey(key); ok {
			t.Errorf("ParseNameFromDHCPLeaseKey(%q) = %q, want rejection", key, name)
		}
	}
}

func TestInterfaceAddressKeyRoundTrip(t *testing.T) {
	tests := []struct {
		iface, address string
		source         AddressSource
		wantAddress    string
	}{
		{"podGwLoop", "10.1.1.1/24", AddressStatic, "10.1.1.1/24"},
		{"GigabitEthernet0/8/0", "192.168.16.5/24", AddressDHCP, "192.168.16.5/24"},
		{"tap-vpp2", "fd00::1/64", AddressStatic, "fd00::1/64"},
		{"tap-vpp2", "FD00::0:1/64", AddressStatic, "fd00::1/64"},
		{"unnumbered", "10.0.0.1/32", AddressStatic, "10.0.0.1/32"},
		{"address", "10.0.0.1/8", AddressStatic, "10.0.0.1/8"},
	}
	for _, tt := range tests {
		t.Run(tt.iface+" "+tt.address, func(t *testing.T) {
			key := InterfaceAddressKey(tt.iface, tt.source, tt.address)
			iface, source, address, ok := ParseInterfaceAddressKey(key)
			if !ok || iface != tt.iface || source != tt.source || address != tt.wantAddress {
				t.Errorf("ParseInterfaceAddressKey(%q) = %q, %q, %q, %v; want %q, %q, %q, true",
					key, iface, source, address, ok, tt.iface, tt.source, tt.wantAddress)
			}
			if !strings.HasPrefix(key, InterfaceAddressPrefix(tt.iface)) {
				t.Errorf("key %q lacks prefix %q", key, InterfaceAddressPrefix(tt.iface))
			}
		})
	}
}

func TestParseInterfaceAddressKeyRejectsMalformedKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"vpp/interface/tap/address/",
		"vpp/interface/tap/address/static",
		"vpp/interface/tap/address/static/",
		"vpp/interface/tap/address/10.1.1.1/24",
		"vpp/interface/tap/address/manual/10.1.1.1/24",
		"vpp/interface/tap/address/static/10.1.1.1",
		"vpp/interface/tap/address/static/10.1.1.300/24",
		"vpp/interface//address/static/10.1.1.1/24",
		"vpp/interface/address/static/10.1.1.1/24",
		"linux/interface/tap/address/10.1.1.1/24",
		"config/vpp/v2/interfaces/tap",
	} {
		if iface, src, addr, ok := ParseInterfaceAddressKey(key); ok {
			t.Errorf("ParseInterfaceAddressKey(%q) = %q, %q, %q, want rejection", key, iface, src, addr)
		}
	}
}

func TestUnnumberedKeyRoundTripAndRejection(t *testing.T) {
	for _, name := range []string{"vpp-tap-1234", "GigabitEthernet0/8/0", "unnumbered"} {
		got, ok := ParseUnnumberedKey(UnnumberedKey(name))
		if !ok || got != name {
			t.Errorf("ParseUnnumberedKey(UnnumberedKey(%q)) = %q, %v", name, got, ok)
		}
	}
	for _, key := range []string{
		"",
		"vpp/interface/unnumbered/",
		"vpp/interface/unnumbered",
		"vpp/interface/dhcp-lease/eth0",
		// the derived keys of an interface named "unnumbered":
		InterfaceAddressKey("unnumbered", AddressStatic, "10.0.0.1/24"),
		InterfaceVrfKey("unnumbered", 2, true),
	} {
		if name, ok := ParseUnnumberedKey(key); ok {
			t.Errorf("ParseUnnumberedKey(%q) = %q, want rejection", key, name)
		}
	}
}

func TestInterfaceVrfKeyRoundTrip(t *testing.T) {
	tests := []struct {
		iface string
		vrf   uint32
		ipv6  bool
	}{
		{"vxlanBVI", 1, false},
		{"vxlanBVI", 1, true},
		{"GigabitEthernet0/8/0", 0, false},
		{"vrf", 4294967295, true},
	}
	for _, tt := range tests {
		key := InterfaceVrfKey(tt.iface, tt.vrf, tt.ipv6)
		iface, vrf, ipv6, ok := ParseInterfaceVrfKey(key)
		if !ok || iface != tt.iface || vrf != tt.vrf || ipv6 != tt.ipv6 {
			t.Errorf("ParseInterfaceVrfKey(%q) = %q, %d, %v, %v", key, iface, vrf, ipv6, ok)
		}
	}
}

func TestParseInterfaceVrfKeyRejectsMalformedKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"vpp/interface/tap/vrf/1/ip-version/v5",
		"vpp/interface/tap/vrf/1/ip-version/",
		"vpp/interface/tap/vrf//ip-version/v4",
		"vpp/interface/tap/vrf/01/ip-version/v4",
		"vpp/interface/tap/vrf/-1/ip-version/v4",
		"vpp/interface/tap/vrf/+1/ip-version/v4",
		"vpp/interface/tap/vrf/4294967296/ip-version/v4",
		"vpp/interface/tap/vrf/x/ip-version/v4",
		"vpp/interface//vrf/1/ip-version/v4",
		"vpp/interface/tap/1/ip-version/v4",
		"config/vpp/v2/vrf-table/id/1/protocol/IPV4",
	} {
		if iface, vrf, ipv6, ok := ParseInterfaceVrfKey(key); ok {
			t.Errorf("ParseInterfaceVrfKey(%q) = %q, %d, %v, want rejection", key, iface, vrf, ipv6)
		}
	}
}

func TestModelKeyReturnsKeyOfEachModelType(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"Interface", &Interface{Name: "tap-vpp2", Type: Interface_TAP, Link: &Interface_Tap{Tap: &TapLink{Version: 2}}}, "config/vpp/v2/interfaces/tap-vpp2"},
		{"DHCPLease", &DHCPLease{InterfaceName: "GigabitEthernet0/8/0", HostIpAddress: "10.0.0.5/24"}, "vpp/interface/dhcp-lease/GigabitEthernet0/8/0"},
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

func TestModelKeyRejectsEmptyNamesAndForeignTypes(t *testing.T) {
	tests := []struct {
		name     string
		msg      proto.Message
		wantErr  error
		wantText string
	}{
		{"interface without name", &Interface{Type: Interface_SOFTWARE_LOOPBACK}, keyutil.ErrInvalidValue, "contiv.vpp.interfaces.Interface"},
		{"nil interface", (*Interface)(nil), keyutil.ErrInvalidValue, "empty name"},
		{"lease without interface", &DHCPLease{HostIpAddress: "10.0.0.5/24"}, keyutil.ErrInvalidValue, "contiv.vpp.interfaces.DHCPLease"},
		{"foreign message", wrapperspb.String("x"), keyutil.ErrUnknownModel, "google.protobuf.StringValue"},
		{"nested message", &Interface_Unnumbered{InterfaceWithIp: "x"}, keyutil.ErrUnknownModel, "contiv.vpp.interfaces.Interface.Unnumbered"},
		{"nil message", nil, keyutil.ErrUnknownModel, "<nil>"},
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

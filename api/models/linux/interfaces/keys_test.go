package linux_interfaces

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
		{"interface", InterfaceKey("tap-vpp1"), "config/linux/interfaces/v2/interface/tap-vpp1"},
		{"host name", InterfaceHostNameKey("vpp2"), "linux/interface/host-name/vpp2"},
		{"IPv4 address", InterfaceAddressKey("linux-tap-1234", "10.1.1.3/32"), "linux/interface/linux-tap-1234/address/10.1.1.3/32"},
		{"IPv6 address is canonicalised", InterfaceAddressKey("linux-loop-1234", "0:0::1/128"), "linux/interface/linux-loop-1234/address/::1/128"},
		{"unparsable address is written unchanged", InterfaceAddressKey("tap-vpp1", "bogus"), "linux/interface/tap-vpp1/address/bogus"},
		{"address prefix", InterfaceAddressPrefix("tap-vpp1"), "linux/interface/tap-vpp1/address/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestInterfaceKeyRoundTripAndRejection(t *testing.T) {
	for _, name := range []string{"tap-vpp1", "veth1-0123456789abcdef", "linux-loop-x"} {
		got, ok := ParseNameFromKey(InterfaceKey(name))
		if !ok || got != name {
			t.Errorf("ParseNameFromKey(InterfaceKey(%q)) = %q, %v", name, got, ok)
		}
	}
	for _, key := range []string{"", "config/linux/interfaces/v2/interface/", "config/linux/interfaces/v2/interface", "config/vpp/v2/interfaces/tap-vpp2"} {
		if name, ok := ParseNameFromKey(key); ok {
			t.Errorf("ParseNameFromKey(%q) = %q, want rejection", key, name)
		}
	}
}

func TestInterfaceHostNameKeyRoundTripAndRejection(t *testing.T) {
	for _, name := range []string{"vpp1", "vpp2", "eth0", "host-name"} {
		got, ok := ParseInterfaceHostNameKey(InterfaceHostNameKey(name))
		if !ok || got != name {
			t.Errorf("ParseInterfaceHostNameKey(InterfaceHostNameKey(%q)) = %q, %v", name, got, ok)
		}
	}
	for _, key := range []string{
		"",
		"linux/interface/host-name/",
		"linux/interface/host-name",
		"linux/interface/host-name/a/b",
		// an address key of an interface named "host-name":
		InterfaceAddressKey("host-name", "10.0.0.1/24"),
	} {
		if name, ok := ParseInterfaceHostNameKey(key); ok {
			t.Errorf("ParseInterfaceHostNameKey(%q) = %q, want rejection", key, name)
		}
	}
}

func TestInterfaceAddressKeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct{ iface, address, want string }{
		{"linux-tap-1234", "10.1.1.3/32", "10.1.1.3/32"},
		{"tap-vpp1", "172.30.1.2/24", "172.30.1.2/24"},
		{"linux-loop-1234", "::1/128", "::1/128"},
		{"veth1", "FD00::0A/64", "fd00::a/64"},
		{"host-name", "10.0.0.1/24", "10.0.0.1/24"},
	} {
		key := InterfaceAddressKey(tt.iface, tt.address)
		iface, address, ok := ParseInterfaceAddressKey(key)
		if !ok || iface != tt.iface || address != tt.want {
			t.Errorf("ParseInterfaceAddressKey(%q) = %q, %q, %v; want %q, %q", key, iface, address, ok, tt.iface, tt.want)
		}
	}
	for _, key := range []string{
		"",
		"linux/interface/tap/address/",
		"linux/interface/tap/address/10.0.0.1",
		"linux/interface/tap/address/bogus/24",
		"linux/interface//address/10.0.0.1/24",
		"linux/interface/host-name/vpp1",
		"vpp/interface/tap/address/static/10.0.0.1/24",
	} {
		if iface, address, ok := ParseInterfaceAddressKey(key); ok {
			t.Errorf("ParseInterfaceAddressKey(%q) = %q, %q, want rejection", key, iface, address)
		}
	}
}

func TestModelKeyReturnsKeyOfInterface(t *testing.T) {
	msg := &Interface{
		Name:       "linux-tap-1234",
		Type:       Interface_TAP_TO_VPP,
		Namespace:  &NetNamespace{Type: NetNamespace_FD, Reference: "/var/run/netns/cni-1234"},
		HostIfName: "eth0",
		Link:       &Interface_Tap{Tap: &TapLink{VppTapIfName: "vpp-tap-1234"}},
	}
	got, err := ModelKey(msg)
	if want := "config/linux/interfaces/v2/interface/linux-tap-1234"; err != nil || got != want {
		t.Errorf("ModelKey = %q, %v; want %q", got, err, want)
	}
}

func TestModelKeyRejectsEmptyNamesAndForeignTypes(t *testing.T) {
	tests := []struct {
		name     string
		msg      proto.Message
		wantErr  error
		wantText string
	}{
		{"interface without name", &Interface{HostIfName: "eth0"}, keyutil.ErrInvalidValue, "contiv.linux.interfaces.Interface: empty name"},
		{"foreign message", wrapperspb.String("x"), keyutil.ErrUnknownModel, "google.protobuf.StringValue"},
		{"namespace message", &NetNamespace{}, keyutil.ErrUnknownModel, "contiv.linux.interfaces.NetNamespace"},
		{"nil message", nil, keyutil.ErrUnknownModel, "linux_interfaces"},
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

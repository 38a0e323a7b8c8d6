package vpp_l2

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
		{"bridge domain", BridgeDomainKey("vxlanBD"), "config/vpp/l2/v2/bridge-domain/vxlanBD"},
		{"FIB entry", FIBKey("vxlanBD", "12:2b:00:00:00:02"), "config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:02"},
		{"FIB entry MAC is canonicalised", FIBKey("vxlanBD", "12-2B-00-00-00-0A"), "config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:0a"},
		{"unparsable MAC is written unchanged", FIBKey("vxlanBD", "bogus"), "config/vpp/l2/v2/fib/vxlanBD/mac/bogus"},
		{"BD interface", BDInterfaceKey("vxlanBD", "vxlan2"), "vpp/bd/vxlanBD/interface/vxlan2"},
		{"BD interface with slashes in its name", BDInterfaceKey("bd1", "GigabitEthernet0/8/0"), "vpp/bd/bd1/interface/GigabitEthernet0/8/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestBridgeDomainKeyRoundTripAndRejection(t *testing.T) {
	for _, name := range []string{"vxlanBD", "bd/with/slashes"} {
		got, ok := ParseBDNameFromKey(BridgeDomainKey(name))
		if !ok || got != name {
			t.Errorf("ParseBDNameFromKey(BridgeDomainKey(%q)) = %q, %v", name, got, ok)
		}
	}
	for _, key := range []string{"", "config/vpp/l2/v2/bridge-domain/", "config/vpp/l2/v2/bridge-domain", "config/vpp/v2/bridge-domain/vxlanBD"} {
		if name, ok := ParseBDNameFromKey(key); ok {
			t.Errorf("ParseBDNameFromKey(%q) = %q, want rejection", key, name)
		}
	}
}

func TestBDInterfaceKeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct{ bd, iface string }{
		{"vxlanBD", "vxlanBVI"},
		{"vxlanBD", "GigabitEthernet0/8/0"},
		{"bd/1", "vxlan2"},
	} {
		key := BDInterfaceKey(tt.bd, tt.iface)
		bd, iface, ok := ParseBDInterfaceKey(key)
		if !ok || bd != tt.bd || iface != tt.iface {
			t.Errorf("ParseBDInterfaceKey(%q) = %q, %q, %v", key, bd, iface, ok)
		}
	}
	for _, key := range []string{
		"",
		"vpp/bd/",
		"vpp/bd/vxlanBD",
		"vpp/bd/vxlanBD/interface/",
		"vpp/bd//interface/vxlan2",
		"vpp/bd/vxlanBD/iface/vxlan2",
		"config/vpp/l2/v2/bridge-domain/vxlanBD",
	} {
		if bd, iface, ok := ParseBDInterfaceKey(key); ok {
			t.Errorf("ParseBDInterfaceKey(%q) = %q, %q, want rejection", key, bd, iface)
		}
	}
}

func TestFIBKeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct{ bd, mac, wantMAC string }{
		{"vxlanBD", "12:2b:00:00:00:02", "12:2b:00:00:00:02"},
		{"vxlanBD", "12:2B:00:00:00:0A", "12:2b:00:00:00:0a"},
	} {
		key := FIBKey(tt.bd, tt.mac)
		bd, mac, ok := ParseFIBKey(key)
		if !ok || bd != tt.bd || mac != tt.wantMAC {
			t.Errorf("ParseFIBKey(%q) = %q, %q, %v", key, bd, mac, ok)
		}
	}
	for _, key := range []string{
		"",
		"config/vpp/l2/v2/fib/",
		"config/vpp/l2/v2/fib/vxlanBD",
		"config/vpp/l2/v2/fib/vxlanBD/mac/",
		"config/vpp/l2/v2/fib//mac/12:2b:00:00:00:02",
		"config/vpp/l2/v2/fib/vxlanBD/12:2b:00:00:00:02",
		"config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00",
		"config/vpp/l2/v2/fib/vxlanBD/mac/00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01",
		"config/vpp/l2/v2/fib/vxlanBD/mac/bogus",
	} {
		if bd, mac, ok := ParseFIBKey(key); ok {
			t.Errorf("ParseFIBKey(%q) = %q, %q, want rejection", key, bd, mac)
		}
	}
}

func TestModelKeyReturnsKeyOfEachModelType(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"BridgeDomain", &BridgeDomain{Name: "vxlanBD", Forward: true, Interfaces: []*BridgeDomain_Interface{{Name: "vxlanBVI", BridgedVirtualInterface: true}}}, "config/vpp/l2/v2/bridge-domain/vxlanBD"},
		{"FIBEntry", &FIBEntry{BridgeDomain: "vxlanBD", PhysAddress: "12:2B:00:00:00:02", OutgoingInterface: "vxlan2", StaticConfig: true}, "config/vpp/l2/v2/fib/vxlanBD/mac/12:2b:00:00:00:02"},
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

func TestModelKeyRejectsValuesWithoutKeyAndForeignTypes(t *testing.T) {
	tests := []struct {
		name     string
		msg      proto.Message
		wantErr  error
		wantText string
	}{
		{"bridge domain without name", &BridgeDomain{Learn: true}, keyutil.ErrInvalidValue, "contiv.vpp.l2.BridgeDomain: empty name"},
		{"FIB entry without bridge domain", &FIBEntry{PhysAddress: "12:2b:00:00:00:02"}, keyutil.ErrInvalidValue, "empty bridge_domain"},
		{"FIB entry with bad MAC", &FIBEntry{BridgeDomain: "vxlanBD", PhysAddress: "12:2b"}, keyutil.ErrInvalidValue, `phys_address "12:2b"`},
		{"foreign message", wrapperspb.Bool(true), keyutil.ErrUnknownModel, "google.protobuf.BoolValue"},
		{"nested message", &BridgeDomain_Interface{Name: "x"}, keyutil.ErrUnknownModel, "contiv.vpp.l2.BridgeDomain.Interface"},
		{"nil message", nil, keyutil.ErrUnknownModel, "vpp_l2"},
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

package linux_l3

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
		{"route", RouteKey("10.1.0.0/16", "tap-vpp1"), "config/linux/l3/v2/route/10.1.0.0/16/tap-vpp1"},
		{"default route", RouteKey("0.0.0.0/0", "linux-tap-1234"), "config/linux/l3/v2/route/0.0.0.0/0/linux-tap-1234"},
		{"route destination is masked", RouteKey("10.96.0.1/12", "tap-vpp1"), "config/linux/l3/v2/route/10.96.0.0/12/tap-vpp1"},
		{"route to a bare address is a /32", RouteKey("10.1.1.1", "linux-tap-1234"), "config/linux/l3/v2/route/10.1.1.1/32/linux-tap-1234"},
		{"IPv6 route is canonicalised", RouteKey("FD00:0:0::/64", "tap-vpp1"), "config/linux/l3/v2/route/fd00::/64/tap-vpp1"},
		{"unparsable destination is written unchanged", RouteKey("bogus", "tap-vpp1"), "config/linux/l3/v2/route/bogus/tap-vpp1"},
		{"ARP entry", ARPEntryKey("linux-tap-1234", "10.1.1.1"), "config/linux/l3/v2/arp/linux-tap-1234/10.1.1.1"},
		{"IPv6 ARP entry", ARPEntryKey("tap-vpp1", "FD00::0001"), "config/linux/l3/v2/arp/tap-vpp1/fd00::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestRouteKeyRoundTrip(t *testing.T) {
	for _, tt := range []struct{ dst, iface, wantDst string }{
		{"10.1.0.0/16", "tap-vpp1", "10.1.0.0/16"},
		{"0.0.0.0/0", "linux-tap-1234", "0.0.0.0/0"},
		{"10.1.1.1/32", "linux-tap-1234", "10.1.1.1/32"},
		{"10.1.1.1", "linux-tap-1234", "10.1.1.1/32"},
		{"fd00:10::/64", "tap-vpp1", "fd00:10::/64"},
		{"::/0", "tap-vpp1", "::/0"},
		{"FD00::1/127", "tap-vpp1", "fd00::/127"},
	} {
		key := RouteKey(tt.dst, tt.iface)
		dst, iface, ok := ParseRouteKey(key)
		if !ok || dst != tt.wantDst || iface != tt.iface {
			t.Errorf("ParseRouteKey(%q) = %q, %q, %v; want %q, %q", key, dst, iface, ok, tt.wantDst, tt.iface)
		}
	}
}

func TestParseRouteKeyRejectsMalformedKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"config/linux/l3/v2/route/",
		"config/linux/l3/v2/route/10.1.0.0/16",
		"config/linux/l3/v2/route/10.1.0.0/16/",
		"config/linux/l3/v2/route/10.1.0.0/tap-vpp1",
		"config/linux/l3/v2/route//16/tap-vpp1",
		"config/linux/l3/v2/route/10.1.0.0/40/tap-vpp1",
		"config/linux/l3/v2/route/bogus/16/tap-vpp1",
		"config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/",
	} {
		if dst, iface, ok := ParseRouteKey(key); ok {
			t.Errorf("ParseRouteKey(%q) = %q, %q, want rejection", key, dst, iface)
		}
	}
}

func TestARPEntryKeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct{ iface, ip, wantIP string }{
		{"linux-tap-1234", "10.1.1.1", "10.1.1.1"},
		{"tap-vpp1", "fd00::1", "fd00::1"},
		{"tap-vpp1", "FD00::0:1", "fd00::1"},
	} {
		key := ARPEntryKey(tt.iface, tt.ip)
		iface, ip, ok := ParseARPEntryKey(key)
		if !ok || iface != tt.iface || ip != tt.wantIP {
			t.Errorf("ParseARPEntryKey(%q) = %q, %q, %v", key, iface, ip, ok)
		}
	}
	for _, key := range []string{
		"",
		"config/linux/l3/v2/arp/",
		"config/linux/l3/v2/arp/tap-vpp1",
		"config/linux/l3/v2/arp/tap-vpp1/",
		"config/linux/l3/v2/arp//10.0.0.1",
		"config/linux/l3/v2/arp/tap-vpp1/10.0.0.1/32",
		"config/linux/l3/v2/arp/tap-vpp1/bogus",
		"config/vpp/v2/arp/tap-vpp1/10.0.0.1",
	} {
		if iface, ip, ok := ParseARPEntryKey(key); ok {
			t.Errorf("ParseARPEntryKey(%q) = %q, %q, want rejection", key, iface, ip)
		}
	}
}

func TestModelKeyReturnsKeyOfEachModelType(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"Route", &Route{OutgoingInterface: "tap-vpp1", DstNetwork: "10.1.0.0/16", GwAddr: "172.30.1.1", Scope: Route_GLOBAL}, "config/linux/l3/v2/route/10.1.0.0/16/tap-vpp1"},
		{"link-scope Route", &Route{OutgoingInterface: "linux-tap-1234", DstNetwork: "10.1.1.1/32", Scope: Route_LINK}, "config/linux/l3/v2/route/10.1.1.1/32/linux-tap-1234"},
		{"ARPEntry", &ARPEntry{Interface: "linux-tap-1234", IpAddress: "10.1.1.1", HwAddress: "02:fe:00:00:00:01"}, "config/linux/l3/v2/arp/linux-tap-1234/10.1.1.1"},
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
		{"route without interface", &Route{DstNetwork: "10.1.0.0/16"}, keyutil.ErrInvalidValue, "contiv.linux.l3.Route: empty outgoing_interface"},
		{"route without destination", &Route{OutgoingInterface: "tap-vpp1"}, keyutil.ErrInvalidValue, `dst_network ""`},
		{"ARP entry without interface", &ARPEntry{IpAddress: "10.1.1.1"}, keyutil.ErrInvalidValue, "empty interface"},
		{"ARP entry with bad IP", &ARPEntry{Interface: "tap-vpp1", IpAddress: "10.1.1.1/32"}, keyutil.ErrInvalidValue, `ip_address "10.1.1.1/32"`},
		{"foreign message", wrapperspb.Int64(1), keyutil.ErrUnknownModel, "google.protobuf.Int64Value"},
		{"nil message", nil, keyutil.ErrUnknownModel, "linux_l3"},
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

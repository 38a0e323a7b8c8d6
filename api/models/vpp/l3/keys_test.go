package vpp_l3

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
		{"route with gateway", RouteKey(1, "10.1.0.0/16", "192.168.30.2"), "config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/gw/192.168.30.2"},
		{"route without gateway", RouteKey(0, "0.0.0.0/0", ""), "config/vpp/v2/route/vrf/0/dst/0.0.0.0/0/gw/"},
		{"route destination is masked", RouteKey(1, "10.1.2.3/16", "10.0.0.1"), "config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/gw/10.0.0.1"},
		{"route to a bare IPv4 address is a /32", RouteKey(0, "192.168.16.1", ""), "config/vpp/v2/route/vrf/0/dst/192.168.16.1/32/gw/"},
		{"IPv6 route is canonicalised", RouteKey(2, "FD00:0:0:1::5/64", "FE80::0:1"), "config/vpp/v2/route/vrf/2/dst/fd00:0:0:1::/64/gw/fe80::1"},
		{"IPv6 default route", RouteKey(0, "::/0", "fd00::1"), "config/vpp/v2/route/vrf/0/dst/::/0/gw/fd00::1"},
		{"route to a bare IPv6 address is a /128", RouteKey(0, "fd00::5", ""), "config/vpp/v2/route/vrf/0/dst/fd00::5/128/gw/"},
		{"unparsable route destination is written unchanged", RouteKey(0, "bogus", "x"), "config/vpp/v2/route/vrf/0/dst/bogus/gw/x"},
		{"route in the largest VRF", RouteKey(4294967295, "10.0.0.0/8", ""), "config/vpp/v2/route/vrf/4294967295/dst/10.0.0.0/8/gw/"},
		{"ARP entry", ARPEntryKey("vxlanBVI", "192.168.30.2"), "config/vpp/v2/arp/vxlanBVI/192.168.30.2"},
		{"ARP entry with IPv6 address", ARPEntryKey("tap-vpp2", "FD00::02"), "config/vpp/v2/arp/tap-vpp2/fd00::2"},
		{"ARP entry on interface with slashes", ARPEntryKey("GigabitEthernet0/8/0", "10.0.0.1"), "config/vpp/v2/arp/GigabitEthernet0/8/0/10.0.0.1"},
		{"IPv4 VRF table", VrfTableKey(1, VrfTable_IPV4), "config/vpp/v2/vrf-table/id/1/protocol/IPV4"},
		{"IPv6 VRF table", VrfTableKey(0, VrfTable_IPV6), "config/vpp/v2/vrf-table/id/0/protocol/IPV6"},
		{"IP scan neighbor", IPScanNeighborKey, "config/vpp/v2/ipscanneigh-global"},
		{"proxy ARP", ProxyARPKey, "config/vpp/v2/proxyarp-global"},
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
	tests := []struct {
		name            string
		vrf             uint32
		dst, gw         string
		wantDst, wantGw string
	}{
		{"IPv4 with gateway", 1, "10.1.0.0/16", "192.168.30.2", "10.1.0.0/16", "192.168.30.2"},
		{"IPv4 default without gateway", 0, "0.0.0.0/0", "", "0.0.0.0/0", ""},
		{"IPv4 host route", 1, "10.1.1.5/32", "10.1.1.5", "10.1.1.5/32", "10.1.1.5"},
		{"IPv4 unmasked destination", 1, "10.1.1.5/24", "", "10.1.1.0/24", ""},
		{"IPv6 with gateway", 3, "fd00:10::/64", "fd00::1", "fd00:10::/64", "fd00::1"},
		{"IPv6 default", 0, "::/0", "fe80::1", "::/0", "fe80::1"},
		{"IPv6 non-canonical", 0, "FD00:10:0::7/112", "FD00::0001", "fd00:10::/112", "fd00::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := RouteKey(tt.vrf, tt.dst, tt.gw)
			vrf, dst, gw, ok := ParseRouteKey(key)
			if !ok || vrf != tt.vrf || dst != tt.wantDst || gw != tt.wantGw {
				t.Errorf("ParseRouteKey(%q) = %d, %q, %q, %v; want %d, %q, %q, true",
					key, vrf, dst, gw, ok, tt.vrf, tt.wantDst, tt.wantGw)
			}
		})
	}
}

func TestParseRouteKeyRejectsMalformedKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"config/vpp/v2/route/",
		"config/vpp/v2/route/vrf/",
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/16",
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/",
		"config/vpp/v2/route/vrf/1/dst//gw/",
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/gw/",
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/33/gw/",
		"config/vpp/v2/route/vrf/1/dst/bogus/gw/",
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/gw/10.0.0.300",
		"config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/gw/10.0.0.1/24",
		"config/vpp/v2/route/vrf//dst/10.1.0.0/16/gw/",
		"config/vpp/v2/route/vrf/x/dst/10.1.0.0/16/gw/",
		"config/vpp/v2/route/vrf/01/dst/10.1.0.0/16/gw/",
		"config/vpp/v2/route/vrf/4294967296/dst/10.1.0.0/16/gw/",
		"config/vpp/v2/route/vrf/1/10.1.0.0/16/gw/",
		"config/linux/l3/v2/route/10.1.0.0/16/tap-vpp1",
	} {
		if vrf, dst, gw, ok := ParseRouteKey(key); ok {
			t.Errorf("ParseRouteKey(%q) = %d, %q, %q, want rejection", key, vrf, dst, gw)
		}
	}
}

func TestARPEntryKeyRoundTrip(t *testing.T) {
	tests := []struct {
		iface, ip, wantIP string
	}{
		{"vxlanBVI", "192.168.30.2", "192.168.30.2"},
		{"GigabitEthernet0/8/0", "10.0.0.1", "10.0.0.1"},
		{"tap-vpp2", "FD00::0002", "fd00::2"},
	}
	for _, tt := range tests {
		key := ARPEntryKey(tt.iface, tt.ip)
		iface, ip, ok := ParseARPEntryKey(key)
		if !ok || iface != tt.iface || ip != tt.wantIP {
			t.Errorf("ParseARPEntryKey(%q) = %q, %q, %v; want %q, %q", key, iface, ip, ok, tt.iface, tt.wantIP)
		}
	}
}

func TestParseARPEntryKeyRejectsMalformedKeys(t *testing.T) {
	for _, key := range []string{
		"",
		"config/vpp/v2/arp/",
		"config/vpp/v2/arp/vxlanBVI",
		"config/vpp/v2/arp/vxlanBVI/",
		"config/vpp/v2/arp//10.0.0.1",
		"config/vpp/v2/arp/vxlanBVI/10.0.0.1/24",
		"config/vpp/v2/arp/vxlanBVI/bogus",
		"config/linux/l3/v2/arp/vxlanBVI/10.0.0.1",
	} {
		if iface, ip, ok := ParseARPEntryKey(key); ok {
			t.Errorf("ParseARPEntryKey(%q) = %q, %q, want rejection", key, iface, ip)
		}
	}
}

func TestProxyNDEntryKeyRoundTripAndRejection(t *testing.T) {
	key := ProxyNDEntryKey("GigabitEthernet0/8/0", "2001:DB8::0001")
	if iface, ip, ok := ParseProxyNDEntryKey(key); !ok || iface != "GigabitEthernet0/8/0" || ip != "2001:db8::1" {
		t.Errorf("ParseProxyNDEntryKey(%q) = %q, %q, %v", key, iface, ip, ok)
	}
	for _, key := range []string{"config/vpp/v2/proxynd/tap-vpp2", "config/vpp/v2/proxynd//2001:db8::1",
		"config/vpp/v2/proxynd/tap-vpp2/bogus", ARPEntryKey("tap-vpp2", "2001:db8::1")} {
		if iface, ip, ok := ParseProxyNDEntryKey(key); ok {
			t.Errorf("ParseProxyNDEntryKey(%q) = %q, %q, want rejection", key, iface, ip)
		}
	}
}

func TestVrfTableKeyRoundTripAndRejection(t *testing.T) {
	for _, tt := range []struct {
		id       uint32
		protocol VrfTable_Protocol
	}{{0, VrfTable_IPV4}, {1, VrfTable_IPV4}, {2, VrfTable_IPV6}, {4294967295, VrfTable_IPV6}} {
		key := VrfTableKey(tt.id, tt.protocol)
		id, protocol, ok := ParseVrfTableKey(key)
		if !ok || id != tt.id || protocol != tt.protocol {
			t.Errorf("ParseVrfTableKey(%q) = %d, %v, %v", key, id, protocol, ok)
		}
	}
	for _, key := range []string{
		"",
		"config/vpp/v2/vrf-table/id/1",
		"config/vpp/v2/vrf-table/id/1/protocol/",
		"config/vpp/v2/vrf-table/id/1/protocol/IPV5",
		"config/vpp/v2/vrf-table/id/1/protocol/ipv4",
		"config/vpp/v2/vrf-table/id//protocol/IPV4",
		"config/vpp/v2/vrf-table/id/-1/protocol/IPV4",
		"config/vpp/v2/vrf-table/1/protocol/IPV4",
	} {
		if id, protocol, ok := ParseVrfTableKey(key); ok {
			t.Errorf("ParseVrfTableKey(%q) = %d, %v, want rejection", key, id, protocol)
		}
	}
}

func TestModelKeyReturnsKeyOfEachModelType(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"Route", &Route{VrfId: 1, DstNetwork: "10.1.2.0/24", NextHopAddr: "192.168.30.2", OutgoingInterface: "vxlanBVI"}, "config/vpp/v2/route/vrf/1/dst/10.1.2.0/24/gw/192.168.30.2"},
		{"inter-VRF Route", &Route{Type: Route_INTER_VRF, VrfId: 1, ViaVrfId: 0, DstNetwork: "0.0.0.0/0"}, "config/vpp/v2/route/vrf/1/dst/0.0.0.0/0/gw/"},
		{"IPv6 Route", &Route{DstNetwork: "fd00:10::5/64", NextHopAddr: "fd00::1"}, "config/vpp/v2/route/vrf/0/dst/fd00:10::/64/gw/fd00::1"},
		{"ARPEntry", &ARPEntry{Interface: "vxlanBVI", IpAddress: "192.168.30.2", PhysAddress: "12:2b:00:00:00:02", Static: true}, "config/vpp/v2/arp/vxlanBVI/192.168.30.2"},
		{"VrfTable", &VrfTable{Id: 1, Protocol: VrfTable_IPV4, Label: "podVRF-IPv4"}, "config/vpp/v2/vrf-table/id/1/protocol/IPV4"},
		{"IPScanNeighbor", &IPScanNeighbor{Mode: IPScanNeighbor_IPV4, ScanInterval: 1}, "config/vpp/v2/ipscanneigh-global"},
		{"ProxyARP", &ProxyARP{Interfaces: []*ProxyARP_Interface{{Name: "tap-vpp2"}}}, "config/vpp/v2/proxyarp-global"},
		{"ProxyNDEntry", &ProxyNDEntry{Interface: "GigabitEthernet0/8/0", IpAddress: "2001:DB8::0001"}, "config/vpp/v2/proxynd/GigabitEthernet0/8/0/2001:db8::1"},
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
		{"route without destination", &Route{NextHopAddr: "10.0.0.1"}, keyutil.ErrInvalidValue, "contiv.vpp.l3.Route"},
		{"route with bad destination", &Route{DstNetwork: "10.1.0.0/40"}, keyutil.ErrInvalidValue, `"10.1.0.0/40"`},
		{"route with bad gateway", &Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "gw"}, keyutil.ErrInvalidValue, `next_hop_addr "gw"`},
		{"ARP entry without interface", &ARPEntry{IpAddress: "10.0.0.1"}, keyutil.ErrInvalidValue, "empty interface"},
		{"ARP entry without IP", &ARPEntry{Interface: "vxlanBVI"}, keyutil.ErrInvalidValue, "contiv.vpp.l3.ARPEntry"},
		{"proxy ND entry without interface", &ProxyNDEntry{IpAddress: "2001:db8::1"}, keyutil.ErrInvalidValue, "empty interface"},
		{"proxy ND entry with bad IP", &ProxyNDEntry{Interface: "tap-vpp2", IpAddress: "gw"}, keyutil.ErrInvalidValue, `ip_address "gw"`},
		{"VRF table with unknown protocol", &VrfTable{Id: 1, Protocol: 7}, keyutil.ErrInvalidValue, "unknown protocol 7"},
		{"foreign message", wrapperspb.UInt32(1), keyutil.ErrUnknownModel, "google.protobuf.UInt32Value"},
		{"nested message", &ProxyARP_Range{}, keyutil.ErrUnknownModel, "contiv.vpp.l3.ProxyARP.Range"},
		{"nil message", nil, keyutil.ErrUnknownModel, "vpp_l3"},
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

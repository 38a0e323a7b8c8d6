package natplugin

import (
	"errors"
	"slices"
	"strings"
	"testing"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// TestDropCommon: entries equal in both lists are dropped from both, whether they sit
// in a common prefix or suffix, in place among changed entries, or elsewhere (paired by
// key); what remains keeps its order. Entries here are numbers whose key is the tens.
func TestDropCommon(t *testing.T) {
	same := func(x, y int) bool { return x == y }
	key := func(x int) int { return x / 10 }
	tests := []struct {
		name         string
		a, b         []int
		wantA, wantB []int
	}{
		{"equal", []int{10, 20, 30}, []int{10, 20, 30}, nil, nil},
		{"changed in the middle", []int{10, 20, 30}, []int{10, 21, 30}, []int{20}, []int{21}},
		{"every entry changed in place", []int{10, 20, 30}, []int{11, 21, 31}, []int{10, 20, 30}, []int{11, 21, 31}},
		{"changed in place around an equal one", []int{10, 20, 30, 40}, []int{11, 20, 30, 41}, []int{10, 40}, []int{11, 41}},
		{"reordered, one changed", []int{10, 20, 30, 40}, []int{41, 30, 20, 11}, []int{10, 40}, []int{41, 11}},
		{"one added, one removed", []int{10, 20, 30}, []int{10, 40, 30, 50}, []int{20}, []int{40, 50}},
	}
	for _, tt := range tests {
		gotA, gotB := dropCommon(tt.a, tt.b, same, key)
		if !slices.Equal(gotA, tt.wantA) || !slices.Equal(gotB, tt.wantB) {
			t.Errorf("%s: dropCommon(%v, %v) = %v, %v; want %v, %v", tt.name, tt.a, tt.b, gotA, gotB, tt.wantA, tt.wantB)
		}
	}
	a, b := []int{10, 20, 30}, []int{11, 21, 31}
	if n := testing.AllocsPerRun(10, func() { dropCommon(a, b, same, key) }); n != 0 {
		t.Errorf("dropCommon of lists changed in every place allocates %v times, want 0", n)
	}
}

// TestValidateFindsMappingsListedTwice: two entries that VPP would take for one mapping
// (same external address or interface, port and protocol; for identity mappings the
// same VRF too) are refused, each extra one reported in the order listed; entries that
// differ in any of those are not.
func TestValidateFindsMappingsListedTwice(t *testing.T) {
	st := func(ip string, port uint32, proto nat.DNat44_Protocol) *nat.DNat44_StaticMapping {
		localPort := uint32(8080)
		if port == 0 {
			localPort = 0 // address-only
		}
		return &nat.DNat44_StaticMapping{ExternalIp: ip, ExternalPort: port, Protocol: proto,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.1", localPort, 0, 0)}}
	}
	onIf := func(name string) *nat.DNat44_StaticMapping {
		return &nat.DNat44_StaticMapping{ExternalInterface: name, ExternalPort: 80, Protocol: nat.DNat44_TCP,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.1", 8080, 0, 0)}}
	}
	id := func(ip string, vrf uint32) *nat.DNat44_IdentityMapping {
		return &nat.DNat44_IdentityMapping{IpAddress: ip, Port: 4789, Protocol: nat.DNat44_UDP, VrfId: vrf}
	}
	v := &nat.DNat44{Label: "svc",
		StMappings: []*nat.DNat44_StaticMapping{st("10.96.0.1", 80, nat.DNat44_TCP), st("10.96.0.1", 80, nat.DNat44_UDP),
			st("10.96.0.1", 81, nat.DNat44_TCP), st("10.96.0.2", 80, nat.DNat44_TCP), onIf("eth0"), onIf("eth1"),
			st("::ffff:10.96.0.1", 80, nat.DNat44_TCP), // 10.96.0.1:80/TCP again
			onIf("eth0"),                                                           // again
			st("10.96.0.9", 0, nat.DNat44_TCP), st("10.96.0.9", 0, nat.DNat44_UDP), // address-only: the protocol does not count
		},
		IdMappings: []*nat.DNat44_IdentityMapping{id("10.96.0.1", 0), id("10.96.0.1", 2), id("10.96.0.1", 2)}}
	_, err := validDNat44(nat.DNAT44Key("svc"), v, nil)
	var ive *kvapi.InvalidValueError
	if !errors.As(err, &ive) {
		t.Fatalf("validate: %v, want an invalid value error", err)
	}
	want := []string{"dnat 10.96.0.1:80/TCP", "dnat if:eth0:80/TCP", "dnat 10.96.0.9:0/any", "id 10.96.0.1:4789/UDP vrf 2"}
	msg := err.Error()
	at := 0
	for _, w := range want {
		i := strings.Index(msg[at:], "mapping "+w+" is listed twice")
		if i < 0 {
			t.Fatalf("error %q does not report %q listed twice (in this order: %v)", msg, w, want)
		}
		at += i + 1
	}
	if n := strings.Count(msg, "listed twice"); n != len(want) {
		t.Errorf("error %q reports %d duplicates, want %d", msg, n, len(want))
	}
}

package vpp_stn

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestRuleKeyFollowsUpstreamsSchemeAndParsesBack(t *testing.T) {
	for _, tc := range []struct{ iface, ip, want string }{
		{"tap-vpp2", "192.168.16.10", "config/vpp/stn/v2/rule/tap-vpp2/ip/192.168.16.10"},
		{"tap-vpp2", "2001:DB8::0:10", "config/vpp/stn/v2/rule/tap-vpp2/ip/2001:db8::10"},
		{"GigabitEthernet0/8/0", "10.0.0.1", "config/vpp/stn/v2/rule/GigabitEthernet0/8/0/ip/10.0.0.1"},
	} {
		key := RuleKey(tc.iface, tc.ip)
		if key != tc.want {
			t.Errorf("RuleKey(%s, %s) = %s, want %s", tc.iface, tc.ip, key, tc.want)
		}
		iface, ip, ok := ParseRuleKey(key)
		if !ok || iface != tc.iface || RuleKey(iface, ip) != key {
			t.Errorf("ParseRuleKey(%s) = %s %s %v", key, iface, ip, ok)
		}
	}
	for _, bad := range []string{"config/vpp/stn/v2/rule/tap-vpp2", "config/vpp/stn/v2/rule/tap-vpp2/ip/x", "config/vpp/v2/arp/a/1.2.3.4"} {
		if _, _, ok := ParseRuleKey(bad); ok {
			t.Errorf("ParseRuleKey(%s) accepted", bad)
		}
	}
}

func TestModelKeyNamesTheBadField(t *testing.T) {
	if k, err := ModelKey(&Rule{IpAddress: "10.0.0.1", Interface: "tap-vpp2"}); err != nil || k != RuleKey("tap-vpp2", "10.0.0.1") {
		t.Fatalf("ModelKey = %s, %v", k, err)
	}
	for _, tc := range []struct {
		r    *Rule
		want string
	}{
		{&Rule{IpAddress: "10.0.0.1"}, "empty interface"},
		{&Rule{IpAddress: "10.0.0", Interface: "tap-vpp2"}, `ip_address "10.0.0"`},
	} {
		if _, err := ModelKey(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ModelKey(%v) = %v, want an error naming %s", tc.r, err, tc.want)
		}
	}
	if _, err := ModelKey(wrapperspb.String("x")); err == nil {
		t.Error("ModelKey accepted a foreign message")
	}
}

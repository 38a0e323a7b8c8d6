package config

import (
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

func TestServiceConfParsesEveryKey(t *testing.T) {
	const conf = `
cleanupIdleNATSessions: true
tcpNATSessionTimeout: 180
otherNATSessionTimeout: 5
serviceLocalEndpointWeight: 3
disableNATVirtualReassembly: true
nodePortRange: 20000-22767
nodePortsOnThisNodeOnly: true
disableAffinityTimeoutEnforcement: true
serviceLoadBalancing: maglev
`
	c := DefaultConfig()
	if err := infra.ParseConfig([]byte(conf), c, true, nil); err != nil {
		t.Fatal(err)
	}
	want := Config{CleanupIdleNATSessions: true, TCPNATSessionTimeout: 180, OtherNATSessionTimeout: 5,
		ServiceLocalEndpointWeight: 3, DisableNATVirtualReassembly: true, NodePortRange: "20000-22767",
		NodePortsOnThisNodeOnly: true, DisableAffinityTimeoutEnforcement: true, ServiceLoadBalancing: LoadBalancingMaglev}
	if *c != want {
		t.Errorf("got %+v, want %+v", *c, want)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestDefaultsApplyToZeroTimeouts(t *testing.T) {
	c := DefaultConfig()
	if c.CleanupIdleNATSessions || c.DisableNATVirtualReassembly || c.DisableAffinityTimeoutEnforcement || c.ServiceLocalEndpointWeight != 1 {
		t.Errorf("code defaults: %+v", c)
	}
	if c.TCPSessionTimeout() != 3*time.Hour || c.OtherSessionTimeout() != 5*time.Minute {
		t.Errorf("timeouts %v %v", c.TCPSessionTimeout(), c.OtherSessionTimeout())
	}
	c.TCPNATSessionTimeout, c.OtherNATSessionTimeout = 10, 2
	if c.TCPSessionTimeout() != 10*time.Minute || c.OtherSessionTimeout() != 2*time.Minute {
		t.Errorf("configured timeouts %v %v", c.TCPSessionTimeout(), c.OtherSessionTimeout())
	}
	if w := (&Config{}).LocalEndpointWeight(); w != 1 {
		t.Errorf("weight of an unvalidated zero config = %d", w)
	}
}

func TestInvalidValuesAreNamed(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		key  string
	}{
		{"zero weight", Config{ServiceLocalEndpointWeight: 0}, "serviceLocalEndpointWeight"},
		{"huge tcp timeout", Config{ServiceLocalEndpointWeight: 1, TCPNATSessionTimeout: 1 << 30}, "tcpNATSessionTimeout"},
		{"huge other timeout", Config{ServiceLocalEndpointWeight: 1, OtherNATSessionTimeout: 1 << 30}, "otherNATSessionTimeout"},
		{"unknown load balancing", Config{ServiceLocalEndpointWeight: 1, ServiceLoadBalancing: "random"}, `serviceLoadBalancing: "random"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.key)
			}
		})
	}
}

func TestUnknownKeyIsRejectedInStrictMode(t *testing.T) {
	err := infra.ParseConfig([]byte("cleanupIdleNatSession: true\n"), DefaultConfig(), true, nil)
	if err == nil || !strings.Contains(err.Error(), "cleanupIdleNatSession") {
		t.Errorf("err = %v", err)
	}
}

func TestNodePortRange(t *testing.T) {
	for _, tc := range []struct {
		value     string
		first     uint16
		last      uint16
		wantError bool
	}{
		{"", 30000, 32767, false},
		{"20000-22767", 20000, 22767, false},
		{"1-65535", 1, 65535, false},
		{"0-100", 0, 0, true},
		{"32767-30000", 0, 0, true},
		{"30000-70000", 0, 0, true},
		{"30000", 0, 0, true},
	} {
		c := &Config{NodePortRange: tc.value, ServiceLocalEndpointWeight: 1}
		first, last, err := c.NodePorts()
		if (err != nil) != tc.wantError || first != tc.first || last != tc.last {
			t.Errorf("%q: %d-%d %v", tc.value, first, last, err)
		}
		if err := c.Validate(); (err != nil) != tc.wantError {
			t.Errorf("%q: Validate: %v", tc.value, err)
		} else if err != nil && !strings.Contains(err.Error(), "nodePortRange: \""+tc.value+"\"") {
			t.Errorf("%q: error %q does not name the key and value", tc.value, err)
		}
	}
}

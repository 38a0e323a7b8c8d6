package stnplugin

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	stnmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func TestRuleValidateNamesTheFieldAndValue(t *testing.T) {
	d := NewRuleDescriptor(vppbase.DescriptorDeps{Log: logrus.New()})
	for _, tc := range []struct {
		v    *stnmodel.Rule
		want string
	}{
		{&stnmodel.Rule{IpAddress: "192.168.16", Interface: "tap-vpp2"}, `ip_address "192.168.16" is not an IP address`},
		{&stnmodel.Rule{IpAddress: "192.168.16.5"}, "empty interface"},
	} {
		if err := d.Validate("", tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want %q", tc.v, err, tc.want)
		}
	}
	err := d.Validate(stnmodel.RuleKey("tap-vpp2", "10.0.0.1"), &stnmodel.Rule{IpAddress: "10.0.0.2", Interface: "tap-vpp2"})
	if err == nil || !strings.Contains(err.Error(), "does not match its value") {
		t.Errorf("Validate of a value under another key = %v", err)
	}
}

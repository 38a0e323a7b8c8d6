package contivconf

import (
	"strings"
	"testing"
)

func TestDissectContivCIDR(t *testing.T) {
	tests := []struct {
		name                            string
		contiv                          string
		pod, vppHost, interconnect, vxl string
		perNode                         uint8
	}{
		{"IPv4 /14", "10.128.0.0/14", "10.128.0.0/16", "10.129.0.0/16", "10.130.0.0/23", "10.130.2.0/23", 25},
		{"IPv4 /8", "10.0.0.0/8", "10.0.0.0/16", "10.1.0.0/16", "10.2.0.0/23", "10.2.2.0/23", 25},
		{"IPv6 /64", "2001:db8::/64", "2001:db8::/112", "2001:db8::1:0/112", "2001:db8::2:0/119", "2001:db8::2:200/119", 121},
		{"IPv6 exactly 18 host bits", "fd00::/110", "fd00::/112", "fd00::1:0/112", "fd00::2:0/119", "fd00::2:200/119", 121},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			contiv := mustCIDR(t, tt.contiv)
			sub, err := DissectContivCIDR(contiv)
			if err != nil {
				t.Fatalf("DissectContivCIDR(%s): %v", tt.contiv, err)
			}
			for _, c := range []struct{ what, got, want string }{
				{"pod subnet", sub.PodSubnetCIDR.String(), tt.pod},
				{"VPP-host subnet", sub.VPPHostSubnetCIDR.String(), tt.vppHost},
				{"node interconnect", sub.NodeInterconnectCIDR.String(), tt.interconnect},
				{"vxlan", sub.VxlanCIDR.String(), tt.vxl},
			} {
				if c.got != c.want {
					t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
				}
			}
			if sub.PodSubnetOneNodePrefixLen != tt.perNode || sub.VPPHostSubnetOneNodePrefixLen != tt.perNode {
				t.Errorf("per-node prefixes = /%d and /%d, want /%d", sub.PodSubnetOneNodePrefixLen,
					sub.VPPHostSubnetOneNodePrefixLen, tt.perNode)
			}
			for _, n := range []string{tt.pod, tt.vppHost, tt.interconnect, tt.vxl} {
				last := hostAt(mustCIDR(t, n), -1)
				if !contiv.Contains(last) {
					t.Errorf("%s reaches beyond contivCIDR %s", n, tt.contiv)
				}
			}
		})
	}
}

func TestDissectContivCIDRRejectsRangesTooSmall(t *testing.T) {
	for _, c := range []string{"10.128.0.0/15", "10.0.0.0/24", "fd00::/111", "fd00::/120"} {
		_, err := DissectContivCIDR(mustCIDR(t, c))
		if err == nil || !strings.Contains(err.Error(), "at least 18 host bits") {
			t.Errorf("DissectContivCIDR(%s) error = %v, want \"at least 18 host bits\"", c, err)
		}
	}
	if _, err := DissectContivCIDR(nil); err == nil {
		t.Error("DissectContivCIDR(nil) returned no error")
	}
}

func TestContivCIDROverridesTheCustomSubnets(t *testing.T) {
	p := mustInit(t, `
ipamConfig:
  contivCIDR: 10.128.0.0/14
  podSubnetCIDR: 10.5.0.0/16
  vxlanCIDR: 192.168.99.0/24
`)
	got := p.GetIPAMConfigForJSON()
	want := IPAMConfigForJSON{
		ContivCIDR:                    "10.128.0.0/14",
		ServiceCIDR:                   "10.96.0.0/12",
		PodSubnetCIDR:                 "10.128.0.0/16",
		PodSubnetOneNodePrefixLen:     25,
		VPPHostSubnetCIDR:             "10.129.0.0/16",
		VPPHostSubnetOneNodePrefixLen: 25,
		NodeInterconnectCIDR:          "10.130.0.0/23",
		VxlanCIDR:                     "10.130.2.0/23",
		SRv6:                          DefaultConfig().IPAMConfig.SRv6,
	}
	if *got != want {
		t.Errorf("effective ipamConfig =\n  %+v\nwant\n  %+v", *got, want)
	}
	ipam := p.GetIPAMConfig()
	if ipam.ContivCIDR.String() != "10.128.0.0/14" || ipam.PodSubnetCIDR.String() != "10.128.0.0/16" ||
		ipam.NodeInterconnectCIDR.String() != "10.130.0.0/23" || ipam.PodSubnetOneNodePrefixLen != 25 {
		t.Errorf("parsed ipamConfig = %+v, want contivCIDR kept and subnets dissected", ipam)
	}
	// The file itself is kept as written.
	if c := p.GetConfig(); c.IPAMConfig.PodSubnetCIDR != "10.5.0.0/16" {
		t.Errorf("GetConfig podSubnetCIDR = %q, want the file's value", c.IPAMConfig.PodSubnetCIDR)
	}
}

func TestContivCIDRKeepsAConfiguredNodeInterconnectCIDR(t *testing.T) {
	p := mustInit(t, "ipamConfig: {contivCIDR: 10.128.0.0/14, nodeInterconnectCIDR: 192.168.16.0/24}")
	if got := p.GetIPAMConfigForJSON().NodeInterconnectCIDR; got != "192.168.16.0/24" {
		t.Errorf("nodeInterconnectCIDR = %q, want the configured 192.168.16.0/24", got)
	}
}

func TestContivCIDRCarvesNoNodeInterconnectWithDHCP(t *testing.T) {
	p := mustInit(t, "ipamConfig: {contivCIDR: 10.128.0.0/14, nodeInterconnectDHCP: true}")
	if got := p.GetIPAMConfigForJSON().NodeInterconnectCIDR; got != "" {
		t.Errorf("nodeInterconnectCIDR = %q with DHCP, want none", got)
	}
	if p.GetIPAMConfig().NodeInterconnectCIDR != nil {
		t.Error("parsed NodeInterconnectCIDR is set with DHCP, want nil")
	}
}

func TestIPv6ContivCIDRIsDissected(t *testing.T) {
	p := mustInit(t, "ipamConfig: {contivCIDR: '2001:db8::/64', serviceCIDR: '2096::/110'}")
	got := p.GetIPAMConfigForJSON()
	if got.PodSubnetCIDR != "2001:db8::/112" || got.VPPHostSubnetCIDR != "2001:db8::1:0/112" ||
		got.NodeInterconnectCIDR != "2001:db8::2:0/119" || got.VxlanCIDR != "2001:db8::2:200/119" ||
		got.PodSubnetOneNodePrefixLen != 121 {
		t.Errorf("effective IPv6 ipamConfig = %+v", got)
	}
}

package contivconf

import (
	"net"
	"strings"
	"testing"
)

// ipv6Section is a valid ipamConfig.ipv6; dualConf replaces its values by key.
var ipv6Section = map[string]string{
	"podSubnetCIDR":     "'fd00:10:1::/48'",
	"vppHostSubnetCIDR": "'fd00:172:30::/96'",
	"vxlanCIDR":         "'fd00:192:168:30::/112'",
	"serviceCIDR":       "'fd00:10:96::/108'",
}

// dualConf returns contiv.conf with the IPv4 defaults, ipamConfig.ipv6 = ipv6Section
// changed by set ("" drops a key), and the top-level ipamConfig keys of top (empty: the
// default IPv4 pod range written out, which makes the plan dual-stack).
func dualConf(top string, set map[string]string) string {
	if top == "" {
		top = "podSubnetCIDR: 10.1.0.0/16"
	}
	var kv []string
	for _, k := range []string{"podSubnetCIDR", "podSubnetOneNodePrefixLen", "vppHostSubnetCIDR",
		"vppHostSubnetOneNodePrefixLen", "vxlanCIDR", "serviceCIDR", "nodeInterconnectCIDR"} {
		v, ok := set[k]
		if !ok {
			v = ipv6Section[k]
		}
		if v != "" {
			kv = append(kv, k+": "+v)
		}
	}
	return "ipamConfig: {" + top + ", ipv6: {" + strings.Join(kv, ", ") + "}}"
}

func TestDualStackPlanHasBothFamilies(t *testing.T) {
	cfg, err := Parse([]byte(dualConf("", nil)), true, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := cfg.compile()
	if err != nil {
		t.Fatal(err)
	}
	ipam := c.ipam
	if !ipam.IsDualStack() || ipam.Primary().IsIPv6() || !ipam.DualStackIPv6.IsIPv6() {
		t.Fatalf("dual-stack %v, primary IPv6 %v: want a dual-stack plan with IPv4 first", ipam.IsDualStack(), ipam.Primary().IsIPv6())
	}
	v6 := ipam.Plan(true)
	if v6.PodSubnetCIDR.String() != "fd00:10:1::/48" || v6.PodSubnetOneNodePrefixLen != DefaultIPv6PodSubnetOneNodePrefixLen ||
		v6.VPPHostSubnetOneNodePrefixLen != DefaultIPv6VPPHostSubnetOneNodePrefixLen || v6.NodeInterconnectCIDR != nil {
		t.Errorf("IPv6 plan %+v, want the section with the default prefix lengths", *v6)
	}
	if v4 := ipam.Plan(false); v4.PodSubnetCIDR.String() != DefaultPodSubnetCIDR {
		t.Errorf("IPv4 pod subnet %v, want the default %s", v4.PodSubnetCIDR, DefaultPodSubnetCIDR)
	}
	if e := c.ipamJSON; e.PodSubnetCIDR != DefaultPodSubnetCIDR || e.IPv6 == nil || e.IPv6.PodSubnetOneNodePrefixLen != 64 {
		t.Errorf("effective JSON %+v (ipv6 %+v): want the IPv4 keys and the IPv6 section with its defaults", e, e.IPv6)
	}
}

func TestIPv6OnlyKeysGiveASingleStackIPv6Plan(t *testing.T) {
	_, err := Parse([]byte("ipamConfig: {ipv6: {podSubnetCIDR: 'fd00:10:1::/48', vppHostSubnetCIDR: 'fd00:172:30::/96', "+
		"vxlanCIDR: 'fd00:192:168:30::/112', nodeInterconnectCIDR: 'fd00:192:168:16::/112', defaultGateway: 'fd00:192:168:16::fe'}}"),
		true, quietLog())
	if err == nil || !strings.Contains(err.Error(), "defaultGateway") {
		t.Fatalf("ipamConfig.ipv6.defaultGateway accepted (err %v): it is no key of the section", err)
	}
	cfg, err := Parse([]byte("ipamConfig: {defaultGateway: 'fd00:192:168:16::fe', ipv6: {podSubnetCIDR: 'fd00:10:1::/48', "+
		"vppHostSubnetCIDR: 'fd00:172:30::/96', vxlanCIDR: 'fd00:192:168:30::/112', nodeInterconnectCIDR: 'fd00:192:168:16::/112'}}"),
		true, quietLog())
	if err != nil {
		t.Fatalf("single-stack IPv6 in ipamConfig.ipv6 only: %v", err)
	}
	c, _, _ := cfg.compile()
	if c.ipam.IsDualStack() || !c.ipam.Primary().IsIPv6() || c.ipam.ServiceCIDR != nil {
		t.Errorf("plan dual-stack %v, primary IPv6 %v, service %v: want single-stack IPv6 without a service range",
			c.ipam.IsDualStack(), c.ipam.Primary().IsIPv6(), c.ipam.ServiceCIDR)
	}
	if c.ipam.NodeInterconnectCIDR.String() != "fd00:192:168:16::/112" || c.ipam.Plan(false) != nil {
		t.Errorf("node interconnect %v, IPv4 plan %v", c.ipam.NodeInterconnectCIDR, c.ipam.Plan(false))
	}
	if e := c.ipamJSON; e.PodSubnetCIDR != "" || e.VxlanCIDR != "" || e.IPv6.PodSubnetCIDR != "fd00:10:1::/48" {
		t.Errorf("effective JSON top-level pod %q vxlan %q, ipv6 %+v: want the plan under ipv6 only", e.PodSubnetCIDR, e.VxlanCIDR, e.IPv6)
	}
	// Upstream's spelling of single-stack IPv6 (IPv6 ranges in the top-level keys) stays valid.
	if _, err := Parse([]byte(ipv6With("")), true, quietLog()); err != nil {
		t.Errorf("upstream single-stack IPv6: %v", err)
	}
}

func TestBadDualStackCombinationsNameKeyAndValue(t *testing.T) {
	tests := []struct {
		name, conf, want string
	}{
		{"IPv6 key with an IPv4 value", dualConf("", map[string]string{"podSubnetCIDR": "10.2.0.0/16"}),
			`ipamConfig.ipv6.podSubnetCIDR: "10.2.0.0/16" is IPv4: the keys of ipamConfig.ipv6 take IPv6 ranges`},
		{"IPv4 key with an IPv6 value beside ipamConfig.ipv6",
			dualConf("podSubnetCIDR: 'fd00:20::/48', podSubnetOneNodePrefixLen: 64, vppHostSubnetCIDR: 'fd00:21::/96', "+
				"vppHostSubnetOneNodePrefixLen: 112, vxlanCIDR: 'fd00:22::/112', serviceCIDR: 'fd00:23::/108'", nil),
			`ipamConfig.podSubnetCIDR: "fd00:20::/48" is IPv6, but ipamConfig.ipv6 is set: with ipamConfig.ipv6 the top-level ranges are the IPv4 half of a dual-stack plan (for single-stack IPv6 leave the top-level ranges out)`},
		{"IPv6 contivCIDR beside ipamConfig.ipv6", dualConf("contivCIDR: 'fd00:99::/64', serviceCIDR: 'fd00:98::/108'", nil),
			`ipamConfig.contivCIDR: "fd00:99::/64" is IPv6, but ipamConfig.ipv6 is set: with ipamConfig.ipv6 the top-level ranges are the IPv4 half of a dual-stack plan (for single-stack IPv6 leave the top-level ranges out)`},
		{"IPv4-mapped IPv6 range", dualConf("", map[string]string{"serviceCIDR": "'::ffff:10.96.0.0/108'"}),
			`ipamConfig.ipv6.serviceCIDR: "::ffff:10.96.0.0/108" overlaps the IPv4-mapped range ::ffff:0:0/96, which is IPv4 on the wire`},
		{"link-local pod range", dualConf("", map[string]string{"podSubnetCIDR": "'fe80::/48'"}),
			`ipamConfig.ipv6.podSubnetCIDR: "fe80::/48" is link-local (fe80::/10): every interface has its own, so it cannot be routed between nodes`},
		{"multicast VXLAN range", dualConf("", map[string]string{"vxlanCIDR": "'ff05::/112'"}),
			`ipamConfig.ipv6.vxlanCIDR: "ff05::/112" is multicast (ff00::/8)`},
		{"dual-stack pod subnet without an IPv6 interconnect", dualConf("", map[string]string{"vppHostSubnetCIDR": ""}),
			`ipamConfig.ipv6.vppHostSubnetCIDR: "" must be set: pods with IPv6 need the IPv6 VPP-host interconnect`},
		{"IPv6 without a pod range", dualConf("", map[string]string{"podSubnetCIDR": ""}),
			`ipamConfig.ipv6.podSubnetCIDR: "" must be set: it is the IPv6 pod range`},
		{"no IPv6 VXLAN range with the overlay", dualConf("", map[string]string{"vxlanCIDR": ""}),
			`ipamConfig.ipv6.vxlanCIDR: "" must be set for the VXLAN overlay (useNoOverlay and useSRv6Interconnect are off): IPv6 between nodes needs the BVIs' IPv6`},
		{"IPv6 pod prefix not longer than its range", dualConf("", map[string]string{"podSubnetOneNodePrefixLen": "48"}),
			`ipamConfig.ipv6.podSubnetOneNodePrefixLen: 48 is not longer than ipv6.podSubnetCIDR /48`},
		{"IPv6 pod prefix with too few node-ID bits", dualConf("", map[string]string{"podSubnetOneNodePrefixLen": "52"}),
			`ipamConfig.ipv6.podSubnetOneNodePrefixLen: 52 leaves 4 node-ID bits, fewer than the 8 of podSubnetCIDR cut into /podSubnetOneNodePrefixLen: nodes with higher IDs would get no IPv6 subnet`},
		{"IPv6 interconnect prefix with too few node-ID bits", dualConf("", map[string]string{"vppHostSubnetOneNodePrefixLen": "100"}),
			`ipamConfig.ipv6.vppHostSubnetOneNodePrefixLen: 100 leaves 4 node-ID bits, fewer than the 8 of vppHostSubnetCIDR cut into /vppHostSubnetOneNodePrefixLen: nodes with higher IDs would get no IPv6 subnet`},
		{"IPv6 interconnect prefix leaving no host room", dualConf("", map[string]string{"vppHostSubnetOneNodePrefixLen": "127"}),
			`ipamConfig.ipv6.vppHostSubnetOneNodePrefixLen: 127 cannot hold the VPP (::1) and host (::2) addresses: IPv6 needs at most /126`},
		{"IPv6 VXLAN range smaller than the IPv4 one", dualConf("", map[string]string{"vxlanCIDR": "'fd00:192:168:30::/124'"}),
			`ipamConfig.ipv6.vxlanCIDR: "fd00:192:168:30::/124" has 4 host bits, fewer than the 8 of its IPv4 range 192.168.30.0/24: nodes with higher IDs would get no IPv6 address`},
		{"overlapping IPv6 ranges", dualConf("", map[string]string{"serviceCIDR": "'fd00:10:1:5::/108'"}),
			`ipamConfig.ipv6.serviceCIDR: "fd00:10:1:5::/108" overlaps ipv6.podSubnetCIDR "fd00:10:1::/48"`},
		{"external IPAM", dualConf("podSubnetCIDR: 10.1.0.0/16, useExternalIPAM: true", nil),
			`ipamConfig.useExternalIPAM: true is not supported with ipamConfig.ipv6 yet: the external IPAM result gives one address per pod`},
		{"IPv4 range beside an IPv6-only plan", "ipamConfig: {podSubnetCIDR: '', vxlanCIDR: '192.168.30.0/24', " +
			"vppHostSubnetCIDR: '', serviceCIDR: '', ipv6: {podSubnetCIDR: 'fd00:10:1::/48', vppHostSubnetCIDR: 'fd00:172:30::/96', vxlanCIDR: 'fd00:192:168:30::/112'}}",
			`ipamConfig.vxlanCIDR: "192.168.30.0/24" is set, but ipamConfig.podSubnetCIDR is empty: a single-stack IPv6 plan takes all its ranges from ipamConfig.ipv6 (or set ipamConfig.podSubnetCIDR for dual-stack)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.conf), true, quietLog())
			var msgs []string
			for _, fe := range FieldErrors(err) {
				msgs = append(msgs, fe.Error())
			}
			if len(msgs) != 1 || msgs[0] != tt.want {
				t.Fatalf("config %s\nerrors:\n  %s\nwant exactly:\n  %s", tt.conf, strings.Join(msgs, "\n  "), tt.want)
			}
		})
	}
}

func TestIPAMConfigCopiesShareNoIPv6Plan(t *testing.T) {
	cfg, err := Parse([]byte(dualConf("", nil)), true, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := cfg.compile()
	cp := c.ipam.clone()
	cp.DualStackIPv6.PodSubnetCIDR.IP[0] = 0x20
	if c.ipam.DualStackIPv6.PodSubnetCIDR.IP.Equal(net.ParseIP("2000:10:1::")) {
		t.Error("changing a copy's IPv6 pod range changed the original")
	}
	j := c.ipamJSON.clone()
	j.IPv6.PodSubnetCIDR = "x"
	if c.ipamJSON.IPv6.PodSubnetCIDR == "x" {
		t.Error("changing a copy's effective ipv6 section changed the original")
	}
	if cc := cfg.clone(); cc.IPAMConfig.IPv6 == cfg.IPAMConfig.IPv6 {
		t.Error("Config.clone shares ipamConfig.ipv6")
	}
}

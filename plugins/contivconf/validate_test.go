package contivconf

import (
	"strings"
	"testing"
)

// TestEachInvalidValueIsReportedWithKeyValueAndReason feeds one bad value per row and
// expects exactly one error with exactly this message.
func TestEachInvalidValueIsReportedWithKeyValueAndReason(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want string
	}{
		// CIDR syntax and canonical form.
		{"pod subnet is not a CIDR",
			"ipamConfig: {podSubnetCIDR: 10.1.0.0/33}",
			`ipamConfig.podSubnetCIDR: "10.1.0.0/33" is not a valid CIDR`},
		{"empty pod subnet is not a CIDR",
			"ipamConfig: {podSubnetCIDR: ''}",
			`ipamConfig.podSubnetCIDR: "" is not a valid CIDR`},
		{"VPP-host subnet is not a CIDR",
			"ipamConfig: {vppHostSubnetCIDR: 172.30.0.0}",
			`ipamConfig.vppHostSubnetCIDR: "172.30.0.0" is not a valid CIDR`},
		{"service CIDR with host bits suggests the network",
			"ipamConfig: {serviceCIDR: 10.96.0.1/12}",
			`ipamConfig.serviceCIDR: "10.96.0.1/12" has host bits set: use the network address "10.96.0.0/12"`},
		{"node interconnect CIDR with host bits suggests the network",
			"ipamConfig: {nodeInterconnectCIDR: 192.168.16.1/24}",
			`ipamConfig.nodeInterconnectCIDR: "192.168.16.1/24" has host bits set: use the network address "192.168.16.0/24"`},
		{"vxlan CIDR is not a CIDR",
			"ipamConfig: {vxlanCIDR: vxlan}",
			`ipamConfig.vxlanCIDR: "vxlan" is not a valid CIDR`},
		{"vxlan CIDR is required with the VXLAN overlay",
			"ipamConfig: {vxlanCIDR: ''}",
			`ipamConfig.vxlanCIDR: "" must be set for the VXLAN overlay (useNoOverlay and useSRv6Interconnect are off)`},
		{"contivCIDR is not a CIDR",
			"ipamConfig: {contivCIDR: 10.128.0.0}",
			`ipamConfig.contivCIDR: "10.128.0.0" is not a valid CIDR`},

		// IP families.
		{"VPP-host subnet of the other family",
			"ipamConfig: {vppHostSubnetCIDR: 'fd00::/64', vppHostSubnetOneNodePrefixLen: 96}",
			`ipamConfig.vppHostSubnetCIDR: "fd00::/64" is IPv6, but podSubnetCIDR "10.1.0.0/16" is IPv4`},
		{"vxlan CIDR of the other family",
			"ipamConfig: {vxlanCIDR: 'fd00::/112'}",
			`ipamConfig.vxlanCIDR: "fd00::/112" is IPv6, but podSubnetCIDR "10.1.0.0/16" is IPv4`},
		{"node interconnect CIDR of the other family",
			"ipamConfig: {nodeInterconnectCIDR: 'fd00::/64'}",
			`ipamConfig.nodeInterconnectCIDR: "fd00::/64" is IPv6, but podSubnetCIDR "10.1.0.0/16" is IPv4`},
		{"service CIDR of the other family",
			"ipamConfig: {serviceCIDR: 'fd00::/110'}",
			`ipamConfig.serviceCIDR: "fd00::/110" is IPv6, but podSubnetCIDR "10.1.0.0/16" is IPv4`},
		{"service CIDR of another family than contivCIDR",
			"ipamConfig: {contivCIDR: 'fd00::/64'}",
			`ipamConfig.serviceCIDR: "10.96.0.0/12" is IPv4, but contivCIDR "fd00::/64" is IPv6`},
		{"default gateway of the other family",
			"ipamConfig: {defaultGateway: 'fe80::1'}",
			`ipamConfig.defaultGateway: "fe80::1" is IPv6, but podSubnetCIDR "10.1.0.0/16" is IPv4`},
		{"default gateway is not an IP",
			"ipamConfig: {defaultGateway: 10.0.0.300}",
			`ipamConfig.defaultGateway: "10.0.0.300" is not a valid IP address`},

		// Per-node prefix lengths.
		{"pod prefix per node shorter than the cluster prefix",
			"ipamConfig: {podSubnetOneNodePrefixLen: 15}",
			`ipamConfig.podSubnetOneNodePrefixLen: 15 is not longer than podSubnetCIDR /16`},
		{"pod prefix per node equal to the cluster prefix",
			"ipamConfig: {podSubnetOneNodePrefixLen: 16}",
			`ipamConfig.podSubnetOneNodePrefixLen: 16 is not longer than podSubnetCIDR /16`},
		{"pod prefix per node beyond the address length",
			"ipamConfig: {podSubnetOneNodePrefixLen: 33}",
			`ipamConfig.podSubnetOneNodePrefixLen: 33 is longer than an IPv4 address (32 bits)`},
		{"IPv4 pod subnet per node without room for a pod",
			"ipamConfig: {podSubnetOneNodePrefixLen: 30}",
			`ipamConfig.podSubnetOneNodePrefixLen: 30 leaves no room for the gateway (.1), the NAT loopback (last but one) and a pod: IPv4 needs at most /29`},
		{"IPv6 pod subnet per node without room for a pod",
			ipv6With("  podSubnetOneNodePrefixLen: 126"),
			`ipamConfig.podSubnetOneNodePrefixLen: 126 leaves no room for the gateway (.1), the NAT loopback (last but one) and a pod: IPv6 needs at most /125`},
		{"IPv6 pod prefix per node beyond the address length",
			ipv6With("  podSubnetOneNodePrefixLen: 129"),
			`ipamConfig.podSubnetOneNodePrefixLen: 129 is longer than an IPv6 address (128 bits)`},
		{"VPP-host prefix per node shorter than the cluster prefix",
			"ipamConfig: {vppHostSubnetOneNodePrefixLen: 8}",
			`ipamConfig.vppHostSubnetOneNodePrefixLen: 8 is not longer than vppHostSubnetCIDR /16`},
		{"IPv4 VPP-host subnet per node without room for VPP and host",
			"ipamConfig: {vppHostSubnetOneNodePrefixLen: 31}",
			`ipamConfig.vppHostSubnetOneNodePrefixLen: 31 cannot hold the VPP (.1) and host (.2) addresses: IPv4 needs at most /30`},
		{"IPv6 VPP-host subnet per node without room for VPP and host",
			ipv6With("  vppHostSubnetOneNodePrefixLen: 127"),
			`ipamConfig.vppHostSubnetOneNodePrefixLen: 127 cannot hold the VPP (.1) and host (.2) addresses: IPv6 needs at most /126`},

		// Overlapping ranges.
		{"VPP-host subnet inside the pod subnet",
			"ipamConfig: {vppHostSubnetCIDR: 10.1.128.0/17}",
			`ipamConfig.vppHostSubnetCIDR: "10.1.128.0/17" overlaps podSubnetCIDR "10.1.0.0/16"`},
		{"service CIDR around the pod subnet",
			"ipamConfig: {serviceCIDR: 10.0.0.0/8}",
			`ipamConfig.serviceCIDR: "10.0.0.0/8" overlaps podSubnetCIDR "10.1.0.0/16"`},
		{"service CIDR overlapping the VPP-host subnet",
			"ipamConfig: {serviceCIDR: 172.30.0.0/24}",
			`ipamConfig.serviceCIDR: "172.30.0.0/24" overlaps vppHostSubnetCIDR "172.30.0.0/16"`},
		{"vxlan CIDR inside the service CIDR",
			"ipamConfig: {vxlanCIDR: 10.96.1.0/24}",
			`ipamConfig.vxlanCIDR: "10.96.1.0/24" overlaps serviceCIDR "10.96.0.0/12"`},
		{"node interconnect CIDR inside the vxlan CIDR",
			"ipamConfig: {nodeInterconnectCIDR: 192.168.30.0/25}",
			`ipamConfig.nodeInterconnectCIDR: "192.168.30.0/25" overlaps vxlanCIDR "192.168.30.0/24"`},
		{"node interconnect CIDR inside the pod subnet",
			"ipamConfig: {nodeInterconnectCIDR: 10.1.200.0/24}",
			`ipamConfig.nodeInterconnectCIDR: "10.1.200.0/24" overlaps podSubnetCIDR "10.1.0.0/16"`},
		{"service CIDR overlapping contivCIDR",
			"ipamConfig: {contivCIDR: 10.96.0.0/14}",
			`ipamConfig.serviceCIDR: "10.96.0.0/12" overlaps contivCIDR "10.96.0.0/14"`},

		// contivCIDR size.
		{"IPv4 contivCIDR too small to dissect",
			"ipamConfig: {contivCIDR: 10.128.0.0/15}",
			`ipamConfig.contivCIDR: "10.128.0.0/15" is too small: contivCIDR needs at least 18 host bits (IPv4: at most /14)`},
		{"IPv6 contivCIDR too small to dissect",
			"ipamConfig: {contivCIDR: 'fd00::/111', serviceCIDR: 'fd01::/110'}",
			`ipamConfig.contivCIDR: "fd00::/111" is too small: contivCIDR needs at least 18 host bits (IPv6: at most /110)`},

		// SRv6 prefixes.
		{"SRv6 prefix that is IPv4",
			"ipamConfig: {srv6: {servicePolicyBSIDSubnetCIDR: 10.0.0.0/16}}",
			`ipamConfig.srv6.servicePolicyBSIDSubnetCIDR: "10.0.0.0/16" is not an IPv6 CIDR`},
		{"SRv6 prefix that is not a CIDR",
			"ipamConfig: {srv6: {nodeToNodeHostPolicySIDSubnetCIDR: '9999::'}}",
			`ipamConfig.srv6.nodeToNodeHostPolicySIDSubnetCIDR: "9999::" is not a valid CIDR`},
		{"SRv6 prefix with host bits",
			"ipamConfig: {srv6: {nodeToNodePodLocalSIDSubnetCIDR: '7777::1/16'}}",
			`ipamConfig.srv6.nodeToNodePodLocalSIDSubnetCIDR: "7777::1/16" has host bits set: use the network address "7777::/16"`},

		// Interfaces.
		{"MTU below the minimum",
			"mtuSize: 575",
			`mtuSize: 575 is out of range 576..9216 (0 = VPP default)`},
		{"MTU above the maximum",
			"mtuSize: 9217",
			`mtuSize: 9217 is out of range 576..9216 (0 = VPP default)`},
		{"TAP rx ring size not a power of two",
			"tapv2RxRingSize: 300",
			`tapv2RxRingSize: 300 is not a power of two up to 32768 (0 = VPP default)`},
		{"TAP tx ring size not a power of two",
			"tapv2TxRingSize: 65535",
			`tapv2TxRingSize: 65535 is not a power of two up to 32768 (0 = VPP default)`},
		{"vmxnet3 rx ring size below 64",
			"vmxnet3RxRingSize: 32\nvmxnet3TxRingSize: 1024",
			`vmxnet3RxRingSize: 32 is not a power of two in 64..4096 (0 = VPP default)`},
		{"vmxnet3 tx ring size above 4096",
			"vmxnet3RxRingSize: 1024\nvmxnet3TxRingSize: 8192",
			`vmxnet3TxRingSize: 8192 is not a power of two in 64..4096 (0 = VPP default)`},
		{"vmxnet3 rx ring size not a power of two",
			"vmxnet3RxRingSize: 1000\nvmxnet3TxRingSize: 1024",
			`vmxnet3RxRingSize: 1000 is not a power of two in 64..4096 (0 = VPP default)`},
		{"unknown rx mode",
			"interfaceRxMode: fast",
			`interfaceRxMode: "fast" is not one of polling, interrupt, adaptive (empty = VPP default)`},
		{"TAP version 1",
			"tapInterfaceVersion: 1",
			`tapInterfaceVersion: 1 is not supported: VPP 25.10 only has virtio TAP (version 2)`},
		{"TAP version 3",
			"tapInterfaceVersion: 3",
			`tapInterfaceVersion: 3 is not supported: VPP 25.10 only has virtio TAP (version 2)`},

		// Routing, neighbours, STN.
		{"main VRF is the reserved ~0",
			"mainVRFID: 4294967295",
			`mainVRFID: 4294967295 is reserved by VPP`},
		{"pod VRF is the reserved ~0",
			"podVRFID: 4294967295",
			`podVRFID: 4294967295 is reserved by VPP`},
		{"pod VRF equal to the main VRF",
			"podVRFID: 0",
			`podVRFID: 0 is the same as mainVRFID: pods need a VRF of their own`},
		{"neighbour scan interval 0 while scanning",
			"ipNeighborScanInterval: 0",
			`ipNeighborScanInterval: 0 must be at least 1 (minute) when scanIPNeighbors is on`},
		{"neighbour stale threshold 0 while scanning",
			"ipNeighborStaleThreshold: 0",
			`ipNeighborStaleThreshold: 0 must be at least 1 (minute) when scanIPNeighbors is on`},
		{"unknown service renderer",
			"serviceRenderer: ipvs",
			`serviceRenderer: "ipvs" is not a service renderer: use "nat44" (default) or "cnat"`},
		{"STN version 3",
			"stnVersion: 3",
			`stnVersion: 3 is not supported: use 0 or 1 (VPP STN rule)`},
		{"STN version 2 (ip-punt-redirect) with a stolen NIC",
			"stealFirstNIC: true\nstnVersion: 2",
			`stnVersion: 2 (upstream's ip-punt-redirect) is not supported: use 0 or 1 (VPP STN rule)`},
		{"STN version 2 with one node stealing its NIC",
			"stnVersion: 2\nnodeConfig: [{nodeName: worker1, stealInterface: eth1}]",
			`stnVersion: 2 (upstream's ip-punt-redirect) is not supported: use 0 or 1 (VPP STN rule)`},
		{"stolen interface name with a slash",
			"stealInterface: eth/0",
			`stealInterface: "eth/0" holds '/' at byte 3: a Linux link name has no '/', ':', '%' or white space`},
		{"stolen interface name longer than IFNAMSIZ",
			"stealInterface: enp0s31f6-uplink",
			`stealInterface: "enp0s31f6-uplink" is 16 bytes long: a Linux link name has at most 15`},
		{"node's stolen interface name with a colon (an alias, not a link)",
			"nodeConfig: [{nodeName: worker1, stealInterface: 'eth0:1'}]",
			`nodeConfig[worker1].stealInterface: "eth0:1" holds ':' at byte 4: a Linux link name has no '/', ':', '%' or white space`},
		{"node's stolen interface name with a space",
			"nodeConfig: [{nodeName: worker1, stealInterface: 'eth 0'}]",
			`nodeConfig[worker1].stealInterface: "eth 0" holds ' ' at byte 3: a Linux link name has no '/', ':', '%' or white space`},
		{"STN record file relative",
			"stnRecordFile: stn.json",
			`stnRecordFile: "stn.json" is not a clean absolute path (contiv-stn's -state-file, default /var/lib/contiv/stn.json)`},
		{"STN record file empty",
			"stnRecordFile: ''",
			`stnRecordFile: "" is not a clean absolute path (contiv-stn's -state-file, default /var/lib/contiv/stn.json)`},

		// nodeConfig.
		{"node entry without a name",
			"nodeConfig: [{gateway: 192.168.16.1}]",
			`nodeConfig[#0].nodeName: "" is empty: every nodeConfig entry needs the name of its node`},
		{"two entries for one node",
			"nodeConfig: [{nodeName: worker1}, {nodeName: worker2}, {nodeName: worker1}]",
			`nodeConfig[#2].nodeName: "worker1" is already used by nodeConfig[#0]`},
		{"main interface IP without prefix length",
			"nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0, ip: 192.168.16.5}}]",
			`nodeConfig[worker1].mainVPPInterface.ip: "192.168.16.5" is not a valid CIDR`},
		{"main interface IP without interface name",
			"nodeConfig: [{nodeName: worker1, mainVPPInterface: {ip: 192.168.16.5/24}}]",
			`nodeConfig[worker1].mainVPPInterface.interfaceName: "" must be set when mainVPPInterface.ip is given`},
		{"other interface without a name",
			"nodeConfig: [{nodeName: worker1, otherVPPInterfaces: [{ip: 10.0.0.1/24}]}]",
			`nodeConfig[worker1].otherVPPInterfaces[#0].interfaceName: "" is empty: every other VPP interface needs a name`},
		{"other interface listed twice",
			"nodeConfig: [{nodeName: worker1, otherVPPInterfaces: [{interfaceName: eth1}, {interfaceName: eth1}]}]",
			`nodeConfig[worker1].otherVPPInterfaces[#1].interfaceName: "eth1" is listed twice`},
		{"other interface that is the main one",
			"nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0}, otherVPPInterfaces: [{interfaceName: eth0}]}]",
			`nodeConfig[worker1].otherVPPInterfaces[#0].interfaceName: "eth0" is the mainVPPInterface`},
		{"other interface IP not a CIDR",
			"nodeConfig: [{nodeName: worker1, otherVPPInterfaces: [{interfaceName: eth1, ip: x}]}]",
			`nodeConfig[worker1].otherVPPInterfaces[eth1].ip: "x" is not a valid CIDR`},
		{"node gateway not an IP",
			"nodeConfig: [{nodeName: worker1, gateway: 192.168.16}]",
			`nodeConfig[worker1].gateway: "192.168.16" is not a valid IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.conf), true, quietLog())
			if err == nil {
				t.Fatalf("Parse accepted the invalid value; want error %q", tt.want)
			}
			fes := FieldErrors(err)
			var msgs []string
			for _, fe := range fes {
				msgs = append(msgs, fe.Error())
			}
			if len(fes) != 1 || msgs[0] != tt.want {
				t.Fatalf("errors:\n  %s\nwant exactly:\n  %s", strings.Join(msgs, "\n  "), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.want)
			}
			wantKey, _, _ := strings.Cut(tt.want, ": ")
			if fes[0].Key != wantKey {
				t.Errorf("FieldError.Key = %q, want %q", fes[0].Key, wantKey)
			}
		})
	}
}

func TestValuesAtTheLimitsAreValid(t *testing.T) {
	for _, conf := range []string{
		"mtuSize: 576",
		"mtuSize: 9216",
		"tapv2RxRingSize: 32768\ntapv2TxRingSize: 1",
		"vmxnet3RxRingSize: 64\nvmxnet3TxRingSize: 4096",
		"vmxnet3RxRingSize: 1024", // only one set: ignored with a warning, not an error
		"interfaceRxMode: INTERRUPT",
		"interfaceRxMode: adaptive",
		"tapInterfaceVersion: 0",
		"stnVersion: 1",
		"stnVersion: 2", // no node steals its NIC: a warning
		"stealInterface: enp0s31f6.1000\nstnVersion: 1\nstnRecordFile: /run/contiv/stn.json",
		"nodeConfig: [{nodeName: worker1, stealInterface: eth1}]\nstealFirstNIC: true",
		"mainVRFID: 5\npodVRFID: 0",
		"scanIPNeighbors: false\nipNeighborScanInterval: 0\nipNeighborStaleThreshold: 0",
		"ipamConfig: {podSubnetOneNodePrefixLen: 29, vppHostSubnetOneNodePrefixLen: 30}",
		"ipamConfig: {vxlanCIDR: ''}\nuseNoOverlay: true",
		"ipamConfig: {vxlanCIDR: ''}\nuseSRv6Interconnect: true",
		"ipamConfig: {contivCIDR: 10.128.0.0/14}",
		"ipamConfig: {contivCIDR: 10.128.0.0/14, podSubnetCIDR: 'fd00::/64'}", // ignored custom subnet
		"ipamConfig: {defaultGateway: 192.168.16.100}",
		ipv6With("  podSubnetOneNodePrefixLen: 125\n  vppHostSubnetOneNodePrefixLen: 126\n  defaultGateway: 'e10:f00d::1'"),
		"nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0, ip: 192.168.16.5/24}, gateway: 192.168.16.1, otherVPPInterfaces: [{interfaceName: eth1, ip: 10.9.0.1/24}]}]",
	} {
		if _, err := Parse([]byte(conf), true, quietLog()); err != nil {
			t.Errorf("Parse(%q) rejected a valid value: %v", conf, err)
		}
	}
}

func TestAllProblemsOfAFileAreReportedTogether(t *testing.T) {
	conf := `
mtuSize: 100
tapInterfaceVersion: 1
podVRFID: 0
stnVersion: 5
interfaceRxMode: turbo
ipamConfig:
  podSubnetCIDR: 10.1.0.0/16
  podSubnetOneNodePrefixLen: 8
  serviceCIDR: 10.1.0.0/12
  vxlanCIDR: 192.168.30.1/24
  defaultGateway: gw
nodeConfig:
- nodeName: worker1
  gateway: nope
- nodeName: ""
`
	_, err := Parse([]byte(conf), true, quietLog())
	want := []string{
		`tapInterfaceVersion: 1 is not supported: VPP 25.10 only has virtio TAP (version 2)`,
		`interfaceRxMode: "turbo" is not one of polling, interrupt, adaptive (empty = VPP default)`,
		`mtuSize: 100 is out of range 576..9216 (0 = VPP default)`,
		`podVRFID: 0 is the same as mainVRFID: pods need a VRF of their own`,
		`stnVersion: 5 is not supported: use 0 or 1 (VPP STN rule)`,
		`ipamConfig.vxlanCIDR: "192.168.30.1/24" has host bits set: use the network address "192.168.30.0/24"`,
		`ipamConfig.podSubnetOneNodePrefixLen: 8 is not longer than podSubnetCIDR /16`,
		`ipamConfig.serviceCIDR: "10.1.0.0/12" has host bits set: use the network address "10.0.0.0/12"`,
		`ipamConfig.defaultGateway: "gw" is not a valid IP address`,
		`nodeConfig[worker1].gateway: "nope" is not a valid IP address`,
		`nodeConfig[#1].nodeName: "" is empty: every nodeConfig entry needs the name of its node`,
	}
	var got []string
	for _, fe := range FieldErrors(err) {
		got = append(got, fe.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() is not the messages one per line:\n%s", err)
	}
}

func TestIPv6PodSubnetWithIPv4DefaultsReportsEveryMismatch(t *testing.T) {
	_, err := Parse([]byte("ipamConfig: {podSubnetCIDR: 'fd00::/64', podSubnetOneNodePrefixLen: 80}"), true, quietLog())
	want := []string{
		`ipamConfig.vppHostSubnetCIDR: "172.30.0.0/16" is IPv4, but podSubnetCIDR "fd00::/64" is IPv6`,
		`ipamConfig.serviceCIDR: "10.96.0.0/12" is IPv4, but podSubnetCIDR "fd00::/64" is IPv6`,
		`ipamConfig.vxlanCIDR: "192.168.30.0/24" is IPv4, but podSubnetCIDR "fd00::/64" is IPv6`,
	}
	var got []string
	for _, fe := range FieldErrors(err) {
		got = append(got, fe.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestFieldErrorsFindsErrorsThroughWrapping(t *testing.T) {
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: yamlLoader("mtuSize: 1\nstnVersion: 9\n")}}
	err := p.Init()
	fes := FieldErrors(err)
	if len(fes) != 2 || fes[0].Key != "mtuSize" || fes[1].Key != "stnVersion" {
		t.Errorf("FieldErrors(Init error) = %v, want mtuSize and stnVersion", fes)
	}
	if FieldErrors(nil) != nil {
		t.Error("FieldErrors(nil) is not empty")
	}
}

// ipv6With returns ipv6Conf with the ipamConfig lines of extra replacing those of the same
// keys (a key given twice is an error).
func ipv6With(extra string) string {
	keys := map[string]bool{}
	for _, l := range strings.Split(extra, "\n") {
		k, _, _ := strings.Cut(strings.TrimSpace(l), ":")
		keys[k] = true
	}
	var out []string
	for _, l := range strings.Split(ipv6Conf, "\n") {
		k, _, _ := strings.Cut(strings.TrimSpace(l), ":")
		if strings.HasPrefix(l, "  ") && keys[k] {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + extra
}

package ipam

import (
	"errors"
	"net"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
)

const (
	conf22PerNode = `
ipamConfig:
  podSubnetCIDR: 10.128.0.0/14
  podSubnetOneNodePrefixLen: 22
  nodeInterconnectCIDR: 192.168.16.0/24
`
	confBigCluster = `
ipamConfig:
  podSubnetCIDR: 10.0.0.0/8
  podSubnetOneNodePrefixLen: 24
  vppHostSubnetCIDR: 172.16.0.0/12
  vppHostSubnetOneNodePrefixLen: 28
  nodeInterconnectCIDR: 192.168.0.0/16
  vxlanCIDR: 100.64.0.0/16
  serviceCIDR: 100.96.0.0/12
`
	confContivCIDR = `
ipamConfig:
  contivCIDR: 10.128.0.0/14
`
)

func TestPodSubnetIsBlockNOfTheClusterRange(t *testing.T) {
	tests := []struct {
		name    string
		conf    string
		nodeID  uint32
		want    string
		wantErr string
	}{
		{"default node 1", defaultConf, 1, "10.1.1.0/24", ""},
		{"default node 2", defaultConf, 2, "10.1.2.0/24", ""},
		{"default node 255", defaultConf, 255, "10.1.255.0/24", ""},
		{"default node 256 wraps to block 0", defaultConf, 256, "10.1.0.0/24", ""},
		{"default node 257 is out of range", defaultConf, 257, "",
			"pod subnet of nodeID 257: 10.1.0.0/16 cut into /24 per node: nodeID is out of the valid range: nodeID 257 is not in 1-256"},
		{"/22 per node, node 1", conf22PerNode, 1, "10.128.4.0/22", ""},
		{"/22 per node, node 3", conf22PerNode, 3, "10.128.12.0/22", ""},
		{"/22 per node, node 255", conf22PerNode, 255, "10.131.252.0/22", ""},
		{"/22 per node, node 256 wraps", conf22PerNode, 256, "10.128.0.0/22", ""},
		{"/8 cut into /24, node 300", confBigCluster, 300, "10.1.44.0/24", ""},
		{"/8 cut into /24, node 65535", confBigCluster, 65535, "10.255.255.0/24", ""},
		{"/8 cut into /24, node 65536 wraps", confBigCluster, 65536, "10.0.0.0/24", ""},
		{"/8 cut into /24, node 65537 is out of range", confBigCluster, 65537, "",
			"nodeID is out of the valid range: nodeID 65537 is not in 1-65536"},
		{"contivCIDR node 1", confContivCIDR, 1, "10.128.0.128/25", ""},
		{"contivCIDR node 512 wraps", confContivCIDR, 512, "10.128.0.0/25", ""},
		{"contivCIDR node 513", confContivCIDR, 513, "", "nodeID 513 is not in 1-512"},
		{"IPv6 node 1", ipv6Conf, 1, "2001:0:0:1::/64", ""},
		{"IPv6 node 65535", ipv6Conf, 65535, "2001:0:0:ffff::/64", ""},
		{"IPv6 node 65537", ipv6Conf, 65537, "", "nodeID 65537 is not in 1-65536"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := addressPlan{fp: ipamConfig(t, tc.conf).Primary()}
			got, err := pl.podSubnet(tc.nodeID)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNodeIDOutOfRange) {
					t.Errorf("error %v is not ErrNodeIDOutOfRange", err)
				}
				return
			}
			if got.String() != tc.want {
				t.Errorf("pod subnet of %d = %s, want %s", tc.nodeID, got, tc.want)
			}
		})
	}
}

func TestHostInterconnectSubnetIsBlockNOfVPPHostRange(t *testing.T) {
	tests := []struct {
		conf   string
		nodeID uint32
		want   string
	}{
		{defaultConf, 1, "172.30.1.0/24"},
		{defaultConf, 256, "172.30.0.0/24"},
		{confBigCluster, 300, "172.16.18.192/28"}, // 300*16 = 4800 = 18*256 + 192
		{confContivCIDR, 1, "10.129.0.128/25"},
		{ipv6Conf, 1, "2002::1:0/112"},
	}
	for _, tc := range tests {
		pl := addressPlan{fp: ipamConfig(t, tc.conf).Primary()}
		got, err := pl.hostSubnet(tc.nodeID)
		if err != nil || got.String() != tc.want {
			t.Errorf("host subnet of %d = %v, %v; want %s", tc.nodeID, got, err, tc.want)
		}
	}
}

func TestPerNodePrefixMustBeLongerThanClusterPrefix(t *testing.T) {
	cfg := &contivconf.FamilyPlan{
		PodSubnetCIDR: mustCIDR(t, "10.1.0.0/16"), PodSubnetOneNodePrefixLen: 16,
		VPPHostSubnetCIDR: mustCIDR(t, "172.30.0.0/16"), VPPHostSubnetOneNodePrefixLen: 33,
	}
	pl := addressPlan{fp: cfg}
	_, err := pl.podSubnet(1)
	checkErr(t, err, "pod subnet of nodeID 1: the prefix length per node /16 must be longer than the prefix of 10.1.0.0/16")
	_, err = pl.hostSubnet(1)
	checkErr(t, err, "VPP-host subnet of nodeID 1: the prefix length per node /33 is longer than an address of 172.30.0.0/16")
	_, err = pl.nodeIDFromPodIP(net.ParseIP("10.1.2.3"))
	checkErr(t, err, "the prefix length per node /16 does not fit 10.1.0.0/16")
}

func TestNodeIPIsHostNOfNodeInterconnectShiftedPastGateway(t *testing.T) {
	tests := []struct {
		name    string
		conf    string
		nodeID  uint32
		gw      string
		want    string
		wantErr string
	}{
		{"node 1 without gateway", defaultConf, 1, "", "192.168.16.1/24", ""},
		{"node 2 without gateway", defaultConf, 2, "", "192.168.16.2/24", ""},
		{"node 1 with gateway .1 moves up", defaultConf, 1, "192.168.16.1", "192.168.16.2/24", ""},
		{"node 2 with gateway .1 moves up", defaultConf, 2, "192.168.16.1", "192.168.16.3/24", ""},
		{"node below the gateway stays", defaultConf, 4, "192.168.16.5", "192.168.16.4/24", ""},
		{"node at the gateway moves up", defaultConf, 5, "192.168.16.5", "192.168.16.6/24", ""},
		{"gateway outside the range is ignored", defaultConf, 1, "10.0.0.1", "192.168.16.1/24", ""},
		{"node 254 without gateway", defaultConf, 254, "", "192.168.16.254/24", ""},
		{"node 254 pushed onto the broadcast address", defaultConf, 254, "192.168.16.1", "",
			"node IP of nodeID 254: no free address for nodeID 254: node IP (moved up past the default gateway 192.168.16.1) 192.168.16.255 is the broadcast address of 192.168.16.0/24"},
		{"node 255 is the broadcast address", defaultConf, 255, "", "",
			"no free address for nodeID 255: node IP 192.168.16.255 is the broadcast address of 192.168.16.0/24"},
		{"node 255 pushed out of the range", defaultConf, 255, "192.168.16.1", "",
			"192.168.17.0 is outside 192.168.16.0/24"},
		{"node 256 is host 0", defaultConf, 256, "", "",
			"node IP of nodeID 256: no free address for nodeID 256: it maps to host 0, the network address of 192.168.16.0/24"},
		{"node 257 is out of range", defaultConf, 257, "", "",
			"node IP of nodeID 257: hosts of 192.168.16.0/24: nodeID is out of the valid range: nodeID 257 is not in 1-256"},
		{">256 nodes: node 300", confBigCluster, 300, "", "192.168.1.44/16", ""},
		{">256 nodes: node 300 with gateway .0.1", confBigCluster, 300, "192.168.0.1", "192.168.1.45/16", ""},
		{"contivCIDR node 1", confContivCIDR, 1, "", "10.130.0.1/23", ""},
		{"contivCIDR node 510", confContivCIDR, 510, "", "10.130.1.254/23", ""},
		{"IPv6 node 1", ipv6Conf, 1, "", "fe10::1/64", ""},
		{"IPv6 node 1 with gateway fe10::1", ipv6Conf, 1, "fe10::1", "fe10::2/64", ""},
		{"no nodeInterconnectCIDR", "ipamConfig:\n  nodeInterconnectDHCP: true\n", 1, "", "",
			"node IP of nodeID 1: nodeInterconnectCIDR is not configured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := addressPlan{fp: ipamConfig(t, tc.conf).Primary()}
			ip, network, err := pl.nodeIP(tc.nodeID, net.ParseIP(tc.gw))
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			ones, _ := network.Mask.Size()
			if got := (&net.IPNet{IP: ip, Mask: network.Mask}).String(); got != tc.want {
				t.Errorf("node IP = %s, want %s", got, tc.want)
			}
			if !network.IP.Equal(network.IP.Mask(network.Mask)) || ones == 0 {
				t.Errorf("network %s is not in canonical form", network)
			}
		})
	}
}

func TestNodeAddressErrorsAreClassified(t *testing.T) {
	pl := addressPlan{fp: ipamConfig(t, defaultConf).Primary()}
	_, _, err := pl.nodeIP(256, nil)
	if !errors.Is(err, ErrNoAddressForNodeID) {
		t.Errorf("node 256: %v is not ErrNoAddressForNodeID", err)
	}
	_, _, err = pl.vxlanIP(300)
	if !errors.Is(err, ErrNodeIDOutOfRange) {
		t.Errorf("node 300: %v is not ErrNodeIDOutOfRange", err)
	}
}

func TestVxlanIPIsHostNOfVxlanRange(t *testing.T) {
	tests := []struct {
		conf    string
		nodeID  uint32
		want    string
		wantErr string
	}{
		{defaultConf, 1, "192.168.30.1/24", ""},
		{defaultConf, 254, "192.168.30.254/24", ""},
		{defaultConf, 255, "", "VXLAN IP of nodeID 255: no free address for nodeID 255: VXLAN IP 192.168.30.255 is the broadcast address of 192.168.30.0/24"},
		{defaultConf, 256, "", "VXLAN IP of nodeID 256: no free address for nodeID 256"},
		{defaultConf, 300, "", "VXLAN IP of nodeID 300: hosts of 192.168.30.0/24: nodeID is out of the valid range: nodeID 300 is not in 1-256"},
		{confBigCluster, 300, "100.64.1.44/16", ""},
		{confContivCIDR, 1, "10.130.2.1/23", ""},
		{ipv6Conf, 1, "2005::1/112", ""},
		{"useNoOverlay: true\nipamConfig:\n  vxlanCIDR: \"\"\n", 1, "", "VXLAN IP of nodeID 1: vxlanCIDR is not configured"},
	}
	for _, tc := range tests {
		pl := addressPlan{fp: ipamConfig(t, tc.conf).Primary()}
		ip, network, err := pl.vxlanIP(tc.nodeID)
		checkErr(t, err, tc.wantErr)
		if tc.wantErr != "" {
			continue
		}
		if got := (&net.IPNet{IP: ip, Mask: network.Mask}).String(); got != tc.want {
			t.Errorf("VXLAN IP of %d = %s, want %s", tc.nodeID, got, tc.want)
		}
	}
}

func TestNodeIDFromPodIPInvertsThePodSubnet(t *testing.T) {
	tests := []struct {
		conf    string
		ip      string
		want    uint32
		wantErr string
	}{
		{defaultConf, "10.1.1.5", 1, ""},
		{defaultConf, "10.1.255.3", 255, ""},
		{defaultConf, "10.1.0.7", 256, ""}, // block 0 belongs to the ID that wraps to it
		{defaultConf, "10.2.0.1", 0, "node ID of pod IP 10.2.0.1: it is not in the pod subnet 10.1.0.0/16"},
		{defaultConf, "2001::1", 0, "it is not in the pod subnet 10.1.0.0/16"},
		{conf22PerNode, "10.128.13.200", 3, ""},
		{confBigCluster, "10.1.44.9", 300, ""},
		{confBigCluster, "10.255.255.254", 65535, ""},
		{confContivCIDR, "10.128.0.130", 1, ""},
		{confContivCIDR, "10.128.1.5", 2, ""},
		{ipv6Conf, "2001:0:0:1::5", 1, ""},
		{ipv6Conf, "2001:0:0:ffff:1::", 65535, ""},
	}
	for _, tc := range tests {
		pl := addressPlan{fp: ipamConfig(t, tc.conf).Primary()}
		got, err := pl.nodeIDFromPodIP(net.ParseIP(tc.ip))
		checkErr(t, err, tc.wantErr)
		if got != tc.want {
			t.Errorf("node ID of %s = %d, want %d", tc.ip, got, tc.want)
		}
	}
}

func TestNodeIDFromPodIPRoundTripsEveryNode(t *testing.T) {
	pl := addressPlan{fp: ipamConfig(t, confBigCluster).Primary()}
	for _, id := range []uint32{1, 2, 255, 256, 257, 300, 4096, 65535, 65536} {
		sub, err := pl.podSubnet(id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pl.nodeIDFromPodIP(hostAt(sub, 2))
		if err != nil || got != id {
			t.Errorf("node %d: pod subnet %s maps back to %d, %v", id, sub, got, err)
		}
	}
}

func TestNodeIDFromPodIPWithoutWrappingID(t *testing.T) {
	// 32 node bits: no ID wraps to block 0, which therefore belongs to no node.
	cfg := &contivconf.FamilyPlan{PodSubnetCIDR: mustCIDR(t, "2001::/32"), PodSubnetOneNodePrefixLen: 64}
	pl := addressPlan{fp: cfg}
	_, err := pl.nodeIDFromPodIP(net.ParseIP("2001::5"))
	checkErr(t, err, "it is in block 0 of 2001::/32, which belongs to no node")
	got, err := pl.nodeIDFromPodIP(net.ParseIP("2001:0:ffff:ffff::1"))
	if err != nil || got != 0xffffffff {
		t.Errorf("got %d, %v", got, err)
	}
	cfg = &contivconf.FamilyPlan{PodSubnetCIDR: mustCIDR(t, "2001::/16"), PodSubnetOneNodePrefixLen: 64}
	_, err = addressPlan{fp: cfg}.nodeIDFromPodIP(net.ParseIP("2001:1::1"))
	checkErr(t, err, "node part 4294967296 does not fit 32 bits")
}

func TestNodeIndexWrapsOnlyTheFirstIDPastTheRange(t *testing.T) {
	tests := []struct {
		id      uint32
		bits    int
		want    uint64
		wantErr string
	}{
		{0, 8, 0, ""},
		{1, 8, 1, ""},
		{255, 8, 255, ""},
		{256, 8, 0, ""},
		{257, 8, 0, "nodeID is out of the valid range: nodeID 257 is not in 1-256"},
		{1, 1, 1, ""},
		{2, 1, 0, ""},
		{3, 1, 0, "nodeID 3 is not in 1-2"},
		{^uint32(0), 32, uint64(^uint32(0)), ""},
		{^uint32(0), 31, 0, "is not in 1-2147483648"},
		{12345, 64, 12345, ""},
	}
	for _, tc := range tests {
		got, err := nodeIndex(tc.id, tc.bits)
		checkErr(t, err, tc.wantErr)
		if got != tc.want {
			t.Errorf("nodeIndex(%d, %d) = %d, want %d", tc.id, tc.bits, got, tc.want)
		}
	}
}

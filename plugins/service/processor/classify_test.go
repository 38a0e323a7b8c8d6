package processor

import (
	"net"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// classifyAddress compares IPv4 addresses as numbers; it must classify every address as
// classify does with net.IP, whatever the form of the node's networks (4- or 16-byte,
// IPv6, missing).
func TestClassifyAddressAgreesWithClassify(t *testing.T) {
	cidr := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sixteen := func(n *net.IPNet) *net.IPNet { // the 16-byte form of an IPv4 network
		return &net.IPNet{IP: n.IP.To16(), Mask: append(net.CIDRMask(96, 128)[:12:12], n.Mask...)}
	}
	v4 := func(thisNode, allNodes *net.IPNet) [numFamilies]familyNets {
		return [numFamilies]familyNets{famIPv4: {podSubnetThisNode: thisNode, podSubnetAllNodes: allNodes}}
	}
	contexts := map[string]nodeContext{
		"ipv4": {nets: v4(cidr("10.1.1.0/24"), cidr("10.1.0.0/16")),
			nodeIPs: []net.IP{net.ParseIP("192.168.16.10")}, hostIPs: []net.IP{net.ParseIP("10.3.1.10"), net.ParseIP("fd00::1")}},
		"16-byte networks": {nets: v4(sixteen(cidr("10.1.1.0/24")), sixteen(cidr("10.1.0.0/16"))),
			nodeIPs: []net.IP{net.ParseIP("192.168.16.10").To4()}},
		"external IPAM": {nets: v4(cidr("172.16.5.0/24"), cidr("10.1.0.0/16"))},
		"ipv6 cluster": {nets: [numFamilies]familyNets{famIPv6: {podSubnetThisNode: cidr("fd10:1:1::/64"), podSubnetAllNodes: cidr("fd10:1::/48")}},
			nodeIPs: []net.IP{net.ParseIP("fd00::10")}},
		"dual stack": {nets: [numFamilies]familyNets{
			famIPv4: {podSubnetThisNode: cidr("10.1.1.0/24"), podSubnetAllNodes: cidr("10.1.0.0/16")},
			famIPv6: {podSubnetThisNode: cidr("fd10:1:1::/64"), podSubnetAllNodes: cidr("fd10:1::/48")}},
			nodeIPs: []net.IP{net.ParseIP("192.168.16.10"), net.ParseIP("fd00::10")}},
		"nothing known": {},
	}
	addrs := []string{"10.1.1.3", "10.1.2.3", "10.2.0.1", "192.168.16.10", "192.168.16.20", "10.3.1.10", "172.16.5.9",
		"fd10:1:1::3", "fd10:1:2::3", "fd00::10", "fd00::1", "0.0.0.0", "255.255.255.255"}
	for name, ctx := range contexts {
		ctx.prepare()
		for _, s := range addrs {
			ip := parseIP(s)
			wantLocal, wantHost := ctx.classify(ip)
			local, host := ctx.classifyAddress(renderer.NewAddress(ip))
			if local != wantLocal || host != wantHost {
				t.Errorf("%s: %s classified local=%v hostNetwork=%v, classify says %v %v", name, s, local, host, wantLocal, wantHost)
			}
		}
	}
}

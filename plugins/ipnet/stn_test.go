package ipnet

import (
	"net"
	"testing"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vppstn "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// stnConf steals eth1; the STN daemon reports 192.168.16.5/24 with gateway .100.
const stnConf = `
mtuSize: 1450
stealInterface: eth1
`

func stolenNIC() *contivconf.StolenInterfaceInfo {
	return &contivconf.StolenInterfaceInfo{IPAddresses: []*net.IPNet{cidr("192.168.16.5/24")}, DefaultGW: net.ParseIP("192.168.16.100")}
}

// wantSTN is what STN mode puts besides the common and overlay keys: the NIC with the
// stolen address, the usual interconnect with the node's address and STN's MAC added
// on the host's end, the STN rule, proxy ARP for the node subnet on VPP's end, the
// host's MAC for its address, and the host's default route via the NIC's gateway.
func wantSTN() api.KeyValuePairs {
	kvs := union(wantTAPInterconnect(), api.KeyValuePairs{
		"config/vpp/v2/interfaces/GigabitEthernet0/8/0": &vppif.Interface{
			Name: nic, Type: vppif.Interface_DPDK, Enabled: true, IpAddresses: []string{"192.168.16.5/24"},
		},
		"config/vpp/v2/route/vrf/0/dst/0.0.0.0/0/gw/192.168.16.100": &vppl3.Route{
			DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.16.100", OutgoingInterface: nic,
		},
		"config/linux/l3/v2/route/0.0.0.0/0/tap-vpp1": &linuxl3.Route{
			OutgoingInterface: "tap-vpp1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "0.0.0.0/0", GwAddr: "192.168.16.100",
		},
		"config/vpp/stn/v2/rule/tap-vpp2/ip/192.168.16.5": &vppstn.Rule{IpAddress: "192.168.16.5", Interface: "tap-vpp2"},
		"config/vpp/v2/arp/tap-vpp2/192.168.16.5": &vppl3.ARPEntry{
			Interface: "tap-vpp2", IpAddress: "192.168.16.5", PhysAddress: "00:00:00:00:00:02", Static: true,
		},
		vppl3.ProxyARPKey: &vppl3.ProxyARP{
			Interfaces: []*vppl3.ProxyARP_Interface{{Name: "tap-vpp2"}},
			Ranges:     []*vppl3.ProxyARP_Range{{FirstIpAddr: "192.168.16.1", LastIpAddr: "192.168.16.254"}},
		},
	})
	host := kvs["config/linux/interfaces/v2/interface/tap-vpp1"].(*linuxif.Interface)
	host.PhysAddress, host.IpAddresses = "00:00:00:00:00:02", []string{"192.168.16.5/24", "172.30.1.2/24"}
	return kvs
}

func TestSTNResyncGivesTheHostTheNodeAddressBehindVPP(t *testing.T) {
	e := newEnv(t, stnConf, envOptions{dpdk: []string{nic}, stnInfo: stolenNIC()})
	kvs := e.mustResync()
	diffKVs(t, kvs, union(wantSTN(), wantCommon(), wantOverlayLocal(), wantBD()))
	if ip, _ := e.n.GetNodeIP(); ip.String() != "192.168.16.5" {
		t.Errorf("node IP %v, want the stolen NIC's 192.168.16.5", ip)
	}
}

func TestHostRangeExcludesNetworkAndBroadcast(t *testing.T) {
	for _, tc := range []struct{ in, first, last string }{
		{"192.168.16.5/24", "192.168.16.1", "192.168.16.254"},
		{"10.0.0.9/30", "10.0.0.9", "10.0.0.10"},
		{"10.0.0.9/31", "", ""},
		{"2001:db8::5/64", "", ""},
	} {
		first, last, ok := hostRange(cidr(tc.in))
		if tc.first == "" {
			if ok {
				t.Errorf("%s: range %v-%v, want none", tc.in, first, last)
			}
			continue
		}
		if !ok || first.String() != tc.first || last.String() != tc.last {
			t.Errorf("%s: %v-%v (%v), want %s-%s", tc.in, first, last, ok, tc.first, tc.last)
		}
	}
}

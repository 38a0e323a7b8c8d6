package uplink

import (
	"fmt"
	"net"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

const nodeConf = `
nodeConfig:
- nodeName: n1
  mainVPPInterface: {interfaceName: GigabitEthernet0/8/0, ip: 192.168.16.2/24}
  otherVPPInterfaces:
  - {interfaceName: GigabitEthernet0/9/0, ip: 10.20.0.2/24}
  gateway: %s
`

// The default interface is the one whose subnet holds the static default gateway, with
// its IPv4; without a gateway there is none.
func TestDefaultIsTheInterfaceTowardsTheGateway(t *testing.T) {
	nodeIP, nodeNet, _ := net.ParseCIDR("192.168.16.2/24")
	for _, tc := range []struct{ gw, name, ip string }{
		{"192.168.16.100", "GigabitEthernet0/8/0", "192.168.16.2"},
		{"10.20.0.1", "GigabitEthernet0/9/0", "10.20.0.2"},
		{"172.16.0.1", "", "<nil>"},
	} {
		cc := servicetest.ContivConf(t, "n1", fmt.Sprintf(nodeConf, tc.gw))
		name, ip := Default(cc, nodeIP, nodeNet)
		if name != tc.name || ip.String() != tc.ip {
			t.Errorf("gateway %s: default interface %q %v, want %q %s", tc.gw, name, ip, tc.name, tc.ip)
		}
	}
}

// Package uplink finds this node's default interface, the one towards the default
// gateway whose address the service renderers source-NAT traffic leaving the cluster
// to. It reads contiv.conf's node settings only; it stages nothing.
package uplink

import (
	"net"

	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
)

// Default returns the interface towards the default gateway and its IPv4 address:
// in STN and DHCP mode the main interface with the node IP; otherwise the main or
// other interface whose subnet holds the static default gateway ("" and nil: none).
// nodeIP and nodeNet are this node's IP and network (ipnet's GetNodeIP).
func Default(cc contivconf.API, nodeIP net.IP, nodeNet *net.IPNet) (name string, ip net.IP) {
	mainIf := cc.GetMainInterfaceName()
	if cc.InSTNMode() || cc.UseDHCP() {
		return mainIf, nodeIP.To4()
	}
	gw := cc.GetStaticDefaultGW()
	if gw == nil {
		return "", nil
	}
	if nodeNet != nil && nodeNet.Contains(gw) {
		return mainIf, nodeIP.To4()
	}
	for _, other := range cc.GetOtherVPPInterfaces() {
		for _, addr := range other.IPs {
			if addr != nil && addr.Network != nil && addr.Network.Contains(gw) {
				return other.InterfaceName, addr.Address.To4()
			}
		}
	}
	return "", nil
}

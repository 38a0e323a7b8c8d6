package contivconf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary contiv.conf contents to Parse and the node-level validation:
// each must give a configuration or an error naming the problem, never panic.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../../k8s/examples/contiv.conf"} {
		if data, err := os.ReadFile(filepath.Clean(p)); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range []string{
		"",
		"mtuSize: 1450\n",
		"ipamConfig: {contivCIDR: 10.128.0.0/14}\n",
		"ipamConfig:\n  podSubnetCIDR: 2001::/48\n  podSubnetOneNodePrefixLen: 64\n  vppHostSubnetCIDR: 2002::/64\n  vppHostSubnetOneNodePrefixLen: 112\n  serviceCIDR: 2096::/110\n  nodeInterconnectCIDR: e10:f00d::/90\n  vxlanCIDR: 2005::/112\n",
		"nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0, ip: 192.168.16.5/24}, gateway: 192.168.16.1, otherVPPInterfaces: [{interfaceName: eth1, ip: 10.9.0.1/24}]}]",
		"stealInterface: eth1\nstnVersion: 2\n",
		"interfaceRxMode: adaptive\ntapv2RxRingSize: 256\n",
		"ipamConfig: {srv6: {servicePolicyBSIDSubnetCIDR: 8fff::/16}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if cfg, err := Parse(data, false, nil); err == nil {
			_ = cfg.ValidateForNode("worker1")
		}
		// The agent's path: load, validate, resolve this node's configuration.
		p := &Plugin{Deps: Deps{Log: quietLog(), Config: yamlLoader(string(data)), NodeName: "worker1",
			GetSTNInfo: func(string) (*StolenInterfaceInfo, error) { return nil, errors.New("no STN daemon") }}}
		if err := p.Init(); err == nil {
			_ = p.ReloadNodeInterfaces()
		}
	})
}

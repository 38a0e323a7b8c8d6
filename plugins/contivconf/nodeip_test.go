package contivconf

import (
	"strings"
	"testing"
)

func TestEmptyConfigIsRefusedNamingTheMissingNodeIPKeys(t *testing.T) {
	cfg, err := Parse(nil, true, quietLog())
	if err != nil {
		t.Fatalf("Parse of an empty file: %v", err)
	}
	err = cfg.ValidateForNode("worker1")
	if err == nil {
		t.Fatal("ValidateForNode accepted an empty contiv.conf, whose node has no IP source")
	}
	for _, key := range []string{"ipamConfig.nodeInterconnectCIDR", "ipamConfig.nodeInterconnectDHCP",
		"ipamConfig.contivCIDR", "nodeConfig[worker1].mainVPPInterface.ip"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	fes := FieldErrors(err)
	if len(fes) != 1 || fes[0].Key != "ipamConfig.nodeInterconnectCIDR" {
		t.Errorf("field errors %v", fes)
	}
	// Other problems are reported with it.
	cfg, _ = Parse(nil, true, quietLog())
	cfg.MTUSize = 1
	if fes := FieldErrors(cfg.ValidateForNode("worker1")); len(fes) != 1 || fes[0].Key != "mtuSize" {
		t.Errorf("an invalid value is reported first: %v", fes)
	}
}

func TestEveryNodeIPSourceIsAccepted(t *testing.T) {
	for _, conf := range []string{
		"ipamConfig: {nodeInterconnectCIDR: 192.168.16.0/24}",
		"ipamConfig: {nodeInterconnectDHCP: true}",
		"ipamConfig: {contivCIDR: 10.128.0.0/14}",
		"stealFirstNIC: true",
		"nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0, ip: 192.168.16.5/24}}]",
		"nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0, useDHCP: true}}]",
	} {
		cfg, err := Parse([]byte(conf), true, quietLog())
		if err != nil {
			t.Fatalf("%s: %v", conf, err)
		}
		if err := cfg.ValidateForNode("worker1"); err != nil {
			t.Errorf("%s: %v", conf, err)
		}
	}
	// Another node's entry does not help this one.
	cfg, _ := Parse([]byte("nodeConfig: [{nodeName: worker2, mainVPPInterface: {interfaceName: eth0, ip: 192.168.16.5/24}}]"), true, quietLog())
	if err := cfg.ValidateForNode("worker1"); err == nil {
		t.Error("a nodeConfig entry of another node was taken for this node's IP source")
	}
}

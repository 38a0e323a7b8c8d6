package contivconf

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	exampleConf = "../../k8s/examples/contiv.conf"
	goldenFile  = "testdata/contiv.conf.golden.json"
)

// effectiveDump is everything the plugin makes of a contiv.conf, for the golden file.
type effectiveDump struct {
	// Config is the whole file after defaults and normalisation.
	Config *Config `json:"config"`
	// IPAMConfig is GetIPAMConfigForJSON (what GET /contiv/v1/ipam shows as "config").
	IPAMConfig *IPAMConfigForJSON `json:"ipamConfigForJSON"`
	// Node is the resolution for node "worker1" without VPP and STN daemon.
	Node nodeDump `json:"node"`
}

type nodeDump struct {
	NodeName              string   `json:"nodeName"`
	InSTNMode             bool     `json:"inSTNMode"`
	UseDHCP               bool     `json:"useDHCP"`
	MainInterfaceName     string   `json:"mainInterfaceName"`
	MainInterfaceIPs      []string `json:"mainInterfaceConfiguredIPs"`
	OtherVPPInterfaces    []string `json:"otherVPPInterfaces"`
	StaticDefaultGW       string   `json:"staticDefaultGW"`
	NatExternalTraffic    bool     `json:"natExternalTraffic"`
	EnablePacketTrace     bool     `json:"enablePacketTrace"`
	UseVmxnet3            bool     `json:"useVmxnet3"`
	IsIPv6                bool     `json:"isIPv6"`
	IPAMServiceCIDR       string   `json:"ipamServiceCIDR"`
	IPAMPodSubnetCIDR     string   `json:"ipamPodSubnetCIDR"`
	IPAMNodeInterconnect  string   `json:"ipamNodeInterconnectCIDR"`
	IPAMVxlanCIDR         string   `json:"ipamVxlanCIDR"`
	IPAMSRv6PolicyBSIDNet string   `json:"ipamSRv6ServicePolicyBSIDSubnetCIDR"`
}

func dumpEffective(p *Plugin) *effectiveDump {
	ipam := p.GetIPAMConfig()
	n := nodeDump{
		NodeName:              p.NodeName,
		InSTNMode:             p.InSTNMode(),
		UseDHCP:               p.UseDHCP(),
		MainInterfaceName:     p.GetMainInterfaceName(),
		MainInterfaceIPs:      []string{},
		OtherVPPInterfaces:    []string{},
		StaticDefaultGW:       ipString(p.GetStaticDefaultGW()),
		NatExternalTraffic:    p.NatExternalTraffic(),
		EnablePacketTrace:     p.EnablePacketTrace(),
		UseVmxnet3:            p.UseVmxnet3(),
		IsIPv6:                p.IsIPv6(),
		IPAMServiceCIDR:       ipNetString(ipam.ServiceCIDR),
		IPAMPodSubnetCIDR:     ipNetString(ipam.PodSubnetCIDR),
		IPAMNodeInterconnect:  ipNetString(ipam.NodeInterconnectCIDR),
		IPAMVxlanCIDR:         ipNetString(ipam.VxlanCIDR),
		IPAMSRv6PolicyBSIDNet: ipNetString(ipam.SRv6.ServicePolicyBSIDSubnetCIDR),
	}
	for _, ip := range p.GetMainInterfaceConfiguredIPs() {
		n.MainInterfaceIPs = append(n.MainInterfaceIPs, IPsWithNetworks{ip}.String())
	}
	for _, o := range p.GetOtherVPPInterfaces() {
		n.OtherVPPInterfaces = append(n.OtherVPPInterfaces, o.InterfaceName)
	}
	return &effectiveDump{Config: p.GetConfig(), IPAMConfig: p.GetIPAMConfigForJSON(), Node: n}
}

// TestGoldenExampleContivConf loads k8s/examples/contiv.conf through the real config
// loader (strict: an unknown key in the example fails) and compares the effective
// configuration with the golden file. Run with -update to rewrite it.
func TestGoldenExampleContivConf(t *testing.T) {
	path, err := filepath.Abs(exampleConf)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONTIV_CONFIG", path)
	loader := infra.NewConfigFile(nil, ConfigName)
	loader.Strict = true
	loader.Log = quietLog()
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: loader, NodeName: "worker1"}}
	if err := p.Init(); err != nil {
		t.Fatalf("Init with %s: %v", exampleConf, err)
	}
	got, err := json.MarshalIndent(dumpEffective(p), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')

	if *update {
		if err := os.WriteFile(goldenFile, got, 0o644); err != nil {
			t.Fatalf("update golden file: %v", err)
		}
		t.Logf("rewrote %s", goldenFile)
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("effective configuration of %s differs from %s (run with -update after checking):\n%s",
			exampleConf, goldenFile, got)
	}
}

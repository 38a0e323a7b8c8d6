package contivconf

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

func withDPDK(names ...string) func(*Deps) {
	return func(d *Deps) {
		d.DumpDPDKInterfaces = func() ([]string, error) { return names, nil }
	}
}

// withSTN installs a fake STN daemon answering info for every interface and recording
// the names it was asked about.
func withSTN(info *StolenInterfaceInfo, asked *[]string) func(*Deps) {
	return func(d *Deps) {
		d.GetSTNInfo = func(ifName string) (*StolenInterfaceInfo, error) {
			if asked != nil {
				*asked = append(*asked, ifName)
			}
			return info, nil
		}
	}
}

func ipNet(t *testing.T, s string) *net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("bad test CIDR %q: %v", s, err)
	}
	n.IP = ip
	return n
}

func TestDHCPResolution(t *testing.T) {
	tests := []struct {
		name       string
		globalDHCP bool
		nodeDHCP   bool
		nodeIP     string
		want       bool
	}{
		{"neither global nor node DHCP", false, false, "", false},
		{"global DHCP", true, false, "", true},
		{"node DHCP", false, true, "", true},
		{"both", true, true, "", true},
		{"global DHCP but node IP configured", true, false, "192.168.16.5/24", false},
		{"node DHCP but node IP configured", false, true, "192.168.16.5/24", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustInit(t, fmt.Sprintf(`
ipamConfig: {nodeInterconnectDHCP: %v, defaultGateway: 192.168.16.100}
nodeConfig:
- nodeName: worker1
  mainVPPInterface: {interfaceName: GigabitEthernet0/8/0, useDHCP: %v, ip: %q}
`, tt.globalDHCP, tt.nodeDHCP, tt.nodeIP))
			if got := p.UseDHCP(); got != tt.want {
				t.Fatalf("UseDHCP() = %v, want %v", got, tt.want)
			}
			if tt.want {
				if ips := p.GetMainInterfaceConfiguredIPs(); len(ips) != 0 {
					t.Errorf("configured IPs with DHCP = %s, want none", ips)
				}
				if gw := p.GetStaticDefaultGW(); gw != nil {
					t.Errorf("static GW with DHCP = %s, want none", gw)
				}
			} else if gw := p.GetStaticDefaultGW(); !gw.Equal(net.ParseIP("192.168.16.100")) {
				t.Errorf("static GW without DHCP = %s, want the global 192.168.16.100", gw)
			}
		})
	}
}

func TestMainInterfaceResolution(t *testing.T) {
	nodeWithOthers := `
nodeConfig:
- nodeName: worker1
  otherVPPInterfaces: [{interfaceName: GigabitEthernet0/8/0}, {interfaceName: GigabitEthernet0/9/0}]
`
	tests := []struct {
		name string
		conf string
		dpdk []string
		want string
	}{
		{"node config names it", "nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0}}]",
			[]string{"GigabitEthernet0/8/0"}, "eth0"},
		{"first DPDK interface", "", []string{"GigabitEthernet0/8/0", "GigabitEthernet0/9/0"}, "GigabitEthernet0/8/0"},
		{"first DPDK interface that is not an other interface", nodeWithOthers,
			[]string{"GigabitEthernet0/8/0", "GigabitEthernet0/9/0", "GigabitEthernet0/a/0"}, "GigabitEthernet0/a/0"},
		{"only other interfaces in VPP", nodeWithOthers, []string{"GigabitEthernet0/8/0", "GigabitEthernet0/9/0"}, ""},
		{"no DPDK interface", "", nil, ""},
		{"entry of another node ignored", "nodeConfig: [{nodeName: worker2, mainVPPInterface: {interfaceName: eth0}}]",
			[]string{"GigabitEthernet0/8/0"}, "GigabitEthernet0/8/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustInit(t, tt.conf, withDPDK(tt.dpdk...))
			if got := p.GetMainInterfaceName(); got != tt.want {
				t.Errorf("GetMainInterfaceName() = %q, want %q", got, tt.want)
			}
			if p.UseVmxnet3() {
				t.Error("UseVmxnet3() = true for a non-vmxnet3 interface")
			}
		})
	}
}

func TestNoDPDKHookMeansNoMainInterface(t *testing.T) {
	if got := mustInit(t, "").GetMainInterfaceName(); got != "" {
		t.Errorf("GetMainInterfaceName() = %q without a DPDK dump, want \"\"", got)
	}
}

func TestDPDKDumpFailureFailsTheFirstResync(t *testing.T) {
	_, err := initPlugin(t, "", func(d *Deps) {
		d.DumpDPDKInterfaces = func() ([]string, error) { return nil, errors.New("VPP not connected") }
	})
	if err == nil || !strings.Contains(err.Error(), "VPP not connected") {
		t.Errorf("first resync error = %v, want the DPDK dump error", err)
	}
}

func TestDPDKIsNotDumpedWhenNodeConfigNamesTheInterface(t *testing.T) {
	called := false
	mustInit(t, "nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: eth0}}]", func(d *Deps) {
		d.DumpDPDKInterfaces = func() ([]string, error) { called = true; return nil, nil }
	})
	if called {
		t.Error("DumpDPDKInterfaces was called although nodeConfig names the main interface")
	}
}

func TestConfiguredIPsAndOtherInterfacesComeFromThisNodesEntry(t *testing.T) {
	p := mustInit(t, `
nodeConfig:
- nodeName: worker2
  mainVPPInterface: {interfaceName: eth9, ip: 10.9.9.9/24}
- nodeName: worker1
  mainVPPInterface: {interfaceName: GigabitEthernet0/8/0, ip: 192.168.16.5/24}
  otherVPPInterfaces:
  - {interfaceName: GigabitEthernet0/9/0, ip: 10.10.0.5/24}
  - {interfaceName: GigabitEthernet0/a/0, useDHCP: true}
`)
	ips := p.GetMainInterfaceConfiguredIPs()
	if len(ips) != 1 || !ips[0].Address.Equal(net.ParseIP("192.168.16.5")) || ips[0].Network.String() != "192.168.16.0/24" {
		t.Errorf("configured IPs = %s, want 192.168.16.5 in 192.168.16.0/24", ips)
	}
	others := p.GetOtherVPPInterfaces()
	if len(others) != 2 {
		t.Fatalf("other interfaces = %d, want 2", len(others))
	}
	if o := others[0]; o.InterfaceName != "GigabitEthernet0/9/0" || o.UseDHCP || o.IPs.String() != "10.10.0.5/24" ||
		o.IPs[0].Network.String() != "10.10.0.0/24" {
		t.Errorf("other interface 0 = %+v (IPs %s)", o, o.IPs)
	}
	if o := others[1]; o.InterfaceName != "GigabitEthernet0/a/0" || !o.UseDHCP || len(o.IPs) != 0 {
		t.Errorf("other interface 1 = %+v (IPs %s)", o, o.IPs)
	}
}

func TestNoConfiguredIPsWithoutNodeEntry(t *testing.T) {
	p := mustInit(t, "nodeConfig: [{nodeName: worker2, mainVPPInterface: {interfaceName: eth9, ip: 10.9.9.9/24}}]")
	if ips := p.GetMainInterfaceConfiguredIPs(); len(ips) != 0 {
		t.Errorf("configured IPs = %s, want none (the entry is another node's)", ips)
	}
	if others := p.GetOtherVPPInterfaces(); len(others) != 0 {
		t.Errorf("other interfaces = %d, want none", len(others))
	}
}

func TestStaticDefaultGatewayPrecedence(t *testing.T) {
	stnWithGW := &StolenInterfaceInfo{
		IPAddresses: []*net.IPNet{ipNet(t, "10.20.0.5/24")},
		DefaultGW:   net.ParseIP("10.20.0.254"),
	}
	tests := []struct {
		name   string
		conf   string
		stn    *StolenInterfaceInfo
		wantGW string
	}{
		{"none configured", "", nil, "<nil>"},
		{"global only", "ipamConfig: {defaultGateway: 192.168.16.100}", nil, "192.168.16.100"},
		{"node wins over global",
			"ipamConfig: {defaultGateway: 192.168.16.100}\nnodeConfig: [{nodeName: worker1, gateway: 192.168.16.1}]",
			nil, "192.168.16.1"},
		{"other node's gateway ignored",
			"ipamConfig: {defaultGateway: 192.168.16.100}\nnodeConfig: [{nodeName: worker2, gateway: 192.168.16.1}]",
			nil, "192.168.16.100"},
		{"STN wins over node and global",
			"stealInterface: eth1\nipamConfig: {defaultGateway: 192.168.16.100}\nnodeConfig: [{nodeName: worker1, gateway: 192.168.16.1}]",
			stnWithGW, "10.20.0.254"},
		{"STN without addresses falls back to node",
			"stealInterface: eth1\nnodeConfig: [{nodeName: worker1, gateway: 192.168.16.1}]",
			&StolenInterfaceInfo{}, "192.168.16.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustInit(t, tt.conf, withSTN(tt.stn, nil))
			if got := p.GetStaticDefaultGW(); fmt.Sprint(got) != tt.wantGW {
				t.Errorf("GetStaticDefaultGW() = %v, want %s", got, tt.wantGW)
			}
		})
	}
}

func TestSTNModeIsRequestedByAnyOfItsKeys(t *testing.T) {
	tests := []struct {
		name      string
		conf      string
		wantSTN   bool
		wantAsked string
		wantKey   string
	}{
		{"not requested", "nodeConfig: [{nodeName: worker2, stealInterface: eth1}]", false, "", ""},
		{"stealFirstNIC", "stealFirstNIC: true", true, "", "stealFirstNIC"},
		{"global stealInterface", "stealInterface: eth1", true, "eth1", "stealInterface"},
		{"node stealInterface wins", "stealInterface: eth1\nnodeConfig: [{nodeName: worker1, stealInterface: ens3}]",
			true, "ens3", "nodeConfig[worker1].stealInterface"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			info := &StolenInterfaceInfo{IPAddresses: []*net.IPNet{ipNet(t, "10.20.0.5/24")}}
			p := mustInit(t, tt.conf, withSTN(info, &asked))
			if p.InSTNMode() != tt.wantSTN {
				t.Fatalf("InSTNMode() = %v, want %v", p.InSTNMode(), tt.wantSTN)
			}
			if !tt.wantSTN {
				if len(asked) != 0 {
					t.Errorf("STN daemon asked about %q outside STN mode", asked)
				}
				return
			}
			// Asked at Init and again at the first resync, always about the same NIC.
			if len(asked) == 0 {
				t.Errorf("STN daemon not asked, want it asked about %q", tt.wantAsked)
			}
			for _, a := range asked {
				if a != tt.wantAsked {
					t.Errorf("STN daemon asked about %q, want only %q", asked, tt.wantAsked)
					break
				}
			}

			// Without an STN daemon, Init fails and names the key asking for STN.
			_, err := initPlugin(t, tt.conf)
			if err == nil || !strings.Contains(err.Error(), tt.wantKey+" asks for STN mode") ||
				!strings.Contains(err.Error(), "no STN daemon is available") {
				t.Errorf("Init without STN daemon error = %v, want it to name %s", err, tt.wantKey)
			}
		})
	}
}

func TestSTNDaemonErrorFailsInit(t *testing.T) {
	_, err := initPlugin(t, "stealInterface: eth1", func(d *Deps) {
		d.GetSTNInfo = func(string) (*StolenInterfaceInfo, error) { return nil, errors.New("connection refused") }
	})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), `"eth1"`) {
		t.Errorf("Init error = %v, want the STN error with the interface name", err)
	}
	_, err = initPlugin(t, "stealInterface: eth1", withSTN(nil, nil))
	if err == nil || !strings.Contains(err.Error(), "returned nothing") {
		t.Errorf("Init error = %v, want a complaint about the empty STN answer", err)
	}
}

func TestSTNUsesTheStolenInterfaceAddresses(t *testing.T) {
	info := &StolenInterfaceInfo{
		IPAddresses:  []*net.IPNet{ipNet(t, "10.20.0.5/24"), ipNet(t, "10.30.0.5/16")},
		DefaultGW:    net.ParseIP("10.20.0.1"),
		PCIAddress:   "0000:00:08.0",
		KernelDriver: "e1000",
	}
	p := mustInit(t, `
stealInterface: eth1
nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: GigabitEthernet0/8/0, ip: 192.168.16.5/24}}]
`, withSTN(info, nil), withDPDK("GigabitEthernet0/9/0"))
	if got := p.GetMainInterfaceConfiguredIPs().String(); got != "10.20.0.5/24,10.30.0.5/16" {
		t.Errorf("configured IPs = %s, want the stolen NIC's 10.20.0.5/24,10.30.0.5/16", got)
	}
	if got := p.GetMainInterfaceConfiguredIPs()[1].Network.String(); got != "10.30.0.0/16" {
		t.Errorf("network of the second IP = %s, want 10.30.0.0/16", got)
	}
	if got := p.GetMainInterfaceName(); got != "GigabitEthernet0/8/0" {
		t.Errorf("main interface = %q, want the node config's name (non-vmxnet3 NIC)", got)
	}
	if got := p.GetStaticDefaultGW().String(); got != "10.20.0.1" {
		t.Errorf("GW = %s, want the STN default route's 10.20.0.1", got)
	}
}

func TestSTNWithDHCPHasNoStaticAddresses(t *testing.T) {
	info := &StolenInterfaceInfo{IPAddresses: []*net.IPNet{ipNet(t, "10.20.0.5/24")}, DefaultGW: net.ParseIP("10.20.0.1")}
	p := mustInit(t, "stealInterface: eth1\nipamConfig: {nodeInterconnectDHCP: true}", withSTN(info, nil))
	if ips := p.GetMainInterfaceConfiguredIPs(); len(ips) != 0 || p.GetStaticDefaultGW() != nil {
		t.Errorf("with DHCP: IPs %s, GW %v; want none", ips, p.GetStaticDefaultGW())
	}
}

func TestSTNFakesTheGatewayWhenTheNICHasNoDefaultRoute(t *testing.T) {
	tests := []struct {
		ip, want string
	}{
		{"10.20.0.5/24", "10.20.0.1"},
		{"10.20.0.1/24", "10.20.0.254"},
		{"10.20.0.1/30", "10.20.0.2"},
		{"2001:db8::5/64", "2001:db8::1"},
		{"2001:db8::1/64", "2001:db8::ffff:ffff:ffff:fffe"},
		{"10.20.0.5/32", "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			info := &StolenInterfaceInfo{IPAddresses: []*net.IPNet{ipNet(t, tt.ip)}}
			p := mustInit(t, "stealFirstNIC: true", withSTN(info, nil))
			if got := fmt.Sprint(p.GetStaticDefaultGW()); got != tt.want {
				t.Errorf("faked GW for %s = %s, want %s", tt.ip, got, tt.want)
			}
		})
	}
}

func TestSTNOfAVmxnet3NICNamesTheMainInterfaceFromItsPCIAddress(t *testing.T) {
	info := &StolenInterfaceInfo{
		IPAddresses:  []*net.IPNet{ipNet(t, "10.20.0.5/24")},
		PCIAddress:   "0000:0b:00.0",
		KernelDriver: "vmxnet3",
	}
	p := mustInit(t, "stealInterface: ens192\nvmxnet3RxRingSize: 1024\nvmxnet3TxRingSize: 512\n",
		withSTN(info, nil), withDPDK("GigabitEthernet0/8/0"))
	if got := p.GetMainInterfaceName(); got != "vmxnet3-0/b/0/0" {
		t.Errorf("main interface = %q, want vmxnet3-0/b/0/0", got)
	}
	if !p.UseVmxnet3() {
		t.Error("UseVmxnet3() = false for a vmxnet3 main interface")
	}
	cfg, err := p.GetVmxnet3Config()
	if err != nil {
		t.Fatalf("GetVmxnet3Config: %v", err)
	}
	if *cfg != (Vmxnet3Config{PCIAddress: "0000:0b:00.0", RxRingSize: 1024, TxRingSize: 512}) {
		t.Errorf("vmxnet3 config = %+v", *cfg)
	}
}

func TestVmxnet3RingSizesAreUsedOnlyWhenBothAreSet(t *testing.T) {
	conf := "nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: vmxnet3-0/13/1f/7}}]\nvmxnet3RxRingSize: 1024\n"
	p := mustInit(t, conf)
	cfg, err := p.GetVmxnet3Config()
	if err != nil {
		t.Fatalf("GetVmxnet3Config: %v", err)
	}
	if *cfg != (Vmxnet3Config{PCIAddress: "0000:13:1f.7"}) {
		t.Errorf("vmxnet3 config = %+v, want the PCI address and VPP-default ring sizes", *cfg)
	}
}

func TestGetVmxnet3ConfigFailsWithoutVmxnet3(t *testing.T) {
	p := mustInit(t, "", withDPDK("GigabitEthernet0/8/0"))
	if _, err := p.GetVmxnet3Config(); err == nil || !strings.Contains(err.Error(), "GigabitEthernet0/8/0") {
		t.Errorf("GetVmxnet3Config error = %v, want one naming the non-vmxnet3 interface", err)
	}
	p = mustInit(t, "nodeConfig: [{nodeName: worker1, mainVPPInterface: {interfaceName: vmxnet3-zz}}]")
	if _, err := p.GetVmxnet3Config(); err == nil {
		t.Error("GetVmxnet3Config accepted a malformed vmxnet3 name")
	}
}

func TestSTNOfAVmxnet3NICWithABadPCIAddressFailsInit(t *testing.T) {
	info := &StolenInterfaceInfo{PCIAddress: "0b:00.0", KernelDriver: "vmxnet3"}
	_, err := initPlugin(t, "stealFirstNIC: true", withSTN(info, nil))
	if err == nil || !strings.Contains(err.Error(), `"0b:00.0"`) {
		t.Errorf("Init error = %v, want one naming the bad PCI address", err)
	}
}

func TestVmxnet3NameAndPCIAddressConvertBothWays(t *testing.T) {
	for _, tt := range []struct{ pci, name string }{
		{"0000:0b:00.0", "vmxnet3-0/b/0/0"},
		{"0000:13:1f.7", "vmxnet3-0/13/1f/7"},
		{"00ab:ff:00.1", "vmxnet3-ab/ff/0/1"},
	} {
		name, err := vmxnet3NameFromPCI(tt.pci)
		if err != nil || name != tt.name {
			t.Errorf("vmxnet3NameFromPCI(%s) = %q, %v; want %q", tt.pci, name, err, tt.name)
		}
		pci, err := pciFromVmxnet3Name(tt.name)
		if err != nil || pci != tt.pci {
			t.Errorf("pciFromVmxnet3Name(%s) = %q, %v; want %q", tt.name, pci, err, tt.pci)
		}
	}
	for _, bad := range []string{"", "0000:0b:00", "0000:0b:20.0", "0000:0b:00.8", "0000:100:00.0", "x:0b:00.0"} {
		if _, err := vmxnet3NameFromPCI(bad); err == nil {
			t.Errorf("vmxnet3NameFromPCI(%q) accepted a bad PCI address", bad)
		}
	}
}

func TestNatExternalTrafficIsGlobalOrNode(t *testing.T) {
	tests := []struct {
		global, node, want bool
	}{
		{false, false, false},
		{true, false, true},
		{false, true, true},
		{true, true, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("global=%v,node=%v", tt.global, tt.node), func(t *testing.T) {
			p := mustInit(t, fmt.Sprintf("natExternalTraffic: %v\nnodeConfig: [{nodeName: worker1, natExternalTraffic: %v}]",
				tt.global, tt.node))
			if got := p.NatExternalTraffic(); got != tt.want {
				t.Errorf("NatExternalTraffic() = %v, want %v", got, tt.want)
			}
		})
	}
	// Another node's flag does not count.
	p := mustInit(t, "natExternalTraffic: false\nnodeConfig: [{nodeName: worker2, natExternalTraffic: true}]")
	if p.NatExternalTraffic() {
		t.Error("NatExternalTraffic() = true from another node's entry")
	}
}

func TestSectionGettersReflectTheFile(t *testing.T) {
	p := mustInit(t, `
useTAPInterfaces: false
tapv2RxRingSize: 512
interfaceRxMode: Adaptive
mtuSize: 1500
mainVRFID: 2
podVRFID: 3
useNoOverlay: true
routeServiceCIDRToVPP: true
scanIPNeighbors: false
ipNeighborScanInterval: 5
stealInterface: eth1
stnSocketFile: /run/stn.sock
stnVersion: 1
stnRecordFile: /run/contiv/stn.json
enablePacketTrace: true
`, withSTN(&StolenInterfaceInfo{}, nil))
	if got, want := *p.GetInterfaceConfig(), (InterfaceConfig{
		UseTAPInterfaces: false, TAPInterfaceVersion: 2, TAPv2RxRingSize: 512, InterfaceRxMode: "adaptive",
		TCPChecksumOffloadDisabled: true, MTUSize: 1500,
	}); got != want {
		t.Errorf("GetInterfaceConfig() = %+v, want %+v", got, want)
	}
	if got, want := *p.GetRoutingConfig(), (RoutingConfig{MainVRFID: 2, PodVRFID: 3, UseNoOverlay: true, RouteServiceCIDRToVPP: true}); got != want {
		t.Errorf("GetRoutingConfig() = %+v, want %+v", got, want)
	}
	if got, want := *p.GetIPNeighborScanConfig(), (IPNeighborScanConfig{ScanIPNeighbors: false, IPNeighborScanInterval: 5, IPNeighborStaleThreshold: 4}); got != want {
		t.Errorf("GetIPNeighborScanConfig() = %+v, want %+v", got, want)
	}
	if got, want := *p.GetSTNConfig(), (STNConfig{StealInterface: "eth1", STNSocketFile: "/run/stn.sock", STNVersion: 1, STNRecordFile: "/run/contiv/stn.json"}); got != want {
		t.Errorf("GetSTNConfig() = %+v, want %+v", got, want)
	}
	if !p.EnablePacketTrace() {
		t.Error("EnablePacketTrace() = false, want true")
	}
}

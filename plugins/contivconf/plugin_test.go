package contivconf

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// fakeLoader stands in for infra.ConfigFile: it parses data (strictly) when found.
type fakeLoader struct {
	data  string
	found bool
	err   error
	calls int
}

func (f *fakeLoader) LoadConfig(out any) (bool, error) {
	f.calls++
	if f.err != nil {
		return false, f.err
	}
	if !f.found {
		return false, nil
	}
	if err := infra.ParseConfig([]byte(f.data), out, true, nil); err != nil {
		return false, err
	}
	return true, nil
}

func yamlLoader(data string) *fakeLoader { return &fakeLoader{data: data, found: true} }

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// initPlugin starts a plugin for node "worker1" reading the given contiv.conf as the
// agent does: Init, then the node resolution of the first resync (which asks VPP).
func initPlugin(t *testing.T, conf string, deps ...func(*Deps)) (*Plugin, error) {
	t.Helper()
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: yamlLoader(conf), NodeName: "worker1"}}
	for _, d := range deps {
		d(&p.Deps)
	}
	if err := p.Init(); err != nil {
		return p, err
	}
	return p, p.ReloadNodeInterfaces()
}

// mustInit is initPlugin that fails the test on an Init error.
func mustInit(t *testing.T, conf string, deps ...func(*Deps)) *Plugin {
	t.Helper()
	p, err := initPlugin(t, conf, deps...)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	return p
}

func TestInitUsesTheFileTheLoaderFound(t *testing.T) {
	loader := yamlLoader("mtuSize: 1450\n")
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: loader}}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if loader.calls != 1 {
		t.Errorf("LoadConfig called %d times, want 1", loader.calls)
	}
	if got := p.GetInterfaceConfig().MTUSize; got != 1450 {
		t.Errorf("mtuSize = %d, want 1450 from the file", got)
	}
	if got := p.GetInterfaceConfig().UseTAPInterfaces; !got {
		t.Errorf("useTAPInterfaces = false, want the default true for a key the file leaves out")
	}
}

func TestInitUsesDefaultsWhenLoaderFindsNoFile(t *testing.T) {
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: &fakeLoader{found: false}}}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	assertConfigIsDefault(t, p.GetConfig())
}

func TestInitUsesDefaultsWithoutLoader(t *testing.T) {
	p := &Plugin{}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	assertConfigIsDefault(t, p.GetConfig())
	if p.Log == nil {
		t.Error("Init left Log nil; want a default logger")
	}
}

func TestInitFailsWhenLoaderFails(t *testing.T) {
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: &fakeLoader{err: errors.New("permission denied")}}}
	err := p.Init()
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Init error = %v, want the loader's error", err)
	}
	if p.GetIPAMConfig() != nil {
		t.Error("GetIPAMConfig after a failed Init is not nil")
	}
}

func TestInitReportsEveryInvalidValue(t *testing.T) {
	_, err := initPlugin(t, "mtuSize: 10\nstnVersion: 7\nipamConfig: {podSubnetCIDR: 10.1.0.0/33}\n")
	if err == nil {
		t.Fatal("Init accepted an invalid contiv.conf")
	}
	for _, want := range []string{
		`mtuSize: 10 is out of range`,
		`stnVersion: 7 is not supported`,
		`ipamConfig.podSubnetCIDR: "10.1.0.0/33" is not a valid CIDR`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Init error does not contain %q:\n%v", want, err)
		}
	}
	if n := len(FieldErrors(err)); n != 3 {
		t.Errorf("Init error carries %d FieldErrors, want 3", n)
	}
}

func TestInitWithRealConfigFileMissingUsesDefaults(t *testing.T) {
	t.Setenv(infra.ConfigDirEnv, t.TempDir())
	t.Setenv("CONTIV_CONFIG", "")
	cf := infra.NewConfigFile(nil, ConfigName)
	cf.Log = quietLog()
	p := &Plugin{Deps: Deps{Log: quietLog(), Config: cf}}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	assertConfigIsDefault(t, p.GetConfig())
}

func TestGettersBeforeInitAreSafe(t *testing.T) {
	p := &Plugin{}
	if p.InSTNMode() || p.UseDHCP() || p.EnablePacketTrace() || p.NatExternalTraffic() || p.UseVmxnet3() || p.IsIPv6() {
		t.Error("a boolean getter returned true before Init")
	}
	if p.GetMainInterfaceName() != "" || p.GetMainInterfaceConfiguredIPs() != nil ||
		p.GetOtherVPPInterfaces() != nil || p.GetStaticDefaultGW() != nil {
		t.Error("a node getter returned a value before Init")
	}
	if p.GetIPAMConfig() != nil || p.GetIPAMConfigForJSON() != nil || p.GetInterfaceConfig() != nil ||
		p.GetRoutingConfig() != nil || p.GetIPNeighborScanConfig() != nil || p.GetSTNConfig() != nil ||
		p.GetConfig() != nil {
		t.Error("a config getter returned a value before Init")
	}
	if _, err := p.GetVmxnet3Config(); err == nil {
		t.Error("GetVmxnet3Config before Init returned no error")
	}
	if err := p.ReloadNodeInterfaces(); err == nil {
		t.Error("ReloadNodeInterfaces before Init returned no error")
	}
}

func TestPluginNameAndClose(t *testing.T) {
	p := &Plugin{}
	if p.String() != "contivconf" {
		t.Errorf("String() = %q, want contivconf", p.String())
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestGettersReturnCopies(t *testing.T) {
	p := mustInit(t, `
ipamConfig: {defaultGateway: 192.168.16.100}
nodeConfig:
- nodeName: worker1
  mainVPPInterface: {interfaceName: GigabitEthernet0/8/0, ip: 192.168.16.5/24}
  otherVPPInterfaces:
  - {interfaceName: GigabitEthernet0/9/0, ip: 10.10.0.5/24}
`)
	ipam := p.GetIPAMConfig()
	ipam.PodSubnetCIDR.IP[0] = 99
	ipam.DefaultGateway[0] = 99
	ipam.SRv6.ServicePolicyBSIDSubnetCIDR.IP[0] = 99
	p.GetIPAMConfigForJSON().PodSubnetCIDR = "x"
	p.GetInterfaceConfig().MTUSize = 1
	p.GetRoutingConfig().PodVRFID = 7
	p.GetIPNeighborScanConfig().IPNeighborScanInterval = 9
	p.GetSTNConfig().StealInterface = "eth9"
	ips := p.GetMainInterfaceConfiguredIPs()
	ips[0].Address[0] = 99
	ips[0].Network.IP[0] = 99
	others := p.GetOtherVPPInterfaces()
	others[0].InterfaceName = "x"
	others[0].IPs[0].Address[0] = 99
	p.GetStaticDefaultGW()[0] = 99
	p.GetConfig().NodeConfig[0].OtherVPPInterfaces[0].InterfaceName = "y"

	if got := p.GetIPAMConfig().PodSubnetCIDR.String(); got != "10.1.0.0/16" {
		t.Errorf("pod subnet changed through a returned copy: %s", got)
	}
	if got := p.GetIPAMConfig().DefaultGateway.String(); got != "192.168.16.100" {
		t.Errorf("default gateway changed through a returned copy: %s", got)
	}
	if got := p.GetIPAMConfig().SRv6.ServicePolicyBSIDSubnetCIDR.String(); got != "5555::/16" {
		t.Errorf("SRv6 prefix changed through a returned copy: %s", got)
	}
	if got := p.GetIPAMConfigForJSON().PodSubnetCIDR; got != "10.1.0.0/16" {
		t.Errorf("JSON pod subnet changed through a returned copy: %s", got)
	}
	if p.GetInterfaceConfig().MTUSize != 0 || p.GetRoutingConfig().PodVRFID != 1 ||
		p.GetIPNeighborScanConfig().IPNeighborScanInterval != 1 || p.GetSTNConfig().StealInterface != "" {
		t.Error("a config section changed through a returned copy")
	}
	if got := p.GetMainInterfaceConfiguredIPs().String(); got != "192.168.16.5/24" {
		t.Errorf("main IPs changed through a returned copy: %s", got)
	}
	if got := p.GetMainInterfaceConfiguredIPs()[0].Network.String(); got != "192.168.16.0/24" {
		t.Errorf("main IP network changed through a returned copy: %s", got)
	}
	if o := p.GetOtherVPPInterfaces()[0]; o.InterfaceName != "GigabitEthernet0/9/0" || o.IPs.String() != "10.10.0.5/24" {
		t.Errorf("other interfaces changed through a returned copy: %+v", o)
	}
	if got := p.GetStaticDefaultGW().String(); got != "192.168.16.100" {
		t.Errorf("static GW changed through a returned copy: %s", got)
	}
	if got := p.GetConfig().NodeConfig[0].OtherVPPInterfaces[0].InterfaceName; got != "GigabitEthernet0/9/0" {
		t.Errorf("nodeConfig changed through a returned copy: %s", got)
	}
}

func TestGettersAreSafeDuringReload(t *testing.T) {
	dpdk := []string{"GigabitEthernet0/8/0"}
	p := mustInit(t, "", func(d *Deps) {
		d.DumpDPDKInterfaces = func() ([]string, error) { return dpdk, nil }
	})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = p.GetMainInterfaceName()
				_ = p.GetIPAMConfig()
				_ = p.GetMainInterfaceConfiguredIPs()
				_ = p.GetStaticDefaultGW()
				_ = p.UseDHCP()
				_ = p.IsIPv6()
			}
		}()
	}
	for i := 0; i < 100; i++ {
		if err := p.ReloadNodeInterfaces(); err != nil {
			t.Errorf("ReloadNodeInterfaces: %v", err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestReloadNodeInterfacesPicksUpNewDPDKInterfaces(t *testing.T) {
	var dpdk []string
	p := mustInit(t, "", func(d *Deps) {
		d.DumpDPDKInterfaces = func() ([]string, error) { return dpdk, nil }
	})
	if got := p.GetMainInterfaceName(); got != "" {
		t.Fatalf("main interface = %q with no DPDK NIC, want \"\" (loopback)", got)
	}
	dpdk = []string{"GigabitEthernet0/8/0"}
	if err := p.ReloadNodeInterfaces(); err != nil {
		t.Fatalf("ReloadNodeInterfaces: %v", err)
	}
	if got := p.GetMainInterfaceName(); got != "GigabitEthernet0/8/0" {
		t.Errorf("main interface after reload = %q, want GigabitEthernet0/8/0", got)
	}
}

func TestFailedReloadKeepsPreviousState(t *testing.T) {
	fail := false
	p := mustInit(t, "", func(d *Deps) {
		d.DumpDPDKInterfaces = func() ([]string, error) {
			if fail {
				return nil, errors.New("VPP is gone")
			}
			return []string{"GigabitEthernet0/8/0"}, nil
		}
	})
	fail = true
	err := p.ReloadNodeInterfaces()
	if err == nil || !strings.Contains(err.Error(), "VPP is gone") {
		t.Fatalf("ReloadNodeInterfaces error = %v, want the dump error", err)
	}
	if got := p.GetMainInterfaceName(); got != "GigabitEthernet0/8/0" {
		t.Errorf("main interface after a failed reload = %q, want the previous GigabitEthernet0/8/0", got)
	}
}

func TestIsIPv6FollowsThePodSubnet(t *testing.T) {
	if p := mustInit(t, ""); p.IsIPv6() {
		t.Error("IsIPv6 = true for the default IPv4 pod subnet")
	}
	if p := mustInit(t, ipv6Conf); !p.IsIPv6() {
		t.Error("IsIPv6 = false for an IPv6 pod subnet")
	}
	if p := mustInit(t, "ipamConfig: {contivCIDR: 'fd00::/64', serviceCIDR: 'fd01::/110'}\n"); !p.IsIPv6() {
		t.Error("IsIPv6 = false for an IPv6 contivCIDR")
	}
}

// mustCIDR parses a CIDR in tests.
func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("bad test CIDR %q: %v", s, err)
	}
	return n
}

func TestAcceptedButIneffectiveSettingsAreWarnedAbout(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	p := &Plugin{Deps: Deps{Log: log, Config: yamlLoader(`
crdNodeConfigurationDisabled: false
vmxnet3TxRingSize: 512
ipamConfig: {contivCIDR: 10.128.0.0/14, podSubnetCIDR: 10.5.0.0/16, vppHostSubnetOneNodePrefixLen: 26}
`)}}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	var warnings []string
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warnings = append(warnings, e.Message)
		}
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{
		"vmxnet3RxRingSize and vmxnet3TxRingSize take effect only when both are set",
		"ipamConfig.podSubnetCIDR (10.5.0.0/16) is ignored: ipamConfig.contivCIDR is set",
		"ipamConfig.vppHostSubnetOneNodePrefixLen (26) is ignored: ipamConfig.contivCIDR is set",
		"the NodeConfig CRD is not supported yet",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning containing %q; warnings:\n%s", want, all)
		}
	}
	if len(warnings) != 4 {
		t.Errorf("%d warnings, want 4:\n%s", len(warnings), all)
	}
}

func TestFailedResolutionLeavesThePluginUninitialised(t *testing.T) {
	p, err := initPlugin(t, "stealFirstNIC: true") // STN without a daemon
	if err == nil {
		t.Fatal("Init succeeded in STN mode without an STN daemon")
	}
	if p.GetIPAMConfig() != nil || p.GetConfig() != nil {
		t.Error("configuration visible after a failed Init")
	}
}

func TestInitDoesNotAskVPP(t *testing.T) {
	p := &Plugin{Deps: Deps{Log: quietLog(), NodeName: "worker1", DumpDPDKInterfaces: func() ([]string, error) {
		t.Error("VPP asked for its NICs at Init, before it may be connected")
		return nil, nil
	}}}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	if got := p.GetMainInterfaceName(); got != "" {
		t.Errorf("main interface before the first resync = %q", got)
	}
}

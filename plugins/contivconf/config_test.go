package contivconf

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// codeDefaults is the "Code default" column of contiv.conf (the contiv.conf table of docs/CONFIG.md), one row per key.
var codeDefaults = []struct {
	key  string
	want any
}{
	{"useTAPInterfaces", true},
	{"tapInterfaceVersion", 2},
	{"tapv2RxRingSize", 0},
	{"tapv2TxRingSize", 0},
	{"vmxnet3RxRingSize", 0},
	{"vmxnet3TxRingSize", 0},
	{"interfaceRxMode", ""},
	{"tcpChecksumOffloadDisabled", true},
	{"mtuSize", 0},
	{"mainVRFID", 0},
	{"podVRFID", 1},
	{"useNoOverlay", false},
	{"useSRv6Interconnect", false},
	{"routeServiceCIDRToVPP", false},
	{"scanIPNeighbors", true},
	{"ipNeighborScanInterval", 1},
	{"ipNeighborStaleThreshold", 4},
	{"stealFirstNIC", false},
	{"stealInterface", ""},
	{"stnSocketFile", ""},
	{"stnVersion", 0},
	{"stnRecordFile", "/var/lib/contiv/stn.json"},
	{"natExternalTraffic", true},
	{"enablePacketTrace", false},
	{"crdNodeConfigurationDisabled", true},
	{"serviceRenderer", "nat44"},
	{"ipamConfig.useExternalIPAM", false},
	{"ipamConfig.contivCIDR", ""},
	{"ipamConfig.serviceCIDR", "10.96.0.0/12"},
	{"ipamConfig.nodeInterconnectDHCP", false},
	{"ipamConfig.podSubnetCIDR", "10.1.0.0/16"},
	{"ipamConfig.podSubnetOneNodePrefixLen", 24},
	{"ipamConfig.vppHostSubnetCIDR", "172.30.0.0/16"},
	{"ipamConfig.vppHostSubnetOneNodePrefixLen", 24},
	{"ipamConfig.nodeInterconnectCIDR", ""},
	{"ipamConfig.vxlanCIDR", "192.168.30.0/24"},
	{"ipamConfig.defaultGateway", ""},
	{"ipamConfig.srv6.servicePolicyBSIDSubnetCIDR", "5555::/16"},
	{"ipamConfig.srv6.servicePodLocalSIDSubnetCIDR", "6666::/16"},
	{"ipamConfig.srv6.serviceHostLocalSIDSubnetCIDR", "6655::/16"},
	{"ipamConfig.srv6.serviceNodeLocalSIDSubnetCIDR", "7766::/16"},
	{"ipamConfig.srv6.nodeToNodePodLocalSIDSubnetCIDR", "7777::/16"},
	{"ipamConfig.srv6.nodeToNodeHostLocalSIDSubnetCIDR", "7799::/16"},
	{"ipamConfig.srv6.nodeToNodePodPolicySIDSubnetCIDR", "8888::/16"},
	{"ipamConfig.srv6.nodeToNodeHostPolicySIDSubnetCIDR", "9999::/16"},
}

// flattenJSON marshals v and returns its leaves keyed by dotted path.
func flattenJSON(t *testing.T, v any) map[string]string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	out := make(map[string]string)
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, child := range m {
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, child)
			}
			return
		}
		b, _ := json.Marshal(v)
		out[prefix] = string(b)
	}
	walk("", doc)
	return out
}

func assertConfigIsDefault(t *testing.T, cfg *Config) {
	t.Helper()
	if cfg == nil {
		t.Fatal("config is nil")
	}
	got := flattenJSON(t, cfg)
	seen := make(map[string]bool)
	for _, row := range codeDefaults {
		seen[row.key] = true
		want, _ := json.Marshal(row.want)
		if got[row.key] != string(want) {
			t.Errorf("%s defaults to %s, want %s", row.key, got[row.key], want)
		}
	}
	var untested []string
	for k := range got {
		if !seen[k] {
			untested = append(untested, k)
		}
	}
	sort.Strings(untested)
	if len(untested) > 0 {
		t.Errorf("keys without a code default in the test table: %v", untested)
	}
	if len(cfg.NodeConfig) != 0 {
		t.Errorf("nodeConfig defaults to %v, want empty", cfg.NodeConfig)
	}
}

func TestEmptyFileGivesEveryCodeDefault(t *testing.T) {
	for _, data := range []string{"", "# only a comment\n", "{}"} {
		cfg, err := Parse([]byte(data), true, quietLog())
		if err != nil {
			t.Fatalf("Parse(%q): %v", data, err)
		}
		assertConfigIsDefault(t, cfg)
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("the code defaults do not validate: %v", err)
	}
}

func TestFalseInFileTurnsOffTrueDefaults(t *testing.T) {
	for _, key := range []string{
		"useTAPInterfaces", "tcpChecksumOffloadDisabled", "scanIPNeighbors",
		"natExternalTraffic", "crdNodeConfigurationDisabled",
	} {
		t.Run(key, func(t *testing.T) {
			cfg, err := Parse([]byte(key+": false\n"), true, quietLog())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := flattenJSON(t, cfg)[key]; got != "false" {
				t.Errorf("%s = %s after \"%s: false\", want false", key, got, key)
			}
		})
	}
}

func TestPartialSectionsKeepDefaultsOfOtherKeys(t *testing.T) {
	cfg, err := Parse([]byte("ipamConfig:\n  podSubnetCIDR: 10.2.0.0/16\n  srv6:\n    servicePolicyBSIDSubnetCIDR: 5556::/16\n"), true, quietLog())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.IPAMConfig.PodSubnetCIDR != "10.2.0.0/16" {
		t.Errorf("podSubnetCIDR = %q, want the file's 10.2.0.0/16", cfg.IPAMConfig.PodSubnetCIDR)
	}
	if cfg.IPAMConfig.ServiceCIDR != DefaultServiceCIDR || cfg.IPAMConfig.VxlanCIDR != DefaultVxlanCIDR {
		t.Errorf("other ipamConfig keys lost their defaults: %+v", cfg.IPAMConfig)
	}
	if cfg.IPAMConfig.SRv6.ServicePolicyBSIDSubnetCIDR != "5556::/16" ||
		cfg.IPAMConfig.SRv6.NodeToNodeHostPolicySIDSubnetCIDR != DefaultNodeToNodeHostPolicySIDSubnetCIDR {
		t.Errorf("srv6 = %+v, want one key from the file and the rest defaults", cfg.IPAMConfig.SRv6)
	}
}

func TestKeyCaseIsForgiving(t *testing.T) {
	cfg, err := Parse([]byte("STNVersion: 2\nMTUSize: 1500\nipamconfig: {PodSubnetCIDR: 10.5.0.0/16}\n"), true, quietLog())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.STNVersion != 2 {
		t.Errorf("stnVersion = %d after \"STNVersion: 2\", want 2", cfg.STNVersion)
	}
	if cfg.MTUSize != 1500 {
		t.Errorf("mtuSize = %d after \"MTUSize: 1500\", want 1500", cfg.MTUSize)
	}
	if cfg.IPAMConfig.PodSubnetCIDR != "10.5.0.0/16" {
		t.Errorf("podSubnetCIDR = %q after differently cased keys, want 10.5.0.0/16", cfg.IPAMConfig.PodSubnetCIDR)
	}
}

func TestParseNormalisesEquivalentValues(t *testing.T) {
	cfg, err := Parse([]byte("tapInterfaceVersion: 0\ninterfaceRxMode: ' Polling '\n"), true, quietLog())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.TAPInterfaceVersion != 2 {
		t.Errorf("tapInterfaceVersion = %d after 0 in the file, want the default 2", cfg.TAPInterfaceVersion)
	}
	if cfg.InterfaceRxMode != "polling" {
		t.Errorf("interfaceRxMode = %q, want it lower-cased to \"polling\"", cfg.InterfaceRxMode)
	}
}

func TestParseAcceptsJSON(t *testing.T) {
	cfg, err := Parse([]byte(`{"mtuSize": 1450, "ipamConfig": {"nodeInterconnectCIDR": "192.168.16.0/24"}}`), true, quietLog())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.MTUSize != 1450 || cfg.IPAMConfig.NodeInterconnectCIDR != "192.168.16.0/24" {
		t.Errorf("JSON contiv.conf not applied: mtu %d, nodeInterconnectCIDR %q", cfg.MTUSize, cfg.IPAMConfig.NodeInterconnectCIDR)
	}
}

func TestUnknownKeyIsAnErrorInStrictModeAndAWarningOtherwise(t *testing.T) {
	data := []byte("mtuSise: 1450\nipamConfig: {podSubnetCIRD: 10.1.0.0/16}\n")
	_, err := Parse(data, true, quietLog())
	if err == nil || !strings.Contains(err.Error(), "mtuSise") || !strings.Contains(err.Error(), "ipamConfig.podSubnetCIRD") {
		t.Errorf("strict Parse error = %v, want both unknown keys named", err)
	}

	log, hook := logtest.NewNullLogger()
	if _, err := Parse(data, false, log); err != nil {
		t.Fatalf("non-strict Parse: %v", err)
	}
	var warned []string
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warned = append(warned, e.Data["key"].(string))
		}
	}
	sort.Strings(warned)
	if strings.Join(warned, ",") != "ipamConfig.podSubnetCIRD,mtuSise" {
		t.Errorf("warned about %v, want the two unknown keys", warned)
	}
}

func TestValueOfWrongTypeIsAnErrorNamingTheKey(t *testing.T) {
	for _, data := range []string{"mtuSize: -1\n", "stnVersion: 300\n", "useTAPInterfaces: maybe\n", "ipamConfig: [1]\n"} {
		_, err := Parse([]byte(data), true, quietLog())
		if err == nil {
			t.Errorf("Parse(%q) accepted a value of the wrong type", data)
			continue
		}
		key := strings.SplitN(data, ":", 2)[0]
		if !strings.Contains(err.Error(), key) {
			t.Errorf("Parse(%q) error %q does not name %s", data, err, key)
		}
	}
}

func TestNotYAMLIsAnError(t *testing.T) {
	if _, err := Parse([]byte("mtuSize: [1450\n"), true, quietLog()); err == nil {
		t.Error("Parse accepted broken YAML")
	}
}

func TestNodeConfigEntryIsParsed(t *testing.T) {
	cfg, err := Parse([]byte(`
nodeConfig:
- nodeName: worker1
  mainVPPInterface: {interfaceName: GigabitEthernet0/8/0, ip: 192.168.16.5/24, useDHCP: false}
  otherVPPInterfaces:
  - {interfaceName: GigabitEthernet0/9/0, useDHCP: true}
  stealInterface: eth1
  gateway: 192.168.16.100
  natExternalTraffic: true
`), true, quietLog())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := NodeConfig{NodeName: "worker1", NodeConfigSpec: NodeConfigSpec{
		MainVPPInterface:   InterfaceWithIP{InterfaceName: "GigabitEthernet0/8/0", IP: "192.168.16.5/24"},
		OtherVPPInterfaces: []InterfaceWithIP{{InterfaceName: "GigabitEthernet0/9/0", UseDHCP: true}},
		StealInterface:     "eth1",
		Gateway:            "192.168.16.100",
		NatExternalTraffic: true,
	}}
	got, _ := json.Marshal(cfg.NodeConfig)
	exp, _ := json.Marshal([]NodeConfig{want})
	if string(got) != string(exp) {
		t.Errorf("nodeConfig = %s, want %s", got, exp)
	}
}

// ipv6Conf is a consistent IPv6 address plan.
const ipv6Conf = `
ipamConfig:
  podSubnetCIDR: 2001::/48
  podSubnetOneNodePrefixLen: 64
  vppHostSubnetCIDR: 2002::/64
  vppHostSubnetOneNodePrefixLen: 112
  serviceCIDR: 2096::/110
  nodeInterconnectCIDR: e10:f00d::/90
  vxlanCIDR: 2005::/112
`

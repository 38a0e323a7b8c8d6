package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	cniversion "github.com/containernetworking/cni/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/dbwatcher"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
	svcconfig "github.com/contiv-vpp/contiv-vpp/plugins/service/config"
)

// configLoaders reads every file of the manifests' ConfigMaps ("<ConfigMap>/<key>") the
// way the program that uses it does, in strict mode (unknown keys fail), and validates it.
var configLoaders = map[string]func(data []byte) (any, error){
	"contiv-agent-cfg/contiv.conf":          loadContivConf,
	"contiv-agent-cfg/controller.conf":      loadControllerConf,
	"contiv-agent-cfg/service.conf":         loadServiceConf,
	"vpp-agent-cfg/govpp.conf":              loadGoVPPConf,
	"vpp-agent-cfg/logs.conf":               loadLogsConf,
	"vpp-agent-cfg/http.conf":               loadHTTPConf,
	"vpp-agent-cfg/bolt.conf":               loadBoltConf,
	"vpp-agent-cfg/kvscheduler.conf":        loadKVSchedulerConf,
	"contiv-etcd-cfg/etcd.conf":             func(data []byte) (any, error) { return loadEtcdConfFor(data, "192.0.2.10") },
	"contiv-ksr-http-cfg/http.conf":         loadHTTPConf,
	"contiv-cni-cfg/10-contiv-vpp.conflist": loadConflist,
}

func loadContivConf(data []byte) (any, error) { return contivconf.Parse(data, true, nil) }

func loadControllerConf(data []byte) (any, error) {
	cfg := controller.DefaultConfig()
	if err := infra.ParseConfig(data, &cfg, true, nil); err != nil {
		return nil, err
	}
	return &cfg, cfg.Validate()
}

func loadServiceConf(data []byte) (any, error) {
	cfg := svcconfig.DefaultConfig()
	if err := infra.ParseConfig(data, cfg, true, nil); err != nil {
		return nil, err
	}
	return cfg, cfg.Validate()
}

func loadGoVPPConf(data []byte) (any, error) {
	cfg := govppmux.DefaultConfig()
	if err := infra.ParseConfig(data, &cfg, true, nil); err != nil {
		return nil, err
	}
	return &cfg, cfg.Validate()
}

// loadLogsConf reads logs.conf as contiv-agent does: into infra.LogsConfig, applied to a
// log registry (which rejects unknown levels).
func loadLogsConf(data []byte) (any, error) {
	var cfg infra.LogsConfig
	if err := infra.ParseConfig(data, &cfg, true, nil); err != nil {
		return nil, err
	}
	reg, err := infra.NewLogRegistry(io.Discard, infra.LogFormatText)
	if err != nil {
		return nil, err
	}
	return &cfg, reg.Apply(cfg)
}

// loadHTTPConf reads an http.conf into rest.Config; the endpoint must be host:port.
func loadHTTPConf(data []byte) (any, error) {
	cfg := rest.Config{Endpoint: rest.DefaultEndpoint, ReadHeaderTimeout: infra.Duration(10 * time.Second)}
	if err := infra.ParseConfig(data, &cfg, true, nil); err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", cfg.Endpoint, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || (host != "" && net.ParseIP(host) == nil) {
		return nil, fmt.Errorf("endpoint %q: want <IP>:<port>", cfg.Endpoint)
	}
	return &cfg, nil
}

func loadBoltConf(data []byte) (any, error) {
	cfg := dbwatcher.DefaultBoltConfig()
	if err := infra.ParseConfig(data, &cfg, true, nil); err != nil {
		return nil, err
	}
	return &cfg, cfg.Validate()
}

func loadKVSchedulerConf(data []byte) (any, error) {
	cfg := kvscheduler.DefaultConfig()
	if err := infra.ParseConfig(data, &cfg, true, nil); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// loadEtcdConfFor renders etcd.conf for a node as the init containers do (__HOST_IP__,
// with an etcd NodePort, becomes the node IP, bracketed when IPv6) and reads it into
// dbwatcher.EtcdConfig.
func loadEtcdConfFor(data []byte, hostIP string) (*dbwatcher.EtcdConfig, error) {
	host := hostIP
	if strings.Contains(hostIP, ":") {
		host = "[" + hostIP + "]"
	}
	var cfg dbwatcher.EtcdConfig
	if err := infra.ParseConfig(bytes.ReplaceAll(data, []byte("__HOST_IP__"), []byte(host)), &cfg, true, nil); err != nil {
		return nil, err
	}
	return &cfg, cfg.Validate()
}

// cniConfig is the conflist, checked plugin by plugin.
type cniConfig struct {
	List      *libcni.NetworkConfigList
	ContivCNI contivCNIConf
	Portmap   portmapConf
}

// contivCNIConf are the keys contiv-cni reads (docs/dev-guide/UPSTREAM.md §1), besides the CNI standard ones
// the runtime adds.
type contivCNIConf struct {
	Type          string         `json:"type"`
	GRPCServer    string         `json:"grpcServer"`
	LogFile       string         `json:"logFile,omitempty"`
	EtcdEndpoints string         `json:"etcdEndpoints,omitempty"`
	IPAM          map[string]any `json:"ipam,omitempty"`
}

// portmapConf are the keys of portmap's configuration (containernetworking/plugins v1.7.1).
type portmapConf struct {
	Type                 string          `json:"type"`
	Capabilities         map[string]bool `json:"capabilities,omitempty"`
	SNAT                 *bool           `json:"snat,omitempty"`
	MarkMasqBit          *int            `json:"markMasqBit,omitempty"`
	ExternalSetMarkChain *string         `json:"externalSetMarkChain,omitempty"`
	ConditionsV4         *[]string       `json:"conditionsV4,omitempty"`
	ConditionsV6         *[]string       `json:"conditionsV6,omitempty"`
	Backend              *string         `json:"backend,omitempty"`
}

func (c *cniConfig) pluginTypes() []string {
	var types []string
	for _, p := range c.List.Plugins {
		types = append(types, p.Network.Type)
	}
	return types
}

func decodeStrictJSON(data []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// loadConflist reads the conflist with libcni, as container runtimes do, and each plugin
// with only the keys that plugin knows. contiv-cni must come first: it rejects a previous
// result.
func loadConflist(data []byte) (any, error) {
	var top struct {
		Name         string            `json:"name"`
		CNIVersion   string            `json:"cniVersion"`
		DisableCheck bool              `json:"disableCheck,omitempty"`
		DisableGC    bool              `json:"disableGC,omitempty"`
		Plugins      []json.RawMessage `json:"plugins"`
	}
	if err := decodeStrictJSON(data, &top); err != nil {
		return nil, fmt.Errorf("conflist: %w", err)
	}
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return nil, err
	}
	cfg := &cniConfig{List: list}
	if got := cfg.pluginTypes(); !reflect.DeepEqual(got, []string{"contiv-cni", "portmap"}) {
		return nil, fmt.Errorf("plugin chain %v, want [contiv-cni portmap]", got)
	}
	if err := decodeStrictJSON(top.Plugins[0], &cfg.ContivCNI); err != nil {
		return nil, fmt.Errorf("contiv-cni: %w", err)
	}
	if err := decodeStrictJSON(top.Plugins[1], &cfg.Portmap); err != nil {
		return nil, fmt.Errorf("portmap: %w", err)
	}
	if !path.IsAbs(cfg.ContivCNI.GRPCServer) {
		return nil, fmt.Errorf("contiv-cni: grpcServer %q is not the path of a unix socket", cfg.ContivCNI.GRPCServer)
	}
	return cfg, nil
}

// configMapFiles returns "<ConfigMap>/<key>" of every file of the manifest, sorted.
func configMapFiles(m *manifest) []string {
	var files []string
	for name, cm := range m.configMaps {
		for key := range cm.Data {
			files = append(files, name+"/"+key)
		}
		for key := range cm.BinaryData {
			files = append(files, name+"/"+key)
		}
	}
	sort.Strings(files)
	return files
}

// checkConfigMapFilesLoad loads every file of the manifest's ConfigMaps with its loader.
func checkConfigMapFilesLoad(t *testing.T, m *manifest) {
	t.Helper()
	for _, file := range configMapFiles(m) {
		load, ok := configLoaders[file]
		if !ok {
			t.Errorf("%s: no loader checks this file; add one to configLoaders", file)
			continue
		}
		name, key, _ := strings.Cut(file, "/")
		if _, err := load([]byte(m.configMaps[name].Data[key])); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}

func TestConfigMapFilesLoadStrictly(t *testing.T) {
	m := readManifest(t)
	checkConfigMapFilesLoad(t, m)
	files := map[string]bool{}
	for _, f := range configMapFiles(m) {
		files[f] = true
	}
	for file := range configLoaders {
		if !files[file] {
			t.Errorf("configLoaders has %s, which the manifests do not have", file)
		}
	}
}

// TestConfigLoadersRejectUnknownKeys makes sure the checks above would catch a misspelt
// key in every file.
func TestConfigLoadersRejectUnknownKeys(t *testing.T) {
	m := readManifest(t)
	for _, file := range configMapFiles(m) {
		load, ok := configLoaders[file]
		if !ok {
			continue
		}
		name, key, _ := strings.Cut(file, "/")
		data := m.configMaps[name].Data[key]
		var bad string
		if strings.HasSuffix(key, ".conflist") {
			bad = strings.Replace(data, `"grpcServer"`, `"grpcServr": "x", "grpcServer"`, 1)
		} else {
			bad = data + "\nnoSuchKey: 1\n"
		}
		if bad == data {
			t.Fatalf("%s: could not add an unknown key", file)
		}
		if _, err := load([]byte(bad)); err == nil {
			t.Errorf("%s: an unknown key is accepted", file)
		}
	}
}

// yamlKeys returns the top-level keys of a YAML file.
func yamlKeys(t *testing.T, data string) []string {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(data), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonKeys returns the JSON names of the fields of a struct type.
func jsonKeys(v any) []string {
	var keys []string
	typ := reflect.TypeOf(v)
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

func mustLoad[T any](t *testing.T, m *manifest, file string) T {
	t.Helper()
	name, key, _ := strings.Cut(file, "/")
	cm, ok := m.configMaps[name]
	if !ok {
		t.Fatalf("no ConfigMap %s", name)
	}
	v, err := configLoaders[file]([]byte(cm.Data[key]))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v.(T)
}

// TestConfigMapValues pins the values the deployment ships: upstream's ConfigMap values
// where upstream had them, the code defaults otherwise.
func TestConfigMapValues(t *testing.T) {
	m := readManifest(t)

	t.Run("contiv.conf is k8s/examples/contiv.conf", func(t *testing.T) {
		example, err := os.ReadFile("examples/contiv.conf")
		if err != nil {
			t.Fatal(err)
		}
		want, err := contivconf.Parse(example, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustLoad[*contivconf.Config](t, m, "contiv-agent-cfg/contiv.conf"); !reflect.DeepEqual(got, want) {
			t.Errorf("contiv.conf of the ConfigMap:\n%+v\nexamples/contiv.conf:\n%+v", got, want)
		}
	})

	t.Run("controller.conf has every key at its default", func(t *testing.T) {
		got := mustLoad[*controller.Config](t, m, "contiv-agent-cfg/controller.conf")
		if want := controller.DefaultConfig(); *got != want {
			t.Errorf("controller.conf:\n got %+v\nwant %+v", *got, want)
		}
		if got.PeriodicHealingInterval != controller.Duration(30*time.Second) {
			t.Errorf("periodicHealingInterval %v, want 30s", time.Duration(got.PeriodicHealingInterval))
		}
		keys := yamlKeys(t, m.configMaps["contiv-agent-cfg"].Data["controller.conf"])
		if want := jsonKeys(controller.Config{}); !reflect.DeepEqual(keys, want) {
			t.Errorf("controller.conf keys %v, want every key %v", keys, want)
		}
	})

	t.Run("service.conf", func(t *testing.T) {
		got := mustLoad[*svcconfig.Config](t, m, "contiv-agent-cfg/service.conf")
		want := svcconfig.Config{
			CleanupIdleNATSessions:      true,
			TCPNATSessionTimeout:        180,
			OtherNATSessionTimeout:      5,
			ServiceLocalEndpointWeight:  1,
			DisableNATVirtualReassembly: false,
			NodePortRange:               svcconfig.DefaultNodePortRange,
			NodePortsOnThisNodeOnly:     false,
			ServiceLoadBalancing:        svcconfig.LoadBalancingDefault,
		}
		if *got != want {
			t.Errorf("service.conf:\n got %+v\nwant %+v", *got, want)
		}
		keys := yamlKeys(t, m.configMaps["contiv-agent-cfg"].Data["service.conf"])
		if want := jsonKeys(svcconfig.Config{}); !reflect.DeepEqual(keys, want) {
			t.Errorf("service.conf keys %v, want every key %v", keys, want)
		}
	})

	t.Run("govpp.conf", func(t *testing.T) {
		got := mustLoad[*govppmux.Config](t, m, "vpp-agent-cfg/govpp.conf")
		if got.BinAPISocketPath != "/run/vpp/api.sock" ||
			got.HealthCheckProbeInterval != govppmux.Duration(3*time.Second) ||
			got.HealthCheckReplyTimeout != govppmux.Duration(500*time.Millisecond) ||
			got.HealthCheckThreshold != 3 || got.ReplyTimeout != govppmux.Duration(3*time.Second) {
			t.Errorf("govpp.conf: %+v", *got)
		}
	})

	t.Run("logs.conf", func(t *testing.T) {
		if got := mustLoad[*infra.LogsConfig](t, m, "vpp-agent-cfg/logs.conf"); got.DefaultLevel != "info" || len(got.Loggers) != 0 {
			t.Errorf("logs.conf: %+v", *got)
		}
	})

	t.Run("http.conf", func(t *testing.T) {
		if got := mustLoad[*rest.Config](t, m, "vpp-agent-cfg/http.conf"); got.Endpoint != "0.0.0.0:9999" {
			t.Errorf("agent http.conf endpoint %s", got.Endpoint)
		}
		if got := mustLoad[*rest.Config](t, m, "contiv-ksr-http-cfg/http.conf"); got.Endpoint != "0.0.0.0:9191" {
			t.Errorf("KSR http.conf endpoint %s", got.Endpoint)
		}
	})

	t.Run("bolt.conf", func(t *testing.T) {
		got := mustLoad[*dbwatcher.BoltConfig](t, m, "vpp-agent-cfg/bolt.conf")
		if got.DBPath != "/var/bolt/bolt.db" || got.FileMode != 0o660 || got.LockTimeout != 0 {
			t.Errorf("bolt.conf: %+v", *got)
		}
	})

	t.Run("kvscheduler.conf", func(t *testing.T) {
		if got := mustLoad[*kvscheduler.Config](t, m, "vpp-agent-cfg/kvscheduler.conf"); *got != kvscheduler.DefaultConfig() {
			t.Errorf("kvscheduler.conf: %+v, want the defaults %+v", *got, kvscheduler.DefaultConfig())
		}
	})

	t.Run("etcd.conf", func(t *testing.T) {
		data := []byte(m.configMaps["contiv-etcd-cfg"].Data["etcd.conf"])
		for ip, want := range map[string]string{"192.0.2.10": "10.96.0.12:12379", "2001:db8::10": "10.96.0.12:12379"} {
			got, err := loadEtcdConfFor(data, ip)
			if err != nil {
				t.Fatalf("node IP %s: %v", ip, err)
			}
			if !reflect.DeepEqual(got.Endpoints, []string{want}) || got.DialTimeout != dbwatcher.Duration(10*time.Second) ||
				!got.InsecureTransport || !got.AllowDelayedStart {
				t.Errorf("etcd.conf on node %s: %+v", ip, *got)
			}
		}
	})

	t.Run("conflist", func(t *testing.T) {
		got := mustLoad[*cniConfig](t, m, "contiv-cni-cfg/10-contiv-vpp.conflist")
		if got.List.Name != "k8s-pod-network" || got.List.CNIVersion != cniversion.Current() {
			t.Errorf("conflist name %q cniVersion %q, want k8s-pod-network %s", got.List.Name, got.List.CNIVersion, cniversion.Current())
		}
		if got.ContivCNI.LogFile != "/var/run/contiv/cni.log" {
			t.Errorf("contiv-cni logFile %q", got.ContivCNI.LogFile)
		}
		if !got.Portmap.Capabilities["portMappings"] || got.Portmap.ExternalSetMarkChain == nil ||
			*got.Portmap.ExternalSetMarkChain != "KUBE-MARK-MASQ" {
			t.Errorf("portmap: %+v", got.Portmap)
		}
	})
}

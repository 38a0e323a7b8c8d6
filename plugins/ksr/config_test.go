package ksr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdconf"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	restplugin "github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

func TestEtcdConfigReadsUpstreamFile(t *testing.T) {
	// The contiv-etcd-withcompact-cfg ConfigMap of upstream, as contiv-ksr gets it.
	data := `
insecure-transport: true
dial-timeout: 10000000000
allow-delayed-start: true
reconnect-interval: "2s"
auto-compact: "10m"
endpoints:
  - "192.168.16.1:32379"
`
	var cfg EtcdConfig
	if err := infra.ParseConfig([]byte(data), &cfg, true, nil); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	got := cfg.withDefaults()
	if got.Endpoints[0] != "192.168.16.1:32379" || time.Duration(got.DialTimeout) != 10*time.Second ||
		time.Duration(got.ReconnectInterval) != 2*time.Second || time.Duration(got.AutoCompact) != 10*time.Minute ||
		time.Duration(got.OperationTimeout) != DefaultOperationTimeout || !got.InsecureTransport {
		t.Errorf("config = %+v", got)
	}
	if tlsCfg, err := got.TLSConfig(got.Endpoints); err != nil || tlsCfg != nil {
		t.Errorf("TLS = %v, %v; want none", tlsCfg, err)
	}
}

func TestEtcdConfigDefaultsAndErrors(t *testing.T) {
	cfg, err := loadEtcdConfig(nil)
	if err != nil || cfg.Endpoints[0] != DefaultEtcdEndpoint || time.Duration(cfg.ReconnectInterval) != DefaultReconnectInterval {
		t.Errorf("defaults = %+v, %v", cfg, err)
	}
	for _, tc := range []struct {
		cfg  EtcdConfig
		want string
	}{
		{EtcdConfig{Endpoints: []string{" "}}, "endpoints[0]: empty"},
		{EtcdConfig{Endpoints: []string{"https://e:1"}, Security: etcdconf.Security{InsecureTransport: true}}, "https endpoint but insecure-transport"},
		{EtcdConfig{DialTimeout: -1}, "dial-timeout"},
		{EtcdConfig{Security: etcdconf.Security{InsecureTransport: true, CAFile: "ca.pem"}}, "ca-file: set although insecure-transport is true"},
		{EtcdConfig{Security: etcdconf.Security{CertFile: "c.pem"}}, "cert-file and key-file"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	bad := EtcdConfig{Security: etcdconf.Security{CAFile: filepath.Join(t.TempDir(), "missing.pem")}}
	if _, err := bad.TLSConfig(bad.Endpoints); err == nil || !strings.Contains(err.Error(), "ca-file") {
		t.Errorf("missing CA file: %v", err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad = EtcdConfig{Security: etcdconf.Security{CAFile: notPEM}}
	if _, err := bad.TLSConfig(bad.Endpoints); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("bad CA file: %v", err)
	}
	var d Duration
	if err := d.UnmarshalJSON([]byte(`"soon"`)); err == nil {
		t.Error("bad duration accepted")
	}
}

func TestHTTPConfigDefaultsTo9191(t *testing.T) {
	cfg := restplugin.Config{Endpoint: restplugin.DefaultEndpoint}
	if found, err := HTTPConfig(nil).LoadConfig(&cfg); err != nil || found || cfg.Endpoint != "0.0.0.0:9191" {
		t.Errorf("no file: %+v found=%v err=%v", cfg, found, err)
	}
	cfg = restplugin.Config{Endpoint: restplugin.DefaultEndpoint}
	file := infra.StaticConfig{"endpoint": "127.0.0.1:19191"}
	if found, err := HTTPConfig(file).LoadConfig(&cfg); err != nil || !found || cfg.Endpoint != "127.0.0.1:19191" {
		t.Errorf("file: %+v found=%v err=%v", cfg, found, err)
	}
}

func TestInitRefusesBadSettings(t *testing.T) {
	p := NewPlugin(Deps{ElectionTTL: 500 * time.Millisecond})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Errorf("short TTL: %v", err)
	}
	p = NewPlugin(Deps{EtcdConfig: infra.StaticConfig{"dial-timeout": "-1s"}})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), "dial-timeout") {
		t.Errorf("bad etcd.conf: %v", err)
	}
	p = NewPlugin(Deps{KubeConfig: filepath.Join(t.TempDir(), "missing.kubeconfig")})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after failed Init: %v", err)
	}
}

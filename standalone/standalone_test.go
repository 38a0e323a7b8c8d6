package standalone

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

type etcdConf struct {
	Endpoints []string `json:"endpoints"`
}

func TestPluginServesEtcdAndDescribesIt(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	p := NewPlugin(Deps{Log: log, Dir: t.TempDir(), EtcdAddr: "127.0.0.1:0"})
	var cfg etcdConf
	if _, err := p.EtcdConfig().LoadConfig(&cfg); err == nil {
		t.Fatal("etcd config available before Init")
	}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if found, err := p.EtcdConfig().LoadConfig(&cfg); err != nil || !found {
		t.Fatalf("found=%v err=%v", found, err)
	}
	if len(cfg.Endpoints) != 1 || cfg.Endpoints[0] != p.etcd.Endpoint() {
		t.Errorf("endpoints = %v, want %s", cfg.Endpoints, p.etcd.Endpoint())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestPluginWritesTheOperatorToolConfigs(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	dir := t.TempDir()
	p := NewPlugin(Deps{Log: log, Dir: dir, EtcdAddr: "127.0.0.1:0", NoVPP: true,
		NodeName: "k8s-master", AgentURL: func() string { return "http://127.0.0.1:19999" }})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	load := func(name string, out any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := infra.ParseConfig(data, out, true, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var etcd etcdConf
	load(EtcdConfFile, &etcd)
	if len(etcd.Endpoints) != 1 || etcd.Endpoints[0] != p.etcd.Endpoint() {
		t.Errorf("etcd.conf endpoints = %v, want %s", etcd.Endpoints, p.etcd.Endpoint())
	}
	var netctl struct {
		EtcdConfig string            `json:"etcd-config"`
		Agents     map[string]string `json:"agents"`
	}
	load(NetctlConfFile, &netctl)
	if netctl.EtcdConfig != filepath.Join(dir, EtcdConfFile) || netctl.Agents["k8s-master"] != "http://127.0.0.1:19999" {
		t.Errorf("netctl.conf = %+v", netctl)
	}
}

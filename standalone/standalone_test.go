package standalone

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"
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

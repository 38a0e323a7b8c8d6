// Package standalone runs what a Kubernetes cluster would provide to the agent, inside the
// agent process, so that `contiv-agent -standalone` (what `make run` starts) exercises the
// production code path on one machine: an embedded etcd on loopback that the database
// watcher and nodesync use exactly as they would use the cluster's etcd.
//
// It does not simulate anything the agent itself does; nothing in the production path
// knows it runs standalone. Loading an example cluster into etcd and the VPP simulator
// come with the standalone-demo work.
package standalone

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdembed"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger.
	Log logrus.FieldLogger
	// Dir holds the embedded etcd data (kept across runs, so node IDs survive).
	Dir string
	// EtcdAddr is the loopback host:port of the embedded etcd (port 0: any free port).
	EtcdAddr string
}

// Plugin starts and stops the standalone environment.
type Plugin struct {
	Deps
	etcd *etcdembed.Server
}

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "standalone" }

// Init starts the embedded etcd; it must run before the plugins that connect to it.
func (p *Plugin) Init() error {
	if p.Log == nil {
		p.Log = logrus.StandardLogger()
	}
	dir := filepath.Join(p.Dir, "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("standalone data directory: %w", err)
	}
	srv, err := etcdembed.Start(etcdembed.Options{Dir: dir, ClientAddr: p.EtcdAddr})
	if err != nil {
		return err
	}
	p.etcd = srv
	p.Log.WithField("endpoint", srv.Endpoint()).WithField("dir", dir).Info("embedded etcd serving")
	return nil
}

// Close stops the embedded etcd.
func (p *Plugin) Close() error {
	if p.etcd == nil {
		return nil
	}
	err := p.etcd.Close()
	p.etcd = nil
	return err
}

// EtcdConfig is the etcd.conf of the embedded etcd, for the database watcher. It is
// evaluated when the watcher loads it, i.e. after this plugin's Init.
func (p *Plugin) EtcdConfig() infra.ConfigLoader {
	return etcdConfigLoader{p}
}

type etcdConfigLoader struct{ p *Plugin }

func (l etcdConfigLoader) LoadConfig(out any) (bool, error) {
	if l.p.etcd == nil {
		return false, fmt.Errorf("embedded etcd is not running")
	}
	return infra.StaticConfig{"endpoints": []string{l.p.etcd.Endpoint()}}.LoadConfig(out)
}

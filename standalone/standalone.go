// Package standalone runs what a Kubernetes cluster and a node would provide to the
// agent, inside the agent process, so that `contiv-agent -standalone` (what `make run`
// starts) exercises the production code path on one machine:
//
//	embedded etcd (loopback)  <── cluster file loader: a YAML file of Kubernetes objects
//	   │                          (Nodes, Pods, Services, Endpoints, EndpointSlices,
//	   │                          ServiceCIDRs, Namespaces, NetworkPolicies; slices
//	   │                          and legacy Endpoints values both written, each made
//	   │                          of the other when the file lacks it), converted by the code of
//	   │                          contiv-ksr and written in its layout; the file is
//	   │                          polled and every change applied (mark and sweep)
//	   └──> dbwatcher, nodesync (as with the cluster's etcd)
//
//	VPP simulator (pkg/vppsim) on <dir>/api.sock ──> govppmux (as with VPP's socket)
//	             and its stats segment on <dir>/stats.sock ──> statscollector
//
// For the operator tools it writes, into Deps.Dir, the etcd.conf of the embedded etcd
// (EtcdConfFile) and, given Deps.AgentURL, the netctl.conf that contiv-netctl reads by
// default (NetctlConfFile: where etcd.conf is and the agent's REST URL), so that
// `contiv-netctl nodes` works against `make run` without flags.
//
// It does not simulate anything the agent itself does; nothing in the production path
// knows it runs standalone. For the nodes of the cluster file that have no node ID yet
// it allocates one in file order, standing in for the agents of the other nodes.
package standalone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdembed"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

// DefaultNIC is the physical interface the simulated VPP has unless Deps.VPPNICs says
// otherwise.
const DefaultNIC = "GigabitEthernet0/8/0"

// Files written into Deps.Dir for the operator tools.
const (
	// EtcdConfFile is the etcd.conf of the embedded etcd (the agents' format).
	EtcdConfFile = "etcd.conf"
	// NetctlConfFile is contiv-netctl's configuration: etcd-config, agents.
	NetctlConfFile = "netctl.conf"
)

// VPPSocketName is the file name of the simulator's API socket in Deps.Dir.
const VPPSocketName = "api.sock"

// StatsSocketName is the file name of the simulator's stats socket in Deps.Dir.
const StatsSocketName = "stats.sock"

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Dir holds the embedded etcd data (kept across runs, so node IDs survive) and the
	// simulator's API socket.
	Dir string
	// EtcdAddr is the loopback host:port of the embedded etcd (port 0: any free port).
	EtcdAddr string
	// ClusterFile is the YAML file of Kubernetes objects loaded into etcd (the -cluster
	// flag); empty loads nothing.
	ClusterFile string
	// ClusterPollInterval is how often ClusterFile is checked for changes; 0 means
	// DefaultClusterPollInterval.
	ClusterPollInterval time.Duration
	// VPPNICs are the physical interfaces of the simulated VPP; nil means [DefaultNIC].
	VPPNICs []string
	// VPPLinux makes the simulator create the Linux side of TAP interfaces (root only).
	VPPLinux bool
	// NoVPP leaves the simulator out: the agent connects to a VPP (or vpp-sim) of its
	// own, e.g. to outlive an agent restart as a real VPP does.
	NoVPP bool
	// NodeName is the agent's node, named in netctl.conf with AgentURL.
	NodeName string
	// AgentURL returns the base URL of the agent's REST API as a local client reaches
	// it (rest.Plugin.ClientURL); called in Init. Nil writes no netctl.conf.
	AgentURL func() string
}

// Plugin starts and stops the standalone environment.
type Plugin struct {
	Deps
	etcd   *etcdembed.Server
	client *clientv3.Client
	sim    *vppsim.Sim

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "standalone" }

// Init starts the embedded etcd, loads the cluster file into it and starts the VPP
// simulator; it must run before the plugins that connect to either. A cluster file
// that does not exist fails Init; errors inside the file are logged and the file is
// loaded once they are fixed.
func (p *Plugin) Init() (err error) {
	p.Log = infra.LoggerOr(p.Log, p.String())
	if p.ClusterPollInterval <= 0 {
		p.ClusterPollInterval = DefaultClusterPollInterval
	}
	if p.ClusterFile != "" {
		if _, err := os.Stat(p.ClusterFile); err != nil {
			return fmt.Errorf("cluster file: %w", err)
		}
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
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
	if err := p.writeToolConfigs(); err != nil {
		return err
	}

	if p.ClusterFile != "" {
		if err := p.startClusterLoader(); err != nil {
			return err
		}
	}

	if p.NoVPP {
		return nil
	}
	nics := p.VPPNICs
	if nics == nil {
		nics = []string{DefaultNIC}
	}
	sim, err := vppsim.New(vppsim.Options{
		SocketPath: filepath.Join(p.Dir, VPPSocketName), StatsSocketPath: p.StatsSocketPath(),
		NICs: nics, Linux: p.VPPLinux, Log: p.Log,
	})
	if err != nil {
		return err
	}
	if err := sim.Start(); err != nil {
		return err
	}
	p.sim = sim
	if !p.VPPLinux {
		p.Log.Warn(noLinuxSideWarning)
	}
	return nil
}

// writeToolConfigs writes etcd.conf and netctl.conf into Dir (see the package doc).
func (p *Plugin) writeToolConfigs() error {
	etcdConf := filepath.Join(p.Dir, EtcdConfFile)
	data, err := yaml.Marshal(map[string]any{"endpoints": []string{p.etcd.Endpoint()}})
	if err != nil {
		return fmt.Errorf("%s: %w", etcdConf, err)
	}
	if err := writeToolFile(etcdConf, "# etcd.conf of the embedded etcd of contiv-agent -standalone (rewritten at each start)\n", data); err != nil {
		return err
	}
	if p.AgentURL == nil || p.NodeName == "" {
		return nil
	}
	netctl := map[string]any{
		"etcd-config": etcdConf,
		"agents":      map[string]string{p.NodeName: p.AgentURL()},
	}
	if data, err = yaml.Marshal(netctl); err != nil {
		return fmt.Errorf("%s: %w", NetctlConfFile, err)
	}
	netctlConf := filepath.Join(p.Dir, NetctlConfFile)
	if err := writeToolFile(netctlConf, "# contiv-netctl configuration for contiv-agent -standalone (rewritten at each start)\n", data); err != nil {
		return err
	}
	p.Log.WithFields(logrus.Fields{"etcd-config": etcdConf, "netctl-config": netctlConf}).Info("operator tool configuration written")
	return nil
}

func writeToolFile(path, header string, data []byte) error {
	if err := os.WriteFile(path, append([]byte(header), data...), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// noLinuxSideWarning is logged when the simulator runs without the Linux side of TAPs.
const noLinuxSideWarning = "the VPP simulator does not create the Linux side of TAP interfaces " +
	"(-standalone-linux=false, the default when not root): the host interconnect (tap-vpp1) " +
	"cannot be configured: the agent runs DEGRADED (the controller retries it with a growing delay; " +
	"docs/TROUBLESHOOTING.md, \"The host interconnect cannot be configured\") and its REST API answers; " +
	"run as root for a healthy demo"

// startClusterLoader loads the cluster file once, then keeps watching it.
func (p *Plugin) startClusterLoader() error {
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{p.etcd.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("client of the embedded etcd: %w", err)
	}
	p.client = c
	loader := newClusterLoader(p.ClusterFile, c, p.Log)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	_ = loader.load(ctx) // errors are logged; the agent starts with what could be loaded
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		loader.run(ctx, p.ClusterPollInterval)
	}()
	return nil
}

// Close stops watching the cluster file, then stops the simulator and the embedded
// etcd.
func (p *Plugin) Close() error {
	if p.cancel != nil {
		p.cancel()
		p.wg.Wait()
		p.cancel = nil
	}
	var errs []error
	if p.client != nil {
		p.client.Close()
		p.client = nil
	}
	if p.sim != nil {
		errs = append(errs, p.sim.Close())
		p.sim = nil
	}
	if p.etcd != nil {
		errs = append(errs, p.etcd.Close())
		p.etcd = nil
	}
	return errors.Join(errs...)
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

// VPPSocketPath is the API socket of the simulated VPP (<Dir>/api.sock), for govppmux.
// It is known before Init; the simulator serves it from Init on.
func (p *Plugin) VPPSocketPath() string { return filepath.Join(p.Dir, VPPSocketName) }

// StatsSocketPath is the stats socket of the simulated VPP (<Dir>/stats.sock), for the
// agent's statscollector (govpp.conf stats-socket-path).
func (p *Plugin) StatsSocketPath() string { return filepath.Join(p.Dir, StatsSocketName) }

// VPP returns the running simulator (nil before Init and after Close), for tests and
// debugging tools that inspect or disturb the simulated VPP.
func (p *Plugin) VPP() *vppsim.Sim { return p.sim }

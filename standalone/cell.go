package standalone

import (
	"path/filepath"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// Options are the standalone mode's settings (contiv-agent's -standalone-* flags).
type Options struct {
	// Dir is the data directory (absolute): etcd data, sockets, node ID, pods.
	Dir string
	// EtcdAddr is the loopback host:port of the embedded etcd.
	EtcdAddr string
	// ClusterFile is the YAML file of Kubernetes objects loaded into etcd ("" none).
	ClusterFile string
	// VPP runs the simulator in the agent; false connects to the VPP of govpp.conf.
	VPP bool
	// VPPLinux makes the simulator create the Linux side of TAPs (root).
	VPPLinux bool
}

// ProvidedConfigs names the configurations the standalone cell provides in place of
// the agent's files, for opts.
func ProvidedConfigs(opts Options) []string {
	names := []string{"etcd", "bolt", "podmanager"}
	if opts.VPP {
		names = append(names, "govpp")
	}
	return names
}

// Cell declares the standalone environment: it starts before anything that reads the
// configurations it provides (the embedded etcd's, the simulator's socket, the CNI
// socket and state under Dir) and the node ID file.
func Cell(opts Options) infra.Cell {
	provides := []string{nodesync.IDFileKey.String()}
	for _, name := range ProvidedConfigs(opts) {
		provides = append(provides, infra.ConfigKey(name).String())
	}
	return infra.Cell{
		Name:     "standalone",
		Needs:    []string{infra.LogsKey.String(), infra.NodeNameKey.String(), rest.ClientURLKey.String()},
		Provides: provides,
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{
				Log:         infra.Get(s, infra.LogsKey).Logger("standalone"),
				Dir:         opts.Dir,
				EtcdAddr:    opts.EtcdAddr,
				ClusterFile: opts.ClusterFile,
				NoVPP:       !opts.VPP,
				VPPLinux:    opts.VPPLinux,
				NodeName:    infra.Get(s, infra.NodeNameKey),
				AgentURL:    infra.Get(s, rest.ClientURLKey), // netctl.conf for contiv-netctl
			})
			infra.Provide(s, infra.ConfigKey("etcd"), p.EtcdConfig())
			if opts.VPP {
				infra.Provide(s, infra.ConfigKey("govpp"), infra.ConfigLoader(infra.StaticConfig{
					"binapi-socket-path": p.VPPSocketPath(), "stats-socket-path": p.StatsSocketPath()}))
			}
			infra.Provide(s, infra.ConfigKey("bolt"), infra.ConfigLoader(infra.StaticConfig{"db-path": filepath.Join(opts.Dir, "bolt.db")}))
			infra.Provide(s, infra.ConfigKey("podmanager"), infra.ConfigLoader(infra.StaticConfig{
				"socketPath": filepath.Join(opts.Dir, "cni.sock"),
				"stateFile":  filepath.Join(opts.Dir, "pods.json"),
			}))
			infra.Provide(s, nodesync.IDFileKey, filepath.Join(opts.Dir, "node-id"))
			return p, nil
		},
	}
}

// DemoPodsCell declares the demo pods: they start after the controller (added once the
// event loop runs, deleted before it stops) and before the DB watcher.
func DemoPodsCell(opts Options, netnsPrefix string) infra.Cell {
	return infra.Cell{
		Name:   "standalone-demo-pods",
		Needs:  []string{infra.LogsKey.String(), infra.NodeNameKey.String()},
		After:  []string{"controller"},
		Before: []string{"dbwatcher"},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			return NewDemoPods(DemoPodsDeps{
				Log: infra.Get(s, infra.LogsKey).Logger("standalone"), ClusterFile: opts.ClusterFile,
				NodeName: infra.Get(s, infra.NodeNameKey), CNISocket: filepath.Join(opts.Dir, "cni.sock"),
				NetnsPrefix: netnsPrefix,
			}), nil
		},
	}
}

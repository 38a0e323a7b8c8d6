package nodesync

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/dbwatcher"
)

// Key is the node synchronisation: this node's ID and the cluster's nodes.
var Key = infra.NewKey[*NodeSync]("nodesync")

// IDFileKey is the file that keeps this node's ID across restarts.
var IDFileKey = infra.NewKey[string]("nodesync/id-file")

// Cell declares nodesync, an event handler. It holds the DB watcher and the event loop
// (it reads and writes etcd, and pushes node events, once the agent runs).
func Cell() infra.Cell {
	return infra.Cell{
		Name:        "nodesync",
		Needs:       []string{infra.LogsKey.String(), infra.NodeNameKey.String(), IDFileKey.String(), health.RegistryKey.String(), health.MetricsKey.String()},
		Holds:       []string{dbwatcher.Key.String(), api.EventLoopKey.String()},
		Provides:    []string{Key.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			ns := NewNodeSync(Deps{
				Log:       infra.Get(s, infra.LogsKey).Logger("nodesync"),
				NodeName:  infra.Get(s, infra.NodeNameKey),
				DB:        infra.Get(s, dbwatcher.Key),
				EventLoop: infra.Get(s, api.EventLoopKey),
				IDFile:    infra.Get(s, IDFileKey),
				// The dbwatcher grants the leases that hold the node ID (LeaseDB).
				Health:     infra.Get(s, health.RegistryKey).Reporter("nodeid"),
				Registerer: infra.Get(s, health.MetricsKey),
			})
			infra.Provide(s, Key, ns)
			infra.Contribute(s, api.EventHandlers, api.EventHandler(ns))
			return ns, nil
		},
	}
}

package dbwatcher

import (
	"github.com/contiv-vpp/contiv-vpp/api/models"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Key is the DB watcher, which nodesync reads and writes etcd through.
var Key = infra.NewKey[*DBWatcher]("dbwatcher")

// Cell declares the DB watcher. It starts after the controller (After) and so is
// closed first: it feeds the loop.
func Cell() infra.Cell {
	return infra.Cell{
		Name:     "dbwatcher",
		Needs:    []string{infra.LogsKey.String(), infra.NodeNameKey.String(), infra.ConfigKey("etcd").String(), infra.ConfigKey("bolt").String(), health.MetricsKey.String(), health.RegistryKey.String()},
		Holds:    []string{api.EventLoopKey.String(), api.WatcherTimingKey.String()},
		After:    []string{"controller"},
		Provides: []string{Key.String(), api.DBResyncKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			loop := infra.Get(s, api.EventLoopKey)
			etcd := infra.Get(s, health.RegistryKey).Reporter("etcd")
			bolt := infra.Get(s, health.RegistryKey).Reporter("bolt")
			w := NewDBWatcher(Deps{
				Log:                 infra.Get(s, infra.LogsKey).Logger("dbwatcher"),
				NodeName:            infra.Get(s, infra.NodeNameKey),
				EventLoop:           loop,
				EtcdConfig:          infra.Get(s, infra.ConfigKey("etcd")),
				BoltConfig:          infra.Get(s, infra.ConfigKey("bolt")),
				ExternalConfigCodec: models.UnmarshalConfig,
				Registerer:          infra.Get(s, health.MetricsKey),
				MirrorHealth:        bolt,
				Timing:              infra.Get(s, api.WatcherTimingKey),
				StatusReporter: func(connected bool, reason string) {
					// While etcd is down the agent runs from the local mirror: alive, not ready.
					if connected {
						etcd.Report(health.OK, "")
						return
					}
					etcd.Report(health.Init, "etcd not connected: "+reason)
				},
			})
			infra.Provide(s, Key, w)
			infra.Provide(s, api.DBResyncKey, api.ResyncRequester(w))
			return w, nil
		},
	}
}

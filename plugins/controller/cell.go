package controller

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Key is the controller: the event loop the other cells push events into.
var Key = infra.NewKey[*Controller]("controller")

// Cell declares the controller. It is built early (every cell that pushes events holds
// it) and started last among the plugins it drives: it collects the event handlers,
// so it starts after all of them and is closed before any of them.
func Cell() infra.Cell {
	var ctl *Controller
	return infra.Cell{
		Name: "controller",
		Needs: []string{infra.LogsKey.String(), infra.ConfigKey("controller").String(), kvapi.SchedulerKey.String(),
			infra.AdminHTTPKey.String(), health.MetricsKey.String(), health.RegistryKey.String()},
		// It starts after the event handlers it runs and after every plugin that registers
		// descriptors: the first transaction finds them all.
		Uses:     []string{api.EventHandlers.String(), api.DBResyncKey.String(), kvapi.DescriptorPlugins.String()},
		Provides: []string{Key.String(), api.EventLoopKey.String(), api.WatcherTimingKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			ctl = NewController(Deps{
				Log:        infra.Get(s, infra.LogsKey).Logger("controller"),
				Config:     infra.Get(s, infra.ConfigKey("controller")),
				Scheduler:  infra.Get(s, kvapi.SchedulerKey),
				HTTP:       infra.Get(s, infra.AdminHTTPKey), // event history, resync
				Registerer: infra.Get(s, health.MetricsKey),
				Health:     infra.Get(s, health.RegistryKey).Reporter("controller"),
			})
			infra.Provide(s, Key, ctl)
			infra.Provide(s, api.EventLoopKey, api.EventLoop(ctl))
			infra.Provide(s, api.WatcherTimingKey, ctl.DBWatcherTiming) // controller.conf, loaded by the controller's Init
			return ctl, nil
		},
		Connect: func(s *infra.Scope) error {
			ctl.EventHandlers = infra.Collect(s, api.EventHandlers)
			ctl.DBWatcher = infra.Get(s, api.DBResyncKey)
			infra.Collect(s, kvapi.DescriptorPlugins) // for the order only: see Uses
			return nil
		},
	}
}

package ifplugin

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

// Cell declares the Linux interface plugin: its descriptors, registered with the scheduler.
func Cell() infra.Cell {
	return infra.Cell{
		Name:        "linux-ifplugin",
		Needs:       []string{infra.LogsKey.String(), kvapi.SchedulerKey.String(), nsplugin.Key.String()},
		Contributes: []string{kvapi.DescriptorPlugins.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := &Plugin{Deps: Deps{Log: infra.Get(s, infra.LogsKey).Logger("linux-ifplugin"), Scheduler: infra.Get(s, kvapi.SchedulerKey), NsPlugin: infra.Get(s, nsplugin.Key)}}
			infra.Contribute(s, kvapi.DescriptorPlugins, "linux-ifplugin")
			return p, nil
		},
	}
}

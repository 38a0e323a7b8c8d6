package l2plugin

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Cell declares the VPP L2 plugin: its descriptors, registered with the scheduler.
func Cell() infra.Cell {
	return infra.Cell{
		Name:        "vpp-l2plugin",
		Needs:       []string{infra.LogsKey.String(), kvapi.SchedulerKey.String(), govppmux.Key.String()},
		Contributes: []string{kvapi.DescriptorPlugins.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{Log: infra.Get(s, infra.LogsKey).Logger("vpp-l2plugin"), Scheduler: infra.Get(s, kvapi.SchedulerKey), GoVPP: infra.Get(s, govppmux.Key)})
			infra.Contribute(s, kvapi.DescriptorPlugins, "vpp-l2plugin")
			return p, nil
		},
	}
}

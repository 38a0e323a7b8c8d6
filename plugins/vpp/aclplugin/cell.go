package aclplugin

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Cell declares the VPP ACL plugin: its descriptors, registered with the scheduler.
func Cell() infra.Cell {
	return infra.Cell{
		Name:        "vpp-aclplugin",
		Needs:       []string{infra.LogsKey.String(), kvapi.SchedulerKey.String(), govppmux.Key.String()},
		Contributes: []string{kvapi.DescriptorPlugins.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := &Plugin{Deps: Deps{Log: infra.Get(s, infra.LogsKey).Logger("vpp-aclplugin"), Scheduler: infra.Get(s, kvapi.SchedulerKey), GoVPP: infra.Get(s, govppmux.Key)}}
			infra.Contribute(s, kvapi.DescriptorPlugins, "vpp-aclplugin")
			return p, nil
		},
	}
}

package ifplugin

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Key is the VPP interface plugin (interface metadata, DHCP leases, NIC dumps).
var Key = infra.NewKey[*Plugin]("vpp-ifplugin")

// Cell declares the VPP interface plugin: its descriptors, registered with the scheduler.
func Cell() infra.Cell {
	return infra.Cell{
		Name:        "vpp-ifplugin",
		Needs:       []string{infra.LogsKey.String(), kvapi.SchedulerKey.String(), govppmux.Key.String()},
		Contributes: []string{kvapi.DescriptorPlugins.String()},
		Provides:    []string{Key.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{Log: infra.Get(s, infra.LogsKey).Logger("vpp-ifplugin"), Scheduler: infra.Get(s, kvapi.SchedulerKey), GoVPP: infra.Get(s, govppmux.Key)})
			infra.Provide(s, Key, p)
			infra.Contribute(s, kvapi.DescriptorPlugins, "vpp-ifplugin")
			return p, nil
		},
	}
}

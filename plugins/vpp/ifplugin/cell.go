package ifplugin

import (
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Key is the VPP interface plugin (interface metadata, DHCP leases, NIC dumps).
var Key = infra.NewKey[*Plugin]("vpp-ifplugin")

// Cell declares the VPP interface plugin: descriptors registered with the scheduler.
func Cell() infra.Cell {
	c := kvapi.DescriptorCell("vpp-ifplugin", []string{govppmux.Key.String()}, func(s *infra.Scope, log *logrus.Entry, sch kvapi.KVScheduler) infra.Plugin {
		p := NewPlugin(Deps{Log: log, Scheduler: sch, GoVPP: infra.Get(s, govppmux.Key)})
		infra.Provide(s, Key, p)
		return p
	})
	c.Provides = []string{Key.String()}
	return c
}

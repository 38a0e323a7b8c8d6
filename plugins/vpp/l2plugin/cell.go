package l2plugin

import (
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Cell declares the VPP L2 plugin: descriptors registered with the scheduler.
func Cell() infra.Cell {
	return kvapi.DescriptorCell("vpp-l2plugin", []string{govppmux.Key.String()}, func(s *infra.Scope, log *logrus.Entry, sch kvapi.KVScheduler) infra.Plugin {
		p := NewPlugin(Deps{Log: log, Scheduler: sch, GoVPP: infra.Get(s, govppmux.Key)})
		return p
	})
}

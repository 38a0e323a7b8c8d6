package ifplugin

import (
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

// Cell declares the Linux interface plugin: descriptors registered with the scheduler.
func Cell() infra.Cell {
	return kvapi.DescriptorCell("linux-ifplugin", []string{nsplugin.Key.String()}, func(s *infra.Scope, log *logrus.Entry, sch kvapi.KVScheduler) infra.Plugin {
		p := &Plugin{Deps: Deps{Log: log, Scheduler: sch, NsPlugin: infra.Get(s, nsplugin.Key)}}

		return p
	})
}

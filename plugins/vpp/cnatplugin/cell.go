package cnatplugin

import (
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Cell declares the VPP cnat plugin: its descriptors registered with the scheduler.
func Cell() infra.Cell {
	return kvapi.DescriptorCell("vpp-cnatplugin", []string{govppmux.Key.String()}, func(s *infra.Scope, log *logrus.Entry, sch kvapi.KVScheduler) infra.Plugin {
		return &Plugin{Deps: Deps{Log: log, Scheduler: sch, GoVPP: infra.Get(s, govppmux.Key)}}
	})
}

package api

import (
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// SchedulerKey is the agent's KV scheduler, as the cells that register descriptors or
// commit transactions find it.
var SchedulerKey = infra.NewKey[KVScheduler]("kvscheduler")

// DescriptorPlugins is the group of the plugins that register descriptors with the
// scheduler (each contributes its name). The controller uses it: it starts after every
// one of them, so the first transaction finds every descriptor registered.
var DescriptorPlugins = infra.NewGroup[string]("kvscheduler/descriptor-plugins")

// DescriptorCell declares a plugin that registers descriptors with the scheduler: it
// needs the logs, the scheduler and the keys in needs, and contributes to
// DescriptorPlugins. build gets the plugin's logger (named after the cell) and the
// scheduler, and reads its other needs from s.
func DescriptorCell(name string, needs []string, build func(s *infra.Scope, log *logrus.Entry, sch KVScheduler) infra.Plugin) infra.Cell {
	return infra.Cell{
		Name:        name,
		Needs:       append([]string{infra.LogsKey.String(), SchedulerKey.String()}, needs...),
		Contributes: []string{DescriptorPlugins.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := build(s, infra.Get(s, infra.LogsKey).Logger(name), infra.Get(s, SchedulerKey))
			infra.Contribute(s, DescriptorPlugins, name)
			return p, nil
		},
	}
}

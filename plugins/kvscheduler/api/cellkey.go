package api

import "github.com/contiv-vpp/contiv-vpp/pkg/infra"

// SchedulerKey is the agent's KV scheduler, as the cells that register descriptors or
// commit transactions find it.
var SchedulerKey = infra.NewKey[KVScheduler]("kvscheduler")

// DescriptorPlugins is the group of the plugins that register descriptors with the
// scheduler (each contributes its name). The controller uses it: it starts after every
// one of them, so the first transaction finds every descriptor registered.
var DescriptorPlugins = infra.NewGroup[string]("kvscheduler/descriptor-plugins")

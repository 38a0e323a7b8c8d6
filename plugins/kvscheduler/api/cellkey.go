package api

import "github.com/contiv-vpp/contiv-vpp/pkg/infra"

// SchedulerKey is the agent's KV scheduler, as the cells that register descriptors or
// commit transactions find it.
var SchedulerKey = infra.NewKey[KVScheduler]("kvscheduler")

package kvscheduler

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Cell declares the scheduler; its REST API (/scheduler/...) is on the admin side.
func Cell() infra.Cell {
	return infra.Cell{
		Name:     "kvscheduler",
		Needs:    []string{infra.LogsKey.String(), infra.ConfigKey("kvscheduler").String(), health.MetricsKey.String(), infra.AdminHTTPKey.String()},
		Provides: []string{api.SchedulerKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			sch := &Scheduler{Deps: Deps{
				Log:        infra.Get(s, infra.LogsKey).Logger("kvscheduler"),
				Config:     infra.Get(s, infra.ConfigKey("kvscheduler")),
				Registerer: infra.Get(s, health.MetricsKey),
			}}
			sch.RegisterHandlers(infra.Get(s, infra.AdminHTTPKey))
			infra.Provide(s, api.SchedulerKey, api.KVScheduler(sch))
			return sch, nil
		},
	}
}

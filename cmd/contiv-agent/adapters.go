package main

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Small glue between plugins whose interfaces do not import each other.

// reportLifecycle turns agent lifecycle phases into the "agent" health component.
func reportLifecycle(r *health.Reporter, e infra.LifecycleEvent) {
	switch e.Phase {
	case infra.PhaseStarting:
		r.Report(health.Init, "plugins starting")
	case infra.PhaseStarted:
		r.Report(health.OK, "")
	case infra.PhaseFailed:
		r.Report(health.Error, e.Err.Error())
	case infra.PhaseStopping, infra.PhaseStopped:
		r.Report(health.Init, "shutting down")
	}
}

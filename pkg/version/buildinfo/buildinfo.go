// Package buildinfo exports the build's version as the Prometheus gauge
// contiv_<binary>_build_info, for the long-running binaries.
package buildinfo

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/version"
)

// Collector returns the constant gauge contiv_<subsystem>_build_info{version,commit,go_version} = 1.
func Collector(subsystem string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "contiv",
		Subsystem: subsystem,
		Name:      "build_info",
		Help:      "Build of the running binary; always 1.",
		ConstLabels: prometheus.Labels{
			"version": version.Version, "commit": version.Commit, "go_version": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}

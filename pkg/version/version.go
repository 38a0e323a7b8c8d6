// Package version holds the build's version and commit, stamped by the Makefile through
// -ldflags, and exports them as the metric contiv_agent_build_info.
package version

import (
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at build time: go build -ldflags "-X github.com/contiv-vpp/contiv-vpp/pkg/version.Version=v0.1.0 ...".
var (
	// Version is the release (or git describe) of this build.
	Version = "dev"
	// Commit is the git commit this build was made from.
	Commit = "unknown"
)

// String describes the build for -version output and start-up logs.
func String(binary string) string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)", binary, Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Collector returns the constant gauge contiv_<binary>_build_info{version,commit,go_version} = 1.
func Collector(subsystem string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   "contiv",
		Subsystem:   subsystem,
		Name:        "build_info",
		Help:        "Build of the running binary; always 1.",
		ConstLabels: prometheus.Labels{"version": Version, "commit": Commit, "go_version": runtime.Version()},
	})
	g.Set(1)
	return g
}

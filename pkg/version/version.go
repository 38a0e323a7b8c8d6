// Package version holds the build's version and commit, stamped by the Makefile through
// -ldflags. It imports nothing heavy, so that short-lived binaries such as contiv-cni
// start fast; the build-info metric is in the buildinfo subpackage.
package version

import (
	"fmt"
	"runtime"
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

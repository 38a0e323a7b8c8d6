package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestMain runs the tests, removes the shared build directories and fails the run if a
// network namespace of this package created during it survives (a leak the other test
// packages, which check that the host's network is left as found, would not see).
func TestMain(m *testing.M) {
	before, err := listTestNetns()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: list network namespaces: %v\n", err)
	}
	if len(before) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: network namespaces of an earlier run exist (not touched): %v\n", before)
	}
	code := m.Run()
	removeSharedTempDirs()
	after, err := listTestNetns()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: list network namespaces: %v\n", err)
		os.Exit(1)
	}
	// Only this process's namespaces count (their names hold "-<pid>-"): another e2e
	// run on the machine may create and remove its own meanwhile.
	own := fmt.Sprintf("-%d-", os.Getpid())
	var leaked []string
	for _, name := range after {
		if strings.Contains(name, own) && !slices.Contains(before, name) {
			leaked = append(leaked, name)
		}
	}
	if len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: network namespaces left behind: %v\n", leaked)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

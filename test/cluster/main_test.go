package cluster

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// TestMain runs the tests, closes the shared lab and fails the run if a network namespace
// of the lab survives it.
func TestMain(m *testing.M) {
	code := m.Run()
	var name string
	if shared.lab != nil {
		name = shared.lab.Name
	}
	if err := closeShared(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: FAIL: close the lab: %v\n", err)
		code = 1
	}
	if name != "" {
		entries, err := os.ReadDir(lab.NetnsDir)
		if err != nil && !os.IsNotExist(err) {
			fmt.Fprintf(os.Stderr, "cluster: list network namespaces: %v\n", err)
			code = 1
		}
		var leaked []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), name) {
				leaked = append(leaked, e.Name())
			}
		}
		if len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "cluster: FAIL: network namespaces left behind: %v\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

package buildinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollectorExportsBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector("agent"))
	want := `
# HELP contiv_agent_build_info Build of the running binary; always 1.
# TYPE contiv_agent_build_info gauge
contiv_agent_build_info{commit="unknown",go_version="` + runtime.Version() + `",version="dev"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

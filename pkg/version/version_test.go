package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStringNamesVersionAndCommit(t *testing.T) {
	Version, Commit = "v1.2.3", "abc1234"
	t.Cleanup(func() { Version, Commit = "dev", "unknown" })
	got := String("contiv-agent")
	want := "contiv-agent v1.2.3 (commit abc1234, " + runtime.Version()
	if !strings.HasPrefix(got, want) {
		t.Errorf("String = %q, want prefix %q", got, want)
	}
}

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

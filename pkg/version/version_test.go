package version

import (
	"runtime"
	"strings"
	"testing"
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

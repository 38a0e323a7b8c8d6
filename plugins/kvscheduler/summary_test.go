package kvscheduler

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Transaction summaries go to the log at info level (failed ones at warning level);
// a logger above info gets only the failed ones.
func TestTxnSummariesFollowTheLogLevel(t *testing.T) {
	for _, c := range []struct {
		level      logrus.Level
		wantInfo   bool
		wantFailed bool
	}{{logrus.InfoLevel, true, true}, {logrus.WarnLevel, false, true}, {logrus.ErrorLevel, false, false}} {
		t.Run(c.level.String(), func(t *testing.T) {
			log, hook := logtest.NewNullLogger()
			log.SetOutput(io.Discard)
			log.SetLevel(c.level)
			dp := newFakeDP()
			cfg := DefaultConfig()
			// as in the agent: a named entry of the logger
			s, err := NewScheduler(Deps{Log: log.WithField("logger", "kvscheduler"), Config: staticConfig(cfg)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.RegisterKVDescriptor(dp.register(fakeDesc{name: "v", prefix: "v/", deps: depsFromValue})); err != nil {
				t.Fatal(err)
			}
			mustCommit(t, s, set("v/a", "a"))
			dp.failOn("v/b", api.OpCreate, 1, false)
			if _, err := commitCtx(context.Background(), s, set("v/b", "b")); err == nil {
				t.Fatal("the failing create did not fail")
			}
			// The transaction goroutine logs a summary after answering its committer,
			// before it takes the next request: one more commit is the barrier.
			mustCommit(t, s, set("v/a", "a"))
			var info, failed bool
			for _, e := range hook.AllEntries() {
				switch {
				case e.Level == logrus.InfoLevel && strings.Contains(e.Message, "v/a"):
					info = true
				case e.Level == logrus.WarnLevel && strings.Contains(e.Message, "v/b"):
					failed = true
				}
			}
			if info != c.wantInfo || failed != c.wantFailed {
				t.Errorf("summary of the change logged %v (want %v), of the failure %v (want %v)", info, c.wantInfo, failed, c.wantFailed)
			}
		})
	}
}

package etcdembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func TestServerStoresAndKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	put := func(s *Server, key, val string) {
		c := client(t, s)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Put(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	get := func(s *Server, key string) string {
		c := client(t, s)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v %v", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	s, err := Start(Options{Dir: dir, ClientAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	put(s, "/vnf-agent/contiv-ksr/allocatedIDs/1", "x")
	s.Close()
	// A restart on the same directory keeps the data (node IDs must survive).
	s, err = Start(Options{Dir: dir, ClientAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := get(s, "/vnf-agent/contiv-ksr/allocatedIDs/1"); got != "x" {
		t.Errorf("value after restart = %q", got)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	tests := []struct {
		opts Options
		want string
	}{
		{Options{ClientAddr: "127.0.0.1:0"}, "etcd data directory is not set"},
		{Options{Dir: t.TempDir(), ClientAddr: "0.0.0.0:2379"}, `"0.0.0.0:2379": the embedded etcd listens on loopback only`},
		{Options{Dir: t.TempDir(), ClientAddr: "2379"}, `"2379" is not host:port`},
	}
	for _, tc := range tests {
		if _, err := Start(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func client(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lowLimitEnv makes the test binary, started again by
// TestTooFewOpenFilesIsAClearErrorNotASilentExit, lower its open files limit and start
// the server.
const lowLimitEnv = "ETCDEMBED_TEST_LOW_NOFILE"

// TestTooFewOpenFilesIsAClearErrorNotASilentExit: etcd ends the process (zap's Fatal,
// status 1, nothing printed with its log discarded) when the open files limit is at
// most 150; Start refuses before, with an error naming RLIMIT_NOFILE and the values.
// The limit is lowered in a child process (the test binary again), not in this one.
func TestTooFewOpenFilesIsAClearErrorNotASilentExit(t *testing.T) {
	if os.Getenv(lowLimitEnv) != "" {
		lim := syscall.Rlimit{Cur: 100, Max: 100}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Println("SKIP setrlimit:", err)
			os.Exit(0)
		}
		_, err := Start(Options{Dir: filepath.Join(os.Getenv(lowLimitEnv), "etcd"), ClientAddr: "127.0.0.1:0"})
		fmt.Println("START ERROR:", err)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTooFewOpenFilesIsAClearErrorNotASilentExit$")
	cmd.Env = append(os.Environ(), lowLimitEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "SKIP setrlimit") {
		t.Skipf("cannot lower the open files limit: %s", out)
	}
	want := "START ERROR: embedded etcd needs an open files limit (RLIMIT_NOFILE) of at least 151, the process has 100 (hard limit 100)"
	if err != nil || !strings.Contains(string(out), want) {
		t.Errorf("child: %v\n%s\nwant a line %q", err, out, want)
	}
}

// TestWriteBurstIsCompacted: periodic auto-compaction drops the history of a key
// rewritten in a burst, so the database does not grow with every write.
func TestWriteBurstIsCompacted(t *testing.T) {
	s, err := Start(Options{Dir: filepath.Join(t.TempDir(), "etcd"), ClientAddr: "127.0.0.1:0",
		AutoCompactionRetention: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := client(t, s)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first int64
	for i := range 50 {
		resp, err := c.Put(ctx, "/vnf-agent/contiv-ksr/k8s/pod/busy", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = resp.Header.Revision
		}
	}
	// real time: etcd's compactor runs on its own clock (every retention/10).
	testkit.Eventually(t, 20*time.Second, "the burst's first revision is compacted", func() error {
		_, err := c.Get(ctx, "/vnf-agent/contiv-ksr/k8s/pod/busy", clientv3.WithRev(first))
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil
		}
		return fmt.Errorf("get at revision %d: %v", first, err)
	})
	if q := s.etcd.Config().QuotaBackendBytes; q != DefaultQuotaBackendBytes {
		t.Errorf("backend quota %d, want %d", q, DefaultQuotaBackendBytes)
	}
}

package dbwatcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// boltPath is the bolt file of boltConf(dir).
func boltPath(dir string) string { return filepath.Join(dir, "bolt", "bolt.db") }

// corruptions damage a valid bolt file in the ways a file on a hostPath gets damaged:
// cut short (a full disk, a crash of the node during a copy), overwritten by garbage,
// or with garbage in its data pages (the metadata intact). why is what the reported
// reason must say.
var corruptions = map[string]struct {
	damage func(t *testing.T, data []byte) []byte
	why    string
}{
	"truncated after the metadata": {func(_ *testing.T, data []byte) []byte { return data[:3*4096+100] }, "cut short"},
	"garbage": {func(_ *testing.T, _ []byte) []byte { return []byte(strings.Repeat("not a bolt file\n", 1000)) },
		"invalid database"},
	"garbage in the data pages": {func(t *testing.T, data []byte) []byte {
		if len(data) < 5*4096 {
			t.Fatalf("bolt file of %d bytes: too small to damage its data pages", len(data))
		}
		out := append([]byte(nil), data...)
		for off := 2 * 4096; off+64 <= len(out); off += 4096 {
			copy(out[off:], strings.Repeat("GARBAGE!", 8))
		}
		return out
	}, "bolt failed on it"},
}

// TestCorruptMirrorIsSetAsideAndRebuiltFromEtcd is the regression test of issue #27,
// item 5: a damaged bolt mirror made bbolt panic (or fault) in Open, or failed Init,
// at every start: a crash loop, the file being on a hostPath. The mirror is a cache: the
// damaged file must be renamed aside (kept for a post-mortem), a new one created and
// rebuilt from etcd, and this said in the log, the health (DEGRADED until rebuilt)
// and a metric.
func TestCorruptMirrorIsSetAsideAndRebuiltFromEtcd(t *testing.T) {
	for name, c := range corruptions {
		t.Run(name, func(t *testing.T) {
			te := etcdtest.Start(t)
			db := kv{t, te.Client(t)}
			for i := range 200 {
				db.putKube(podKey(fmt.Sprintf("pod-%03d", i)), testPod(fmt.Sprintf("pod-%03d", i), fmt.Sprintf("10.1.1.%d", i%250+1)))
			}
			dir := t.TempDir()
			path := boltPath(dir)

			// A first run mirrors the state into bolt.
			first := newHarness(t, slowEtcdConf(te.Endpoint()), dir)
			first.start(t)
			first.loop.waitForCount(t, 1)
			if err := first.w.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damaged := c.damage(t, data)
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}

			reg := health.NewRegistry()
			second := newHarness(t, slowEtcdConf(te.Endpoint()), dir, func(d *Deps) { d.MirrorHealth = reg.Reporter("bolt") })
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("files set aside: %v, want one %s.corrupt-<time>", aside, path)
			}
			if kept, err := os.ReadFile(aside[0]); err != nil || string(kept) != string(damaged) {
				t.Errorf("the file set aside is not the damaged one (%d bytes, %v)", len(kept), err)
			}
			if h := reg.Status().Components["bolt"]; h.State != health.Degraded || !strings.Contains(h.Reason, path) ||
				!strings.Contains(h.Reason, aside[0]) || !strings.Contains(h.Reason, c.why) {
				t.Errorf("bolt health after the reset = %+v, want DEGRADED naming %s, %s and saying %q", h, path, aside[0], c.why)
			}
			if !loggedWith(second, logrus.ErrorLevel, "file", path) {
				t.Errorf("no error logged naming %s", path)
			}
			if n := testutil.ToFloat64(second.w.metrics.mirrorResets); n != 1 {
				t.Errorf("contiv_dbwatcher_mirror_resets_total = %v, want 1", n)
			}

			second.start(t)
			evs := second.loop.waitForCount(t, 1)
			if r, ok := evs[0].(*api.DBResync); !ok || r.Local {
				t.Fatalf("first event %s, want the resync from etcd", evs[0])
			}
			testkit.EventuallyTrue(t, waitTimeout, "the mirror rebuilt from etcd", func() bool {
				kvs, err := second.w.local.loadAll()
				return err == nil && len(kvs) == 200
			})
			testkit.EventuallyTrue(t, waitTimeout, "bolt health OK once rebuilt", func() bool {
				return reg.Status().Components["bolt"].State == health.OK
			})
			kvs, _ := second.w.local.loadAll()
			want, _ := dbresources.Marshal(testPod("pod-007", "10.1.1.8"))
			if got := string(kvs[podKey("pod-007")]); got != string(want) {
				t.Errorf("mirrored %s = %s, want %s", podKey("pod-007"), got, want)
			}
		})
	}
}

// TestLockedMirrorTimesOutNamingTheHolder: a bolt file locked by another process made
// Init wait forever (lock-timeout 0, the shipped value), the agent alive but stuck.
// Init must give up after the lock timeout with an error naming the file, the lock and
// the process holding it.
func TestLockedMirrorTimesOutNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	path := boltPath(dir)
	l, err := openLocalDB(BoltConfig{DBPath: path, FileMode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	w := NewDBWatcher(Deps{Log: logrus.New(), EventLoop: newFakeLoop(),
		BoltConfig: loader(fmt.Sprintf("db-path: %s\nlock-timeout: 300ms\n", path))})
	start := time.Now()
	err = w.Init()
	if err == nil {
		_ = w.Close()
		t.Fatal("Init succeeded on a locked bolt file")
	}
	// bolt polls the lock every 50 ms and gives up at the last poll within the timeout
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("gave up after %v, well before lock-timeout 300ms", waited)
	}
	for _, want := range []string{path, "locked by another process", "lock-timeout 300ms", fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// loggedWith reports whether an entry at level carries the field key = value.
func loggedWith(h *harness, level logrus.Level, key, value string) bool {
	for _, e := range h.logs.AllEntries() {
		if e.Level == level && fmt.Sprint(e.Data[key]) == value {
			return true
		}
	}
	return false
}

// A disk that keeps damaging the mirror must not fill up with copies of it: the newest
// few damaged files are kept, older ones removed.
func TestOnlyTheNewestDamagedFilesAreKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bolt.db")
	older := []string{"20250101T000000.000Z", "20250102T000000.000Z", "20250103T000000.000Z", "20250104T000000.000Z"}
	for _, stamp := range older {
		if err := os.WriteFile(path+corruptSuffix+stamp, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("garbage", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	l, aside, _, err := openMirror(BoltConfig{DBPath: path, FileMode: 0o600}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	kept, _ := filepath.Glob(path + corruptSuffix + "*")
	want := []string{path + corruptSuffix + older[2], path + corruptSuffix + older[3], aside}
	if strings.Join(kept, " ") != strings.Join(want, " ") {
		t.Errorf("kept %v, want the newest three %v", kept, want)
	}
}

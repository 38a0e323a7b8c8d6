package dbwatcher

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// newTestMirror returns a mirror writer on a new bolt file, driven by a fake clock.
func newTestMirror(t *testing.T) (*mirrorWriter, *testkit.Clock) {
	t.Helper()
	cfg := DefaultBoltConfig()
	cfg.DBPath = filepath.Join(t.TempDir(), "mirror.db")
	local, err := openLocalDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.close() })
	fc := testkit.NewClock()
	return newMirrorWriter(local, fc, logrus.New()), fc
}

// startMirror runs the writer until the test ends.
func startMirror(t *testing.T, m *mirrorWriter) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func mirrored(t *testing.T, m *mirrorWriter) map[string]string {
	t.Helper()
	kvs, err := m.local.loadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(kvs))
	for k, v := range kvs {
		out[k] = string(v)
	}
	return out
}

func TestMirrorWritesAfterTheFlushDelayOnly(t *testing.T) {
	m, fc := newTestMirror(t)
	startMirror(t, m)
	m.update("k8s/pod/a", []byte("A"))
	fc.AwaitWaiting(t)
	fc.Step(mirrorFlushDelay - time.Nanosecond)
	if got := mirrored(t, m); len(got) != 0 {
		t.Fatalf("mirror written before the flush delay: %v", got)
	}
	fc.Step(time.Nanosecond)
	testkit.EventuallyTrue(t, waitTimeout, "the write", func() bool { return mirrored(t, m)["k8s/pod/a"] == "A" })
}

func TestMirrorCoalescesChangesOfAKey(t *testing.T) {
	m, _ := newTestMirror(t)
	for i := range 100 {
		m.update("k8s/pod/a", fmt.Appendf(nil, "v%d", i))
	}
	m.update("k8s/pod/b", []byte("B"))
	m.update("k8s/pod/b", nil) // created and deleted while waiting
	m.mu.Lock()
	pending := len(m.changes)
	m.mu.Unlock()
	if pending != 2 {
		t.Errorf("%d pending updates, want 2 (one per key)", pending)
	}
	m.flush()
	if got := mirrored(t, m); len(got) != 1 || got["k8s/pod/a"] != "v99" {
		t.Errorf("mirror %v, want only k8s/pod/a = v99", got)
	}
}

func TestMirrorSnapshotReplacesWhatWasQueuedBeforeIt(t *testing.T) {
	m, _ := newTestMirror(t)
	m.update("k8s/pod/old", []byte("O"))
	m.flush()
	m.update("k8s/pod/stale", []byte("S")) // covered by the snapshot below
	m.replace(map[string][]byte{"k8s/pod/a": []byte("A"), "k8s/pod/b": []byte("B")})
	m.update("k8s/pod/b", []byte("B2")) // after the snapshot: applied on top of it
	m.update("k8s/pod/c", []byte("C"))
	m.flush()
	want := map[string]string{"k8s/pod/a": "A", "k8s/pod/b": "B2", "k8s/pod/c": "C"}
	if got := mirrored(t, m); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mirror %v, want %v", got, want)
	}
}

func TestMirrorWritesASnapshotAfterItsLongerDelay(t *testing.T) {
	m, fc := newTestMirror(t)
	startMirror(t, m)
	m.replace(map[string][]byte{"k8s/pod/a": []byte("A")})
	fc.AwaitWaiting(t)
	fc.Step(mirrorSnapshotDelay - time.Nanosecond)
	if got := mirrored(t, m); len(got) != 0 {
		t.Fatalf("snapshot written while the resync it came with is processed: %v", got)
	}
	fc.Step(time.Nanosecond)
	testkit.EventuallyTrue(t, waitTimeout, "the write", func() bool { return mirrored(t, m)["k8s/pod/a"] == "A" })
}

// TestAMirroredSnapshotLeavesNoImageOfItInMemory: once a snapshot of 16,000 values of
// 1 kB (the size of an EndpointSlice's JSON: bolt writes them in single pages, which it
// pools) is written and the writer's reference to it dropped, the live heap is back
// near what it was: bolt's page pool, which the transaction refilled with every page it
// wrote (22 MB here), does not keep an image of the mirror.
func TestAMirroredSnapshotLeavesNoImageOfItInMemory(t *testing.T) {
	m, _ := newTestMirror(t)
	const n, size = 16000, 1000
	before := testkit.LiveHeap()
	kvs := make(map[string][]byte, n)
	for i := range n {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		kvs[fmt.Sprintf("k8s/endpointslice/namespace/default/svc-%05d", i)] = v
	}
	m.replace(kvs)
	kvs = nil
	m.flush()
	grown := int64(testkit.LiveHeap()) - int64(before)
	if limit := int64(n * size / 8); grown > limit {
		t.Errorf("live heap %d kB larger after mirroring %d kB of values, want at most %d kB", grown>>10, n*size>>10, limit>>10)
	}
	if got := mirrored(t, m); len(got) != n {
		t.Fatalf("%d values mirrored, want %d", len(got), n)
	}
	runtime.KeepAlive(kvs)
}

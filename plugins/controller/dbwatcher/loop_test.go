package dbwatcher

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

// loopOnly returns a watcher whose loop state is driven directly by the test, as if a
// remote resync at revision 10 had just been delivered by watch generation 1.
func loopOnly(t *testing.T) (*DBWatcher, *fakeLoop) {
	t.Helper()
	log, _ := test.NewNullLogger()
	l, err := openLocalDB(BoltConfig{DBPath: filepath.Join(t.TempDir(), "bolt.db"), FileMode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.close() })
	loop := newFakeLoop()
	w := &DBWatcher{
		Deps:      Deps{Log: log, NodeName: testNode, EventLoop: loop, ExternalConfigCodec: testCodec},
		local:     l,
		mirrorW:   newMirrorWriter(l, clock.RealClock{}, log),
		metrics:   newMetrics(func() int { return 0 }),
		resyncReq: make(chan struct{}, resyncQueueSize),
		pending:   newChangeTracker(),
	}
	// Pending events reach the fake loop as soon as they are recorded.
	w.pending.wake = func() {
		for ev := w.pending.Next(); ev != nil; ev = w.pending.Next() {
			_ = loop.PushEvent(ev)
		}
	}
	w.loop = newLoopState()
	w.loop.gen, w.loop.synced, w.loop.floor = 1, true, [2]int64{11, 11}
	return w, loop
}

func podChange(name string, rev int64, ip string) change {
	c := change{gen: 1, key: ksrkey.KsrPrefix + podKey(name), rev: rev, deleted: ip == ""}
	if ip != "" {
		c.value, _ = dbresources.Marshal(testPod(name, ip))
	}
	return c
}

func TestChangesAreAppliedOnceByRevision(t *testing.T) {
	w, loop := loopOnly(t)
	steps := []struct {
		name    string
		c       change
		applied bool
	}{
		{"covered by the resync", podChange("a", 10, "10.1.1.1"), false},
		{"first change after the resync", podChange("a", 11, "10.1.1.1"), true},
		{"same transaction, other key", podChange("b", 11, "10.1.1.2"), true},
		{"same key and revision again", podChange("a", 11, "10.1.1.1"), false},
		{"older revision", podChange("b", 9, "10.1.1.9"), false},
		{"next revision", podChange("a", 12, "10.1.1.3"), true},
		{"from a replaced watch", func() change { c := podChange("a", 13, "10.1.1.4"); c.gen = 0; return c }(), false},
		{"delete", podChange("b", 14, ""), true},
		{"delete replayed", podChange("b", 14, ""), false},
		{"older put after the delete", podChange("b", 13, "10.1.1.5"), false},
		{"external stream has its own revisions", change{gen: 1, external: true, key: externalKey(testNode, "config/test/x"), rev: 12, value: []byte("x")}, true},
	}
	for _, s := range steps {
		before := len(loop.snapshot())
		w.applyChange(s.c)
		if applied := len(loop.snapshot()) > before; applied != s.applied {
			t.Errorf("%s: applied = %v, want %v", s.name, applied, s.applied)
		}
	}
	replay(t, loop.snapshot())
}

func TestChangesBeforeTheResyncAfterReconnectAreDropped(t *testing.T) {
	w, loop := loopOnly(t)
	w.onConnectionChange(false)
	w.applyChange(podChange("a", 20, "10.1.1.1"))
	w.onConnectionChange(true)
	c := podChange("a", 21, "10.1.1.1")
	c.gen = w.loop.gen
	w.applyChange(c)
	if evs := loop.snapshot(); len(evs) != 0 {
		t.Errorf("changes applied before the resync:\n%s", describe(evs))
	}
	select {
	case <-w.resyncReq:
	default:
		t.Error("reconnection did not request a resync")
	}
}

func TestBuildSnapshotTrimsKeysAndSkipsBadValues(t *testing.T) {
	w, _ := loopOnly(t)
	good, _ := dbresources.Marshal(testPod("a", "10.1.1.1"))
	snap := &snapshot{rev: 7}
	for k, v := range map[string][]byte{
		ksrkey.KsrPrefix + podKey("a"): good,
		ksrkey.KsrPrefix + podKey("b"): []byte("garbage"),
		ksrkey.KsrPrefix + "k8s/sfc/x": []byte("{}"),
	} {
		snap.ksr = append(snap.ksr, &mvccpb.KeyValue{Key: []byte(k), Value: v, ModRevision: 5})
	}
	snap.ext = append(snap.ext, &mvccpb.KeyValue{Key: []byte(externalKey(testNode, "config/test/a")), Value: []byte("A"), ModRevision: 6})
	ev, keys, mirror := w.buildSnapshot(snap)
	if len(ev.KubeState) != len(dbresources.Keywords()) || len(ev.KubeState["pod"]) != 1 ||
		!proto.Equal(ev.KubeState["pod"][podKey("a")], testPod("a", "10.1.1.1")) {
		t.Errorf("kube state %v", ev.KubeState)
	}
	if len(ev.ExternalConfig) != 1 || ev.ExternalConfig["config/test/a"] == nil {
		t.Errorf("external config %v", ev.ExternalConfig)
	}
	if len(mirror) != 1 || string(mirror[podKey("a")]) != string(good) {
		t.Errorf("mirror %v", mirror)
	}
	// The bad value's revision is remembered, the unknown key is not tracked.
	if e, ok := keys[ksrkey.KsrPrefix+podKey("b")]; !ok || e.value != nil || e.rev != 5 {
		t.Errorf("bad key state %+v %v", e, ok)
	}
	if _, ok := keys[ksrkey.KsrPrefix+"k8s/sfc/x"]; ok {
		t.Error("unknown key tracked")
	}
}

// A listing large enough to be decoded in parallel gives what decoding it in order
// gives: every good value under its key, bad ones counted and skipped wherever they are.
func TestLargeListingIsDecodedWhole(t *testing.T) {
	w, _ := loopOnly(t)
	const n = 20 * decodeChunk
	snap := &snapshot{rev: 7}
	want := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		data, _ := dbresources.Marshal(testPod(name, fmt.Sprintf("10.1.%d.%d", i/200, i%200+1)))
		if i%997 == 3 {
			data = []byte("garbage")
		} else {
			want[podKey(name)] = true
		}
		snap.ksr = append(snap.ksr, &mvccpb.KeyValue{Key: []byte(ksrkey.KsrPrefix + podKey(name)), Value: data, ModRevision: int64(i + 1)})
	}
	ev, keys, mirror := w.buildSnapshot(snap)
	if got := len(ev.KubeState["pod"]); got != len(want) || len(mirror) != len(want) || len(keys) != n {
		t.Fatalf("%d pods, %d mirrored, %d keys; want %d, %d, %d", got, len(mirror), len(keys), len(want), len(want), n)
	}
	for rel, v := range ev.KubeState["pod"] {
		pod, ok := v.(interface{ GetName() string })
		if !want[rel] || !ok || podKey(pod.GetName()) != rel {
			t.Fatalf("%s holds %v", rel, v)
		}
	}
	if bad := testutil.ToFloat64(w.metrics.badValues.WithLabelValues("pod")); bad != float64(n-len(want)) {
		t.Errorf("bad values counted %v, want %d", bad, n-len(want))
	}
}

func TestValuesNamedForAnotherKeyAreRejectedAndCounted(t *testing.T) {
	w, loop := loopOnly(t)
	log, hook := test.NewNullLogger()
	w.Log = log
	rev := int64(11)
	for _, s := range samples() {
		t.Run(s.resource, func(t *testing.T) {
			data, err := dbresources.Marshal(s.v1)
			if err != nil {
				t.Fatal(err)
			}
			key := ksrkey.KsrPrefix + s.key + "x" // same resource, another identity
			w.applyChange(change{gen: 1, key: key, rev: rev, value: data})
			rev++
			snap := &snapshot{rev: rev, ksr: []*mvccpb.KeyValue{{Key: []byte(key), Value: data, ModRevision: rev}}}
			ev, _, mirror := w.buildSnapshot(snap)
			if n := len(ev.KubeState[s.resource]); n != 0 || len(mirror) != 0 {
				t.Errorf("resync took the value (%d values, %d mirrored)", n, len(mirror))
			}
			if n := testutil.ToFloat64(w.metrics.identityMismatches.WithLabelValues(s.resource)); n != 2 {
				t.Errorf("identity mismatches{%s} = %v, want 2 (change and resync)", s.resource, n)
			}
			found := false
			for _, e := range hook.AllEntries() {
				if e.Message == "value named for another key rejected" && e.Data["key"] == key {
					if err, _ := e.Data[logrus.ErrorKey].(error); err != nil && strings.Contains(err.Error(), "belongs under "+s.key) {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("no log naming the key %s and where the value belongs", key)
			}
		})
	}
	if evs := loop.snapshot(); len(evs) != 0 {
		t.Errorf("rejected values reached the event loop:\n%s", describe(evs))
	}
}

// BenchmarkMirrorFirstSnapshot writes the bolt mirror of a large cluster's first
// listing (25,600 objects of 600 bytes, the scale benchmark's setup) into an empty
// database, as the first remote resync does.
func BenchmarkMirrorFirstSnapshot(b *testing.B) {
	kvs := map[string][]byte{}
	for i := range 25600 {
		kvs[fmt.Sprintf("k8s/endpoints/svc-%d/namespace/default", i)] = []byte(strings.Repeat("x", 600))
	}
	for b.Loop() {
		b.StopTimer()
		l, err := openLocalDB(BoltConfig{DBPath: filepath.Join(b.TempDir(), "bolt.db"), FileMode: 0o600})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := l.replaceAll(kvs); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = l.close()
		b.StartTimer()
	}
}

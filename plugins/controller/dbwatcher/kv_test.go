package dbwatcher

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
)

func TestKVIsNotConnectedWhenEtcdIsDisabled(t *testing.T) {
	h := newHarness(t, nil, t.TempDir())
	h.start(t)
	kv, err := h.w.KV()
	if kv != nil || !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), "database is not connected") {
		t.Fatalf("KV() = %v, %v; want ErrNotConnected", kv, err)
	}
	if l, err := h.w.Lease(); l != nil || !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Lease() = %v, %v; want ErrNotConnected", l, err)
	}
}

func TestKVFollowsTheEtcdConnection(t *testing.T) {
	te := etcdtest.Start(t)
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	if _, err := h.w.KV(); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("before the first probe KV() error = %v, want ErrNotConnected", err)
	}
	h.start(t)
	testkit.EventuallyTrue(t, waitTimeout, "etcd is connected", h.w.IsConnected)

	kv, err := h.w.KV()
	if err != nil {
		t.Fatalf("KV() while connected: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kv.Put(ctx, "/test/kv", "x"); err != nil {
		t.Fatalf("put through KV(): %v", err)
	}
	if resp, err := te.Client(t).Get(ctx, "/test/kv"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "x" {
		t.Fatalf("value written through KV() not in etcd: %v, %v", resp, err)
	}
	lease, err := h.w.Lease()
	if err != nil {
		t.Fatalf("Lease() while connected: %v", err)
	}
	if g, err := lease.Grant(ctx, 60); err != nil || g.ID == 0 {
		t.Fatalf("grant through Lease(): %v, %v", g, err)
	}

	te.Stop()
	testkit.EventuallyTrue(t, waitTimeout, "the watcher sees etcd down", func() bool { return !h.w.IsConnected() })
	if _, err := h.w.KV(); !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), te.Endpoint()) {
		t.Fatalf("KV() with etcd down: %v, want ErrNotConnected naming the endpoint", err)
	}
	if _, err := h.w.Lease(); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Lease() with etcd down: %v, want ErrNotConnected", err)
	}
}

func TestTimingComesFromTheControllerConfig(t *testing.T) {
	w := NewDBWatcher(Deps{
		EventLoop:  newFakeLoop(),
		BoltConfig: boltConf(t.TempDir()),
		Timing:     func() (time.Duration, time.Duration) { return 7 * time.Second, 2 * time.Second },
	})
	if err := w.Init(); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.DelayLocalResync != 7*time.Second || w.RemoteDBProbingInterval != 2*time.Second {
		t.Errorf("timing = %v / %v", w.DelayLocalResync, w.RemoteDBProbingInterval)
	}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
)

func newClient(t *testing.T) *clientv3.Client {
	t.Helper()
	return etcdtest.Start(t).Client(t)
}

func putRaw(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	if _, err := c.Put(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
}

func putValue(t *testing.T, c *clientv3.Client, key string, v proto.Message) {
	t.Helper()
	data, err := dbresources.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, c, key, string(data))
}

// keys returns every key under prefix with its mod revision.
func keys(t *testing.T, c *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.ModRevision
	}
	return out
}

func podValue(name, ip string) *pod.Pod {
	return &pod.Pod{Name: name, Namespace: "default", IpAddress: ip}
}

func TestPutWritesOnlyChangedValues(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for _, preload := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefix loaded=%v", preload), func(t *testing.T) {
			w := New(Options{KV: c})
			key := pod.Key("p-"+fmt.Sprint(preload), "default")
			if preload {
				if _, err := w.Resync(ctx, pod.KeyPrefix(), map[string]proto.Message{}); err != nil {
					t.Fatal(err)
				}
			}
			steps := []struct {
				value *pod.Pod
				want  Result
			}{
				{podValue("p", "10.1.1.2"), Added},
				{podValue("p", "10.1.1.2"), Unchanged},
				{podValue("p", "10.1.1.3"), Updated},
			}
			for i, s := range steps {
				before := keys(t, c, ksrkey.KsrPrefix+key)[ksrkey.KsrPrefix+key]
				got, err := w.Put(ctx, key, s.value)
				if err != nil || got != s.want {
					t.Fatalf("step %d: Put = %v, %v; want %v", i, got, err, s.want)
				}
				after := keys(t, c, ksrkey.KsrPrefix+key)[ksrkey.KsrPrefix+key]
				if (s.want == Unchanged) != (before == after) {
					t.Errorf("step %d: mod revision %d -> %d for %v", i, before, after, s.want)
				}
			}
			// A fresh writer compares with etcd, not with an empty memory.
			if got, err := New(Options{KV: c}).Put(ctx, key, podValue("p", "10.1.1.3")); err != nil || got != Unchanged {
				t.Errorf("fresh writer Put = %v, %v; want unchanged", got, err)
			}
			if got, err := w.Delete(ctx, key); err != nil || got != Deleted {
				t.Errorf("Delete = %v, %v", got, err)
			}
			if got, err := w.Delete(ctx, key); err != nil || got != Unchanged {
				t.Errorf("second Delete = %v, %v", got, err)
			}
			if n := len(keys(t, c, ksrkey.KsrPrefix+key)); n != 0 {
				t.Errorf("key still there")
			}
		})
	}
}

func TestResyncMarksAndSweeps(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	pfx := ksrkey.KsrPrefix
	putValue(t, c, pfx+pod.Key("same", "default"), podValue("same", "10.1.1.2"))
	putValue(t, c, pfx+pod.Key("changed", "default"), podValue("changed", "10.1.1.3"))
	putValue(t, c, pfx+pod.Key("stale", "default"), podValue("stale", "10.1.1.4"))
	putValue(t, c, pfx+pod.Key("bad", "default"), podValue("bad", "10.1.1.9"))
	putRaw(t, c, pfx+pod.Key("garbled", "default"), "{not json")
	putRaw(t, c, pfx+"k8s/pod/junk", "x") // not even a pod key
	putValue(t, c, pfx+node.Key("n1"), &node.Node{Name: "n1"})
	before := keys(t, c, pfx)

	w := New(Options{KV: c})
	desired := map[string]proto.Message{
		pod.Key("same", "default"):    podValue("same", "10.1.1.2"),
		pod.Key("changed", "default"): podValue("changed", "10.1.1.33"),
		pod.Key("new", "default"):     podValue("new", "10.1.1.5"),
		pod.Key("garbled", "default"): podValue("garbled", "10.1.1.6"),
		pod.Key("bad", "default"):     nil, // could not be converted: keep
	}
	st, err := w.Resync(ctx, pod.KeyPrefix(), desired)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Added: 1, Updated: 2, Deleted: 2}); st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	after := keys(t, c, pfx)
	for k, wantPresent := range map[string]bool{
		pod.Key("same", "default"): true, pod.Key("changed", "default"): true, pod.Key("new", "default"): true,
		pod.Key("garbled", "default"): true, pod.Key("bad", "default"): true,
		pod.Key("stale", "default"): false, "k8s/pod/junk": false, node.Key("n1"): true,
	} {
		if _, ok := after[pfx+k]; ok != wantPresent {
			t.Errorf("%s present = %v, want %v", k, ok, wantPresent)
		}
	}
	for _, k := range []string{pod.Key("same", "default"), pod.Key("bad", "default"), node.Key("n1")} {
		if before[pfx+k] != after[pfx+k] {
			t.Errorf("%s was rewritten", k)
		}
	}
	// Memory now answers for the prefix: unchanged puts need no request.
	if r, err := w.Put(ctx, pod.Key("changed", "default"), podValue("changed", "10.1.1.33")); err != nil || r != Unchanged {
		t.Errorf("Put after resync = %v, %v", r, err)
	}
	// A second resync with the same state changes nothing.
	if st, err := w.Resync(ctx, pod.KeyPrefix(), desired); err != nil || st != (Stats{}) {
		t.Errorf("second resync = %+v, %v", st, err)
	}
}

func TestResyncBatchesLargeChanges(t *testing.T) {
	c := newClient(t)
	w := New(Options{KV: c})
	desired := map[string]proto.Message{}
	for i := range 300 {
		name := fmt.Sprintf("p%03d", i)
		desired[pod.Key(name, "default")] = podValue(name, "10.1.1.1")
	}
	st, err := w.Resync(context.Background(), pod.KeyPrefix(), desired)
	if err != nil || st.Added != 300 {
		t.Fatalf("resync = %+v, %v", st, err)
	}
	st, err = w.Resync(context.Background(), pod.KeyPrefix(), map[string]proto.Message{})
	if err != nil || st.Deleted != 300 {
		t.Fatalf("sweep = %+v, %v", st, err)
	}
	if n := len(keys(t, c, ksrkey.KsrPrefix+pod.KeyPrefix())); n != 0 {
		t.Errorf("%d pods left", n)
	}
}

func TestNodeDeletionCleansUpIDAndAgentConfig(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"delete", "resync"} {
		t.Run(how, func(t *testing.T) {
			c := newClient(t)
			pfx := ksrkey.KsrPrefix
			putValue(t, c, pfx+node.Key("n1"), &node.Node{Name: "n1"})
			putValue(t, c, pfx+node.Key("n2"), &node.Node{Name: "n2"})
			putValue(t, c, pfx+vppnode.Key(1), &vppnode.VppNode{Id: 1, Name: "n1"})
			putValue(t, c, pfx+vppnode.Key(2), &vppnode.VppNode{Id: 2, Name: "n2"})
			putValue(t, c, pfx+vppnode.Key(3), &vppnode.VppNode{Id: 3, Name: "n1"}) // a duplicate goes too
			putRaw(t, c, ksrkey.AgentPrefix("n1")+"config/vpp/v2/interfaces/loop1", "{}")
			putRaw(t, c, ksrkey.AgentPrefix("n1")+"config/vpp/v2/interfaces/loop2", "{}")
			putRaw(t, c, ksrkey.AgentPrefix("n2")+"config/vpp/v2/interfaces/loop1", "{}")
			putRaw(t, c, ksrkey.AgentPrefix("n11")+"config/x", "{}")

			w := New(Options{KV: c})
			switch how {
			case "delete":
				if r, err := w.Delete(ctx, node.Key("n1")); err != nil || r != Deleted {
					t.Fatalf("Delete = %v, %v", r, err)
				}
			case "resync":
				st, err := w.Resync(ctx, node.KeyPrefix(), map[string]proto.Message{node.Key("n2"): &node.Node{Name: "n2"}})
				if err != nil || st.Deleted != 1 {
					t.Fatalf("Resync = %+v, %v", st, err)
				}
			}
			all := keys(t, c, "/")
			want := []string{
				pfx + node.Key("n2"), pfx + vppnode.Key(2),
				ksrkey.AgentPrefix("n2") + "config/vpp/v2/interfaces/loop1", ksrkey.AgentPrefix("n11") + "config/x",
			}
			if len(all) != len(want) {
				t.Errorf("keys left: %v, want %v", all, want)
			}
			for _, k := range want {
				if _, ok := all[k]; !ok {
					t.Errorf("%s was removed", k)
				}
			}
		})
	}
}

// TestNodeIDsOfRunningAgentsAreKept: a node ID that a running agent holds (its holder
// key) outlives the deletion of its Node object, and the resync of the nodes releases
// the IDs that neither a Node object nor a running agent claims (leaked before).
func TestNodeIDsOfRunningAgentsAreKept(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	pfx := ksrkey.KsrPrefix
	putValue(t, c, pfx+node.Key("n1"), &node.Node{Name: "n1"})
	putValue(t, c, pfx+node.Key("n2"), &node.Node{Name: "n2"})
	putValue(t, c, pfx+vppnode.Key(1), &vppnode.VppNode{Id: 1, Name: "n1"})
	putValue(t, c, pfx+vppnode.Key(2), &vppnode.VppNode{Id: 2, Name: "n2"})
	putValue(t, c, pfx+vppnode.Key(3), &vppnode.VppNode{Id: 3, Name: "gone"}) // leaked: no Node, no agent
	putValue(t, c, pfx+vppnode.Key(4), &vppnode.VppNode{Id: 4, Name: "starting"})
	putRaw(t, c, pfx+vppnode.HolderKey(1), "n1")
	putRaw(t, c, pfx+vppnode.HolderKey(4), "starting") // an agent whose Node is not reflected yet

	w := New(Options{KV: c})
	if _, err := w.Delete(ctx, node.Key("n1")); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys(t, c, pfx+vppnode.Key(1))[pfx+vppnode.Key(1)]; !ok {
		t.Fatal("the ID of a deleted node whose agent still holds it was released")
	}
	// The agent of n1 stops: its lease ends and the holder key with it.
	if _, err := c.Delete(ctx, pfx+vppnode.HolderKey(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Resync(ctx, node.KeyPrefix(), map[string]proto.Message{node.Key("n2"): &node.Node{Name: "n2"}}); err != nil {
		t.Fatal(err)
	}
	left := keys(t, c, pfx+vppnode.KeyPrefix())
	for id, want := range map[uint32]bool{1: false, 2: true, 3: false, 4: true} {
		if _, ok := left[pfx+vppnode.Key(id)]; ok != want {
			t.Errorf("allocatedIDs/%d kept = %v, want %v (left: %v)", id, ok, want, left)
		}
	}
}

func TestNodeNamedLikeKSRKeepsKSRData(t *testing.T) {
	c := newClient(t)
	pfx := ksrkey.KsrPrefix
	putValue(t, c, pfx+node.Key(ksrkey.MicroserviceLabel), &node.Node{Name: ksrkey.MicroserviceLabel})
	putValue(t, c, pfx+pod.Key("p", "default"), podValue("p", "10.1.1.2"))
	if _, err := New(Options{KV: c}).Delete(context.Background(), node.Key(ksrkey.MicroserviceLabel)); err != nil {
		t.Fatal(err)
	}
	if all := keys(t, c, pfx); len(all) != 1 {
		t.Errorf("keys left: %v, want the pod only", all)
	}
}

func TestGuardRefusesWrites(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	putRaw(t, c, "/leader", "me")
	resp, err := c.Get(ctx, "/leader")
	if err != nil {
		t.Fatal(err)
	}
	guard := clientv3.Compare(clientv3.CreateRevision("/leader"), "=", resp.Kvs[0].CreateRevision)
	w := New(Options{KV: c, Guard: []clientv3.Cmp{guard}})
	if r, err := w.Put(ctx, pod.Key("a", "default"), podValue("a", "10.1.1.2")); err != nil || r != Added {
		t.Fatalf("Put while the guard holds = %v, %v", r, err)
	}
	if _, err := c.Delete(ctx, "/leader"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Put(ctx, pod.Key("b", "default"), podValue("b", "10.1.1.3")); !errors.Is(err, ErrGuardFailed) {
		t.Errorf("Put after the guard failed: %v, want ErrGuardFailed", err)
	}
	if _, err := w.Delete(ctx, pod.Key("a", "default")); !errors.Is(err, ErrGuardFailed) {
		t.Errorf("Delete after the guard failed: %v, want ErrGuardFailed", err)
	}
	if _, err := w.Resync(ctx, pod.KeyPrefix(), map[string]proto.Message{}); !errors.Is(err, ErrGuardFailed) {
		t.Errorf("Resync after the guard failed: %v, want ErrGuardFailed", err)
	}
	if all := keys(t, c, ksrkey.KsrPrefix); len(all) != 1 {
		t.Errorf("keys = %v, want only pod a", all)
	}
}

package nodesync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// putVppNode writes a VppNode into etcd as nodesync does and returns the revision.
func putVppNode(t *testing.T, c *clientv3.Client, rec *vppnode.VppNode) int64 {
	t.Helper()
	data, err := dbresources.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Put(ctx, etcdKey(rec.GetId()), string(data))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// allocations reads every allocatedIDs/<id> from etcd: ID -> name, and the mod
// revision of each key.
func allocations(t *testing.T, c *clientv3.Client) (map[uint32]*vppnode.VppNode, map[uint32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, ksrkey.KsrPrefix+vppnode.KeyPrefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	recs, revs := map[uint32]*vppnode.VppNode{}, map[uint32]int64{}
	for _, kv := range resp.Kvs {
		id, err := vppnode.ParseVppNodeFromKey(strings.TrimPrefix(string(kv.Key), ksrkey.KsrPrefix))
		if err != nil {
			t.Fatalf("bad key %s", kv.Key)
		}
		rec, err := decodeVppNode(kv.Value)
		if err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		recs[id], revs[id] = rec, kv.ModRevision
	}
	return recs, revs
}

// names renders allocations as "id=name" in ID order.
func names(recs map[uint32]*vppnode.VppNode) string {
	var out []string
	for id := uint32(1); len(out) < len(recs); id++ {
		if r, ok := recs[id]; ok {
			out = append(out, fmt.Sprintf("%d=%s", id, r.GetName()))
		}
		if id > 1000 {
			break
		}
	}
	return strings.Join(out, " ")
}

func TestFirstNodeGetsID1(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	ns, loop, _ := newPlugin(t, thisNode, clientDB{c})
	if err := resync(ns, 1, kubeState()); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	if id := ns.GetNodeID(); id != 1 {
		t.Fatalf("GetNodeID = %d, want 1", id)
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=node1" {
		t.Errorf("etcd holds %q, want 1=node1", got)
	}
	if r := recs[1]; r.GetId() != 1 || len(r.GetIpAddresses()) != 0 {
		t.Errorf("record %v", r)
	}
	if got := describeNodes(ns.GetAllNodes()); got != `node1: ID=1 name=node1 vpp-ips=[] mgmt-ips=[] pod-cidr=""` {
		t.Errorf("nodes: %s", got)
	}
	if evs := loop.take(); len(evs) != 0 {
		t.Errorf("allocation pushed %d events", len(evs))
	}
}

func TestSmallestFreeIDIsAllocatedFromEtcdNotTheSnapshot(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	for _, r := range []*vppnode.VppNode{vppNode(1, "a"), vppNode(2, "b"), vppNode(4, "d")} {
		putVppNode(t, c, r)
	}
	ns, _, _ := newPlugin(t, thisNode, clientDB{c})
	// The snapshot is stale: it knows only ID 1.
	if err := resync(ns, 1, kubeState(vppNode(1, "a"))); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	if id := ns.GetNodeID(); id != 3 {
		t.Fatalf("GetNodeID = %d, want 3", id)
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=a 2=b 3=node1 4=d" {
		t.Errorf("etcd holds %q", got)
	}
}

func TestRestartedNodeKeepsItsID(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	putVppNode(t, c, vppNode(1, "a"))
	putVppNode(t, c, vppNode(5, thisNode, "192.168.16.5/24"))
	_, before := allocations(t, c)

	t.Run("found in the snapshot", func(t *testing.T) {
		ns, _, _ := newPlugin(t, thisNode, clientDB{c})
		if err := resync(ns, 1, kubeState(vppNode(1, "a"), vppNode(5, thisNode, "192.168.16.5/24"))); err != nil {
			t.Fatal(err)
		}
		if id := ns.GetNodeID(); id != 5 {
			t.Fatalf("GetNodeID = %d, want 5", id)
		}
	})
	t.Run("found in etcd when the snapshot is stale", func(t *testing.T) {
		ns, _, _ := newPlugin(t, thisNode, clientDB{c})
		if err := resync(ns, 1, kubeState()); err != nil {
			t.Fatal(err)
		}
		if id := ns.GetNodeID(); id != 5 {
			t.Fatalf("GetNodeID = %d, want 5", id)
		}
		if got := ns.GetAllNodes()[thisNode].String(); got != `ID=5 name=node1 vpp-ips=[192.168.16.5/24] mgmt-ips=[] pod-cidr=""` {
			t.Errorf("this node: %s", got)
		}
	})
	t.Run("without a database when the snapshot has it", func(t *testing.T) {
		ns, _, _ := newPlugin(t, thisNode, downDB{})
		if err := resync(ns, 1, kubeState(vppNode(5, thisNode))); err != nil {
			t.Fatal(err)
		}
		if id := ns.GetNodeID(); id != 5 {
			t.Fatalf("GetNodeID = %d, want 5", id)
		}
	})
	recs, after := allocations(t, c)
	if got := names(recs); got != "1=a 5=node1" {
		t.Errorf("etcd holds %q", got)
	}
	if !maps.Equal(before, after) {
		t.Errorf("records were rewritten: revisions %v -> %v", before, after)
	}
}

func TestConcurrentNodesGetDistinctIDs(t *testing.T) {
	const n = 8
	srv := etcdtest.Start(t)
	plugins := make([]*NodeSync, n)
	for i := range plugins {
		plugins[i], _, _ = newPlugin(t, fmt.Sprintf("node%d", i+1), clientDB{srv.Client(t)})
	}
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, ns := range plugins {
		wg.Go(func() {
			<-start
			errs[i] = resync(ns, 1, kubeState())
		})
	}
	close(start)
	wg.Wait()

	ids := make([]uint32, 0, n)
	byName := map[string]uint32{}
	for i, ns := range plugins {
		if errs[i] != nil {
			t.Fatalf("%s: %v", ns.NodeName, errs[i])
		}
		ids = append(ids, ns.GetNodeID())
		byName[ns.NodeName] = ns.GetNodeID()
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != uint32(i+1) {
			t.Fatalf("IDs %v, want 1..%d", ids, n)
		}
	}
	recs, _ := allocations(t, srv.Client(t))
	if len(recs) != n {
		t.Fatalf("etcd holds %d allocations: %s", len(recs), names(recs))
	}
	for id, r := range recs {
		if byName[r.GetName()] != id {
			t.Errorf("etcd gives ID %d to %s, the plugin says %d", id, r.GetName(), byName[r.GetName()])
		}
	}
}

// racingDB is a DB over an etcd client where another node claims the smallest free ID
// just before each of the first races transactions of nodesync.
type racingDB struct {
	t     *testing.T
	c     *clientv3.Client
	mu    sync.Mutex
	races int
	won   []uint32 // IDs taken by the racer
}

func (r *racingDB) KV() (clientv3.KV, error) { return racingKV{KV: r.c.KV, r: r}, nil }

type racingKV struct {
	clientv3.KV
	r *racingDB
}

func (k racingKV) Txn(ctx context.Context) clientv3.Txn {
	k.r.mu.Lock()
	defer k.r.mu.Unlock()
	if k.r.races > 0 {
		k.r.races--
		resp, err := k.KV.Get(ctx, ksrkey.KsrPrefix+vppnode.KeyPrefix(), clientv3.WithPrefix())
		if err != nil {
			k.r.t.Errorf("racer: %v", err)
		} else {
			taken := map[uint32]bool{}
			for _, kv := range resp.Kvs {
				id, _ := vppnode.ParseVppNodeFromKey(strings.TrimPrefix(string(kv.Key), ksrkey.KsrPrefix))
				taken[id] = true
			}
			id := smallestFree(taken)
			data, _ := dbresources.Marshal(vppNode(id, fmt.Sprintf("racer%d", id)))
			if _, err := k.KV.Put(ctx, etcdKey(id), string(data)); err != nil {
				k.r.t.Errorf("racer: %v", err)
			}
			k.r.won = append(k.r.won, id)
		}
	}
	return k.KV.Txn(ctx)
}

func TestAllocationRetriesAfterLosingARace(t *testing.T) {
	srv := etcdtest.Start(t)
	db := &racingDB{t: t, c: srv.Client(t), races: 1}
	ns, _, logs := newPlugin(t, thisNode, db)
	if err := resync(ns, 1, kubeState()); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	if id := ns.GetNodeID(); id != 2 {
		t.Fatalf("GetNodeID = %d, want 2 (the racer took 1)", id)
	}
	recs, _ := allocations(t, db.c)
	if got := names(recs); got != "1=racer1 2=node1" {
		t.Errorf("etcd holds %q", got)
	}
	var attempts any
	for _, e := range logs.AllEntries() {
		if e.Message == "node ID allocated" {
			attempts = e.Data["attempts"]
		}
	}
	if attempts != 2 {
		t.Errorf("allocation logged %v attempts, want 2", attempts)
	}
}

func TestAllocationGivesUpAfterMaxAttempts(t *testing.T) {
	srv := etcdtest.Start(t)
	db := &racingDB{t: t, c: srv.Client(t), races: 100}
	ns, _, _ := newPlugin(t, thisNode, db)
	err := resync(ns, 1, kubeState())
	if !api.IsFatal(err) {
		t.Fatalf("Resync error %v, want a fatal error", err)
	}
	want := fmt.Sprintf("node ID allocation for node %s failed after %d attempts: ", thisNode, MaxAllocationAttempts)
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "taken by another node") {
		t.Errorf("error %q, want it to contain %q and the cause", err, want)
	}
	if len(db.won) != MaxAllocationAttempts {
		t.Errorf("%d attempts were made, want %d", len(db.won), MaxAllocationAttempts)
	}
	if ns.GetNodeID() != 0 {
		t.Errorf("GetNodeID = %d after a failed allocation", ns.GetNodeID())
	}
	recs, _ := allocations(t, db.c)
	for _, r := range recs {
		if r.GetName() == thisNode {
			t.Errorf("etcd holds an allocation of this node: %v", r)
		}
	}
}

func TestMissingDatabaseAtStartIsFatal(t *testing.T) {
	for name, db := range map[string]DB{"no database": nil, "not connected": downDB{}} {
		t.Run(name, func(t *testing.T) {
			ns, _, _ := newPlugin(t, thisNode, db)
			err := resync(ns, 1, kubeState(vppNode(1, "other")))
			if !api.IsFatal(err) || !errors.Is(err, ErrNoDatabase) {
				t.Fatalf("Resync error %v, want a fatal ErrNoDatabase", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "cannot allocate a node ID for "+thisNode) ||
				strings.Count(msg, "database is not connected") != 1 {
				t.Errorf("error %q should name the node and say once that the database is not connected", msg)
			}
		})
	}
}

func TestLaterResyncFailureIsNotFatalAndKeepsTheID(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	db := &switchDB{db: clientDB{c}}
	ns, _, _ := newPlugin(t, thisNode, db)
	putVppNode(t, c, vppNode(1, "a"))
	if err := resync(ns, 1, kubeState(vppNode(1, "a"))); err != nil {
		t.Fatal(err)
	}
	if ns.GetNodeID() != 2 {
		t.Fatalf("GetNodeID = %d, want 2", ns.GetNodeID())
	}

	// The node's record disappears and etcd goes away: the resync fails, not fatally,
	// and the node keeps its ID and the rest of the new state.
	db.set(downDB{})
	err := resync(ns, 2, kubeState(vppNode(1, "a"), vppNode(3, "c")))
	if err == nil || api.IsFatal(err) || !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("Resync error %v, want a non-fatal ErrNoDatabase", err)
	}
	if ns.GetNodeID() != 2 {
		t.Errorf("GetNodeID = %d, want 2", ns.GetNodeID())
	}
	if _, ok := ns.GetAllNodes()["c"]; !ok {
		t.Error("the node map was not rebuilt")
	}

	// With etcd back and its record still gone, the node claims its former ID 2 again
	// although 1 has become the smallest free ID: its subnets stay what they were.
	db.set(clientDB{c})
	if _, err := c.Delete(context.Background(), etcdKey(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(context.Background(), etcdKey(1)); err != nil {
		t.Fatal(err)
	}
	if err := resync(ns, 3, kubeState(vppNode(3, "c"))); err != nil {
		t.Fatal(err)
	}
	if ns.GetNodeID() != 2 {
		t.Errorf("GetNodeID = %d, want the former ID 2 although 1 is free", ns.GetNodeID())
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "2=node1" && got != "2=node1 3=c" {
		t.Errorf("etcd holds %q", got)
	}
}

// switchDB is a DB whose backing DB the test can replace.
type switchDB struct {
	mu sync.Mutex
	db DB
}

func (s *switchDB) set(db DB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.db = db
}

func (s *switchDB) KV() (clientv3.KV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.KV()
}

func TestPublishNodeIPs(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	ns, loop, _ := newPlugin(t, thisNode, clientDB{c})

	cidr := func(s string) *net.IPNet {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return &net.IPNet{IP: ip, Mask: n.Mask}
	}
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("192.168.16.1/24")}, IPv4); err == nil || !strings.Contains(err.Error(), "no ID") {
		t.Errorf("publish before the ID is known: %v", err)
	}
	if err := resync(ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	record := func() (*vppnode.VppNode, int64) {
		recs, revs := allocations(t, c)
		return recs[1], revs[1]
	}

	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("192.168.16.1/24")}, IPv4); err != nil {
		t.Fatalf("publish: %v", err)
	}
	rec, rev := record()
	if !slices.Equal(rec.GetIpAddresses(), []string{"192.168.16.1/24"}) || rec.GetName() != thisNode || rec.GetId() != 1 {
		t.Fatalf("record %v", rec)
	}
	if got := ns.GetAllNodes()[thisNode].String(); got != `ID=1 name=node1 vpp-ips=[192.168.16.1/24] mgmt-ips=[] pod-cidr=""` {
		t.Errorf("this node: %s", got)
	}

	// The same addresses again: nothing is written.
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("192.168.16.1/24")}, IPv4); err != nil {
		t.Fatal(err)
	}
	if _, rev2 := record(); rev2 != rev {
		t.Errorf("unchanged addresses rewritten (revision %d -> %d)", rev, rev2)
	}

	// IPv6 addresses are added to the IPv4 ones; replacing IPv4 keeps IPv6.
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("fd00::1/64")}, IPv6); err != nil {
		t.Fatal(err)
	}
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("192.168.16.11/24"), cidr("192.168.17.1/24")}, IPv4); err != nil {
		t.Fatal(err)
	}
	if rec, _ := record(); !slices.Equal(rec.GetIpAddresses(), []string{"192.168.16.11/24", "192.168.17.1/24", "fd00::1/64"}) {
		t.Errorf("addresses %v", rec.GetIpAddresses())
	}

	// The echo of the write changes nothing and reports nothing for this node.
	rec, _ = record()
	if _, err := ns.Update(&api.KubeStateChange{Resource: vppnode.Keyword, Key: vppnode.Key(1), NewValue: rec}, nil); err != nil {
		t.Fatal(err)
	}
	if evs := loop.take(); len(evs) != 0 {
		t.Errorf("events for this node's own record: %d", len(evs))
	}

	// Wrong family, another node's record under this ID, no database.
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("fd00::2/64")}, IPv4); err == nil || !strings.Contains(err.Error(), "not an IPv4 address") {
		t.Errorf("IPv6 address published as IPv4: %v", err)
	}
	if err := ns.PublishNodeIPs(nil, IPVersion(5)); err == nil {
		t.Error("unknown IP version accepted")
	}
	putVppNode(t, c, vppNode(1, "intruder"))
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("192.168.16.12/24")}, IPv4); err == nil || !strings.Contains(err.Error(), `belongs to node "intruder"`) {
		t.Errorf("publish over another node's record: %v", err)
	}
	ns.DB = downDB{}
	if err := ns.PublishNodeIPs([]*net.IPNet{cidr("192.168.16.13/24")}, IPv4); !errors.Is(err, ErrNoDatabase) {
		t.Errorf("publish without a database: %v", err)
	}
}

func TestPublishNodeIPsRecreatesAMissingRecord(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	ns, _, _ := newPlugin(t, thisNode, clientDB{c})
	// This node's ID comes from the snapshot; etcd lost the record.
	if err := resync(ns, 1, kubeState(vppNode(4, thisNode))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(context.Background(), etcdKey(4)); err != nil {
		t.Fatal(err)
	}
	if err := ns.PublishNodeIPs([]*net.IPNet{{IP: net.ParseIP("192.168.16.4"), Mask: net.CIDRMask(24, 32)}}, IPv4); err != nil {
		t.Fatal(err)
	}
	recs, _ := allocations(t, c)
	if r := recs[4]; r.GetName() != thisNode || !slices.Equal(r.GetIpAddresses(), []string{"192.168.16.4/24"}) {
		t.Errorf("record %v", r)
	}
}

func TestCloseAbortsAnAllocationInFlight(t *testing.T) {
	// Nothing listens on the endpoint: every request waits for its timeout unless
	// Close cancels it.
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inFlight := make(chan struct{})
	ns, _, _ := newPlugin(t, thisNode, startedDB{clientDB{c}, inFlight, &sync.Once{}})
	go func() {
		<-inFlight
		ns.Close()
	}()
	start := time.Now()
	err = resync(ns, 1, kubeState())
	if !api.IsFatal(err) || !strings.Contains(err.Error(), "cancel") {
		t.Errorf("Resync error %v, want a fatal error saying it was canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v to abort the allocation", d)
	}
}

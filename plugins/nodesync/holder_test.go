package nodesync

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/dbwatcher"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// leaseDB is a DB over an etcd client that grants leases, as dbwatcher does.
type leaseDB struct{ c *clientv3.Client }

func (d leaseDB) KV() (clientv3.KV, error)       { return d.c.KV, nil }
func (d leaseDB) Lease() (clientv3.Lease, error) { return d.c.Lease, nil }

// testLeaseTTL is long enough that no lease expires in real time during a test: the
// renewals follow the fake clock.
const testLeaseTTL = time.Minute

// holderNode is one node's plugin with the parts a test of ID ownership looks at.
type holderNode struct {
	ns   *NodeSync
	clk  *testkit.Clock
	reg  *health.Registry
	prom *prometheus.Registry
	logs *test.Hook
}

// startNode initialises the plugin of a node that holds its ID under leases from c;
// idFile may be "".
func startNode(t *testing.T, name string, c *clientv3.Client, idFile string) *holderNode {
	t.Helper()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	n := &holderNode{clk: testkit.NewClock(), reg: health.NewRegistry(), prom: prometheus.NewRegistry(), logs: hook}
	n.ns = NewNodeSync(Deps{Log: log, NodeName: name, DB: leaseDB{c}, EventLoop: &fakeLoop{}, IDFile: idFile,
		LeaseTTL: testLeaseTTL, Clock: n.clk, Health: n.reg.Reporter("nodeid"), Registerer: n.prom})
	if err := n.ns.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = n.ns.Close() })
	return n
}

// roundsUntil makes the node's holder run periodic rounds, stepping the fake clock by
// the renewal interval, until cond holds.
func (n *holderNode) roundsUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, what, func() bool {
		if cond() {
			return true
		}
		n.clk.Step(testLeaseTTL / 3)
		return false
	})
}

// holder reads nodeIDHolders/<id>: the node name and the lease ("" and 0 when absent).
func holder(t *testing.T, c *clientv3.Client, id uint32) (string, clientv3.LeaseID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, holderKey(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), clientv3.LeaseID(resp.Kvs[0].Lease)
}

// deleteRecord deletes allocatedIDs/<id>, as contiv-ksr does when the Node is deleted.
func deleteRecord(t *testing.T, c *clientv3.Client, id uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Delete(ctx, etcdKey(id)); err != nil {
		t.Fatal(err)
	}
}

// TestDeletedRecordOfARunningNodeIsNeverAllocatedAgain is the regression test of
// issue #27, item 2: contiv-ksr deleted the allocatedIDs record of a running node (its
// Node object was deleted) and a joining node took the same ID. A running node holds
// its ID under its lease: the joining node gets another ID, and the running node
// re-creates its record (with its published IPs) when it sees it deleted.
func TestDeletedRecordOfARunningNodeIsNeverAllocatedAgain(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	n1 := startNode(t, "node1", c, "")
	if err := resync(n1.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	if id := n1.ns.GetNodeID(); id != 1 {
		t.Fatalf("node1 got ID %d, want 1", id)
	}
	_, ipNet, _ := net.ParseCIDR("192.168.16.0/24")
	ipNet.IP = net.ParseIP("192.168.16.1").To4()
	if err := n1.ns.PublishNodeIPs([]*net.IPNet{ipNet}, IPv4); err != nil {
		t.Fatal(err)
	}
	published := vppNode(1, "node1", "192.168.16.1/24")

	deleteRecord(t, c, 1)
	n2 := startNode(t, "node2", c, "")
	if err := resync(n2.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	if id := n2.ns.GetNodeID(); id == 1 {
		t.Fatal("the joining node took ID 1, held by the running node1")
	}

	// dbwatcher delivers the deletion to node1.
	if _, err := n1.ns.Update(&api.KubeStateChange{Resource: vppnode.Keyword, Key: vppnode.Key(1), PrevValue: published}, nil); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, testkit.DefaultTimeout, "node1's record re-created", func() error {
		recs, _ := allocations(t, c)
		if got := names(recs); got != "1=node1 2=node2" {
			return fmt.Errorf("etcd holds %q, want 1=node1 2=node2", got)
		}
		return nil
	})
	recs, _ := allocations(t, c)
	if got := recs[1].GetIpAddresses(); len(got) != 1 || got[0] != "192.168.16.1/24" {
		t.Errorf("re-created record has addresses %v, want the published 192.168.16.1/24", got)
	}
	// counted just after the write
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "contiv_nodesync_node_id_reclaims_total = 1", func() bool {
		return testutil.ToFloat64(n1.ns.metrics.reclaims) == 1
	})
	if ids := []uint32{n1.ns.GetNodeID(), n2.ns.GetNodeID()}; ids[0] != 1 || ids[1] != 2 {
		t.Errorf("node IDs %v, want [1 2]", ids)
	}
}

// TestDeletedRecordIsReCreatedByTheRenewalRound: without the deletion event (a watch
// that missed it, the agent running from the bolt mirror) the periodic round re-creates
// the record.
func TestDeletedRecordIsReCreatedByTheRenewalRound(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	n1 := startNode(t, "node1", c, "")
	if err := resync(n1.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	deleteRecord(t, c, 1)
	n1.roundsUntil(t, "record re-created", func() bool {
		recs, _ := allocations(t, c)
		return names(recs) == "1=node1"
	})
}

// TestExpiredLeaseIsReplacedAndTheIDHeldAgain: a lease lost (etcd unreachable for
// longer than its TTL; here revoked) is replaced at the next round and the ID held
// again under the new one.
func TestExpiredLeaseIsReplacedAndTheIDHeldAgain(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	n1 := startNode(t, "node1", c, "")
	if err := resync(n1.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	name, lease := holder(t, c, 1)
	if name != "node1" || lease == 0 {
		t.Fatalf("holder of ID 1 = %q under lease %x, want node1 under a lease", name, lease)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if name, _ := holder(t, c, 1); name != "" {
		t.Fatalf("holder key survived its lease: %q", name)
	}
	n1.roundsUntil(t, "ID 1 held again under a new lease", func() bool {
		name, l := holder(t, c, 1)
		return name == "node1" && l != 0 && l != lease
	})
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=node1" {
		t.Errorf("etcd holds %q, want 1=node1", got)
	}
}

// TestRestartedNodeTakesItsIDBackFromItsPreviousRun: a node's agent restarted (its
// previous run's lease still alive) after its record was deleted. A node joining
// meanwhile does not take the ID; the restarted node takes it back (ID file), its
// record re-created and its holder key moved to its new lease.
func TestRestartedNodeTakesItsIDBackFromItsPreviousRun(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	idFile := filepath.Join(t.TempDir(), "node-id")
	first := startNode(t, "node1", c, idFile)
	if err := resync(first.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	_, oldLease := holder(t, c, 1)
	// The agent dies without releasing its lease (no Close); contiv-ksr deletes the
	// record meanwhile.
	first.ns.cancel()
	first.ns.wg.Wait()
	deleteRecord(t, c, 1)

	n2 := startNode(t, "node2", c, "")
	if err := resync(n2.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	if id := n2.ns.GetNodeID(); id != 2 {
		t.Fatalf("the joining node got ID %d, want 2 (ID 1 is held by node1's lease)", id)
	}

	restarted := startNode(t, "node1", c, idFile)
	if err := resync(restarted.ns, 1, kubeState(vppNode(2, "node2"))); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if id := restarted.ns.GetNodeID(); id != 1 {
		t.Fatalf("restarted node1 got ID %d, want its own 1", id)
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=node1 2=node2" {
		t.Errorf("etcd holds %q, want 1=node1 2=node2", got)
	}
	if name, l := holder(t, c, 1); name != "node1" || l == oldLease || l == 0 {
		t.Errorf("holder of ID 1 = %q under lease %x, want node1 under its new lease (old %x)", name, l, oldLease)
	}
}

// TestIDTakenWhileTheLeaseWasLostIsAConflictNeverShared: node1 lost its lease (etcd
// unreachable beyond the TTL) and its record was deleted meanwhile, so another node
// rightly got ID 1. node1 must neither take the ID back nor move to another one: it
// reports the conflict (error log, health DEGRADED, metric) and a restart of node1 is
// refused naming the other node.
func TestIDTakenWhileTheLeaseWasLostIsAConflictNeverShared(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	idFile := filepath.Join(t.TempDir(), "node-id")
	n1 := startNode(t, "node1", c, idFile)
	if err := resync(n1.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	_, lease := holder(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	deleteRecord(t, c, 1)
	other := startNode(t, "other", c, "")
	if err := resync(other.ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	if id := other.ns.GetNodeID(); id != 1 {
		t.Fatalf("other got ID %d, want the free ID 1", id)
	}

	n1.roundsUntil(t, "node1 reports the conflict", func() bool {
		return n1.reg.Status().Components["nodeid"].State == health.Degraded
	})
	if h := n1.reg.Status().Components["nodeid"]; !strings.Contains(h.Reason, `"other"`) || !strings.Contains(h.Reason, "node ID 1") {
		t.Errorf("health reason %q: want it to name node ID 1 and node \"other\"", h.Reason)
	}
	if v := testutil.ToFloat64(n1.ns.metrics.conflict); v != 1 {
		t.Errorf("contiv_nodesync_node_id_conflict = %v, want 1", v)
	}
	conflictLogged := false
	for _, e := range n1.logs.AllEntries() {
		if e.Level == logrus.ErrorLevel && strings.Contains(e.Message, "node ID conflict") {
			conflictLogged = true
		}
	}
	if !conflictLogged {
		t.Error("the conflict was not logged at error level")
	}
	if name, _ := holder(t, c, 1); name != "other" {
		t.Errorf("holder of ID 1 = %q: node1 must not take it back from a running node", name)
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=other" {
		t.Errorf("etcd holds %q, want 1=other untouched", got)
	}
	if id := n1.ns.GetNodeID(); id != 1 {
		t.Errorf("node1 moved to ID %d: it must keep its ID and report", id)
	}

	// The other node's lease lapses (its agent stopped): its record still gives it the
	// ID, so node1 does not take the ID either.
	_, otherLease := holder(t, c, 1)
	if _, err := c.Revoke(ctx, otherLease); err != nil {
		t.Fatal(err)
	}
	conflicts := func() int {
		n := 0
		for _, e := range n1.logs.AllEntries() {
			if e.Level == logrus.ErrorLevel && strings.Contains(e.Message, "node ID conflict") {
				n++
			}
		}
		return n
	}
	before := conflicts()
	n1.roundsUntil(t, "two more rounds of node1", func() bool { return conflicts() >= before+2 })
	if name, _ := holder(t, c, 1); name != "" {
		t.Errorf("holder of ID 1 = %q after the other node's lease lapsed: node1 must not take an ID whose record names another node", name)
	}
	if h := n1.reg.Status().Components["nodeid"]; h.State != health.Degraded {
		t.Errorf("node1's nodeid health %+v, want DEGRADED still", h)
	}

	// node1 restarts: refused, naming the other node.
	restarted := startNode(t, "node1", c, idFile)
	err := resync(restarted.ns, 1, kubeState(vppNode(1, "other")))
	if !api.IsFatal(err) || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("restart of node1: %v, want a fatal refusal naming \"other\"", err)
	}
}

// staticConfig is an infra.ConfigLoader of YAML text.
type staticConfig string

func (s staticConfig) LoadConfig(out any) (bool, error) {
	return true, infra.ParseConfig([]byte(s), out, true, nil)
}

// TestTheDBWatcherGrantsTheLeasesThatHoldIDs runs the scenario of issue #27, item 2 with
// the agent's own database, the DB watcher: its leases hold node1's ID while node1 runs,
// so a node joining after the record was deleted gets another ID.
func TestTheDBWatcherGrantsTheLeasesThatHoldIDs(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	watcher := func(name string) *dbwatcher.DBWatcher {
		w := dbwatcher.NewDBWatcher(dbwatcher.Deps{
			Log: logrus.New(), NodeName: name, EventLoop: &fakeLoop{},
			EtcdConfig:              staticConfig(fmt.Sprintf("endpoints: [%q]\ninsecure-transport: true\ndial-timeout: 5s\n", srv.Endpoint())),
			BoltConfig:              staticConfig(fmt.Sprintf("db-path: %s\n", filepath.Join(t.TempDir(), "bolt.db"))),
			RemoteDBProbingInterval: 50 * time.Millisecond,
		})
		if err := w.Init(); err != nil {
			t.Fatal(err)
		}
		if err := w.AfterInit(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		testkit.EventuallyTrue(t, testkit.DefaultTimeout, name+"'s watcher connected", w.IsConnected)
		return w
	}
	var _ LeaseDB = (*dbwatcher.DBWatcher)(nil)
	start := func(name string) *NodeSync {
		ns := NewNodeSync(Deps{Log: logrus.New(), NodeName: name, DB: watcher(name), EventLoop: &fakeLoop{},
			LeaseTTL: testLeaseTTL, Clock: testkit.NewClock()})
		if err := ns.Init(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ns.Close() })
		if err := resync(ns, 1, kubeState()); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	n1 := start("node1")
	if name, lease := holder(t, c, 1); n1.GetNodeID() != 1 || name != "node1" || lease == 0 {
		t.Fatalf("node1: ID %d, holder of ID 1 %q under lease %x; want ID 1 held by node1 under a lease", n1.GetNodeID(), name, lease)
	}
	deleteRecord(t, c, 1)
	if n2 := start("node2"); n2.GetNodeID() != 2 {
		t.Errorf("node2 got ID %d, want 2: ID 1 is held by the running node1", n2.GetNodeID())
	}
}

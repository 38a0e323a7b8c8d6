package dbwatcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// sample is one object of each resource in two versions.
type sample struct {
	resource string
	key      string // relative to the KSR prefix
	v1, v2   proto.Message
}

func samples() []sample {
	return []sample{
		{vppnode.Keyword, vppnode.Key(1),
			&vppnode.VppNode{Id: 1, Name: "k8s-master"},
			&vppnode.VppNode{Id: 1, Name: "k8s-master", IpAddresses: []string{"192.168.16.1/24"}}},
		{nodeconfig.Keyword, nodeconfig.Key("k8s-master"),
			&nodeconfig.NodeConfig{NodeName: "k8s-master", MainVppInterface: &nodeconfig.NodeConfig_InterfaceConfig{InterfaceName: "GigabitEthernet0/8/0"}},
			&nodeconfig.NodeConfig{NodeName: "k8s-master", MainVppInterface: &nodeconfig.NodeConfig_InterfaceConfig{InterfaceName: "GigabitEthernet0/8/0", UseDhcp: true}}},
		{node.Keyword, node.Key("k8s-master"),
			&node.Node{Name: "k8s-master"},
			&node.Node{Name: "k8s-master", Addresses: []*node.NodeAddress{{Type: node.NodeAddress_NodeInternalIP, Address: "10.20.0.2"}}}},
		{pod.Keyword, pod.Key("web", "default"),
			&pod.Pod{Name: "web", Namespace: "default"},
			&pod.Pod{Name: "web", Namespace: "default", IpAddress: "10.1.1.3"}},
		{namespace.Keyword, namespace.Key("default"),
			&namespace.Namespace{Name: "default"},
			&namespace.Namespace{Name: "default", Label: []*namespace.Namespace_Label{{Key: "team", Value: "a"}}}},
		{policy.Keyword, policy.Key("deny", "default"),
			&policy.Policy{Name: "deny", Namespace: "default"},
			&policy.Policy{Name: "deny", Namespace: "default", PolicyType: policy.Policy_INGRESS}},
		{service.Keyword, service.Key("web", "default"),
			&service.Service{Name: "web", Namespace: "default", ClusterIp: "10.96.0.10"},
			&service.Service{Name: "web", Namespace: "default", ClusterIp: "10.96.0.10", Port: []*service.Service_ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}},
		{endpoints.Keyword, endpoints.Key("web", "default"),
			&endpoints.Endpoints{Name: "web", Namespace: "default"},
			&endpoints.Endpoints{Name: "web", Namespace: "default", EndpointSubsets: []*endpoints.EndpointSubset{{Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.1.3"}}}}}},
	}
}

func podKey(name string) string { return pod.Key(name, "default") }

func testPod(name, ip string) *pod.Pod {
	return &pod.Pod{Name: name, Namespace: "default", IpAddress: ip}
}

func externalKey(node, rel string) string { return ksrkey.AgentPrefix(node) + rel }

func TestInitialRemoteResyncDeliversEveryResourceAndExternalConfig(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	want := map[string]map[string]proto.Message{}
	for _, s := range samples() {
		db.putKube(s.key, s.v1)
		want[s.resource] = map[string]proto.Message{s.key: s.v1}
	}
	db.put(ksrkey.KsrPrefix+"k8s/sfc/x", []byte(`{}`))                               // unknown resource
	db.put(externalKey(testNode, "config/test/a"), []byte("A"))                      // external config
	db.put(externalKey(testNode, "check/status/v1/agent"), []byte(`{"state":"OK"}`)) // not configuration
	db.put(externalKey("node2", "config/test/b"), []byte("B"))                       // another node's
	db.put("/vnf-agent/contiv-ksr-other/k8s/pod/x/namespace/default", []byte(`{}`))  // another label

	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	evs := h.loop.waitForCount(t, 1)
	r, ok := evs[0].(*api.DBResync)
	if !ok || r.Local {
		t.Fatalf("first event %s, want a remote DB resync", evs[0])
	}
	assertKubeState(t, "resync", r.KubeState, want)
	if len(r.ExternalConfig) != 1 || !proto.Equal(r.ExternalConfig["config/test/a"], wrapperspb.String("A")) {
		t.Errorf("external config %v, want only config/test/a = A", r.ExternalConfig)
	}
	if !h.w.IsConnected() {
		t.Error("IsConnected false after a remote resync")
	}
	if got := h.status.get(); len(got) == 0 || !got[len(got)-1] {
		t.Errorf("status reports %v, want connected last", got)
	}

	// The Kubernetes part is mirrored into bolt, keys relative to the KSR prefix (the
	// writer was given the snapshot before the resync was delivered).
	h.w.mirrorW.flush()
	mirrored, err := h.w.local.loadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(mirrored) != len(samples()) {
		t.Errorf("bolt mirror has %v, want the %d resources", sortedKeys(mirrored), len(samples()))
	}

	// No local resync follows while etcd is connected.
	time.Sleep(2 * testLocalDelay) // real time: the local resync delay runs on the real clock here
	if evs := h.loop.snapshot(); len(evs) != 1 {
		t.Errorf("unexpected events after the resync:\n%s", describe(evs))
	}
	if n := testutil.ToFloat64(h.w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeOK)); n != 1 {
		t.Errorf("remote ok resyncs = %v", n)
	}
	if n := testutil.ToFloat64(h.w.metrics.connected); n != 1 {
		t.Errorf("connected gauge = %v", n)
	}
	if !h.logged(logrus.DebugLevel, "key of no known resource ignored", ksrkey.KsrPrefix+"k8s/sfc/x") {
		t.Error("unknown key not logged")
	}
}

func TestChangesOfEveryResourceBecomeKubeStateChanges(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	h.loop.waitForCount(t, 1)

	for _, s := range samples() {
		t.Run(s.resource, func(t *testing.T) {
			// Each step waits for its event: changes pending together would coalesce.
			n := len(h.loop.snapshot())
			db.putKube(s.key, s.v1)
			h.loop.waitForCount(t, n+1)
			db.putKube(s.key, s.v2)
			h.loop.waitForCount(t, n+2)
			db.putKube(s.key, s.v2) // rewritten unchanged: no event
			db.del(ksrkey.KsrPrefix + s.key)
			evs := h.loop.waitForCount(t, n+3)[n:]
			want := []struct{ prev, next proto.Message }{{nil, s.v1}, {s.v1, s.v2}, {s.v2, nil}}
			for i, w := range want {
				c, ok := evs[i].(*api.KubeStateChange)
				if !ok {
					t.Fatalf("event %d is %s, want a KubeStateChange", i, evs[i])
				}
				if c.Key != s.key || c.Resource != s.resource || !equalOrNil(c.PrevValue, w.prev) || !equalOrNil(c.NewValue, w.next) {
					t.Errorf("event %d = %s prev %v new %v, want key %s prev %v new %v", i, c, c.PrevValue, c.NewValue, s.key, w.prev, w.next)
				}
			}
			if n := testutil.ToFloat64(h.w.metrics.changes.WithLabelValues(s.resource)); n != 3 {
				t.Errorf("changes_total{%s} = %v, want 3", s.resource, n)
			}
		})
	}
	if evs := h.barrier(t, db, "barrier"); len(evs) != 1+3*len(samples()) {
		t.Errorf("%d events, want %d:\n%s", len(evs), 1+3*len(samples()), describe(evs))
	}
	h.w.mirrorW.flush()
	if mirrored, _ := h.w.local.loadAll(); len(mirrored) != 1 {
		t.Errorf("mirror holds %v, want only the barrier (the other keys were deleted)", sortedKeys(mirrored))
	}
}

func TestExternalConfigChangesOfThisNode(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	h.loop.waitForCount(t, 1)

	db.put(externalKey("node2", "config/test/a"), []byte("other node"))
	db.put(externalKey(testNode, "status/x"), []byte("not configuration"))
	// Each step waits for its event: changes pending together would coalesce.
	db.put(externalKey(testNode, "config/test/a"), []byte("1"))
	h.loop.waitForCount(t, 2)
	db.put(externalKey(testNode, "config/test/a"), []byte("2"))
	h.loop.waitForCount(t, 3)
	db.del(externalKey(testNode, "config/test/a"))
	evs := h.loop.waitForCount(t, 4)[1:]
	want := []proto.Message{wrapperspb.String("1"), wrapperspb.String("2"), nil}
	for i, w := range want {
		c, ok := evs[i].(*api.ExternalConfigChange)
		if !ok {
			t.Fatalf("event %d is %s, want an ExternalConfigChange", i, evs[i])
		}
		v, has := c.UpdatedKVs["config/test/a"]
		if c.Source != "db" || c.IsBlocking() || len(c.UpdatedKVs) != 1 || !has || !equalOrNil(v, w) {
			t.Errorf("event %d = %s %v, want config/test/a = %v from db", i, c, c.UpdatedKVs, w)
		}
	}
	// A barrier on the external watch: whatever it delivers of the keys written before
	// is delivered before the barrier.
	db.put(externalKey(testNode, "config/test/barrier"), []byte("b"))
	evs = h.loop.waitFor(t, "the barrier", func(evs []api.Event) bool {
		c, ok := evs[len(evs)-1].(*api.ExternalConfigChange)
		if !ok {
			return false
		}
		_, barrier := c.UpdatedKVs["config/test/barrier"]
		return barrier
	})
	if n := len(evs); n != 5 {
		t.Errorf("%d events before the barrier, want 4:\n%s", n-1, describe(evs))
	}
}

func TestEtcdRestartResyncsWithoutLosingOrReplayingChanges(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	db.putKube(podKey("a"), testPod("a", "10.1.1.1"))
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	h.loop.waitForCount(t, 1)
	db.putKube(podKey("b"), testPod("b", "10.1.1.2"))
	h.loop.waitForCount(t, 2)

	// etcd goes away; while the watcher cannot see it, the state changes (served on
	// another client port, so only the test reaches it).
	te.Stop()
	testkit.EventuallyTrue(t, waitTimeout, "the watcher sees etcd down", func() bool { return !h.w.IsConnected() })
	before := len(h.loop.snapshot())
	te.StartOnPort(etcdtest.FreePort(t))
	hidden := kv{t, te.Client(t)}
	hidden.putKube(podKey("a"), testPod("a", "10.1.1.100"))
	hidden.del(ksrkey.KsrPrefix + podKey("b"))
	hidden.putKube(podKey("c"), testPod("c", "10.1.1.3"))
	te.Stop()
	te.Start()

	evs := h.loop.waitFor(t, "a remote resync after the restart", func(evs []api.Event) bool {
		return countResyncs(evs[before:], false) > 0
	})
	for _, ev := range evs[before:] {
		if _, ok := ev.(*api.DBResync); !ok {
			t.Errorf("after the restart got %s, want only the resync", ev)
		}
	}
	last := resyncs(evs)[len(resyncs(evs))-1]
	assertKubeState(t, "resync after restart", last.KubeState, map[string]map[string]proto.Message{
		pod.Keyword: {podKey("a"): testPod("a", "10.1.1.100"), podKey("c"): testPod("c", "10.1.1.3")},
	})

	// Watching resumes from the resynced state.
	db = kv{t, te.Client(t)}
	db.putKube(podKey("d"), testPod("d", "10.1.1.4"))
	db.putKube(podKey("c"), testPod("c", "10.1.1.33"))
	evs = h.loop.waitForCount(t, len(evs)+2)
	m := replay(t, evs)
	assertKubeState(t, "replayed state", m.kube, map[string]map[string]proto.Message{
		pod.Keyword: {
			podKey("a"): testPod("a", "10.1.1.100"),
			podKey("c"): testPod("c", "10.1.1.33"),
			podKey("d"): testPod("d", "10.1.1.4"),
		},
	})
	if got := h.status.get(); len(got) < 3 || !got[0] || got[1] || !got[len(got)-1] {
		t.Errorf("status reports %v, want connected, disconnected, ..., connected", got)
	}
	if n := countResyncs(h.loop.snapshot(), true); n != 0 {
		t.Errorf("%d local resyncs, want none", n)
	}
}

func TestStartWithoutEtcdResyncsFromLocalMirrorThenFromEtcd(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	for _, s := range samples() {
		db.putKube(s.key, s.v1)
	}
	db.put(externalKey(testNode, "config/test/a"), []byte("A"))
	boltDir := t.TempDir()

	// A first run mirrors the state into bolt.
	first := newHarness(t, etcdConf(te.Endpoint(), false), boltDir)
	first.start(t)
	remote := first.loop.waitForCount(t, 1)[0].(*api.DBResync)
	if err := first.w.Close(); err != nil {
		t.Fatal(err)
	}

	te.Stop()
	second := newHarness(t, etcdConf(te.Endpoint(), true), boltDir)
	start := time.Now()
	second.start(t)
	evs := second.loop.waitForCount(t, 1)
	local, ok := evs[0].(*api.DBResync)
	if !ok || !local.Local {
		t.Fatalf("first event %s, want a local DB resync", evs[0])
	}
	if waited := time.Since(start); waited < testLocalDelay {
		t.Errorf("local resync after %v, want it after delayLocalResync %v", waited, testLocalDelay)
	}
	want := map[string]map[string]proto.Message{}
	for res, kvs := range remote.KubeState {
		want[res] = map[string]proto.Message(kvs)
	}
	assertKubeState(t, "local resync", local.KubeState, want)
	if len(local.ExternalConfig) != 0 {
		t.Errorf("local resync carries external config %v", local.ExternalConfig)
	}
	testkit.EventuallyTrue(t, waitTimeout, "the first probe is reported", func() bool { return len(second.status.get()) > 0 })
	if got := second.status.get(); len(got) != 1 || got[0] {
		t.Errorf("status reports %v, want one 'not connected'", got)
	}

	te.Start()
	evs = second.loop.waitFor(t, "a remote resync once etcd is up", func(evs []api.Event) bool {
		return countResyncs(evs, false) > 0
	})
	rr := resyncs(evs)[1]
	assertKubeState(t, "remote resync", rr.KubeState, want)
	if !proto.Equal(rr.ExternalConfig["config/test/a"], wrapperspb.String("A")) {
		t.Errorf("remote resync external config %v", rr.ExternalConfig)
	}
}

func TestEmptyLocalMirrorIsNotPushed(t *testing.T) {
	h := newHarness(t, etcdConf(fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t)), true), t.TempDir())
	h.start(t)
	testkit.EventuallyTrue(t, waitTimeout, "the local resync is skipped", func() bool {
		return testutil.ToFloat64(h.w.metrics.resyncs.WithLabelValues(sourceLocal, outcomeSkipped)) == 1
	})
	if evs := h.loop.snapshot(); len(evs) != 0 {
		t.Errorf("events from an empty mirror:\n%s", describe(evs))
	}
}

func TestInitFailsWhenEtcdIsDownAndDelayedStartNotAllowed(t *testing.T) {
	ep := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	w := NewDBWatcher(Deps{
		NodeName:   testNode,
		EventLoop:  newFakeLoop(),
		EtcdConfig: loader(fmt.Sprintf("endpoints: [%q]\ninsecure-transport: true\ndial-timeout: 200ms\n", ep)),
		BoltConfig: boltConf(t.TempDir()),
		Log:        logrus.New(),
	})
	err := w.Init()
	if err == nil {
		w.Close()
		t.Fatal("Init succeeded without etcd")
	}
	for _, want := range []string{ep, "allow-delayed-start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	assertNoWatcherGoroutines(t)
}

func TestBadValuesAreLoggedCountedAndSkipped(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	db.putKube(podKey("good"), testPod("good", "10.1.1.1"))
	db.put(ksrkey.KsrPrefix+podKey("garbage"), []byte("not json"))
	db.put(ksrkey.KsrPrefix+service.Key("web", "default"), []byte(`{"port": "eighty"}`))
	db.put(externalKey(testNode, "config/test/bad"), []byte("!refused"))
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	r := h.loop.waitForCount(t, 1)[0].(*api.DBResync)
	assertKubeState(t, "resync", r.KubeState, map[string]map[string]proto.Message{
		pod.Keyword: {podKey("good"): testPod("good", "10.1.1.1")},
	})
	if len(r.ExternalConfig) != 0 {
		t.Errorf("refused external value delivered: %v", r.ExternalConfig)
	}
	if !h.logged(logrus.WarnLevel, "undecodable value skipped", ksrkey.KsrPrefix+podKey("garbage")) {
		t.Error("bad pod value not logged with its key")
	}

	// Garbage over a good value keeps the good one; later values still flow.
	db.put(ksrkey.KsrPrefix+podKey("good"), []byte("{broken"))
	db.put(ksrkey.KsrPrefix+podKey("new"), []byte("\x00\x01"))
	db.put(ksrkey.KsrPrefix+"k8s/unknown/x", []byte("whatever"))
	db.putKube(podKey("other"), testPod("other", "10.1.1.2"))
	db.putKube(podKey("good"), testPod("good", "10.1.1.9"))
	db.del(ksrkey.KsrPrefix + podKey("garbage"))
	evs := h.barrier(t, db, "barrier") // anything wrongly delivered shows up before it
	if len(evs) != 3 {
		t.Fatalf("%d events, want the resync and two changes:\n%s", len(evs), describe(evs))
	}
	replay(t, evs) // checks the good pod's update starts from its last good value
	if c := evs[2].(*api.KubeStateChange); !proto.Equal(c.PrevValue, testPod("good", "10.1.1.1")) {
		t.Errorf("update of the good pod starts from %v", c.PrevValue)
	}
	for res, want := range map[string]float64{pod.Keyword: 3, service.Keyword: 1, externalResource: 1} {
		if n := testutil.ToFloat64(h.w.metrics.badValues.WithLabelValues(res)); n != want {
			t.Errorf("bad_values_total{%s} = %v, want %v", res, n, want)
		}
	}
	if n, err := testutil.GatherAndCount(h.reg, "contiv_dbwatcher_bad_values_total"); err != nil || n != 3 {
		t.Errorf("registered bad value series: %d, %v", n, err)
	}
}

func TestRequestResyncDeliversTheCurrentState(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	h.loop.waitForCount(t, 1)
	db.putKube(podKey("a"), testPod("a", "10.1.1.1"))
	h.loop.waitForCount(t, 2)

	h.w.RequestResync()
	evs := h.loop.waitForCount(t, 3)
	r, ok := evs[2].(*api.DBResync)
	if !ok || r.Local {
		t.Fatalf("got %s, want a remote resync", evs[2])
	}
	assertKubeState(t, "requested resync", r.KubeState, map[string]map[string]proto.Message{
		pod.Keyword: {podKey("a"): testPod("a", "10.1.1.1")},
	})
	db.putKube(podKey("a"), testPod("a", "10.1.1.2"))
	replay(t, h.loop.waitForCount(t, 4))
}

func TestRefusedEventsAreMadeUpByAResync(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())

	// The first resync is refused once: it is retried.
	refusals := 0
	h.loop.setFail(func(ev api.Event) error {
		if _, ok := ev.(*api.DBResync); ok && refusals == 0 {
			refusals++
			return errors.New("queue full")
		}
		return nil
	})
	h.start(t)
	h.loop.waitForCount(t, 1)
	if n := testutil.ToFloat64(h.w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeError)); n != 1 {
		t.Errorf("failed remote resyncs = %v, want 1", n)
	}

	// A refused change is followed by a resync that contains it.
	h.loop.setFail(func(ev api.Event) error {
		if _, ok := ev.(*api.KubeStateChange); ok {
			return errors.New("queue full")
		}
		return nil
	})
	db.putKube(podKey("a"), testPod("a", "10.1.1.1"))
	evs := h.loop.waitForCount(t, 2)
	r, ok := evs[1].(*api.DBResync)
	if !ok {
		t.Fatalf("got %s, want a resync", evs[1])
	}
	assertKubeState(t, "resync after refusal", r.KubeState, map[string]map[string]proto.Message{
		pod.Keyword: {podKey("a"): testPod("a", "10.1.1.1")},
	})
}

func TestBurstOfChangesIsCoalescedWithoutAResync(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	// Generous etcd timeouts: on a loaded machine a slow probe must not look like a lost
	// connection, whose reconnection resyncs (that is not what this test is about).
	h := newHarness(t, slowEtcdConf(te.Endpoint()), t.TempDir())
	h.w.changes = make(chan change, 2) // a small queue: the watch must wait, not overflow
	db.putKube(podKey("seen"), testPod("seen", "10.1.0.1"))
	db.putKube(podKey("gone"), testPod("gone", "10.1.0.2"))
	h.start(t)
	h.loop.waitForCount(t, 1)

	// The event loop is busy (its first change blocks) while the burst arrives.
	gate := make(chan struct{})
	h.loop.mu.Lock()
	h.loop.gate = gate
	h.loop.mu.Unlock()
	db.putKube(podKey("first"), testPod("first", "10.1.0.3"))
	testkit.EventuallyTrue(t, waitTimeout, "the first change is being pushed", func() bool { return h.loop.waiting.Load() == 1 })

	const keys, rounds = 500, 20 // 10,000 changes
	c := te.Client(t)
	for r := range rounds {
		var ops []clientv3.Op
		for i := range keys {
			name := fmt.Sprint("p", i)
			data, err := dbresources.Marshal(testPod(name, fmt.Sprintf("10.2.%d.%d", r, i%250)))
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, clientv3.OpPut(ksrkey.KsrPrefix+podKey(name), string(data)))
			if len(ops) == 100 {
				if _, err := c.Txn(context.Background()).Then(ops...).Commit(); err != nil {
					t.Fatal(err)
				}
				ops = ops[:0]
			}
		}
	}
	// "seen" changes 100 times; "gone" is deleted and re-created with the same value;
	// "ghost" is created and deleted before the loop saw it.
	for i := range 100 {
		db.putKube(podKey("seen"), testPod("seen", fmt.Sprint("10.3.0.", i)))
	}
	db.del(ksrkey.KsrPrefix + podKey("gone"))
	db.putKube(podKey("gone"), testPod("gone", "10.1.0.2"))
	db.putKube(podKey("ghost"), testPod("ghost", "10.1.0.9"))
	db.del(ksrkey.KsrPrefix + podKey("ghost"))
	db.putKube(podKey("last"), testPod("last", "10.1.0.10"))
	// One pending change per key: the pods, seen, gone, ghost, last.
	testkit.EventuallyTrue(t, waitTimeout, "the burst is pending, one change per key", func() bool { return h.w.pending.len() == keys+4 })
	h.loop.mu.Lock()
	h.loop.gate = nil
	h.loop.mu.Unlock()
	close(gate)

	evs := h.loop.waitFor(t, "the last change", func(evs []api.Event) bool {
		ch, ok := evs[len(evs)-1].(*api.KubeStateChange)
		return ok && ch.Key == podKey("last")
	})
	if n := countResyncs(evs, false); n != 1 {
		t.Errorf("remote resyncs = %d, want only the first one", n)
	}
	if n := testutil.ToFloat64(h.w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeOK)); n != 1 {
		t.Errorf("resync metric = %v, want 1", n)
	}
	// 19 of the 20 rounds, 99 of "seen"'s changes, the re-creation of gone, the delete of ghost.
	if n, want := testutil.ToFloat64(h.w.metrics.coalesced), float64(keys*(rounds-1)+99+1+1); n != want {
		t.Errorf("coalesced changes = %v, want %v", n, want)
	}
	changes := evs[1:]
	// first, the 500 pods in the order they first changed, seen, last.
	if len(changes) != 1+keys+2 {
		t.Fatalf("%d change events, want %d:\n%s", len(changes), 1+keys+2, describe(changes[:min(len(changes), 10)]))
	}
	for i, ev := range changes {
		ch := ev.(*api.KubeStateChange)
		var want string
		switch {
		case i == 0:
			want = podKey("first")
		case i <= keys:
			want = podKey(fmt.Sprint("p", i-1))
		case i == keys+1:
			want = podKey("seen")
		default:
			want = podKey("last")
		}
		if ch.Key != want {
			t.Errorf("change %d is of %s, want %s", i, ch.Key, want)
		}
		if i >= 1 && i <= keys && (ch.PrevValue != nil || !proto.Equal(ch.NewValue, testPod(fmt.Sprint("p", i-1), fmt.Sprintf("10.2.%d.%d", rounds-1, (i-1)%250)))) {
			t.Errorf("change %d: %s, want an add of the last value", i, ch)
		}
	}
	seen := changes[keys+1].(*api.KubeStateChange)
	if !proto.Equal(seen.PrevValue, testPod("seen", "10.1.0.1")) || !proto.Equal(seen.NewValue, testPod("seen", "10.3.0.99")) {
		t.Errorf("100 changes of one key: prev %v new %v, want the original previous and the last value", seen.PrevValue, seen.NewValue)
	}
	m := replay(t, evs)
	if len(m.kube[pod.Keyword]) != keys+4 {
		t.Errorf("%d pods in the end, want %d", len(m.kube[pod.Keyword]), keys+4)
	}
}

func TestEtcdDisabledRunsFromLocalMirror(t *testing.T) {
	boltDir := t.TempDir()
	h := newHarness(t, nil, boltDir)
	h.start(t)
	evs := h.loop.waitForCount(t, 1)
	r, ok := evs[0].(*api.DBResync)
	if !ok || !r.Local {
		t.Fatalf("got %s, want a local resync at once", evs[0])
	}
	assertKubeState(t, "empty local resync", r.KubeState, nil)
	h.w.RequestResync()
	h.loop.waitForCount(t, 2)
	if h.w.IsConnected() || len(h.status.get()) != 0 {
		t.Errorf("etcd disabled but connected=%v, status %v", h.w.IsConnected(), h.status.get())
	}

	// A missing etcd.conf disables etcd too; the mirror written before is used.
	if err := h.w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := openLocalDB(BoltConfig{DBPath: h.w.boltCfg.DBPath, FileMode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := proto.Marshal(wrapperspb.String("x")) // not JSON: skipped
	if err := l.replaceAll(map[string][]byte{podKey("a"): []byte(`{"name":"a","namespace":"default"}`), podKey("b"): data}); err != nil {
		t.Fatal(err)
	}
	l.close()
	h2 := newHarness(t, missingFile{}, boltDir)
	h2.start(t)
	r = h2.loop.waitForCount(t, 1)[0].(*api.DBResync)
	assertKubeState(t, "local resync", r.KubeState, map[string]map[string]proto.Message{
		pod.Keyword: {podKey("a"): &pod.Pod{Name: "a", Namespace: "default"}},
	})
}

func TestCloseStopsEverythingAndMayBeRepeated(t *testing.T) {
	te := etcdtest.Start(t)
	db := kv{t, te.Client(t)}
	h := newHarness(t, etcdConf(te.Endpoint(), false), t.TempDir())
	h.start(t)
	h.loop.waitForCount(t, 1)
	db.putKube(podKey("a"), testPod("a", "10.1.1.1"))
	h.loop.waitForCount(t, 2)
	if err := h.w.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoWatcherGoroutines(t)
	if err := h.w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	n := len(h.loop.snapshot())
	db.putKube(podKey("b"), testPod("b", "10.1.1.2"))
	h.w.RequestResync()
	// No goroutine of the watcher is left to deliver them (checked above).
	if got := len(h.loop.snapshot()); got != n {
		t.Errorf("events after Close:\n%s", describe(h.loop.snapshot()[n:]))
	}
	if n, _ := testutil.GatherAndCount(h.reg); n != 0 {
		t.Errorf("%d metric series still registered after Close", n)
	}
}

func TestLocalResyncFollowsTheDelayOnTheClock(t *testing.T) {
	boltDir := t.TempDir()
	cfg := DefaultBoltConfig()
	if _, err := boltConf(boltDir).LoadConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	l, err := openLocalDB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := dbresources.Marshal(testPod("a", "10.1.1.1"))
	if err := l.apply(map[string][]byte{podKey("a"): data}); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}

	fc := testkit.NewClock()
	unreachable := etcdConf(fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t)), true)
	h := newHarness(t, unreachable, boltDir, func(d *Deps) {
		d.Clock = fc
		d.DelayLocalResync = time.Minute
	})
	h.start(t)
	fc.AwaitWaiters(t, 2)
	fc.Step(time.Minute - time.Nanosecond) // the first probe runs (and fails), the delay has not passed
	testkit.EventuallyTrue(t, waitTimeout, "the first probe", func() bool { return len(h.status.get()) == 1 })
	if evs := h.loop.snapshot(); len(evs) != 0 {
		t.Fatalf("events before delayLocalResync:\n%s", describe(evs))
	}
	fc.Step(time.Nanosecond)
	evs := h.loop.waitForCount(t, 1)
	if r, ok := evs[0].(*api.DBResync); !ok || !r.Local || len(r.KubeState[pod.Keyword]) != 1 {
		t.Fatalf("got %s, want the local resync of the mirror", evs[0])
	}
}

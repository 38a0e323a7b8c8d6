package ksr

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// informerCount is the number of informers one leadership term starts.
const informerCount = 7

const waitTimeout = 15 * time.Second

// cluster is a fake Kubernetes API plus an embedded etcd.
type cluster struct {
	t *testing.T
	// legacy is the LegacyEndpoints of the replicas started from now on (default true).
	legacy  bool
	etcd    *etcdtest.Server
	db      *clientv3.Client
	kube    *fake.Clientset
	watches atomic.Int64 // watch requests made to the fake API

	mu       sync.Mutex
	received map[string]bool // "namespace/name" of the objects whose watch events a watcher took
}

// relayWatch hands a fake watch's events to its reader one at a time and records each
// object the reader took: a test can then wait until contiv-ksr's informers have the
// event of an object it created, not merely until the fake API queued it.
type relayWatch struct {
	watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (c *cluster) relay(w watch.Interface) *relayWatch {
	r := &relayWatch{Interface: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(r.out)
		for ev := range w.ResultChan() {
			select {
			case r.out <- ev:
			case <-r.stop:
				return
			}
			if m, err := meta.Accessor(ev.Object); err == nil {
				c.mu.Lock()
				c.received[m.GetNamespace()+"/"+m.GetName()] = true
				c.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *relayWatch) ResultChan() <-chan watch.Event { return r.out }

func (r *relayWatch) Stop() {
	r.once.Do(func() { close(r.stop) })
	r.Interface.Stop()
}

// wasReceived reports whether a watcher took an event of the object namespace/name.
func (c *cluster) wasReceived(namespace, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.received[namespace+"/"+name]
}

func newCluster(t *testing.T, objs ...runtime.Object) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: etcdtest.Start(t), received: map[string]bool{}, legacy: true}
	c.db = c.etcd.Client(t)
	c.kube = fake.NewClientset(objs...)
	// A v1.34 API server: it serves ServiceCIDRs.
	c.kube.Resources = []*metav1.APIResourceList{{GroupVersion: networkingv1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "networkpolicies"}, {Name: "servicecidrs"}}}}
	c.kube.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		c.watches.Add(1)
		w, err := c.kube.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		return true, c.relay(w), nil
	})
	return c
}

// instance is one contiv-ksr replica under test.
type instance struct {
	*Plugin
	registry *prometheus.Registry
	health   *health.Registry
}

// start starts a replica; it is closed at the end of the test (Close is idempotent).
func (c *cluster) start(identity string) *instance {
	c.t.Helper()
	return c.startWith(identity, nil)
}

// startWith starts a replica with additional etcd.conf settings.
func (c *cluster) startWith(identity string, etcdConf infra.StaticConfig) *instance {
	c.t.Helper()
	return c.startDeps(identity, etcdConf, nil)
}

// startLeaderWith starts a replica whose dependencies mod changes and waits until it
// leads, as startLeader.
func (c *cluster) startLeaderWith(identity string, mod func(*Deps)) *instance {
	c.t.Helper()
	before := c.watches.Load()
	in := c.startDeps(identity, nil, mod)
	c.waitSynced(in, before)
	return in
}

// startDeps starts a replica with additional etcd.conf settings and dependencies
// changed by mod (nil: none).
func (c *cluster) startDeps(identity string, etcdConf infra.StaticConfig, mod func(*Deps)) *instance {
	c.t.Helper()
	conf := infra.StaticConfig{"endpoints": []string{c.etcd.Endpoint()}, "reconnect-interval": "200ms"}
	for k, v := range etcdConf {
		conf[k] = v
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	if testing.Verbose() && os.Getenv("KSR_TEST_LOG") != "" {
		log.SetOutput(os.Stderr)
		log.SetLevel(logrus.DebugLevel)
	}
	reg, hr := prometheus.NewRegistry(), health.NewRegistry()
	deps := Deps{
		Log: log.WithField("ksr", identity), KubeClient: c.kube,
		EtcdConfig: conf,
		Registerer: reg, Health: hr.Reporter("ksr"), Identity: identity, ElectionTTL: 2 * time.Second,
		LegacyEndpoints: c.legacy,
	}
	if mod != nil {
		mod(&deps)
	}
	p := NewPlugin(deps)
	if err := p.Init(); err != nil {
		c.t.Fatal(err)
	}
	if err := p.AfterInit(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { p.Close() })
	return &instance{Plugin: p, registry: reg, health: hr}
}

// startLeader starts a replica and waits until it leads, is in sync and its informers
// watch (so that objects created from now on are seen).
func (c *cluster) startLeader(identity string) *instance {
	c.t.Helper()
	before := c.watches.Load()
	in := c.start(identity)
	c.waitSynced(in, before)
	return in
}

func (c *cluster) waitSynced(in *instance, watchesBefore int64) {
	c.t.Helper()
	testkit.EventuallyTrue(c.t, waitTimeout, "leader in sync and watching", func() bool {
		return in.InSync() && c.watches.Load() >= watchesBefore+informerCount
	})
}

// get returns the decoded value of a KSR key, nil when absent.
func (c *cluster) get(key string) proto.Message {
	c.t.Helper()
	resp, err := c.db.Get(context.Background(), ksrkey.KsrPrefix+key)
	if err != nil {
		c.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	res, ok := dbresources.GetResourceByKey(key)
	if !ok {
		c.t.Fatalf("no resource for %s", key)
	}
	v, err := res.Unmarshal(resp.Kvs[0].Value)
	if err != nil {
		return &node.Node{Name: "undecodable"}
	}
	return v
}

// waitValue waits until key holds want (nil: until it is absent).
func (c *cluster) waitValue(key string, want proto.Message) {
	c.t.Helper()
	testkit.Eventually(c.t, waitTimeout, key, func() error {
		got := c.get(key)
		if (want == nil && got == nil) || (want != nil && got != nil && proto.Equal(got, want)) {
			return nil
		}
		return fmt.Errorf("%v, want %v", got, want)
	})
}

func (c *cluster) putRaw(key string, value proto.Message) {
	c.t.Helper()
	data, err := dbresources.Marshal(value)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.db.Put(context.Background(), key, string(data)); err != nil {
		c.t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func objMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func testPod(name, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name}},
		Status: corev1.PodStatus{PodIP: ip, HostIP: "10.20.0.10"}}
}

func testService(name, clusterIP string) *corev1.Service {
	return &corev1.Service{ObjectMeta: objMeta("default", name), Spec: corev1.ServiceSpec{
		ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
}

func testServiceCIDR(name string, cidrs ...string) *networkingv1.ServiceCIDR {
	return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
}

func testNode(name, ip string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

func testSlice(name, svc string, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// counter reads one per-reflector counter.
func counter(vec *prometheus.CounterVec, labels ...string) float64 {
	return testutil.ToFloat64(vec.WithLabelValues(labels...))
}

func TestEveryKindIsAddedUpdatedAndDeleted(t *testing.T) {
	ctx := context.Background()
	type kindCase struct {
		reflector string
		key       string
		create    func() (runtime.Object, error)
		update    func() (runtime.Object, error)
		remove    func() error
	}
	c := newCluster(t)
	k := c.kube
	pol := &networkingv1.NetworkPolicy{ObjectMeta: objMeta("default", "deny-all")}
	pol2 := pol.DeepCopy()
	pol2.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	cases := []kindCase{
		{namespace.Keyword, namespace.Key("prod"),
			func() (runtime.Object, error) {
				return k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.CoreV1().Namespaces().Update(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod",
					Labels: map[string]string{"env": "prod"}}}, metav1.UpdateOptions{})
			},
			func() error { return k.CoreV1().Namespaces().Delete(ctx, "prod", metav1.DeleteOptions{}) }},
		{node.Keyword, node.Key("k8s-worker9"),
			func() (runtime.Object, error) {
				return k.CoreV1().Nodes().Create(ctx, testNode("k8s-worker9", "10.20.0.19"), metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.CoreV1().Nodes().Update(ctx, testNode("k8s-worker9", "10.20.0.29"), metav1.UpdateOptions{})
			},
			func() error { return k.CoreV1().Nodes().Delete(ctx, "k8s-worker9", metav1.DeleteOptions{}) }},
		{pod.Keyword, pod.Key("web", "default"),
			func() (runtime.Object, error) {
				return k.CoreV1().Pods("default").Create(ctx, testPod("web", ""), metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.CoreV1().Pods("default").Update(ctx, testPod("web", "10.1.1.5"), metav1.UpdateOptions{})
			},
			func() error { return k.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}) }},
		{policy.Keyword, policy.Key("deny-all", "default"),
			func() (runtime.Object, error) {
				return k.NetworkingV1().NetworkPolicies("default").Create(ctx, pol, metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.NetworkingV1().NetworkPolicies("default").Update(ctx, pol2, metav1.UpdateOptions{})
			},
			func() error {
				return k.NetworkingV1().NetworkPolicies("default").Delete(ctx, "deny-all", metav1.DeleteOptions{})
			}},
		{service.Keyword, service.Key("web", "default"),
			func() (runtime.Object, error) {
				return k.CoreV1().Services("default").Create(ctx, testService("web", "10.96.0.10"), metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.CoreV1().Services("default").Update(ctx, testService("web", "10.96.0.11"), metav1.UpdateOptions{})
			},
			func() error { return k.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}) }},
		{endpointslice.Keyword, endpointslice.Key("web-abc", "default"),
			func() (runtime.Object, error) {
				return k.DiscoveryV1().EndpointSlices("default").Create(ctx, testSlice("web-abc", "web", "10.1.1.2"), metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.DiscoveryV1().EndpointSlices("default").Update(ctx, testSlice("web-abc", "web", "10.1.1.2", "10.1.2.2"), metav1.UpdateOptions{})
			},
			func() error {
				return k.DiscoveryV1().EndpointSlices("default").Delete(ctx, "web-abc", metav1.DeleteOptions{})
			}},
		{servicecidr.Keyword, servicecidr.Key("extra"),
			func() (runtime.Object, error) {
				return k.NetworkingV1().ServiceCIDRs().Create(ctx, testServiceCIDR("extra", "10.200.0.0/16"), metav1.CreateOptions{})
			},
			func() (runtime.Object, error) {
				return k.NetworkingV1().ServiceCIDRs().Update(ctx, testServiceCIDR("extra", "10.200.0.0/16", "fd00:200::/112"), metav1.UpdateOptions{})
			},
			func() error { return k.NetworkingV1().ServiceCIDRs().Delete(ctx, "extra", metav1.DeleteOptions{}) }},
	}
	in := c.startLeader("a")
	for _, kc := range cases {
		t.Run(kc.reflector, func(t *testing.T) {
			obj := must(kc.create())
			_, want, err := convert.Object(obj)
			if err != nil {
				t.Fatal(err)
			}
			c.waitValue(kc.key, want)
			obj = must(kc.update())
			_, want, _ = convert.Object(obj)
			c.waitValue(kc.key, want)
			if err := kc.remove(); err != nil {
				t.Fatal(err)
			}
			c.waitValue(kc.key, nil)
			for name, vec := range map[string]*prometheus.CounterVec{
				"adds": in.metrics.adds, "updates": in.metrics.updates, "deletes": in.metrics.deletes,
			} {
				testkit.EventuallyTrue(t, waitTimeout, name+"{reflector="+kc.reflector+"} = 1", func() bool { return counter(vec, kc.reflector) == 1 })
			}
		})
	}
	if got := counter(in.metrics.resyncs, pod.Keyword); got != 1 {
		t.Errorf("resyncs{pod} = %v, want 1", got)
	}
}

func TestUnchangedObjectsAreNotRewritten(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, testPod("web", "10.1.1.2"))
	in := c.startLeader("a")
	key := ksrkey.KsrPrefix + pod.Key("web", "default")
	rev := func() int64 {
		resp, err := c.db.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v", key, err)
		}
		return resp.Kvs[0].ModRevision
	}
	before := rev()
	// A change the model does not carry (a spec field) must not cause a write.
	p := testPod("web", "10.1.1.2")
	p.Spec.NodeName = "k8s-master"
	p.ResourceVersion = "2"
	must(c.kube.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}))
	// Then a change it carries, which shows that the first one was processed.
	must(c.kube.CoreV1().Services("default").Create(ctx, testService("marker", "10.96.0.99"), metav1.CreateOptions{}))
	c.waitValue(service.Key("marker", "default"), must(convert.Service(testService("marker", "10.96.0.99"))))
	if after := rev(); after != before {
		t.Errorf("pod rewritten: mod revision %d -> %d", before, after)
	}
	if got := counter(in.metrics.updates, pod.Keyword); got != 0 {
		t.Errorf("updates{pod} = %v, want 0", got)
	}
}

func TestObjectsTheModelCannotHoldAreCountedAndLeftAlone(t *testing.T) {
	ctx := context.Background()
	good := &networkingv1.NetworkPolicy{ObjectMeta: objMeta("default", "p")}
	c := newCluster(t, good)
	in := c.startLeader("a")
	want := must(convert.Policy(good))
	c.waitValue(policy.Key("p", "default"), want)
	bad := good.DeepCopy()
	icmp := corev1.Protocol("ICMP") // not a NetworkPolicy protocol
	bad.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &icmp}}}}
	must(c.kube.NetworkingV1().NetworkPolicies("default").Update(ctx, bad, metav1.UpdateOptions{}))
	testkit.EventuallyTrue(t, waitTimeout, "arg error counted", func() bool { return counter(in.metrics.errors, policy.Keyword, errArg) == 1 })
	if got := c.get(policy.Key("p", "default")); !proto.Equal(got, want) {
		t.Errorf("policy = %v, want the last good value kept", got)
	}
}

func TestResyncAfterEtcdReconnectSweepsStaleAndRestoresMissing(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, testPod("web", "10.1.1.2"), testService("web", "10.96.0.10"), testNode("k8s-master", "10.20.0.10"))
	in := c.startLeader("a")
	svcKey, podKey := service.Key("web", "default"), pod.Key("web", "default")
	c.waitValue(svcKey, must(convert.Service(testService("web", "10.96.0.10"))))

	// Damage etcd behind contiv-ksr's back; keys of others must survive.
	pfx := ksrkey.KsrPrefix
	c.putRaw(pfx+pod.Key("ghost", "default"), &pod.Pod{Name: "ghost", Namespace: "default"})
	c.putRaw(pfx+podKey, &pod.Pod{Name: "web", Namespace: "default", IpAddress: "10.9.9.9"})
	if _, err := c.db.Delete(ctx, pfx+svcKey); err != nil {
		t.Fatal(err)
	}
	c.putRaw(pfx+vppnode.Key(1), &vppnode.VppNode{Id: 1, Name: "k8s-master"})
	c.putRaw(pfx+nodeconfig.Key("k8s-master"), &nodeconfig.NodeConfig{})

	// etcd goes away; meanwhile a pod appears (its write fails, or is not attempted).
	begin := time.Now()
	c.etcd.Stop()
	t.Logf("etcd stopped in %v", time.Since(begin))
	testkit.EventuallyTrue(t, waitTimeout, "etcd loss noticed", func() bool { return !in.InSync() })
	t.Logf("loss noticed after %v", time.Since(begin))
	if st := in.health.Status(); st.State != health.Init {
		t.Errorf("health while etcd is down = %v, want Init", st.State)
	}
	must(c.kube.CoreV1().Pods("default").Create(ctx, testPod("late", "10.1.1.3"), metav1.CreateOptions{}))
	testkit.EventuallyTrue(t, waitTimeout, "the late pod's event taken by the informer", func() bool { return c.wasReceived("default", "late") })
	c.etcd.Start()
	t.Logf("etcd restarted after %v", time.Since(begin))

	c.waitValue(pod.Key("late", "default"), must(convert.Pod(testPod("late", "10.1.1.3"))))
	c.waitValue(pod.Key("ghost", "default"), nil)
	c.waitValue(podKey, must(convert.Pod(testPod("web", "10.1.1.2"))))
	c.waitValue(svcKey, must(convert.Service(testService("web", "10.96.0.10"))))
	testkit.EventuallyTrue(t, waitTimeout, "in sync again", in.InSync)
	t.Logf("in sync after %v", time.Since(begin))
	for _, k := range []string{vppnode.Key(1), nodeconfig.Key("k8s-master")} {
		if c.get(k) == nil {
			t.Errorf("%s (not contiv-ksr's) was removed", k)
		}
	}
	if got := counter(in.metrics.resyncs, pod.Keyword); got < 2 {
		t.Errorf("resyncs{pod} = %v, want at least 2", got)
	}
	if st := in.health.Status(); st.State != health.OK {
		t.Errorf("health = %+v, want OK", st)
	}
}

func TestNodeDeletionRemovesItsIDAndAgentConfig(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, testNode("k8s-master", "10.20.0.10"), testNode("k8s-worker1", "10.20.0.11"))
	pfx := ksrkey.KsrPrefix
	c.putRaw(pfx+vppnode.Key(1), &vppnode.VppNode{Id: 1, Name: "k8s-master"})
	c.putRaw(pfx+vppnode.Key(2), &vppnode.VppNode{Id: 2, Name: "k8s-worker1"})
	c.putRaw(ksrkey.AgentPrefix("k8s-worker1")+"config/vpp/v2/interfaces/loop0", &node.Node{})
	c.putRaw(ksrkey.AgentPrefix("k8s-master")+"config/vpp/v2/interfaces/loop0", &node.Node{})
	c.startLeader("a")
	c.waitValue(node.Key("k8s-worker1"), must(convert.Node(testNode("k8s-worker1", "10.20.0.11"))))

	if err := c.kube.CoreV1().Nodes().Delete(ctx, "k8s-worker1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitValue(node.Key("k8s-worker1"), nil)
	resp, err := c.db.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, kv := range resp.Kvs {
		if !strings.HasPrefix(string(kv.Key), ElectionPrefix) {
			left = append(left, string(kv.Key))
		}
	}
	want := []string{
		pfx + vppnode.Key(1), pfx + node.Key("k8s-master"), ksrkey.AgentPrefix("k8s-master") + "config/vpp/v2/interfaces/loop0",
		pfx + ksrsync.Key(pod.Keyword),
	}
	if fmt.Sprint(slices.Sorted(slices.Values(left))) != fmt.Sprint(slices.Sorted(slices.Values(want))) {
		t.Errorf("keys left = %v, want %v", left, want)
	}
}

func TestLeaderElectionHandsOverOnClose(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, testPod("web", "10.1.1.2"))
	a := c.startLeader("a")
	b := c.start("b")
	testkit.EventuallyTrue(t, waitTimeout, "b standing by", func() bool { return b.health.Status().State == health.OK })
	if b.IsLeader() {
		t.Fatal("two leaders")
	}
	if got := counter(b.metrics.resyncs, pod.Keyword); got != 0 {
		t.Errorf("standby resynced %v times", got)
	}
	// Left behind by a's last moments; b's first resync must sweep it.
	c.putRaw(ksrkey.KsrPrefix+pod.Key("stale", "default"), &pod.Pod{Name: "stale", Namespace: "default"})

	watches := c.watches.Load()
	begin := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c.waitSynced(b, watches)
	if d := time.Since(begin); d > b.ElectionTTL {
		t.Errorf("takeover took %v, longer than the lease (resign should make it immediate)", d)
	}
	if a.IsLeader() {
		t.Error("closed replica still leads")
	}
	c.waitValue(pod.Key("stale", "default"), nil)
	must(c.kube.CoreV1().Pods("default").Create(ctx, testPod("after", "10.1.1.9"), metav1.CreateOptions{}))
	c.waitValue(pod.Key("after", "default"), must(convert.Pod(testPod("after", "10.1.1.9"))))
	if got := testutil.ToFloat64(b.metrics.leader); got != 1 {
		t.Errorf("contiv_ksr_leader of b = %v", got)
	}
}

func TestLeaderWhoseKeyVanishesStopsAndStandbyTakesOver(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	a := c.startLeader("a")
	b := c.start("b")
	testkit.EventuallyTrue(t, waitTimeout, "b campaigning", func() bool {
		resp, err := c.db.Get(ctx, ElectionPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2
	})

	// Delete a's election key, as a lost lease would.
	resp, err := c.db.Get(ctx, ElectionPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) != 2 || string(resp.Kvs[0].Value) != "a" {
		t.Fatalf("election keys = %v, %v", resp.Kvs, err)
	}
	watches := c.watches.Load()
	if _, err := c.db.Delete(ctx, string(resp.Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	c.waitSynced(b, watches)
	testkit.EventuallyTrue(t, waitTimeout, "a steps down", func() bool { return !a.IsLeader() })
	must(c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}, metav1.CreateOptions{}))
	c.waitValue(namespace.Key("ns1"), &namespace.Namespace{Name: "ns1"})
	// a campaigns again and waits behind b.
	testkit.EventuallyTrue(t, waitTimeout, "a campaigning again", func() bool {
		resp, err := c.db.Get(ctx, ElectionPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2
	})
	if a.IsLeader() || !b.IsLeader() {
		t.Errorf("leaders: a=%v b=%v, want b only", a.IsLeader(), b.IsLeader())
	}
}

func TestMetricsAreExported(t *testing.T) {
	c := newCluster(t)
	in := c.startLeader("a")
	families, err := in.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, n := range []string{"contiv_ksr_adds_total", "contiv_ksr_updates_total", "contiv_ksr_deletes_total",
		"contiv_ksr_resyncs_total", "contiv_ksr_errors_total", "contiv_ksr_leader", "contiv_ksr_in_sync",
		"contiv_ksr_skipped_objects"} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}
	// One series per reflector and error kind.
	if n := testutil.CollectAndCount(in.metrics.errors); n != len(Reflectors())*5 {
		t.Errorf("%d error series, want %d", n, len(Reflectors())*5)
	}
}

func TestLeaderCompactsHistoryWhenAsked(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, testPod("web", "10.1.1.2"))
	in := c.startWith("a", infra.StaticConfig{"auto-compact": "100ms"})
	testkit.EventuallyTrue(t, waitTimeout, "leader", in.IsLeader)
	testkit.EventuallyTrue(t, waitTimeout, "history compacted", func() bool {
		_, err := c.db.Get(ctx, "/", clientv3.WithRev(1))
		return err != nil && strings.Contains(err.Error(), "compacted")
	})
}

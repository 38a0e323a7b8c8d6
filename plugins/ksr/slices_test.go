package ksr

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// legacyOf is the legacy Endpoints value contiv-ksr writes for service default/web of
// the given slices.
func legacyOf(svc string, slices ...*discoveryv1.EndpointSlice) proto.Message {
	return must(convert.EndpointsFromSlices("default", svc, slices))
}

func TestEndpointSlicesAreReflectedOneValuePerSliceWithConditionsNormalised(t *testing.T) {
	ctx := context.Background()
	// The conditions as a controller other than Kubernetes' may leave them: unset.
	unset := testSlice("web-abc", "web", "10.1.1.2")
	terminating := testSlice("web-def", "web", "10.1.2.2")
	terminating.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptr(false), Terminating: ptr(true)}
	c := newCluster(t, testService("web", "10.96.0.10"), unset, terminating)
	in := c.startLeader("a")

	want := &endpointslice.EndpointSlice{Name: "web-abc", Namespace: "default", ServiceName: "web", AddressType: "IPv4",
		Ports:     []*endpointslice.Port{{Name: "http", Protocol: "TCP", Port: 8080}},
		Endpoints: []*endpointslice.Endpoint{{Addresses: []string{"10.1.1.2"}, Ready: true, Serving: true}}}
	c.waitValue(endpointslice.Key("web-abc", "default"), want)
	want = proto.Clone(want).(*endpointslice.EndpointSlice)
	want.Name = "web-def"
	want.Endpoints = []*endpointslice.Endpoint{{Addresses: []string{"10.1.2.2"}, Serving: true, Terminating: true}}
	c.waitValue(endpointslice.Key("web-def", "default"), want)

	// A slice that belongs to no service is not written, and counted while it exists.
	orphan := testSlice("orphan", "", "10.1.3.3")
	delete(orphan.Labels, discoveryv1.LabelServiceName)
	must(c.kube.DiscoveryV1().EndpointSlices("default").Create(ctx, orphan, metav1.CreateOptions{}))
	skipped := func(n float64) func() bool {
		return func() bool { return testutil.ToFloat64(in.metrics.skipped.WithLabelValues(endpointslice.Keyword)) == n }
	}
	testkit.EventuallyTrue(t, waitTimeout, "orphan slice counted", skipped(1))
	if v := c.get(endpointslice.Key("orphan", "default")); v != nil {
		t.Errorf("orphan slice written: %v", v)
	}
	// A slice that loses its label is deleted from etcd and counted.
	unlabelled := unset.DeepCopy()
	delete(unlabelled.Labels, discoveryv1.LabelServiceName)
	must(c.kube.DiscoveryV1().EndpointSlices("default").Update(ctx, unlabelled, metav1.UpdateOptions{}))
	c.waitValue(endpointslice.Key("web-abc", "default"), nil)
	testkit.EventuallyTrue(t, waitTimeout, "two slices without a service", skipped(2))
	if err := c.kube.DiscoveryV1().EndpointSlices("default").Delete(ctx, "orphan", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, waitTimeout, "deleted orphan no longer counted", skipped(1))
	if got := counter(in.metrics.errors, endpointslice.Keyword, errArg); got != 0 {
		t.Errorf("skipped slices counted as %v arg errors", got)
	}
}

func TestNoV1EndpointsAreListedOrWatched(t *testing.T) {
	c := newCluster(t, testService("web", "10.96.0.10"), testSlice("web-abc", "web", "10.1.1.2"))
	c.startLeader("a")
	c.waitValue(endpoints.Key("web", "default"), legacyOf("web", testSlice("web-abc", "web", "10.1.1.2")))
	for _, a := range c.kube.Actions() {
		if a.GetResource().Resource == "endpoints" {
			t.Errorf("%s of v1 endpoints: deprecated API used", a.GetVerb())
		}
	}
}

func TestLegacyEndpointsAreMadeOfAllSlicesOfTheService(t *testing.T) {
	ctx := context.Background()
	// More endpoints than an Endpoints object holds (1,000): none may be lost.
	var ips []string
	for i := range 1200 {
		ips = append(ips, fmt.Sprintf("10.1.%d.%d", 1+i/250, 1+i%250))
	}
	big1, big2 := testSlice("web-1", "web", ips[:600]...), testSlice("web-2", "web", ips[600:]...)
	big2.Endpoints[0].Conditions.Ready = ptr(false)
	c := newCluster(t, testService("web", "10.96.0.10"), big1, big2)
	c.startLeader("a")
	key := endpoints.Key("web", "default")
	c.waitValue(key, legacyOf("web", big1, big2))
	got := c.get(key).(*endpoints.Endpoints)
	if sub := got.GetEndpointSubsets(); len(sub) != 1 || len(sub[0].GetAddresses()) != 1199 || len(sub[0].GetNotReadyAddresses()) != 1 {
		t.Fatalf("legacy endpoints: %d subsets, want 1 with 1199 ready and 1 not ready addresses", len(sub))
	}

	// A slice moved to another service leaves this one and makes the other's.
	small := testSlice("web-3", "web", "10.9.0.1")
	must(c.kube.DiscoveryV1().EndpointSlices("default").Create(ctx, small, metav1.CreateOptions{}))
	c.waitValue(key, legacyOf("web", big1, big2, small))
	must(c.kube.DiscoveryV1().EndpointSlices("default").Update(ctx, testSlice("web-3", "api", "10.9.0.1"), metav1.UpdateOptions{}))
	c.waitValue(key, legacyOf("web", big1, big2))
	c.waitValue(endpoints.Key("api", "default"), legacyOf("api", testSlice("web-3", "api", "10.9.0.1")))

	// No slice left: no legacy value.
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		if err := c.kube.DiscoveryV1().EndpointSlices("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitValue(key, nil)
	c.waitValue(endpoints.Key("api", "default"), nil)
}

func TestLegacyEndpointsHoldThePrimaryFamilyOnly(t *testing.T) {
	ctx := context.Background()
	v4 := testSlice("web-v4", "web", "10.1.1.2")
	v6 := testSlice("web-v6", "web", "fd00::2")
	v6.AddressType = discoveryv1.AddressTypeIPv6
	svc := testService("web", "10.96.0.10")
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	c := newCluster(t, svc, v4, v6)
	c.startLeader("a")
	key := endpoints.Key("web", "default")
	c.waitValue(key, legacyOf("web", v4))

	// The service turns IPv6-first: its legacy value follows.
	svc = svc.DeepCopy()
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	must(c.kube.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}))
	c.waitValue(key, legacyOf("web", v6))
}

func TestLegacyEndpointsOffDeletesTheLegacyValues(t *testing.T) {
	c := newCluster(t, testService("web", "10.96.0.10"), testSlice("web-abc", "web", "10.1.1.2"))
	// What contiv-ksr of the previous release (or this one, legacy on) left.
	c.putRaw(ksrkey.KsrPrefix+endpoints.Key("web", "default"), legacyOf("web", testSlice("web-abc", "web", "10.1.1.2")))
	c.putRaw(ksrkey.KsrPrefix+endpoints.Key("gone", "default"), &endpoints.Endpoints{Name: "gone", Namespace: "default"})
	c.legacy = false
	in := c.startLeader("a")
	c.waitValue(endpoints.Key("web", "default"), nil)
	c.waitValue(endpoints.Key("gone", "default"), nil)
	c.waitValue(endpointslice.Key("web-abc", "default"), must(convert.EndpointSlice(testSlice("web-abc", "web", "10.1.1.2"))))

	// Slice changes do not bring them back.
	must(c.kube.DiscoveryV1().EndpointSlices("default").Update(context.Background(),
		testSlice("web-abc", "web", "10.1.1.2", "10.1.1.3"), metav1.UpdateOptions{}))
	c.waitValue(endpointslice.Key("web-abc", "default"), must(convert.EndpointSlice(testSlice("web-abc", "web", "10.1.1.2", "10.1.1.3"))))
	if v := c.get(endpoints.Key("web", "default")); v != nil {
		t.Errorf("legacy value written with legacy endpoints off: %v", v)
	}
	if got := counter(in.metrics.deletes, endpoints.Keyword); got != 2 {
		t.Errorf("deletes{endpoints} = %v, want 2", got)
	}
}

func TestServiceCIDRsReflectedWhenServedAndSweptWhenNot(t *testing.T) {
	notReady := testServiceCIDR("old", "10.100.0.0/16")
	notReady.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Terminating"}}
	c := newCluster(t, testServiceCIDR("kubernetes", "10.96.0.0/12"), notReady)
	c.startLeader("a")
	c.waitValue(servicecidr.Key("kubernetes"), &servicecidr.ServiceCIDR{Name: "kubernetes", Cidrs: []string{"10.96.0.0/12"}, Ready: true})
	c.waitValue(servicecidr.Key("old"), &servicecidr.ServiceCIDR{Name: "old", Cidrs: []string{"10.100.0.0/16"}})

	// An API server without ServiceCIDRs (before 1.33): contiv-ksr syncs without them and
	// removes what etcd holds under their prefix.
	old := newCluster(t)
	old.kube.Resources = nil
	old.putRaw(ksrkey.KsrPrefix+servicecidr.Key("stale"), &servicecidr.ServiceCIDR{Name: "stale"})
	in := old.start("a")
	testkit.EventuallyTrue(t, waitTimeout, "in sync", in.InSync)
	old.waitValue(servicecidr.Key("stale"), nil)
	for _, a := range old.kube.Actions() {
		if a.GetResource().Resource == "servicecidrs" {
			t.Errorf("%s of servicecidrs on a server that lacks them", a.GetVerb())
		}
	}
}

func TestClusterIPsOfEveryServiceCIDRAreKept(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, testServiceCIDR("kubernetes", "10.96.0.0/12"))
	c.startLeaderWith("a", func(d *Deps) {
		_, n, _ := net.ParseCIDR("10.96.0.0/12")
		d.ServiceLimits.ServiceCIDRs = []*net.IPNet{n}
	})
	// A service of a second range seen before the range itself (the informers are
	// independent): it is written again, with its cluster IP, once the range is known.
	svc := testService("web", "10.200.0.5")
	must(c.kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}))
	testkit.EventuallyTrue(t, waitTimeout, "service reflected", func() bool { return c.get(service.Key("web", "default")) != nil })
	must(c.kube.NetworkingV1().ServiceCIDRs().Create(ctx, testServiceCIDR("extra", "10.200.0.0/16"), metav1.CreateOptions{}))
	c.waitValue(service.Key("web", "default"), must(convert.Service(svc)))
}

func TestFailingAPIDiscoveryIsRetriedWithinTheTerm(t *testing.T) {
	c := newCluster(t, testServiceCIDR("kubernetes", "10.96.0.0/12"))
	var calls atomic.Int64
	var failing atomic.Bool
	failing.Store(true)
	c.kube.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		if failing.Load() {
			return true, nil, fmt.Errorf("connection refused")
		}
		return false, nil, nil
	})
	// electionKey is the create revision of the only election key (0: none or several).
	electionKey := func() int64 {
		resp, err := c.db.Get(context.Background(), ElectionPrefix, clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != 1 {
			return 0
		}
		return resp.Kvs[0].CreateRevision
	}
	before := c.watches.Load()
	in := c.start("a")
	testkit.EventuallyTrue(t, waitTimeout, "discovery asked", func() bool { return calls.Load() >= 1 })
	term := electionKey()
	testkit.EventuallyTrue(t, waitTimeout, "discovery retried", func() bool { return calls.Load() >= 4 })
	if got := electionKey(); term == 0 || got != term || !in.IsLeader() {
		t.Errorf("election key revision %d -> %d, leader %v: the term must outlive discovery failures", term, got, in.IsLeader())
	}
	if in.InSync() {
		t.Error("in sync before the API server answered")
	}
	failing.Store(false)
	c.waitSynced(in, before)
	c.waitValue(servicecidr.Key("kubernetes"), must(convert.ServiceCIDR(testServiceCIDR("kubernetes", "10.96.0.0/12"))))
}

func TestResyncSweepsAndRestoresSlicesAndServiceCIDRs(t *testing.T) {
	sl := testSlice("web-abc", "web", "10.1.1.2")
	c := newCluster(t, testService("web", "10.96.0.10"), sl, testServiceCIDR("kubernetes", "10.96.0.0/12"))
	pfx := ksrkey.KsrPrefix
	// Left by an earlier term: a slice and a range that are gone, a slice that changed.
	c.putRaw(pfx+endpointslice.Key("gone", "default"), &endpointslice.EndpointSlice{Name: "gone", Namespace: "default", ServiceName: "web"})
	c.putRaw(pfx+servicecidr.Key("gone"), &servicecidr.ServiceCIDR{Name: "gone"})
	c.putRaw(pfx+endpointslice.Key("web-abc", "default"), &endpointslice.EndpointSlice{Name: "web-abc", Namespace: "default"})
	in := c.startLeader("a")
	c.waitValue(endpointslice.Key("gone", "default"), nil)
	c.waitValue(servicecidr.Key("gone"), nil)
	c.waitValue(endpointslice.Key("web-abc", "default"), must(convert.EndpointSlice(sl)))
	c.waitValue(servicecidr.Key("kubernetes"), must(convert.ServiceCIDR(testServiceCIDR("kubernetes", "10.96.0.0/12"))))
	for _, r := range []string{endpointslice.Keyword, servicecidr.Keyword, endpoints.Keyword} {
		if got := counter(in.metrics.resyncs, r); got != 1 {
			t.Errorf("resyncs{%s} = %v, want 1", r, got)
		}
	}
	if got := counter(in.metrics.deletes, endpointslice.Keyword); got != 1 {
		t.Errorf("deletes{endpointslice} = %v, want 1", got)
	}
	if got := counter(in.metrics.updates, endpointslice.Keyword); got != 1 {
		t.Errorf("updates{endpointslice} = %v, want 1", got)
	}
}

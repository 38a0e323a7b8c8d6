package podmanager

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// t0 is the start of the tests' clock.
var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// kubeState returns a Kubernetes state with the pods (name, host IP) and, when marker
// is not nil, contiv-ksr's pod sync marker.
func kubeState(marker *ksrsync.SyncMarker, pods ...[2]string) api.KubeStateData {
	kube := api.KubeStateData{podmodel.Keyword: api.KeyValuePairs{}, ksrsync.Keyword: api.KeyValuePairs{}}
	for _, p := range pods {
		k, v := kubePod(p[0], p[1])
		kube[podmodel.Keyword][k] = v
	}
	if marker != nil {
		kube[ksrsync.Keyword][ksrsync.Key(podmodel.Keyword)] = marker
	}
	return kube
}

func markerAt(at time.Time) *ksrsync.SyncMarker {
	return &ksrsync.SyncMarker{Resource: podmodel.Keyword, ListedAfterUnixNano: at.UnixNano(), Leader: "ksr-0", Term: 7}
}

func resync(t *testing.T, env *testEnv, kube api.KubeStateData, count int) {
	t.Helper()
	if err := env.pm.Resync(&api.DBResync{KubeState: kube}, kube, count, nil); err != nil {
		t.Fatal(err)
	}
}

// The failure of issue 27, item 1: an agent restarted while contiv-ksr has not
// reflected a pod yet (or the copy is stale) must not drop the pod: it keeps its
// record (so its wiring and its IP), and a later resync in which Kubernetes shows the
// pod changes nothing.
func TestRestartKeepsPodsKubernetesCopyLacksWithoutASyncMarker(t *testing.T) {
	dir := shortTempDir(t)
	clock := testingclock.NewFakePassiveClock(t0)
	first := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	mustSucceed(t, "add")(first.add(request("web", "c1", "/ns/web")))
	first.close()

	clock.SetTime(t0.Add(time.Hour))
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	resync(t, env, kubeState(nil), 1) // contiv-ksr has not reflected the pod
	want := "default/web c1 /ns/web"
	if got := localPods(env.pm); got != want {
		t.Fatalf("pods after the first resync = %q, want %q", got, want)
	}
	if got := statePods(t, env.stateFile); got != want {
		t.Errorf("state file = %q, want %q", got, want)
	}
	if ip := env.pm.GetLocalPods()[podmodel.ID{Name: "web", Namespace: "default"}].IPAddress; ip == nil {
		t.Error("the kept pod lost its IP")
	}
	resync(t, env, kubeState(nil, [2]string{"web", ""}), 2) // contiv-ksr caught up
	if got := localPods(env.pm); got != want {
		t.Errorf("pods once Kubernetes shows the pod = %q, want %q", got, want)
	}
	// A CNI DEL always removes.
	mustSucceed(t, "delete")(env.del(request("web", "c1", "/ns/web")))
	if got := localPods(env.pm); got != "" {
		t.Errorf("pods after the DEL = %q", got)
	}
}

// A pod absent from a copy that a sync marker proves complete as of a time after the
// pod's ADD (and the allowed clock skew) was deleted in Kubernetes: it is dropped; one
// whose ADD is not older than the marker is kept. The same holds for a pod that
// Kubernetes shows on another node.
func TestResyncDropsAbsentPodsOnlyWhenASyncMarkerIsNewerThanTheirAdd(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	nodes := fakeNodeSync{
		"node1": {ID: 1, Name: "node1", MgmtIPAddresses: []net.IP{net.ParseIP("192.168.56.101")}},
		"node2": {ID: 2, Name: "node2", MgmtIPAddresses: []net.IP{net.ParseIP("192.168.56.102")}},
	}
	env := newEnv(t, "", withNetnsCheck(netnsAlive), withDeps(func(d *Deps) {
		d.Clock, d.NodeName, d.NodeSync = clock, "node1", nodes
	}))
	mustSucceed(t, "add")(env.add(request("old", "c1", "/ns/old")))
	mustSucceed(t, "add")(env.add(request("moved", "c2", "/ns/moved")))
	clock.SetTime(t0.Add(10 * time.Minute))
	mustSucceed(t, "add")(env.add(request("young", "c3", "/ns/young")))
	mustSucceed(t, "add")(env.add(request("here", "c4", "/ns/here")))
	all := "default/here c4 /ns/here; default/moved c2 /ns/moved; default/old c1 /ns/old; default/young c3 /ns/young"

	// A marker older than every ADD, and one within the clock skew of the first ADDs:
	// nothing is proven gone.
	for i, at := range []time.Time{t0.Add(-time.Minute), t0.Add(DefaultMaxClockSkew)} {
		resync(t, env, kubeState(markerAt(at), [2]string{"here", "192.168.56.101"}, [2]string{"moved", "192.168.56.102"}), i+1)
		if got := localPods(env.pm); got != all {
			t.Fatalf("pods with a marker of %v = %q, want all kept: %q", at, got, all)
		}
	}
	// Complete as of 5 minutes after the first ADDs: those are gone, the young pod stays.
	resync(t, env, kubeState(markerAt(t0.Add(5*time.Minute)), [2]string{"here", "192.168.56.101"}, [2]string{"moved", "192.168.56.102"}), 3)
	want := "default/here c4 /ns/here; default/young c3 /ns/young"
	if got := localPods(env.pm); got != want {
		t.Errorf("pods = %q, want %q", got, want)
	}
	if got := statePods(t, env.stateFile); got != want {
		t.Errorf("state file = %q, want %q", got, want)
	}
}

// Pods recorded by an agent that kept no ADD time (and pods recovered from the
// runtime's CNI cache) count as added when this agent recovered them: a marker must be
// newer than that.
func TestRecoveredPodsWithoutAnAddTimeCountAsAddedAtRecovery(t *testing.T) {
	dir := shortTempDir(t)
	writeStateFile(t, stateFileIn(dir), rec("old-agent", "c1", "/ns/old-agent"))
	clock := testingclock.NewFakePassiveClock(t0)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	resync(t, env, kubeState(markerAt(t0.Add(-time.Hour))), 1)
	if got := localPods(env.pm); got != "default/old-agent c1 /ns/old-agent" {
		t.Fatalf("pods with a marker older than the recovery = %q", got)
	}
	clock.SetTime(t0.Add(2 * time.Hour))
	resync(t, env, kubeState(markerAt(t0.Add(time.Hour))), 2)
	if got := localPods(env.pm); got != "" {
		t.Errorf("pods with a marker newer than the recovery = %q, want none", got)
	}
}

func TestAddTimeSurvivesARestart(t *testing.T) {
	dir := shortTempDir(t)
	clock := testingclock.NewFakePassiveClock(t0)
	first := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	mustSucceed(t, "add")(first.add(request("web", "c1", "/ns/web")))
	first.close()
	load, err := readState(stateFileIn(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(load.Pods) != 1 || !load.Pods[0].AddedAt.Equal(t0) {
		t.Fatalf("state = %+v, want web added at %v", load.Pods, t0)
	}
	clock.SetTime(t0.Add(time.Hour))
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	// Complete as of after the ADD, before the restart: the pod was deleted.
	resync(t, env, kubeState(markerAt(t0.Add(30*time.Minute))), 1)
	if got := localPods(env.pm); got != "" {
		t.Errorf("pods = %q, want none", got)
	}
}

// kubeChange applies one Kubernetes change to the pod manager as the event loop does.
func kubeChange(t *testing.T, env *testEnv, key string, resource string, value proto.Message) string {
	t.Helper()
	ev := &api.KubeStateChange{Key: key, Resource: resource, NewValue: value}
	if !env.pm.HandlesEvent(ev) {
		t.Fatalf("%v not handled", ev)
	}
	msg, err := env.pm.Update(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// Between resyncs, a new sync marker removes the unconfirmed pods it proves gone (a
// DeletePod each), and a pod that Kubernetes shows here meanwhile is confirmed and
// stays.
func TestNewSyncMarkerRemovesUnconfirmedPodsItProvesGone(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	env := newEnv(t, "", withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	mustSucceed(t, "add")(env.add(request("gone", "c1", "/ns/gone-later")))
	mustSucceed(t, "add")(env.add(request("late", "c2", "/ns/late")))
	mustSucceed(t, "add")(env.add(request("young", "c3", "/ns/young")))
	clock.SetTime(t0.Add(time.Hour))
	resync(t, env, kubeState(nil), 1) // contiv-ksr lags: all three unconfirmed
	all := "default/gone c1 /ns/gone-later; default/late c2 /ns/late; default/young c3 /ns/young"
	if got := localPods(env.pm); got != all {
		t.Fatalf("pods = %q, want %q", got, all)
	}
	if got := testutil.ToFloat64(env.pm.metrics.unconfirmedPods); got != 3 {
		t.Errorf("unconfirmed pods = %v, want 3", got)
	}
	k, v := kubePod("late", "")
	if msg := kubeChange(t, env, k, podmodel.Keyword, v); msg == "" {
		t.Error("the pod's reflection does not confirm it")
	}
	// A marker that proves nothing removes nothing.
	kubeChange(t, env, ksrsync.Key(podmodel.Keyword), ksrsync.Keyword, markerAt(t0))
	if got := localPods(env.pm); got != all {
		t.Fatalf("pods after an old marker = %q, want %q", got, all)
	}
	// young was added at t0 too, but Kubernetes shows it after the marker: confirmed.
	k, v = kubePod("young", "")
	kubeChange(t, env, k, podmodel.Keyword, v)
	kubeChange(t, env, ksrsync.Key(podmodel.Keyword), ksrsync.Keyword, markerAt(t0.Add(30*time.Minute)))
	want := "default/late c2 /ns/late; default/young c3 /ns/young"
	testkit.Eventually(t, 5*time.Second, "the proven pod removed", func() error {
		if got := localPods(env.pm); got != want {
			return fmt.Errorf("pods = %q, want %q", got, want)
		}
		return nil
	})
	if got := env.loop.events(); !slices.Contains(got, "push Delete Pod default/gone") {
		t.Errorf("events = %q, want a Delete Pod of default/gone", got)
	}
	if got := testutil.ToFloat64(env.pm.metrics.unconfirmedPods); got != 0 {
		t.Errorf("unconfirmed pods = %v, want 0", got)
	}
}

// A sync marker later than this node's time (+ the allowed skew) comes from a clock off
// by more than maxClockSkew, or is forged: it proves nothing.
func TestSyncMarkerFromTheFutureProvesNothing(t *testing.T) {
	clock := testingclock.NewFakePassiveClock(t0)
	env := newEnv(t, "", withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Clock = clock }))
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	clock.SetTime(t0.Add(time.Minute))
	resync(t, env, kubeState(markerAt(t0.Add(time.Hour))), 1)
	if got := localPods(env.pm); got != "default/web c1 /ns/web" {
		t.Errorf("pods with a marker an hour ahead = %q, want web kept", got)
	}
	kubeChange(t, env, ksrsync.Key(podmodel.Keyword), ksrsync.Keyword, markerAt(t0.Add(time.Hour)))
	if got := localPods(env.pm); got != "default/web c1 /ns/web" {
		t.Errorf("pods after a marker change an hour ahead = %q, want web kept", got)
	}
}

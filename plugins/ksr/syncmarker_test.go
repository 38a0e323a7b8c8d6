package ksr

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// The leader publishes ksrsync/pod once the pods in etcd match the informers' list,
// with the time taken before the list; a standby publishes nothing, and a new leader
// publishes its own term's marker.
func TestPodSyncMarkerIsPublishedAfterTheResyncWithTheTimeBeforeTheList(t *testing.T) {
	c := newCluster(t, testPod("web", "10.1.1.2"))
	first := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	a := c.startLeaderWith("a", func(d *Deps) { d.Clock = testingclock.NewFakePassiveClock(first) })
	c.waitValue(pod.Key("web", "default"), must(convert.Pod(testPod("web", "10.1.1.2"))))

	m, _ := c.get(ksrsync.Key(pod.Keyword)).(*ksrsync.SyncMarker)
	if m == nil {
		t.Fatal("no sync marker after the leader's resync")
	}
	if !m.ListedAfter().Equal(first) || m.GetLeader() != "a" || m.GetResource() != pod.Keyword || m.GetTerm() <= 0 {
		t.Fatalf("marker = %v, want pod, leader a, a term and listed after %v", m, first)
	}

	second := first.Add(time.Hour)
	c.startDeps("b", nil, func(d *Deps) { d.Clock = testingclock.NewFakePassiveClock(second) })
	if got, _ := c.get(ksrsync.Key(pod.Keyword)).(*ksrsync.SyncMarker); got.GetLeader() != "a" {
		t.Fatalf("marker of a standby published: %v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, waitTimeout, "marker of the new leader", func() error {
		got, _ := c.get(ksrsync.Key(pod.Keyword)).(*ksrsync.SyncMarker)
		if got.GetLeader() != "b" || !got.ListedAfter().Equal(second) || got.GetTerm() <= m.GetTerm() {
			return fmt.Errorf("marker %v, want leader b, listed after %v, a term after %d", got, second, m.GetTerm())
		}
		return nil
	})
}

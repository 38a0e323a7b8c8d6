package dbwatcher

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// trackPod records a change of pod name from prev to next (IPs; "" is no value).
func trackPod(t *changeTracker, name, prev, next string) {
	val := func(ip string) proto.Message {
		if ip == "" {
			return nil
		}
		return testPod(name, ip)
	}
	t.record(ksrkey.KsrPrefix+podKey(name), podKey(name), pod.Keyword, val(prev), val(next))
}

// drain takes every pending event.
func drain(t *changeTracker) []api.Event {
	var out []api.Event
	for ev := t.Next(); ev != nil; ev = t.Next() {
		out = append(out, ev)
	}
	return out
}

// podChangeIs checks that ev is the change of pod name from prev to next.
func podChangeIs(t *testing.T, ev api.Event, name, prev, next string) {
	t.Helper()
	c, ok := ev.(*api.KubeStateChange)
	if !ok {
		t.Fatalf("%s is not a KubeStateChange", ev)
	}
	val := func(ip string) proto.Message {
		if ip == "" {
			return nil
		}
		return testPod(name, ip)
	}
	if c.Key != podKey(name) || c.Resource != pod.Keyword || !equalOrNil(c.PrevValue, val(prev)) || !equalOrNil(c.NewValue, val(next)) {
		t.Errorf("got %s prev %v new %v, want %s from %q to %q", c, c.PrevValue, c.NewValue, podKey(name), prev, next)
	}
}

func TestKeyChanged100TimesIsOneEventWithTheLastValueAndTheOriginalPrevious(t *testing.T) {
	tr := newChangeTracker()
	prev := "10.0.0.1"
	for i := range 100 {
		next := fmt.Sprintf("10.0.1.%d", i)
		trackPod(tr, "a", prev, next)
		prev = next
	}
	if n := tr.len(); n != 1 {
		t.Errorf("pending = %d, want 1", n)
	}
	evs := drain(tr)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	podChangeIs(t, evs[0], "a", "10.0.0.1", "10.0.1.99")
}

func TestDeletesAndRecreatesInABurst(t *testing.T) {
	cases := []struct {
		name  string
		steps [][2]string // prev, next
		want  *[2]string  // nil: no event
	}{
		{"deleted then re-created differently is an update", [][2]string{{"1.1.1.1", ""}, {"", "2.2.2.2"}}, &[2]string{"1.1.1.1", "2.2.2.2"}},
		{"deleted then re-created the same is nothing", [][2]string{{"1.1.1.1", ""}, {"", "1.1.1.1"}}, nil},
		{"created then deleted, never seen, is nothing", [][2]string{{"", "1.1.1.1"}, {"1.1.1.1", ""}}, nil},
		{"updated then deleted is a delete of the seen value", [][2]string{{"1.1.1.1", "2.2.2.2"}, {"2.2.2.2", ""}}, &[2]string{"1.1.1.1", ""}},
		{"created, deleted, re-created is an add", [][2]string{{"", "1.1.1.1"}, {"1.1.1.1", ""}, {"", "3.3.3.3"}}, &[2]string{"", "3.3.3.3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newChangeTracker()
			for _, s := range c.steps {
				trackPod(tr, "a", s[0], s[1])
			}
			evs := drain(tr)
			if c.want == nil {
				if len(evs) != 0 {
					t.Errorf("events %v, want none", evs)
				}
				return
			}
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			podChangeIs(t, evs[0], "a", c.want[0], c.want[1])
		})
	}
}

func TestOrderAcrossKeysIsTheOrderOfFirstChange(t *testing.T) {
	tr := newChangeTracker()
	trackPod(tr, "b", "", "1.0.0.1")
	trackPod(tr, "a", "", "1.0.0.2")
	trackPod(tr, "c", "", "1.0.0.3")
	trackPod(tr, "b", "1.0.0.1", "1.0.0.4") // coalesced, keeps its place
	podChangeIs(t, tr.Next(), "b", "", "1.0.0.4")
	trackPod(tr, "b", "1.0.0.4", "1.0.0.5") // taken already: queued again, last
	evs := drain(tr)
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	podChangeIs(t, evs[0], "a", "", "1.0.0.2")
	podChangeIs(t, evs[1], "c", "", "1.0.0.3")
	podChangeIs(t, evs[2], "b", "1.0.0.4", "1.0.0.5")
}

func TestResyncDiscardsPendingChangesAndComesFirst(t *testing.T) {
	tr := newChangeTracker()
	woken := 0
	tr.wake = func() { woken++ }
	trackPod(tr, "a", "", "1.0.0.1")
	resync := api.NewDBResync()
	tr.reset(resync)
	trackPod(tr, "b", "", "1.0.0.2")
	if woken != 3 {
		t.Errorf("woken %d times, want 3", woken)
	}
	evs := drain(tr)
	if len(evs) != 2 || evs[0] != api.Event(resync) {
		t.Fatalf("events %v, want the resync then b", evs)
	}
	podChangeIs(t, evs[1], "b", "", "1.0.0.2")
}

func TestExternalChangesAreCoalescedPerKey(t *testing.T) {
	tr := newChangeTracker()
	key := externalKey(testNode, "config/test/x")
	tr.record(key, "config/test/x", externalResource, nil, testPod("x", "1"))
	tr.record(key, "config/test/x", externalResource, testPod("x", "1"), testPod("x", "2"))
	evs := drain(tr)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ec, ok := evs[0].(*api.ExternalConfigChange)
	if !ok || ec.Source != ExternalSource || len(ec.UpdatedKVs) != 1 || !proto.Equal(ec.UpdatedKVs["config/test/x"], testPod("x", "2")) {
		t.Errorf("got %v, want one external change to the last value", evs[0])
	}
}

func TestTakenKeysDoNotAccumulate(t *testing.T) {
	tr := newChangeTracker()
	for i := range 10000 {
		trackPod(tr, fmt.Sprint("p", i), "", "1.0.0.1")
		if ev := tr.Next(); ev == nil {
			t.Fatal("change not pending")
		}
	}
	if len(tr.order) != 0 || len(tr.byKey) != 0 {
		t.Errorf("after taking everything: order %d, byKey %d, want 0", len(tr.order), len(tr.byKey))
	}
}

package controller

import (
	"reflect"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// observingHandler is a fakeHandler that records the commits it is told about.
type observingHandler struct {
	fakeHandler
	mu        sync.Mutex
	committed []string
}

func (h *observingHandler) Committed(ev api.Event, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.committed = append(h.committed, ev.GetName()+": "+errString(err))
}

func (h *observingHandler) calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.committed...)
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return "failed"
}

func TestCommitObserversLearnHowTheTransactionEnded(t *testing.T) {
	j := &journal{}
	sched := &fakeScheduler{}
	h := &observingHandler{fakeHandler: fakeHandler{name: "a", j: j, onUpdate: func(ev api.Event, txn api.UpdateOperations) {
		if ev.GetName() != "Nothing" {
			txn.Put("config/x/"+ev.GetName(), wrapperspb.String(ev.GetName()))
		}
	}}}
	plain := &fakeHandler{name: "b", j: j} // does not observe commits
	c := startController(t, sched, nil, h, plain)
	resyncNow(t, c)
	if err := pushAndWait(t, c, newTestEvent("Change", true, api.BestEffort, api.Forward)); err != nil {
		t.Fatal(err)
	}
	if err := pushAndWait(t, c, newTestEvent("Nothing", true, api.BestEffortIgnoreErrors, api.Forward)); err != nil {
		t.Fatal(err)
	}
	sched.setFailKey("config/x/Broken")
	if err := pushAndWait(t, c, newTestEvent("Broken", true, api.BestEffortIgnoreErrors, api.Forward)); err == nil {
		t.Fatal("the failed transaction reported no error")
	}
	// The resync is not reported; an event that staged nothing is programmed at once.
	want := []string{"Change: ok", "Nothing: ok", "Broken: failed"}
	if got := h.calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("Committed calls %q, want %q", got, want)
	}

}

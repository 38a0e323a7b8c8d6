package health

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestAggregateStateIsTheWorstComponent(t *testing.T) {
	tests := []struct {
		name    string
		reports map[string]State
		want    State
	}{
		{name: "no components", want: OK},
		{name: "all ok", reports: map[string]State{"a": OK, "b": OK}, want: OK},
		{name: "one starting", reports: map[string]State{"a": OK, "b": Init}, want: Init},
		{name: "error beats init", reports: map[string]State{"a": Error, "b": Init, "c": OK}, want: Error},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			for name, st := range tc.reports {
				r.Reporter(name).Report(st, "because")
			}
			if got := r.Status().State; got != tc.want {
				t.Errorf("state = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewComponentIsNotReadyUntilItReports(t *testing.T) {
	r := NewRegistry()
	rep := r.Reporter("govppmux")
	st := r.Status()
	if st.State != Init || st.Components["govppmux"].Reason != "starting" {
		t.Fatalf("status = %+v", st)
	}
	rep.Report(OK, "")
	// Asking again must not reset the component.
	r.Reporter("govppmux")
	if st := r.Status(); st.State != OK {
		t.Fatalf("status after OK = %+v", st)
	}
}

func TestSinceChangesOnlyWithTheReport(t *testing.T) {
	r := NewRegistry()
	now := time.Unix(100, 0)
	r.now = func() time.Time { return now }
	rep := r.Reporter("etcd")
	rep.Report(Error, "connection refused")
	now = time.Unix(200, 0)
	rep.Report(Error, "connection refused")
	if got := r.Status().Components["etcd"].Since; !got.Equal(time.Unix(100, 0)) {
		t.Errorf("since = %v, want unchanged 100", got)
	}
	rep.Report(OK, "")
	if got := r.Status().Components["etcd"].Since; !got.Equal(time.Unix(200, 0)) {
		t.Errorf("since = %v, want 200", got)
	}
}

func TestProblemsNameComponentAndReason(t *testing.T) {
	r := NewRegistry()
	r.Reporter("vpp").Report(Error, "socket /run/vpp/api.sock: no such file")
	r.Reporter("controller").Report(Init, "waiting for first resync")
	r.Reporter("rest").Report(OK, "")
	want := []string{"controller: INIT (waiting for first resync)", "vpp: ERROR (socket /run/vpp/api.sock: no such file)"}
	if got := r.Status().Problems(); !reflect.DeepEqual(got, want) {
		t.Errorf("problems = %v", got)
	}
}

func TestCollectorExportsComponentStates(t *testing.T) {
	r := NewRegistry()
	r.Reporter("vpp").Report(Error, "down")
	r.Reporter("agent").Report(OK, "")
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	want := `
# HELP contiv_agent_component_state State of each agent component: 0 OK, 1 INIT (not ready), 2 ERROR, 3 DEGRADED (not ready, alive).
# TYPE contiv_agent_component_state gauge
contiv_agent_component_state{component="agent"} 0
contiv_agent_component_state{component="vpp"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestStateTextRoundTrip(t *testing.T) {
	for _, st := range []State{OK, Init, Error} {
		text, _ := st.MarshalText()
		var back State
		if err := back.UnmarshalText(text); err != nil || back != st {
			t.Errorf("%v -> %q -> %v, %v", st, text, back, err)
		}
	}
	var s State
	if err := s.UnmarshalText([]byte("MAYBE")); err == nil || err.Error() != `unknown health state "MAYBE"` {
		t.Errorf("err = %v", err)
	}
}

func TestDegradedIsBetweenOKAndInit(t *testing.T) {
	r := NewRegistry()
	a, b := r.Reporter("a"), r.Reporter("b")
	a.Report(OK, "")
	b.Report(Degraded, "2 values failing")
	if st := r.Status(); st.State != Degraded {
		t.Errorf("OK + DEGRADED = %s, want DEGRADED", st.State)
	}
	a.Report(Init, "starting")
	if st := r.Status(); st.State != Init {
		t.Errorf("INIT + DEGRADED = %s, want INIT", st.State)
	}
	var s State
	if err := s.UnmarshalText([]byte("DEGRADED")); err != nil || s != Degraded {
		t.Errorf("DEGRADED parsed as %v, %v", s, err)
	}
}

// A failed registration leaves nothing registered: the collectors before the one that
// failed are unregistered again.
func TestRegisterAllUndoesAPartialRegistration(t *testing.T) {
	r := prometheus.NewRegistry()
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	clash := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	if err := RegisterAll(r, a, b, clash); err == nil {
		t.Fatal("registering a duplicate succeeded")
	}
	if err := RegisterAll(r, a, b); err != nil {
		t.Errorf("after the failed registration, a and b cannot be registered again: %v", err)
	}
	UnregisterAll(r, a, b)
	if err := RegisterAll(r, a, b); err != nil {
		t.Errorf("after UnregisterAll: %v", err)
	}
}

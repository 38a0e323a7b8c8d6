package infra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// recorder collects lifecycle calls from every fake plugin in the order they happen.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

type fakePlugin struct {
	name         string
	rec          *recorder
	initErr      error
	afterInitErr error
	closeErr     error
	initDelay    time.Duration
}

func (p *fakePlugin) Init() error {
	time.Sleep(p.initDelay) // real time: an Init slower than the start-up timeout
	p.rec.add(p.name + ".Init")
	return p.initErr
}

func (p *fakePlugin) Close() error {
	p.rec.add(p.name + ".Close")
	return p.closeErr
}

func (p *fakePlugin) String() string { return p.name }

// postPlugin adds AfterInit to fakePlugin.
type postPlugin struct{ fakePlugin }

func (p *postPlugin) AfterInit() error {
	p.rec.add(p.name + ".AfterInit")
	return p.afterInitErr
}

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func TestAgentLifecycleOrder(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		build     func(rec *recorder) []Plugin
		wantStart string // substring of the start error, "" = success
		wantCalls []string
	}{
		{
			name: "init and after-init in order, close in reverse",
			build: func(rec *recorder) []Plugin {
				return []Plugin{
					&postPlugin{fakePlugin{name: "a", rec: rec}},
					&fakePlugin{name: "b", rec: rec},
					&postPlugin{fakePlugin{name: "c", rec: rec}},
				}
			},
			wantCalls: []string{"a.Init", "b.Init", "c.Init", "a.AfterInit", "c.AfterInit",
				"c.Close", "b.Close", "a.Close"},
		},
		{
			name: "failed init closes only the plugins initialised before it, in reverse",
			build: func(rec *recorder) []Plugin {
				return []Plugin{
					&postPlugin{fakePlugin{name: "a", rec: rec}},
					&fakePlugin{name: "b", rec: rec},
					&fakePlugin{name: "c", rec: rec, initErr: boom},
					&fakePlugin{name: "d", rec: rec},
				}
			},
			wantStart: "plugin c: Init: boom",
			wantCalls: []string{"a.Init", "b.Init", "c.Init", "b.Close", "a.Close"},
		},
		{
			name: "failed after-init closes every plugin",
			build: func(rec *recorder) []Plugin {
				return []Plugin{
					&postPlugin{fakePlugin{name: "a", rec: rec, afterInitErr: boom}},
					&postPlugin{fakePlugin{name: "b", rec: rec}},
				}
			},
			wantStart: "plugin a: AfterInit: boom",
			wantCalls: []string{"a.Init", "b.Init", "a.AfterInit", "b.Close", "a.Close"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			var phases []Phase
			a := NewAgent(WithPlugins(tc.build(rec)...), WithLogger(quietLogger()),
				WithObserver(func(e LifecycleEvent) { phases = append(phases, e.Phase) }))
			err := a.Start(context.Background())
			if tc.wantStart == "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if err := a.Stop(); err != nil {
					t.Fatalf("Stop: %v", err)
				}
				wantPhases := []Phase{PhaseStarting, PhaseStarted, PhaseStopping, PhaseStopped}
				if !reflect.DeepEqual(phases, wantPhases) {
					t.Errorf("phases = %v, want %v", phases, wantPhases)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.wantStart) {
					t.Fatalf("Start error = %v, want it to contain %q", err, tc.wantStart)
				}
				if !errors.Is(err, boom) {
					t.Errorf("Start error does not wrap the plugin's error: %v", err)
				}
				if last := phases[len(phases)-1]; last != PhaseFailed {
					t.Errorf("last phase = %v, want %v", last, PhaseFailed)
				}
			}
			if got := rec.list(); !reflect.DeepEqual(got, tc.wantCalls) {
				t.Errorf("calls = %v\nwant    %v", got, tc.wantCalls)
			}
		})
	}
}

func TestAgentStopClosesAllEvenWhenOneCloseFails(t *testing.T) {
	rec := &recorder{}
	a := NewAgent(WithLogger(quietLogger()), WithPlugins(
		&fakePlugin{name: "a", rec: rec},
		&fakePlugin{name: "b", rec: rec, closeErr: errors.New("stuck")},
		&fakePlugin{name: "c", rec: rec},
	))
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := a.Stop()
	if err == nil || !strings.Contains(err.Error(), "plugin b: Close: stuck") {
		t.Fatalf("Stop error = %v, want the failing plugin named", err)
	}
	want := []string{"a.Init", "b.Init", "c.Init", "c.Close", "b.Close", "a.Close"}
	if got := rec.list(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

func TestAgentStartupTimeoutNamesThePlugin(t *testing.T) {
	rec := &recorder{}
	a := NewAgent(WithLogger(quietLogger()), WithStartupTimeout(50*time.Millisecond), WithPlugins(
		&fakePlugin{name: "fast", rec: rec},
		&fakePlugin{name: "slow", rec: rec, initDelay: time.Second},
	))
	start := time.Now()
	err := a.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "plugin slow: Init did not finish within the start-up timeout 50ms") {
		t.Fatalf("Start error = %v", err)
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Errorf("Start waited for the slow plugin instead of timing out")
	}
	// The plugin that finished is closed; the stuck one is not (its Init never returned).
	if got := rec.list(); !reflect.DeepEqual(got, []string{"fast.Init", "fast.Close"}) {
		t.Errorf("calls = %v", got)
	}
}

func TestAgentRunStopsWhenContextIsCancelled(t *testing.T) {
	rec := &recorder{}
	a := NewAgent(WithLogger(quietLogger()), WithPlugins(&fakePlugin{name: "a", rec: rec}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the agent started", func() bool { return len(rec.list()) > 0 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the context was cancelled")
	}
	if got := rec.list(); !reflect.DeepEqual(got, []string{"a.Init", "a.Close"}) {
		t.Errorf("calls = %v", got)
	}
}

func TestStartupTimeoutFromEnv(t *testing.T) {
	tests := []struct {
		value   string
		want    time.Duration
		wantErr string
	}{
		{value: "", want: DefaultStartupTimeout},
		{value: "90s", want: 90 * time.Second},
		{value: "2m", want: 2 * time.Minute},
		{value: "soon", wantErr: `STARTUPTIMEOUT: "soon" is not a positive duration`},
		{value: "-5s", wantErr: `STARTUPTIMEOUT: "-5s" is not a positive duration`},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.value), func(t *testing.T) {
			t.Setenv(StartupTimeoutEnv, tc.value)
			got, err := StartupTimeoutFromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

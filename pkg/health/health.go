// Package health aggregates the status that parts of the agent report (start-up, VPP
// connection, etcd, the controller) into one agent status, which drives the /liveness
// and /readiness probes and a Prometheus gauge. It holds no policy about what any part
// checks: each part reports its own state and reason.
package health

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"

	"github.com/prometheus/client_golang/prometheus"
)

// State is the status of one component, or of the whole agent.
type State int

// The states. The agent state is the most severe component state; in increasing
// severity: OK, Degraded, Init, Error (Degraded is numbered last to keep the gauge values
// of the others).
const (
	// OK: the component works.
	OK State = iota
	// Init: the component is starting (or reconnecting) and is not ready yet.
	Init
	// Error: the component has failed; the agent should be restarted if it persists.
	Error
	// Degraded: the component works and makes progress, but part of what it was asked
	// for is failing (the reason names it); it is being retried. Not ready, but alive.
	Degraded
)

// severity orders the states for the aggregate.
func (s State) severity() int {
	switch s {
	case OK:
		return 0
	case Degraded:
		return 1
	case Init:
		return 2
	}
	return 3
}

// String returns the state name used in probe bodies and logs.
func (s State) String() string {
	switch s {
	case OK:
		return "OK"
	case Init:
		return "INIT"
	case Error:
		return "ERROR"
	case Degraded:
		return "DEGRADED"
	}
	return "UNKNOWN"
}

// MarshalText makes states readable in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a state name written by MarshalText, so probe bodies round-trip.
func (s *State) UnmarshalText(text []byte) error {
	for _, st := range []State{OK, Init, Error, Degraded} {
		if string(text) == st.String() {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("unknown health state %q", text)
}

// ComponentStatus is the last report of one component.
type ComponentStatus struct {
	State  State     `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// AgentStatus is the aggregate of all components.
type AgentStatus struct {
	State      State                      `json:"state"`
	Components map[string]ComponentStatus `json:"components"`
}

// Registry collects component reports. It is safe for concurrent use.
type Registry struct {
	mu         sync.RWMutex
	components map[string]*ComponentStatus
	now        func() time.Time
}

// NewRegistry returns an empty registry: with no components the agent is OK.
func NewRegistry() *Registry {
	return &Registry{components: make(map[string]*ComponentStatus), now: time.Now}
}

// Reporter reports the status of one named component.
type Reporter struct {
	name string
	reg  *Registry
}

// Reporter registers the component (in state Init, so the agent is not ready before it
// says so) and returns its reporter. Asking twice for the same name returns a reporter
// for the same component without resetting it.
func (r *Registry) Reporter(name string) *Reporter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.components[name]; !ok {
		r.components[name] = &ComponentStatus{State: Init, Reason: "starting", Since: r.now()}
	}
	return &Reporter{name: name, reg: r}
}

// Report records the component's state and the reason for it.
func (p *Reporter) Report(state State, reason string) {
	r := p.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.components[p.name]
	if c.State != state || c.Reason != reason {
		c.Since = r.now()
	}
	c.State, c.Reason = state, reason
}

// Name is the component this reporter reports for.
func (p *Reporter) Name() string { return p.name }

// Status returns a snapshot of all components and the aggregate state.
func (r *Registry) Status() AgentStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	st := AgentStatus{State: OK, Components: make(map[string]ComponentStatus, len(r.components))}
	for name, c := range r.components {
		st.Components[name] = *c
		if c.State.severity() > st.State.severity() {
			st.State = c.State
		}
	}
	return st
}

// Problems lists "component: STATE (reason)" for every component that is not OK, sorted,
// for probe bodies and logs.
func (s AgentStatus) Problems() []string {
	var out []string
	for name, c := range s.Components {
		if c.State != OK {
			out = append(out, name+": "+c.State.String()+" ("+c.Reason+")")
		}
	}
	sort.Strings(out)
	return out
}

// Collector exports the component states as the gauge contiv_agent_component_state
// (0 OK, 1 INIT, 2 ERROR, 3 DEGRADED) labelled by component.
func (r *Registry) Collector() prometheus.Collector { return collector{r} }

var componentStateDesc = prometheus.NewDesc(
	"contiv_agent_component_state",
	"State of each agent component: 0 OK, 1 INIT (not ready), 2 ERROR, 3 DEGRADED (not ready, alive).",
	[]string{"component"}, nil)

type collector struct{ r *Registry }

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- componentStateDesc }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for name, comp := range c.r.Status().Components {
		ch <- prometheus.MustNewConstMetric(componentStateDesc, prometheus.GaugeValue, float64(comp.State), name)
	}
}

// RegistryKey is the key under which an agent's cells find its health registry.
var RegistryKey = infra.NewKey[*Registry]("health")

// MetricsKey is the key under which an agent's cells find its Prometheus registry.
var MetricsKey = infra.NewKey[*prometheus.Registry]("metrics")

// RegisterAll registers every collector with r; when one fails, those registered
// before it are unregistered again and the error is returned.
func RegisterAll(r prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := r.Register(c); err != nil {
			for _, done := range cs[:i] {
				r.Unregister(done)
			}
			return err
		}
	}
	return nil
}

// UnregisterAll unregisters every collector from r.
func UnregisterAll(r prometheus.Registerer, cs ...prometheus.Collector) {
	for _, c := range cs {
		r.Unregister(c)
	}
}

package kvscheduler

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// maxSatisfiers bounds how many satisfying keys a snapshot lists for one AnyOf
// dependency.
const maxSatisfiers = 8

// GraphNode is one value of the scheduler's graph as GET /scheduler/graph-snapshot shows
// it: what is wanted, what is applied, and how it hangs together with other values.
type GraphNode struct {
	Key        string          `json:"key"`
	Descriptor string          `json:"descriptor,omitempty"`
	State      api.ValueState  `json:"state"`
	Origin     api.ValueOrigin `json:"origin"`
	// Desired is the NB value (absent when nothing is wanted under the key).
	Desired json.RawMessage `json:"desired,omitempty"`
	// Applied is the value in the dataplane as the scheduler knows it.
	Applied json.RawMessage `json:"applied,omitempty"`
	// Metadata is the descriptor's metadata of the applied value, printed with %+v.
	Metadata string `json:"metadata,omitempty"`
	// DerivedFrom is the parent of a derived value; Derived the values derived from
	// this one.
	DerivedFrom string   `json:"derivedFrom,omitempty"`
	Derived     []string `json:"derived,omitempty"`
	// Dependencies of the desired value, each with what satisfies it now.
	Dependencies []GraphDependency `json:"dependencies,omitempty"`
	// Error is the error of the last operation or of the validation.
	Error string `json:"error,omitempty"`
}

// GraphDependency is one dependency of a value in a graph snapshot.
type GraphDependency struct {
	Label string `json:"label"`
	// Key is the key depended on; AnyOfPrefixes and AnyOfSelector describe an AnyOf
	// dependency instead.
	Key           string   `json:"key,omitempty"`
	AnyOfPrefixes []string `json:"anyOfPrefixes,omitempty"`
	AnyOfSelector bool     `json:"anyOfSelector,omitempty"`
	// Satisfied tells whether the dependency is met now; SatisfiedBy lists the
	// available values that meet it (at most maxSatisfiers keys for an AnyOf).
	Satisfied   bool     `json:"satisfied"`
	SatisfiedBy []string `json:"satisfiedBy,omitempty"`
}

// snapshotNode is what GraphSnapshot copies under the lock; values are encoded after.
type snapshotNode struct {
	GraphNode
	desired, applied proto.Message
}

// GraphSnapshot returns the values under keyPrefix ("" for all), sorted by key, with their
// state, desired and applied content, derivation and dependencies.
func (s *Scheduler) GraphSnapshot(keyPrefix string) ([]GraphNode, error) {
	if !s.initialized.Load() {
		return nil, nil
	}
	s.mu.RLock()
	nodes := make([]snapshotNode, 0, len(s.g.nodes))
	for k, n := range s.g.nodes {
		if strings.HasPrefix(k, keyPrefix) {
			nodes = append(nodes, s.g.snapshotOf(n))
		}
	}
	s.mu.RUnlock()

	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Key < nodes[j].Key })
	out := make([]GraphNode, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		var err error
		if n.Desired, err = api.MarshalProtoJSON(n.desired); err != nil {
			return nil, fmt.Errorf("desired value of %s: %w", n.Key, err)
		}
		if n.Applied, err = api.MarshalProtoJSON(n.applied); err != nil {
			return nil, fmt.Errorf("applied value of %s: %w", n.Key, err)
		}
		out[i] = n.GraphNode
	}
	return out, nil
}

// snapshotOf copies what a snapshot shows of n; the graph lock is held.
func (g *graph) snapshotOf(n *node) snapshotNode {
	sn := snapshotNode{desired: n.nb, applied: n.applied}
	gn := &sn.GraphNode
	gn.Key, gn.State, gn.Origin = n.key, n.state, n.origin
	if n.desc != nil {
		gn.Descriptor = n.desc.Name
	}
	if n.metadata != nil {
		gn.Metadata = fmt.Sprintf("%+v", n.metadata)
	}
	if n.parent != nil {
		gn.DerivedFrom = n.parent.key
	}
	for _, c := range n.children {
		gn.Derived = append(gn.Derived, c.key)
	}
	switch {
	case n.nbErr != nil:
		gn.Error = n.nbErr.Error()
	case n.lastErr != nil:
		gn.Error = n.lastErr.Error()
	}
	for i := range n.deps {
		d := &n.deps[i]
		gd := GraphDependency{Label: d.Label, Key: d.Key, AnyOfPrefixes: d.AnyOf.KeyPrefixes,
			AnyOfSelector: d.AnyOf.KeySelector != nil}
		gd.Satisfied, gd.SatisfiedBy = g.depSatisfied(d), g.satisfiers(d)
		gn.Dependencies = append(gn.Dependencies, gd)
	}
	return sn
}

// satisfiers returns the available values that satisfy d (at most maxSatisfiers).
func (g *graph) satisfiers(d *api.Dependency) []string {
	var out []string
	g.eachSatisfier(d, func(k string) bool {
		out = append(out, k)
		return len(out) < maxSatisfiers
	})
	return out
}

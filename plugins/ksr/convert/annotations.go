package convert

import (
	"fmt"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// DefaultMaxAnnotationBytes bounds the value of a reflected pod annotation. The values
// agents read are short ("memif1/memif, tap2/tap/stub" for contivpp.io/custom-if);
// Kubernetes lets all annotations of an object reach 256 KiB.
const DefaultMaxAnnotationBytes = 4096

// AgentAnnotations returns the annotations of m that agents read (pod.AgentAnnotations),
// nil when there is none. Every other key is left out: agents never read them, and
// reflecting them cost every agent memory and bolt space in proportion to what pods
// store there (issue 27: 1,200 pods with 256 KiB annotations took each agent from 47 to
// 863 MB).
func AgentAnnotations(m map[string]string) map[string]string {
	var out map[string]string
	for _, k := range pod.AgentAnnotations() {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[k] = v
		}
	}
	return out
}

// PodLimits are the bounds a reflected pod keeps to.
type PodLimits struct {
	// MaxAnnotationBytes bounds the value of each kept annotation (0: the default,
	// DefaultMaxAnnotationBytes).
	MaxAnnotationBytes int
}

// Sanitize removes from p every annotation whose value is longer than the bound and
// returns what it removed (the value is given as its length, never the text), so that
// the rest of the pod is reflected.
func (l PodLimits) Sanitize(p *pod.Pod) []FieldProblem {
	limit := l.MaxAnnotationBytes
	if limit <= 0 {
		limit = DefaultMaxAnnotationBytes
	}
	var problems []FieldProblem
	for _, k := range sortedKeys(p.GetAnnotations()) {
		if n := len(p.Annotations[k]); n > limit {
			problems = append(problems, FieldProblem{
				Field:  "metadata.annotations[" + k + "]",
				Value:  fmt.Sprintf("%d bytes", n),
				Reason: fmt.Sprintf("is longer than the %d bytes reflected for an annotation: left out", limit),
			})
			delete(p.Annotations, k)
		}
	}
	if len(p.Annotations) == 0 {
		p.Annotations = nil
	}
	return problems
}

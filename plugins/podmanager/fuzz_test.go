package podmanager

import (
	"strings"
	"testing"
)

// FuzzParsePodArgs feeds arbitrary CNI_ARGS to the agent's parser: it gives a pod that
// follows the Kubernetes name rules, or an error.
func FuzzParsePodArgs(f *testing.F) {
	for _, seed := range []string{
		"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=c1",
		"K8S_POD_NAME=../../etc;K8S_POD_NAMESPACE=default",
		"K8S_POD_NAME=" + strings.Repeat("a", 300) + ";K8S_POD_NAMESPACE=default",
		";;=;K8S_POD_NAME",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		id, err := ParsePodArgs(args)
		if err != nil {
			return
		}
		if verr := id.Validate(); verr != nil {
			t.Fatalf("ParsePodArgs(%q) accepted %v: %v", args, id, verr)
		}
		if strings.ContainsAny(id.Name+id.Namespace, "/;= \x00") {
			t.Fatalf("ParsePodArgs(%q) = %q", args, id)
		}
	})
}

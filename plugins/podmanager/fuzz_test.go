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

// FuzzCNICacheEntry feeds arbitrary entries of the runtime's CNI cache to the recovery's
// parser: a record it returns follows the Kubernetes name rules and is complete.
func FuzzCNICacheEntry(f *testing.F) {
	const socket = "/var/run/contiv/cni.sock"
	for _, seed := range []string{
		`{"kind":"cniCacheV1","containerId":"c1","config":"eyJ0eXBlIjoiY29udGl2LWNuaSIsImdycGNTZXJ2ZXIiOiIvdmFyL3J1bi9jb250aXYvY25pLnNvY2sifQ==","ifName":"eth0","netns":"/var/run/netns/x","cniArgs":[["K8S_POD_NAMESPACE","default"],["K8S_POD_NAME","web"]],"result":{"interfaces":[{"name":"eth0","sandbox":"/var/run/netns/x"}],"ips":[{"address":"10.1.1.2/32","interface":0}]}}`,
		`{"kind":"cniCacheV1","containerId":"c1","config":"e30=","cniArgs":[["K8S_POD_NAME","../../etc"]]}`,
		`{"kind":"other"}`,
		`{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := parseCacheEntry(data, socket)
		if r == nil {
			return
		}
		if err := r.validate(); err != nil {
			t.Fatalf("incomplete record %+v: %v", r, err)
		}
		if err := r.id().Validate(); err != nil {
			t.Fatalf("record of an invalid pod %+v: %v", r, err)
		}
	})
}

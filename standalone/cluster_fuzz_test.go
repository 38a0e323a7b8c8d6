package standalone

import (
	"os"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"
)

// FuzzClusterFileParse feeds arbitrary cluster files to the loader's parser: a bad file
// gives errors, never a panic (parse recovers from one, and reports it as "could not be
// decoded", which this target treats as a crash) or a hang.
func FuzzClusterFileParse(f *testing.F) {
	if data, err := os.ReadFile("../k8s/examples/demo-cluster.yaml"); err == nil {
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"---\n# comment\n---\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n1, annotations: {contiv.vpp/vpp-ip: 192.168.16.1/24}}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\nspec: {clusterIP: 10.96.0.10, ports: [{port: 53, protocol: UDP}]}\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: default}\n  status: {podIP: 10.1.1.2, hostIP: 192.168.16.1}\n",
		"apiVersion: v1\nkind: Endpoints\nmetadata: {name: s, namespace: default}\nsubsets: [{addresses: [{ip: 10.1.1.2}], ports: [{port: 53}]}]\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"}}",
	} {
		f.Add([]byte(seed))
	}
	log, _ := logtest.NewNullLogger()
	l := newClusterLoader("cluster.yaml", nil, log)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, errs := l.parse(data)
		for _, err := range errs {
			if strings.Contains(err.Error(), "cluster file could not be decoded") {
				t.Fatalf("parse panicked: %v", err)
			}
		}
	})
}

package standalone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

const demoFile = "../k8s/examples/demo-cluster.yaml"

// env is a running plugin and a client of its etcd.
type env struct {
	t    *testing.T
	p    *Plugin
	db   *clientv3.Client
	logs *logtest.Hook
}

func startEnv(t *testing.T, clusterFile string) *env {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	if testing.Verbose() {
		log.SetOutput(os.Stderr)
	}
	p := NewPlugin(Deps{Log: log, Dir: t.TempDir(), EtcdAddr: "127.0.0.1:0", ClusterFile: clusterFile,
		ClusterPollInterval: 20 * time.Millisecond})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	if _, err := p.EtcdConfig().LoadConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	db, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &env{t: t, p: p, db: db, logs: hook}
}

// state returns every key under the KSR prefix (relative) with its decoded value.
func (e *env) state() map[string]proto.Message {
	e.t.Helper()
	resp, err := e.db.Get(context.Background(), ksrkey.KsrPrefix, clientv3.WithPrefix())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]proto.Message{}
	for _, kv := range resp.Kvs {
		k := strings.TrimPrefix(string(kv.Key), ksrkey.KsrPrefix)
		res, ok := dbresources.GetResourceByKey(k)
		if !ok {
			e.t.Fatalf("unknown key %s", kv.Key)
		}
		v, err := res.Unmarshal(kv.Value)
		if err != nil {
			e.t.Fatalf("%s: %v", kv.Key, err)
		}
		out[k] = v
	}
	return out
}

func (e *env) waitFor(what string, cond func(map[string]proto.Message) bool) map[string]proto.Message {
	e.t.Helper()
	var st map[string]proto.Message
	testkit.Eventually(e.t, testkit.DefaultTimeout, what, func() error {
		if st = e.state(); !cond(st) {
			return fmt.Errorf("state: %v", keysOf(st))
		}
		return nil
	})
	return st
}

// awaitErrorLogged waits until an error entry logged contains msg and returns the error
// entries logged so far.
func awaitErrorLogged(t *testing.T, e *env, msg string) string {
	t.Helper()
	var logs string
	testkit.Eventually(t, testkit.DefaultTimeout, fmt.Sprintf("%q logged", msg), func() error {
		if logs = e.errorLogs(); !strings.Contains(logs, msg) {
			return fmt.Errorf("logs:\n%s", logs)
		}
		return nil
	})
	return logs
}

func keysOf(m map[string]proto.Message) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// errorLogs returns the messages and error fields of the error entries logged so far.
func (e *env) errorLogs() string {
	var b strings.Builder
	for _, entry := range e.logs.AllEntries() {
		if entry.Level <= logrus.ErrorLevel {
			b.WriteString(entry.Message)
			if err, ok := entry.Data[logrus.ErrorKey]; ok {
				b.WriteString(": ")
				b.WriteString(err.(error).Error())
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	// Make sure the change is seen even on file systems with coarse timestamps.
	later := time.Now().Add(time.Duration(len(content)) * time.Millisecond)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

func TestDemoClusterLoadsInKSRLayout(t *testing.T) {
	e := startEnv(t, demoFile)
	st := e.state()
	want := map[string]int{"k8s/node/": 2, "k8s/namespace/": 2, "k8s/pod/": 6, "k8s/service/": 4, "k8s/endpoints/": 4,
		"k8s/endpointslice/": 4, "allocatedIDs/": 2}
	got := map[string]int{}
	for k := range st {
		for prefix := range want {
			if strings.HasPrefix(k, prefix) {
				got[prefix]++
			}
		}
	}
	for prefix, n := range want {
		if got[prefix] != n {
			t.Errorf("%d keys under %s, want %d", got[prefix], prefix, n)
		}
	}
	if len(st) != 24 {
		t.Errorf("%d keys in total, want 24: %v", len(st), keysOf(st))
	}
	checks := []struct {
		key  string
		test func(proto.Message) bool
	}{
		{vppnode.Key(1), func(m proto.Message) bool { return m.(*vppnode.VppNode).GetName() == "k8s-master" }},
		{vppnode.Key(2), func(m proto.Message) bool {
			n := m.(*vppnode.VppNode)
			return n.GetName() == "k8s-worker1" && len(n.GetIpAddresses()) == 1 && n.GetIpAddresses()[0] == "192.168.16.2/24"
		}},
		{node.Key("k8s-worker1"), func(m proto.Message) bool {
			n := m.(*node.Node)
			return n.GetPod_CIDR() == "10.1.2.0/24" && n.GetAddresses()[0].GetAddress() == "10.20.0.11" &&
				n.GetAddresses()[0].GetType() == node.NodeAddress_NodeInternalIP
		}},
		{pod.Key("web-1", "default"), func(m proto.Message) bool {
			p := m.(*pod.Pod)
			return p.GetIpAddress() == "10.1.1.2" && p.GetHostIpAddress() == "10.20.0.10" &&
				p.GetContainer()[0].GetPort()[0].GetName() == "http"
		}},
		{pod.Key("coredns-2", "kube-system"), func(m proto.Message) bool { return m.(*pod.Pod).GetIpAddress() == "10.1.2.4" }},
		{service.Key("api", "default"), func(m proto.Message) bool {
			s := m.(*service.Service)
			return s.GetServiceType() == "NodePort" && s.GetPort()[0].GetNodePort() == 30080 && s.GetClusterIp() == "10.96.0.101"
		}},
		{service.Key("web-external", "default"), func(m proto.Message) bool {
			s := m.(*service.Service)
			return s.GetExternalIps()[0] == "10.20.0.100" && s.GetSessionAffinity() == "ClientIP" &&
				s.GetSessionAffinityTimeout() == 10800 && s.GetPort()[0].GetTargetPort().GetStringVal() == "http"
		}},
		{service.Key("kube-dns", "kube-system"), func(m proto.Message) bool {
			s := m.(*service.Service)
			return len(s.GetPort()) == 2 && s.GetPort()[0].GetProtocol() == "UDP" && s.GetServiceType() == "ClusterIP"
		}},
		{endpoints.Key("web", "default"), func(m proto.Message) bool {
			s := m.(*endpoints.Endpoints).GetEndpointSubsets()[0]
			return len(s.GetAddresses()) == 2 && s.GetAddresses()[1].GetNodeName() == "k8s-worker1" &&
				s.GetAddresses()[1].GetTargetRef().GetName() == "web-2" && s.GetPorts()[0].GetName() == "http"
		}},
		{endpointslice.Key("web-mirror-0", "default"), func(m proto.Message) bool {
			s := m.(*endpointslice.EndpointSlice)
			return s.GetServiceName() == "web" && len(s.GetEndpoints()) == 2 && s.GetEndpoints()[1].GetNodeName() == "k8s-worker1" &&
				s.GetEndpoints()[1].GetReady() && s.GetPorts()[0].GetName() == "http"
		}},
		{namespace.Key("kube-system"), func(m proto.Message) bool { return m.(*namespace.Namespace).GetName() == "kube-system" }},
	}
	for _, c := range checks {
		v, ok := st[c.key]
		if !ok {
			t.Errorf("%s missing", c.key)
			continue
		}
		if !c.test(v) {
			t.Errorf("%s = %v", c.key, v)
		}
	}
	if logs := e.errorLogs(); logs != "" {
		t.Errorf("errors logged:\n%s", logs)
	}
	for _, entry := range e.logs.AllEntries() {
		if entry.Level == logrus.WarnLevel && entry.Message != noLinuxSideWarning {
			t.Errorf("warning logged for the demo file: %s %v", entry.Message, entry.Data)
		}
	}
}

func TestPluginServesTheSimulatedVPP(t *testing.T) {
	e := startEnv(t, "")
	fi, err := os.Stat(e.p.VPPSocketPath())
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %s: %v %v", e.p.VPPSocketPath(), fi, err)
	}
	if filepath.Base(e.p.VPPSocketPath()) != "api.sock" {
		t.Errorf("socket path %s", e.p.VPPSocketPath())
	}
	// The stats segment, for the agent's statscollector, beside it.
	if fi, err := os.Stat(e.p.StatsSocketPath()); err != nil || fi.Mode()&os.ModeSocket == 0 || filepath.Dir(e.p.StatsSocketPath()) != filepath.Dir(e.p.VPPSocketPath()) {
		t.Errorf("stats socket %s: %v %v", e.p.StatsSocketPath(), fi, err)
	}
	if _, ok := e.p.VPP().InterfaceByName(DefaultNIC); !ok {
		t.Errorf("the simulated VPP has no %s", DefaultNIC)
	}
	if len(e.state()) != 0 {
		t.Error("etcd not empty without a cluster file")
	}
	// Without the Linux side of TAPs the demo cannot be healthy: the log says so.
	warned := false
	for _, entry := range e.logs.AllEntries() {
		warned = warned || (entry.Level == logrus.WarnLevel && entry.Message == noLinuxSideWarning)
	}
	if !warned {
		t.Error("no warning that the simulator runs without the Linux side of TAPs")
	}
	if err := e.p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{e.p.VPPSocketPath(), e.p.StatsSocketPath()} {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("socket %s left after Close: %v", s, err)
		}
	}
}

func TestMissingClusterFileFailsInit(t *testing.T) {
	p := NewPlugin(Deps{Log: logrus.New(), Dir: t.TempDir(), EtcdAddr: "127.0.0.1:0",
		ClusterFile: filepath.Join(t.TempDir(), "nope.yaml")})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), "cluster file") {
		t.Errorf("Init = %v", err)
	}
	if p.etcd != nil || p.sim != nil {
		t.Error("Init failed but left things running")
	}
}

const clusterA = `apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {podCIDR: 10.1.1.0/24}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: v1
kind: Service
metadata: {name: a}
spec:
  clusterIP: 10.96.0.1
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: a}
subsets: [{addresses: [{ip: 10.1.1.2}], ports: [{name: http, port: 80}]}]
`

// clusterB drops service a and node n2, adds service b (endpoints from a slice).
const clusterB = `apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {podCIDR: 10.1.1.0/24}
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: default}
spec:
  clusterIP: 10.96.0.2
  ports: [{name: http, port: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: b-xyz
  labels: {kubernetes.io/service-name: b}
addressType: IPv4
endpoints: [{addresses: [10.1.1.3]}]
ports: [{name: http, port: 8080}]
`

func TestClusterFileEditsAreApplied(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	writeFile(t, file, clusterA)
	e := startEnv(t, file)
	st := e.state()
	// The Endpoints object of a is written as the legacy value and mirrored into a
	// slice, so that agents reading either find the endpoints.
	for _, k := range []string{service.Key("a", "default"), endpoints.Key("a", "default"),
		endpointslice.Key("a-mirror-0", "default"), node.Key("n2"), vppnode.Key(2)} {
		if st[k] == nil {
			t.Fatalf("%s missing after start: %v", k, keysOf(st))
		}
	}
	if _, err := e.db.Put(context.Background(), ksrkey.AgentPrefix("n2")+"config/vpp/v2/interfaces/loop0", "{}"); err != nil {
		t.Fatal(err)
	}

	begin := time.Now()
	writeFile(t, file, clusterB)
	// The edit is applied prefix by prefix (as contiv-ksr writes object by object):
	// wait for its last prefixes, the slices and the legacy endpoints.
	st = e.waitFor("endpoints of b in, of a out", func(st map[string]proto.Message) bool {
		return st[endpoints.Key("b", "default")] != nil && st[endpoints.Key("a", "default")] == nil &&
			st[endpointslice.Key("b-xyz", "default")] != nil && st[endpointslice.Key("a-mirror-0", "default")] == nil
	})
	t.Logf("edit applied in %v", time.Since(begin))
	if st[service.Key("b", "default")] == nil || st[service.Key("a", "default")] != nil || st[node.Key("n2")] != nil || st[vppnode.Key(2)] != nil {
		t.Errorf("edit not applied: %v", keysOf(st))
	}
	eps, ok := st[endpoints.Key("b", "default")].(*endpoints.Endpoints)
	if !ok || eps.GetEndpointSubsets()[0].GetAddresses()[0].GetIp() != "10.1.1.3" {
		t.Errorf("endpoints of b = %v", st[endpoints.Key("b", "default")])
	}
	if st[vppnode.Key(1)] == nil {
		t.Error("the ID of the remaining node was released")
	}
	resp, err := e.db.Get(context.Background(), ksrkey.AgentPrefix("n2"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("configuration of the removed node n2 kept: %v %v", resp, err)
	}
}

func TestBrokenClusterFileKeepsTheLastState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	writeFile(t, file, clusterA)
	e := startEnv(t, file)
	before := e.state()

	broken := []struct {
		name, content string
		wantLogged    []string
	}{
		{"YAML syntax", clusterB + "---\nkind: Service\nmetadata: {name: c\n", []string{"document 4 (line 22)"}},
		{"bad field type", clusterB + "---\napiVersion: v1\nkind: Service\nmetadata: {name: c}\nspec: {ports: 80}\n",
			[]string{"document 4 (line 22) Service c"}},
		{"object without a name", clusterB + "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: default}\n",
			[]string{"pod in namespace \"default\": no name"}},
		{"duplicate", clusterB + "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", []string{"k8s/node/n1: defined twice"}},
		{"no apiVersion", "kind: Node\nmetadata: {name: n1}\n", []string{"document 1 (line 1) Node n1"}},
		{"bad VPP IP annotation", "apiVersion: v1\nkind: Node\nmetadata: {name: n3, annotations: {" + VPPIPAnnotation + ": 10.0.0.1}}\n",
			[]string{`node n3: annotation standalone.contivpp.io/vpp-ip-addresses: "10.0.0.1" is not an address with a prefix length`}},
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			e.logs.Reset()
			writeFile(t, file, b.content)
			logs := awaitErrorLogged(t, e, "cluster file rejected")
			for _, w := range b.wantLogged {
				if !strings.Contains(logs, w) {
					t.Errorf("logs lack %q:\n%s", w, logs)
				}
			}
			after := e.state()
			if len(after) != len(before) {
				t.Errorf("state changed: %v -> %v", keysOf(before), keysOf(after))
			}
			for k, v := range before {
				if !proto.Equal(v, after[k]) {
					t.Errorf("%s changed", k)
				}
			}
		})
	}

	// A removed file keeps the state too (checked once the loader has seen it gone);
	// once fixed, the file applies.
	e.logs.Reset()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	awaitErrorLogged(t, e, "cluster file unreadable")
	if len(e.state()) != len(before) {
		t.Error("state changed when the file disappeared")
	}
	writeFile(t, file, clusterB)
	e.waitFor("fixed file applied", func(st map[string]proto.Message) bool {
		return st[service.Key("b", "default")] != nil && st[service.Key("a", "default")] == nil
	})
}

func TestParseSkipsKindsThatAreNotReflected(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	l := newClusterLoader("cluster.yaml", nil, log)
	data := `---
# leading separator and comment-only documents are fine
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata: {name: p1}
    status: {podIP: 10.1.1.5}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: cm}
---
apiVersion: v1
kind: Service
metadata: {name: s, namespace: prod}
spec: {clusterIP: 10.96.0.5, clustrIP: typo}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec: {podSelector: {}}
`
	desired, nodes, errs := l.parse([]byte(data))
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(nodes) != 0 {
		t.Errorf("nodes = %v", nodes)
	}
	wantKeys := []string{pod.Key("p1", "default"), service.Key("s", "prod"), "k8s/policy/deny/namespace/default"}
	if len(desired) != len(wantKeys) {
		t.Errorf("keys = %v, want %v", keysOf(desired), wantKeys)
	}
	for _, k := range wantKeys {
		if desired[k] == nil {
			t.Errorf("%s missing", k)
		}
	}
	var warnings []string
	for _, entry := range hook.AllEntries() {
		if entry.Level == logrus.WarnLevel {
			warnings = append(warnings, entry.Message+" "+entry.Data["object"].(string))
		}
	}
	joined := strings.Join(warnings, "\n")
	for _, w := range []string{
		"kind not reflected into etcd: skipped document 1 (line 4) Deployment web",
		"kind unknown to Kubernetes' built-in types: skipped document 2 (line 8) Widget w",
		"kind not reflected into etcd: skipped document 3 (line 12) List item 1 ConfigMap cm",
		"fields ignored document 4 (line 23) Service prod/s",
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings lack %q:\n%s", w, joined)
		}
	}
}

func TestSplitDocumentsNumbersLines(t *testing.T) {
	docs := splitDocuments([]byte("a: 1\n---\n\n# c\n---   \nb: 2\n--- # x\nc: 3\n"))
	if len(docs) != 3 {
		t.Fatalf("%d documents: %v", len(docs), docs)
	}
	for i, want := range []struct{ index, line int }{{1, 1}, {2, 6}, {3, 8}} {
		if docs[i].index != want.index || docs[i].line != want.line {
			t.Errorf("document %d = %v, want %+v", i, docs[i], want)
		}
	}
}

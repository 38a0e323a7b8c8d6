package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// demoObject is what the tests read from a document of a cluster file.
type demoObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ClusterIP string `json:"clusterIP"`
		Ports     []struct {
			Protocol string `json:"protocol"`
			Port     int    `json:"port"`
		} `json:"ports"`
	} `json:"spec"`
}

// documentSeparator splits a multi-document YAML file.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// clusterDocs splits a cluster file into its documents and decodes each (a document of
// comments only decodes to an empty object).
func clusterDocs(t *testing.T, data []byte) ([]string, []demoObject) {
	t.Helper()
	docs := documentSeparator.Split(string(data), -1)
	objs := make([]demoObject, len(docs))
	for i, d := range docs {
		if err := yaml.Unmarshal([]byte(d), &objs[i]); err != nil {
			t.Fatalf("cluster file, document %d: %v", i+1, err)
		}
	}
	return docs, objs
}

// natMapping is a static mapping "show nat44 static mappings" must list for a service
// port: "<proto> ... external <cluster IP>:<port>".
type natMapping struct {
	service string
	proto   string
	ip      string
	port    int
}

func (m natMapping) String() string {
	return fmt.Sprintf("%s %s %s:%d", m.service, m.proto, m.ip, m.port)
}

func (m natMapping) in(cli string) bool {
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^\s*%s\s.*\bexternal %s:%d\b`, m.proto, regexp.QuoteMeta(m.ip), m.port))
	return re.MatchString(cli)
}

// serviceMappings returns the mappings of the cluster IPs of the services in objs.
func serviceMappings(objs []demoObject) []natMapping {
	var out []natMapping
	for _, o := range objs {
		if o.Kind != "Service" || o.Spec.ClusterIP == "" || o.Spec.ClusterIP == "None" {
			continue
		}
		for _, p := range o.Spec.Ports {
			proto := strings.ToLower(p.Protocol)
			if proto == "" {
				proto = "tcp"
			}
			out = append(out, natMapping{
				service: o.Metadata.Namespace + "/" + o.Metadata.Name, proto: proto, ip: o.Spec.ClusterIP, port: p.Port,
			})
		}
	}
	return out
}

// TestStandaloneDemo runs what `make run` runs (README): the agent in standalone mode on
// the example cluster, with the in-process VPP simulator, here inside a node namespace.
func TestStandaloneDemo(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	bin := binaries(t, e)
	dir := t.TempDir()

	// A copy of the example cluster, so that the test can edit it.
	demo, err := os.ReadFile(filepath.Join(e.root, "k8s", "examples", "demo-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, objs := clusterDocs(t, demo)
	mappings := serviceMappings(objs)
	if len(mappings) == 0 {
		t.Fatal("the example cluster has no service with a cluster IP")
	}
	cluster := filepath.Join(dir, "demo-cluster.yaml")
	if err := os.WriteFile(cluster, demo, 0o644); err != nil {
		t.Fatal(err)
	}
	httpConf := filepath.Join(dir, "http.conf")
	if err := os.WriteFile(httpConf, []byte("endpoint: "+restEndpoint+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	ns := newNodeNetns(t, e)
	start := time.Now()
	agent := startProcess(t, ns, dir, "contiv-agent", filepath.Join(bin, "contiv-agent"),
		"-standalone", "-standalone-dir", filepath.Join(dir, "standalone"),
		"-cluster", cluster,
		"-contiv-config", filepath.Join(e.root, "k8s", "examples", "contiv.conf"),
		"-http-config", httpConf,
		"-node-name", nodeName)
	rest := newRESTClient(t, ns, restEndpoint)

	testkit.Eventually(t, 20*time.Second, "GET /readiness is 200 OK", func() error {
		if err := agent.exitedError(); err != nil {
			return err
		}
		return rest.ready()
	})
	t.Logf("agent ready %v after start", time.Since(start).Round(time.Millisecond))

	var ipam ipamData
	testkit.Eventually(t, 10*time.Second, "GET /contiv/v1/ipam has the node's address plan", func() error {
		if err := rest.getJSON("/contiv/v1/ipam", &ipam); err != nil {
			return err
		}
		if ipam.PodSubnetThisNode == "" {
			return fmt.Errorf("no pod subnet yet: %+v", ipam)
		}
		return nil
	})
	want := ipamData{NodeID: 1, NodeName: nodeName, NodeIP: "192.168.16.1", PodSubnetThisNode: podSubnet, VppHostNetwork: "172.30.1.0/24"}
	if ipam != want {
		t.Errorf("GET /contiv/v1/ipam = %+v, want %+v", ipam, want)
	}

	// Every cluster IP of the example services is a static mapping in VPP.
	var nat string
	err = testkit.Wait(context.Background(), 10*time.Second, "NAT44 static mappings of every service", func() error {
		if nat, err = rest.vppCLI("show nat44 static mappings"); err != nil {
			return err
		}
		if missing := missingMappings(nat, mappings); len(missing) > 0 {
			return fmt.Errorf("missing %v in:\n%s", missing, nat)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}

	// The metrics of the agent.
	code, body, err := rest.do(http.MethodGet, "/metrics", nil)
	if err != nil || code != http.StatusOK {
		t.Errorf("GET /metrics: %d %v", code, err)
	}
	names := slices.Compact(slices.Sorted(slices.Values(regexp.MustCompile(`(?m)^contiv_[a-zA-Z0-9_]+`).FindAllString(string(body), -1))))
	if len(names) == 0 {
		t.Errorf("GET /metrics has no contiv_ metric:\n%.2000s", body)
	} else {
		t.Logf("%d contiv_ metrics, e.g. %v", len(names), names[:min(len(names), 5)])
	}

	// The simulator created the Linux side of tap-vpp2 in the node namespace, and the
	// agent configured it (contiv.conf address plan: 172.30.1.2/24 on vpp1).
	if err := testkit.Wait(context.Background(), 5*time.Second, "vpp1 configured in the node namespace", func() error {
		s, err := ns.state()
		if err != nil {
			return err
		}
		if l := s.link("vpp1"); l == nil || !slices.Contains(l.ipv4(), "172.30.1.2/24") {
			return fmt.Errorf("no vpp1 with 172.30.1.2/24: %s", s)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}

	// Remove the last service (and its endpoints) from the cluster file: its mappings go.
	var removed string
	for i := len(objs) - 1; i >= 0; i-- {
		if objs[i].Kind == "Service" {
			removed = objs[i].Metadata.Namespace + "/" + objs[i].Metadata.Name
			break
		}
	}
	var kept []string
	for i, d := range docs {
		o := objs[i]
		if (o.Kind == "Service" || o.Kind == "Endpoints") && o.Metadata.Namespace+"/"+o.Metadata.Name == removed {
			continue
		}
		kept = append(kept, d)
	}
	if err := writeFileAtomic(cluster, []byte(strings.Join(kept, "---\n"))); err != nil {
		t.Fatal(err)
	}
	var gone, stay []natMapping
	for _, m := range mappings {
		if m.service == removed {
			gone = append(gone, m)
		} else {
			stay = append(stay, m)
		}
	}
	edited := time.Now()
	err = testkit.Wait(context.Background(), 10*time.Second, "the mappings of the removed service "+removed+" disappear", func() error {
		if nat, err = rest.vppCLI("show nat44 static mappings"); err != nil {
			return err
		}
		var still []natMapping
		for _, m := range gone {
			if m.in(nat) {
				still = append(still, m)
			}
		}
		if len(still) > 0 {
			return fmt.Errorf("still %v in:\n%s", still, nat)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	} else {
		t.Logf("mappings of %s removed %v after the file was saved", removed, time.Since(edited).Round(time.Millisecond))
	}
	if missing := missingMappings(nat, stay); len(missing) > 0 {
		t.Errorf("after removing %s, other mappings went too: %v in:\n%s", removed, missing, nat)
	}

	// SIGTERM stops the agent with exit code 0; the simulated VPP goes with it, and with
	// it the Linux side of its TAP.
	stopped := time.Now()
	exit, err := agent.stop(syscall.SIGTERM, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if exit != 0 {
		t.Errorf("the agent exited with %d after SIGTERM, want 0", exit)
	}
	t.Logf("agent stopped %v after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	if s, err := ns.state(); err != nil {
		t.Error(err)
	} else if len(s.links) != 1 {
		t.Errorf("after the agent stopped, the node namespace still has %s", s)
	}
}

func missingMappings(cli string, ms []natMapping) []natMapping {
	var missing []natMapping
	for _, m := range ms {
		if !m.in(cli) {
			missing = append(missing, m)
		}
	}
	return missing
}

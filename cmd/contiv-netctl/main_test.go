package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	linuxif "github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/natplugin"
	"github.com/contiv-vpp/contiv-vpp/standalone"
)

// netctl runs one command line in-process and returns its output.
func netctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// mustNetctl runs a command line that must succeed.
func mustNetctl(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := netctl(t, args...)
	if code != 0 {
		t.Fatalf("contiv-netctl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func TestPathsAndDescriptorsMatchTheAgent(t *testing.T) {
	for got, want := range map[string]string{
		ipamPath: ipam.IPAMPath, allocationsPath: ipam.AllocationsPath, cliPath: govppmux.CLIPath,
		dumpPath: kvscheduler.DumpPath, eventHistoryPath: controller.EventHistoryPath,
		resyncPath: controller.ResyncPath, downstreamResyncPath: kvscheduler.DownstreamResyncPath,
		descVPPInterface: ifaceidx.DescriptorName, descVPPRoute: l3plugin.RouteDescriptorName,
		descVPPARP: l3plugin.ARPDescriptorName, descDNAT44: natplugin.DNAT44DescriptorName,
		descNAT44Global: natplugin.GlobalDescriptorName, descNAT44Interface: natplugin.InterfaceDescriptorName,
		descNAT44Address: natplugin.AddressDescriptorName, descLinuxInterface: linuxif.InterfaceDescriptorName,
	} {
		if got != want {
			t.Errorf("netctl uses %q where the agent has %q", got, want)
		}
	}
}

// runningAgent is a contiv-agent -standalone started for the tests (the demo cluster,
// REST on a free loopback port, no Linux side of the TAPs: it runs in the test's
// network namespace).
type runningAgent struct {
	dir    string
	config string // netctl.conf written by the agent
	cmd    *exec.Cmd
	log    bytes.Buffer
}

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// buildAgent builds contiv-agent once per test binary.
func buildAgent(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "netctl-test-bin-")
		if err != nil {
			agentErr = err
			return
		}
		agentBin = filepath.Join(dir, "contiv-agent")
		agentErr = testkit.GoBuild("", filepath.Join("..", ".."), agentBin, "./cmd/contiv-agent")
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentBin
}

func startAgent(t *testing.T) *runningAgent {
	t.Helper()
	a := launchAgent(t, "", "-standalone-linux=false")
	// Ready for netctl: the config is written, the node has its ID and the services
	// of the demo cluster are rendered in VPP.
	testkit.Eventually(t, 60*time.Second, "the agent renders the demo services", func() error {
		out, errOut, code := netctl(t, "--config", a.config, "services", "--node", "k8s-master")
		if code != 0 {
			return fmt.Errorf("services: %s", errOut)
		}
		if !strings.Contains(out, "kube-system/kube-dns") {
			return fmt.Errorf("services: no kube-dns yet:\n%s", out)
		}
		return nil
	})
	return a
}

// launchAgent starts contiv-agent -standalone as node k8s-master of the demo cluster,
// in the network namespace netns ("": the test's), with the extra flags.
func launchAgent(t *testing.T, netns string, flags ...string) *runningAgent {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not in PATH: cannot build contiv-agent")
	}
	bin := buildAgent(t)
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	a := &runningAgent{dir: t.TempDir()}
	httpConf := filepath.Join(a.dir, "http.conf")
	if err := os.WriteFile(httpConf, []byte("endpoint: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sa := filepath.Join(a.dir, "standalone")
	a.config = filepath.Join(sa, standalone.NetctlConfFile)
	args := append([]string{bin, "-standalone", "-standalone-dir", sa,
		"-standalone-etcd", "127.0.0.1:0", "-node-name", "k8s-master",
		"-cluster", filepath.Join(root, "k8s", "examples", "demo-cluster.yaml"),
		"-contiv-config", filepath.Join(root, "k8s", "examples", "contiv.conf"),
		"-http-config", httpConf}, flags...)
	if netns != "" {
		args = append([]string{"ip", "netns", "exec", netns}, args...) // ip execs the agent
	}
	a.cmd = exec.Command(args[0], args[1:]...)
	a.cmd.Stdout, a.cmd.Stderr = &a.log, &a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log.String())
		}
	})
	return a
}

// TestEveryCommandAgainstARunningAgent runs each command, as a table and as JSON,
// against a running standalone agent found through the netctl.conf it wrote.
func TestEveryCommandAgainstARunningAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts contiv-agent")
	}
	a := startAgent(t)
	cfg := []string{"--config", a.config, "--timeout", "3s"} // k8s-worker1 has no agent
	cmd := func(args ...string) []string { return append(append([]string{}, cfg...), args...) }
	decode := func(t *testing.T, out string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
	}

	t.Run("nodes", func(t *testing.T) {
		out := mustNetctl(t, cmd("nodes")...)
		for _, want := range []string{"ID", "STATE", "VPP", "k8s-master", "192.168.16.1/24", "k8s-worker1"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		var nodes []nodeStatus
		decode(t, mustNetctl(t, cmd("nodes", "-o", "json")...), &nodes)
		if len(nodes) < 2 || nodes[0].Name != "k8s-master" || nodes[0].ID != 1 || !strings.HasPrefix(nodes[0].VPPVersion, "v") ||
			nodes[0].State == "" || nodes[0].State == "UNREACHABLE" {
			t.Errorf("nodes = %+v", nodes)
		}
		var fromYAML []map[string]any
		if err := yaml.Unmarshal([]byte(mustNetctl(t, cmd("nodes", "-o", "yaml")...)), &fromYAML); err != nil || len(fromYAML) != len(nodes) {
			t.Errorf("-o yaml: %v, %d nodes", err, len(fromYAML))
		}
	})
	t.Run("pods", func(t *testing.T) {
		// The demo cluster's pods of this node hold their IPs (IPAM from the cluster
		// state); no CNI ADD wires them here (no Linux side of the TAPs), so their
		// interfaces are unknown: the join is covered by TestPodsJoinAllocationsWithInterfaces.
		out := mustNetctl(t, cmd("pods", "--node", "k8s-master")...)
		for _, want := range []string{"VPP-IF", "LINUX-IF", "web-1", "10.1.1.2", "kube-system"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		var pods []podRow
		decode(t, mustNetctl(t, cmd("pods", "-o", "json")...), &pods)
		found := false
		for _, p := range pods {
			found = found || (p.Node == "k8s-master" && p.Namespace == "default" && p.Name == "web-1" && p.IP == "10.1.1.2")
		}
		if !found {
			t.Errorf("pods = %+v, want default/web-1 10.1.1.2 on k8s-master", pods)
		}
	})
	t.Run("ipam", func(t *testing.T) {
		out := mustNetctl(t, cmd("ipam", "k8s-master")...)
		for _, want := range []string{"POD-SUBNET", "k8s-master", "192.168.16.1", "10.1.1.0/24", "172.30.1.0/24"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		var rows []ipamRow
		decode(t, mustNetctl(t, cmd("ipam", "k8s-master", "-o", "json")...), &rows)
		if len(rows) != 1 || rows[0].NodeID != 1 || rows[0].PodSubnetThisNode != "10.1.1.0/24" || len(rows[0].Config) == 0 {
			t.Errorf("ipam = %+v", rows)
		}
	})
	t.Run("services", func(t *testing.T) {
		out := mustNetctl(t, cmd("services", "--node", "k8s-master")...)
		if !strings.Contains(out, "10.96.0.10:53") || !strings.Contains(out, "UDP") {
			t.Errorf("table lacks the kube-dns frontend:\n%s", out)
		}
		var rows []serviceRow
		decode(t, mustNetctl(t, cmd("services", "--node", "k8s-master", "-o", "json")...), &rows)
		found := false
		for _, r := range rows {
			if r.Service == "kube-system/kube-dns" && r.Protocol == "UDP" && r.Frontend == "10.96.0.10:53" && len(r.Backends) == 2 {
				found = true
			}
		}
		if !found {
			t.Errorf("no UDP 10.96.0.10:53 with 2 backends in %+v", rows)
		}
	})
	t.Run("vpp", func(t *testing.T) {
		out := mustNetctl(t, cmd("vpp", "k8s-master", "show", "interface")...)
		if !strings.Contains(out, "GigabitEthernet0/8/0") {
			t.Errorf("show interface:\n%s", out)
		}
		var res cliResult
		decode(t, mustNetctl(t, cmd("vpp", "k8s-master", "show version", "-o", "json")...), &res)
		if res.Node != "k8s-master" || res.Command != "show version" || !strings.HasPrefix(res.Output, "vpp v") {
			t.Errorf("vpp -o json = %+v", res)
		}
	})
	t.Run("vppdump", func(t *testing.T) {
		for kind, want := range map[string]string{
			"interfaces": "config/vpp/v2/interfaces/GigabitEthernet0/8/0", "nat": "config/vpp/nat/v2/dnat44/",
			"routes": "config/vpp/v2/route/", "fib": "ipv4-VRF:0",
			// The demo cluster has no NetworkPolicy: VPP prints no ACL, and the JSON
			// form below checks that the command ran.
			"acl": "",
		} {
			out := mustNetctl(t, cmd("vppdump", "k8s-master", kind)...)
			if !strings.Contains(out, want) {
				t.Errorf("vppdump %s lacks %q:\n%.600s", kind, want, out)
			}
			jsonOut := mustNetctl(t, cmd("vppdump", "k8s-master", kind, "-o", "json")...)
			if vppdumpKinds[kind].cli != "" {
				var res cliResult
				decode(t, jsonOut, &res)
				if res.Command != vppdumpKinds[kind].cli {
					t.Errorf("vppdump %s -o json = %+v", kind, res)
				}
				continue
			}
			var rows []dumpRow
			decode(t, jsonOut, &rows)
			if len(rows) == 0 || !strings.HasPrefix(rows[len(rows)-1].Key, "config/") {
				t.Errorf("vppdump %s -o json = %d rows", kind, len(rows))
			}
		}
	})
	t.Run("history", func(t *testing.T) {
		out := mustNetctl(t, cmd("history", "k8s-master", "--last", "5")...)
		if !strings.Contains(out, "SEQ") || !strings.Contains(out, "Resync") {
			t.Errorf("table:\n%s", out)
		}
		var events []map[string]any
		decode(t, mustNetctl(t, cmd("history", "k8s-master", "--last", "2", "-o", "json")...), &events)
		if len(events) == 0 || len(events) > 2 || events[0]["Name"] == nil {
			t.Errorf("history -o json = %d events", len(events))
		}
	})
	t.Run("resync", func(t *testing.T) {
		out := mustNetctl(t, cmd("resync", "k8s-master")...)
		if !strings.Contains(out, "node k8s-master: database resync requested") {
			t.Errorf("resync: %q", out)
		}
		var res map[string]any
		decode(t, mustNetctl(t, cmd("resync", "k8s-master", "-o", "json")...), &res)
		if res["node"] != "k8s-master" || res["message"] == nil {
			t.Errorf("resync -o json = %v", res)
		}
	})
	t.Run("completion", func(t *testing.T) {
		if out := mustNetctl(t, "completion", "bash"); !strings.Contains(out, "contiv-netctl") {
			t.Errorf("bash completion:\n%.300s", out)
		}
		out := mustNetctl(t, cmd("__complete", "vppdump", "")...)
		if !strings.Contains(out, "k8s-master\n") || !strings.Contains(out, "k8s-worker1\n") {
			t.Errorf("node completion:\n%s", out)
		}
		out = mustNetctl(t, cmd("__complete", "vppdump", "k8s-master", "")...)
		if !strings.Contains(out, "interfaces\n") || !strings.Contains(out, "routes\n") {
			t.Errorf("kind completion:\n%s", out)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{cmd("vpp", "no-such-node", "show", "version"), `node "no-such-node": unknown (nodes: k8s-master, k8s-worker1`},
			{cmd("vppdump", "k8s-master", "bridges"), `vppdump: "bridges" is not one of acl, fib, interfaces, nat, routes`},
			{cmd("nodes", "-o", "xml"), `-o: "xml" is not table, json or yaml`},
			{cmd("history", "k8s-master", "--last", "0"), "--last: 0 is not between 1 and 1000"},
			{[]string{"--config", filepath.Join(a.dir, "missing.conf"), "nodes"}, "missing.conf: open"},
		} {
			_, errOut, code := netctl(t, tc.args...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
			}
		}
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if agentBin != "" {
		_ = os.RemoveAll(filepath.Dir(agentBin))
	}
	os.Exit(code)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/unarygrpc"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// TestPodsShowsTheInterfacesOfAWiredPod runs the agent with the Linux side of its TAPs
// in a network namespace of its own (root), wires pod default/web-1 through a CNI ADD
// into a pod namespace, and runs the contiv-netctl binary in the agent's namespace (the
// admin API answers on its loopback): `pods` shows the pod's VPP and Linux interfaces.
func TestPodsShowsTheInterfacesOfAWiredPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts contiv-agent")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and the Linux side of the TAPs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) is not installed")
	}
	suffix := fmt.Sprintf("%d-%d", os.Getpid(), rand.IntN(1_000_000))
	nodeNS, podNS := "netctl-node-"+suffix, "netctl-pod-"+suffix
	for _, ns := range []string{nodeNS, podNS} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	if out, err := exec.Command("ip", "-n", nodeNS, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	netctlBin := filepath.Join(t.TempDir(), "contiv-netctl")
	if err := testkit.GoBuild("", ".", netctlBin, "."); err != nil {
		t.Fatal(err)
	}
	a := launchAgent(t, nodeNS, "-standalone-linux=true")
	netctlIn := func(args ...string) (string, error) {
		cmd := exec.Command("ip", append([]string{"netns", "exec", nodeNS, netctlBin, "--config", a.config, "--timeout", "3s"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), fmt.Errorf("contiv-netctl %v: %v: %s", args, err, stderr.String())
		}
		return string(out), nil
	}
	testkit.Eventually(t, 60*time.Second, "the agent is ready (state OK)", func() error {
		out, err := netctlIn("nodes", "-o", "json")
		if err != nil {
			return err
		}
		var nodes []nodeStatus
		if err := json.Unmarshal([]byte(out), &nodes); err != nil {
			return err
		}
		if len(nodes) == 0 || nodes[0].State != "OK" {
			return fmt.Errorf("nodes: %s", out)
		}
		return nil
	})

	req := &cni.CNIRequest{
		Version: "1.1.0", ContainerId: "netctl-test-" + suffix, InterfaceName: "eth0",
		NetworkNamespace: "/var/run/netns/" + podNS,
		ExtraArguments:   "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reply := &cni.CNIReply{}
	sock := filepath.Join(a.dir, "standalone", "cni.sock")
	if err := unarygrpc.Call(ctx, "unix", sock, cni.RemoteCNI_Add_FullMethodName, req, reply); err != nil || reply.GetResult() != 0 {
		t.Fatalf("CNI ADD default/web-1: %v, reply %v", err, reply)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = unarygrpc.Call(ctx, "unix", sock, cni.RemoteCNI_Delete_FullMethodName, req, &cni.CNIReply{})
	})

	out, err := netctlIn("pods", "--node", "k8s-master", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pods []podRow
	if err := json.Unmarshal([]byte(out), &pods); err != nil {
		t.Fatalf("pods -o json: %v\n%s", err, out)
	}
	var web *podRow
	for i := range pods {
		if pods[i].Namespace == "default" && pods[i].Name == "web-1" {
			web = &pods[i]
		}
	}
	if web == nil || web.IP != "10.1.1.2" || web.VPPIf == "" || web.LinuxIf == "" || web.LinuxHostIf != "eth0" {
		t.Fatalf("pods: web-1 = %+v, want 10.1.1.2 with its VPP and Linux interfaces (eth0 in the pod)", web)
	}
	table, err := netctlIn("pods", "--node", "k8s-master")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, web.VPPIf) || !strings.Contains(table, web.LinuxIf) {
		t.Errorf("pods table lacks %s / %s:\n%s", web.VPPIf, web.LinuxIf, table)
	}
	t.Logf("pods:\n%s", table)
}

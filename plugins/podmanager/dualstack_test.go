package podmanager

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// podIPsOf renders the local pod's IPs, the primary first ("" when the pod is unknown).
func podIPsOf(pm *Plugin, name string) string {
	lp := pm.GetLocalPods()[podmodel.ID{Name: name, Namespace: "default"}]
	if lp == nil {
		return ""
	}
	s := make([]string, len(lp.IPAddresses))
	for i, ip := range lp.IPAddresses {
		s[i] = ip.String()
	}
	return fmt.Sprintf("primary %v, all [%s]", lp.IPAddress, strings.Join(s, " "))
}

func TestDualStackPodKeepsBothAddressesAcrossARestart(t *testing.T) {
	dir := shortTempDir(t)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	env.loop.set(func(l *fakeLoop) { l.dualStack = true })
	reply := mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	if ips := reply.GetInterfaces()[0].GetIpAddresses(); len(ips) != 2 || ips[1].GetAddress() != "fd00:10:1:1::2/128" {
		t.Fatalf("reply addresses = %v, want the IPv4 and the IPv6 one", ips)
	}
	const want = "primary 10.1.1.2, all [10.1.1.2 fd00:10:1:1::2]"
	if got := podIPsOf(env.pm, "web"); got != want {
		t.Errorf("local pod: %s, want %s", got, want)
	}
	load, err := readState(env.stateFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(load.Pods) != 1 || load.Pods[0].IPAddress != "10.1.1.2" ||
		strings.Join(load.Pods[0].IPAddresses, " ") != "10.1.1.2 fd00:10:1:1::2" {
		t.Errorf("state file records = %+v, want ipAddress the primary and ipAddresses both", load.Pods)
	}

	env.close()
	env2 := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if got := podIPsOf(env2.pm, "web"); got != want {
		t.Errorf("after a restart: %s, want %s", got, want)
	}
}

func TestStateFileOfAnAgentBeforeDualStackStillLoads(t *testing.T) {
	dir := shortTempDir(t)
	path := stateFileIn(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Format 2 as the agents before dual-stack wrote it: ipAddress only.
	old := `{"format":2,"pods":[{"name":"web","namespace":"default","containerID":"c1","networkNamespace":"/ns/web","ipAddress":"10.1.1.7"}]}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if got, want := podIPsOf(env.pm, "web"), "primary 10.1.1.7, all [10.1.1.7]"; got != want {
		t.Errorf("local pod: %s, want %s", got, want)
	}
}

func TestDualStackPodIsRecoveredFromTheCNICacheWithBothAddresses(t *testing.T) {
	dir := shortTempDir(t)
	cache := filepath.Join(dir, "cni-cache")
	socket := filepath.Join(dir, "run", "cni.sock")
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "k8s-pod-network",
		"plugins": []map[string]any{{"type": "contiv-cni", "grpcServer": socket}}})
	zero, one := 0, 1
	entry := map[string]any{
		"kind": "cniCacheV1", "containerId": "c1", "config": conf, "ifName": "eth0", "netns": "/ns/web",
		"cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", "web"}},
		"result": map[string]any{"cniVersion": "1.1.0",
			"interfaces": []map[string]any{{"name": "eth0", "sandbox": "/ns/web"}, {"name": "other", "sandbox": "/ns/web"}},
			"ips": []map[string]any{
				{"address": "10.1.1.2/32", "interface": &zero},
				{"address": "10.9.9.9/32", "interface": &one},
				{"address": "fd00:10:1:1::2/128", "interface": &zero},
			}},
	}
	data, _ := json.Marshal(entry)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "k8s-pod-network-c1-eth0"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), func(_ *testEnv, cfg infra.StaticConfig) { cfg["cniCacheDir"] = cache })
	if got, want := podIPsOf(env.pm, "web"), "primary 10.1.1.2, all [10.1.1.2 fd00:10:1:1::2]"; got != want {
		t.Errorf("recovered: %s, want %s (the other interface's address left out)", got, want)
	}
}

func TestPodIPsAreThoseOfThePodsInterface(t *testing.T) {
	ev := NewAddPod(podmodel.ID{Name: "web", Namespace: "default"}, "c1", "/ns/web")
	v4 := &net.IPNet{IP: net.ParseIP("10.1.1.2").To4(), Mask: net.CIDRMask(32, 32)}
	v6 := &net.IPNet{IP: net.ParseIP("fd00::2"), Mask: net.CIDRMask(128, 128)}
	ev.Interfaces = []PodInterface{{HostName: "eth0", IPAddresses: []*IPWithGateway{nil, {Address: v4}, {Address: v6}}}}
	got := podIPs(ev)
	if len(got) != 2 || !got[0].Equal(v4.IP) || !got[1].Equal(v6.IP) {
		t.Errorf("podIPs = %v, want [10.1.1.2 fd00::2]", got)
	}
}

package podmanager

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// writeCacheEntry writes a libcni cache entry of a contiv-cni ADD through socket.
func writeCacheEntry(t *testing.T, dir, file, socket, pod, container, netns, ip string) {
	t.Helper()
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "k8s-pod-network",
		"plugins": []map[string]any{{"type": "contiv-cni", "grpcServer": socket}, {"type": "portmap"}}})
	zero := 0
	entry := map[string]any{
		"kind": "cniCacheV1", "containerId": container, "config": conf, "ifName": "eth0",
		"networkName": "k8s-pod-network", "netns": netns,
		"cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", pod}},
		"result": map[string]any{"cniVersion": "1.1.0",
			"interfaces": []map[string]any{{"name": "eth0", "sandbox": netns}},
			"ips":        []map[string]any{{"address": ip + "/32", "interface": &zero}}},
	}
	data, _ := json.Marshal(entry)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLostPodStateIsRecoveredFromTheRuntimesCNICache: with pods.json gone (a full disk
// lost the writes, or it was deleted), the pods the runtime still has (its CNI cache:
// container, netns, pod, IP) are recovered, so the agent keeps their interfaces and IPs.
func TestLostPodStateIsRecoveredFromTheRuntimesCNICache(t *testing.T) {
	dir := shortTempDir(t)
	cache := filepath.Join(dir, "cni-cache")
	socket := filepath.Join(dir, "run", "cni.sock")
	writeCacheEntry(t, cache, "k8s-pod-network-c1-eth0", socket, "web", "c1", "/ns/web", "10.1.1.2")
	writeCacheEntry(t, cache, "k8s-pod-network-c2-eth0", socket, "db", "c2", "/ns/gone-db", "10.1.1.3")
	writeCacheEntry(t, cache, "other-c3-eth0", "/other/agent.sock", "api", "c3", "/ns/api", "10.1.1.4")
	writeCacheEntry(t, cache, "k8s-pod-network-c4-eth0", socket, "../../etc", "c4", "/ns/x", "10.1.1.5")
	if err := os.WriteFile(filepath.Join(cache, "garbage"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), func(_ *testEnv, cfg infra.StaticConfig) { cfg["cniCacheDir"] = cache })
	if got, want := localPods(env.pm), "default/web c1 /ns/web"; got != want {
		t.Errorf("local pods = %q, want %q", got, want)
	}
	if ip := env.pm.GetLocalPods()[podmodel.ID{Name: "web", Namespace: "default"}].IPAddress; ip.String() != "10.1.1.2" {
		t.Errorf("recovered IP %v, want 10.1.1.2", ip)
	}
	if got := statePods(t, env.stateFile); got != "default/web c1 /ns/web" {
		t.Errorf("state file = %q", got)
	}
	// A recorded pod wins over the cache.
	env.close()
	writeStateFile(t, env.stateFile, rec("web", "c9", "/ns/web"))
	env2 := newEnv(t, dir, withNetnsCheck(netnsAlive), func(_ *testEnv, cfg infra.StaticConfig) { cfg["cniCacheDir"] = cache })
	if got := localPods(env2.pm); got != "default/web c9 /ns/web" {
		t.Errorf("local pods = %q, want the recorded one", got)
	}
}

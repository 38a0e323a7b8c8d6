package podmanager

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

var webID = podmodel.ID{Name: "web", Namespace: "default"}

// requestAs is request with CNI_IFNAME ifName.
func requestAs(pod, container, netns, ifName string) *cni.CNIRequest {
	req := request(pod, container, netns)
	req.InterfaceName = ifName
	return req
}

// TestAddCarriesTheInterfaceNameAndPersistsIt: CNI_IFNAME reaches the handlers on the
// AddPod, is kept in the local pod and in the state file, and survives a restart.
func TestAddCarriesTheInterfaceNameAndPersistsIt(t *testing.T) {
	dir := shortTempDir(t)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	var seen *AddPod
	env.loop.set(func(l *fakeLoop) {
		l.failAdd = func(ev *AddPod) error { seen = ev; return nil }
	})
	mustSucceed(t, "add")(env.add(requestAs("web", "c1", "/ns/web", "net1")))
	if seen == nil || seen.IfName != "net1" {
		t.Fatalf("AddPod = %+v, want IfName net1", seen)
	}
	if !strings.Contains(seen.String(), "net1") {
		t.Errorf("AddPod.String() = %q does not name the interface", seen.String())
	}
	if lp := env.pm.GetLocalPods()[webID]; lp == nil || lp.IfName != "net1" {
		t.Errorf("local pod = %+v, want IfName net1", lp)
	}
	load, err := readState(env.stateFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(load.Pods) != 1 || load.Pods[0].IfName != "net1" {
		t.Errorf("state file records = %+v", load.Pods)
	}
	env.close()
	env2 := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if lp := env2.pm.GetLocalPods()[webID]; lp == nil || lp.IfName != "net1" {
		t.Errorf("recovered local pod = %+v, want IfName net1", lp)
	}
}

// TestAddWithoutInterfaceNameMeansEth0: a client that sends no CNI_IFNAME gets eth0.
func TestAddWithoutInterfaceNameMeansEth0(t *testing.T) {
	env := newEnv(t, "")
	var seen *AddPod
	env.loop.set(func(l *fakeLoop) {
		l.failAdd = func(ev *AddPod) error { seen = ev; return nil }
	})
	mustSucceed(t, "add")(env.add(requestAs("web", "c1", "/ns/web", "")))
	if seen == nil || seen.IfName != "eth0" {
		t.Fatalf("AddPod = %+v, want IfName eth0", seen)
	}
	if lp := env.pm.GetLocalPods()[webID]; lp == nil || lp.IfName != "eth0" {
		t.Errorf("local pod = %+v, want IfName eth0", lp)
	}
}

// TestRecordsWithoutInterfaceNameMeanEth0: the records of a previous agent version have
// no ifName; their pods are recovered with eth0, and the file keeps them as they were.
func TestRecordsWithoutInterfaceNameMeanEth0(t *testing.T) {
	dir := shortTempDir(t)
	path := stateFileIn(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	content := `{"format": 2, "pods": [{"name": "web", "namespace": "default", "containerID": "c1", "networkNamespace": "/ns/web", "ipAddress": "10.1.1.2"}]}` + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if lp := env.pm.GetLocalPods()[webID]; lp == nil || lp.IfName != "eth0" {
		t.Errorf("recovered local pod = %+v, want IfName eth0", lp)
	}
	// The kubelet's re-ADD of the running pod (eth0) is the same attachment.
	mustSucceed(t, "re-add")(env.add(requestAs("web", "c1", "/ns/web", "eth0")))
	mustSucceed(t, "check")(env.check(requestAs("web", "c1", "/ns/web", "eth0")))
}

// TestCNICacheRecoveryKeepsTheInterfaceName: a pod recovered from the runtime's CNI
// cache keeps the interface name of its cached ADD.
func TestCNICacheRecoveryKeepsTheInterfaceName(t *testing.T) {
	dir := shortTempDir(t)
	cache := filepath.Join(dir, "cni-cache")
	socket := filepath.Join(dir, "run", "cni.sock")
	writeCacheEntry(t, cache, "k8s-pod-network-c1-net1", socket, "web", "c1", "/ns/web", "10.1.1.2")
	data, err := os.ReadFile(filepath.Join(cache, "k8s-pod-network-c1-net1"))
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(string(data), `"eth0"`, `"net1"`))
	if err := os.WriteFile(filepath.Join(cache, "k8s-pod-network-c1-net1"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), func(_ *testEnv, cfg infra.StaticConfig) { cfg["cniCacheDir"] = cache })
	lp := env.pm.GetLocalPods()[webID]
	if lp == nil || lp.IfName != "net1" || lp.IPAddress.String() != "10.1.1.2" {
		t.Errorf("recovered local pod = %+v, want IfName net1 and IP 10.1.1.2", lp)
	}
}

// TestInvalidInterfaceNamesAreRefused: a name Linux would refuse is an invalid argument
// naming the value, before any event.
func TestInvalidInterfaceNamesAreRefused(t *testing.T) {
	env := newEnv(t, "")
	for _, name := range []string{"abcdefghijklmnop", "a/b", "a b", "a\tb", "eth0\n", ".", ".."} {
		reply, err := env.add(requestAs("web", "c1", "/ns/web", name))
		if err != nil || reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), strconv.Quote(name)) {
			t.Errorf("add with CNI_IFNAME %q: %v, %v; want an invalid-argument error naming it", name, reply, err)
		}
	}
	if ev := env.loop.events(); len(ev) != 0 {
		t.Errorf("events pushed: %q", ev)
	}
	// The longest name Linux takes is fine.
	mustSucceed(t, "add")(env.add(requestAs("web", "c1", "/ns/web", "abcdefghijklmno")))
}

// TestReAddWithAnotherInterfaceNameIsRefused: the agent wires one interface per pod; a
// second attachment of the same sandbox under another name (a meta-plugin adding the
// network twice) is refused and leaves the first one alone, and so does the DEL that
// cleans up after the refused ADD.
func TestReAddWithAnotherInterfaceNameIsRefused(t *testing.T) {
	env := newEnv(t, "", withNetnsCheck(netnsAlive))
	mustSucceed(t, "add")(env.add(requestAs("web", "c1", "/ns/web", "eth0")))
	reply, err := env.add(requestAs("web", "c1", "/ns/web", "net1"))
	if err != nil || reply.GetResult() != cni.ResultInvalid ||
		!strings.Contains(reply.GetError(), `"net1"`) || !strings.Contains(reply.GetError(), `"eth0"`) {
		t.Errorf("second add as net1: %v, %v; want an invalid-argument error naming net1 and eth0", reply, err)
	}
	reply, err = env.check(requestAs("web", "c1", "/ns/web", "net1"))
	if err != nil || reply.GetResult() != cni.ResultError || !strings.Contains(reply.GetError(), `"eth0"`) {
		t.Errorf("check as net1: %v, %v; want an error naming eth0", reply, err)
	}
	mustSucceed(t, "del as net1")(env.del(requestAs("web", "c1", "/ns/web", "net1")))
	if lp := env.pm.GetLocalPods()[webID]; lp == nil || lp.IfName != "eth0" {
		t.Fatalf("after the DEL as net1, local pod = %+v, want it kept with eth0", lp)
	}
	mustSucceed(t, "check as eth0")(env.check(requestAs("web", "c1", "/ns/web", "eth0")))
	for _, e := range env.loop.events() {
		if strings.Contains(e, "Delete Pod") {
			t.Errorf("the first attachment was deleted: %q", env.loop.events())
		}
	}
	mustSucceed(t, "del as eth0")(env.del(requestAs("web", "c1", "/ns/web", "eth0")))
	if got := localPods(env.pm); got != "" {
		t.Errorf("after the DEL as eth0, local pods = %q", got)
	}
}

// TestCheckAndDeleteOfAPodWithAnyInterfaceName: CHECK and DEL work for a pod added as
// net1, and a DEL without CNI_IFNAME deletes it too.
func TestCheckAndDeleteOfAPodWithAnyInterfaceName(t *testing.T) {
	env := newEnv(t, "", withNetnsCheck(netnsAlive))
	mustSucceed(t, "add")(env.add(requestAs("web", "c1", "/ns/web", "net1")))
	mustSucceed(t, "check")(env.check(requestAs("web", "c1", "/ns/web", "net1")))
	mustSucceed(t, "del")(env.del(requestAs("web", "c1", "/ns/web", "net1")))
	if got := localPods(env.pm); got != "" {
		t.Errorf("after the DEL, local pods = %q", got)
	}
	mustSucceed(t, "add")(env.add(requestAs("web", "c2", "/ns/web", "net1")))
	mustSucceed(t, "del without CNI_IFNAME")(env.del(requestAs("web", "c2", "/ns/web", "")))
	if got := localPods(env.pm); got != "" {
		t.Errorf("after the DEL without CNI_IFNAME, local pods = %q", got)
	}
}

// TestAddPodUnderAnotherInterfaceNameFailsInTheLoop: the loop's own check, for an ADD
// that raced past the request's.
func TestAddPodUnderAnotherInterfaceNameFailsInTheLoop(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add")(env.add(requestAs("web", "c1", "/ns/web", "eth0")))
	ev := NewAddPod(webID, "c1", "/ns/web")
	ev.IfName = "net1"
	if _, err := env.pm.Update(ev, nil); !errors.Is(err, ErrOtherIfName) || !strings.Contains(err.Error(), `"eth0"`) {
		t.Errorf("Update = %v, want ErrOtherIfName naming eth0", err)
	}
	if lp := env.pm.GetLocalPods()[webID]; lp == nil || lp.IfName != "eth0" {
		t.Errorf("local pod = %+v, want it kept with eth0", lp)
	}
}

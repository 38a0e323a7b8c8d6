package podmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	testingclock "k8s.io/utils/clock/testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// writeStateFile writes records as a previous agent would have.
func writeStateFile(t *testing.T, path string, recs ...podRecord) {
	t.Helper()
	pods := make(map[podmodel.ID]*podRecord)
	for i := range recs {
		pods[recs[i].id()] = &recs[i]
	}
	st := &stateStore{path: path}
	defer st.close()
	if err := st.snapshot(pods); err != nil {
		t.Fatal(err)
	}
}

func rec(name, container, netns string) podRecord {
	return podRecord{Name: name, Namespace: "default", ContainerID: container, NetworkNamespace: netns}
}

// netnsAlive is a namespace check for tests without root: paths containing "gone" are gone.
func netnsAlive(path string, _ uint64) (netnsVerdict, string) {
	if strings.Contains(path, "gone") {
		return netnsGone, "test: gone"
	}
	if strings.Contains(path, "unknown") {
		return netnsUnknown, "test: permission denied"
	}
	return netnsPresent, ""
}

// stateFileIn is the state file a test environment in dir uses.
func stateFileIn(dir string) string { return filepath.Join(dir, "state", "pods.json") }

func TestRecoveryDropsRecordsWhoseNetnsIsGone(t *testing.T) {
	dir := shortTempDir(t)
	writeStateFile(t, stateFileIn(dir),
		rec("web", "c1", "/ns/web"),
		rec("db", "c2", "/ns/gone-db"),
		rec("cache", "c3", "/ns/unknown-cache"),
	)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	want := "default/cache c3 /ns/unknown-cache; default/web c1 /ns/web"
	if got := localPods(env.pm); got != want {
		t.Errorf("recovered pods = %q, want %q", got, want)
	}
	if got := statePods(t, env.stateFile); got != want {
		t.Errorf("state file = %q, want %q", got, want)
	}
	// A recovered pod is known: a CNI check succeeds, a delete pushes a DeletePod.
	mustSucceed(t, "check")(env.check(request("web", "c1", "/ns/web")))
	mustSucceed(t, "delete")(env.del(request("web", "c1", "/ns/web")))
	if ev := env.loop.events(); len(ev) != 2 || ev[0] != "push Delete Pod default/web" {
		t.Errorf("events = %q", ev)
	}
}

func TestUnreadableStateFileStartsWithoutPods(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":        "{not json",
		"other format":   `{"format": 99, "pods": []}`,
		"partial record": `{"format": 1, "pods": [{"name": "web", "namespace": "default"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := shortTempDir(t)
			path := stateFileIn(dir)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, dir, withNetnsCheck(netnsAlive))
			if got := localPods(env.pm); got != "" {
				t.Errorf("pods = %q", got)
			}
			// The file is replaced by a valid, empty one; the bad one is kept aside.
			if got := statePods(t, path); got != "" {
				t.Errorf("state file = %q", got)
			}
			if data, err := os.ReadFile(path + ".bad"); err != nil || string(data) != content {
				t.Errorf("bad file kept aside: %q, %v", data, err)
			}
		})
	}
}

func TestStateFileIsASnapshotAndAJournalOfChanges(t *testing.T) {
	env := newEnv(t, "")
	for _, c := range []string{"c1", "c2", "c3"} {
		mustSucceed(t, "add")(env.add(request("web-"+c, c, "/ns/"+c)))
	}
	mustSucceed(t, "delete")(env.del(request("web-c2", "c2", "/ns/c2")))
	entries, err := os.ReadDir(filepath.Dir(env.stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "pods.json" {
		t.Errorf("state directory holds %v, want only pods.json", entries)
	}
	data, err := os.ReadFile(env.stateFile)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot written at start-up (no pods), then one line per change.
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var doc struct {
		Format int `json:"format"`
		Pods   []map[string]any
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != 2 || len(doc.Pods) != 0 {
		t.Errorf("snapshot = %+v, want format 2 without pods", doc)
	}
	var changes []string
	for dec.More() {
		var e map[string]map[string]any
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		for op, r := range e {
			changes = append(changes, fmt.Sprintf("%s %v/%v %v %v", op, r["namespace"], r["name"], r["containerID"], r["networkNamespace"]))
		}
	}
	want := []string{
		"put default/web-c1 c1 /ns/c1", "put default/web-c2 c2 /ns/c2", "put default/web-c3 c3 /ns/c3",
		"delete default/web-c2 <nil> <nil>",
	}
	if !slices.Equal(changes, want) {
		t.Errorf("journal:\n%s\nwant:\n%s", strings.Join(changes, "\n"), strings.Join(want, "\n"))
	}
	if got := statePods(t, env.stateFile); got != "default/web-c1 c1 /ns/c1; default/web-c3 c3 /ns/c3" {
		t.Errorf("state file pods = %q", got)
	}
}

func TestWithoutStateFileNothingIsPersisted(t *testing.T) {
	dir := shortTempDir(t)
	env := newEnv(t, dir, func(_ *testEnv, cfg infra.StaticConfig) { cfg["stateFile"] = "" })
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	if _, err := os.Stat(stateFileIn(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file: %v", err)
	}
}

type fakeNodeSync map[string]*nodesync.Node

func (f fakeNodeSync) GetAllNodes() map[string]*nodesync.Node { return f }

func kubePod(name, hostIP string) (string, *podmodel.Pod) {
	return podmodel.Key(name, "default"), &podmodel.Pod{Name: name, Namespace: "default", HostIpAddress: hostIP}
}

// Recovered pods that Kubernetes' copy lacks or runs on another node are dropped when
// contiv-ksr's sync marker proves the copy complete as of after their recovery.
func TestResyncWithASyncMarkerDropsRecoveredPodsKubernetesDoesNotRunHere(t *testing.T) {
	dir := shortTempDir(t)
	writeStateFile(t, stateFileIn(dir),
		rec("here", "c1", "/ns/here"),
		rec("deleted", "c2", "/ns/deleted"),
		rec("elsewhere", "c3", "/ns/elsewhere"),
		rec("no-host-ip", "c4", "/ns/no-host-ip"),
	)
	nodes := fakeNodeSync{
		"node1": {ID: 1, Name: "node1", MgmtIPAddresses: []net.IP{net.ParseIP("192.168.56.101")}},
		"node2": {ID: 2, Name: "node2", MgmtIPAddresses: []net.IP{net.ParseIP("192.168.56.102")}},
	}
	clock := testingclock.NewFakePassiveClock(t0)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) {
		d.NodeName, d.NodeSync, d.Clock = "node1", nodes, clock
	}))
	clock.SetTime(t0.Add(2 * time.Hour)) // a marker of an hour after the recovery
	kube := kubeState(markerAt(t0.Add(time.Hour)),
		[2]string{"here", "192.168.56.101"}, [2]string{"elsewhere", "192.168.56.102"}, [2]string{"no-host-ip", ""}, [2]string{"other", "192.168.56.101"})
	if !env.pm.HandlesEvent(&api.DBResync{}) {
		t.Fatal("the resync is not handled")
	}
	if err := env.pm.Resync(&api.DBResync{KubeState: kube}, kube, 1, nil); err != nil {
		t.Fatal(err)
	}
	want := "default/here c1 /ns/here; default/no-host-ip c4 /ns/no-host-ip"
	if got := localPods(env.pm); got != want {
		t.Errorf("pods after the first resync = %q, want %q", got, want)
	}
	if got := statePods(t, env.stateFile); got != want {
		t.Errorf("state file = %q, want %q", got, want)
	}

	// Resyncs without a marker keep what CNI said, even if Kubernetes has not caught up.
	mustSucceed(t, "add")(env.add(request("new", "c5", "/ns/new")))
	empty := api.KubeStateData{podmodel.Keyword: api.KeyValuePairs{}}
	if err := env.pm.Resync(&api.DBResync{KubeState: empty}, empty, 2, nil); err != nil {
		t.Fatal(err)
	}
	want = "default/here c1 /ns/here; default/new c5 /ns/new; default/no-host-ip c4 /ns/no-host-ip"
	if got := localPods(env.pm); got != want {
		t.Errorf("pods after a later resync = %q, want %q", got, want)
	}
}

func TestResyncWithoutNodeInfoChecksOnlyExistence(t *testing.T) {
	dir := shortTempDir(t)
	writeStateFile(t, stateFileIn(dir), rec("elsewhere", "c3", "/ns/elsewhere"), rec("deleted", "c2", "/ns/deleted"))
	clock := testingclock.NewFakePassiveClock(t0)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) {
		d.NodeName, d.NodeSync, d.Clock = "node1", fakeNodeSync{}, clock // this node has no ID yet
	}))
	clock.SetTime(t0.Add(2 * time.Hour))
	kube := kubeState(markerAt(t0.Add(time.Hour)), [2]string{"elsewhere", "192.168.56.102"})
	if err := env.pm.Resync(&api.DBResync{KubeState: kube}, kube, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := localPods(env.pm); got != "default/elsewhere c3 /ns/elsewhere" {
		t.Errorf("pods = %q", got)
	}
}

func TestUpdateRefusesAPodStillConnectedWithAnotherSandbox(t *testing.T) {
	env := newEnv(t, "")
	id := podmodel.ID{Name: "web", Namespace: "default"}
	if _, err := env.pm.Update(NewAddPod(id, "c1", "/ns/web"), nil); err != nil {
		t.Fatal(err)
	}
	desc, err := env.pm.Update(NewAddPod(id, "c2", "/ns/web"), nil)
	if !errors.Is(err, ErrObsoletePod) || !strings.Contains(err.Error(), "default/web (container c2)") || desc != "" {
		t.Errorf("Update = %q, %v; want ErrObsoletePod naming the pod", desc, err)
	}
	// The same sandbox again (a retried ADD) is fine, and its revert keeps the pod.
	again := NewAddPod(id, "c1", "/ns/web")
	if desc, err := env.pm.Update(again, nil); err != nil || !strings.Contains(desc, "added again") {
		t.Errorf("Update = %q, %v", desc, err)
	}
	if err := env.pm.Revert(again); err != nil {
		t.Fatal(err)
	}
	if got := localPods(env.pm); got != "default/web c1 /ns/web" {
		t.Errorf("pods after the revert = %q", got)
	}
}

func TestHandlesEvent(t *testing.T) {
	pm := NewPlugin(Deps{})
	id := podmodel.ID{Name: "web", Namespace: "default"}
	for _, tc := range []struct {
		ev   api.Event
		want bool
	}{
		{&api.DBResync{}, true},
		{&api.HealingResync{Type: api.Periodic}, true},
		{&api.HealingResync{Type: api.AfterError}, true},
		{NewAddPod(id, "c1", "/ns"), true},
		{NewDeletePod(id), true},
		{&api.KubeStateChange{}, false},
		{api.NewShutdown(), false},
	} {
		if got := pm.HandlesEvent(tc.ev); got != tc.want {
			t.Errorf("HandlesEvent(%s) = %v", tc.ev.GetName(), got)
		}
	}
	if pm.String() != "podmanager" {
		t.Errorf("String = %q", pm.String())
	}
}

func TestParsePodArgs(t *testing.T) {
	for _, tc := range []struct {
		args    string
		want    string
		wantErr string
	}{
		{args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns-1;K8S_POD_INFRA_CONTAINER_ID=abc", want: "kube-system/coredns-1"},
		{args: " K8S_POD_NAME = web ; K8S_POD_NAMESPACE = default ;", want: "default/web"},
		{args: "K8S_POD_NAMESPACE=default", wantErr: "missing CNI argument K8S_POD_NAME"},
		{args: "K8S_POD_NAME=web;K8S_POD_NAMESPACE=", wantErr: "missing CNI argument K8S_POD_NAMESPACE"},
		{args: "K8S_POD_NAME=web;oops", wantErr: `malformed CNI argument "oops" (want key=value)`},
		{args: "", wantErr: "missing CNI argument K8S_POD_NAME"},
	} {
		id, err := ParsePodArgs(tc.args)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParsePodArgs(%q) = %v, %v; want error %q", tc.args, id, err, tc.wantErr)
			}
		case err != nil || id.String() != tc.want:
			t.Errorf("ParsePodArgs(%q) = %v, %v; want %s", tc.args, id, err, tc.want)
		}
	}
}

func TestAddReplyCarriesIPv6AndSkipsEmptyEntries(t *testing.T) {
	ev := NewAddPod(podmodel.ID{Name: "web", Namespace: "default"}, "c1", "/proc/42/ns/net")
	_, dst, _ := net.ParseCIDR("fd00::/8")
	ev.Interfaces = []PodInterface{{
		HostName: "eth0",
		IPAddresses: []*IPWithGateway{
			nil,
			{Address: &net.IPNet{IP: net.ParseIP("2001::2"), Mask: net.CIDRMask(128, 128)}, Gateway: net.ParseIP("2001::1")},
			{Address: &net.IPNet{IP: net.ParseIP("10.1.1.2").To4(), Mask: net.CIDRMask(24, 32)}},
		},
	}}
	ev.Routes = []Route{{Network: dst}, {}}
	r := addReply(ev)
	ips := r.GetInterfaces()[0].GetIpAddresses()
	if len(ips) != 2 || ips[0].GetVersion() != cni.CNIReply_Interface_IP_IPV6 || ips[0].GetAddress() != "2001::2/128" ||
		ips[0].GetGateway() != "2001::1" || ips[1].GetVersion() != cni.CNIReply_Interface_IP_IPV4 ||
		ips[1].GetAddress() != "10.1.1.2/24" || ips[1].GetGateway() != "" {
		t.Errorf("ips = %v", ips)
	}
	if s := r.GetInterfaces()[0].GetSandbox(); s != "/proc/42/ns/net" {
		t.Errorf("sandbox = %q", s)
	}
	if len(r.GetRoutes()) != 1 || r.GetRoutes()[0].GetDst() != "fd00::/8" || r.GetRoutes()[0].GetGw() != "" {
		t.Errorf("routes = %v", r.GetRoutes())
	}
}

func TestMetricsAreRegisteredAndReleased(t *testing.T) {
	reg := prometheus.NewRegistry()
	dir := shortTempDir(t)
	loop := newFakeLoop()
	defer loop.close()
	newPM := func(sock string) *Plugin {
		return NewPlugin(Deps{Log: quietLog(), EventLoop: loop, Registerer: reg,
			Config: infra.StaticConfig{"socketPath": filepath.Join(dir, sock), "stateFile": ""}})
	}
	first := newPM("a.sock")
	if err := first.Init(); err != nil {
		t.Fatal(err)
	}
	if err := newPM("b.sock").Init(); err == nil || !strings.Contains(err.Error(), "podmanager metrics") {
		t.Errorf("second Init on the same registry = %v, want a metrics error", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := newPM("b.sock")
	if err := second.Init(); err != nil {
		t.Errorf("Init after Close = %v", err)
	}
	second.Close()
}

func TestInitRequiresTheEventLoopAndAValidConfig(t *testing.T) {
	if err := NewPlugin(Deps{Log: quietLog()}).Init(); err == nil || !strings.Contains(err.Error(), "EventLoop") {
		t.Errorf("Init without event loop = %v", err)
	}
	loop := newFakeLoop()
	defer loop.close()
	pm := NewPlugin(Deps{Log: quietLog(), EventLoop: loop, Config: infra.StaticConfig{"socketPath": "relative.sock"}})
	if err := pm.Init(); err == nil || !strings.Contains(err.Error(), "socketPath") {
		t.Errorf("Init with a relative socket = %v", err)
	}
}

// ipNetns creates a named network namespace with ip(8) and returns its path.
func ipNetns(t *testing.T, name string) string {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/var/run/netns/" + name
}

func requireNetnsTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) to create network namespaces")
	}
}

func TestRestartRecoveryWithRealNetworkNamespaces(t *testing.T) {
	requireNetnsTools(t)
	dir := shortTempDir(t)
	prefix := filepath.Base(dir)
	nsA := ipNetns(t, prefix+"-a")
	nsB := ipNetns(t, prefix+"-b")

	first := newEnv(t, dir)
	mustSucceed(t, "add a")(first.add(request("a", "ca", nsA)))
	mustSucceed(t, "add b")(first.add(request("b", "cb", nsB)))
	first.close()

	// While the agent is down, pod b's sandbox goes away.
	if out, err := exec.Command("ip", "netns", "del", prefix+"-b").CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	second := newEnv(t, dir)
	want := "default/a ca " + nsA
	if got := localPods(second.pm); got != want {
		t.Errorf("recovered pods = %q, want %q", got, want)
	}
	if got := statePods(t, second.stateFile); got != want {
		t.Errorf("state file = %q, want %q", got, want)
	}
	mustSucceed(t, "check a")(second.check(request("a", "ca", nsA)))
	second.close()

	// The same path now names another namespace (deleted and created again).
	if out, err := exec.Command("ip", "netns", "del", prefix+"-a").CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	ipNetns(t, prefix+"-a")
	third := newEnv(t, dir)
	if got := localPods(third.pm); got != "" {
		t.Errorf("pods recovered into a recreated namespace: %q", got)
	}
}

func TestCheckNetnsOnRealNamespaces(t *testing.T) {
	requireNetnsTools(t)
	dir := shortTempDir(t)
	ns := ipNetns(t, filepath.Base(dir)+"-n")
	inode := netnsInode(ns)
	if inode == 0 {
		t.Fatal("no inode for", ns)
	}
	placeholder := filepath.Join(dir, "unmounted")
	if err := os.WriteFile(placeholder, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		inode uint64
		want  netnsVerdict
	}{
		{ns, inode, netnsPresent},
		{ns, 0, netnsPresent},
		{ns, inode + 1, netnsGone},
		{"/proc/self/ns/net", 0, netnsPresent},
		{placeholder, 0, netnsGone},
		{filepath.Join(dir, "missing"), 0, netnsGone},
	} {
		if got, reason := checkNetns(tc.path, tc.inode); got != tc.want {
			t.Errorf("checkNetns(%s, %d) = %v (%s), want %v", tc.path, tc.inode, got, reason, tc.want)
		}
	}
}

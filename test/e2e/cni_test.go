package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// TestCNIAddCheckDelWithCnitool drives the agent as a container runtime does, through
// cnitool and contiv-cni: ADD, CHECK, an agent restart with pods running, DEL, and the
// error cases. VPP is a vpp-sim process of its own, so it keeps its state across the
// agent restart, as a real VPP does.
func TestCNIAddCheckDelWithCnitool(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "p1", "p2", "p3")

	// Two pods: the first addresses of the node's pod subnet, in order.
	p1 := node.addPod(t, "p1")
	p2 := node.addPod(t, "p2")
	if p1.ip != "10.1.1.2" || p2.ip != "10.1.1.3" {
		t.Errorf("pod IPs %s, %s; want 10.1.1.2, 10.1.1.3 (the first of %s after the gateway)", p1.ip, p2.ip, podSubnet)
	}
	for _, p := range []*pod{p1, p2} {
		if _, stderr, err := node.cni.cnitool("check", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool check %s: %v\n%s", p.name, err, stderr)
		}
	}
	expectAllocations(t, node, map[string]string{"default/p1": p1.ip, "default/p2": p2.ip}, nil)

	// kubelet reports the pod IPs to the API server once ADD returned; the agent reads
	// them back after a restart (that is what carries the IPAM over it).
	node.setClusterPods(map[string]string{"p1": p1.ip, "p2": p2.ip, "p3": ""})
	testkit.Eventually(t, 10*time.Second, "the agent sees the pods running", func() error {
		evs, err := node.events()
		if err != nil {
			return err
		}
		for _, name := range []string{"p1", "p2"} {
			if !slices.ContainsFunc(evs, func(ev eventRecord) bool {
				// One change, or one of a batch ("Kubernetes State Changes").
				return strings.HasPrefix(ev.Name, "Kubernetes State Change") && strings.Contains(ev.Description, "pod/"+name+"/namespace/default") &&
					!ev.ProcessingEnd.IsZero()
			}) {
				return fmt.Errorf("no Kubernetes State Change of pod %s in the event history", name)
			}
		}
		return nil
	})

	// Restart the agent: the pods keep their addresses and their interfaces.
	node.stopAgent()
	node.startAgent()
	expectAllocations(t, node, map[string]string{"default/p1": p1.ip, "default/p2": p2.ip}, nil)
	for _, p := range []*pod{p1, p2} {
		w, err := checkPodWired(p.ns, p.ip+"/32", podGateway)
		if err != nil {
			t.Errorf("after the agent restart: %v", err)
			continue
		}
		if w != p.wiring {
			t.Errorf("after the agent restart, eth0 of %s is #%d %s, was #%d %s: recreated", p.name, w.ifindex, w.mac, p.wiring.ifindex, p.wiring.mac)
		}
		if _, stderr, err := node.cni.cnitool("check", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool check %s after the agent restart: %v\n%s", p.name, err, stderr)
		}
	}
	p3 := node.addPod(t, "p3")
	if p3.ip == p1.ip || p3.ip == p2.ip {
		t.Errorf("pod p3 got %s, the IP of a running pod", p3.ip)
	}
	t.Logf("after the restart, p3 got %s", p3.ip)

	// DEL unwires the pod and releases its IP; a repeated DEL succeeds.
	for _, p := range []*pod{p1, p2, p3} {
		for i := range 2 {
			if _, stderr, err := node.cni.cnitool("del", p.ns, podArgs(p.name)); err != nil {
				t.Errorf("cnitool del %s (#%d): %v\n%s", p.name, i+1, err, stderr)
			}
		}
		if err := checkPodUnwired(p.ns); err != nil {
			t.Errorf("after DEL: %v", err)
		}
	}
	expectAllocations(t, node, nil, []string{"default/p1", "default/p2", "default/p3"})

	// A configuration without grpcServer is an invalid network configuration (code 7).
	bad := newCNIRunner(t, e, node.bin, node.cni.network+"-bad", map[string]any{
		"type": "contiv-cni", "logFile": filepath.Join(node.dir, "contiv-cni-bad.log"),
	})
	p4 := newPodNetns(t, e)
	_, stderr, err := bad.cnitool("add", p4, podArgs("p4"))
	if err == nil || !strings.Contains(stderr, "grpcServer") {
		t.Errorf("cnitool add without grpcServer = %v, %q; want an error naming grpcServer", err, stderr)
	}
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": bad.network, "type": "contiv-cni",
		"logFile": filepath.Join(node.dir, "contiv-cni-bad.log")})
	cerr, err := execPlugin(filepath.Join(node.bin, "contiv-cni"), "ADD", string(conf), p4, "e2e-bad-config", podArgs("p4"), node.bin)
	if err != nil {
		t.Error(err)
	} else if cerr == nil || cerr.Code != 7 {
		t.Errorf("ADD without grpcServer: error %+v, want code 7 (invalid network configuration)", cerr)
	}
	if err := checkNetnsPristine(p4); err != nil {
		t.Errorf("after ADD without grpcServer: %v", err)
	}

	// Without K8S_POD_NAME the agent refuses the pod, and configures nothing.
	p5 := newPodNetns(t, e)
	_, stderr, err = node.cni.cnitool("add", p5, "IgnoreUnknown=1;K8S_POD_NAMESPACE=default")
	if err == nil || !strings.Contains(stderr, "K8S_POD_NAME") {
		t.Errorf("cnitool add without K8S_POD_NAME = %v, %q; want an error naming K8S_POD_NAME", err, stderr)
	}
	if err := checkNetnsPristine(p5); err != nil {
		t.Errorf("after ADD without K8S_POD_NAME: %v", err)
	}
	var alloc allocations
	if err := node.rest.getJSON("/contiv/v1/ipam/allocations", &alloc); err != nil {
		t.Error(err)
	} else if len(alloc.Pods) != 0 {
		t.Errorf("allocations after the failed ADDs: %+v, want none", alloc.Pods)
	}
}

// expectAllocations checks GET /contiv/v1/ipam/allocations: the pods of want with their
// IPs, none of absent.
func expectAllocations(t *testing.T, node *contivNode, want map[string]string, absent []string) {
	t.Helper()
	var alloc allocations
	if err := node.rest.getJSON("/contiv/v1/ipam/allocations", &alloc); err != nil {
		t.Error(err)
		return
	}
	got := alloc.byPod()
	for pod, ip := range want {
		if got[pod] != ip {
			t.Errorf("allocations: %s has %q, want %s (all: %v)", pod, got[pod], ip, got)
		}
	}
	for _, pod := range absent {
		if ip, ok := got[pod]; ok {
			t.Errorf("allocations: %s still has %s", pod, ip)
		}
	}
}

// sbInterface is an entry of GET /scheduler/dump?view=SB&descriptor=vpp-interface.
type sbInterface struct {
	Key    string `json:"key"`
	Origin string `json:"origin"`
}

// vppInterfaceNames returns the logical names of the VPP interfaces the agent configured,
// as it finds them in VPP (by their tags).
func vppInterfaceNames(node *contivNode) ([]string, error) {
	var dump []sbInterface
	if err := node.rest.getJSON("/scheduler/dump?view=SB&descriptor=vpp-interface", &dump); err != nil {
		return nil, err
	}
	var names []string
	for _, d := range dump {
		if d.Origin == "FROM_NB" {
			names = append(names, strings.TrimPrefix(d.Key, "config/vpp/v2/interfaces/"))
		}
	}
	slices.Sort(names)
	return names, nil
}

// showInterfaceNames returns the interface names of the VPP CLI "show interface".
func showInterfaceNames(node *contivNode) ([]string, error) {
	out, err := node.rest.vppCLI("show interface")
	if err != nil {
		return nil, err
	}
	var names []string
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 || line[0] == ' ' {
			continue // the header, counters
		}
		names = append(names, f[0])
	}
	slices.Sort(names)
	return names, nil
}

// TestVPPRestartIsHealedByFullResync restarts the simulated VPP with empty state under a
// running agent with a pod: govppmux reconnects and the healing resync configures
// everything again, in VPP and on the Linux side of its TAPs.
func TestVPPRestartIsHealedByFullResync(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "p1")
	p1 := node.addPod(t, "p1")

	keysBefore, err := node.rest.configuredKeys()
	if err != nil {
		t.Fatal(err)
	}
	ifsBefore, err := vppInterfaceNames(node)
	if err != nil {
		t.Fatal(err)
	}
	showBefore, err := showInterfaceNames(node)
	if err != nil {
		t.Fatal(err)
	}
	podTAP := "vpp-tap-" + cnitoolContainerID(p1.ns.path)
	if len(podTAP) > 63 {
		podTAP = podTAP[:63]
	}
	for _, name := range []string{vppNIC, "tap-vpp2", "vxlanBVI", "podGwLoop", podTAP} {
		if !slices.Contains(ifsBefore, name) {
			t.Fatalf("before the VPP restart, VPP lacks interface %s: %v", name, ifsBefore)
		}
	}
	t.Logf("before the VPP restart: VPP interfaces %v; show interface %v", ifsBefore, showBefore)
	lastSeq, err := node.lastEventSeq()
	if err != nil {
		t.Fatal(err)
	}

	restarted := time.Now()
	if err := node.sim.signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "vpp-sim restarts", func() error {
		if !node.sim.logContains("simulated VPP restart") {
			return errors.New("no restart message in its log yet")
		}
		return nil
	})

	var healing eventRecord
	err = testkit.Wait(context.Background(), 15*time.Second, "the agent heals VPP", func() error {
		var err error
		if healing, err = node.healingResyncAfter(lastSeq); err != nil {
			return err
		}
		if err := node.rest.ready(); err != nil {
			return err
		}
		keys, err := node.rest.configuredKeys()
		if err != nil {
			return err
		}
		if !slices.Equal(keys, keysBefore) {
			return fmt.Errorf("CONFIGURED keys differ: lost %v, new %v", diff(keysBefore, keys), diff(keys, keysBefore))
		}
		ifs, err := vppInterfaceNames(node)
		if err != nil {
			return err
		}
		if !slices.Equal(ifs, ifsBefore) {
			return fmt.Errorf("VPP interfaces %v, were %v", ifs, ifsBefore)
		}
		show, err := showInterfaceNames(node)
		if err != nil {
			return err
		}
		if !slices.Equal(show, showBefore) {
			return fmt.Errorf("show interface: %v, was %v", show, showBefore)
		}
		if _, err := checkPodWired(p1.ns, p1.ip+"/32", podGateway); err != nil {
			return err
		}
		s, err := node.ns.state()
		if err != nil {
			return err
		}
		if l := s.link("vpp1"); l == nil || !slices.Contains(l.ipv4(), "172.30.1.2/24") {
			return fmt.Errorf("node namespace: no vpp1 with 172.30.1.2/24: %s", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("healed %v after the VPP restart (event #%d %q)", time.Since(restarted).Round(time.Millisecond), healing.SeqNum, healing.Description)
	if errs := healing.errors(); len(errs) > 0 {
		t.Errorf("the healing resync had errors: %v", errs)
	}
	if _, stderr, err := node.cni.cnitool("check", p1.ns, podArgs(p1.name)); err != nil {
		t.Errorf("cnitool check after the VPP restart: %v\n%s", err, stderr)
	}
	if _, stderr, err := node.cni.cnitool("del", p1.ns, podArgs(p1.name)); err != nil {
		t.Errorf("cnitool del after the VPP restart: %v\n%s", err, stderr)
	}
	if err := checkPodUnwired(p1.ns); err != nil {
		t.Errorf("after DEL: %v", err)
	}
}

// diff returns the elements of a that are not in b.
func diff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// vppNeighbor reports whether VPP's "show ip neighbors" lists ip with mac as static.
func vppNeighbor(node *contivNode, ip, mac string) (bool, string, error) {
	out, err := node.rest.vppCLI("show ip neighbors")
	if err != nil {
		return false, "", err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if slices.Contains(f, ip) && slices.Contains(f, "S") && slices.ContainsFunc(f, func(s string) bool { return strings.EqualFold(s, mac) }) {
			return true, out, nil
		}
	}
	return false, out, nil
}

// TestPodKeepsItsIPWhenTheAgentRestartsBeforeKubeletReportsIt restarts the agent right
// after a CNI ADD, while the Kubernetes state does not show the pod's IP yet (the
// kubelet has not reported it). The pod manager's record of the IP keeps the pod
// wired; the same container can then be deleted and added again cleanly.
func TestPodKeepsItsIPWhenTheAgentRestartsBeforeKubeletReportsIt(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "p1")
	p1 := node.addPod(t, "p1")
	if ok, out, err := vppNeighbor(node, p1.ip, p1.wiring.mac); err != nil || !ok {
		t.Fatalf("after ADD, VPP lacks the static neighbor %s %s (%v):\n%s", p1.ip, p1.wiring.mac, err, out)
	}

	node.stopAgent()
	node.startAgent()
	testkit.Eventually(t, 10*time.Second, "the restarted agent keeps the pod wired", func() error {
		w, err := checkPodWired(p1.ns, p1.ip+"/32", podGateway)
		if err == nil && (w.ifindex != p1.wiring.ifindex || w.mac != p1.wiring.mac) {
			return fmt.Errorf("eth0 was re-created: ifindex %d mac %s, before %d %s", w.ifindex, w.mac, p1.wiring.ifindex, p1.wiring.mac)
		}
		return err
	})
	if _, stderr, err := node.cni.cnitool("check", p1.ns, podArgs("p1")); err != nil {
		t.Errorf("cnitool check after the restart: %v\n%s", err, stderr)
	}

	// The same container is deleted and added again: it is wired completely, with
	// VPP's static neighbor, and deleted cleanly.
	if _, stderr, err := node.cni.cnitool("del", p1.ns, podArgs("p1")); err != nil {
		t.Fatalf("cnitool del: %v\n%s", err, stderr)
	}
	if err := checkPodUnwired(p1.ns); err != nil {
		t.Fatalf("after DEL: %v", err)
	}
	stdout, stderr, err := node.cni.cnitool("add", p1.ns, podArgs("p1"))
	if err != nil {
		t.Fatalf("cnitool add again: %v\n%s", err, stderr)
	}
	res, err := parseCNIResult(stdout)
	if err != nil {
		t.Fatal(err)
	}
	ip := strings.TrimSuffix(res.IPs[0].Address, "/32")
	w, err := checkPodWired(p1.ns, ip+"/32", podGateway)
	if err != nil {
		t.Fatal(err)
	}
	arpKey := fmt.Sprintf("config/vpp/v2/arp/vpp-tap-%s/%s", cnitoolContainerID(p1.ns.path), ip)
	var st valueStatus
	if err := node.rest.getJSON("/scheduler/status?key="+arpKey, &st); err != nil {
		t.Fatal(err)
	}
	ok, out, err := vppNeighbor(node, ip, w.mac)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.State != "CONFIGURED" {
		t.Errorf("after the pod was added again, VPP static neighbor %s %s present=%v, scheduler %s is %s; show ip neighbors:\n%s",
			ip, w.mac, ok, arpKey, st.State, out)
	}
	if _, stderr, err := node.cni.cnitool("del", p1.ns, podArgs("p1")); err != nil {
		t.Fatalf("cnitool del: %v\n%s", err, stderr)
	}
	if err := checkPodUnwired(p1.ns); err != nil {
		t.Errorf("after DEL: %v", err)
	}
}

// TestConcurrentAddsAndDels runs CNI ADDs of many pods at once, as a kubelet starting a
// batch of pods does, then their DELs at once: every ADD succeeds with its own address
// and a wired eth0, every DEL leaves the namespace as it was, and the IPs go back.
func TestConcurrentAddsAndDels(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	const n = 16
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
	}
	node := startContivNode(t, e, names...)
	pods := make([]*pod, n)
	for i, name := range names {
		pods[i] = &pod{name: name, ns: newPodNetns(t, e)} // created here: newPodNetns may Fatal
	}

	run := func(command string) []error {
		errs := make([]error, n)
		stdouts := make([]string, n)
		var wg sync.WaitGroup
		for i, p := range pods {
			wg.Go(func() {
				stdout, stderr, err := node.cni.cnitool(command, p.ns, podArgs(p.name))
				if err != nil {
					errs[i] = fmt.Errorf("cnitool %s %s: %v\n%s", command, p.name, err, stderr)
				}
				stdouts[i] = stdout
			})
		}
		wg.Wait()
		if command == "add" {
			for i, p := range pods {
				if errs[i] != nil {
					continue
				}
				res, err := parseCNIResult(stdouts[i])
				if err != nil {
					errs[i] = fmt.Errorf("ADD %s: %v", p.name, err)
					continue
				}
				ip, _, err := net.ParseCIDR(res.IPs[0].Address)
				if err != nil {
					errs[i] = fmt.Errorf("ADD %s: address %q: %v", p.name, res.IPs[0].Address, err)
					continue
				}
				p.ip, p.result = ip.String(), res
			}
		}
		return errs
	}

	for _, err := range run("add") {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	want := make(map[string]string, n)
	seen := make(map[string]string, n)
	for _, p := range pods {
		if other, dup := seen[p.ip]; dup {
			t.Errorf("pods %s and %s both got %s", other, p.name, p.ip)
		}
		seen[p.ip] = p.name
		want["default/"+p.name] = p.ip
		if _, err := checkPodWired(p.ns, p.ip+"/32", podGateway); err != nil {
			t.Errorf("after the concurrent ADDs: %v", err)
		}
	}
	expectAllocations(t, node, want, nil)

	absent := make([]string, 0, n)
	for _, err := range run("del") {
		if err != nil {
			t.Error(err)
		}
	}
	for _, p := range pods {
		if err := checkPodUnwired(p.ns); err != nil {
			t.Errorf("after the concurrent DELs: %v", err)
		}
		absent = append(absent, "default/"+p.name)
	}
	expectAllocations(t, node, nil, absent)
}

// TestPodsSurviveAnAgentCrash kills the agent (SIGKILL: no Close, the state file's journal
// is left as the last append made it, the CNI socket file stays) after pods were added
// and one deleted. The restarted agent recovers exactly the pods that exist, with their
// addresses (kubelet has not reported them yet) and their interfaces untouched.
func TestPodsSurviveAnAgentCrash(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "k1", "k2", "k3")
	k1, k2, k3 := node.addPod(t, "k1"), node.addPod(t, "k2"), node.addPod(t, "k3")
	if _, stderr, err := node.cni.cnitool("del", k2.ns, podArgs("k2")); err != nil {
		t.Fatalf("cnitool del k2: %v\n%s", err, stderr)
	}

	if err := node.agent.signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-node.agent.done
	node.startAgent()

	expectAllocations(t, node, map[string]string{"default/k1": k1.ip, "default/k3": k3.ip}, []string{"default/k2"})
	for _, p := range []*pod{k1, k3} {
		w, err := checkPodWired(p.ns, p.ip+"/32", podGateway)
		if err != nil {
			t.Errorf("after the crash: %v", err)
			continue
		}
		if w != p.wiring {
			t.Errorf("after the crash, eth0 of %s is #%d %s, was #%d %s: recreated", p.name, w.ifindex, w.mac, p.wiring.ifindex, p.wiring.mac)
		}
		if _, stderr, err := node.cni.cnitool("check", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool check %s after the crash: %v\n%s", p.name, err, stderr)
		}
	}
	if err := checkPodUnwired(k2.ns); err != nil {
		t.Errorf("k2, deleted before the crash: %v", err)
	}
	for _, p := range []*pod{k1, k3} {
		if _, stderr, err := node.cni.cnitool("del", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool del %s: %v\n%s", p.name, err, stderr)
		}
		if err := checkPodUnwired(p.ns); err != nil {
			t.Errorf("after DEL: %v", err)
		}
	}
	expectAllocations(t, node, nil, []string{"default/k1", "default/k2", "default/k3"})
}

// TestCNICheckSeesBrokenPodNetworks breaks, one pod each, what the ADD set up: the pod's
// eth0, its address, its default route, its whole network namespace. CNI CHECK (cnitool,
// contiv-cni, the agent) must fail for each, naming what is missing, and keep passing
// for an intact pod.
func TestCNICheckSeesBrokenPodNetworks(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "chk-ok", "chk-link", "chk-addr", "chk-route", "chk-netns")
	ok := node.addPod(t, "chk-ok")
	for _, tc := range []struct {
		name  string
		ipArg []string // ip -n <ns> ...; nil deletes the namespace
		want  string
	}{
		{"chk-link", []string{"link", "del", "eth0"}, "interface eth0 is missing"},
		{"chk-addr", nil, "lacks address"},
		{"chk-route", []string{"route", "del", "default"}, "route to 0.0.0.0/0 via " + podGateway + " is missing"},
		{"chk-netns", nil, "network namespace"},
	} {
		p := node.addPod(t, tc.name)
		args := tc.ipArg
		switch tc.name {
		case "chk-addr":
			args = []string{"addr", "del", p.ip + "/32", "dev", "eth0"}
		case "chk-netns":
			if err := p.ns.delete(); err != nil {
				t.Fatal(err)
			}
		}
		if args != nil {
			if out, err := exec.Command(e.ip, append([]string{"-n", p.ns.name}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip -n %s %v: %v: %s", p.ns.name, args, err, out)
			}
		}
		_, stderr, err := node.cni.cnitool("check", p.ns, podArgs(p.name))
		if err == nil || !strings.Contains(stderr, tc.want) {
			t.Errorf("cnitool check of %s = %v, %q; want an error containing %q", p.name, err, stderr, tc.want)
		}
	}
	if _, stderr, err := node.cni.cnitool("check", ok.ns, podArgs(ok.name)); err != nil {
		t.Errorf("cnitool check of the intact pod: %v\n%s", err, stderr)
	}
}

// TestPodsSurviveALostPodStateFile removes the agent's pods.json while it is stopped (a
// full disk lost its writes, or someone deleted it): the restarted agent recovers the
// pods from what the node still shows (the runtime's CNI cache, their namespaces), keeps
// their interfaces (not recreated) and their IPs, and a new pod gets another IP.
func TestPodsSurviveALostPodStateFile(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "lost1", "lost2", "lost3")
	l1, l2 := node.addPod(t, "lost1"), node.addPod(t, "lost2")

	node.stopAgent()
	if err := os.Remove(filepath.Join(node.standaloneDir, "pods.json")); err != nil {
		t.Fatal(err)
	}
	node.startAgent()

	expectAllocations(t, node, map[string]string{"default/lost1": l1.ip, "default/lost2": l2.ip}, nil)
	for _, p := range []*pod{l1, l2} {
		w, err := checkPodWired(p.ns, p.ip+"/32", podGateway)
		if err != nil {
			t.Errorf("after losing pods.json: %v", err)
			continue
		}
		if w != p.wiring {
			t.Errorf("after losing pods.json, eth0 of %s is #%d %s, was #%d %s: recreated", p.name, w.ifindex, w.mac, p.wiring.ifindex, p.wiring.mac)
		}
		if _, stderr, err := node.cni.cnitool("check", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool check %s: %v\n%s", p.name, err, stderr)
		}
	}
	l3 := node.addPod(t, "lost3")
	if l3.ip == l1.ip || l3.ip == l2.ip {
		t.Errorf("new pod got %s, the IP of a running pod", l3.ip)
	}
	for _, p := range []*pod{l1, l2, l3} {
		if _, stderr, err := node.cni.cnitool("del", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool del %s: %v\n%s", p.name, err, stderr)
		}
	}
}

// TestCNIIfNameIsHonoured: an ADD with CNI_IFNAME=net1 creates net1 (not eth0) in the
// pod's namespace and reports it; CHECK and DEL as net1 succeed, and the DEL removes
// net1 and the pod's routes.
func TestCNIIfNameIsHonoured(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNode(t, e, "n1")
	ns := newPodNetns(t, e)
	stdout, stderr, err := node.cni.cnitoolAs("add", "net1", ns, podArgs("n1"))
	if err != nil {
		t.Fatalf("cnitool add as net1: %v\n%s", err, stderr)
	}
	res, err := parseCNIResult(stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].Name != "net1" || res.Interfaces[0].Sandbox != ns.path {
		t.Errorf("ADD result interfaces %+v, want net1 in %s", res.Interfaces, ns.path)
	}
	if _, err := checkPodWiredAs(ns, "net1", res.IPs[0].Address, podGateway); err != nil {
		t.Error(err)
	}
	if s, err := ns.state(); err == nil && s.link("eth0") != nil {
		t.Errorf("an eth0 was created too: %s", s)
	}
	if _, stderr, err := node.cni.cnitoolAs("check", "net1", ns, podArgs("n1")); err != nil {
		t.Errorf("cnitool check as net1: %v\n%s", err, stderr)
	}
	if _, stderr, err := node.cni.cnitoolAs("del", "net1", ns, podArgs("n1")); err != nil {
		t.Fatalf("cnitool del as net1: %v\n%s", err, stderr)
	}
	s, err := ns.state()
	if err != nil {
		t.Fatal(err)
	}
	if s.link("net1") != nil || len(s.routes) > 0 {
		t.Errorf("after the DEL, the pod is still configured: %s", s)
	}
}

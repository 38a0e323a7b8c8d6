// Package e2e holds the end-to-end tests of contiv-vpp: the real binaries (contiv-agent,
// vpp-sim, contiv-cni) driven by cnitool as a container runtime would, in network
// namespaces of their own.
//
// Isolation: the tests never create links or routes in the network namespace of the test
// process. Every node is a namespace "ctv-e2e-<pid>-<n>" in which the agent and the
// simulator run (ip netns exec); the agent's REST API (127.0.0.1 inside that namespace) is
// reached through an HTTP client that dials from inside it. Pods are namespaces
// "ctv-e2e-pod-<pid>-<n>". Unix sockets are files, so cnitool and contiv-cni run in the
// test's namespace and talk to the agent in the node namespace.
//
// The tests skip unless they run as root with ip (iproute2) and cnitool
// (go install github.com/containernetworking/cni/cnitool@v1.3.0) available.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// netnsDir is where ip netns keeps the namespaces it names.
const netnsDir = "/var/run/netns"

// Namespace name prefixes; TestMain checks that none created by this run survives it.
const (
	nsPrefix    = "ctv-e2e-"
	podNSPrefix = "ctv-e2e-pod-"
)

// pollInterval is the pause between two readings of a state that must hold for a while.
const pollInterval = 100 * time.Millisecond

// --- the environment ------------------------------------------------------------------

// env is what the tests need from the machine.
type env struct {
	ip      string // the ip command
	cnitool string
	goCmd   string
	root    string // the module root (contains go.mod)
}

var (
	envOnce sync.Once
	envVal  *env
	envSkip string // why the tests cannot run here ("" = they can)
	envErr  error  // a broken checkout, not a reason to skip
)

// requireEnv skips tb unless the end-to-end tests can run on this machine.
func requireEnv(tb testing.TB) *env {
	tb.Helper()
	envOnce.Do(func() { envVal, envSkip, envErr = probeEnv() })
	if envSkip != "" {
		tb.Skip(envSkip)
	}
	if envErr != nil {
		tb.Fatal(envErr)
	}
	return envVal
}

func probeEnv() (*env, string, error) {
	if os.Geteuid() != 0 {
		return nil, "e2e: needs root (network namespaces, TAP interfaces, the cnitool cache in /var/lib/cni)", nil
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, "e2e: the ip command (iproute2) is not installed", nil
	}
	goCmd := findGo()
	cnitool := findCnitool(goCmd)
	if cnitool == "" {
		return nil, "e2e: cnitool is not in PATH nor in GOPATH/bin " +
			"(go install github.com/containernetworking/cni/cnitool@v1.3.0)", nil
	}
	root, err := testkit.ModuleRoot()
	if err != nil {
		return nil, "", err
	}
	return &env{ip: ip, cnitool: cnitool, goCmd: goCmd, root: root}, "", nil
}

// findGo returns the go command: from PATH, else $GOROOT/bin, else /usr/local/go/bin.
func findGo() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if r := os.Getenv("GOROOT"); r != "" {
		if p := filepath.Join(r, "bin", "go"); isExecutable(p) {
			return p
		}
	}
	return "/usr/local/go/bin/go"
}

// findCnitool looks for cnitool in PATH, then in the bin directories of GOPATH.
func findCnitool(goCmd string) string {
	if p, err := exec.LookPath("cnitool"); err == nil {
		return p
	}
	var dirs []string
	if out, err := exec.Command(goCmd, "env", "GOPATH").Output(); err == nil {
		dirs = append(dirs, filepath.SplitList(strings.TrimSpace(string(out)))...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go"))
	}
	dirs = append(dirs, "/root/go")
	for _, d := range dirs {
		if p := filepath.Join(d, "bin", "cnitool"); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// --- binaries -------------------------------------------------------------------------

// tempDirs are directories shared by the tests of this run; TestMain removes them.
var (
	tempDirsMu sync.Mutex
	tempDirs   []string
)

func sharedTempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	tempDirsMu.Lock()
	tempDirs = append(tempDirs, dir)
	tempDirsMu.Unlock()
	return dir, nil
}

func removeSharedTempDirs() {
	tempDirsMu.Lock()
	defer tempDirsMu.Unlock()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	tempDirs = nil
}

// productBinaries are the binaries under test, built once per run.
var productBinaries struct {
	once sync.Once
	dir  string
	err  error
}

// binaries builds contiv-agent, contiv-cni and vpp-sim (once per run) and returns their
// directory, which is also the CNI_PATH of contiv-cni.
func binaries(tb testing.TB, e *env) string {
	tb.Helper()
	b := &productBinaries
	b.once.Do(func() {
		start := time.Now()
		b.dir, b.err = sharedTempDir("ctv-e2e-bin-")
		if b.err != nil {
			return
		}
		names := []string{"contiv-agent", "contiv-cni", "vpp-sim"}
		errs := make([]error, len(names))
		var wg sync.WaitGroup
		for i, name := range names {
			wg.Go(func() { errs[i] = testkit.GoBuild(e.goCmd, e.root, filepath.Join(b.dir, name), "./cmd/"+name) })
		}
		wg.Wait()
		b.err = errors.Join(errs...)
		tb.Logf("built %s in %v", strings.Join(names, ", "), time.Since(start).Round(time.Millisecond))
	})
	if b.err != nil {
		tb.Fatalf("build the binaries: %v", b.err)
	}
	return b.dir
}

// --- network namespaces ---------------------------------------------------------------

var nsSeq atomic.Int64

// netns is a named network namespace of this test run.
type netns struct {
	e    *env
	name string
	path string

	mu      sync.Mutex
	deleted bool

	// keepMounts makes startProcess run binaries in the namespace without "ip netns
	// exec", which gives them a mount namespace of their own: namespaces they create
	// with "ip netns add" are then visible outside.
	keepMounts bool
}

// newNodeNetns creates a node namespace (loopback up, for the agent's REST API and the
// embedded etcd); it is deleted when tb ends.
func newNodeNetns(tb testing.TB, e *env) *netns {
	tb.Helper()
	ns := newNetns(tb, e, fmt.Sprintf("%s%d-%d", nsPrefix, os.Getpid(), nsSeq.Add(1)))
	if out, err := exec.Command(e.ip, "-n", ns.name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		tb.Fatalf("ip -n %s link set lo up: %v: %s", ns.name, err, out)
	}
	return ns
}

// newPodNetns creates a pod namespace, as the container runtime would for a sandbox; it
// is deleted when tb ends (or earlier with delete).
func newPodNetns(tb testing.TB, e *env) *netns {
	tb.Helper()
	return newNetns(tb, e, fmt.Sprintf("%s%d-%d", podNSPrefix, os.Getpid(), nsSeq.Add(1)))
}

func newNetns(tb testing.TB, e *env, name string) *netns {
	tb.Helper()
	if out, err := exec.Command(e.ip, "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	ns := &netns{e: e, name: name, path: filepath.Join(netnsDir, name)}
	tb.Cleanup(func() {
		if err := ns.delete(); err != nil {
			tb.Error(err)
		}
	})
	return ns
}

// delete removes the namespace; deleting it again does nothing.
func (ns *netns) delete() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.deleted {
		return nil
	}
	out, err := exec.Command(ns.e.ip, "netns", "delete", ns.name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip netns delete %s: %v: %s", ns.name, err, out)
	}
	ns.deleted = true
	return nil
}

// listTestNetns returns the names of the namespaces named by this package's prefix.
func listTestNetns() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), nsPrefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// ipJSON runs "ip -j -n <ns> args..." and decodes its output into out.
func (ns *netns) ipJSON(out any, args ...string) error {
	argv := append([]string{"-j", "-n", ns.name}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(ns.e.ip, argv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(argv, " "), err, stderr.String())
	}
	data := bytes.TrimSpace(stdout.Bytes())
	if len(data) == 0 {
		data = []byte("[]")
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(argv, " "), err, data)
	}
	return nil
}

// ipLink is an entry of "ip -j addr".
type ipLink struct {
	Ifindex   int      `json:"ifindex"`
	Ifname    string   `json:"ifname"`
	Flags     []string `json:"flags"`
	Operstate string   `json:"operstate"`
	MTU       int      `json:"mtu"`
	Address   string   `json:"address"`
	AddrInfo  []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		Prefixlen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

// ipv4 returns the IPv4 addresses of the link as CIDRs.
func (l ipLink) ipv4() []string {
	var out []string
	for _, a := range l.AddrInfo {
		if a.Family == "inet" {
			out = append(out, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
		}
	}
	return out
}

// ipRoute is an entry of "ip -j route".
type ipRoute struct {
	Dst     string `json:"dst"`
	Gateway string `json:"gateway"`
	Dev     string `json:"dev"`
	Scope   string `json:"scope"`
}

func (r ipRoute) String() string {
	s := r.Dst
	if r.Gateway != "" {
		s += " via " + r.Gateway
	}
	s += " dev " + r.Dev
	if r.Scope != "" {
		s += " scope " + r.Scope
	}
	return s
}

// ipNeigh is an entry of "ip -j neigh".
type ipNeigh struct {
	Dst    string   `json:"dst"`
	Dev    string   `json:"dev"`
	Lladdr string   `json:"lladdr"`
	State  []string `json:"state"`
}

// netState is what a namespace has configured: links with addresses, IPv4 routes of the
// main table and neighbors.
type netState struct {
	links  []ipLink
	routes []ipRoute
	neighs []ipNeigh
}

func (ns *netns) state() (*netState, error) {
	var s netState
	if err := ns.ipJSON(&s.links, "addr", "show"); err != nil {
		return nil, err
	}
	if err := ns.ipJSON(&s.routes, "-4", "route", "show"); err != nil {
		return nil, err
	}
	if err := ns.ipJSON(&s.neighs, "neigh", "show"); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *netState) link(name string) *ipLink {
	for i := range s.links {
		if s.links[i].Ifname == name {
			return &s.links[i]
		}
	}
	return nil
}

func (s *netState) String() string {
	var b strings.Builder
	for _, l := range s.links {
		fmt.Fprintf(&b, "link %s #%d %s %s %v; ", l.Ifname, l.Ifindex, l.Operstate, l.Address, l.ipv4())
	}
	for _, r := range s.routes {
		fmt.Fprintf(&b, "route %s; ", r)
	}
	for _, n := range s.neighs {
		fmt.Fprintf(&b, "neigh %s %s %s %v; ", n.Dst, n.Dev, n.Lladdr, n.State)
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// podWiring is what a pod wired by the agent has in its namespace (docs/dev-guide/UPSTREAM.md §3).
type podWiring struct {
	ifindex int
	mac     string
}

// checkPodWired checks the pod namespace for eth0 with ip (a /32), a link-scope route to
// the gateway, the default route via the gateway and a permanent ARP entry for it.
func checkPodWired(ns *netns, ip, gw string) (podWiring, error) {
	return checkPodWiredAs(ns, "eth0", ip, gw)
}

// checkPodWiredAs is checkPodWired for a pod interface named ifName.
func checkPodWiredAs(ns *netns, ifName, ip, gw string) (podWiring, error) {
	s, err := ns.state()
	if err != nil {
		return podWiring{}, err
	}
	link := s.link(ifName)
	if link == nil {
		return podWiring{}, fmt.Errorf("pod %s has no %s: %s", ns.name, ifName, s)
	}
	var problems []string
	if !slices.Contains(link.ipv4(), ip) {
		problems = append(problems, fmt.Sprintf("%s addresses %v lack %s", ifName, link.ipv4(), ip))
	}
	if !slices.Contains(link.Flags, "UP") {
		problems = append(problems, fmt.Sprintf("%s is not up (%v)", ifName, link.Flags))
	}
	if !slices.ContainsFunc(s.routes, func(r ipRoute) bool {
		return r.Dst == gw && r.Dev == ifName && r.Scope == "link" && r.Gateway == ""
	}) {
		problems = append(problems, "no link-scope route to "+gw+" on "+ifName)
	}
	if !slices.ContainsFunc(s.routes, func(r ipRoute) bool {
		return (r.Dst == "default" || r.Dst == "0.0.0.0/0") && r.Gateway == gw && r.Dev == ifName
	}) {
		problems = append(problems, "no default route via "+gw+" on "+ifName)
	}
	if !slices.ContainsFunc(s.neighs, func(n ipNeigh) bool {
		return n.Dst == gw && n.Dev == ifName && n.Lladdr != "" && slices.Contains(n.State, "PERMANENT")
	}) {
		problems = append(problems, "no PERMANENT ARP entry for "+gw+" on "+ifName)
	}
	if len(problems) > 0 {
		return podWiring{}, fmt.Errorf("pod %s: %s\n  state: %s", ns.name, strings.Join(problems, "; "), s)
	}
	return podWiring{ifindex: link.Ifindex, mac: link.Address}, nil
}

// checkPodUnwired checks that the pod namespace has no eth0 and no IPv4 routes.
func checkPodUnwired(ns *netns) error {
	s, err := ns.state()
	if err != nil {
		return err
	}
	if s.link("eth0") != nil || len(s.routes) > 0 {
		return fmt.Errorf("pod %s is still configured: %s", ns.name, s)
	}
	return nil
}

// checkNetnsPristine checks that nothing was configured in a fresh namespace: only lo,
// down and without addresses, no routes, no neighbors.
func checkNetnsPristine(ns *netns) error {
	s, err := ns.state()
	if err != nil {
		return err
	}
	if len(s.links) != 1 || s.links[0].Ifname != "lo" || len(s.links[0].AddrInfo) > 0 ||
		slices.Contains(s.links[0].Flags, "UP") || len(s.routes) > 0 || len(s.neighs) > 0 {
		return fmt.Errorf("namespace %s is not as created: %s", ns.name, s)
	}
	return nil
}

// --- processes ------------------------------------------------------------------------

var procSeq atomic.Int64

// process is a binary running in a namespace through "ip netns exec" (which executes it
// in place: the PID is the binary's), its output captured in a log file.
type process struct {
	tb      testing.TB
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// startProcess starts argv inside ns; its output goes to a file in logDir. The process
// is stopped (SIGTERM, then SIGKILL) when tb ends, and its log printed if tb failed.
func startProcess(tb testing.TB, ns *netns, logDir, name string, argv ...string) *process {
	tb.Helper()
	logPath := filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, procSeq.Add(1)))
	f, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(ns.e.ip, append([]string{"netns", "exec", ns.name}, argv...)...)
	start := cmd.Start
	if ns.keepMounts { // started from a thread in the namespace: no mount namespace of its own
		cmd = exec.Command(argv[0], argv[1:]...)
		start = func() error { return nsrun.Run(ns.path, cmd.Start) }
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	p := &process{tb: tb, name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		if p.running() {
			if _, err := p.stop(syscall.SIGTERM, 10*time.Second); err != nil {
				tb.Errorf("stop %s: %v", p.name, err)
			}
		}
		if tb.Failed() {
			p.printLog(120)
		}
	})
	return p
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *process) signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// stop sends sig and waits up to timeout for the exit; then it kills the process and
// returns an error. It returns the exit code.
func (p *process) stop(sig os.Signal, timeout time.Duration) (int, error) {
	if p.running() {
		_ = p.signal(sig)
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return -1, fmt.Errorf("%s did not exit within %v of %v: killed", p.name, timeout, sig)
	}
	return p.cmd.ProcessState.ExitCode(), nil
}

// exited reports the exit error when the process has stopped (for failing early).
func (p *process) exitedError() error {
	if p.running() {
		return nil
	}
	return fmt.Errorf("%s exited: %v (log %s)", p.name, p.waitErr, p.logPath)
}

// logContains reports whether the process's output contains s.
func (p *process) logContains(s string) bool {
	data, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(data, []byte(s))
}

// printLog prints the last lines of the log (long lines cut: the scheduler logs whole
// transactions on one line).
func (p *process) printLog(lines int) {
	f, err := os.Open(p.logPath)
	if err != nil {
		p.tb.Logf("log of %s: %v", p.name, err)
		return
	}
	defer f.Close()
	var tail []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 800 {
			line = line[:800] + " [...]"
		}
		tail = append(tail, line)
		if len(tail) > lines {
			tail = tail[1:]
		}
	}
	p.tb.Logf("--- last %d lines of %s (%s) ---\n%s\n--- end of %s ---", len(tail), p.name, p.logPath,
		strings.Join(tail, "\n"), p.name)
}

// --- REST from inside a namespace -----------------------------------------------------

// restClient talks to an agent's REST API inside a node namespace.
type restClient struct {
	base string
	hc   *http.Client
}

func newRESTClient(tb testing.TB, ns *netns, endpoint string) *restClient {
	tr := &http.Transport{DialContext: nsrun.Dialer(ns.path), DisableKeepAlives: true}
	tb.Cleanup(tr.CloseIdleConnections)
	return &restClient{base: "http://" + endpoint, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

func (c *restClient) do(method, path string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// getJSON GETs path and decodes a 200 answer into out.
func (c *restClient) getJSON(path string, out any) error {
	code, data, err := c.do(http.MethodGet, path, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("GET %s: %w: %s", path, err, data)
	}
	return nil
}

// vppCLI runs a VPP CLI command through POST /vpp/command and returns its output.
func (c *restClient) vppCLI(command string) (string, error) {
	body, err := json.Marshal(map[string]string{"vppclicommand": command})
	if err != nil {
		return "", err
	}
	code, data, err := c.do(http.MethodPost, "/vpp/command", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("POST /vpp/command %q: %w", command, err)
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("POST /vpp/command %q: %d %s", command, code, bytes.TrimSpace(data))
	}
	var out string
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("POST /vpp/command %q: %w: %s", command, err, data)
	}
	return out, nil
}

// readiness is the body of GET /readiness.
type readiness struct {
	State      string `json:"state"`
	Components map[string]struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	} `json:"components"`
}

// ready returns nil when GET /readiness answers 200 with state OK.
func (c *restClient) ready() error {
	code, data, err := c.do(http.MethodGet, "/readiness", nil)
	if err != nil {
		return fmt.Errorf("GET /readiness: %w", err)
	}
	var r readiness
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("GET /readiness: %d %w: %s", code, err, data)
	}
	if code != http.StatusOK || r.State != "OK" {
		return fmt.Errorf("GET /readiness: %d %s", code, bytes.TrimSpace(data))
	}
	return nil
}

// ipamData is the body of GET /contiv/v1/ipam (the fields the tests look at).
type ipamData struct {
	NodeID            uint32 `json:"nodeId"`
	NodeName          string `json:"nodeName"`
	NodeIP            string `json:"nodeIP"`
	PodSubnetThisNode string `json:"podSubnetThisNode"`
	VppHostNetwork    string `json:"vppHostNetwork"`
}

// allocations is the body of GET /contiv/v1/ipam/allocations.
type allocations struct {
	Pods []struct {
		PodID struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"PodID"`
		MainIP string `json:"MainIP"`
	} `json:"Pods"`
}

// byPod maps "namespace/name" to the pod's IP.
func (a allocations) byPod() map[string]string {
	m := make(map[string]string, len(a.Pods))
	for _, p := range a.Pods {
		m[p.PodID.Namespace+"/"+p.PodID.Name] = p.MainIP
	}
	return m
}

// valueStatus is an entry of GET /scheduler/status.
type valueStatus struct {
	Key           string `json:"key"`
	State         string `json:"state"`
	LastOperation string `json:"lastOperation"`
	Error         string `json:"error"`
}

// configuredKeys returns the keys the scheduler reports CONFIGURED.
func (c *restClient) configuredKeys() ([]string, error) {
	var st []valueStatus
	if err := c.getJSON("/scheduler/status", &st); err != nil {
		return nil, err
	}
	var keys []string
	for _, v := range st {
		if v.State == "CONFIGURED" {
			keys = append(keys, v.Key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// eventRecord is an entry of GET /controller/event-history.
type eventRecord struct {
	SeqNum        uint64    `json:"SeqNum"`
	Name          string    `json:"Name"`
	Description   string    `json:"Description"`
	Method        string    `json:"Method"`
	ProcessingEnd time.Time `json:"ProcessingEnd"`
	Handlers      []struct {
		Handler  string `json:"Handler"`
		ErrorStr string `json:"ErrorStr"`
	} `json:"Handlers"`
}

func (r eventRecord) errors() []string {
	var errs []string
	for _, h := range r.Handlers {
		if h.ErrorStr != "" {
			errs = append(errs, h.Handler+": "+h.ErrorStr)
		}
	}
	return errs
}

// --- files ----------------------------------------------------------------------------

// writeFileAtomic replaces path with data in one rename, so that a poller never reads
// half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// --- CNI ------------------------------------------------------------------------------

// cniRunner runs cnitool for one network configuration list.
type cniRunner struct {
	e       *env
	binDir  string // CNI_PATH
	confDir string // NETCONFPATH
	network string
	// inNS, if set, runs cnitool (and so the plugins) inside this namespace.
	inNS *netns
}

// newCNIRunner writes the conflist network (plugins given as JSON objects) into a new
// directory; cnitool's result cache entries of the network are removed when tb ends.
func newCNIRunner(tb testing.TB, e *env, binDir, network string, plugins ...map[string]any) *cniRunner {
	tb.Helper()
	r := &cniRunner{e: e, binDir: binDir, confDir: filepath.Join(tb.TempDir(), "net.d"), network: network}
	if err := os.Mkdir(r.confDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	list := map[string]any{"cniVersion": "1.1.0", "name": network, "plugins": plugins}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.confDir, "10-"+network+".conflist"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		// libcni caches ADD results in /var/lib/cni/results/<network>-<container>-<if>.
		matches, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", network+"-*"))
		for _, m := range matches {
			os.Remove(m)
		}
	})
	return r
}

// cnitool runs "cnitool <command> <network> <pod netns path>" with CNI_ARGS cniArgs.
func (r *cniRunner) cnitool(command string, pod *netns, cniArgs string) (stdout, stderr string, err error) {
	return r.cnitoolAs(command, "eth0", pod, cniArgs)
}

// cnitoolAs is cnitool with CNI_IFNAME ifName.
func (r *cniRunner) cnitoolAs(command, ifName string, pod *netns, cniArgs string) (stdout, stderr string, err error) {
	argv := []string{r.e.cnitool, command, r.network, pod.path}
	if r.inNS != nil {
		argv = append([]string{r.e.ip, "netns", "exec", r.inNS.name}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(envWithoutCNI(), "CNI_PATH="+r.binDir, "NETCONFPATH="+r.confDir, "CNI_IFNAME="+ifName)
	if cniArgs != "" {
		cmd.Env = append(cmd.Env, "CNI_ARGS="+cniArgs)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// envWithoutCNI is the test's environment without the CNI variables.
func envWithoutCNI() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNI_") && !strings.HasPrefix(kv, "NETCONFPATH=") && !strings.HasPrefix(kv, "CAP_ARGS=") {
			env = append(env, kv)
		}
	}
	return env
}

// podArgs are the CNI_ARGS kubelet passes for pod default/name.
func podArgs(name string) string {
	return "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + name
}

// cnitoolContainerID is the container ID cnitool derives from a netns path.
func cnitoolContainerID(path string) string {
	sum := sha512.Sum512([]byte(path))
	return fmt.Sprintf("cnitool-%x", sum[:10])
}

// cniResult is the CNI result printed by cnitool add.
type cniResult struct {
	CNIVersion string `json:"cniVersion"`
	Interfaces []struct {
		Name    string `json:"name"`
		Mac     string `json:"mac"`
		Sandbox string `json:"sandbox"`
	} `json:"interfaces"`
	IPs []struct {
		Interface *int   `json:"interface"`
		Address   string `json:"address"`
		Gateway   string `json:"gateway"`
	} `json:"ips"`
	Routes []cniRoute `json:"routes"`
}

// cniRoute is a route of a CNI result.
type cniRoute struct {
	Dst string `json:"dst"`
	GW  string `json:"gw"`
}

func parseCNIResult(stdout string) (*cniResult, error) {
	var r cniResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		return nil, fmt.Errorf("CNI result: %w: %q", err, stdout)
	}
	if len(r.IPs) == 0 {
		return nil, fmt.Errorf("CNI result without IPs: %s", stdout)
	}
	return &r, nil
}

// cniError is the error JSON a CNI plugin prints on stdout.
type cniError struct {
	Code uint   `json:"code"`
	Msg  string `json:"msg"`
}

// execPlugin runs a CNI plugin binary directly (to see its error JSON, which cnitool
// does not print) and returns the error it printed, nil on success.
func execPlugin(plugin, command, conf string, pod *netns, containerID, cniArgs, cniPath string) (*cniError, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin)
	cmd.Env = append(envWithoutCNI(), "CNI_COMMAND="+command, "CNI_CONTAINERID="+containerID,
		"CNI_NETNS="+pod.path, "CNI_IFNAME=eth0", "CNI_ARGS="+cniArgs, "CNI_PATH="+cniPath)
	cmd.Stdin = strings.NewReader(conf)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err == nil {
		return nil, nil
	}
	var e cniError
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		return nil, fmt.Errorf("%s %s failed without error JSON: stdout %q, stderr %q", plugin, command, out.String(), errOut.String())
	}
	return &e, nil
}

// --- a contiv node: vpp-sim and the agent in a node namespace ---------------------------

// The address plan of k8s/examples/contiv.conf for node ID 1, the node of the tests.
const (
	nodeName     = "k8s-master"
	restEndpoint = "127.0.0.1:9999"
	vppNIC       = "GigabitEthernet0/8/0"
	podSubnet    = "10.1.1.0/24"
	podGateway   = "10.1.1.1"
	nodeMgmtIP   = "10.20.0.10"
)

// contivNode is a node namespace with a vpp-sim process (the VPP that outlives agent
// restarts, as a real one does) and contiv-agent -standalone connected to it, with a
// cluster file standing in for the API server and a CNI network of contiv-cni.
type contivNode struct {
	tb  testing.TB
	e   *env
	bin string
	ns  *netns
	dir string

	standaloneDir string
	clusterPath   string
	agentArgv     []string

	sim   *process
	agent *process
	rest  *restClient
	cni   *cniRunner

	// extraDocs are YAML documents (Services, Endpoints, ...) appended to the cluster
	// file by setClusterPods.
	extraDocs []string
}

// nodeOptions change how startContivNodeWith sets a node up.
type nodeOptions struct {
	// beforeSim runs in the new node namespace before vpp-sim starts (e.g. to create
	// the Linux interface the NIC is bound to).
	beforeSim func(ns *netns)
	// nicLink binds the NIC to this Linux interface of the node namespace
	// (vpp-sim -nic NAME=LINUXIF); "" keeps the NIC wire-less.
	nicLink string
	// serviceConf, if set, is the agent's service.conf.
	serviceConf string
	// contivConf, if set, replaces k8s/examples/contiv.conf as the agent's contiv.conf.
	contivConf string
}

// startContivNode starts a node whose cluster file has this node and the given pods
// (scheduled here, not running yet), and waits until the agent is ready.
func startContivNode(tb testing.TB, e *env, pods ...string) *contivNode {
	tb.Helper()
	return startContivNodeWith(tb, e, nodeOptions{}, pods...)
}

// startContivNodeWith is startContivNode with options.
func startContivNodeWith(tb testing.TB, e *env, opts nodeOptions, pods ...string) *contivNode {
	tb.Helper()
	bin := binaries(tb, e)
	n := &contivNode{tb: tb, e: e, bin: bin, ns: newNodeNetns(tb, e), dir: tb.TempDir()}
	if opts.beforeSim != nil {
		opts.beforeSim(n.ns)
	}
	nic := vppNIC
	if opts.nicLink != "" {
		nic += "=" + opts.nicLink
	}
	n.standaloneDir = filepath.Join(n.dir, "standalone")
	n.clusterPath = filepath.Join(n.dir, "cluster.yaml")
	apiSocket := filepath.Join(n.dir, "api.sock")
	podIPs := make(map[string]string, len(pods))
	for _, p := range pods {
		podIPs[p] = ""
	}
	n.setClusterPods(podIPs)
	httpConf := filepath.Join(n.dir, "http.conf")
	govppConf := filepath.Join(n.dir, "govpp.conf")
	for path, content := range map[string]string{
		httpConf:  "endpoint: " + restEndpoint + "\n",
		govppConf: "binapi-socket-path: " + apiSocket + "\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}

	n.sim = startProcess(tb, n.ns, n.dir, "vpp-sim",
		filepath.Join(bin, "vpp-sim"), "-linux", "-socket", apiSocket, "-nic", nic)
	testkit.Eventually(tb, 10*time.Second, "vpp-sim serves its API socket", func() error {
		if err := n.sim.exitedError(); err != nil {
			return err
		}
		if _, err := os.Stat(apiSocket); err != nil {
			return err
		}
		if !n.sim.logContains("msg=started") {
			return errors.New("no start message in its log yet")
		}
		return nil
	})

	n.agentArgv = []string{filepath.Join(bin, "contiv-agent"),
		"-standalone", "-standalone-vpp=false", "-standalone-dir", n.standaloneDir,
		"-cluster", n.clusterPath,
		"-contiv-config", filepath.Join(e.root, "k8s", "examples", "contiv.conf"),
		"-http-config", httpConf, "-govpp-config", govppConf,
		"-node-name", nodeName}
	if opts.serviceConf != "" {
		serviceConf := filepath.Join(n.dir, "service.conf")
		if err := os.WriteFile(serviceConf, []byte(opts.serviceConf), 0o644); err != nil {
			tb.Fatal(err)
		}
		n.agentArgv = append(n.agentArgv, "-service-config", serviceConf)
	}
	if opts.contivConf != "" {
		contivConf := filepath.Join(n.dir, "contiv.conf")
		if err := os.WriteFile(contivConf, []byte(opts.contivConf), 0o644); err != nil {
			tb.Fatal(err)
		}
		n.agentArgv = append(n.agentArgv, "-contiv-config", contivConf)
	}
	n.rest = newRESTClient(tb, n.ns, restEndpoint)
	n.startAgent()

	n.cni = newCNIRunner(tb, e, bin, fmt.Sprintf("%s%d-%d", nsPrefix, os.Getpid(), nsSeq.Add(1)), map[string]any{
		"type":       "contiv-cni",
		"grpcServer": n.cniSocket(),
		"logFile":    filepath.Join(n.dir, "contiv-cni.log"),
	})
	return n
}

// cniSocket is the agent's CNI socket: <standalone-dir>/cni.sock in standalone mode.
func (n *contivNode) cniSocket() string { return filepath.Join(n.standaloneDir, "cni.sock") }

// startAgent starts the agent and waits until it is ready, serves CNI and has done its
// first resync.
func (n *contivNode) startAgent() {
	n.tb.Helper()
	n.agent = startProcess(n.tb, n.ns, n.dir, "contiv-agent", n.agentArgv...)
	testkit.Eventually(n.tb, 30*time.Second, "the agent is ready", func() error {
		if err := n.agent.exitedError(); err != nil {
			return err
		}
		if err := n.rest.ready(); err != nil {
			return err
		}
		var ipam ipamData
		if err := n.rest.getJSON("/contiv/v1/ipam", &ipam); err != nil {
			return err
		}
		if ipam.PodSubnetThisNode != podSubnet {
			return fmt.Errorf("pod subnet of the node is %q, want %s", ipam.PodSubnetThisNode, podSubnet)
		}
		if _, err := os.Stat(n.cniSocket()); err != nil {
			return err
		}
		evs, err := n.events()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(evs, func(ev eventRecord) bool { return ev.Name == "Database Resync" && !ev.ProcessingEnd.IsZero() }) {
			return errors.New("the first resync is not done yet")
		}
		return nil
	})
}

// stopAgent stops the agent with SIGTERM and checks that it exits with 0.
func (n *contivNode) stopAgent() {
	n.tb.Helper()
	code, err := n.agent.stop(syscall.SIGTERM, 15*time.Second)
	if err != nil {
		n.tb.Fatal(err)
	}
	if code != 0 {
		n.tb.Fatalf("the agent exited with %d after SIGTERM, want 0", code)
	}
}

// setClusterPods rewrites the cluster file with this node and the pods: name -> IP ("" =
// not running yet, as before the sandbox exists; an IP = running, as kubelet reports it
// after the CNI ADD).
func (n *contivNode) setClusterPods(podIPs map[string]string) {
	n.tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Namespace
metadata:
  name: default
---
apiVersion: v1
kind: Node
metadata:
  name: %s
spec:
  podCIDR: %s
status:
  addresses:
    - type: InternalIP
      address: %s
    - type: Hostname
      address: %s
`, nodeName, podSubnet, nodeMgmtIP, nodeName)
	names := make([]string, 0, len(podIPs))
	for name := range podIPs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  containers:
    - name: app
      image: busybox:1.37
`, name, nodeName)
		if ip := podIPs[name]; ip != "" {
			fmt.Fprintf(&b, "status:\n  phase: Running\n  hostIP: %s\n  podIP: %s\n", nodeMgmtIP, ip)
		} else {
			b.WriteString("status:\n  phase: Pending\n")
		}
	}
	for _, doc := range n.extraDocs {
		b.WriteString("---\n" + doc)
	}
	if err := writeFileAtomic(n.clusterPath, []byte(b.String())); err != nil {
		n.tb.Fatal(err)
	}
}

// events returns the controller's event history.
func (n *contivNode) events() ([]eventRecord, error) {
	var evs []eventRecord
	err := n.rest.getJSON("/controller/event-history", &evs)
	return evs, err
}

// lastEventSeq returns the highest sequence number of the node's event history.
func (n *contivNode) lastEventSeq() (uint64, error) {
	evs, err := n.events()
	if err != nil {
		return 0, err
	}
	var last uint64
	for _, ev := range evs {
		last = max(last, ev.SeqNum)
	}
	return last, nil
}

// healingResyncAfter returns the first healing resync numbered after seq that has
// finished; an error while there is none yet.
func (n *contivNode) healingResyncAfter(seq uint64) (eventRecord, error) {
	evs, err := n.events()
	if err != nil {
		return eventRecord{}, err
	}
	i := slices.IndexFunc(evs, func(ev eventRecord) bool {
		return ev.SeqNum > seq && ev.Name == "Healing Resync" && !ev.ProcessingEnd.IsZero()
	})
	if i < 0 {
		return eventRecord{}, errors.New("no healing resync done yet")
	}
	return evs[i], nil
}

// pod is a pod added through cnitool.
type pod struct {
	name   string
	ns     *netns
	ip     string // without the prefix length
	result *cniResult
	wiring podWiring
}

// addPod creates a pod namespace, runs cnitool add for pod default/name and checks the
// CNI result and the pod's namespace.
func (n *contivNode) addPod(tb testing.TB, name string) *pod {
	tb.Helper()
	p := &pod{name: name, ns: newPodNetns(tb, n.e)}
	stdout, stderr, err := n.cni.cnitool("add", p.ns, podArgs(name))
	if err != nil {
		tb.Fatalf("cnitool add %s: %v\n%s", name, err, stderr)
	}
	res, err := parseCNIResult(stdout)
	if err != nil {
		tb.Fatal(err)
	}
	p.result = res
	if len(res.Interfaces) != 1 || res.Interfaces[0].Name != "eth0" || res.Interfaces[0].Sandbox != p.ns.path {
		tb.Errorf("ADD %s: interfaces %+v, want eth0 in %s", name, res.Interfaces, p.ns.path)
	}
	addr, gw := res.IPs[0].Address, res.IPs[0].Gateway
	ip, ipNet, err := net.ParseCIDR(addr)
	_, subnet, _ := net.ParseCIDR(podSubnet)
	if err != nil || !subnet.Contains(ip) || ipNet.Mask.String() != net.CIDRMask(32, 32).String() {
		tb.Fatalf("ADD %s: address %q, want a /32 of %s", name, addr, podSubnet)
	}
	p.ip = ip.String()
	if gw != podGateway {
		tb.Errorf("ADD %s: gateway %q, want %s", name, gw, podGateway)
	}
	if !slices.ContainsFunc(res.Routes, func(r cniRoute) bool { return r.Dst == "0.0.0.0/0" && r.GW == podGateway }) {
		tb.Errorf("ADD %s: routes %+v lack the default route via %s", name, res.Routes, podGateway)
	}
	w, err := checkPodWired(p.ns, p.ip+"/32", podGateway)
	if err != nil {
		tb.Fatalf("after ADD %s: %v", name, err)
	}
	p.wiring = w
	if len(res.Interfaces) == 1 && !strings.EqualFold(res.Interfaces[0].Mac, w.mac) {
		tb.Errorf("ADD %s: result MAC %s, eth0 has %s", name, res.Interfaces[0].Mac, w.mac)
	}
	return p
}

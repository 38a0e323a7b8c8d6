package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// The tests below run the real contiv-cni binary, built once per test run, through
// cnitool (github.com/containernetworking/cni/cnitool, as a container runtime would
// through libcni) or directly (to read the CNI error JSON), against a fake agent serving
// RemoteCNI on a unix socket in this process.

const cnitoolPath = "/root/go/bin/cnitool"

// built holds the binaries built for the tests, once.
type built struct {
	once sync.Once
	dir  string
	err  error
	// hostLocalErr says why host-local could not be provided (nil: it is in dir).
	hostLocalErr error
}

// binaries builds contiv-cni (and, if it can, host-local) into one directory, the
// CNI_PATH of the tests.
func (b *built) binaries(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "contiv-cni-bin")
		if b.err != nil {
			return
		}
		b.err = goBuild(b.dir, "", "contiv-cni", ".")
		if b.err == nil {
			b.hostLocalErr = provideHostLocal(b.dir)
		}
	})
	if b.err != nil {
		t.Fatalf("build contiv-cni: %v", b.err)
	}
	return b.dir
}

// goTool is the go command: from PATH, else /usr/local/go/bin/go.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// goBuild builds pkg (in the module of dir moduleDir, "" = this one) into out/name.
func goBuild(out, moduleDir, name, pkg string, env ...string) error {
	cmd := exec.Command(goTool(), "build", "-o", filepath.Join(out, name), pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), env...)
	if data, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, data)
	}
	return nil
}

// provideHostLocal puts the host-local IPAM plugin into dir: from
// $CONTIV_TEST_CNI_PLUGINS or /opt/cni/bin, else built from this module, else built
// offline from the plugins module in the module cache.
func provideHostLocal(dir string) error {
	for _, d := range []string{os.Getenv("CONTIV_TEST_CNI_PLUGINS"), "/opt/cni/bin"} {
		if d == "" {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(d, "host-local")); err == nil {
			return os.WriteFile(filepath.Join(dir, "host-local"), data, 0o755)
		}
	}
	const pkg = "github.com/containernetworking/plugins/plugins/ipam/host-local"
	errModule := goBuild(dir, "", "host-local", pkg)
	if errModule == nil {
		return nil
	}
	modcache, err := exec.Command(goTool(), "env", "GOMODCACHE").Output()
	if err != nil {
		return errModule
	}
	src := filepath.Join(strings.TrimSpace(string(modcache)), "github.com/containernetworking/plugins@v1.7.1")
	errCache := goBuild(dir, src, "host-local", "./plugins/ipam/host-local", "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off")
	if errCache == nil {
		return nil
	}
	return fmt.Errorf("host-local is not available: not in $CONTIV_TEST_CNI_PLUGINS or /opt/cni/bin;\n%v\n(offline build from the module cache: %v)", errModule, errCache)
}

var testBinaries built

// fakeAgent serves RemoteCNI like the agent's pod manager, from a map of pods.
type fakeAgent struct {
	cni.UnimplementedRemoteCNIServer

	mu       sync.Mutex
	pods     map[string]*cni.CNIRequest // by container ID
	requests []*cni.CNIRequest
	calls    []string // "Add default/web", ...
}

func (a *fakeAgent) record(op string, req *cni.CNIRequest) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, req)
	id, err := podmanager.ParsePodArgs(req.GetExtraArguments())
	a.calls = append(a.calls, op+" "+id.String())
	return id.Name, err
}

func (a *fakeAgent) Add(_ context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	name, err := a.record("Add", req)
	if err != nil {
		return &cni.CNIReply{Result: cni.ResultError, Error: "add: " + err.Error()}, nil
	}
	if name == "fail-me" {
		return &cni.CNIReply{Result: cni.ResultError, Error: "add pod default/fail-me: no IP left in 10.1.1.0/24"}, nil
	}
	a.mu.Lock()
	a.pods[req.GetContainerId()] = req
	a.mu.Unlock()
	if err := wirePod(req.GetNetworkNamespace(), req.GetInterfaceName()); err != nil {
		return &cni.CNIReply{Result: cni.ResultError, Error: "wire the pod: " + err.Error()}, nil
	}
	return &cni.CNIReply{
		Result: cni.ResultOK,
		Interfaces: []*cni.CNIReply_Interface{{
			Name: "eth0", Mac: "02:fe:00:00:00:02", Sandbox: req.GetNetworkNamespace(),
			IpAddresses: []*cni.CNIReply_Interface_IP{{Address: "10.1.1.2/32", Gateway: "10.1.1.1"}},
		}},
		Routes: []*cni.CNIReply_Route{{Dst: "0.0.0.0/0", Gw: "10.1.1.1"}},
		Dns:    []*cni.CNIReply_DNS{{Nameservers: []string{"10.96.0.10"}, Search: []string{"default.svc.cluster.local"}}},
	}, nil
}

func (a *fakeAgent) Delete(_ context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	_, _ = a.record("Delete", req)
	a.mu.Lock()
	delete(a.pods, req.GetContainerId())
	a.mu.Unlock()
	return &cni.CNIReply{Result: cni.ResultOK}, nil
}

func (a *fakeAgent) Check(_ context.Context, req *cni.CNIRequest) (*cni.CNIReply, error) {
	_, _ = a.record("Check", req)
	a.mu.Lock()
	known := a.pods[req.GetContainerId()]
	a.mu.Unlock()
	if known == nil || known.GetNetworkNamespace() != req.GetNetworkNamespace() {
		return &cni.CNIReply{Result: cni.ResultError, Error: "check: the agent has no such pod"}, nil
	}
	return &cni.CNIReply{Result: cni.ResultOK}, nil
}

func (a *fakeAgent) callLog() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.calls, ", ")
}

func (a *fakeAgent) lastRequest() *cni.CNIRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requests) == 0 {
		return nil
	}
	return a.requests[len(a.requests)-1]
}

// cniEnv is one test's world: binaries, a network configuration directory, a fake
// agent on a unix socket and a log file.
type cniEnv struct {
	t       *testing.T
	binDir  string
	dir     string
	confDir string
	socket  string
	logFile string
	agent   *fakeAgent
	server  *grpc.Server
}

// newCNIEnv prepares the binaries and a directory; the agent is not started.
func newCNIEnv(t *testing.T) *cniEnv {
	t.Helper()
	bin := testBinaries.binaries(t)
	dir, err := os.MkdirTemp("", "cni")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := &cniEnv{
		t: t, binDir: bin, dir: dir,
		confDir: filepath.Join(dir, "net.d"),
		socket:  filepath.Join(dir, "cni.sock"),
		logFile: filepath.Join(dir, "cni.log"),
		agent:   &fakeAgent{pods: make(map[string]*cni.CNIRequest)},
	}
	if err := os.Mkdir(env.confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return env
}

// startAgent serves the fake agent on the env's socket until the test ends.
func (env *cniEnv) startAgent() {
	env.t.Helper()
	lis, err := net.Listen("unix", env.socket)
	if err != nil {
		env.t.Fatal(err)
	}
	env.server = grpc.NewServer()
	cni.RegisterRemoteCNIServer(env.server, env.agent)
	go func() { _ = env.server.Serve(lis) }()
	env.t.Cleanup(env.stopAgent)
}

func (env *cniEnv) stopAgent() {
	if env.server != nil {
		env.server.Stop()
		env.server = nil
	}
}

// writeConf writes the network list "contiv-test" with contiv-cni configured by plugin
// (JSON object members, merged over type, grpcServer and logFile).
func (env *cniEnv) writeConf(plugin map[string]any) string {
	env.t.Helper()
	p := map[string]any{"type": "contiv-cni", "grpcServer": env.socket, "logFile": env.logFile}
	for k, v := range plugin {
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
	}
	list := map[string]any{"cniVersion": "1.1.0", "name": "contiv-test", "plugins": []any{p}}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		env.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.confDir, "10-contiv-test.conflist"), data, 0o644); err != nil {
		env.t.Fatal(err)
	}
	conf, err := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "contiv-test"})
	if err != nil {
		env.t.Fatal(err)
	}
	// The plugin's own configuration, as the runtime gives it on stdin.
	merged := map[string]any{}
	_ = json.Unmarshal(conf, &merged)
	for k, v := range p {
		merged[k] = v
	}
	data, _ = json.Marshal(merged)
	return string(data)
}

// netns returns a path standing for a pod's network namespace. contiv-cni never enters
// it (the agent does), so a plain file does; cnitool derives the container ID from it.
func (env *cniEnv) netns(name string) string {
	env.t.Helper()
	if path := realNetns(env.t, name); path != "" {
		return path
	}
	path := filepath.Join(env.dir, "netns-"+name)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		env.t.Fatal(err)
	}
	return path
}

func podArgs(name string) string {
	return "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + name
}

// requireCnitool skips unless cnitool is installed and its result cache (/var/lib/cni,
// fixed in cnitool) is writable.
func requireCnitool(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(cnitoolPath); err != nil {
		t.Skipf("cnitool not installed at %s (go install github.com/containernetworking/cni/cnitool@v1.3.0)", cnitoolPath)
	}
	if os.Geteuid() != 0 {
		t.Skip("cnitool keeps its result cache in /var/lib/cni: needs root")
	}
}

// cnitool runs "cnitool <command> contiv-test <netns>" and returns its stdout, stderr
// and error.
func (env *cniEnv) cnitool(command, netns, cniArgs string) (string, string, error) {
	env.t.Helper()
	cmd := exec.Command(cnitoolPath, command, "contiv-test", netns)
	cmd.Env = append(cleanEnv(), "CNI_PATH="+env.binDir, "NETCONFPATH="+env.confDir, "CNI_IFNAME=eth0")
	if cniArgs != "" {
		cmd.Env = append(cmd.Env, "CNI_ARGS="+cniArgs)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runWithTimeout(cmd)
	return stdout.String(), stderr.String(), err
}

// cleanEnv is the test's environment without CNI variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNI_") && !strings.HasPrefix(kv, "NETCONFPATH=") {
			env = append(env, kv)
		}
	}
	return env
}

func runWithTimeout(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("timed out after 30s")
	}
}

// cniError is the error JSON a plugin prints.
type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       uint   `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details"`
}

// execPlugin runs contiv-cni directly with a CNI command and returns its stdout and,
// when it failed, the error it printed.
func (env *cniEnv) execPlugin(command, conf, netns, cniArgs string) (string, *cniError) {
	env.t.Helper()
	cmd := exec.Command(filepath.Join(env.binDir, "contiv-cni"))
	cmd.Env = append(cleanEnv(),
		"CNI_COMMAND="+command, "CNI_PATH="+env.binDir, "CNI_IFNAME=eth0",
		"CNI_CONTAINERID=test-"+filepath.Base(env.dir), "CNI_NETNS="+netns, "CNI_ARGS="+cniArgs)
	cmd.Stdin = strings.NewReader(conf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runWithTimeout(cmd)
	if err == nil {
		return stdout.String(), nil
	}
	var e cniError
	if jerr := json.Unmarshal(stdout.Bytes(), &e); jerr != nil {
		env.t.Fatalf("contiv-cni %s failed (%v) without error JSON: stdout %q, stderr %q", command, err, stdout.String(), stderr.String())
	}
	return stdout.String(), &e
}

func TestCnitoolAddCheckDelAgainstTheAgent(t *testing.T) {
	requireCnitool(t)
	env := newCNIEnv(t)
	env.startAgent()
	env.writeConf(nil)
	netns := env.netns("web")

	stdout, stderr, err := env.cnitool("add", netns, podArgs("web"))
	if err != nil {
		t.Fatalf("cnitool add: %v\n%s", err, stderr)
	}
	want := fmt.Sprintf(`{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","mac":"02:fe:00:00:00:02","sandbox":%q}],`+
		`"ips":[{"interface":0,"address":"10.1.1.2/32","gateway":"10.1.1.1"}],"routes":[{"dst":"0.0.0.0/0","gw":"10.1.1.1"}],`+
		`"dns":{"nameservers":["10.96.0.10"],"search":["default.svc.cluster.local"]}}`, netns)
	if got, w := canonicalJSON(t, stdout), canonicalJSON(t, want); got != w {
		t.Errorf("ADD result:\n%s\nwant:\n%s", got, w)
	}
	req := env.agent.lastRequest()
	if req.GetVersion() != "1.1.0" || req.GetNetworkNamespace() != netns || req.GetInterfaceName() != "eth0" ||
		!strings.HasPrefix(req.GetContainerId(), "cnitool-") || !strings.Contains(req.GetExtraArguments(), "K8S_POD_NAME=web") ||
		!strings.Contains(req.GetExtraNwConfig(), `"grpcServer"`) || req.GetIpamType() != "" {
		t.Errorf("agent request = %v", req)
	}

	if _, stderr, err := env.cnitool("check", netns, podArgs("web")); err != nil {
		t.Errorf("cnitool check: %v\n%s", err, stderr)
	}
	for i := range 2 {
		if _, stderr, err := env.cnitool("del", netns, podArgs("web")); err != nil {
			t.Errorf("cnitool del #%d: %v\n%s", i+1, err, stderr)
		}
	}
	if got := env.agent.callLog(); got != "Add default/web, Check default/web, Delete default/web, Delete default/web" {
		t.Errorf("agent calls = %s", got)
	}
	if _, stderr, err := env.cnitool("gc", netns, ""); err != nil {
		t.Errorf("cnitool gc: %v\n%s", err, stderr)
	}
	logData, err := os.ReadFile(env.logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"cmd=ADD", "cmd=CHECK", "cmd=DEL", "cmd=GC", "pod=default/web", "request done", "pod connected"} {
		if !strings.Contains(string(logData), w) {
			t.Errorf("log lacks %q:\n%s", w, logData)
		}
	}
}

func TestCnitoolCheckOfAPodTheAgentLostFails(t *testing.T) {
	requireCnitool(t)
	env := newCNIEnv(t)
	env.startAgent()
	env.writeConf(nil)
	netns := env.netns("web")
	if _, stderr, err := env.cnitool("add", netns, podArgs("web")); err != nil {
		t.Fatalf("cnitool add: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { _, _, _ = env.cnitool("del", netns, podArgs("web")) })
	env.agent.mu.Lock()
	env.agent.pods = map[string]*cni.CNIRequest{}
	env.agent.mu.Unlock()
	_, stderr, err := env.cnitool("check", netns, podArgs("web"))
	if err == nil || !strings.Contains(stderr, "the agent has no such pod") {
		t.Errorf("cnitool check = %v, %q; want the agent's error", err, stderr)
	}
}

func TestCnitoolMissingPodNameIsTheAgentsError(t *testing.T) {
	requireCnitool(t)
	env := newCNIEnv(t)
	env.startAgent()
	conf := env.writeConf(nil)
	netns := env.netns("web")
	_, stderr, err := env.cnitool("add", netns, "K8S_POD_NAMESPACE=default")
	if err == nil || !strings.Contains(stderr, "missing CNI argument K8S_POD_NAME") {
		t.Errorf("cnitool add = %v, %q; want the agent's error naming K8S_POD_NAME", err, stderr)
	}
	_, e := env.execPlugin("ADD", conf, netns, "K8S_POD_NAMESPACE=default")
	if e == nil || e.Code != 999 || !strings.Contains(e.Msg, "missing CNI argument K8S_POD_NAME") {
		t.Errorf("ADD error = %+v, want code 999 from the agent", e)
	}
}

func TestBadConfigIsInvalidNetworkConfig(t *testing.T) {
	env := newCNIEnv(t)
	netns := env.netns("web")
	conf := env.writeConf(map[string]any{"grpcServer": nil})
	for _, command := range []string{"ADD", "DEL", "STATUS"} {
		_, e := env.execPlugin(command, conf, netns, podArgs("web"))
		if e == nil || e.Code != 7 || !strings.Contains(e.Msg, "lacks grpcServer") || e.CNIVersion != "1.1.0" {
			t.Errorf("%s error = %+v, want code 7 naming grpcServer, with cniVersion 1.1.0", command, e)
		}
	}
	withPrev := `{"cniVersion":"1.1.0","name":"contiv-test","type":"contiv-cni","grpcServer":"/x.sock",` +
		`"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.0.0.2/24"}]}}`
	if _, e := env.execPlugin("ADD", withPrev, netns, podArgs("web")); e == nil || e.Code != 7 || !strings.Contains(e.Msg, "first plugin") {
		t.Errorf("ADD with prevResult = %+v, want code 7", e)
	}
	noPrev := `{"cniVersion":"1.1.0","name":"contiv-test","type":"contiv-cni","grpcServer":"/x.sock"}`
	if _, e := env.execPlugin("CHECK", noPrev, netns, podArgs("web")); e == nil || e.Code != 7 || !strings.Contains(e.Msg, "prevResult") {
		t.Errorf("CHECK without prevResult = %+v, want code 7", e)
	}
	if requireCnitoolOK() {
		_, stderr, err := env.cnitool("add", netns, podArgs("web"))
		if err == nil || !strings.Contains(stderr, "lacks grpcServer") {
			t.Errorf("cnitool add = %v, %q", err, stderr)
		}
	}
}

// requireCnitoolOK reports whether cnitool tests can run (see requireCnitool).
func requireCnitoolOK() bool {
	_, err := os.Stat(cnitoolPath)
	return err == nil && os.Geteuid() == 0
}

func TestAgentDownIsTryAgainLater(t *testing.T) {
	env := newCNIEnv(t) // no agent on the socket
	conf := env.writeConf(nil)
	netns := env.netns("web")
	for _, command := range []string{"ADD", "DEL"} {
		_, e := env.execPlugin(command, conf, netns, podArgs("web"))
		if e == nil || e.Code != 11 || !strings.Contains(e.Msg, "try again later") || !strings.Contains(e.Msg, env.socket) {
			t.Errorf("%s error = %+v, want code 11 naming the socket", command, e)
		}
	}
	_, e := env.execPlugin("STATUS", conf, "", "")
	if e == nil || e.Code != 50 || !strings.Contains(e.Msg, "not available at "+env.socket) {
		t.Errorf("STATUS error = %+v, want code 50", e)
	}
}

func TestStatusAndVersion(t *testing.T) {
	env := newCNIEnv(t)
	env.startAgent()
	conf := env.writeConf(nil)
	if _, e := env.execPlugin("STATUS", conf, "", ""); e != nil {
		t.Errorf("STATUS with the agent up = %+v", e)
	}
	if requireCnitoolOK() {
		if _, stderr, err := env.cnitool("status", env.netns("x"), ""); err != nil {
			t.Errorf("cnitool status: %v\n%s", err, stderr)
		}
		env.stopAgent()
		if _, stderr, err := env.cnitool("status", env.netns("x"), ""); err == nil || !strings.Contains(stderr, "not available") {
			t.Errorf("cnitool status with the agent down = %v, %q", err, stderr)
		}
	}

	out, e := env.execPlugin("VERSION", `{"cniVersion":"1.1.0"}`, "", "")
	if e != nil {
		t.Fatalf("VERSION = %+v", e)
	}
	var v struct {
		CNIVersion        string   `json:"cniVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.CNIVersion != "1.1.0" || strings.Join(v.SupportedVersions, ",") != "0.3.0,0.3.1,0.4.0,1.0.0,1.1.0" {
		t.Errorf("VERSION = %s", out)
	}
}

func TestAddOfAnOlderConfigVersionGivesThatVersion(t *testing.T) {
	env := newCNIEnv(t)
	env.startAgent()
	conf := `{"cniVersion":"0.3.1","name":"contiv-test","type":"contiv-cni","grpcServer":"` + env.socket + `","logFile":""}`
	out, e := env.execPlugin("ADD", conf, env.netns("web"), podArgs("web"))
	if e != nil {
		t.Fatalf("ADD = %+v", e)
	}
	var res struct {
		CNIVersion string `json:"cniVersion"`
		IPs        []struct {
			Version string `json:"version"`
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.CNIVersion != "0.3.1" || len(res.IPs) != 1 || res.IPs[0].Version != "4" || res.IPs[0].Address != "10.1.1.2/32" {
		t.Errorf("ADD result = %s", out)
	}
}

// hostLocalConf is the ipam section of a host-local allocation from 10.9.0.0/24 kept in
// dataDir.
func hostLocalConf(dataDir string) map[string]any {
	return map[string]any{
		"type":    "host-local",
		"ranges":  []any{[]any{map[string]any{"subnet": "10.9.0.0/24"}}},
		"dataDir": dataDir,
	}
}

func TestChainedHostLocalIPAM(t *testing.T) {
	requireCnitool(t)
	env := newCNIEnv(t)
	if testBinaries.hostLocalErr != nil {
		t.Skipf("%v", testBinaries.hostLocalErr)
	}
	env.startAgent()
	dataDir := filepath.Join(env.dir, "ipam")
	env.writeConf(map[string]any{"ipam": hostLocalConf(dataDir)})
	netns := env.netns("web")
	allocated := filepath.Join(dataDir, "contiv-test", "10.9.0.2")

	if _, stderr, err := env.cnitool("add", netns, podArgs("web")); err != nil {
		t.Fatalf("cnitool add: %v\n%s", err, stderr)
	}
	req := env.agent.lastRequest()
	var ipamRes struct {
		CNIVersion string `json:"cniVersion"`
		IPs        []struct {
			Address string `json:"address"`
			Gateway string `json:"gateway"`
		} `json:"ips"`
	}
	if err := json.Unmarshal([]byte(req.GetIpamData()), &ipamRes); err != nil {
		t.Fatalf("ipam_data %q: %v", req.GetIpamData(), err)
	}
	if req.GetIpamType() != "host-local" || len(ipamRes.IPs) != 1 || ipamRes.IPs[0].Address != "10.9.0.2/24" || ipamRes.IPs[0].Gateway != "10.9.0.1" {
		t.Errorf("ipam_type %q, ipam_data %s", req.GetIpamType(), req.GetIpamData())
	}
	if _, err := os.Stat(allocated); err != nil {
		t.Errorf("host-local allocation: %v", err)
	}
	if _, stderr, err := env.cnitool("check", netns, podArgs("web")); err != nil {
		t.Errorf("cnitool check: %v\n%s", err, stderr)
	}
	if _, stderr, err := env.cnitool("del", netns, podArgs("web")); err != nil {
		t.Errorf("cnitool del: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(allocated); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("allocation after DEL: %v", err)
	}

	// A failed ADD gives the address back.
	failNetns := env.netns("fail-me")
	_, stderr, err := env.cnitool("add", failNetns, podArgs("fail-me"))
	if err == nil || !strings.Contains(stderr, "no IP left") {
		t.Errorf("cnitool add of fail-me = %v, %q", err, stderr)
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "contiv-test"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "10.9.0.") {
			t.Errorf("address %s still allocated after the failed ADD", e.Name())
		}
	}
	if got := env.agent.callLog(); got != "Add default/web, Check default/web, Delete default/web, Add default/fail-me" {
		t.Errorf("agent calls = %s", got)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testBinaries.dir != "" {
		os.RemoveAll(testBinaries.dir)
	}
	os.Exit(code)
}

// canonicalJSON re-encodes JSON with sorted keys, so results compare independently of
// field order.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

package scale

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// envInt reads a positive integer setting, def when unset.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		tb.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return v
}

// variant is one agent build, or one configuration of this tree's agent: with
// CONTIV_SCALE_FAMILY=dual an IP family of the cluster, with CONTIV_SCALE_RENDERER=both
// a service renderer.
type variant struct {
	name     string // "before" or "after"; "ipv4" or "dual"; "nat44" or "cnat"
	ref      string // a git ref, or "" for this tree
	tags     string // build tags (go build -tags), "" for none
	agent    string // binary
	config   bool   // a variant of a configuration comparison (one build)
	dual     bool   // the cluster is dual-stack
	renderer string // contiv.conf serviceRenderer, "" for the shipped example's (nat44)
	desc     string // what the configuration of a config variant is
}

// label names the variant's code or configuration in the report: its ref or this
// tree, and its tags.
func (v *variant) label() string {
	if v.config {
		return v.desc
	}
	s := cmp.Or(v.ref, "this tree")
	if v.tags != "" {
		s += ", -tags " + v.tags
	}
	if v.renderer != "" {
		s += ", " + v.renderer
	}
	return s
}

// variants returns the agent builds to compare (see the package documentation):
// before is CONTIV_SCALE_BEFORE's ref [bb8e401], or this tree without tags when
// CONTIV_SCALE_TAGS is set and CONTIV_SCALE_BEFORE is not; after is this tree, built
// with CONTIV_SCALE_TAGS. With CONTIV_SCALE_FAMILY=dual they are this tree (with
// CONTIV_SCALE_TAGS) on the IPv4-only cluster and on the same cluster dual-stack;
// with CONTIV_SCALE_RENDERER=both, this tree with serviceRenderer nat44 and cnat.
// CONTIV_SCALE_RENDERER=cnat makes every variant of this tree render with cnat. getenv
// reads the settings (os.Getenv).
func variants(getenv func(string) string) ([]*variant, error) {
	tags := getenv("CONTIV_SCALE_TAGS")
	if strings.ContainsAny(tags, " \t") {
		return nil, fmt.Errorf("CONTIV_SCALE_TAGS=%q: want tags separated by commas", tags)
	}
	ref := getenv("CONTIV_SCALE_BEFORE")
	family := cmp.Or(getenv("CONTIV_SCALE_FAMILY"), "ipv4")
	renderer := cmp.Or(getenv("CONTIV_SCALE_RENDERER"), "nat44")
	switch {
	case family != "ipv4" && family != "dual":
		return nil, fmt.Errorf("CONTIV_SCALE_FAMILY=%q: want ipv4 or dual", family)
	case renderer != "nat44" && renderer != "cnat" && renderer != "both":
		return nil, fmt.Errorf("CONTIV_SCALE_RENDERER=%q: want nat44, cnat or both", renderer)
	case family == "dual" && renderer == "both":
		return nil, fmt.Errorf("CONTIV_SCALE_FAMILY=dual with CONTIV_SCALE_RENDERER=both: one comparison at a time " +
			"(CONTIV_SCALE_RENDERER=cnat runs the family comparison with cnat)")
	case (family == "dual" || renderer == "both") && ref != "" && ref != "none":
		return nil, fmt.Errorf("CONTIV_SCALE_BEFORE=%q with CONTIV_SCALE_FAMILY=%s CONTIV_SCALE_RENDERER=%s: that comparison runs "+
			"this tree twice; unset CONTIV_SCALE_BEFORE (or compare refs with the defaults)", ref, family, renderer)
	}
	this := "" // the serviceRenderer of this tree's variants ("": the example's, nat44)
	if renderer == "cnat" {
		this = "cnat"
	}
	switch {
	case family == "dual":
		suffix := ""
		if this != "" {
			suffix = ", " + this
		}
		return []*variant{{name: "ipv4", tags: tags, config: true, renderer: this, desc: "IPv4 only" + suffix},
			{name: "dual", tags: tags, config: true, dual: true, renderer: this, desc: "dual-stack" + suffix}}, nil
	case renderer == "both":
		return []*variant{{name: "nat44", tags: tags, config: true, renderer: "nat44", desc: "serviceRenderer nat44"},
			{name: "cnat", tags: tags, config: true, renderer: "cnat", desc: "serviceRenderer cnat"}}, nil
	}
	after := &variant{name: "after", tags: tags, renderer: this}
	switch {
	case ref == "none":
		return []*variant{after}, nil
	case ref == "" && tags != "":
		return []*variant{{name: "before"}, after}, nil // this tree, with and without the tags
	case ref == "":
		ref = "bb8e401"
	}
	return []*variant{{name: "before", ref: ref}, after}, nil
}

// result is what one run of the workload measured.
type result struct {
	firstResync, resyncEvent   time.Duration
	rest                       memory
	heapRest                   float64
	changeP50, changeP99       time.Duration
	changeMsgs                 int64
	changes                    int // the single changes measured
	joinEvents                 int
	joinEventTime, joinWall    time.Duration
	joinMsgs                   int64
	leaveEvents                int
	leaveEventTime, leaveWall  time.Duration
	leaveMsgs                  int64
	burst                      time.Duration
	burstMsgs                  int64
	burstResyncs               float64
	burstPeak                  memory
	heapAfterBurst             float64
	resyncMsgs                 int64
	resyncTop, burstTop, joinT string
	// the agent's allocations (go_memstats_alloc_bytes_total): from its start to the end
	// of the first resync, during the node join, during the burst
	resyncAlloc, joinAlloc, burstAlloc float64
	// CPU time of the agent and of the simulator (VPP): from the agent's start until VPP
	// held the first resync, per node join until VPP held it (the mean of the joins), and
	// during the burst until VPP held its end
	resyncCPU, joinCPU, burstCPU cpuSplit
}

// cpuSplit is the CPU time of the agent and of the simulator in a phase.
type cpuSplit struct{ agent, sim time.Duration }

// splitOf picks the agent's and the simulator's times out of cpuMeter.each's (the
// meter's first two processes).
func splitOf(times []time.Duration) cpuSplit { return cpuSplit{agent: times[0], sim: times[1]} }

// TestScale runs the whole-agent scale benchmark (see the package documentation).
func TestScale(t *testing.T) {
	if os.Getenv("CONTIV_SCALE") != "1" {
		t.Skip("the whole-agent scale benchmark runs with CONTIV_SCALE=1 (make bench-scale)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the scale benchmark runs the agent in a private mount namespace (its /var/run/contiv): root only")
	}
	s := setup{
		Nodes:     envInt(t, "CONTIV_SCALE_NODES", 50),
		Pods:      envInt(t, "CONTIV_SCALE_PODS", 110),
		Services:  envInt(t, "CONTIV_SCALE_SERVICES", 10000),
		Endpoints: envInt(t, "CONTIV_SCALE_ENDPOINTS", 10),
		NodePorts: envInt(t, "CONTIV_SCALE_NODEPORTS", 1000),
		Joins:     envInt(t, "CONTIV_SCALE_JOINS", 5),
	}
	changes := envInt(t, "CONTIV_SCALE_CHANGES", 1000)
	burst := envInt(t, "CONTIV_SCALE_BURST", 10000)
	rounds := max(1, envInt(t, "CONTIV_SCALE_ROUNDS", 1))
	switch {
	case s.Nodes < 2 || s.Nodes > 200:
		t.Fatalf("CONTIV_SCALE_NODES=%d: want 2..200", s.Nodes)
	case s.Pods > 198:
		t.Fatalf("CONTIV_SCALE_PODS=%d: want at most 198 (host parts 2..199 of the node's /24)", s.Pods)
	case s.Services < 1 || s.Services > 60000:
		t.Fatalf("CONTIV_SCALE_SERVICES=%d: want 1..60000", s.Services)
	case s.Endpoints < 1:
		t.Fatalf("CONTIV_SCALE_ENDPOINTS=%d: want at least 1", s.Endpoints)
	case s.NodePorts > s.Services || s.NodePorts > 2767:
		t.Fatalf("CONTIV_SCALE_NODEPORTS=%d: want at most the Services (%d) and 2767", s.NodePorts, s.Services)
	}
	burst = min(burst, s.Services) // one change per Service, so that the final state is known
	root, err := testkit.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	variants, err := variants(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(variants))
	for i, v := range variants {
		v.agent = filepath.Join(work, "contiv-agent-"+v.name)
		if v.config && i > 0 {
			v.agent = variants[0].agent // a configuration comparison runs one build
			continue
		}
		wg.Go(func() {
			start := time.Now()
			if v.ref == "" {
				errs[i] = buildAgent(root, v.tags, v.agent)
			} else {
				errs[i] = buildAtRef(root, v.ref, v.tags, v.agent)
			}
			t.Logf("built the %s agent (%s) in %v", v.name, v.label(), time.Since(start).Round(time.Second))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("setup: %s; %d single changes, burst of %d; %d round(s)", s, changes, burst, rounds)
	results := map[string][]result{}
	for r := 0; r < rounds; r++ {
		order := slices.Clone(variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			t.Run(fmt.Sprintf("%s-%d", v.name, r+1), func(t *testing.T) {
				vs := s
				// An agent of another ref from before the EndpointSlice work reads
				// Endpoints only: its cluster is written in that form
				// (CONTIV_SCALE_BEFORE_SLICES=1 for a ref that reads EndpointSlices).
				// This tree, with or without tags, always gets slices.
				vs.LegacyEndpoints = v.ref != "" && os.Getenv("CONTIV_SCALE_BEFORE_SLICES") != "1"
				vs.Dual = v.dual
				vs.Renderer = v.renderer
				res := runWorkload(t, root, v, vs, changes, burst)
				results[v.name] = append(results[v.name], res)
			})
		}
	}
	report(t, s, variants, results)
}

// buildAgent builds the agent of the module in dir with the build tags (none: "").
func buildAgent(dir, tags, out string) error {
	if tags == "" {
		return testkit.GoBuild("", dir, out, "./cmd/contiv-agent")
	}
	cmd := exec.Command("go", "build", "-tags", tags, "-o", out, "./cmd/contiv-agent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if data, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -tags %s ./cmd/contiv-agent in %s: %v\n%s", tags, dir, err, data)
	}
	return nil
}

// buildAtRef builds the agent of ref (with the build tags) in a temporary detached
// worktree.
func buildAtRef(root, ref, tags, out string) error {
	tmp, err := os.MkdirTemp("", "contiv-scale-ref-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "src")
	if data, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", wt, ref).CombinedOutput(); err != nil {
		return fmt.Errorf("git worktree add %s: %v\n%s", ref, err, data)
	}
	defer func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", wt).Run() }()
	return buildAgent(wt, tags, out)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// runWorkload starts etcd, the simulator and the agent v, and measures every phase.
func runWorkload(t *testing.T, root string, v *variant, s setup, changes, burst int) result {
	var res result
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// etcd keeps its data in memory (/dev/shm when there is one): what is measured is the
	// agent, not the disk under etcd; with fsync on a slow disk the burst's writes alone
	// took 10 s.
	etcdDir, simDir := filepath.Join(memDir(t), "etcd"), filepath.Join(dir, "sim")
	for _, d := range []string{etcdDir, simDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// etcd, the simulator (with the Linux side of its TAPs) and the agent share a network
	// namespace of their own; the harness dials into it.
	ns := newNetns(t)
	inNS := []string{"ip", "netns", "exec", ns}
	etcdProc, etcdEP := startProcess(t, dir, "etcd", []string{roleEnv + "=etcd", "CONTIV_SCALE_DIR=" + etcdDir}, true,
		append(inNS, self, "-test.run=^$")...)
	simProc, apiSocket := startProcess(t, dir, "vpp-sim", []string{roleEnv + "=vppsim", "CONTIV_SCALE_DIR=" + simDir, "CONTIV_SCALE_SIM_LINUX=1",
		simRendererEnv + "=" + s.Renderer}, true,
		append(inNS, self, "-test.run=^$")...)
	sim := newSimClient(filepath.Join(simDir, simCtlSocket))
	dial := nsrun.Dialer(nsrun.Path(ns))

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdEP}, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		})}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	start := time.Now()
	if err := s.writeCluster(ctx, cli); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster written into etcd in %v", time.Since(start).Round(time.Millisecond))

	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	conf := map[string]string{
		"etcd.conf":       "endpoints: [" + etcdEP + "]\n",
		"http.conf":       fmt.Sprintf("endpoint: 127.0.0.1:%d\nenable-pprof: true\n", port),
		"govpp.conf":      "binapi-socket-path: " + apiSocket + "\n",
		"bolt.conf":       "db-path: " + filepath.Join(dir, "bolt.db") + "\n",
		"podmanager.conf": "socketPath: " + filepath.Join(dir, "cni.sock") + "\nstateFile: " + filepath.Join(dir, "pods.json") + "\n",
		"logs.conf":       "default-level: " + cmp.Or(os.Getenv("CONTIV_SCALE_LOG_LEVEL"), "warning") + "\n",
	}
	if cc := os.Getenv("CONTIV_SCALE_CONTROLLER_CONF"); cc != "" && (v.name == "after" || v.config) {
		conf["controller.conf"] = strings.ReplaceAll(cc, ";", "\n") + "\n"
	}
	contivConf, err := s.contivConf(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
		`mkdir -p /var/run/contiv && mount -t tmpfs contiv-scale /var/run/contiv && exec "$0" "$@"`,
		v.agent, "-node-name", nodeName(1), "-contiv-config", contivConf}
	for name, content := range conf {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		argv = append(argv, "-"+strings.TrimSuffix(name, ".conf")+"-config", path)
	}
	if err := sim.reset(); err != nil {
		t.Fatal(err)
	}

	// --- first resync ---------------------------------------------------------------
	agentStart := time.Now()
	agent, _ := startProcess(t, dir, "contiv-agent", nil, false, argv...)
	cpu := newCPUMeter([]string{"agent", "simulator", "etcd", "harness"},
		[]int{agent.cmd.Process.Pid, simProc.cmd.Process.Pid, etcdProc.cmd.Process.Pid, os.Getpid()})
	cpu.begin()
	ac := &agentClient{base: fmt.Sprintf("http://127.0.0.1:%d", port), http: &http.Client{Timeout: 60 * time.Second,
		// Polled during the first resync: uncompressed, so the agent spends no CPU
		// on gzip for the harness (with compression the scrapes cost the agent 11% of
		// its CPU during the first resync).
		Transport: &http.Transport{DialContext: dial, DisableCompression: true}}}
	prof := newProfiler(t, ac, sim, v.name)
	prof.cpu("first-resync", 8*time.Second)
	prof.trace("first-resync", 6*time.Second)
	for {
		if err := agent.exited(); err != nil {
			t.Fatal(err)
		}
		// /readiness is cheap to answer, unlike /metrics (a scrape costs the agent ~1 ms
		// of CPU, 5% of a core at this rate during its busiest second); it turns ready
		// once the resync event is recorded, which the metric then confirms.
		ready, err := ac.ready()
		var n float64
		if err == nil && ready {
			n, err = ac.metric("contiv_controller_events_total", `event="Database Resync"`)
		}
		if err == nil && n > 0 {
			res.firstResync = time.Since(agentStart)
			break
		}
		if time.Since(agentStart) > 10*time.Minute {
			t.Fatalf("no first resync within 10 min: %v", err)
		}
		time.Sleep(25 * time.Millisecond) // real time: the resolution of the measured first resync
	}
	resyncTimes := cpu.each()
	res.resyncCPU = splitOf(resyncTimes)
	resyncCPU := cpu.describe(resyncTimes)
	pid := agent.cmd.Process.Pid
	sum, _ := ac.metric("contiv_controller_event_processing_duration_seconds_sum", `event="Database Resync"`)
	res.resyncEvent = time.Duration(sum * float64(time.Second))
	res.resyncAlloc = ac.gcState().allocated
	res.resyncMsgs, res.resyncTop, _ = sim.messages()
	// The Services of the last NodePort and the last Service must be programmed.
	if _, err := sim.wait(s.restExpect(), 2*time.Minute); err != nil {
		t.Fatalf("after the first resync: %v", err)
	}
	if s.Dual {
		if err := checkDualStack(ac); err != nil {
			t.Fatalf("after the first resync: %v", err)
		}
	}
	time.Sleep(2 * time.Second) // real time: the agent settles (follow-up events, GC) before its memory is read
	if res.rest, err = readMemory(pid); err != nil {
		t.Fatal(err)
	}
	res.heapRest, _ = ac.metric("go_memstats_heap_alloc_bytes")
	prof.wait()
	prof.heap("rest")
	prof.cpu("endpoints-changes", 5*time.Second)
	t.Logf("%s: first resync %v (event %v), %d VPP messages (%s); RSS %s, HWM %s, heap %s; %s until it was done",
		v.name, ms(res.firstResync), ms(res.resyncEvent), res.resyncMsgs, res.resyncTop,
		mb(res.rest.RSS), mb(res.rest.HWM), mb(int64(res.heapRest)), resyncCPU)

	// --- single Endpoints changes ---------------------------------------------------
	version := make([]int, s.Services)
	if err := sim.reset(); err != nil {
		t.Fatal(err)
	}
	var lat, latNP, latCluster, putDone, afterPut []time.Duration
	gcBefore := ac.gcState()
	cpu.begin()
	for c := 0; c < changes; c++ {
		i := (c * 7919) % s.Services
		version[i]++
		ip, _ := s.changedBackend(i, version[i])
		key, value, err := s.encodeChange(i, version[i]) // contiv-ksr's work, not timed
		if err != nil {
			t.Fatal(err)
		}
		done, err := sim.startWait([]mappingExpect{{Proto: 6, IP: serviceIP(i), Port: servicePort, Backend: ip}}, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := putEncoded(ctx, cli, key, value); err != nil {
			t.Fatal(err)
		}
		putDone = append(putDone, time.Since(t0))
		at, err := done()
		if err != nil {
			t.Fatalf("change %d (service %d): %v", c, i, err)
		}
		lat = append(lat, at.Sub(t0))
		afterPut = append(afterPut, at.Sub(t0)-putDone[len(putDone)-1])
		if i < s.NodePorts {
			latNP = append(latNP, at.Sub(t0))
		} else {
			latCluster = append(latCluster, at.Sub(t0))
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.changeP50, res.changeP99 = lat[len(lat)/2], lat[(len(lat)*99)/100]
		res.changeMsgs, _, _ = sim.messages()
		res.changes = len(lat)
		t.Logf("%s: %d Endpoints changes: p50 %v, p99 %v, max %v; %.1f VPP messages per change; %s; %s",
			v.name, len(lat), ms(res.changeP50), ms(res.changeP99), ms(lat[len(lat)-1]), float64(res.changeMsgs)/float64(len(lat)),
			ac.gcState().since(gcBefore, len(lat)), cpu.describe(cpu.each()))
		slices.Sort(putDone)
		t.Logf("%s:   etcd Put alone (the harness's write returning): p50 %v, p99 %v", v.name,
			ms(putDone[len(putDone)/2]), ms(putDone[(len(putDone)*99)/100]))
		// What follows the Put's return (the watch may deliver the change earlier):
		// the agent's and the simulator's part, roughly.
		slices.Sort(afterPut)
		t.Logf("%s:   from the Put's return to VPP programmed: p50 %v, p99 %v", v.name,
			ms(afterPut[len(afterPut)/2]), ms(afterPut[(len(afterPut)*99)/100]))
		// The changes of NodePort Services (a static mapping per node IP, 2 messages
		// each) and of the others (one mapping), apart: the tail is the former.
		for _, part := range []struct {
			what string
			lat  []time.Duration
		}{{"ClusterIP-only", latCluster}, {"NodePort", latNP}} {
			if len(part.lat) == 0 {
				continue
			}
			slices.Sort(part.lat)
			t.Logf("%s:   %d changes of %s Services: p50 %v, p99 %v, max %v", v.name, len(part.lat), part.what,
				ms(part.lat[len(part.lat)/2]), ms(part.lat[(len(part.lat)*99)/100]), ms(part.lat[len(part.lat)-1]))
		}
	}

	// --- node join and leave --------------------------------------------------------
	joining := s.Nodes + 1
	nodePortsOn := func(ip string, absent bool) []mappingExpect {
		var out []mappingExpect
		for i := 0; i < s.NodePorts; i++ {
			e := mappingExpect{Proto: 6, IP: ip, Port: uint16(nodePortBase + i), Absent: absent}
			if !absent {
				e.Backend = s.currentBackend(i, version[i])
			}
			out = append(out, e)
		}
		if absent && len(out) > 2 { // a lookup of an absent mapping scans them all
			out = []mappingExpect{out[0], out[len(out)-1]}
		}
		return out
	}
	var phaseSplit cpuSplit // of the last phase
	phase := func(what string, change func() error, expect []mappingExpect) (events int, eventTime, wall time.Duration, msgs int64, top string) {
		// Event counts and times from the controller's metrics (all events): the event
		// history would encode the events' transactions, hundreds of MB in older agents.
		count0, err := ac.metric("contiv_controller_event_processing_duration_seconds_count")
		if err != nil {
			t.Fatal(err)
		}
		sum0, _ := ac.metric("contiv_controller_event_processing_duration_seconds_sum")
		if err := sim.reset(); err != nil {
			t.Fatal(err)
		}
		prof.cpu(strings.ReplaceAll(what, " ", "-"), 4*time.Second)
		prof.trace(strings.ReplaceAll(what, " ", "-"), 3*time.Second)
		gc0 := ac.gcState()
		cpu.begin()
		t0 := time.Now()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		at, err := sim.wait(expect, 2*time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		wall = at.Sub(t0)
		phaseTimes := cpu.each() // until VPP has it (the settling below is idle but for the metrics' polls)
		phaseSplit = splitOf(phaseTimes)
		phaseCPU := cpu.describe(phaseTimes)
		// VPP can hold the change before its event ends (the transaction's record is
		// written after the commit): wait until the event count stays the same for 1 s
		// with nothing queued.
		prev := -1.0
		for settle := time.Now(); time.Since(settle) < 5*time.Minute; time.Sleep(time.Second) { // real time: the count must hold for 1 s
			n, err := ac.metric("contiv_controller_event_processing_duration_seconds_count")
			if err != nil {
				t.Fatal(err)
			}
			queued, _ := ac.metric("contiv_controller_event_queue_length")
			if n == prev && queued == 0 {
				break
			}
			prev = n
		}
		count1, err := ac.metric("contiv_controller_event_processing_duration_seconds_count")
		if err != nil {
			t.Fatal(err)
		}
		sum1, _ := ac.metric("contiv_controller_event_processing_duration_seconds_sum")
		events = int(count1 - count0)
		eventTime = time.Duration((sum1 - sum0) * float64(time.Second))
		msgs, top, _ = sim.messages()
		gc1 := ac.gcState()
		if what == "node join" {
			res.joinAlloc = gc1.allocated - gc0.allocated
		}
		gc := gc1.during(gc0)
		prof.wait()
		t.Logf("%s: %s: %d events, %v of event time, VPP has it %v after the write; %d VPP messages (%s); %s; %s",
			v.name, what, events, ms(eventTime), ms(wall), msgs, top, gc, phaseCPU)
		return
	}
	if s.NodePorts > 0 {
		// The node joins and leaves s.Joins times; the round reports the join and the
		// leave of median event time (a single one varies by a third on a loaded
		// machine).
		type nodeChange struct {
			events          int
			eventTime, wall time.Duration
			msgs            int64
			top             string
			alloc           float64
			cpu             cpuSplit
		}
		var joins, leaves []nodeChange
		for range max(1, s.Joins) {
			var j, l nodeChange
			j.events, j.eventTime, j.wall, j.msgs, j.top = phase("node join", func() error {
				if err := putObject(ctx, cli, s.k8sNode(joining)); err != nil {
					return err
				}
				return s.putVPPNode(ctx, cli, joining)
			}, nodePortsOn(nodeIP(joining), false))
			j.alloc, j.cpu = res.joinAlloc, phaseSplit
			l.events, l.eventTime, l.wall, l.msgs, _ = phase("node leave", func() error {
				if _, err := cli.Delete(ctx, vppNodeKey(joining)); err != nil {
					return err
				}
				return deleteObject(ctx, cli, s.k8sNode(joining))
			}, nodePortsOn(nodeIP(joining), true))
			joins, leaves = append(joins, j), append(leaves, l)
		}
		for _, j := range joins {
			res.joinCPU.agent += j.cpu.agent / time.Duration(len(joins))
			res.joinCPU.sim += j.cpu.sim / time.Duration(len(joins))
		}
		byEventTime := func(a, b nodeChange) int { return cmp.Compare(a.eventTime, b.eventTime) }
		slices.SortFunc(joins, byEventTime)
		slices.SortFunc(leaves, byEventTime)
		j, l := joins[len(joins)/2], leaves[len(leaves)/2]
		res.joinEvents, res.joinEventTime, res.joinWall, res.joinMsgs, res.joinT, res.joinAlloc = j.events, j.eventTime, j.wall, j.msgs, j.top, j.alloc
		res.leaveEvents, res.leaveEventTime, res.leaveWall, res.leaveMsgs = l.events, l.eventTime, l.wall, l.msgs
	}

	// --- the burst ------------------------------------------------------------------
	resyncsBefore, _ := ac.metric("contiv_controller_events_total", `Resync`)
	if err := sim.reset(); err != nil {
		t.Fatal(err)
	}
	if err := resetPeak(pid); err != nil {
		t.Logf("reset VmHWM: %v (the burst's peak is the lifetime peak)", err)
	}
	// The values are encoded before the clock starts, as for the single changes: what
	// is timed is etcd and the agent, not the harness converting objects.
	var expect []mappingExpect
	keys, values := make([]string, burst), make([]string, burst)
	for i := 0; i < burst; i++ {
		version[i]++
		ip, _ := s.changedBackend(i, version[i])
		expect = append(expect, mappingExpect{Proto: 6, IP: serviceIP(i), Port: servicePort, Backend: ip})
		if keys[i], values[i], err = s.encodeChange(i, version[i]); err != nil {
			t.Fatal(err)
		}
	}
	prof.wait()
	prof.cpu("burst", 6*time.Second)
	gcBefore = ac.gcState()
	// The events of Kubernetes changes, one change each or batches ("Kubernetes State
	// Changes"): how many the burst took and their mean processing time.
	const changeEvents = `event="Kubernetes State Change`
	evCount0, _ := ac.metric("contiv_controller_event_processing_duration_seconds_count", changeEvents)
	evSum0, _ := ac.metric("contiv_controller_event_processing_duration_seconds_sum", changeEvents)
	batched0, _ := ac.metric("contiv_controller_batch_changes_sum")
	cpu.begin()
	t0 := time.Now()
	var werr error
	var mu sync.Mutex
	var bw sync.WaitGroup
	const writers = 8
	for w := 0; w < writers; w++ {
		bw.Go(func() {
			for i := w; i < burst; i += writers {
				if err := putEncoded(ctx, cli, keys[i], values[i]); err != nil {
					mu.Lock()
					werr = err
					mu.Unlock()
					return
				}
			}
		})
	}
	bw.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	written := time.Since(t0)
	at, err := sim.wait(expect, 10*time.Minute)
	if err != nil {
		t.Fatalf("burst: %v", err)
	}
	res.burst = at.Sub(t0)
	burstTimes := cpu.each()
	res.burstCPU = splitOf(burstTimes)
	burstCPU := cpu.describe(burstTimes)
	if res.burstPeak, err = readMemory(pid); err != nil {
		t.Fatal(err)
	}
	resyncsAfter, _ := ac.metric("contiv_controller_events_total", `Resync`)
	res.burstResyncs = resyncsAfter - resyncsBefore
	res.burstMsgs, res.burstTop, _ = sim.messages()
	gcAfter := ac.gcState()
	res.burstAlloc = gcAfter.allocated - gcBefore.allocated
	burstGC := gcAfter.since(gcBefore, burst)
	evCount1, _ := ac.metric("contiv_controller_event_processing_duration_seconds_count", changeEvents)
	evSum1, _ := ac.metric("contiv_controller_event_processing_duration_seconds_sum", changeEvents)
	batched1, _ := ac.metric("contiv_controller_batch_changes_sum")
	burstEvents := "no change event"
	if n := evCount1 - evCount0; n > 0 {
		burstEvents = fmt.Sprintf("%.0f change events (%s each on average", n, ms(time.Duration((evSum1-evSum0)/n*float64(time.Second))))
		if changes := batched1 - batched0; changes > 0 { // agents with batches count their changes
			burstEvents += fmt.Sprintf(", %.1f changes each", changes/n)
		}
		burstEvents += ")"
	}
	res.heapAfterBurst, _ = ac.metric("go_memstats_heap_alloc_bytes")
	prof.wait()
	prof.heap("after-burst")
	t.Logf("%s: burst of %d Endpoints changes (written in %v): VPP holds the final state %v after the first write; "+
		"%s; %v resync events; %d VPP messages (%s); peak RSS %s during the burst, heap after %s; %s; %s",
		v.name, burst, ms(written), ms(res.burst), burstEvents, res.burstResyncs, res.burstMsgs, res.burstTop,
		mb(res.burstPeak.HWM), mb(int64(res.heapAfterBurst)), burstGC, burstCPU)
	if err := agent.exited(); err != nil {
		t.Fatal(err)
	}
	agent.stop()
	if dst := os.Getenv("CONTIV_SCALE_PROFILE"); dst != "" {
		if data, err := os.ReadFile(agent.log); err == nil {
			_ = os.WriteFile(filepath.Join(dst, v.name+"-agent.log"), data, 0o644)
		}
	}
	return res
}

func vppNodeKey(k int) string { return ksrkey.KsrPrefix + vppnode.Key(uint32(k)) }

// currentBackend is an address Service i's Endpoints hold at version v.
func (s setup) currentBackend(i, v int) string {
	if v > 0 {
		ip, _ := s.changedBackend(i, v)
		return ip
	}
	return s.firstBackend(i)
}

// restExpect is what the simulator holds after the first resync: the first and last
// Service's ClusterIP and, if any, the last NodePort on the agent's own node IP.
func (s setup) restExpect() []mappingExpect {
	out := []mappingExpect{
		{Proto: 6, IP: serviceIP(0), Port: servicePort, Backend: s.currentBackend(0, 0)},
		{Proto: 6, IP: serviceIP(s.Services - 1), Port: servicePort, Backend: s.currentBackend(s.Services-1, 0)},
	}
	if s.NodePorts > 0 {
		out = append(out, mappingExpect{Proto: 6, IP: nodeIP(2), Port: uint16(nodePortBase + s.NodePorts - 1),
			Backend: s.currentBackend(s.NodePorts-1, 0)})
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

// report logs the before/after table (the results of every round); in a comparison
// of two configurations (CONTIV_SCALE_FAMILY=dual, CONTIV_SCALE_RENDERER=both) a last
// column gives the ratio of the second to the first (dual / ipv4, cnat / nat44) of the
// medians.
func report(t *testing.T, s setup, variants []*variant, results map[string][]result) {
	type row struct {
		name string
		f    func(r result) string
		v    func(r result) float64 // the value the ratio compares (nil: none)
	}
	msOf := func(f func(r result) time.Duration) (func(r result) string, func(r result) float64) {
		return func(r result) string { return ms(f(r)) }, func(r result) float64 { return float64(f(r)) }
	}
	mbOf := func(f func(r result) int64) (func(r result) string, func(r result) float64) {
		return func(r result) string { return mb(f(r)) }, func(r result) float64 { return float64(f(r)) }
	}
	timed := func(name string, f func(r result) time.Duration) row {
		text, v := msOf(f)
		return row{name, text, v}
	}
	sized := func(name string, f func(r result) int64) row {
		text, v := mbOf(f)
		return row{name, text, v}
	}
	count := func(name string, f func(r result) int64) row {
		return row{name, func(r result) string { return strconv.FormatInt(f(r), 10) }, func(r result) float64 { return float64(f(r)) }}
	}
	rows := []row{
		timed("first resync (start to done)", func(r result) time.Duration { return r.firstResync }),
		timed("  its event", func(r result) time.Duration { return r.resyncEvent }),
		count("  VPP messages", func(r result) int64 { return r.resyncMsgs }),
		sized("  allocated from start", func(r result) int64 { return int64(r.resyncAlloc) }),
		timed("  agent CPU", func(r result) time.Duration { return r.resyncCPU.agent }),
		timed("  simulator CPU", func(r result) time.Duration { return r.resyncCPU.sim }),
		sized("RSS at rest", func(r result) int64 { return r.rest.RSS }),
		sized("Go heap at rest", func(r result) int64 { return int64(r.heapRest) }),
		timed("Endpoints change p50", func(r result) time.Duration { return r.changeP50 }),
		timed("Endpoints change p99", func(r result) time.Duration { return r.changeP99 }),
		{"  VPP messages per change", func(r result) string { return fmt.Sprintf("%.1f", perChange(r)) }, perChange},
		{"node join event time", func(r result) string { return fmt.Sprintf("%s (%d events)", ms(r.joinEventTime), r.joinEvents) },
			func(r result) float64 { return float64(r.joinEventTime) }},
		count("node join VPP messages", func(r result) int64 { return r.joinMsgs }),
		timed("  agent CPU (mean of joins)", func(r result) time.Duration { return r.joinCPU.agent }),
		timed("  simulator CPU", func(r result) time.Duration { return r.joinCPU.sim }),
		{"node join wall, allocated", func(r result) string { return ms(r.joinWall) + ", " + mb(int64(r.joinAlloc)) },
			func(r result) float64 { return float64(r.joinWall) }},
		{"node leave event time", func(r result) string { return fmt.Sprintf("%s (%d events)", ms(r.leaveEventTime), r.leaveEvents) },
			func(r result) float64 { return float64(r.leaveEventTime) }},
		count("node leave VPP messages", func(r result) int64 { return r.leaveMsgs }),
		timed("burst until VPP final", func(r result) time.Duration { return r.burst }),
		{"burst resync events", func(r result) string { return fmt.Sprint(r.burstResyncs) }, nil},
		count("burst VPP messages", func(r result) int64 { return r.burstMsgs }),
		timed("  agent CPU", func(r result) time.Duration { return r.burstCPU.agent }),
		timed("  simulator CPU", func(r result) time.Duration { return r.burstCPU.sim }),
		sized("burst allocated", func(r result) int64 { return int64(r.burstAlloc) }),
		sized("peak RSS during burst", func(r result) int64 { return r.burstPeak.HWM }),
	}
	ratio := len(variants) == 2 && variants[0].config && variants[1].config
	var b strings.Builder
	fmt.Fprintf(&b, "\nsetup: %s\n%-32s", s, "")
	for _, v := range variants {
		fmt.Fprintf(&b, " | %-28s", v.name+" ("+v.label()+")")
	}
	if ratio {
		fmt.Fprintf(&b, " | %s / %s: of the medians, median of the rounds'", variants[1].name, variants[0].name)
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-32s", r.name)
		for _, v := range variants {
			var cells []string
			for _, res := range results[v.name] {
				cells = append(cells, r.f(res))
			}
			fmt.Fprintf(&b, " | %-28s", strings.Join(cells, " / "))
		}
		if ratio && r.v != nil {
			first, second := median(results[variants[0].name], r.v), median(results[variants[1].name], r.v)
			if first > 0 {
				fmt.Fprintf(&b, " | %.2fx, %.2fx", second/first, pairedRatio(results[variants[0].name], results[variants[1].name], r.v))
			}
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

// pairedRatio is the median over the rounds of the ratio of the second variant's value
// to the first's in the same round (0 when there is none). The variants of a round run
// one after the other, so that a machine that drifts (a neighbour's load, its memory)
// moves both values of a ratio together; the ratio of the medians mixes rounds.
func pairedRatio(first, second []result, v func(r result) float64) float64 {
	var ratios []float64
	for i := range min(len(first), len(second)) {
		if a := v(first[i]); a > 0 {
			ratios = append(ratios, v(second[i])/a)
		}
	}
	return medianOf(ratios)
}

// perChange is the VPP messages per single Endpoints change of a run (0 without one).
func perChange(r result) float64 {
	if r.changes == 0 {
		return 0
	}
	return float64(r.changeMsgs) / float64(r.changes)
}

// median is the median of the values of the results (the mean of the middle two
// for an even count; 0 for none).
func median(rs []result, v func(r result) float64) float64 {
	vals := make([]float64, len(rs))
	for i, r := range rs {
		vals[i] = v(r)
	}
	return medianOf(vals)
}

// medianOf is the median of vals (the mean of the middle two for an even count; 0 for
// none); it sorts vals.
func medianOf(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	slices.Sort(vals)
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}

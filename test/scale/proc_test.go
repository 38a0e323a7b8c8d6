package scale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// process is a child process with its output in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProcess starts argv with its stdout and stderr in dir/<name>.log. If ready is
// set, stdout goes through a pipe instead and startProcess waits (up to 60 s) for a
// line starting with readyPrefix, whose rest it returns.
func startProcess(tb testing.TB, dir, name string, env []string, ready bool, argv ...string) (*process, string) {
	tb.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = f
	var stdout io.ReadCloser
	if ready {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			tb.Fatal(err)
		}
	} else {
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	lines := make(chan string, 1)
	if ready {
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
					lines <- rest
				}
				_, _ = fmt.Fprintln(f, sc.Text())
			}
		}()
	}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	tb.Cleanup(func() { p.stop() })
	if !ready {
		return p, ""
	}
	select {
	case rest := <-lines:
		return p, rest
	case <-p.done:
		tb.Fatalf("%s %v (%v); log %s:\n%s", name, errRoleExited, p.err, logPath, tail(logPath, 30))
	case <-time.After(60 * time.Second):
		tb.Fatalf("%s not ready within 60s; log %s:\n%s", name, logPath, tail(logPath, 30))
	}
	return nil, ""
}

// stop sends SIGTERM and, after 15 s, SIGKILL.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v; log %s:\n%s", p.name, p.err, p.log, tail(p.log, 30))
	default:
		return nil
	}
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// memory is a process's memory from /proc/<pid>/status, in bytes.
type memory struct{ RSS, HWM int64 }

func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, ln := range strings.Split(string(data), "\n") {
		f := strings.Fields(ln)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = v * 1024
		case "VmHWM:":
			m.HWM = v * 1024
		}
	}
	return m, nil
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux's
// mainstream architectures).
const userHZ = 100

// cpuTime returns the CPU time (user + system) process pid has used so far.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may hold spaces:
	// state is the first of them, utime the 12th and stime the 13th.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// cpuMeter measures the CPU time each process of the run uses during a phase: on the
// 2 cores they share, it says whose work a phase's wall time was.
type cpuMeter struct {
	names []string
	pids  []int
	start []time.Duration
}

func newCPUMeter(names []string, pids []int) *cpuMeter {
	return &cpuMeter{names: names, pids: pids, start: make([]time.Duration, len(pids))}
}

// begin starts a phase.
func (m *cpuMeter) begin() {
	for i, pid := range m.pids {
		m.start[i], _ = cpuTime(pid)
	}
}

// each returns the CPU time of each process since begin, in the order of the meter's
// processes (-1 where it could not be read).
func (m *cpuMeter) each() []time.Duration {
	out := make([]time.Duration, len(m.pids))
	for i, pid := range m.pids {
		now, err := cpuTime(pid)
		if err != nil {
			out[i] = -1
			continue
		}
		out[i] = now - m.start[i]
	}
	return out
}

// describe formats CPU times measured by each.
func (m *cpuMeter) describe(times []time.Duration) string {
	parts := make([]string, len(times))
	for i, d := range times {
		if d < 0 {
			parts[i] = m.names[i] + " ?"
			continue
		}
		parts[i] = fmt.Sprintf("%s %.2f s", m.names[i], d.Seconds())
	}
	return "CPU: " + strings.Join(parts, ", ")
}

// resetPeak makes VmHWM start again from the current RSS.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// simClient talks to the simulator role's control socket.
type simClient struct{ http *http.Client }

func newSimClient(socket string) *simClient {
	return &simClient{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}}
}

func (c *simClient) call(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, "http://sim"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("simulator %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("simulator %s %s: %s: %s", method, path, resp.Status, data)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// get returns the body of a GET of the control server (a profile).
func (c *simClient) get(path string) ([]byte, error) {
	resp, err := c.http.Get("http://sim" + path)
	if err != nil {
		return nil, fmt.Errorf("simulator GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("simulator GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("simulator GET %s: %s: %s", path, resp.Status, data)
	}
	return data, nil
}

func (c *simClient) reset() error { return c.call(http.MethodPost, "/reset", nil, &struct{}{}) }

// messages returns the total of the message counters and the three most frequent.
func (c *simClient) messages() (int64, string, error) {
	var counts map[string]int64
	if err := c.call(http.MethodGet, "/counts", nil, &counts); err != nil {
		return 0, "", err
	}
	var total int64
	type nc struct {
		n string
		c int64
	}
	var top []nc
	for n, v := range counts {
		if v == 0 {
			continue
		}
		total += v
		top = append(top, nc{n, v})
	}
	for i := range top { // tiny: selection of the three largest
		for j := i + 1; j < len(top); j++ {
			if top[j].c > top[i].c {
				top[i], top[j] = top[j], top[i]
			}
		}
	}
	var parts []string
	for i := 0; i < len(top) && i < 3; i++ {
		parts = append(parts, fmt.Sprintf("%s %d", top[i].n, top[i].c))
	}
	return total, strings.Join(parts, ", "), nil
}

// wait asks the simulator to wait until every expectation holds; it returns the
// simulator's time of that moment.
func (c *simClient) wait(expect []mappingExpect, timeout time.Duration) (time.Time, error) {
	done, err := c.startWait(expect, timeout)
	if err != nil {
		return time.Time{}, err
	}
	return done()
}

// startWait puts a wait in place in the simulator and returns once it is (the
// simulator answers with the headers at once); done returns the simulator's time of
// the moment every expectation held.
func (c *simClient) startWait(expect []mappingExpect, timeout time.Duration) (done func() (time.Time, error), err error) {
	data, err := json.Marshal(waitRequest{Expect: expect, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Post("http://sim/wait", "application/json", bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("simulator POST /wait: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("simulator POST /wait: %s: %s", resp.Status, data)
	}
	return func() (time.Time, error) {
		defer resp.Body.Close()
		var r waitReply
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return time.Time{}, fmt.Errorf("simulator POST /wait: %w", err)
		}
		if r.Error != "" {
			return time.Time{}, errors.New(r.Error)
		}
		return time.Unix(0, r.DoneUnixNano), nil
	}, nil
}

// agentClient reads the agent's REST API.
type agentClient struct {
	base string
	http *http.Client
}

// ready is true when the agent's /readiness answers 200; an agent that does not
// answer yet is not ready (no error).
func (c *agentClient) ready() (bool, error) {
	resp, err := c.http.Get(c.base + "/readiness")
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return false, fmt.Errorf("GET /readiness: %w", err)
	}
	return resp.StatusCode == http.StatusOK, nil
}

func (c *agentClient) get(path string) ([]byte, error) {
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, data)
	}
	return data, nil
}

// metric returns the sum of the samples of a metric whose labels contain every
// given fragment (`event="Database Resync"`), from /metrics.
func (c *agentClient) metric(name string, fragments ...string) (float64, error) {
	data, err := c.get("/metrics")
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, ln := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(ln, name) || (len(ln) > len(name) && ln[len(name)] != '{' && ln[len(name)] != ' ') {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(ln, f)
		}
		if !ok {
			continue
		}
		f := strings.Fields(ln)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, nil
}

// gcState is what the agent's Go runtime reports of its allocations and collections.
type gcState struct {
	allocated, cycles, pauses float64 // bytes allocated, GC cycles, seconds of stop-the-world pauses
}

// gcState reads the agent's allocation and GC counters (zero when they cannot be read:
// they only explain the figures, they are not figures of the benchmark).
func (c *agentClient) gcState() gcState {
	var g gcState
	g.allocated, _ = c.metric("go_memstats_alloc_bytes_total")
	g.cycles, _ = c.metric("go_gc_duration_seconds_count")
	g.pauses, _ = c.metric("go_gc_duration_seconds_sum")
	return g
}

// since describes the allocations and collections from before to g, per one of n
// operations.
// during describes the allocations and collections of a phase that is not a number of
// changes (a node join).
func (g gcState) during(before gcState) string {
	return fmt.Sprintf("agent allocated %.1f MB, %.0f GC cycles (%.2f ms of pauses)",
		(g.allocated-before.allocated)/1e6, g.cycles-before.cycles, (g.pauses-before.pauses)*1e3)
}

func (g gcState) since(before gcState, n int) string {
	return fmt.Sprintf("agent allocated %.1f kB per change, %.0f GC cycles (%.2f ms of pauses)",
		(g.allocated-before.allocated)/1e3/float64(max(n, 1)), g.cycles-before.cycles, (g.pauses-before.pauses)*1e3)
}

var netnsSeq atomic.Int64

// newNetns creates a network namespace of this run (loopback up), deleted when tb
// ends, and returns its name.
func newNetns(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("ctvscale-%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		tb.Fatalf("ip -n %s link set lo up: %v: %s", name, err, out)
	}
	return name
}

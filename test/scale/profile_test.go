package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// profiler fetches the agent's Go profiles (its admin REST serves /debug/pprof/ on
// loopback) into CONTIV_SCALE_PROFILE/<variant>-<phase>.{cpu,heap}.pprof when that
// variable names a directory; without it every method does nothing.
type profiler struct {
	t       *testing.T
	ac      *agentClient
	sim     *simClient
	dir     string
	variant string
	running sync.WaitGroup
}

func newProfiler(t *testing.T, ac *agentClient, sim *simClient, variant string) *profiler {
	p := &profiler{t: t, ac: ac, sim: sim, dir: os.Getenv("CONTIV_SCALE_PROFILE"), variant: variant}
	if p.dir != "" {
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			t.Fatalf("CONTIV_SCALE_PROFILE: %v", err)
		}
	}
	return p
}

// cpu starts a CPU profile of the agent and one of the simulator, of the given length,
// in the background, after the previous ones have ended (the runtime takes one at a
// time).
func (p *profiler) cpu(phase string, length time.Duration) {
	if p.dir == "" {
		return
	}
	p.wait()
	path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(length.Seconds()))
	p.running.Go(func() {
		data, err := p.sim.get(path)
		if err != nil {
			p.t.Logf("simulator CPU profile %s: %v", phase, err)
			return
		}
		p.save(phase+".sim-cpu", data)
	})
	p.fromAgent(phase+".cpu", path, length)
}

// trace starts an execution trace of the agent of the given length in the background
// (with CONTIV_SCALE_TRACE=1 only: traces are large); it runs beside a CPU profile.
func (p *profiler) trace(phase string, length time.Duration) {
	if p.dir == "" || os.Getenv("CONTIV_SCALE_TRACE") != "1" {
		return
	}
	p.fromAgent(phase+".trace", fmt.Sprintf("/debug/pprof/trace?seconds=%d", int(length.Seconds())), length)
}

// fromAgent saves what the agent answers to path, in the background. It retries until
// the agent's REST answers (the first resync starts before it does), for at most
// length.
func (p *profiler) fromAgent(name, path string, length time.Duration) {
	p.running.Go(func() {
		deadline := time.Now().Add(length)
		for {
			data, err := p.ac.get(path)
			if err == nil {
				p.save(name, data)
				return
			}
			if time.Now().After(deadline) {
				p.t.Logf("%s: %v", name, err)
				return
			}
			time.Sleep(20 * time.Millisecond) // real time: the profile starts within 20 ms of the agent's REST answering
		}
	})
}

// heap saves a heap profile now (after a GC, so it shows what is live).
func (p *profiler) heap(phase string) {
	if p.dir == "" {
		return
	}
	data, err := p.ac.get("/debug/pprof/heap?gc=1")
	if err != nil {
		p.t.Logf("heap profile %s: %v", phase, err)
		return
	}
	p.save(phase+".heap", data)
}

// wait waits for the profiles and traces in progress.
func (p *profiler) wait() { p.running.Wait() }

// save writes data to <variant>-<name>.pprof, or, when a phase repeats in a round
// (the node joins), to <variant>-<name>.<n>.pprof for the n-th time (go tool pprof
// merges several profiles given together).
func (p *profiler) save(name string, data []byte) {
	path := filepath.Join(p.dir, p.variant+"-"+name+".pprof")
	for n := 2; ; n++ {
		if _, err := os.Stat(path); err != nil {
			break
		}
		path = filepath.Join(p.dir, fmt.Sprintf("%s-%s.%d.pprof", p.variant, name, n))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		p.t.Logf("profile %s: %v", name, err)
		return
	}
	p.t.Logf("profile saved: %s", path)
}

// memDir is a directory for etcd's data: under /dev/shm (memory) when it exists, the
// test's temporary directory otherwise. It is removed when the test ends.
func memDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "contiv-scale-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

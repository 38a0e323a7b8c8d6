package readme

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// tourTools are the commands the tour uses besides the binaries it builds.
var tourTools = []string{"ip", "curl", "jq", "bash", "timeout", "go"}

// tour is the agent of the tour, in a network namespace of its own (its REST API on
// 127.0.0.1:9999 there, as make run's), and what the README's commands are rewritten
// with so that they reach it and not anything of the host.
type tour struct {
	t       *testing.T
	netns   string // the agent's namespace
	work    string // the commands' working directory: bin/, .run/standalone/, cni/
	rewrite *strings.Replacer
	env     []string
	agent   *exec.Cmd
	log     *syncWriter // the agent's stdout and stderr
	exited  chan error
}

// TestTourPrintsWhatTheREADMEShows runs the commands of README.md's 5-minute tour, in
// order, against the standalone agent started as `make run` starts it (as root, so with
// the demo pods), and compares each output with the README's, the varying parts masked.
// So that nothing of the host is touched, the agent runs in a network namespace of its
// own, and the names the commands use are rewritten: the demo pods' namespaces (ctv-),
// the CNI example's (demo1) and /tmp/cni; `make <binary>` is left out (the test built
// the binaries). Then it stops the agent with SIGINT and checks that vpp1 and the demo
// pods are gone.
func TestTourPrintsWhatTheREADMEShows(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("readme: the tour's outputs are those of make run as root (network namespaces, TAPs); run as root")
	}
	for _, tool := range tourTools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("readme: the tour needs %s, not installed", tool)
		}
	}
	steps := parseSteps(section(t, readREADME(t), "## 5-minute tour"))
	tr := startTour(t)
	cnitool := findCnitool()

	var preamble []string // shell functions and exports of the blocks run so far
	for _, s := range steps {
		name := fmt.Sprintf("line%d", s.line)
		if strings.Contains(s.heading, "through CNI") && cnitool == "" {
			t.Logf("README line %d (%s): skipped: cnitool is not installed (make tools)", s.line, s.heading)
			continue
		}
		commands := tr.commands(s.commands)
		script := strings.Join(append(append([]string{}, preamble...), commands), "\n")
		preamble = append(preamble, definitions(commands)...)
		attempts := 1
		if s.directive == directiveRetry {
			attempts = 8
		}
		var out, errOut string
		for i := 0; i < attempts; i++ {
			out, errOut = tr.run(script)
			if !s.haveOutput || matches(s.directive, tr.rewrite.Replace(s.output), out) {
				break
			}
		}
		if !s.haveOutput {
			continue
		}
		if !matches(s.directive, tr.rewrite.Replace(s.output), out) {
			t.Errorf("README line %d: the output differs from the README's (masked; %s)\ncommands:\n%s\nREADME:\n%s\ngot:\n%s\nstderr:\n%s",
				s.line, name, commands, mask(tr.rewrite.Replace(s.output)), mask(out), errOut)
		}
	}
	tr.stop()
}

// findCnitool returns cnitool's path in PATH or GOPATH/bin (where make tools puts it).
func findCnitool() string {
	if p, err := exec.LookPath("cnitool"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "bin", "cnitool")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

var definitionRe = regexp.MustCompile(`^([a-z_]+\(\) \{.*\}|export [A-Z_]+=.*)$`)

// definitions returns the lines of commands that later blocks rely on: shell functions
// defined on one line and exports.
func definitions(commands string) []string {
	var out []string
	for _, l := range strings.Split(commands, "\n") {
		if definitionRe.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// startTour builds the binaries, starts the agent as make run does and waits for the
// demo pods.
func startTour(t *testing.T) *tour {
	t.Helper()
	root := repoRoot(t)
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	for _, b := range []string{"contiv-agent", "contiv-netctl", "contiv-cni"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, b), "./cmd/"+b)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", b, err, out)
		}
	}
	tag := fmt.Sprintf("ctvrd%d", os.Getpid())
	tr := &tour{t: t, netns: tag, work: work, log: &syncWriter{}, exited: make(chan error, 1)}
	tr.rewrite = strings.NewReplacer("ctv-", tag+"-", "demo1", tag+"-demo1", "/tmp/cni", filepath.Join(work, "cni"))
	tr.env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":"+filepath.Dir(findCnitoolOrEmpty()))
	if out, err := exec.Command("ip", "netns", "add", tag).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", tag, err, out)
	}
	t.Cleanup(func() {
		// Whatever a failed run left: the demo pods' and the CNI example's namespaces.
		out, _ := exec.Command("ip", "netns", "list").Output()
		for _, l := range strings.Split(string(out), "\n") {
			if name, _, _ := strings.Cut(l, " "); strings.HasPrefix(name, tag+"-") {
				_ = exec.Command("ip", "netns", "delete", name).Run()
			}
		}
		if out, err := exec.Command("ip", "netns", "delete", tag).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", tag, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", tag, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s link set lo up: %v: %s", tag, err, out)
	}

	// The flags of make run (Makefile), paths made absolute.
	agent := exec.Command(filepath.Join(bin, "contiv-agent"), "-standalone",
		"-standalone-dir="+filepath.Join(work, ".run", "standalone"), "-node-name=k8s-master",
		"-cluster="+filepath.Join(root, "k8s", "examples", "demo-cluster.yaml"),
		"-contiv-config="+filepath.Join(root, "k8s", "examples", "contiv.conf"),
		"-http-config="+filepath.Join(root, "k8s", "examples", "http.conf"),
		"-standalone-demo-pods", "-standalone-demo-netns-prefix="+tag+"-")
	agent.Dir = work
	agent.Stdout, agent.Stderr = tr.log, tr.log
	// Started from a thread in the namespace: the agent keeps the host's mount namespace,
	// so the demo pods' namespaces are visible to the commands.
	if err := nsrun.Run(nsrun.Path(tag), agent.Start); err != nil {
		t.Fatalf("start contiv-agent: %v", err)
	}
	tr.agent = agent
	go func() { tr.exited <- agent.Wait() }()
	t.Cleanup(func() {
		if agent.ProcessState == nil {
			_ = agent.Process.Kill()
			<-tr.exited
		}
		if t.Failed() {
			t.Logf("agent log (last 60 lines):\n%s", lastLines(tr.logText(), 60))
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(tr.logText(), "demo pod running") < 3 {
		select {
		case err := <-tr.exited:
			t.Fatalf("the agent exited before its demo pods ran: %v\n%s", err, lastLines(tr.logText(), 40))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no three \"demo pod running\" lines in the agent's log after 60 s:\n%s", lastLines(tr.logText(), 40))
		}
	}
	return tr
}

// findCnitoolOrEmpty is findCnitool, "." when there is none (PATH gets a harmless entry).
func findCnitoolOrEmpty() string {
	if p := findCnitool(); p != "" {
		return p
	}
	return "./none"
}

// commands rewrites a README block for the test: its names, and no make.
func (tr *tour) commands(block string) string {
	var out []string
	for _, l := range strings.Split(tr.rewrite.Replace(block), "\n") {
		if strings.HasPrefix(l, "make ") {
			l = ": " + l // the binaries are built
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// run runs a script with bash in the agent's namespace and returns its stdout and
// stderr.
func (tr *tour) run(script string) (string, string) {
	tr.t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = tr.work, tr.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := nsrun.Run(nsrun.Path(tr.netns), cmd.Start)
	if err == nil {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			err = fmt.Errorf("killed after 30 s: %v", <-done)
		}
	}
	if err != nil {
		fmt.Fprintf(&errOut, "(bash: %v)\n", err)
	}
	return out.String(), errOut.String()
}

// stop sends SIGINT (Ctrl-C) to the agent and checks what the README promises then.
func (tr *tour) stop() {
	t := tr.t
	t.Helper()
	if err := tr.agent.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-tr.exited:
		if err != nil {
			t.Errorf("the agent exited with %v after SIGINT, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop within 30 s of SIGINT")
	}
	out, _ := exec.Command("ip", "-n", tr.netns, "link", "show", "vpp1").CombinedOutput()
	if !strings.Contains(string(out), `Device "vpp1" does not exist.`) {
		t.Errorf("after Ctrl-C, ip link show vpp1 prints %q, want Device \"vpp1\" does not exist.", out)
	}
	list, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(list), tr.netns+"-") {
		t.Errorf("after Ctrl-C, demo pods' namespaces remain:\n%s", list)
	}
}

func (tr *tour) logText() string {
	tr.log.mu.Lock()
	defer tr.log.mu.Unlock()
	return tr.log.b.String()
}

// syncWriter is a buffer that a process's stdout and stderr write concurrently.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// lastLines returns the last n lines of s, each cut at 300 bytes.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + " ..."
		}
	}
	return strings.Join(lines, "\n")
}

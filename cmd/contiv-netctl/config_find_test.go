package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// demoTree makes <root>/.run/standalone/netctl.conf and returns root.
func demoTree(t *testing.T, conf string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, filepath.Dir(DefaultConfigPath))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, DefaultConfigPath), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestTheDemoConfigIsFoundFromASubdirectoryOrBesideTheBinary(t *testing.T) {
	root := demoTree(t, "agents: {}\n")
	want := filepath.Join(root, DefaultConfigPath)
	sub := filepath.Join(root, "cmd", "contiv-netctl")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _ := findDefaultConfig(sub, ""); got != want {
		t.Errorf("from %s: found %q, want %q", sub, got, want)
	}
	elsewhere := t.TempDir()
	if got, _ := findDefaultConfig(elsewhere, filepath.Join(root, "bin")); got != want {
		t.Errorf("from %s with the binary in %s/bin: found %q, want %q", elsewhere, root, got, want)
	}
	other := t.TempDir()
	got, tried := findDefaultConfig(elsewhere, filepath.Join(other, "bin"))
	if got != "" {
		t.Errorf("found %q where there is none", got)
	}
	var want2 []string
	for d := elsewhere; ; d = filepath.Dir(d) {
		want2 = append(want2, filepath.Join(d, DefaultConfigPath))
		if d == filepath.Dir(d) {
			break
		}
	}
	want2 = append(want2, filepath.Join(other, DefaultConfigPath))
	if strings.Join(tried, " ") != strings.Join(want2, " ") {
		t.Errorf("tried %v, want the working directory, each parent, then beside the binary: %v", tried, want2)
	}
}

func TestNoConfigFoundSaysWhereNetctlLookedAndWhatToDo(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, errOut, code := netctl(t, "nodes")
	if code == 0 {
		t.Fatal("nodes succeeded without any configuration")
	}
	for _, want := range []string{"looked for " + DefaultConfigPath + " in " + dir + ", ", "`make run`", "--etcd-config"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestAStoppedDemoFailsAtOnceNamingTheCauseAndTheFix(t *testing.T) {
	// An etcd.conf whose endpoint nobody listens on: the agent of `make run` is gone.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := ln.Addr().String()
	ln.Close()
	root := demoTree(t, "etcd-config: etcd.conf\nagents:\n  k8s-master: http://"+endpoint+"\n")
	if err := os.WriteFile(filepath.Join(root, ".run", "standalone", "etcd.conf"), []byte("endpoints: ["+endpoint+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	start := time.Now()
	_, errOut, code := netctl(t, "nodes")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("nodes took %v to fail, want at once (the timeout is 10 s)", took.Round(time.Millisecond))
	}
	if code == 0 {
		t.Fatal("nodes succeeded against a stopped demo")
	}
	for _, want := range []string{"does not accept connections", "connection refused",
		"the agent of `make run` that wrote " + filepath.Join(root, DefaultConfigPath) + " is not running"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestWithTwoDemoNodesTheConfigOfTheOneStartedLastIsTaken(t *testing.T) {
	root := demoTree(t, "agents: {}\n")
	worker := filepath.Join(root, ".run", "standalone-k8s-worker1", "netctl.conf")
	if err := os.MkdirAll(filepath.Dir(worker), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(worker, []byte("agents: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	master := filepath.Join(root, DefaultConfigPath)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(master, old, old); err != nil {
		t.Fatal(err)
	}
	if got, _ := findDefaultConfig(root, ""); got != worker {
		t.Errorf("found %q, want the newer %q", got, worker)
	}
	if err := os.Chtimes(worker, old.Add(-time.Hour), old.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := findDefaultConfig(root, ""); got != master {
		t.Errorf("found %q, want the newer %q", got, master)
	}
}

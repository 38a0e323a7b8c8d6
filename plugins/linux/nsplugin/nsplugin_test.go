package nsplugin_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

func TestMain(m *testing.M) { os.Exit(linuxtest.Main(m)) }

func ref(t linuxif.NetNamespace_ReferenceType, r string) *linuxif.NetNamespace {
	return &linuxif.NetNamespace{Type: t, Reference: r}
}

func TestNamespacePathByReferenceType(t *testing.T) {
	p := &nsplugin.Plugin{}
	tests := []struct {
		name string
		ref  *linuxif.NetNamespace
		want string
		err  string
	}{
		{"unset is the agent's namespace", nil, "/proc/self/ns/net", ""},
		{"undefined is the agent's namespace", ref(linuxif.NetNamespace_UNDEFINED_NS, "ignored"), "/proc/self/ns/net", ""},
		{"pid", ref(linuxif.NetNamespace_PID, "1234"), "/proc/1234/ns/net", ""},
		{"name", ref(linuxif.NetNamespace_NAME, "pod1"), "/var/run/netns/pod1", ""},
		{"fd path", ref(linuxif.NetNamespace_FD, "/proc/42/ns/net"), "/proc/42/ns/net", ""},
		{"bad pid", ref(linuxif.NetNamespace_PID, "abc"), "", `PID "abc"`},
		{"zero pid", ref(linuxif.NetNamespace_PID, "0"), "", `PID "0"`},
		{"name with slash", ref(linuxif.NetNamespace_NAME, "../etc"), "", `NAME "../etc"`},
		{"empty fd", ref(linuxif.NetNamespace_FD, ""), "", "empty path"},
		{"microservice", ref(linuxif.NetNamespace_MICROSERVICE, "ms1"), "", "unsupported namespace reference"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.NamespacePath(tc.ref)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("NamespacePath() error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NamespacePath() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestNetnsDirOverridesNamedNamespaceLocation(t *testing.T) {
	p := &nsplugin.Plugin{Deps: nsplugin.Deps{NetnsDir: "/run/custom"}}
	got, err := p.NamespacePath(ref(linuxif.NetNamespace_NAME, "pod"))
	if err != nil || got != "/run/custom/pod" {
		t.Fatalf("NamespacePath() = %q, %v", got, err)
	}
}

func TestMicroserviceReferenceIsUnsupported(t *testing.T) {
	_, err := (&nsplugin.Plugin{}).NsHandle(ref(linuxif.NetNamespace_MICROSERVICE, "ms"))
	if !errors.Is(err, nsplugin.ErrUnsupportedReference) || errors.Is(err, nsplugin.ErrNamespaceNotFound) {
		t.Fatalf("err = %v, want ErrUnsupportedReference only", err)
	}
}

func TestMissingNamespaceIsNotFoundAndNamesThePath(t *testing.T) {
	p := &nsplugin.Plugin{}
	missing := linuxtest.NamePrefix() + "missing"
	for _, r := range []*linuxif.NetNamespace{
		ref(linuxif.NetNamespace_NAME, missing),
		ref(linuxif.NetNamespace_FD, "/nonexistent/ns/net"),
		ref(linuxif.NetNamespace_PID, "2147483646"),
	} {
		path, _ := p.NamespacePath(r)
		_, err := p.NsHandle(r)
		if !errors.Is(err, nsplugin.ErrNamespaceNotFound) {
			t.Errorf("%v: err = %v, want ErrNamespaceNotFound", r, err)
		}
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%v: error %v does not name %s", r, err, path)
		}
		err = p.WithNamespace(r, func() error { t.Error("fn ran in a missing namespace"); return nil })
		if !errors.Is(err, nsplugin.ErrNamespaceNotFound) {
			t.Errorf("%v: WithNamespace err = %v", r, err)
		}
		if _, _, err := p.NetlinkHandle(r); !errors.Is(err, nsplugin.ErrNamespaceNotFound) {
			t.Errorf("%v: NetlinkHandle err = %v", r, err)
		}
	}
}

func TestUnboundNamespaceFileIsNotFound(t *testing.T) {
	file := filepath.Join(t.TempDir(), "netns")
	if err := os.WriteFile(file, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := (&nsplugin.Plugin{}).NsHandle(ref(linuxif.NetNamespace_FD, file))
	if !errors.Is(err, nsplugin.ErrNamespaceNotFound) || !strings.Contains(err.Error(), file) {
		t.Fatalf("err = %v, want ErrNamespaceNotFound naming %s", err, file)
	}
}

func TestWithNamespaceRunsInsideAndSwitchesBack(t *testing.T) {
	name, path := linuxtest.NewNamespace(t)
	p := &nsplugin.Plugin{}
	target, err := nsplugin.OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	for _, r := range []*linuxif.NetNamespace{ref(linuxif.NetNamespace_NAME, name), ref(linuxif.NetNamespace_FD, path)} {
		var inside bool
		var links []string
		err := p.WithNamespace(r, func() error {
			cur, err := netns.Get()
			if err != nil {
				return err
			}
			defer cur.Close()
			inside = cur.Equal(target)
			ll, err := netlink.LinkList()
			for _, l := range ll {
				links = append(links, l.Attrs().Name)
			}
			return err
		})
		if err != nil || !inside {
			t.Fatalf("%v: WithNamespace err = %v, inside = %v", r, err, inside)
		}
		if len(links) != 1 || links[0] != "lo" {
			t.Errorf("%v: links inside = %v, want only lo", r, links)
		}
	}
	// The goroutine's thread is back where it was: the agent's namespace.
	agent, err := nsplugin.OpenPath(nsplugin.AgentNamespacePath)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	cur, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if !cur.Equal(agent) {
		t.Fatal("thread not switched back to the agent's namespace")
	}
}

func TestWithNamespaceReturnsTheFunctionError(t *testing.T) {
	name, _ := linuxtest.NewNamespace(t)
	want := errors.New("boom")
	err := (&nsplugin.Plugin{}).WithNamespace(ref(linuxif.NetNamespace_NAME, name), func() error { return want })
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestNetlinkHandleWorksInsideTheNamespace(t *testing.T) {
	name, _ := linuxtest.NewNamespace(t)
	h, closeH, err := (&nsplugin.Plugin{}).NetlinkHandle(ref(linuxif.NetNamespace_NAME, name))
	if err != nil {
		t.Fatal(err)
	}
	defer closeH()
	links, err := h.LinkList()
	if err != nil || len(links) != 1 || links[0].Attrs().Name != "lo" {
		t.Fatalf("LinkList() = %v, %v; want only lo", links, err)
	}
}

func TestUnsetReferenceIsTheAgentNamespace(t *testing.T) {
	h, err := (&nsplugin.Plugin{}).NsHandle(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cur, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if !h.Equal(cur) {
		t.Fatal("NsHandle(nil) is not the agent's namespace")
	}
}

// unprivilegedHelperEnv makes the test binary run TestHelperAgentNetlinkHandle for real.
const unprivilegedHelperEnv = "NSPLUGIN_TEST_UNPRIVILEGED_HELPER"

// TestHelperAgentNetlinkHandle is run by TestAgentNetlinkHandleNeedsNoPrivilege in a
// process of an unprivileged user; it does nothing in a normal test run.
func TestHelperAgentNetlinkHandle(t *testing.T) {
	if os.Getenv(unprivilegedHelperEnv) == "" {
		t.Skip("helper of TestAgentNetlinkHandleNeedsNoPrivilege")
	}
	h, closeH, err := (&nsplugin.Plugin{}).NetlinkHandle(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeH()
	if _, err := h.LinkByName("lo"); err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := (&nsplugin.Plugin{}).WithNamespace(nil, func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("WithNamespace(agent namespace) = %v, ran %v", err, ran)
	}
}

// TestAgentNetlinkHandleNeedsNoPrivilege: a netlink handle in the agent's own namespace
// (and WithNamespace there) works without switching namespaces, which an unprivileged process may not do (the
// standalone demo as non-root failed on it with "operation not permitted").
func TestAgentNetlinkHandleNeedsNoPrivilege(t *testing.T) {
	// Root starts the helper as another user, from a directory that user can read
	// (the parent of t.TempDir is private).
	linuxtest.RequireRoot(t)
	dir, err := os.MkdirTemp("", "nsplugin-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nsplugin.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperAgentNetlinkHandle$", "-test.v")
	cmd.Env = append(os.Environ(), unprivilegedHelperEnv+"=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHelperAgentNetlinkHandle") {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
}

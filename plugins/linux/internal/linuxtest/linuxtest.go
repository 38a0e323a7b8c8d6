// Package linuxtest helps the tests of the Linux plugins: it creates network
// namespaces with unique names (ctv-test-<pid>-<n>) that are removed when the
// test ends, and checks at the end of a test binary that nothing it created
// is left (Main). It is for tests only.
package linuxtest

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

// NamePrefix is the prefix of the namespaces this test binary creates.
func NamePrefix() string { return fmt.Sprintf("ctv-test-%d-", os.Getpid()) }

// RequireRoot skips the test unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces and links")
	}
}

// NewNamespace creates a named network namespace that is deleted when the
// test ends, and returns its name and path. The test is skipped when that is
// not possible (not root, no namespace support).
func NewNamespace(t testing.TB) (name, path string) {
	t.Helper()
	RequireRoot(t)
	for attempt := 0; ; attempt++ {
		name = fmt.Sprintf("%s%d", NamePrefix(), rand.IntN(1_000_000))
		err := createNamed(name)
		if errors.Is(err, fs.ErrExist) && attempt < 5 {
			continue
		}
		if err != nil {
			t.Skipf("skipped: cannot create network namespace %s: %v", name, err)
		}
		break
	}
	t.Cleanup(func() {
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete network namespace %s: %v", name, err)
		}
	})
	return name, filepath.Join(nsplugin.DefaultNetnsDir, name)
}

// createNamed creates a named namespace without leaving the calling thread
// in it.
func createNamed(name string) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name)
	if err == nil {
		ns.Close()
	}
	if serr := netns.Set(orig); serr != nil {
		return errors.Join(err, serr) // the thread stays locked and dies with the goroutine
	}
	runtime.UnlockOSThread()
	return err
}

// Handle returns a netlink handle in the namespace at path, closed when the
// test ends.
func Handle(t testing.TB, path string) *netlink.Handle {
	t.Helper()
	ns, err := nsplugin.OpenPath(path)
	if err != nil {
		t.Fatalf("open namespace %s: %v", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", path, err)
	}
	t.Cleanup(h.Close)
	return h
}

// snapshot is what the root namespace holds: link names and routes.
type snapshot struct {
	links  []string
	routes []string
}

// takeSnapshot reads the links and routes (all tables) of the current
// namespace.
func takeSnapshot() (snapshot, error) {
	var s snapshot
	links, err := netlink.LinkList()
	if err != nil {
		return s, err
	}
	for _, l := range links {
		s.links = append(s.links, l.Attrs().Name)
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return s, err
	}
	for _, r := range routes {
		s.routes = append(s.routes, r.String())
	}
	return s, nil
}

// leftovers lists the namespaces of this binary that still exist and the
// links and routes of the root namespace that were not there before.
func leftovers(before snapshot) []string {
	var out []string
	entries, _ := os.ReadDir(nsplugin.DefaultNetnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NamePrefix()) {
			out = append(out, "namespace "+e.Name())
		}
	}
	after, err := takeSnapshot()
	if err != nil {
		return append(out, "cannot read the root namespace: "+err.Error())
	}
	for _, l := range after.links {
		if !slices.Contains(before.links, l) {
			out = append(out, "link "+l+" in the root namespace")
		}
	}
	for _, r := range after.routes {
		if !slices.Contains(before.routes, r) {
			out = append(out, "route "+r+" in the root namespace")
		}
	}
	return out
}

// Main runs the tests of a package (call it from TestMain) and fails the run
// when a namespace it created, or a link or route in the root namespace, is
// left behind.
func Main(m *testing.M) int {
	if os.Geteuid() != 0 {
		return m.Run()
	}
	before, err := takeSnapshot()
	code := m.Run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "leak check skipped: cannot read the root namespace: %v\n", err)
		return code
	}
	if left := leftovers(before); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left behind:\n  %s\n", strings.Join(left, "\n  "))
		return 1
	}
	return code
}

// Logger returns a logger that writes to the test log.
func Logger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(testWriter{t})
	l.SetLevel(logrus.DebugLevel)
	return l
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// MetadataMap is a fake of the scheduler's metadata map for descriptor
// tests: the test stores what Create or Retrieve returned.
type MetadataMap map[string]kvapi.Metadata

// GetValue implements kvapi.MetadataMap.
func (m MetadataMap) GetValue(label string) (kvapi.Metadata, bool) {
	v, ok := m[label]
	return v, ok
}

// ListAllNames implements kvapi.MetadataMap.
func (m MetadataMap) ListAllNames() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

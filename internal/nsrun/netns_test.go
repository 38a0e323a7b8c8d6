package nsrun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// newNamespace creates a namespace with its loopback up, deleted at the end.
func newNamespace(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	name := fmt.Sprintf("netnstest-%08x", rand.Uint32())
	for _, args := range [][]string{{"netns", "add", name}, {"-n", name, "link", "set", "lo", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	return Path(name)
}

// A listener opened in the namespace is reached through Dialer and not from the
// namespace the test runs in; the test's own namespace is unchanged afterwards.
func TestSocketsStayInTheNamespace(t *testing.T) {
	path := newNamespace(t)
	before, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(path, "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("inside"))
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp4", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the namespace's listener was reached from outside it")
	}
	c, err := Dialer(path)(ctx, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial inside: %v", err)
	}
	buf := make([]byte, 6)
	if _, err := c.Read(buf); err != nil || string(buf) != "inside" {
		t.Errorf("read %q, %v", buf, err)
	}
	c.Close()
	if after, _ := os.Readlink("/proc/self/ns/net"); after != before {
		t.Errorf("the process's namespace changed: %s -> %s", before, after)
	}
}

// A namespace that does not exist is an error naming its path.
func TestMissingNamespaceIsNamed(t *testing.T) {
	err := Run("/var/run/netns/netnstest-missing", func() error { return nil })
	if err == nil || !strings.Contains(err.Error(), "/var/run/netns/netnstest-missing") {
		t.Errorf("error %v does not name the path", err)
	}
}

package rest

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// socketDir is a directory any user may traverse (t.TempDir's are the test user's
// only), so that a refusal comes from the socket's own mode.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rest-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// unixClient is an HTTP client whose connections go to the unix socket path.
func unixClient(t *testing.T, path string) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: testkit.DefaultTimeout}
}

// dialAs connects to the unix socket path as the user uid of group gid (and no other
// group): the kernel checks the socket file's permissions against the connecting
// thread's file-system IDs, which this sets on a thread of its own that is discarded
// afterwards (a locked thread is when its goroutine ends). Setting them to a
// non-zero ID drops root's file-access capabilities on that thread.
func dialAs(t *testing.T, uid, gid int, path string) (net.Conn, error) {
	t.Helper()
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0)
		syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
		syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
		c, err := net.Dial("unix", path)
		done <- result{c, err}
	}()
	r := <-done
	if r.c != nil {
		t.Cleanup(func() { r.c.Close() })
	}
	return r.c, r.err
}

// getOn sends GET path on the connection c and returns the status code.
func getOn(t *testing.T, c net.Conn, path string) int {
	t.Helper()
	if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAdminSocketServesAdminAndTCPLoopbackNoLonger(t *testing.T) {
	sock := filepath.Join(socketDir(t), "admin.sock")
	log, hook := logtest.NewNullLogger()
	_, port, posted := startWith(t, Config{Endpoint: "127.0.0.1:0", AdminSocket: sock}, log)
	loop := "http://127.0.0.1:" + port
	viaSocket := unixClient(t, sock)

	for _, tc := range []struct {
		name, method, url, ct string
		c                     *http.Client
		want                  int
	}{
		{"admin GET on the socket", "GET", "http://localhost/test/admin", "", viaSocket, 200},
		{"admin POST on the socket", "POST", "http://localhost/test/change", "application/json", viaSocket, 200},
		{"public view on the socket", "GET", "http://localhost/test/view", "", viaSocket, 200},
		{"admin GET on TCP loopback", "GET", loop + "/test/admin", "", http.DefaultClient, 403},
		{"admin POST on TCP loopback", "POST", loop + "/test/change", "application/json", http.DefaultClient, 403},
		{"public view on TCP", "GET", loop + "/test/view", "", http.DefaultClient, 200},
		{"probe on TCP", "GET", loop + ReadinessPath, "", http.DefaultClient, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.c, tc.method, tc.url, tc.ct, `{}`)
			if code != tc.want {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.url, code, body, tc.want)
			}
			if code == 403 && !strings.Contains(body, sock) {
				t.Errorf("403 does not name the admin socket: %s", body)
			}
		})
	}
	if n := posted.Load(); n != 1 {
		t.Errorf("the POST handler ran %d times, want 1 (on the socket only)", n)
	}
	var audited bool
	for _, e := range auditLines(hook) {
		if c, _ := e.Data["caller"].(string); strings.HasPrefix(c, "unix:uid=") {
			audited = true
		}
	}
	if !audited {
		t.Error("the POST over the socket has no audit line naming its peer (unix:uid=...)")
	}
}

func TestAdminOnLoopbackKeepsBothDoorsOpen(t *testing.T) {
	sock := filepath.Join(socketDir(t), "admin.sock")
	_, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0", AdminSocket: sock, AdminOnLoopback: true}, nil)
	if code, body := do(t, http.DefaultClient, "GET", "http://127.0.0.1:"+port+"/test/admin", "", ""); code != 200 {
		t.Errorf("admin on TCP loopback with admin-on-loopback = %d %s, want 200", code, body)
	}
	if code, body := do(t, unixClient(t, sock), "GET", "http://localhost/test/admin", "", ""); code != 200 {
		t.Errorf("admin on the socket = %d %s, want 200", code, body)
	}
}

func TestAdminSocketHasTheConfiguredModeAndGroupAndTheOSRefusesOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the socket is given another group, and clients of other users are impersonated")
	}
	const group, stranger = 4242, 65534
	sock := filepath.Join(socketDir(t), "admin.sock")
	p, _, _ := startWith(t, Config{Endpoint: "127.0.0.1:0", AdminSocket: sock, AdminSocketMode: 0o660, AdminSocketGroup: "4242"}, nil)

	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o660 {
		t.Errorf("admin socket mode = %v, want a socket with 0660", st.Mode())
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; gid != group {
		t.Errorf("admin socket group = %d, want %d", gid, group)
	}

	if _, err := dialAs(t, stranger, stranger, sock); !errors.Is(err, syscall.EACCES) {
		t.Errorf("a user outside the group connecting: %v, want permission denied by the OS", err)
	}
	c, err := dialAs(t, stranger, group, sock)
	if err != nil {
		t.Fatalf("a user of the group connecting: %v", err)
	}
	if code := getOn(t, c, "/test/admin"); code != 200 {
		t.Errorf("admin GET by a user of the group = %d, want 200", code)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the admin socket is still there after Close: %v", err)
	}
}

func TestAdminSocketReplacesAStaleSocketButNotALiveOne(t *testing.T) {
	dir := socketDir(t)
	sock := filepath.Join(dir, "admin.sock")
	// A stale socket: its listener is gone, the file stays.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	startWith(t, Config{Endpoint: "127.0.0.1:0", AdminSocket: sock}, nil)

	p := NewPlugin(Deps{Log: quiet(), Config: fakeLoader{cfg: Config{Endpoint: "127.0.0.1:0", AdminSocket: sock}}})
	err = p.Init()
	if err == nil {
		p.Close()
		t.Fatal("a second agent took over the admin socket a live one serves")
	}
	if !strings.Contains(err.Error(), "another process serves it") {
		t.Errorf("error = %v, want it to say another process serves the socket", err)
	}
	if code, _ := do(t, unixClient(t, sock), "GET", "http://localhost/test/admin", "", ""); code != 200 {
		t.Errorf("the first agent's admin socket stopped answering: %d", code)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p = NewPlugin(Deps{Log: quiet(), Config: fakeLoader{cfg: Config{Endpoint: "127.0.0.1:0", AdminSocket: file}}})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		p.Close()
		t.Errorf("admin-socket naming a regular file: %v, want it refused", err)
	}
}

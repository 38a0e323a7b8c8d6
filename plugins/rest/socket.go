package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The admin socket: a unix socket that serves the same handlers as the TCP endpoint,
// admin ones included, to whoever the socket file's permissions let connect (as
// Cilium's API socket does). Being on the node is then not enough: a host-network
// process of another user, a relay or `kubectl port-forward` to the node's loopback
// no longer reach the VPP CLI. When it is configured, the TCP endpoint no longer
// serves admin requests from loopback (admin-on-loopback: true keeps them); mutual TLS
// on TCP is unaffected.

// DefaultAdminSocketMode is the admin socket's mode when admin-socket-mode is not set:
// its owner (root, the agent) only.
const DefaultAdminSocketMode = SocketMode(0o600)

// maxSocketPath bounds the path of a unix socket (sun_path holds 108 bytes, with its
// NUL; the socket is first made under a temporary directory beside it, whose name
// takes tmpSocketExtra more bytes).
const (
	maxSocketPath  = 107
	tmpSocketExtra = len("/.admin-sock-1234567890/s") - len("/s")
)

// SocketMode is a file mode in http.conf, written as a quoted octal string ("0660"):
// an unquoted 0660 is read as a decimal or octal number depending on the YAML version,
// so numbers are refused.
type SocketMode os.FileMode

// UnmarshalJSON takes a quoted octal string.
func (m *SocketMode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: give the mode as a quoted octal string such as \"0660\"", b)
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return fmt.Errorf("%q is not an octal mode such as \"0660\"", s)
	}
	*m = SocketMode(v)
	return nil
}

// MarshalJSON writes the mode as a quoted octal string.
func (m SocketMode) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%04o", uint32(m)))
}

// String writes the mode in octal ("0600").
func (m SocketMode) String() string { return fmt.Sprintf("%04o", uint32(m)) }

// validateAdminSocket checks the admin-socket keys, naming the key and its value.
func (c *Config) validateAdminSocket() error {
	if c.AdminSocket == "" {
		switch {
		case c.AdminSocketMode != 0:
			return errors.New("admin-socket-mode: set without admin-socket")
		case c.AdminSocketGroup != "":
			return errors.New("admin-socket-group: set without admin-socket")
		case c.AdminOnLoopback:
			return errors.New("admin-on-loopback: set without admin-socket (without it, admin is on loopback already)")
		}
		return nil
	}
	if !filepath.IsAbs(c.AdminSocket) {
		return fmt.Errorf("admin-socket: %q must be an absolute path", c.AdminSocket)
	}
	if n := len(filepath.Clean(c.AdminSocket)) + tmpSocketExtra; n > maxSocketPath {
		return fmt.Errorf("admin-socket: %q is too long for a unix socket (at most %d bytes)", c.AdminSocket, maxSocketPath-tmpSocketExtra)
	}
	mode := c.adminSocketMode()
	if mode&^0o777 != 0 || mode&0o600 != 0o600 {
		return fmt.Errorf("admin-socket-mode: %v must be permission bits (at most 0777) with read and write for the owner", mode)
	}
	if mode&0o002 != 0 {
		return fmt.Errorf("admin-socket-mode: %v lets any user of the node run VPP commands; grant a group instead (admin-socket-group, mode \"0660\")", mode)
	}
	if c.AdminSocketGroup != "" {
		if _, err := lookupGroup(c.AdminSocketGroup); err != nil {
			return fmt.Errorf("admin-socket-group: %w", err)
		}
	}
	return nil
}

func (c *Config) adminSocketMode() SocketMode {
	if c.AdminSocketMode == 0 {
		return DefaultAdminSocketMode
	}
	return c.AdminSocketMode
}

// lookupGroup resolves a group name or numeric group ID.
func lookupGroup(g string) (int, error) {
	if id, err := strconv.Atoi(g); err == nil {
		if id < 0 {
			return 0, fmt.Errorf("%q is not a group ID", g)
		}
		return id, nil
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w", g, err)
	}
	return strconv.Atoi(grp.Gid)
}

// listenAdminSocket opens the admin socket with its mode and group set before anyone
// can connect: it is made in a private temporary directory beside path (mode 0700),
// given its mode and group, then renamed into place. A stale socket left by an agent
// that died is replaced; one a live process serves, or a file that is no socket, is an
// error. Closing the listener removes the socket.
func listenAdminSocket(path string, mode SocketMode, group string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("admin-socket %s: %w", path, err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	gid := -1
	if group != "" {
		var err error
		if gid, err = lookupGroup(group); err != nil {
			return nil, fmt.Errorf("admin-socket-group: %w", err)
		}
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".admin-sock-")
	if err != nil {
		return nil, fmt.Errorf("admin-socket %s: %w", path, err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("admin-socket %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		ul.Close()
		return nil, fmt.Errorf("admin-socket %s: %w", path, err)
	}
	if err := os.Chmod(tmp, os.FileMode(mode)); err != nil {
		return fail(err)
	}
	if gid >= 0 {
		if err := os.Chown(tmp, -1, gid); err != nil {
			return fail(fmt.Errorf("admin-socket-group %s: %w", group, err))
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &socketListener{UnixListener: ul, path: path}, nil
}

// removeStaleSocket removes a socket at path that no process serves.
func removeStaleSocket(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin-socket %s: %w", path, err)
	}
	if st.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("admin-socket %s: exists and is not a socket (%v); remove it or choose another path", path, st.Mode().Type())
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("admin-socket %s: another process serves it (another agent?); stop it or choose another path", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("admin-socket %s: remove the stale socket: %w", path, err)
	}
	return nil
}

// socketListener removes its socket file when closed.
type socketListener struct {
	*net.UnixListener
	path string
}

func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}

// Peer is the process at the other end of an admin socket connection, as the kernel
// reports it (SO_PEERCRED).
type Peer struct {
	PID, UID, GID int
}

// String names the peer in audit lines and logs.
func (p Peer) String() string { return fmt.Sprintf("unix:uid=%d,pid=%d", p.UID, p.PID) }

type peerKey struct{}

// withPeer stores the connection's peer credentials in its context (http.Server's
// ConnContext of the admin socket); a connection whose credentials cannot be read
// gets an unknown peer (uid -1), which still passed the file permissions.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	peer := Peer{PID: -1, UID: -1, GID: -1}
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) {
				if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
					peer = Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
				}
			})
		}
	}
	return context.WithValue(ctx, peerKey{}, peer)
}

// SocketPeer returns the peer of a request that came over the admin socket.
func SocketPeer(r *http.Request) (Peer, bool) {
	p, ok := r.Context().Value(peerKey{}).(Peer)
	return p, ok
}

// caller names who sent r: the peer of the admin socket, else the remote address.
func caller(r *http.Request) string {
	if p, ok := SocketPeer(r); ok {
		return p.String()
	}
	return r.RemoteAddr
}

package nsplugin

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

const (
	// DefaultNetnsDir is where named namespaces are bound ("ip netns add").
	DefaultNetnsDir = "/var/run/netns"
	// AgentNamespacePath is the path of the agent's own network namespace,
	// the one an unset reference (UNDEFINED_NS) stands for.
	AgentNamespacePath = "/proc/self/ns/net"
)

// API is what other plugins use of nsplugin. Every method may be called from
// any goroutine.
type API interface {
	// NamespacePath returns the file path that ref stands for, without
	// checking that it exists.
	NamespacePath(ref *linuxif.NetNamespace) (string, error)
	// NsHandle opens the namespace that ref names; the caller closes it.
	NsHandle(ref *linuxif.NetNamespace) (netns.NsHandle, error)
	// WithNamespace runs fn on the calling goroutine's OS thread switched into
	// the namespace of ref, then switches back. fn must not start goroutines
	// that expect to be in the namespace.
	WithNamespace(ref *linuxif.NetNamespace, fn func() error) error
	// NetlinkHandle returns a route netlink handle opened inside the namespace
	// of ref, and the function that closes it.
	//
	// For the agent's own namespace (ref nil or UNDEFINED_NS) both make no
	// switch, which needs no privilege: they take the calling thread to be in
	// the agent's namespace, so do not call them so from inside a WithNamespace
	// of another namespace.
	NetlinkHandle(ref *linuxif.NetNamespace) (*netlink.Handle, func(), error)
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// NetnsDir is where NAME references are looked up ("": DefaultNetnsDir).
	NetnsDir string
}

// Plugin is nsplugin. Its zero value is ready to use (Init only sets the
// logger); it holds no state besides its Deps.
type Plugin struct {
	Deps
}

var _ API = (*Plugin)(nil)

// String names the plugin.
func (p *Plugin) String() string { return "linux-nsplugin" }

// Init sets the default logger.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	return nil
}

// Close does nothing: the plugin holds no resources.
func (p *Plugin) Close() error { return nil }

// ValidateRef checks a namespace reference without touching the system: a
// PID must be a positive number, a NAME a plain file name, an FD a path;
// MICROSERVICE references are rejected (ErrUnsupportedReference). A nil
// reference is the agent's namespace and is valid.
func ValidateRef(ref *linuxif.NetNamespace) error {
	r := ref.GetReference()
	switch ref.GetType() {
	case linuxif.NetNamespace_UNDEFINED_NS:
		return nil
	case linuxif.NetNamespace_PID:
		pid, err := strconv.Atoi(r)
		if err != nil || pid <= 0 {
			return fmt.Errorf("namespace reference PID %q is not a positive process ID", r)
		}
	case linuxif.NetNamespace_NAME:
		if r == "" || r == "." || r == ".." || strings.ContainsRune(r, '/') {
			return fmt.Errorf("namespace reference NAME %q is not a namespace name", r)
		}
	case linuxif.NetNamespace_FD:
		if r == "" {
			return fmt.Errorf("namespace reference FD has an empty path")
		}
	case linuxif.NetNamespace_MICROSERVICE:
		return fmt.Errorf("namespace reference MICROSERVICE %q: %w", r, ErrUnsupportedReference)
	default:
		return fmt.Errorf("namespace reference type %d: %w", ref.GetType(), ErrUnsupportedReference)
	}
	return nil
}

// IsAgentNamespace tells whether ref stands for the agent's own namespace
// (nil or UNDEFINED_NS). It does not recognise other references that happen
// to point there.
func IsAgentNamespace(ref *linuxif.NetNamespace) bool {
	return ref.GetType() == linuxif.NetNamespace_UNDEFINED_NS
}

// NamespacePath returns the path ref stands for (see the package doc).
func (p *Plugin) NamespacePath(ref *linuxif.NetNamespace) (string, error) {
	if err := ValidateRef(ref); err != nil {
		return "", err
	}
	r := ref.GetReference()
	switch ref.GetType() {
	case linuxif.NetNamespace_PID:
		return "/proc/" + r + "/ns/net", nil
	case linuxif.NetNamespace_NAME:
		dir := p.NetnsDir
		if dir == "" {
			dir = DefaultNetnsDir
		}
		return filepath.Join(dir, r), nil
	case linuxif.NetNamespace_FD:
		return r, nil
	}
	return AgentNamespacePath, nil
}

// NsHandle opens the namespace ref names. It checks that the file is a
// network namespace: a path that does not exist, a process that is gone and
// a NAME file that is not bound yet all give a *NamespaceError matching
// ErrNamespaceNotFound.
func (p *Plugin) NsHandle(ref *linuxif.NetNamespace) (netns.NsHandle, error) {
	path, err := p.NamespacePath(ref)
	if err != nil {
		return netns.None(), err
	}
	return OpenPath(path)
}

// OpenPath opens the network namespace bound at path (see NsHandle).
func OpenPath(path string) (netns.NsHandle, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		notFound := errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOTDIR)
		return netns.None(), &NamespaceError{Path: path, Op: "open", Err: err, NotFound: notFound}
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		unix.Close(fd)
		return netns.None(), &NamespaceError{Path: path, Op: "statfs", Err: err}
	}
	if st.Type != unix.NSFS_MAGIC {
		// An "ip netns add" in progress creates the file before it binds
		// the namespace onto it.
		unix.Close(fd)
		return netns.None(), &NamespaceError{Path: path, Op: "open", Err: errNotNamespace, NotFound: true}
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err == nil && t != unix.CLONE_NEWNET {
		unix.Close(fd)
		return netns.None(), &NamespaceError{Path: path, Op: "open", Err: errNotNetNamespace}
	}
	return netns.NsHandle(fd), nil
}

// NetlinkHandle opens a route netlink socket inside the namespace of ref.
// The returned function closes it; call it when done.
func (p *Plugin) NetlinkHandle(ref *linuxif.NetNamespace) (*netlink.Handle, func(), error) {
	if IsAgentNamespace(ref) {
		// The calling thread is in the agent's namespace (only locked threads leave
		// it): no namespace switch, which also needs no privilege.
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, nil, &NamespaceError{Path: AgentNamespacePath, Op: "open netlink socket", Err: err}
		}
		return h, h.Close, nil
	}
	ns, err := p.NsHandle(ref)
	if err != nil {
		return nil, nil, err
	}
	defer ns.Close() // the socket keeps its namespace alive
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		path, _ := p.NamespacePath(ref)
		return nil, nil, &NamespaceError{Path: path, Op: "open netlink socket", Err: err}
	}
	return h, h.Close, nil
}

// WithNamespace runs fn with the calling OS thread in the namespace of ref. For the
// agent's own namespace fn simply runs: unlocked threads are always there.
//
// Otherwise the goroutine is locked to its thread, the thread is switched into the
// namespace, fn runs, and the thread is switched back and unlocked. If
// switching back fails the thread is left locked, so it is terminated when
// the goroutine ends and never runs other goroutines in the wrong namespace;
// the error then says so. A panic in fn is propagated after the same
// clean-up.
func (p *Plugin) WithNamespace(ref *linuxif.NetNamespace, fn func() error) error {
	if IsAgentNamespace(ref) {
		return fn() // already there (see NetlinkHandle)
	}
	target, err := p.NsHandle(ref)
	if err != nil {
		return err
	}
	defer target.Close()
	path, _ := p.NamespacePath(ref)
	return runIn(target, path, fn)
}

// runIn is WithNamespace for an open handle; path names it in errors.
func runIn(target netns.NsHandle, path string, fn func() error) (err error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get the current network namespace: %w", err)
	}
	defer func() {
		if serr := netns.Set(orig); serr != nil {
			// Keep the thread locked: it dies with this goroutine.
			err = errors.Join(err, fmt.Errorf("switch back from network namespace %s: %w (thread discarded)", path, serr))
			orig.Close()
			return
		}
		orig.Close()
		runtime.UnlockOSThread()
	}()
	if err := netns.Set(target); err != nil {
		return &NamespaceError{Path: path, Op: "enter", Err: err}
	}
	return fn()
}

package rest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// Reasons a connection is closed as soon as it is accepted, the label values of
// contiv_rest_connections_rejected_total.
const (
	RejectedPerClient = "per-client" // max-connections-per-client reached by its client
	RejectedTotal     = "total"      // max-connections reached by clients other than the node
	RejectedLocal     = "local"      // max-local-connections reached by the node itself
)

// warnInterval is the least time between two warnings of the listener about the same
// thing (connections refused, accept failing): whoever causes them (any pod) must not
// choose the log's volume.
const warnInterval = time.Minute

// limitedListener bounds the connections open at once, so that no client, nor all of
// them together, can hold the agent's file descriptors (which the CNI socket, VPP's
// socket and the probes need too):
//
//	from the node itself (fromNode)   at most local             (the kubelet's probes)
//	from any other client             at most perClient per IP,
//	                                  at most total together
//
// A connection over a bound is closed as soon as it is accepted and counted. The
// node's connections have a pool of their own, so that remote clients filling theirs
// do not stop the probes. It also logs, at most once per warnInterval, why accepting
// fails (descriptors exhausted: EMFILE, ENFILE); http.Server retries such errors with a
// back-off of its own, so the server keeps serving once descriptors are free again.
type limitedListener struct {
	net.Listener
	total, perClient, local int
	fromNode                func(net.Conn) bool
	log                     logrus.FieldLogger
	clock                   clock.PassiveClock
	metrics                 *connMetrics

	mu        sync.Mutex
	remote    int                // open connections not from the node
	fromHost  int                // open connections from the node
	perIP     map[netip.Addr]int // open connections per remote client
	refusals  warnLimiter
	acceptErr warnLimiter
	fds       *fdCounter
}

func newLimitedListener(ln net.Listener, cfg *Config, fromNode func(net.Conn) bool, log logrus.FieldLogger,
	clk clock.PassiveClock, m *connMetrics) *limitedListener {
	return &limitedListener{
		Listener: ln, total: cfg.MaxConnections, perClient: cfg.MaxConnectionsPerClient, local: cfg.MaxLocalConnections,
		fromNode: fromNode, log: log, clock: clk, metrics: m, perIP: map[netip.Addr]int{}, fds: newFDCounter(),
	}
}

// Close closes the listener and the descriptor counter's handle.
func (l *limitedListener) Close() error {
	l.fds.close()
	return l.Listener.Close()
}

// Accept returns the next connection within the bounds, closing those beyond them.
func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.acceptFailed(err)
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit counts c in and wraps it so that closing it counts it out; over a bound it
// closes c and returns nil.
func (l *limitedListener) admit(c net.Conn) net.Conn {
	ip := remoteIP(c)
	local := l.fromNode(c)
	l.mu.Lock()
	reason := ""
	switch {
	case local && l.fromHost >= l.local:
		reason = RejectedLocal
	case !local && l.perIP[ip] >= l.perClient:
		reason = RejectedPerClient
	case !local && l.remote >= l.total:
		reason = RejectedTotal
	case local:
		l.fromHost++
	default:
		l.remote++
		l.perIP[ip]++
	}
	l.metrics.open.WithLabelValues(clientKind(local)).Set(float64(l.count(local)))
	warn, suppressed := false, 0
	if reason != "" {
		warn, suppressed = l.refusals.allow(l.clock.Now())
	}
	l.mu.Unlock()

	if reason == "" {
		return &limitedConn{Conn: c, release: func() { l.release(ip, local) }}
	}
	c.Close()
	l.metrics.rejected.WithLabelValues(reason).Inc()
	if warn {
		l.log.WithFields(logrus.Fields{
			"client": ip.String(), "reason": reason, "max-connections": l.total,
			"max-connections-per-client": l.perClient, "max-local-connections": l.local,
			"refused-since-last-warning": suppressed,
		}).Warn("REST connection bound reached: closing new connections over it (contiv_rest_connections_rejected_total; warned at most once a minute)")
	}
	return nil
}

func (l *limitedListener) count(local bool) int {
	if local {
		return l.fromHost
	}
	return l.remote
}

func (l *limitedListener) release(ip netip.Addr, local bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if local {
		l.fromHost--
	} else {
		l.remote--
		if l.perIP[ip]--; l.perIP[ip] <= 0 {
			delete(l.perIP, ip)
		}
	}
	l.metrics.open.WithLabelValues(clientKind(local)).Set(float64(l.count(local)))
}

// acceptFailed logs why Accept failed, at most once per warnInterval for the errors
// that http.Server retries; a closed listener is the server stopping, not an error.
func (l *limitedListener) acceptFailed(err error) {
	if errors.Is(err, net.ErrClosed) {
		return
	}
	l.mu.Lock()
	warn, suppressed := l.acceptErr.allow(l.clock.Now())
	l.mu.Unlock()
	if !warn {
		return
	}
	entry := l.log.WithError(err).WithFields(logrus.Fields{
		"endpoint": l.Addr().String(), "failed-since-last-error": suppressed,
	})
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		entry.Errorf("REST server cannot accept connections: out of file descriptors (%s); "+
			"retrying with back-off, new connections wait in the listen backlog (logged at most once a minute)",
			describeFileLimit(l.fds.count()))
		return
	}
	entry.Error("REST server cannot accept connections; retrying with back-off (logged at most once a minute)")
}

// describeFileLimit names the process's open files limit and the number of descriptors
// open (open < 0: unknown).
func describeFileLimit(open int) string {
	count := "descriptors open: unknown"
	if open >= 0 {
		count = fmt.Sprintf("%d descriptors open", open)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Sprintf("open files limit unknown: %v; %s", err, count)
	}
	return fmt.Sprintf("open files limit (RLIMIT_NOFILE) %d, hard limit %d; %s", lim.Cur, lim.Max, count)
}

// fdCounter counts the process's open descriptors through a handle on /proc/self/fd
// opened beforehand: at exhaustion no new one could be opened to count them.
type fdCounter struct {
	mu  sync.Mutex
	dir *os.File // nil: no /proc (count unknown)
}

func newFDCounter() *fdCounter {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return &fdCounter{}
	}
	return &fdCounter{dir: f}
}

// count returns the number of open descriptors, -1 when unknown.
func (c *fdCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == nil {
		return -1
	}
	if _, err := c.dir.Seek(0, io.SeekStart); err != nil {
		return -1
	}
	names, err := c.dir.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names) - 1 // less the handle itself
}

func (c *fdCounter) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != nil {
		c.dir.Close()
		c.dir = nil
	}
}

// warnLimiter lets one warning through per warnInterval and counts those it holds back.
type warnLimiter struct {
	last    time.Time
	held    int
	started bool
}

// allow says whether to warn now, and how many warnings were held back since the last.
func (w *warnLimiter) allow(now time.Time) (warn bool, heldBack int) {
	if w.started && now.Sub(w.last) < warnInterval {
		w.held++
		return false, 0
	}
	heldBack, w.held = w.held, 0
	w.last, w.started = now, true
	return true, heldBack
}

// limitedConn counts itself out of its listener's bounds when closed (once).
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite lets http.Server half-close a TCP connection before closing it, as it
// does on an unwrapped one.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// localConn tells whether c comes from the node itself: from a loopback address, or
// from the very address it was made to (a connection from the node to one of its own
// addresses leaves from that address; the kubelet probing a host-network pod at the
// node IP does so). A pod or another host cannot take the node's address as its
// source in a TCP connection: the replies would not reach it.
func localConn(c net.Conn) bool {
	r := remoteIP(c)
	if r.IsLoopback() {
		return true
	}
	l, ok := c.LocalAddr().(*net.TCPAddr)
	return ok && l.AddrPort().Addr().Unmap() == r
}

// remoteIP is the client's IP address (IPv4-mapped addresses unmapped).
func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap.Addr().Unmap()
}

func clientKind(local bool) string {
	if local {
		return "node"
	}
	return "remote"
}

// connMetrics are the listener's metrics.
type connMetrics struct {
	rejected *prometheus.CounterVec
	open     *prometheus.GaugeVec
}

func newConnMetrics() *connMetrics {
	return &connMetrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_rest_connections_rejected_total",
			Help: "Connections to the REST API closed as soon as accepted, over a bound of http.conf, by reason (per-client, total, local).",
		}, []string{"reason"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_rest_connections_open",
			Help: "Connections to the REST API open now, by client (node: the node itself, remote: any other).",
		}, []string{"client"}),
	}
}

func (m *connMetrics) register(reg prometheus.Registerer) error {
	for _, reason := range []string{RejectedPerClient, RejectedTotal, RejectedLocal} {
		m.rejected.WithLabelValues(reason) // exported at 0 from the start
	}
	for _, kind := range []string{"node", "remote"} {
		m.open.WithLabelValues(kind)
	}
	for _, c := range []prometheus.Collector{m.rejected, m.open} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register REST connection metrics: %w", err)
		}
	}
	return nil
}

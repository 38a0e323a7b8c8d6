// Package rest is the agent's HTTP server (default 0.0.0.0:9999). Other plugins register
// their handlers on it through one of two doors:
//
//	RegisterPublic / Public()  read-only GET views safe to expose on the node port
//	                           (/contiv/v1/ipam, ...), next to the probes and /metrics
//	RegisterAdmin  / Admin()   everything that changes state or reveals internals
//	                           (/vpp/command, /controller/*, /scheduler/*, /log/*, pprof)
//
// The TCP listener serves both. An admin request is served only when it arrives on a
// loopback address from a loopback address (`curl localhost:9999/...` on the node), or,
// when http.conf configures TLS with client certificates (server-cert-file,
// server-key-file, client-cert-files), only with a verified client certificate, from
// anywhere. basic-auth, when set, is asked of every request but the probes. Anything
// else gets 403: a pod reaching the node IP sees the public views only. Failed
// basic-auth attempts are limited per client (authlimit.go: an IP address, an IPv6
// /64, a uid on the admin socket): basic-auth-failure-burst (10) at once, then one per
// basic-auth-failure-interval (1s); meanwhile the client gets 429 with Retry-After
// before its credentials are checked, counted with reason basic-auth-rate-limit and
// warned about at most once a minute. Other clients log in as before.
//
// With admin-socket (the manifest's default, socket.go), a unix socket serves every
// handler, admin ones included, to whoever its file permissions (admin-socket-mode,
// admin-socket-group) let connect, and TCP loopback no longer serves admin requests
// (admin-on-loopback keeps it): being on the node (a host-network process of another
// user, a relay, `kubectl port-forward`) is no longer enough. The socket is made with
// its mode and group before it appears at its path, and removed on Close; audit lines
// name its peers by uid and pid (SO_PEERCRED).
//
// State-changing requests (any method but GET/HEAD) must carry Content-Type
// application/json, which no simple cross-site request can (415 otherwise); each one is
// logged at info with its caller and what it asked (an audit line) and counted in
// contiv_rest_state_changing_requests_total. What it asked is the VPP command as decoded
// for POST /vpp/command (whole up to 4 KiB, else its start, length and SHA-256), the
// body's start, length and SHA-256 for the others: the audit reads the whole body (413
// above 2 MiB) and hands the handler those same bytes, so no padding hides what runs. The exception is POST /vpp/command with a
// read-only VPP command (ReadOnlyVPPCLI: one line starting with "show", "sho" or "sh"),
// which is logged at debug level and not counted, so polling "show ..." does not flood
// the audit log; every other command is audited. Refusals are counted in
// contiv_rest_refused_requests_total. See docs/SECURITY.md.
//
// It serves itself the probes /liveness and /readiness, driven by the aggregated health
// status, and /metrics with the Prometheus Go and process collectors plus the registry
// that plugins register their metrics on (named contiv_<subsystem>_<name>_<unit>).
//
// No client can hold the agent's file descriptors or memory (limit.go): connections are
// bounded per client IP (max-connections-per-client, 16) and together
// (max-connections, 256), and those from the node itself, the kubelet's probes among
// them, have a pool of their own (max-local-connections, 64), so that remote clients
// filling theirs leave the probes answering; a connection over a bound is closed as
// soon as accepted (contiv_rest_connections_rejected_total{reason}). Requests are
// bounded in time (read-header-timeout, read-timeout, write-timeout, idle-timeout) and
// in header size (max-header-bytes: 431 beyond). Accept failing for want of file
// descriptors is logged once a minute, naming the limit, and retried: the server keeps
// serving.
//
// The server starts listening in Init, so that the probes answer (not ready) while the
// other plugins are still starting; handlers may be registered at any time.
package rest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// DefaultEndpoint is where the agent serves HTTP unless http.conf says otherwise.
const DefaultEndpoint = "0.0.0.0:9999"

// Paths served by the plugin itself.
const (
	LivenessPath  = "/liveness"
	ReadinessPath = "/readiness"
	MetricsPath   = "/metrics"
)

// Config is the content of http.conf. The TLS and basic-auth keys are those of Ligato's
// HTTP plugin.
type Config struct {
	// Endpoint is the host:port to listen on.
	Endpoint string `json:"endpoint"`
	// ReadHeaderTimeout bounds how long a client may take to send request headers
	// ("10s", or nanoseconds).
	ReadHeaderTimeout infra.Duration `json:"read-header-timeout"`
	// ReadTimeout bounds how long a client may take to send a whole request, body
	// included; not shorter than ReadHeaderTimeout.
	ReadTimeout infra.Duration `json:"read-timeout"`
	// WriteTimeout bounds the time from the end of a request's headers to the end of
	// its response; a CPU profile or trace (enable-pprof) must be shorter.
	WriteTimeout infra.Duration `json:"write-timeout"`
	// IdleTimeout is how long a keep-alive connection may wait for its next request.
	IdleTimeout infra.Duration `json:"idle-timeout"`
	// MaxHeaderBytes bounds the request line and headers of a request (431 beyond).
	MaxHeaderBytes int `json:"max-header-bytes"`
	// MaxConnections bounds the connections open at once from clients other than the
	// node itself; the excess is closed as soon as it is accepted.
	MaxConnections int `json:"max-connections"`
	// MaxConnectionsPerClient bounds the connections open at once from one client IP
	// address other than the node's; at most MaxConnections.
	MaxConnectionsPerClient int `json:"max-connections-per-client"`
	// MaxLocalConnections bounds the connections open at once from the node itself
	// (loopback, or from the address connected to: the kubelet's probes, contiv-netctl
	// on the node). They are not counted in MaxConnections, so that a full remote pool
	// does not stop the probes.
	MaxLocalConnections int `json:"max-local-connections"`
	// EnablePprof serves Go's profiler under /debug/pprof/ as an admin endpoint (off by
	// default: it exposes internals and can cost CPU while profiling).
	EnablePprof bool `json:"enable-pprof"`
	// ServerCertFile is the server certificate (PEM); with ServerKeyFile the endpoint
	// serves HTTPS only.
	ServerCertFile string `json:"server-cert-file"`
	// ServerKeyFile is the private key of ServerCertFile (PEM).
	ServerKeyFile string `json:"server-key-file"`
	// ClientCertFiles are CA certificates (PEM) that client certificates are verified
	// against (mutual TLS). With them, admin endpoints are served to any client holding
	// a verified certificate, and to no one else (loopback included).
	ClientCertFiles []string `json:"client-cert-files"`
	// BasicAuth lists "user:password" entries; when set, every request but the probes
	// must authenticate with one of them.
	BasicAuth []string `json:"basic-auth"`
	// BasicAuthFailureBurst is how many failed basic-auth attempts a client (an IP
	// address, an IPv6 /64, a uid on the admin socket) may make at once; then one per
	// BasicAuthFailureInterval, and 429 with Retry-After meanwhile.
	BasicAuthFailureBurst int `json:"basic-auth-failure-burst"`
	// BasicAuthFailureInterval is how often a client regains a failed attempt.
	BasicAuthFailureInterval infra.Duration `json:"basic-auth-failure-interval"`
	// AdminSocket is the path of a unix socket that serves every handler, admin ones
	// included, to the users its file permissions let connect (socket.go). With it, TCP
	// loopback no longer serves admin requests, unless AdminOnLoopback.
	AdminSocket string `json:"admin-socket"`
	// AdminSocketMode is the permission bits of the socket file, a quoted octal string
	// ("0660"); default "0600" (the agent's user only). World-writable is refused.
	AdminSocketMode SocketMode `json:"admin-socket-mode"`
	// AdminSocketGroup is the group (name or numeric ID) given the socket file, for a
	// mode that grants the group; empty keeps the agent's group.
	AdminSocketGroup string `json:"admin-socket-group"`
	// AdminOnLoopback keeps serving admin requests from TCP loopback when AdminSocket is
	// set (both doors open).
	AdminOnLoopback bool `json:"admin-on-loopback"`
}

// DefaultConfig is http.conf's defaults (see docs/CONFIG.md for why these values).
func DefaultConfig() Config {
	return Config{
		Endpoint:                 DefaultEndpoint,
		ReadHeaderTimeout:        infra.Duration(10 * time.Second),
		ReadTimeout:              infra.Duration(30 * time.Second),
		WriteTimeout:             infra.Duration(2 * time.Minute),
		IdleTimeout:              infra.Duration(time.Minute),
		MaxHeaderBytes:           16 << 10,
		MaxConnections:           256,
		MaxConnectionsPerClient:  16,
		MaxLocalConnections:      64,
		BasicAuthFailureBurst:    DefaultAuthFailureBurst,
		BasicAuthFailureInterval: infra.Duration(DefaultAuthFailureInterval),
	}
}

// Bounds of the limits' values that Validate accepts.
const (
	minMaxHeaderBytes = 1 << 10
	maxMaxHeaderBytes = 1 << 20
)

// MutualTLS says whether the config asks for client certificates.
func (c *Config) MutualTLS() bool { return len(c.ClientCertFiles) > 0 }

// Validate checks the keys against each other, naming the offending key.
func (c *Config) Validate() error {
	if err := validateEndpoint(c.Endpoint); err != nil {
		return err
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if err := c.validateAdminSocket(); err != nil {
		return err
	}
	if (c.ServerCertFile == "") != (c.ServerKeyFile == "") {
		return errors.New("server-cert-file and server-key-file: set both or neither")
	}
	if c.MutualTLS() && c.ServerCertFile == "" {
		return errors.New("client-cert-files: needs server-cert-file and server-key-file (client certificates are checked by TLS)")
	}
	for i, f := range c.ClientCertFiles {
		if f == "" {
			return fmt.Errorf("client-cert-files[%d]: empty file name", i)
		}
	}
	for i, e := range c.BasicAuth {
		user, pass, ok := strings.Cut(e, ":")
		if !ok || user == "" || pass == "" {
			return fmt.Errorf("basic-auth[%d]: entry for %q is not user:password with both parts non-empty", i, user)
		}
	}
	return nil
}

// validateLimits checks the timeouts and bounds, naming the key and its value.
func (c *Config) validateLimits() error {
	for _, d := range []struct {
		key string
		v   infra.Duration
	}{
		{"read-header-timeout", c.ReadHeaderTimeout},
		{"read-timeout", c.ReadTimeout},
		{"write-timeout", c.WriteTimeout},
		{"idle-timeout", c.IdleTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s: %v must be positive", d.key, d.v)
		}
	}
	if c.ReadTimeout < c.ReadHeaderTimeout {
		return fmt.Errorf("read-timeout: %v must not be shorter than read-header-timeout (%v)", c.ReadTimeout, c.ReadHeaderTimeout)
	}
	if c.MaxHeaderBytes < minMaxHeaderBytes || c.MaxHeaderBytes > maxMaxHeaderBytes {
		return fmt.Errorf("max-header-bytes: %d must be between %d and %d", c.MaxHeaderBytes, minMaxHeaderBytes, maxMaxHeaderBytes)
	}
	for _, n := range []struct {
		key string
		v   int
	}{
		{"max-connections", c.MaxConnections},
		{"max-connections-per-client", c.MaxConnectionsPerClient},
		{"max-local-connections", c.MaxLocalConnections},
	} {
		if n.v < 1 {
			return fmt.Errorf("%s: %d must be at least 1", n.key, n.v)
		}
	}
	if c.BasicAuthFailureBurst < 1 {
		return fmt.Errorf("basic-auth-failure-burst: %d must be at least 1", c.BasicAuthFailureBurst)
	}
	if c.BasicAuthFailureInterval <= 0 || c.BasicAuthFailureInterval > infra.Duration(time.Hour) {
		return fmt.Errorf("basic-auth-failure-interval: %v must be positive and at most 1h", c.BasicAuthFailureInterval)
	}
	if c.MaxConnectionsPerClient > c.MaxConnections {
		return fmt.Errorf("max-connections-per-client: %d must not exceed max-connections (%d)", c.MaxConnectionsPerClient, c.MaxConnections)
	}
	return nil
}

// tlsConfig loads the certificates named by the config; nil when TLS is off.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.ServerCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.ServerCertFile, c.ServerKeyFile)
	if err != nil {
		return nil, fmt.Errorf("server-cert-file %q, server-key-file %q: %w", c.ServerCertFile, c.ServerKeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if !c.MutualTLS() {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	for i, f := range c.ClientCertFiles {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("client-cert-files[%d]: %w", i, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client-cert-files[%d]: %q holds no PEM certificate", i, f)
		}
	}
	cfg.ClientCAs = pool
	// A certificate is optional at the TLS level, so that the probes and the public
	// views answer clients without one (the kubelet's probes); admin handlers demand it.
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	return cfg, nil
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger.
	Log logrus.FieldLogger
	// Config loads http.conf; nil means defaults.
	Config infra.ConfigLoader
	// Health provides the status shown by the probes; nil means always OK.
	Health *health.Registry
	// Metrics is the Prometheus registry served on /metrics; nil means a new one.
	Metrics *prometheus.Registry
	// Clock paces the warnings about refused connections and accept errors, and the
	// basic-auth failure limit; nil means the real clock.
	Clock clock.PassiveClock
}

// Plugin is the HTTP server plugin.
type Plugin struct {
	Deps

	config Config
	users  map[string]string // basic-auth
	// authLimit limits the failed basic-auth attempts of each client.
	authLimit *authLimiter
	mux       *http.ServeMux
	server    *http.Server
	listener  net.Listener
	served    chan error
	// admin serves the admin socket (nil without admin-socket); adminServed gets
	// its Serve's result.
	admin       *http.Server
	adminLn     net.Listener
	adminServed chan error
	metrics     *accessMetrics
	conns       *connMetrics

	// listen opens the listener (net.Listen; tests inject accept errors).
	listen func(network, address string) (net.Listener, error)
	// fromNode tells whether a connection comes from the node itself (localConn;
	// tests make other loopback addresses remote clients).
	fromNode func(net.Conn) bool
}

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin {
	return &Plugin{
		Deps: deps, mux: http.NewServeMux(), metrics: newAccessMetrics(), conns: newConnMetrics(),
		listen: net.Listen, fromNode: localConn,
	}
}

// String names the plugin.
func (p *Plugin) String() string { return "rest" }

// Init loads http.conf, registers the probes and metrics and starts listening.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	p.config = DefaultConfig()
	if p.Config != nil {
		if _, err := p.Config.LoadConfig(&p.config); err != nil {
			return err
		}
	}
	if err := p.config.Validate(); err != nil {
		return err
	}
	tlsConf, err := p.config.tlsConfig()
	if err != nil {
		return err
	}
	p.users = map[string]string{}
	for _, e := range p.config.BasicAuth {
		user, pass, _ := strings.Cut(e, ":")
		p.users[user] = pass
	}
	if p.Metrics == nil {
		p.Metrics = prometheus.NewRegistry()
	}
	if err := p.registerStandardCollectors(); err != nil {
		return err
	}

	if p.config.EnablePprof {
		p.RegisterAdmin("GET /debug/pprof/", pprof.Index)
		p.RegisterAdmin("GET /debug/pprof/cmdline", pprof.Cmdline)
		p.RegisterAdmin("GET /debug/pprof/profile", pprof.Profile)
		p.RegisterAdmin("GET /debug/pprof/symbol", pprof.Symbol)
		p.RegisterAdmin("GET /debug/pprof/trace", pprof.Trace)
		p.Log.Warn("Go profiler served under /debug/pprof/ (enable-pprof, admin access only)")
	}
	// The probes skip basic-auth: the kubelet sends no credentials.
	p.mux.HandleFunc("GET "+LivenessPath, p.serveLiveness)
	p.mux.HandleFunc("GET "+ReadinessPath, p.serveReadiness)
	p.RegisterPublic("GET "+MetricsPath, promhttp.HandlerFor(p.Metrics, promhttp.HandlerOpts{
		ErrorLog: promLogger{p.Log}, Registry: p.Metrics,
	}).ServeHTTP)

	clk := p.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p.authLimit = newAuthLimiter(p.config.BasicAuthFailureBurst, time.Duration(p.config.BasicAuthFailureInterval), clk)
	tcp, err := p.listen("tcp", p.config.Endpoint)
	if err != nil {
		return fmt.Errorf("endpoint %s: %w", p.config.Endpoint, err)
	}
	// The bounds count TCP connections, under TLS: a handshake holds a descriptor too.
	var ln net.Listener = newLimitedListener(tcp, &p.config, p.fromNode, p.Log, clk, p.conns)
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	p.listener = ln
	p.server = p.newServer()
	p.served = make(chan error, 1)
	go func() {
		err := p.server.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			p.Log.WithError(err).Error("REST server stopped serving: probes and metrics no longer answer")
		}
		p.served <- err
	}()
	if err := p.serveAdminSocket(); err != nil {
		p.server.Close()
		<-p.served
		p.server = nil
		return err
	}
	p.Log.WithFields(logrus.Fields{
		"endpoint":     ln.Addr().String(),
		"tls":          tlsConf != nil,
		"mutual-tls":   p.config.MutualTLS(),
		"basic-auth":   len(p.users) > 0,
		"admin":        p.adminAccessDescription(),
		"admin-socket": p.config.AdminSocket,
		"max-connections": fmt.Sprintf("%d (%d per client), %d from the node",
			p.config.MaxConnections, p.config.MaxConnectionsPerClient, p.config.MaxLocalConnections),
	}).Info("serving HTTP")
	return nil
}

// serveAdminSocket opens the admin socket, when configured, and serves the handlers
// on it with the TCP endpoint's timeouts; each request carries its peer's credentials.
func (p *Plugin) serveAdminSocket() error {
	if p.config.AdminSocket == "" {
		return nil
	}
	ln, err := listenAdminSocket(p.config.AdminSocket, p.config.adminSocketMode(), p.config.AdminSocketGroup)
	if err != nil {
		return err
	}
	p.adminLn = ln
	p.admin = p.newServer()
	p.admin.ConnContext = withPeer
	p.adminServed = make(chan error, 1)
	go func() {
		err := p.admin.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			p.Log.WithError(err).Error("REST admin socket stopped serving")
		}
		p.adminServed <- err
	}()
	return nil
}

// newServer returns an HTTP server of the handlers with http.conf's bounds.
func (p *Plugin) newServer() *http.Server {
	return &http.Server{
		Handler:           p.mux,
		ReadHeaderTimeout: time.Duration(p.config.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(p.config.ReadTimeout),
		WriteTimeout:      time.Duration(p.config.WriteTimeout),
		IdleTimeout:       time.Duration(p.config.IdleTimeout),
		MaxHeaderBytes:    p.config.MaxHeaderBytes,
		ErrorLog:          log.New(serverLogWriter{p.Log}, "", 0),
	}
}

// AdminSocket is the path of the admin socket, "" when http.conf sets none.
func (p *Plugin) AdminSocket() string { return p.config.AdminSocket }

func validateEndpoint(ep string) error {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return fmt.Errorf("endpoint: %q is not host:port: %w", ep, err)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return fmt.Errorf("endpoint: %q: host must be an IP address or localhost", ep)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("endpoint: %q: port must be a number between 0 and 65535", ep)
	}
	return nil
}

func (p *Plugin) registerStandardCollectors() error {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := p.Metrics.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return fmt.Errorf("register standard metrics: %w", err)
			}
		}
	}
	if err := p.metrics.register(p.Metrics); err != nil {
		return err
	}
	if err := p.conns.register(p.Metrics); err != nil {
		return err
	}
	if p.Health != nil {
		if err := p.Metrics.Register(p.Health.Collector()); err != nil {
			return fmt.Errorf("register health metrics: %w", err)
		}
	}
	return nil
}

// Close stops the server, letting requests in flight finish for up to five seconds.
func (p *Plugin) Close() error {
	if p.server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.server.Shutdown(ctx)
	if serr := <-p.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	p.server = nil
	if p.admin != nil {
		err = errors.Join(err, p.admin.Shutdown(ctx))
		if serr := <-p.adminServed; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		p.admin = nil
	}
	return err
}

// Registerer is where plugins register their metrics.
func (p *Plugin) Registerer() prometheus.Registerer { return p.Metrics }

// Addr is the address the server listens on (useful with port 0), nil before Init.
func (p *Plugin) Addr() net.Addr {
	if p.listener == nil {
		return nil
	}
	return p.listener.Addr()
}

// ClientURL is the base URL a client on this host reaches the server at
// ("http://127.0.0.1:9999", https with TLS): an unspecified listen address becomes
// loopback. Empty before Init.
func (p *Plugin) ClientURL() string {
	if p.listener == nil {
		return ""
	}
	host, port, err := net.SplitHostPort(p.listener.Addr().String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	scheme := "http"
	if p.config.ServerCertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

type probeBody struct {
	State      health.State                      `json:"state"`
	Problems   []string                          `json:"problems,omitempty"`
	Components map[string]health.ComponentStatus `json:"components,omitempty"`
}

func (p *Plugin) status() health.AgentStatus {
	if p.Health == nil {
		return health.AgentStatus{State: health.OK}
	}
	return p.Health.Status()
}

// serveReadiness answers 200 when every component is OK, 503 otherwise.
func (p *Plugin) serveReadiness(w http.ResponseWriter, _ *http.Request) {
	st := p.status()
	code := http.StatusOK
	if st.State != health.OK {
		code = http.StatusServiceUnavailable
	}
	WriteJSON(w, code, probeBody{State: st.State, Problems: st.Problems(), Components: st.Components})
}

// serveLiveness answers 200 unless a component reports Error: a starting agent is alive.
func (p *Plugin) serveLiveness(w http.ResponseWriter, _ *http.Request) {
	st := p.status()
	code := http.StatusOK
	if st.State == health.Error {
		code = http.StatusServiceUnavailable
	}
	WriteJSON(w, code, probeBody{State: st.State, Problems: st.Problems()})
}

// WriteJSON writes v as an indented JSON response with the given status code; handlers
// of other plugins use it to answer in the same shape (see infra.WriteJSON).
func WriteJSON(w http.ResponseWriter, code int, v any) { infra.WriteJSON(w, code, v) }

// WriteError answers with {"error": msg} and the given status code.
func WriteError(w http.ResponseWriter, code int, msg string) { infra.WriteError(w, code, msg) }

// serverLogWriter routes the http.Server's own errors (TLS handshakes refused, ...) to
// the plugin log at debug level: a client's mistake is no error of the agent.
type serverLogWriter struct{ log logrus.FieldLogger }

func (w serverLogWriter) Write(b []byte) (int, error) {
	w.log.Debug(strings.TrimSpace(string(b)))
	return len(b), nil
}

// promLogger routes promhttp's errors to the plugin log.
type promLogger struct{ log logrus.FieldLogger }

func (l promLogger) Println(v ...any) { l.log.Error(v...) }

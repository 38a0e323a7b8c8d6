package rest

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Access says who may call a handler.
type Access int

const (
	// Public handlers are read-only views served to anyone who reaches the endpoint
	// (and passes basic-auth when it is configured). Only GET patterns may be public.
	Public Access = iota
	// Admin handlers change state or reveal internals: they are served on loopback only,
	// or with a verified client certificate when mutual TLS is configured.
	Admin
)

// String names the access level, as the audit lines and metrics do.
func (a Access) String() string {
	if a == Admin {
		return "admin"
	}
	return "public"
}

// Reasons of refusal, the label values of contiv_rest_refused_requests_total.
const (
	RefusedNotLoopback = "not-loopback"
	RefusedClientCert  = "no-client-certificate"
	RefusedBasicAuth   = "basic-auth"
	RefusedContentType = "content-type"
	RefusedHostHeader  = "host-header"
	RefusedBodySize    = "body-too-large"
	RefusedAdminSocket = "admin-socket-only"
	// RefusedAuthRateLimit is a client over its failed basic-auth attempts (429).
	RefusedAuthRateLimit = "basic-auth-rate-limit"
	jsonContentType      = "application/json"
	refusedAdminMessage  = "admin endpoint: served on loopback only, or with a verified client certificate when mutual TLS is configured (docs/SECURITY.md)"
)

// Bounds of what a state-changing request may send and of what its audit line quotes.
const (
	// maxStateChangingBody bounds the body of a state-changing request: the audit reads
	// all of it (the handler then reads the same bytes), so that what is logged is what
	// runs. Larger bodies are refused with 413 before the handler runs. The largest
	// body a handler takes today is POST /vpp/command's, 4 KiB (plugins/govppmux).
	maxStateChangingBody = 2 << 20
	// maxAuditQuote bounds a VPP command quoted whole in an audit line; a longer one is
	// quoted up to maxAuditStart bytes, with its length and SHA-256.
	maxAuditQuote = 4096
	// maxAuditStart is how much of a body that is not decoded (or of an overlong
	// command) an audit line quotes, next to its length and SHA-256.
	maxAuditStart = 512
)

// RegisterPublic registers a read-only handler for a ServeMux pattern with a GET method
// ("GET /contiv/v1/ipam"). It panics on a pattern without GET: a registration mistake,
// like ServeMux's conflicting patterns. It may be called before or after Init.
func (p *Plugin) RegisterPublic(pattern string, handler http.HandlerFunc) {
	p.register(pattern, handler, Public)
}

// RegisterAdmin registers a handler that changes state or reveals internals
// ("POST /vpp/command", "GET /scheduler/dump"). The pattern must name its method; a
// state-changing one must be POST, PUT or DELETE. It may be called before or after Init.
func (p *Plugin) RegisterAdmin(pattern string, handler http.HandlerFunc) {
	p.register(pattern, handler, Admin)
}

// Public returns a registrar for plugins that take an infra.HandlerRegistrar: what
// they register through it is public.
func (p *Plugin) Public() infra.HandlerRegistrar { return registrar{p, Public} }

// Admin returns a registrar for plugins that take an infra.HandlerRegistrar: what they
// register through it is admin-only.
func (p *Plugin) Admin() infra.HandlerRegistrar { return registrar{p, Admin} }

type registrar struct {
	p   *Plugin
	acc Access
}

func (r registrar) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	r.p.register(pattern, handler, r.acc)
}

func (p *Plugin) register(pattern string, handler http.HandlerFunc, acc Access) {
	method, _, ok := strings.Cut(pattern, " ")
	if !ok || strings.HasPrefix(method, "/") {
		panic(fmt.Sprintf("rest: pattern %q: name the method (\"GET /path\")", pattern))
	}
	switch {
	case method == http.MethodGet:
	case acc == Public:
		panic(fmt.Sprintf("rest: pattern %q: public handlers are GET only; register it with RegisterAdmin", pattern))
	case method != http.MethodPost && method != http.MethodPut && method != http.MethodDelete:
		panic(fmt.Sprintf("rest: pattern %q: state-changing handlers use POST, PUT or DELETE", pattern))
	}
	if p.mux == nil {
		p.mux = http.NewServeMux()
	}
	if p.metrics == nil {
		p.metrics = newAccessMetrics()
	}
	p.mux.Handle(pattern, &guarded{p: p, pattern: pattern, acc: acc, next: handler})
}

// guarded applies the access rules of the package doc before calling next.
type guarded struct {
	p       *Plugin
	pattern string
	acc     Access
	next    http.HandlerFunc
}

func (g *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := g.p
	client := authClient(r)
	if len(p.users) > 0 && !p.limitAuthFailures(w, r, client) {
		return
	}
	user, ok := p.authenticate(r)
	if !ok {
		p.refuse(w, r, RefusedBasicAuth, http.StatusUnauthorized, "basic-auth: valid credentials required")
		return
	}
	if len(p.users) > 0 {
		p.authLimit.succeeded(client)
	}
	if g.acc == Admin {
		if reason := p.adminRefusal(r); reason != "" {
			p.refuse(w, r, reason, http.StatusForbidden, p.adminRefusalMessage(reason))
			return
		}
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		g.next(w, r)
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != jsonContentType {
		p.refuse(w, r, RefusedContentType, http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Type: %q: state-changing requests must send application/json", r.Header.Get("Content-Type")))
		return
	}
	g.serveAudited(w, r, user)
}

// serveAudited runs a state-changing request and writes its audit line. The whole body
// is read first (up to maxStateChangingBody) and handed to the handler as read, so that
// the line names what the handler got: the VPP command as decoded for POST /vpp/command,
// the body's start, length and SHA-256 otherwise. A request that only reads
// (a VPP "show" command) gets a debug line instead and is not counted.
func (g *guarded) serveAudited(w http.ResponseWriter, r *http.Request, user string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxStateChangingBody+1))
	if err != nil {
		g.p.Log.WithFields(logrus.Fields{"caller": caller(r), "path": r.URL.Path}).WithError(err).
			Debug("REST request body not read; handler not run")
		WriteError(w, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	if len(body) > maxStateChangingBody {
		g.p.refuse(w, r, RefusedBodySize, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body larger than %d bytes", maxStateChangingBody))
		return
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{bytes.NewReader(body), r.Body}
	fields, readOnly := describeRequest(g.pattern, body)
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	g.next(rec, r)
	fields["caller"] = caller(r)
	fields["user"] = user
	fields["method"] = r.Method
	fields["path"] = r.URL.RequestURI()
	fields["status"] = rec.code
	if readOnly {
		g.p.Log.WithFields(fields).Debug("read-only request over REST")
		return
	}
	fields["audit"] = true
	g.p.Log.WithFields(fields).Info("state-changing request over REST")
	g.p.metrics.stateChanging.WithLabelValues(g.pattern, strconv.Itoa(rec.code)).Inc()
}

// describeRequest returns the audit fields that say what a state-changing request
// asked, and whether it only reads. POST /vpp/command is described by its command as
// decoded (the handler decodes the same bytes the same way), whatever the body's
// whitespace, padding or key order; any other body, or one that holds no command, by
// its start, length and SHA-256.
func describeRequest(pattern string, body []byte) (fields logrus.Fields, readOnly bool) {
	if pattern == VPPCommandPattern {
		if cmd, ok := decodeVPPCommand(body); ok {
			return quote("command", cmd, maxAuditQuote), ReadOnlyVPPCLI(cmd)
		}
	}
	return quote("body", string(body), maxAuditStart), false
}

// quote returns the fields <name> (s whole when at most limit bytes, else its first
// maxAuditStart bytes and "..."), <name>-bytes and <name>-sha256.
func quote(name, s string, limit int) logrus.Fields {
	sum := sha256.Sum256([]byte(s))
	shown := s
	if len(s) > limit {
		cut := min(maxAuditStart, limit)
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		shown = s[:cut] + "..."
	}
	return logrus.Fields{name: shown, name + "-bytes": len(s), name + "-sha256": hex.EncodeToString(sum[:])}
}

// authenticate checks basic-auth when it is configured; user names the caller for the
// audit line (basic-auth user, else the subject of a verified client certificate).
func (p *Plugin) authenticate(r *http.Request) (user string, ok bool) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		user = "cert:" + r.TLS.VerifiedChains[0][0].Subject.String()
	}
	if len(p.users) == 0 {
		return user, true
	}
	name, pass, given := r.BasicAuth()
	want, known := p.users[name]
	if !given || !known || subtle.ConstantTimeCompare([]byte(pass), []byte(want)) != 1 {
		return "", false
	}
	if user != "" {
		return name + " (" + user + ")", true
	}
	return name, true
}

// adminRefusal returns why an admin request is refused, "" when it may proceed. The
// admin socket serves admin requests to whoever could connect (its file permissions
// decide); TCP serves them with a verified client certificate under mutual TLS, else
// from loopback, unless the admin socket took that over.
func (p *Plugin) adminRefusal(r *http.Request) string {
	if _, ok := SocketPeer(r); ok {
		return ""
	}
	if p.config.MutualTLS() {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			return RefusedClientCert
		}
		return ""
	}
	if p.config.AdminSocket != "" && !p.config.AdminOnLoopback {
		return RefusedAdminSocket
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !isLoopbackAddr(local) || !isLoopbackHostPort(r.RemoteAddr) {
		return RefusedNotLoopback
	}
	// A browser on the node led to a rebinding DNS name would send that name: only
	// loopback names and IP addresses are accepted (no DNS rebinding).
	if !localHostHeader(r.Host) {
		return RefusedHostHeader
	}
	return ""
}

// refuse answers a request the access rules refuse. Refusals are counted, and logged at
// debug level only: whoever sends them (any pod) would otherwise choose the log's volume.
func (p *Plugin) refuse(w http.ResponseWriter, r *http.Request, reason string, code int, msg string) {
	p.metrics.refused.WithLabelValues(reason).Inc()
	p.Log.WithFields(logrus.Fields{
		"caller": caller(r), "method": r.Method, "path": r.URL.Path, "reason": reason,
	}).Debug("REST request refused")
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="contiv-vpp"`)
	}
	WriteError(w, code, msg)
}

// adminRefusalMessage tells the refused client where the admin endpoints are served.
func (p *Plugin) adminRefusalMessage(reason string) string {
	if p.config.AdminSocket != "" {
		return fmt.Sprintf("admin endpoint: served on the unix socket %s (http.conf admin-socket)%s; "+
			"on the node: contiv-netctl --admin-socket %s, or curl --unix-socket %s (docs/SECURITY.md)",
			p.config.AdminSocket, p.adminTCPDescription(), p.config.AdminSocket, p.config.AdminSocket)
	}
	return refusedAdminMessage
}

// adminTCPDescription says who else reaches the admin endpoints over TCP when the
// admin socket is configured ("" for no one).
func (p *Plugin) adminTCPDescription() string {
	switch {
	case p.config.MutualTLS():
		return ", and over TCP to clients with a verified certificate"
	case p.config.AdminOnLoopback:
		return ", and on TCP loopback (admin-on-loopback)"
	}
	return ""
}

// adminAccessDescription says in words who reaches the admin endpoints.
func (p *Plugin) adminAccessDescription() string {
	if p.config.AdminSocket != "" {
		return "unix socket " + p.config.AdminSocket + " (mode " + p.config.adminSocketMode().String() + ")" + p.adminTCPDescription()
	}
	if p.config.MutualTLS() {
		return "clients with a verified certificate"
	}
	return "loopback only"
}

func isLoopbackAddr(a net.Addr) bool {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback()
	}
	return a != nil && isLoopbackHostPort(a.String())
}

func isLoopbackHostPort(hp string) bool {
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		host = hp
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func localHostHeader(h string) bool {
	host, _, err := net.SplitHostPort(h)
	if err != nil {
		host = strings.Trim(h, "[]")
	}
	return host == "localhost" || net.ParseIP(host) != nil
}

// statusRecorder remembers the status code a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flushes).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// accessMetrics counts state-changing requests and refusals.
type accessMetrics struct {
	stateChanging *prometheus.CounterVec
	refused       *prometheus.CounterVec
}

func newAccessMetrics() *accessMetrics {
	return &accessMetrics{
		stateChanging: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_rest_state_changing_requests_total",
			Help: "State-changing REST requests served, by handler pattern and status code.",
		}, []string{"pattern", "code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_rest_refused_requests_total",
			Help: "REST requests refused by the access rules, by reason.",
		}, []string{"reason"}),
	}
}

func (m *accessMetrics) register(reg prometheus.Registerer) error {
	for _, reason := range []string{RefusedNotLoopback, RefusedClientCert, RefusedBasicAuth, RefusedContentType, RefusedHostHeader, RefusedBodySize, RefusedAdminSocket, RefusedAuthRateLimit} {
		m.refused.WithLabelValues(reason) // exported at 0 from the start
	}
	for _, c := range []prometheus.Collector{m.stateChanging, m.refused} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register REST access metrics: %w", err)
		}
	}
	return nil
}

// Package rest is the agent's HTTP server (default 0.0.0.0:9999). Other plugins register
// their handlers on it (/contiv/v1/ipam, /controller/*, /scheduler/*, ...). It serves
// itself the probes /liveness and /readiness, driven by the aggregated health status, and
// /metrics with the Prometheus Go and process collectors plus the registry that plugins
// register their metrics on (named contiv_<subsystem>_<name>_<unit>).
//
// The server starts listening in Init, so that the probes answer (not ready) while the
// other plugins are still starting; handlers may be registered at any time.
package rest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

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

// Config is the content of http.conf.
type Config struct {
	// Endpoint is the host:port to listen on.
	Endpoint string `json:"endpoint"`
	// ReadHeaderTimeout bounds how long a client may take to send request headers
	// ("10s", or nanoseconds).
	ReadHeaderTimeout infra.Duration `json:"read-header-timeout"`
	// EnablePprof serves Go's profiler under /debug/pprof/ (off by default: it exposes
	// internals and can cost CPU while profiling).
	EnablePprof bool `json:"enable-pprof"`
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
}

// Plugin is the HTTP server plugin.
type Plugin struct {
	Deps

	config   Config
	mux      *http.ServeMux
	server   *http.Server
	listener net.Listener
	served   chan error
}

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps, mux: http.NewServeMux()} }

// String names the plugin.
func (p *Plugin) String() string { return "rest" }

// Init loads http.conf, registers the probes and metrics and starts listening.
func (p *Plugin) Init() error {
	if p.Log == nil {
		p.Log = logrus.StandardLogger()
	}
	p.config = Config{Endpoint: DefaultEndpoint, ReadHeaderTimeout: infra.Duration(10 * time.Second)}
	if p.Config != nil {
		if _, err := p.Config.LoadConfig(&p.config); err != nil {
			return err
		}
	}
	if err := validateEndpoint(p.config.Endpoint); err != nil {
		return err
	}
	if p.config.ReadHeaderTimeout <= 0 {
		return fmt.Errorf("read-header-timeout: %v must be positive", p.config.ReadHeaderTimeout)
	}
	if p.Metrics == nil {
		p.Metrics = prometheus.NewRegistry()
	}
	if err := p.registerStandardCollectors(); err != nil {
		return err
	}

	if p.mux == nil {
		p.mux = http.NewServeMux()
	}
	if p.config.EnablePprof {
		p.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		p.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		p.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		p.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		p.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
		p.Log.Warn("Go profiler served under /debug/pprof/ (enable-pprof)")
	}
	p.mux.HandleFunc("GET "+LivenessPath, p.serveLiveness)
	p.mux.HandleFunc("GET "+ReadinessPath, p.serveReadiness)
	p.mux.Handle("GET "+MetricsPath, promhttp.HandlerFor(p.Metrics, promhttp.HandlerOpts{
		ErrorLog: promLogger{p.Log}, Registry: p.Metrics,
	}))

	ln, err := net.Listen("tcp", p.config.Endpoint)
	if err != nil {
		return fmt.Errorf("endpoint %s: %w", p.config.Endpoint, err)
	}
	p.listener = ln
	p.server = &http.Server{Handler: p.mux, ReadHeaderTimeout: time.Duration(p.config.ReadHeaderTimeout)}
	p.served = make(chan error, 1)
	go func() { p.served <- p.server.Serve(ln) }()
	p.Log.WithField("endpoint", ln.Addr().String()).Info("serving HTTP")
	return nil
}

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
	return err
}

// HandleFunc registers a handler for a ServeMux pattern such as
// "GET /contiv/v1/ipam". It may be called before or after Init.
func (p *Plugin) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	if p.mux == nil {
		p.mux = http.NewServeMux()
	}
	p.mux.HandleFunc(pattern, handler)
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

// promLogger routes promhttp's errors to the plugin log.
type promLogger struct{ log logrus.FieldLogger }

func (l promLogger) Println(v ...any) { l.log.Error(v...) }

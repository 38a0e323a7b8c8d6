package healthcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// DefaultRetryInterval is how often a port that could not be opened is tried again.
const DefaultRetryInterval = 5 * time.Second

// ServerDeps lists what a Server needs.
type ServerDeps struct {
	// Log receives the listen failures (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Clock paces the retries of ports that could not be opened (nil: the real clock).
	Clock clock.WithTicker
	// Host is the address the listeners bind to ("": every address of the node).
	Host string
	// RetryInterval is the pause between two attempts to open a port (0:
	// DefaultRetryInterval).
	RetryInterval time.Duration
	// ProxyHealthy tells whether the agent is healthy (the answer's
	// serviceProxyHealthy; an unhealthy agent answers 503); nil: always healthy.
	ProxyHealthy func() bool
}

// Server runs one HTTP server per health check node port. Its methods are safe for
// concurrent use.
type Server struct {
	ServerDeps

	mu       sync.Mutex
	services map[renderer.ServiceID]*listener
	closed   bool
	pending  int           // services whose port is not open
	wake     chan struct{} // tells the retry loop that a port is pending
	stop     chan struct{}
	done     sync.WaitGroup // the retry loop and the Serve goroutines
}

// listener is the health check of one service.
type listener struct {
	id    renderer.ServiceID
	port  uint16
	count int
	ln    net.Listener // nil while the port is not open
	srv   *http.Server
	err   error // the last failure to open the port
}

// NewServer returns a server without ports; its retry loop runs until Close.
func NewServer(deps ServerDeps) *Server {
	s := &Server{ServerDeps: deps, services: make(map[renderer.ServiceID]*listener),
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	s.Log = infra.LoggerOr(s.Log, "healthcheck")
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.RetryInterval <= 0 {
		s.RetryInterval = DefaultRetryInterval
	}
	s.done.Add(1)
	go s.retryLoop()
	return s
}

// SetPort serves the health check of the service on port (0: none), closing the
// listener of its previous port.
func (s *Server) SetPort(id renderer.ServiceID, port uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.services[id]
	if l != nil && l.port == port {
		return
	}
	count := 0
	if l != nil {
		count = l.count
		s.closeListener(l)
		delete(s.services, id)
	}
	if port == 0 || s.closed {
		return
	}
	l = &listener{id: id, port: port, count: count}
	s.services[id] = l
	if !s.open(l) {
		s.pending++
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Port returns the health check port of the service (0: none).
func (s *Server) Port(id renderer.ServiceID) uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.services[id]; l != nil {
		return l.port
	}
	return 0
}

// SetCount sets the number of local endpoints the health check of the service reports.
func (s *Server) SetCount(id renderer.ServiceID, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.services[id]; l != nil {
		l.count = count
	}
}

// Close closes every listener and stops the retry loop.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var errs []error
	for id, l := range s.services {
		if err := s.closeListener(l); err != nil {
			errs = append(errs, err)
		}
		delete(s.services, id)
	}
	close(s.stop)
	s.mu.Unlock()
	s.done.Wait()
	return errors.Join(errs...)
}

// open opens the port of l and serves it; on failure it logs (the first failure of
// a kind at error level, repeats at debug) and returns false. Called with mu held.
func (s *Server) open(l *listener) bool {
	addr := net.JoinHostPort(s.Host, strconv.Itoa(int(l.port)))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log := s.Log.WithFields(logrus.Fields{"service": l.id.String(), "port": l.port}).WithError(err)
		if l.err == nil || l.err.Error() != err.Error() {
			log.Errorf("health check node port %d of service %s: cannot listen on %s; retrying every %s", l.port, l.id, addr, s.RetryInterval)
		} else {
			log.Debug("health check node port: still cannot listen")
		}
		l.err = err
		return false
	}
	if l.err != nil {
		s.Log.WithFields(logrus.Fields{"service": l.id.String(), "port": l.port}).Info("health check node port open after a retry")
	}
	l.ln, l.err = ln, nil
	l.srv = &http.Server{Handler: &handler{s: s, id: l.id}, ReadHeaderTimeout: 10 * time.Second}
	s.done.Add(1)
	go func(srv *http.Server, ln net.Listener) {
		defer s.done.Done()
		_ = srv.Serve(ln) // returns http.ErrServerClosed once closed
	}(l.srv, ln)
	return true
}

// closeListener stops serving l's port. Called with mu held.
func (s *Server) closeListener(l *listener) error {
	if l.ln == nil {
		s.pending--
		return nil
	}
	err := l.srv.Close()
	l.ln, l.srv = nil, nil
	if err != nil {
		return fmt.Errorf("health check of service %s: close port %d: %w", l.id, l.port, err)
	}
	return nil
}

// retryLoop tries the ports not yet open on every tick (the first one interval after
// a port failed), ticking only while some are pending.
func (s *Server) retryLoop() {
	defer s.done.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		t := s.Clock.NewTicker(s.RetryInterval)
		for pending := true; pending; {
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C():
			}
			pending = s.retryPending()
		}
		t.Stop()
	}
}

// retryPending tries to open the pending ports and tells whether some remain
// pending. The cost is the number of services, only while a port is pending.
func (s *Server) retryPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == 0 || s.closed {
		return false
	}
	for _, l := range s.services {
		if l.ln == nil && s.open(l) {
			s.pending--
		}
	}
	return s.pending > 0
}

// handler answers the health check of one service.
type handler struct {
	s  *Server
	id renderer.ServiceID
}

// payload is the body of an answer, with kube-proxy's field names.
type payload struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

// ServeHTTP answers any request, whatever its path, as kube-proxy does.
func (h *handler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.s.mu.Lock()
	l := h.s.services[h.id]
	count := 0
	if l != nil {
		count = l.count
	}
	h.s.mu.Unlock()
	healthy := h.s.ProxyHealthy == nil || h.s.ProxyHealthy()

	var p payload
	p.Service.Namespace, p.Service.Name = h.id.Namespace, h.id.Name
	p.LocalEndpoints, p.ServiceProxyHealthy = count, healthy
	body, err := json.MarshalIndent(&p, "", "\t")
	if err != nil { // a struct of strings, ints and bools always marshals
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
	if count != 0 && healthy {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(body)
}

// ids returns the services that have a health check port.
func (s *Server) ids() []renderer.ServiceID {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]renderer.ServiceID, 0, len(s.services))
	for id := range s.services {
		ids = append(ids, id)
	}
	return ids
}

// Package etcdtest runs a single-member etcd server inside a test process, for tests
// that need a real etcd (the dbwatcher's watch and reconnect logic, nodesync's node ID
// transactions, end-to-end tests).
//
//	srv := etcdtest.Start(t)                 // fresh data dir, free ports, stopped at cleanup
//	c := srv.Client(t)                       // a client, closed at cleanup
//	cfg := fmt.Sprintf("endpoints: [%q]", srv.Endpoint())
//	srv.Stop(); srv.Start()                  // restart on the same data and port
//
// The server keeps its data in a directory under t.TempDir(), serves clients on
// 127.0.0.1 (plain HTTP, or TLS with WithClientTLS), logs nothing, and uses short raft
// ticks so that it is ready in well under a second.
//
// It is for tests only: it calls t.Fatal on failure and therefore must be used from the
// test goroutine. It is not a fake: nothing of etcd's behaviour is changed.
package etcdtest

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

const (
	// readyTimeout bounds the wait for a started server to elect itself leader.
	readyTimeout = 15 * time.Second
	// bindAttempts and bindRetryDelay bound the wait for a port that a stopped server
	// (or another process) still holds.
	bindAttempts   = 20
	bindRetryDelay = 50 * time.Millisecond
	// freshAttempts is how many times a fresh server picks new ports when its ports were
	// taken between FreePort and the bind.
	freshAttempts = 5
)

// Option adjusts a server before its first start.
type Option func(*options)

// options collects what the Options set.
type options struct {
	serverTLS *transport.TLSInfo
	clientTLS *tls.Config
}

// WithClientTLS makes the server serve clients over TLS with the given certificate
// files (set ClientCertAuth and TrustedCAFile in server to require client
// certificates). client is the configuration Client uses to connect; with nil, Client
// fails the test.
func WithClientTLS(server transport.TLSInfo, client *tls.Config) Option {
	return func(o *options) {
		o.serverTLS = &server
		o.clientTLS = client
	}
}

// Server is an embedded etcd server owned by one test.
type Server struct {
	t    testing.TB
	opts options
	dir  string

	mu         sync.Mutex
	clientPort int // the usual client port (Endpoint)
	peerPort   int
	srv        *embed.Etcd // nil while stopped
}

// Start starts a fresh server and registers its Stop with t.Cleanup.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, dir: filepath.Join(t.TempDir(), "etcd")}
	for _, o := range opts {
		o(&s.opts)
	}
	var err error
	for range freshAttempts {
		s.clientPort, s.peerPort = FreePort(t), FreePort(t)
		var srv *embed.Etcd
		if srv, err = s.launch(s.clientPort); err == nil {
			s.srv = srv
			break
		}
		// The ports were taken meanwhile: start over with new ones and an empty
		// directory, so no member record with the old peer URL survives.
		if rerr := os.RemoveAll(s.dir); rerr != nil {
			t.Fatalf("etcdtest: clean %s: %v", s.dir, rerr)
		}
	}
	if err != nil {
		t.Fatalf("etcdtest: start etcd: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago (for servers to
// start on, or as an endpoint where nothing listens).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Endpoint returns the server's usual client address, "127.0.0.1:<port>", without a
// scheme; it stays the same across Stop and Start.
func (s *Server) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("127.0.0.1:%d", s.clientPort)
}

// Start starts the stopped server again on its data directory and its usual client
// port; it does nothing while the server runs.
func (s *Server) Start() {
	s.t.Helper()
	s.StartOnPort(s.clientPort)
}

// StartOnPort starts the stopped server on its data directory, serving clients on port
// instead of the usual one, so that only clients told that port reach it (Client does).
// Endpoint does not change; Start returns to the usual port. It does nothing while the
// server runs.
func (s *Server) StartOnPort(port int) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return
	}
	var err error
	for range bindAttempts { // a stopped server's ports may be held for a moment
		var srv *embed.Etcd
		if srv, err = s.launch(port); err == nil {
			s.srv = srv
			return
		}
		time.Sleep(bindRetryDelay)
	}
	s.t.Fatalf("etcdtest: restart etcd on port %d: %v", port, err)
}

// Stop stops the server and waits until it is down; it does nothing when stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

// Client returns a client of the running server (on the port it serves now), closed at
// the end of the test.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		t.Fatal("etcdtest: Client called while the server is stopped")
		return nil
	}
	if s.opts.serverTLS != nil && s.opts.clientTLS == nil {
		t.Fatal("etcdtest: the server serves TLS but WithClientTLS gave no client configuration")
		return nil
	}
	scheme := "http"
	if s.opts.serverTLS != nil {
		scheme = "https"
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{scheme + "://" + srv.Clients[0].Addr().String()},
		DialTimeout: 5 * time.Second,
		TLS:         s.opts.clientTLS,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// launch starts etcd on the data directory with clients on clientPort and waits until
// it is ready. It returns an error (instead of failing the test) so callers can retry.
func (s *Server) launch(clientPort int) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = s.dir
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	if s.opts.serverTLS != nil {
		cu.Scheme = "https"
		cfg.ClientTLSInfo = *s.opts.serverTLS
	}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", s.peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-srv.Server.ReadyNotify():
		return srv, nil
	case err := <-srv.Err():
		srv.Close()
		return nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(readyTimeout):
		srv.Close()
		return nil, fmt.Errorf("etcd not ready within %v", readyTimeout)
	}
}

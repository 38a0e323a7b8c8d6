// Package etcdembed runs a single-member etcd server inside the process, on loopback.
// The standalone agent (`contiv-agent -standalone`, what `make run` starts) uses it so
// that the production code path (dbwatcher, nodesync) talks to a real etcd on a laptop
// without any installation. It is not meant for production clusters.
package etcdembed

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options say where the server keeps its data and listens.
type Options struct {
	// Dir is the data directory (created when missing).
	Dir string
	// ClientAddr is host:port for clients; the host must be a loopback IP. Port 0 picks
	// a free port.
	ClientAddr string
	// ReadyTimeout bounds the wait for the server to serve (default 30s).
	ReadyTimeout time.Duration
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
}

// Start starts the server and waits until it serves clients.
func Start(opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("etcd data directory is not set")
	}
	client, err := loopbackURL(opts.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("etcd client address: %w", err)
	}
	peer, err := loopbackURL("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "contiv-standalone"
	cfg.Dir = opts.Dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", opts.Dir, err)
	}
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(timeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s not ready within %v", opts.Dir, timeout)
	}
	return &Server{etcd: e}, nil
}

// loopbackURL resolves port 0 to a free port now, because etcd advertises what it is
// given and a client needs the real port.
func loopbackURL(addr string) (*url.URL, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%q: the embedded etcd listens on loopback only", addr)
	}
	if port == "0" {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port on %s: %w", host, err)
		}
		addr = l.Addr().String()
		l.Close()
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}

// Endpoint is the host:port clients connect to.
func (s *Server) Endpoint() string { return s.etcd.Clients[0].Addr().String() }

// Close stops the server.
func (s *Server) Close() error {
	s.etcd.Close()
	return nil
}

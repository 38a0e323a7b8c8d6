// Package etcdembed runs a single-member etcd server inside the process, on loopback.
// The standalone agent (`contiv-agent -standalone`, what `make run` starts) uses it so
// that the production code path (dbwatcher, nodesync) talks to a real etcd on a laptop
// without any installation. It is not meant for production clusters.
//
// Like the manifests' etcd (k8s/contiv-vpp/templates/etcd.yaml), it runs with a backend
// quota (past it etcd refuses writes with "mvcc: database space exceeded" instead of
// filling the disk) and periodic auto-compaction (the history of older revisions is
// dropped, so a key rewritten in a loop does not grow the database without bound).
// etcd's own log goes to the caller's logger (errors): etcd ends the
// process on some failures (zap's Fatal), and that must never be silent. Start checks
// the open files limit that etcd would otherwise exit on.
package etcdembed

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
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
	// QuotaBackendBytes is the size past which etcd refuses writes (0:
	// DefaultQuotaBackendBytes).
	QuotaBackendBytes int64
	// AutoCompactionRetention is the history kept by periodic compaction (0:
	// DefaultAutoCompactionRetention).
	AutoCompactionRetention time.Duration
	// Log receives etcd's warnings and errors (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
}

// Defaults of Options, the values of the manifests' etcd (values.yaml etcd.quotaBackendBytes
// and etcd.autoCompactionRetention).
const (
	DefaultQuotaBackendBytes       = 1 << 30
	DefaultAutoCompactionRetention = time.Hour
)

// MinOpenFiles is the open files limit (RLIMIT_NOFILE) below which etcd refuses to
// serve: embed.StartEtcd (configureClientListeners, etcd v3.6) ends the process with
// zap's Fatal when the limit is at most its reservedInternalFDNum, 150, and limits its
// client connections to the limit less 150.
const MinOpenFiles = 151

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
	if err := checkOpenFiles(); err != nil {
		return nil, err
	}
	cfg.QuotaBackendBytes = opts.QuotaBackendBytes
	if cfg.QuotaBackendBytes <= 0 {
		cfg.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	retention := opts.AutoCompactionRetention
	if retention <= 0 {
		retention = DefaultAutoCompactionRetention
	}
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = embed.CompactorModePeriodic, retention.String()
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(&logrusCore{log: infra.LoggerOr(opts.Log, "embedded-etcd")}))
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

// checkOpenFiles refuses to start etcd under MinOpenFiles open files: etcd would end
// the process (see MinOpenFiles).
func checkOpenFiles() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // etcd cannot read it either, and does not check then
	}
	if lim.Cur < MinOpenFiles {
		return fmt.Errorf("embedded etcd needs an open files limit (RLIMIT_NOFILE) of at least %d, the process has %d (hard limit %d): raise it (ulimit -n)",
			MinOpenFiles, lim.Cur, lim.Max)
	}
	return nil
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

// logrusCore writes etcd's zap entries of level error and above to a logrus logger, with
// their fields. A fatal entry is logged at error level: zap ends the process after it.
type logrusCore struct {
	log    logrus.FieldLogger
	fields logrus.Fields
}

func (c *logrusCore) Enabled(l zapcore.Level) bool { return l >= zapcore.ErrorLevel }

func (c *logrusCore) With(fields []zapcore.Field) zapcore.Core {
	return &logrusCore{log: c.log, fields: c.merge(fields)}
}

func (c *logrusCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *logrusCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	c.log.WithFields(c.merge(fields)).Error("etcd: " + ent.Message)
	return nil
}

func (c *logrusCore) Sync() error { return nil }

// merge returns the core's fields with fields added.
func (c *logrusCore) merge(fields []zapcore.Field) logrus.Fields {
	enc := zapcore.NewMapObjectEncoder()
	for k, v := range c.fields {
		enc.Fields[k] = v
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	return enc.Fields
}

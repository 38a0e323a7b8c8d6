package ksr

import (
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdconf"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	restplugin "github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// DefaultHTTPEndpoint is where contiv-ksr serves its probes and metrics unless http.conf
// says otherwise (the contiv-ksr-http-cfg ConfigMap says the same).
const DefaultHTTPEndpoint = "0.0.0.0:9191"

// Defaults of etcd.conf for contiv-ksr.
const (
	// DefaultEtcdEndpoint is used when etcd.conf lists no endpoint or does not exist.
	DefaultEtcdEndpoint = "127.0.0.1:2379"
	// DefaultDialTimeout bounds connection attempts.
	DefaultDialTimeout = 10 * time.Second
	// DefaultOperationTimeout bounds every etcd request.
	DefaultOperationTimeout = 3 * time.Second
	// DefaultReconnectInterval is how often etcd is probed to notice that it went away
	// and came back.
	DefaultReconnectInterval = time.Second
)

// Duration is a duration in the configuration file: nanoseconds or a string like "5s".
type Duration = infra.Duration

// EtcdConfig is etcd.conf as contiv-ksr reads it: the keys of the Ligato etcd plugin
// that upstream contiv-ksr was configured with (ConfigMap contiv-etcd-withcompact-cfg).
type EtcdConfig struct {
	// Endpoints are the etcd client URLs, "host:port" or "http(s)://host:port".
	Endpoints []string `json:"endpoints"`
	// DialTimeout bounds each connection attempt; 0 means DefaultDialTimeout.
	DialTimeout Duration `json:"dial-timeout"`
	// OperationTimeout bounds every request; 0 means DefaultOperationTimeout.
	OperationTimeout Duration `json:"operation-timeout"`
	// Security holds the TLS keys (insecure-transport, insecure-skip-tls-verify,
	// cert-file, key-file, ca-file).
	etcdconf.Security
	// AllowDelayedStart is accepted for compatibility: contiv-ksr always starts without
	// etcd and campaigns once etcd answers.
	AllowDelayedStart bool `json:"allow-delayed-start"`
	// ReconnectInterval is how often etcd is probed; 0 means DefaultReconnectInterval.
	ReconnectInterval Duration `json:"reconnect-interval"`
	// AutoCompact, when set, makes the leader compact the etcd history at this period,
	// keeping the revisions of the last period (so watchers lagging less than that do
	// not lose events). 0 disables compaction.
	AutoCompact Duration `json:"auto-compact"`
}

// Validate checks the configuration and names the offending key.
func (c *EtcdConfig) Validate() error {
	for i, ep := range c.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return fmt.Errorf("endpoints[%d]: empty", i)
		}
	}
	for key, d := range map[string]Duration{
		"dial-timeout": c.DialTimeout, "operation-timeout": c.OperationTimeout,
		"reconnect-interval": c.ReconnectInterval, "auto-compact": c.AutoCompact,
	} {
		if d < 0 {
			return fmt.Errorf("%s: %v is negative", key, time.Duration(d))
		}
	}
	return c.Security.Validate(c.Endpoints)
}

func (c *EtcdConfig) withDefaults() EtcdConfig {
	out := *c
	if len(out.Endpoints) == 0 {
		out.Endpoints = []string{DefaultEtcdEndpoint}
	}
	if out.DialTimeout == 0 {
		out.DialTimeout = Duration(DefaultDialTimeout)
	}
	if out.OperationTimeout == 0 {
		out.OperationTimeout = Duration(DefaultOperationTimeout)
	}
	if out.ReconnectInterval == 0 {
		out.ReconnectInterval = Duration(DefaultReconnectInterval)
	}
	return out
}

// loadEtcdConfig reads etcd.conf (defaults when the loader finds none).
func loadEtcdConfig(loader infra.ConfigLoader) (EtcdConfig, error) {
	var cfg EtcdConfig
	if loader != nil {
		if _, err := loader.LoadConfig(&cfg); err != nil {
			return cfg, fmt.Errorf("etcd config: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("etcd config: %w", err)
	}
	return cfg.withDefaults(), nil
}

// newEtcdClient connects to etcd; the client reconnects by itself, so this does not
// wait for etcd to answer.
func newEtcdClient(cfg EtcdConfig) (*clientv3.Client, error) {
	tlsCfg, err := cfg.TLSConfig(cfg.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("etcd config: %w", err)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: time.Duration(cfg.DialTimeout),
		TLS:         tlsCfg,
		Logger:      zap.NewNop(),
		// Retry a lost connection at least every reconnect-interval, not with gRPC's
		// default backoff of up to two minutes: the resync after a reconnect is what
		// repairs etcd.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2,
				MaxDelay: time.Duration(cfg.ReconnectInterval),
			},
			MinConnectTimeout: time.Duration(cfg.DialTimeout),
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	return c, nil
}

// newKubeClient builds the Kubernetes client from a kubeconfig file, or from the
// in-cluster service account when path is empty.
func newKubeClient(path string) (kubernetes.Interface, error) {
	var (
		cfg *rest.Config
		err error
	)
	if path == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster Kubernetes config (outside a pod, set -kube-config): %w", err)
		}
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
	}
	cfg.UserAgent = "contiv-ksr"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}

// HTTPConfig returns the configuration of contiv-ksr's HTTP server (plugins/rest):
// http.conf read by file (which may be nil) over the default endpoint
// DefaultHTTPEndpoint instead of the agent's.
func HTTPConfig(file infra.ConfigLoader) infra.ConfigLoader { return httpConfig{file} }

type httpConfig struct{ file infra.ConfigLoader }

func (h httpConfig) LoadConfig(out any) (bool, error) {
	if c, ok := out.(*restplugin.Config); ok {
		c.Endpoint = DefaultHTTPEndpoint
	}
	if h.file == nil {
		return false, nil
	}
	return h.file.LoadConfig(out)
}

package dbwatcher

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdconf"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Defaults of etcd.conf and bolt.conf (those of the Ligato plugins upstream used).
const (
	// DefaultDialTimeout bounds the first connection attempt when allow-delayed-start
	// is false.
	DefaultDialTimeout = time.Second
	// DefaultOperationTimeout bounds every etcd request (probe, list).
	DefaultOperationTimeout = 3 * time.Second
	// DefaultBoltPath is where the local mirror of the Kubernetes state is kept.
	DefaultBoltPath = "/var/bolt/bolt.db"
	// DefaultBoltLockTimeout bounds the wait for the bolt file's lock when lock-timeout
	// is 0 (upstream's value, which waited forever).
	DefaultBoltLockTimeout = 10 * time.Second
	// DefaultBoltFileMode is the permission of a new bolt file (0660, written 432 in
	// bolt.conf).
	DefaultBoltFileMode = 0o660
)

// Duration is a duration in the configuration file: nanoseconds or a string like "5s".
type Duration = infra.Duration

// EtcdConfig is the content of etcd.conf, with the keys of the Ligato etcd plugin.
type EtcdConfig struct {
	// Endpoints are the etcd client URLs, "host:port" or "http(s)://host:port".
	Endpoints []string `json:"endpoints"`
	// DialTimeout bounds the connection check made by Init when AllowDelayedStart is
	// false; 0 means DefaultDialTimeout.
	DialTimeout Duration `json:"dial-timeout"`
	// OperationTimeout bounds every request; 0 means DefaultOperationTimeout.
	OperationTimeout Duration `json:"operation-timeout"`
	// Security holds the TLS keys (insecure-transport, insecure-skip-tls-verify,
	// cert-file, key-file, ca-file).
	etcdconf.Security
	// AllowDelayedStart lets the agent start while etcd is unreachable (it then runs from
	// the local mirror and connects later); otherwise Init fails.
	AllowDelayedStart bool `json:"allow-delayed-start"`
}

// dialTimeout returns the effective dial timeout.
func (c *EtcdConfig) dialTimeout() time.Duration {
	if c.DialTimeout == 0 {
		return DefaultDialTimeout
	}
	return time.Duration(c.DialTimeout)
}

// operationTimeout returns the effective operation timeout.
func (c *EtcdConfig) operationTimeout() time.Duration {
	if c.OperationTimeout == 0 {
		return DefaultOperationTimeout
	}
	return time.Duration(c.OperationTimeout)
}

// Validate checks the configuration and names the offending key.
func (c *EtcdConfig) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("endpoints: at least one endpoint is required")
	}
	for i, ep := range c.Endpoints {
		if err := validateEndpoint(ep); err != nil {
			return fmt.Errorf("endpoints[%d] %q: %w", i, ep, err)
		}
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("dial-timeout: %v is negative", time.Duration(c.DialTimeout))
	}
	if c.OperationTimeout < 0 {
		return fmt.Errorf("operation-timeout: %v is negative", time.Duration(c.OperationTimeout))
	}
	return c.Security.Validate(c.Endpoints)
}

// validateEndpoint accepts host:port and http(s)://host:port.
func validateEndpoint(ep string) error {
	hostPort := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("scheme %q is not http or https", u.Scheme)
		}
		if u.Path != "" && u.Path != "/" {
			return fmt.Errorf("unexpected path %q", u.Path)
		}
		hostPort = u.Host
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if host == "" {
		return errors.New("empty host")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("port %q is not in 1-65535", port)
	}
	return nil
}

// BoltConfig is the content of bolt.conf, with the keys of the Ligato bolt plugin.
type BoltConfig struct {
	// DBPath is the bolt file; its directory is created when missing.
	DBPath string `json:"db-path"`
	// FileMode is the permission of a new file, in decimal in the file (432 = 0660).
	FileMode uint32 `json:"file-mode"`
	// LockTimeout bounds the wait for the file lock held by another process; 0 (the
	// value upstream ships) means DefaultBoltLockTimeout. Upstream waited forever: an
	// agent alive but stuck in Init, with nothing said. After the timeout Init fails
	// naming the file and the process holding the lock.
	LockTimeout Duration `json:"lock-timeout"`
}

// lockTimeout returns the effective lock timeout.
func (c *BoltConfig) lockTimeout() time.Duration {
	if c.LockTimeout == 0 {
		return DefaultBoltLockTimeout
	}
	return time.Duration(c.LockTimeout)
}

// DefaultBoltConfig returns the defaults of bolt.conf.
func DefaultBoltConfig() BoltConfig {
	return BoltConfig{DBPath: DefaultBoltPath, FileMode: DefaultBoltFileMode}
}

// Validate checks the configuration and names the offending key.
func (c *BoltConfig) Validate() error {
	if c.DBPath == "" {
		return errors.New("db-path: must not be empty")
	}
	if c.FileMode == 0 || c.FileMode > 0o777 {
		return fmt.Errorf("file-mode: %d (%#o) is not a permission between 1 and 511 (0777)", c.FileMode, c.FileMode)
	}
	if c.LockTimeout < 0 {
		return fmt.Errorf("lock-timeout: %v is negative", time.Duration(c.LockTimeout))
	}
	return nil
}

// Package etcdconf holds the transport-security part of etcd.conf, shared by every
// etcd client of the project (the agent's database watcher and contiv-ksr): the TLS
// keys of the Ligato etcd plugin, their validation and the resulting tls.Config.
package etcdconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Security is the transport part of etcd.conf. Embedded in a config struct, its keys sit
// at the top level of the file, as in upstream's etcd.conf.
type Security struct {
	// InsecureTransport disables TLS; no TLS key may then be set.
	InsecureTransport bool `json:"insecure-transport"`
	// InsecureSkipTLSVerify accepts any server certificate (TLS without verification).
	InsecureSkipTLSVerify bool `json:"insecure-skip-tls-verify"`
	// CertFile is the client certificate (PEM); KeyFile must be set with it.
	CertFile string `json:"cert-file"`
	// KeyFile is the private key of CertFile (PEM).
	KeyFile string `json:"key-file"`
	// CAFile holds the CA certificates (PEM) the server certificate is checked against;
	// empty means the system roots.
	CAFile string `json:"ca-file"`
}

// UseTLS says whether connections are encrypted: when a TLS key is set or an endpoint
// is https://, and insecure-transport is not set.
func (s *Security) UseTLS(endpoints []string) bool {
	if s.InsecureTransport {
		return false
	}
	if s.CertFile != "" || s.KeyFile != "" || s.CAFile != "" || s.InsecureSkipTLSVerify {
		return true
	}
	for _, ep := range endpoints {
		if strings.HasPrefix(ep, "https://") {
			return true
		}
	}
	return false
}

// Validate checks that the keys agree with each other and with the endpoints, naming
// the offending key.
func (s *Security) Validate(endpoints []string) error {
	if s.InsecureTransport {
		for i, ep := range endpoints {
			if strings.HasPrefix(ep, "https://") {
				return fmt.Errorf("endpoints[%d] %q: https endpoint but insecure-transport is true", i, ep)
			}
		}
		for _, kv := range []struct{ key, val string }{{"cert-file", s.CertFile}, {"key-file", s.KeyFile}, {"ca-file", s.CAFile}} {
			if kv.val != "" {
				return fmt.Errorf("%s: set although insecure-transport is true", kv.key)
			}
		}
		if s.InsecureSkipTLSVerify {
			return errors.New("insecure-skip-tls-verify: set although insecure-transport is true")
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("cert-file and key-file: set both or neither")
	}
	return nil
}

// TLSConfig builds the client TLS configuration, or nil when TLS is off. Errors name
// the key and the file.
func (s *Security) TLSConfig(endpoints []string) (*tls.Config, error) {
	if !s.UseTLS(endpoints) {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Only when the operator asked for it explicitly (insecure-skip-tls-verify).
		InsecureSkipVerify: s.InsecureSkipTLSVerify,
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cert-file %s, key-file %s: %w", s.CertFile, s.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca-file %s: no PEM certificate found", s.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

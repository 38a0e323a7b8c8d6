package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// DefaultConfigPath is where netctl looks for its configuration when neither
// --config nor CONTIV_NETCTL_CONFIG names one: what `make run` (contiv-agent
// -standalone -standalone-dir=.run/standalone) writes, relative to the repository. It
// is looked for in the working directory and its parents, then beside the directory of
// the netctl binary (bin/contiv-netctl of the repository): see findDefaultConfig.
const DefaultConfigPath = ".run/standalone/netctl.conf"

// ConfigEnv names the configuration file, like --config.
const ConfigEnv = "CONTIV_NETCTL_CONFIG"

// BasicAuthEnv holds "user:password" for agents with basic-auth, like --basic-auth
// (an environment variable keeps the password out of the shell history and ps).
const BasicAuthEnv = "CONTIV_NETCTL_BASIC_AUTH"

// DefaultAgentPort is the agents' REST port (http.conf endpoint 0.0.0.0:9999).
const DefaultAgentPort = 9999

// DefaultAdminSocket is where the manifest's agents serve their admin API (http.conf
// admin-socket): netctl run on a node uses it for that node's agent when it exists.
const DefaultAdminSocket = "/var/run/contiv/admin.sock"

// NoAdminSocket as admin-socket makes netctl reach the agent of its own node over TCP
// loopback, socket or not (agents with admin-on-loopback, or without admin-socket).
const NoAdminSocket = "none"

// unixScheme starts an agent address that is a unix socket ("unix:///path").
const unixScheme = "unix://"

// Config is netctl.conf (YAML). Flags override it key by key.
type Config struct {
	// EtcdConfig is the etcd.conf (the agents' format) of the cluster's etcd; a relative
	// path is relative to the directory of netctl.conf.
	EtcdConfig string `json:"etcd-config"`
	// Agents maps node names to the base URL of their agent's REST API, or to its admin
	// socket (unix:///var/run/contiv/admin.sock); other nodes are reached at
	// <scheme>://<node IP>:<agent-port>, the node netctl runs on at its admin socket.
	Agents map[string]string `json:"agents"`
	// AdminSocket is the agents' admin socket (http.conf admin-socket), which netctl
	// uses for the agent of the node it runs on; empty: DefaultAdminSocket when it
	// exists, else TCP loopback; NoAdminSocket: TCP loopback.
	AdminSocket string `json:"admin-socket"`
	// AgentPort is the agents' REST port; 0 means DefaultAgentPort.
	AgentPort int `json:"agent-port"`
	// AgentTLS makes netctl reach agents not listed in Agents over https.
	AgentTLS bool `json:"agent-tls"`
	// CAFile verifies the agents' server certificates (PEM); empty: system roots.
	CAFile string `json:"ca-file"`
	// CertFile and KeyFile are netctl's client certificate for agents with mutual TLS
	// (http.conf client-cert-files): without one, their admin endpoints refuse netctl.
	CertFile string `json:"cert-file"`
	KeyFile  string `json:"key-file"`
	// InsecureSkipTLSVerify accepts any agent certificate.
	InsecureSkipTLSVerify bool `json:"insecure-skip-tls-verify"`
	// BasicAuth is "user:password" for agents with basic-auth.
	BasicAuth string `json:"basic-auth"`
	// Timeout bounds each request to etcd or an agent; 0 means 10s.
	Timeout infra.Duration `json:"timeout"`
}

// findDefaultConfig looks for DefaultConfigPath under dir and each of its parents, then
// under the parent of exeDir (the repository of bin/contiv-netctl); exeDir "" skips that.
// It returns the first file found ("" if none) and every path it tried, in order. In a
// directory that has the netctl.conf of other demo nodes too (.run/standalone-<node>/,
// MICROSERVICE_LABEL=<node> make run), the newest is taken: the one of the agent
// started last.
func findDefaultConfig(dir, exeDir string) (found string, tried []string) {
	exists := func(p string) bool {
		if newest := newestDemoConfig(filepath.Dir(filepath.Dir(p))); newest != "" {
			p = newest
		}
		st, err := os.Stat(p)
		if err == nil && !st.IsDir() {
			found = p
			return true
		}
		return false
	}
	for d := dir; ; {
		p := filepath.Join(d, DefaultConfigPath)
		tried = append(tried, p)
		if exists(p) {
			return found, tried
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if exeDir != "" {
		p := filepath.Join(filepath.Dir(exeDir), DefaultConfigPath)
		if !slices.Contains(tried, p) {
			tried = append(tried, p)
			if exists(p) {
				return found, tried
			}
		}
	}
	return "", tried
}

// newestDemoConfig returns the most recently written netctl.conf of the demo's data
// directories under runDir (standalone, standalone-<node>), "" if there is none.
func newestDemoConfig(runDir string) string {
	matches, _ := filepath.Glob(filepath.Join(runDir, filepath.Base(filepath.Dir(DefaultConfigPath))+"*", filepath.Base(DefaultConfigPath)))
	newest, newestTime := "", time.Time{}
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && !st.IsDir() && st.ModTime().After(newestTime) {
			newest, newestTime = m, st.ModTime()
		}
	}
	return newest
}

// loadConfig reads the file named by path (explicit: it must exist), or the default
// file when it exists; no file gives the zero Config.
func loadConfig(path string, explicit bool) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return c, nil
		}
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := infra.ParseConfig(data, &c, true, nil); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if c.EtcdConfig != "" && !filepath.IsAbs(c.EtcdConfig) {
		c.EtcdConfig = filepath.Join(filepath.Dir(path), c.EtcdConfig)
	}
	return c, nil
}

// validate checks the keys, naming the offending one.
func (c *Config) validate() error {
	if c.AgentPort < 0 || c.AgentPort > 65535 {
		return fmt.Errorf("agent-port: %d is not a port number", c.AgentPort)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("cert-file and key-file: set both or neither")
	}
	if c.BasicAuth != "" {
		if u, p, ok := strings.Cut(c.BasicAuth, ":"); !ok || u == "" || p == "" {
			return fmt.Errorf("basic-auth: %q is not user:password", u)
		}
	}
	for node, url := range c.Agents {
		if sock, ok := strings.CutPrefix(url, unixScheme); ok {
			if !filepath.IsAbs(sock) {
				return fmt.Errorf("agents[%s]: %q: the socket path must be absolute (unix:///var/run/contiv/admin.sock)", node, url)
			}
			continue
		}
		if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
			return fmt.Errorf("agents[%s]: %q must start with http://, https:// or unix://", node, url)
		}
	}
	if c.AdminSocket != "" && c.AdminSocket != NoAdminSocket && !filepath.IsAbs(c.AdminSocket) {
		return fmt.Errorf("admin-socket: %q must be an absolute path (or %q)", c.AdminSocket, NoAdminSocket)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout: %v is negative", time.Duration(c.Timeout))
	}
	return nil
}

func (c *Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return 10 * time.Second
	}
	return time.Duration(c.Timeout)
}

// httpClient builds the client for the agents' REST APIs.
func (c *Config) httpClient() (*http.Client, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipTLSVerify}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca-file %s: no PEM certificate found", c.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cert-file %s, key-file %s: %w", c.CertFile, c.KeyFile, err)
		}
		tlsConf.Certificates = []tls.Certificate{pair}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	return &http.Client{Transport: tr, Timeout: c.timeout()}, nil
}

// socketClient builds the client for an agent's admin socket: plain HTTP over the
// unix socket at path, whatever the request's host.
func (c *Config) socketClient(path string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}
	return &http.Client{Transport: tr, Timeout: c.timeout()}
}

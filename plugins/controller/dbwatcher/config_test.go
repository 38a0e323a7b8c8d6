package dbwatcher

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdconf"
	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

func TestEtcdConfigParsesLigatoKeys(t *testing.T) {
	var cfg EtcdConfig
	l := loader(`
endpoints:
  - "172.30.1.2:32379"
  - "https://etcd.kube-system:2379"
dial-timeout: 10000000000
operation-timeout: 2s
insecure-skip-tls-verify: true
cert-file: /etc/etcd/client.pem
key-file: /etc/etcd/client-key.pem
ca-file: /etc/etcd/ca.pem
allow-delayed-start: true
`)
	if _, err := l.LoadConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Endpoints) != 2 || cfg.dialTimeout() != 10*time.Second || cfg.operationTimeout() != 2*time.Second ||
		!cfg.InsecureSkipTLSVerify || cfg.CertFile != "/etc/etcd/client.pem" || cfg.KeyFile != "/etc/etcd/client-key.pem" ||
		cfg.CAFile != "/etc/etcd/ca.pem" || !cfg.AllowDelayedStart || cfg.InsecureTransport {
		t.Errorf("parsed %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if !cfg.UseTLS(cfg.Endpoints) {
		t.Error("TLS off although files are set")
	}
	empty := EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}}
	if empty.dialTimeout() != DefaultDialTimeout || empty.operationTimeout() != DefaultOperationTimeout || empty.UseTLS(empty.Endpoints) {
		t.Errorf("defaults: dial %v op %v tls %v", empty.dialTimeout(), empty.operationTimeout(), empty.UseTLS(empty.Endpoints))
	}
}

func TestEtcdConfigValidationNamesTheKey(t *testing.T) {
	ok := func(c *EtcdConfig) {}
	tests := []struct {
		name   string
		modify func(*EtcdConfig)
		want   string // "" = valid
	}{
		{"valid", ok, ""},
		{"URL endpoint", func(c *EtcdConfig) { c.Endpoints = []string{"http://10.0.0.1:2379"} }, ""},
		{"IPv6 endpoint", func(c *EtcdConfig) { c.Endpoints = []string{"[fd00::1]:2379"} }, ""},
		{"no endpoints", func(c *EtcdConfig) { c.Endpoints = nil }, "endpoints"},
		{"empty endpoint", func(c *EtcdConfig) { c.Endpoints = []string{""} }, "endpoints[0]"},
		{"no port", func(c *EtcdConfig) { c.Endpoints = []string{"127.0.0.1:2379", "etcd"} }, "endpoints[1]"},
		{"bad port", func(c *EtcdConfig) { c.Endpoints = []string{"etcd:99999"} }, "endpoints[0]"},
		{"bad scheme", func(c *EtcdConfig) { c.Endpoints = []string{"ftp://etcd:2379"} }, "endpoints[0]"},
		{"https with insecure transport", func(c *EtcdConfig) {
			c.Endpoints = []string{"https://etcd:2379"}
			c.InsecureTransport = true
		}, "insecure-transport"},
		{"negative dial timeout", func(c *EtcdConfig) { c.DialTimeout = -1 }, "dial-timeout"},
		{"negative operation timeout", func(c *EtcdConfig) { c.OperationTimeout = Duration(-time.Second) }, "operation-timeout"},
		{"cert without key", func(c *EtcdConfig) { c.CertFile = "c.pem" }, "key-file"},
		{"key without cert", func(c *EtcdConfig) { c.KeyFile = "k.pem" }, "cert-file"},
		{"CA with insecure transport", func(c *EtcdConfig) {
			c.InsecureTransport = true
			c.CAFile = "ca.pem"
		}, "ca-file"},
		{"skip verify with insecure transport", func(c *EtcdConfig) {
			c.InsecureTransport = true
			c.InsecureSkipTLSVerify = true
		}, "insecure-skip-tls-verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}}
			tt.modify(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestDurationAcceptsNanosecondsAndStrings(t *testing.T) {
	for in, want := range map[string]time.Duration{`3000000000`: 3 * time.Second, `"250ms"`: 250 * time.Millisecond, `0`: 0} {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err != nil || time.Duration(d) != want {
			t.Errorf("%s: got %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`"soon"`, `true`, `1.5`} {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s accepted as %v", in, time.Duration(d))
		}
	}
	if b, _ := Duration(5 * time.Second).MarshalJSON(); string(b) != `"5s"` {
		t.Errorf("marshalled as %s", b)
	}
}

func TestBoltConfigDefaultsAndValidation(t *testing.T) {
	c := DefaultBoltConfig()
	if c.DBPath != "/var/bolt/bolt.db" || c.FileMode != 432 || c.LockTimeout != 0 {
		t.Errorf("defaults %+v", c)
	}
	// 0, the value shipped upstream, waited forever for a lock held by another process
	if got := c.lockTimeout(); got != DefaultBoltLockTimeout || got <= 0 {
		t.Errorf("effective lock timeout of lock-timeout 0 = %v, want the bounded default %v", got, DefaultBoltLockTimeout)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	for name, tt := range map[string]struct {
		c    BoltConfig
		want string
	}{
		"empty path":       {BoltConfig{FileMode: 432}, "db-path"},
		"zero mode":        {BoltConfig{DBPath: "/x"}, "file-mode"},
		"mode beyond 0777": {BoltConfig{DBPath: "/x", FileMode: 0o1777}, "file-mode"},
		"negative timeout": {BoltConfig{DBPath: "/x", FileMode: 432, LockTimeout: -1}, "lock-timeout"},
	} {
		if err := tt.c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one naming %s", name, err, tt.want)
		}
	}
}

func TestInitErrorsNameTheProblem(t *testing.T) {
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	good := etcdConf("127.0.0.1:2379", true)
	tests := []struct {
		name string
		deps Deps
		want string
	}{
		{"no event loop", Deps{}, "event loop"},
		{"bolt path under a file", Deps{EventLoop: newFakeLoop(), BoltConfig: loader("db-path: " + filepath.Join(notADir, "bolt.db"))}, notADir},
		{"bad bolt key", Deps{EventLoop: newFakeLoop(), BoltConfig: loader("file-mode: 4095")}, "file-mode"},
		{"bad etcd key", Deps{EventLoop: newFakeLoop(), BoltConfig: boltConf(dir), NodeName: testNode, EtcdConfig: loader("endpoints: []")}, "endpoints"},
		{"unknown etcd key", Deps{EventLoop: newFakeLoop(), BoltConfig: boltConf(dir), NodeName: testNode, EtcdConfig: loader("endpoint: [x]")}, "endpoint"},
		{"no node name", Deps{EventLoop: newFakeLoop(), BoltConfig: boltConf(dir), EtcdConfig: good}, "node name"},
		{"missing CA file", Deps{EventLoop: newFakeLoop(), BoltConfig: boltConf(dir), NodeName: testNode,
			EtcdConfig: loader("endpoints: [\"127.0.0.1:2379\"]\nca-file: " + filepath.Join(dir, "none.pem"))}, "none.pem"},
		{"negative probing interval", Deps{EventLoop: newFakeLoop(), RemoteDBProbingInterval: -1}, "remoteDBProbingInterval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewDBWatcher(tt.deps)
			err := w.Init()
			if err == nil {
				w.Close()
				t.Fatal("Init succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %q", err, tt.want)
			}
		})
	}
}

func TestInitCreatesBoltDirectoryWithFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "bolt.db")
	w := NewDBWatcher(Deps{EventLoop: newFakeLoop(), BoltConfig: loader(fmt.Sprintf("db-path: %s\nfile-mode: 384\n", path))})
	if err := w.Init(); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}
}

func TestMetricsRegistrationConflictFailsInit(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, nil, dir)
	other := NewDBWatcher(Deps{EventLoop: newFakeLoop(), BoltConfig: boltConf(t.TempDir()), Registerer: h.reg})
	if err := other.Init(); err == nil || !strings.Contains(err.Error(), "metrics") {
		other.Close()
		t.Fatalf("Init error %v, want a metrics registration error", err)
	}
	// The failed watcher must not have removed the first one's metrics.
	h.start(t)
	h.loop.waitForCount(t, 1)
	if n := len(mustGather(t, h)); n == 0 {
		t.Error("metrics of the first watcher are gone")
	}
}

func mustGather(t *testing.T, h *harness) []string {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}

// testPKI writes a CA, a server certificate for 127.0.0.1 and a client certificate.
type testPKI struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p := testPKI{caFile: filepath.Join(dir, "ca.pem")}
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (certFile, keyFile string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
		return certFile, keyFile
	}
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTLSConfigFromFiles(t *testing.T) {
	p := newTestPKI(t)
	c := EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, Security: etcdconf.Security{CertFile: p.clientCert, KeyFile: p.clientKey, CAFile: p.caFile}}
	cfg, err := c.TLSConfig(c.Endpoints)
	if err != nil || cfg == nil || len(cfg.Certificates) != 1 || cfg.RootCAs == nil || cfg.InsecureSkipVerify {
		t.Fatalf("tls config %+v, %v", cfg, err)
	}
	c.CertFile = p.caFile // a certificate without its key
	if _, err := c.TLSConfig(c.Endpoints); err == nil || !strings.Contains(err.Error(), "cert-file") {
		t.Errorf("error %v, want one naming cert-file", err)
	}
	c = EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, Security: etcdconf.Security{CAFile: p.clientKey}} // no certificate in it
	if _, err := c.TLSConfig(c.Endpoints); err == nil || !strings.Contains(err.Error(), "ca-file") {
		t.Errorf("error %v, want one naming ca-file", err)
	}
	c = EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}, Security: etcdconf.Security{InsecureTransport: true}}
	if cfg, err := c.TLSConfig(c.Endpoints); cfg != nil || err != nil {
		t.Errorf("insecure transport gave %v, %v", cfg, err)
	}
}

func TestWatcherConnectsOverMutualTLS(t *testing.T) {
	p := newTestPKI(t)
	te := etcdtest.Start(t, etcdtest.WithClientTLS(
		transport.TLSInfo{CertFile: p.serverCert, KeyFile: p.serverKey, TrustedCAFile: p.caFile, ClientCertAuth: true}, nil))
	ep := (&url.URL{Scheme: "https", Host: te.Endpoint()}).String()

	// Without a client certificate the server refuses the agent.
	noCert := loader(fmt.Sprintf("endpoints: [%q]\nca-file: %s\ndial-timeout: 300ms\n", ep, p.caFile))
	w := NewDBWatcher(Deps{EventLoop: newFakeLoop(), NodeName: testNode, BoltConfig: boltConf(t.TempDir()), EtcdConfig: noCert})
	if err := w.Init(); err == nil {
		w.Close()
		t.Fatal("Init succeeded without a client certificate")
	}

	conf := loader(fmt.Sprintf("endpoints: [%q]\ncert-file: %s\nkey-file: %s\nca-file: %s\n", ep, p.clientCert, p.clientKey, p.caFile))
	h := newHarness(t, conf, t.TempDir())
	h.start(t)
	if r, ok := h.loop.waitForCount(t, 1)[0].(*api.DBResync); !ok || r.Local {
		t.Fatalf("got %v, want a remote resync over TLS", r)
	}
}

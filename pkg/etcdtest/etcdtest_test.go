package etcdtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func put(t *testing.T, c *clientv3.Client, key, val string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, val); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func get(t *testing.T, c *clientv3.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// reachable reports whether a client of endpoint gets an answer within a short time.
func reachable(t *testing.T, endpoint string) bool {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Get(ctx, "probe")
	return err == nil
}

func TestDataSurvivesARestartOnTheSamePort(t *testing.T) {
	srv := Start(t)
	ep := srv.Endpoint()
	put(t, srv.Client(t), "/a", "1")

	srv.Stop()
	srv.Stop() // a second Stop does nothing
	if reachable(t, ep) {
		t.Fatal("stopped server still answers")
	}
	srv.Start()
	srv.Start() // a second Start does nothing
	if srv.Endpoint() != ep {
		t.Errorf("endpoint changed from %s to %s", ep, srv.Endpoint())
	}
	// The first answer of a restarted server may take longer than one probe's 300 ms
	// on a loaded machine: probe until it answers.
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the restarted server answers on its endpoint", func() bool { return reachable(t, ep) })
	if got := get(t, srv.Client(t), "/a"); got != "1" {
		t.Errorf("after the restart /a = %q, want 1", got)
	}
}

func TestStartOnPortHidesTheServerFromTheUsualEndpoint(t *testing.T) {
	srv := Start(t)
	ep := srv.Endpoint()
	srv.Stop()
	srv.StartOnPort(FreePort(t))
	if reachable(t, ep) {
		t.Fatal("server answers on the usual endpoint while moved to another port")
	}
	put(t, srv.Client(t), "/hidden", "x")
	srv.Stop()
	srv.Start()
	if got := get(t, srv.Client(t), "/hidden"); got != "x" {
		t.Errorf("/hidden = %q after moving back", got)
	}
}

func TestServersAreIndependent(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Endpoint() == b.Endpoint() {
		t.Fatalf("both servers on %s", a.Endpoint())
	}
	put(t, a.Client(t), "/k", "a")
	if got := get(t, b.Client(t), "/k"); got != "" {
		t.Errorf("server b sees a's key: %q", got)
	}
}

func TestCleanupStopsTheServer(t *testing.T) {
	var ep string
	t.Run("inner", func(t *testing.T) {
		ep = Start(t).Endpoint()
	})
	if reachable(t, ep) {
		t.Error("server of a finished test still answers")
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert, pool := selfSigned(t, dir)
	srv := Start(t, WithClientTLS(
		transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: certFile, ClientCertAuth: true},
		&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	))
	c := srv.Client(t)
	put(t, c, "/tls", "ok")
	if got := get(t, c, "/tls"); got != "ok" {
		t.Errorf("/tls = %q", got)
	}

	// A client without a certificate is refused.
	noCert, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + srv.Endpoint()},
		DialTimeout: time.Second,
		TLS:         &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer noCert.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := noCert.Get(ctx, "/tls"); err == nil {
		t.Error("a client without a certificate was served")
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 that serves as the CA, the
// server and the client certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert tls.Certificate, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "etcdtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, cert, pool
}

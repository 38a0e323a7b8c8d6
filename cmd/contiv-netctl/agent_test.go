package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// TestNetctlUsesTheAgentsTLSAndBasicAuth runs netctl against an agent REST server
// (plugins/rest) with mutual TLS and basic-auth: with the client certificate and the
// credentials the admin endpoint answers, without the certificate it is refused.
func TestNetctlUsesTheAgentsTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	srvCert, srvKey := ca.issue(t, dir, "agent", true)
	cliCert, cliKey := ca.issue(t, dir, "operator", false)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	p := rest.NewPlugin(rest.Deps{Log: log, Config: infra.StaticConfig{
		"endpoint": "127.0.0.1:0", "server-cert-file": srvCert, "server-key-file": srvKey,
		"client-cert-files": []string{caFile}, "basic-auth": []string{"ops:s3cret"},
	}})
	var asked string
	p.RegisterAdmin("POST "+cliPath, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Cmd string `json:"vppclicommand"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		asked = req.Cmd
		rest.WriteJSON(w, 200, "vpp v25.10-release built by test")
	})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	agent := "--agent=n1=" + p.ClientURL()
	noConfig := "--config=" + filepath.Join(dir, "none.conf") // explicit: must exist
	if err := os.WriteFile(filepath.Join(dir, "none.conf"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	out := mustNetctl(t, noConfig, agent, "--ca-file", caFile, "--cert-file", cliCert, "--key-file", cliKey,
		"--basic-auth", "ops:s3cret", "vpp", "n1", "show", "version")
	if !strings.Contains(out, "vpp v25.10") || asked != "show version" {
		t.Errorf("vpp with certificate: %q (asked %q)", out, asked)
	}
	_, errOut, code := netctl(t, noConfig, agent, "--ca-file", caFile, "--basic-auth", "ops:s3cret", "vpp", "n1", "show", "version")
	if code == 0 || !strings.Contains(errOut, "403") {
		t.Errorf("vpp without certificate: exit %d, %s; want 403", code, errOut)
	}
	t.Setenv(BasicAuthEnv, "ops:wrong")
	_, errOut, code = netctl(t, noConfig, agent, "--ca-file", caFile, "--cert-file", cliCert, "--key-file", cliKey, "vpp", "n1", "show", "version")
	if code == 0 || !strings.Contains(errOut, "401") {
		t.Errorf("vpp with wrong basic-auth from %s: exit %d, %s; want 401", BasicAuthEnv, code, errOut)
	}
}

// TestPodsJoinAllocationsWithInterfaces checks the join of `pods` against a fake agent.
func TestPodsJoinAllocationsWithInterfaces(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+allocationsPath, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"Pods":[{"PodID":{"name":"web","namespace":"default"},"MainIP":"10.1.1.2"},
			{"PodID":{"name":"dns","namespace":"kube-system"},"MainIP":"10.1.1.3"}]}`)
	})
	mux.HandleFunc("GET "+dumpPath, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("descriptor") {
		case descLinuxInterface:
			io.WriteString(w, `[{"key":"l/1","value":{"name":"pod-tap-a","hostIfName":"eth0","ipAddresses":["10.1.1.2/32"]}},
				{"key":"l/2","value":{"name":"tap-vpp1","ipAddresses":["172.30.1.2/24"]}}]`)
		case descVPPARP:
			io.WriteString(w, `[{"key":"a/1","value":{"interface":"tap-a","ipAddress":"10.1.1.2"}}]`)
		default:
			http.Error(w, "unexpected", 400)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := newCluster(Config{Agents: map[string]string{"n1": srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := c.pods(t.Context(), node{Name: "n1", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	want := []podRow{
		{Node: "n1", Namespace: "default", Name: "web", IP: "10.1.1.2", VPPIf: "tap-a", LinuxIf: "pod-tap-a", LinuxHostIf: "eth0"},
		{Node: "n1", Namespace: "kube-system", Name: "dns", IP: "10.1.1.3"},
	}
	if len(rows) != len(want) || rows[0] != want[0] || rows[1] != want[1] {
		t.Errorf("pods = %+v, want %+v", rows, want)
	}
}

func TestAgentURLs(t *testing.T) {
	c, err := newCluster(Config{Agents: map[string]string{"listed": "https://agent.example:9443"}, AgentPort: 9998, AgentTLS: true})
	if err != nil {
		t.Fatal(err)
	}
	c.isLocal = func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.20.0.10")) }
	c.defaultSocket = filepath.Join(t.TempDir(), "no-admin.sock")
	for _, tc := range []struct {
		n    node
		want string
	}{
		{node{Name: "listed", MgmtIP: "10.20.0.11"}, "https://agent.example:9443"},
		{node{Name: "remote", MgmtIP: "10.20.0.11", IPs: []string{"192.168.16.2/24"}}, "https://10.20.0.11:9998"},
		{node{Name: "no-mgmt-ip", IPs: []string{"192.168.16.2/24"}}, "https://192.168.16.2:9998"},
		{node{Name: "this-machine", MgmtIP: "10.20.0.10"}, "https://127.0.0.1:9998"},
		{node{Name: "no-address"}, ""},
	} {
		if got := c.agentURL(&tc.n); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.n.Name, got, tc.want)
		}
	}
}

func TestConfigValidationNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{AgentPort: 70000}, "agent-port: 70000"},
		{Config{CertFile: "a.pem"}, "cert-file and key-file"},
		{Config{BasicAuth: "nopassword"}, `basic-auth: "nopassword" is not user:password`},
		{Config{Agents: map[string]string{"n1": "127.0.0.1:9999"}}, `agents[n1]: "127.0.0.1:9999" must start with http://, https:// or unix://`},
		{Config{Agents: map[string]string{"n1": "unix://admin.sock"}}, `agents[n1]: "unix://admin.sock": the socket path must be absolute`},
		{Config{AdminSocket: "admin.sock"}, `admin-socket: "admin.sock" must be an absolute path (or "none")`},
	} {
		if err := tc.cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netctl test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) issue(t *testing.T, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

package rest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// nonLoopbackIP returns an address of this machine that is not loopback, or skips.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Skip("the machine has no non-loopback IPv4 address to test remote access with")
	return nil
}

// startWith starts the plugin with cfg (port 0 on the host of cfg.Endpoint) and an
// admin GET, an admin POST and a public GET handler; posted counts the POSTs served.
func startWith(t *testing.T, cfg Config, log logrus.FieldLogger) (p *Plugin, port string, posted *atomic.Int32) {
	t.Helper()
	if log == nil {
		log = quiet()
	}
	p = NewPlugin(Deps{Log: log, Config: fakeLoader{cfg: cfg}})
	posted = &atomic.Int32{}
	p.RegisterAdmin("GET /test/admin", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, "admin") })
	p.RegisterAdmin("POST /test/change", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		posted.Add(1)
		WriteJSON(w, 200, string(body))
	})
	p.RegisterPublic("GET /test/view", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, "view") })
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	_, port, _ = net.SplitHostPort(p.Addr().String())
	return p, port, posted
}

func do(t *testing.T, c *http.Client, method, url, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestWithoutTLSAdminEndpointsAnswerOnlyOnLoopback(t *testing.T) {
	remote := nonLoopbackIP(t)
	_, port, posted := startWith(t, Config{Endpoint: "0.0.0.0:0"}, nil)
	c := http.DefaultClient
	loop := "http://127.0.0.1:" + port
	ext := "http://" + net.JoinHostPort(remote.String(), port)

	for _, tc := range []struct {
		name, method, url, ct string
		want                  int
	}{
		{"admin GET on loopback", "GET", loop + "/test/admin", "", 200},
		{"admin POST on loopback", "POST", loop + "/test/change", "application/json", 200},
		{"admin GET on the node IP", "GET", ext + "/test/admin", "", 403},
		{"admin POST on the node IP", "POST", ext + "/test/change", "application/json", 403},
		{"public view on the node IP", "GET", ext + "/test/view", "", 200},
		{"probe on the node IP", "GET", ext + ReadinessPath, "", 200},
		{"metrics on the node IP", "GET", ext + MetricsPath, "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, tc.method, tc.url, tc.ct, `{}`)
			if code != tc.want {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.url, code, body, tc.want)
			}
			if code == 403 && !strings.Contains(body, "loopback only") {
				t.Errorf("403 body does not say why: %s", body)
			}
		})
	}
	if n := posted.Load(); n != 1 {
		t.Errorf("the POST handler ran %d times, want 1 (loopback only)", n)
	}
}

func TestAdminRefusesANonLocalHostHeader(t *testing.T) {
	_, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0"}, nil)
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/test/admin", nil)
	req.Host = "rebound.attacker.example:" + port
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("admin GET with Host %s = %d, want 403", req.Host, resp.StatusCode)
	}
}

func TestStateChangingRequestsNeedJSON(t *testing.T) {
	_, port, posted := startWith(t, Config{Endpoint: "127.0.0.1:0"}, nil)
	url := "http://127.0.0.1:" + port + "/test/change"
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		code, body := do(t, http.DefaultClient, "POST", url, ct, `{"vppclicommand":"show version"}`)
		if code != http.StatusUnsupportedMediaType || !strings.Contains(body, "application/json") {
			t.Errorf("POST with Content-Type %q = %d %s, want 415", ct, code, body)
		}
	}
	if n := posted.Load(); n != 0 {
		t.Fatalf("a refused POST reached the handler (%d times)", n)
	}
	if code, body := do(t, http.DefaultClient, "POST", url, "application/json; charset=utf-8", `{"a":1}`); code != 200 || !strings.Contains(body, `{\"a\":1}`) {
		t.Errorf("JSON POST = %d %s, want 200 echoing the body", code, body)
	}
}

func TestStateChangingRequestIsAuditedAndCounted(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	_, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0"}, log)
	base := "http://127.0.0.1:" + port
	if code, _ := do(t, http.DefaultClient, "POST", base+"/test/change?verbose=true", "application/json", `{"vppclicommand":"set interface state G0 down"}`); code != 200 {
		t.Fatalf("POST = %d", code)
	}
	var audit *logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Data["audit"] == true {
			audit = e
		}
	}
	if audit == nil {
		t.Fatal("no audit line written")
	}
	if audit.Level != logrus.InfoLevel {
		t.Errorf("audit level = %v, want info", audit.Level)
	}
	for k, want := range map[string]string{
		"method": "POST", "path": "/test/change?verbose=true", "body": `{"vppclicommand":"set interface state G0 down"}`,
	} {
		if got, _ := audit.Data[k].(string); got != want {
			t.Errorf("audit %s = %q, want %q", k, got, want)
		}
	}
	if caller, _ := audit.Data["caller"].(string); !strings.HasPrefix(caller, "127.0.0.1:") {
		t.Errorf("audit caller = %q, want the remote address", caller)
	}
	if audit.Data["status"] != 200 {
		t.Errorf("audit status = %v", audit.Data["status"])
	}
	_, metrics := get(t, base+MetricsPath)
	if want := `contiv_rest_state_changing_requests_total{code="200",pattern="POST /test/change"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}
	do(t, http.DefaultClient, "POST", base+"/test/change", "text/plain", "x")
	_, metrics = get(t, base+MetricsPath)
	if want := `contiv_rest_refused_requests_total{reason="content-type"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}
}

func TestBasicAuth(t *testing.T) {
	_, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0", BasicAuth: []string{"alice:s3cret", "bob:pa:ss"}}, nil)
	base := "http://127.0.0.1:" + port
	for _, tc := range []struct {
		name, path, user, pass string
		want                   int
	}{
		{"no credentials", "/test/admin", "", "", 401},
		{"no credentials on a public view", "/test/view", "", "", 401},
		{"no credentials on metrics", MetricsPath, "", "", 401},
		{"wrong password", "/test/admin", "alice", "guess", 401},
		{"unknown user", "/test/admin", "mallory", "s3cret", 401},
		{"alice", "/test/admin", "alice", "s3cret", 200},
		{"bob, colon in the password", "/test/view", "bob", "pa:ss", 200},
		{"probes need no credentials", ReadinessPath, "", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+tc.path, nil)
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s = %d, want %d", tc.path, resp.StatusCode, tc.want)
			}
			if tc.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "contiv test CA")
	other := newTestCA(t, "someone else's CA")
	serverCert, serverKey := ca.issue(t, dir, "server", true)
	clientCert, clientKey := ca.issue(t, dir, "operator", false)
	strangerCert, strangerKey := other.issue(t, dir, "stranger", false)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	_, port, posted := startWith(t, Config{
		Endpoint: "127.0.0.1:0", ServerCertFile: serverCert, ServerKeyFile: serverKey, ClientCertFiles: []string{caFile},
	}, log)
	base := "https://127.0.0.1:" + port

	client := func(certFile, keyFile string) *http.Client {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca.certPEM)
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}

	noCert := client("", "")
	if code, _ := do(t, noCert, "GET", base+"/test/admin", "", ""); code != 403 {
		t.Errorf("admin GET without a client certificate = %d, want 403 (even on loopback)", code)
	}
	if code, _ := do(t, noCert, "POST", base+"/test/change", "application/json", "{}"); code != 403 {
		t.Errorf("admin POST without a client certificate = %d, want 403", code)
	}
	if code, _ := do(t, noCert, "GET", base+ReadinessPath, "", ""); code != 200 {
		t.Errorf("readiness without a client certificate = %d, want 200 (kubelet probes)", code)
	}
	if code, _ := do(t, noCert, "GET", base+"/test/view", "", ""); code != 200 {
		t.Errorf("public view without a client certificate = %d, want 200", code)
	}

	withCert := client(clientCert, clientKey)
	if code, body := do(t, withCert, "GET", base+"/test/admin", "", ""); code != 200 {
		t.Errorf("admin GET with a valid client certificate = %d %s, want 200", code, body)
	}
	if code, _ := do(t, withCert, "POST", base+"/test/change", "application/json", `{"x":1}`); code != 200 {
		t.Errorf("admin POST with a valid client certificate = %d, want 200", code)
	}
	if posted.Load() != 1 {
		t.Errorf("POST handler ran %d times, want 1", posted.Load())
	}
	var user string
	for _, e := range hook.AllEntries() {
		if e.Data["audit"] == true {
			user, _ = e.Data["user"].(string)
		}
	}
	if !strings.Contains(user, "CN=operator") {
		t.Errorf("audit user = %q, want the certificate subject", user)
	}

	stranger := client(strangerCert, strangerKey)
	req, _ := http.NewRequest("GET", base+"/test/admin", nil)
	// The client offers no certificate the server's CAs accept (Go sends none then), or
	// the handshake fails: either way the admin handler is not served.
	if resp, err := stranger.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("a certificate of another CA got %d, want 403 or a TLS handshake failure", resp.StatusCode)
		}
	}

	plain := http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://127.0.0.1:" + port + "/test/view"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP served on a TLS endpoint")
		}
		resp.Body.Close()
	}
}

func TestRegistrationRules(t *testing.T) {
	p := NewPlugin(Deps{Log: quiet()})
	h := func(http.ResponseWriter, *http.Request) {}
	for _, tc := range []struct {
		name string
		reg  func()
		want string
	}{
		{"public POST", func() { p.RegisterPublic("POST /x", h) }, "public handlers are GET only"},
		{"no method", func() { p.RegisterAdmin("/x", h) }, "name the method"},
		{"PATCH", func() { p.RegisterAdmin("PATCH /x", h) }, "POST, PUT or DELETE"},
		{"public through the registrar", func() { p.Public().HandleFunc("PUT /y", h) }, "public handlers are GET only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("panic = %v, want %q", r, tc.want)
				}
			}()
			tc.reg()
		})
	}
}

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate and key for name into dir and returns their paths.
func (ca *testCA) issue(t *testing.T, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestReadOnlyVPPCLIIsAConservativeAllowList(t *testing.T) {
	for cmd, want := range map[string]bool{
		"show interface":              true,
		"sh int":                      true,
		"sho run":                     true,
		"  show version  ":            true,
		"show":                        true,
		"show\tip fib":                true,
		"set interface state G0 down": false,
		"clear trace":                 false,
		"trace add dpdk-input 10":     false,
		"showx":                       false,
		"shell ls":                    false,
		"SHOW int":                    false,
		"":                            false,
		"show version\nset interface state G0 down": false,
		"show version\rclear trace":                 false,
		"show version; clear trace":                 false,
	} {
		if got := ReadOnlyVPPCLI(cmd); got != want {
			t.Errorf("ReadOnlyVPPCLI(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// TestReadOnlyVPPCommandIsLoggedAtDebugNotAudited: polling POST /vpp/command with
// show commands writes no audit line and counts no state-changing request; any
// other command (or a body that cannot be read as one) is audited.
func TestReadOnlyVPPCommandIsLoggedAtDebugNotAudited(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	p, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0"}, log)
	var served atomic.Int32
	p.RegisterAdmin(VPPCommandPattern, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		served.Add(1)
		WriteJSON(w, 200, string(body))
	})
	base := "http://127.0.0.1:" + port
	audited := func() (n int) {
		for _, e := range hook.AllEntries() {
			if e.Data["audit"] == true {
				n++
			}
		}
		return n
	}
	for i := 0; i < 3; i++ {
		if code, body := do(t, http.DefaultClient, "POST", base+"/vpp/command", "application/json", `{"vppclicommand":"show interface"}`); code != 200 || !strings.Contains(body, "show interface") {
			t.Fatalf("POST show = %d %s", code, body)
		}
	}
	if n := audited(); n != 0 {
		t.Errorf("%d audit lines for read-only commands", n)
	}
	var debug *logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.DebugLevel && e.Data["command"] == "show interface" {
			debug = e
		}
	}
	if debug == nil || debug.Data["caller"] == nil || debug.Data["status"] != 200 {
		t.Errorf("no debug line with caller and status for the read-only command: %+v", debug)
	}
	_, metrics := get(t, base+MetricsPath)
	if strings.Contains(metrics, `pattern="POST /vpp/command"`) {
		t.Errorf("read-only commands counted as state-changing:\n%s", metrics)
	}
	for k, body := range []string{`{"vppclicommand":"set interface state G0 down"}`, `{"vppclicommand":"show version\nclear trace"}`, `not json`} {
		do(t, http.DefaultClient, "POST", base+"/vpp/command", "application/json", body)
		if n := audited(); n != k+1 {
			t.Errorf("after %q: %d audit lines, want %d", body, n, k+1)
		}
	}
	_, metrics = get(t, base+MetricsPath)
	if want := `contiv_rest_state_changing_requests_total{code="200",pattern="POST /vpp/command"} 3`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}
	if n := served.Load(); n != 6 {
		t.Errorf("handler served %d requests, want 6", n)
	}
}

// auditLines returns the audit lines logged so far.
func auditLines(hook *logtest.Hook) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Data["audit"] == true {
			out = append(out, e)
		}
	}
	return out
}

// TestAuditLineNamesTheVPPCommandThatRanWhateverTheBodyLayout: padding before the
// key, other keys first or a long command do not hide from the audit line the
// command that the handler decoded and ran.
func TestAuditLineNamesTheVPPCommandThatRanWhateverTheBodyLayout(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	p, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0"}, log)
	var ran []string
	var mu sync.Mutex
	p.RegisterAdmin(VPPCommandPattern, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Command string `json:"vppclicommand"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			WriteError(w, 400, err.Error())
			return
		}
		mu.Lock()
		ran = append(ran, req.Command)
		mu.Unlock()
		WriteJSON(w, 200, "ok")
	})
	url := "http://127.0.0.1:" + port + "/vpp/command"
	const cmd = "set interface state G0 down"
	long := "comment {" + strings.Repeat("x", 10000) + "} " + cmd
	for _, tc := range []struct {
		name, body, want string
	}{
		{"1 MB of whitespace before the key", "{" + strings.Repeat(" ", 1<<20) + `"vppclicommand":"` + cmd + `"}`, cmd},
		{"padding in another key first", `{"pad":"` + strings.Repeat("-", 8192) + `","vppclicommand":"` + cmd + `"}`, cmd},
		{"newlines and tabs between the tokens", "{\n\t\"vppclicommand\"\n\t:\n\t\"" + cmd + "\"\n}" + strings.Repeat("\n", 4096), cmd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook.Reset()
			if code, body := do(t, http.DefaultClient, "POST", url, "application/json", tc.body); code != 200 {
				t.Fatalf("POST = %d %s", code, body)
			}
			lines := auditLines(hook)
			if len(lines) != 1 {
				t.Fatalf("%d audit lines, want 1", len(lines))
			}
			if got := lines[0].Data["command"]; got != tc.want {
				t.Errorf("audit command = %q, want %q (the command that ran)", got, tc.want)
			}
			if got := lines[0].Data["command-bytes"]; got != len(tc.want) {
				t.Errorf("audit command-bytes = %v, want %d", got, len(tc.want))
			}
		})
	}

	t.Run("a command longer than the bound", func(t *testing.T) {
		hook.Reset()
		body, _ := json.Marshal(map[string]string{"vppclicommand": long})
		if code, _ := do(t, http.DefaultClient, "POST", url, "application/json", string(body)); code != 200 {
			t.Fatalf("POST = %d", code)
		}
		lines := auditLines(hook)
		if len(lines) != 1 {
			t.Fatalf("%d audit lines, want 1", len(lines))
		}
		got, _ := lines[0].Data["command"].(string)
		if !strings.HasPrefix(got, "comment {xxx") || !strings.HasSuffix(got, "...") || len(got) > maxAuditQuote+3 {
			t.Errorf("audit command = %q, want the start of the command, cut", got)
		}
		sum := sha256.Sum256([]byte(long))
		if lines[0].Data["command-bytes"] != len(long) || lines[0].Data["command-sha256"] != hex.EncodeToString(sum[:]) {
			t.Errorf("audit command-bytes = %v, command-sha256 = %v, want %d and the command's SHA-256",
				lines[0].Data["command-bytes"], lines[0].Data["command-sha256"], len(long))
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 4 || ran[0] != cmd || ran[3] != long {
		t.Errorf("the handler ran %d commands, want the 4 sent", len(ran))
	}
}

// TestAuditLineOfOtherEndpointsHasTheBodyLengthAndHash: an endpoint whose body the
// audit does not decode is logged with the body's start, length and SHA-256.
func TestAuditLineOfOtherEndpointsHasTheBodyLengthAndHash(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	_, port, _ := startWith(t, Config{Endpoint: "127.0.0.1:0"}, log)
	body := `{"pad":"` + strings.Repeat(" ", 2000) + `","do":"something"}`
	if code, _ := do(t, http.DefaultClient, "POST", "http://127.0.0.1:"+port+"/test/change", "application/json", body); code != 200 {
		t.Fatalf("POST = %d", code)
	}
	lines := auditLines(hook)
	if len(lines) != 1 {
		t.Fatalf("%d audit lines, want 1", len(lines))
	}
	sum := sha256.Sum256([]byte(body))
	d := lines[0].Data
	if d["body-bytes"] != len(body) || d["body-sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("audit body-bytes = %v, body-sha256 = %v, want %d and the body's SHA-256", d["body-bytes"], d["body-sha256"], len(body))
	}
	if got, _ := d["body"].(string); !strings.HasPrefix(got, `{"pad":"    `) || !strings.HasSuffix(got, "...") {
		t.Errorf("audit body = %q, want its start, cut", got)
	}
}

// TestOversizedStateChangingBodyIsRefusedBeforeTheHandler: the audit reads the whole
// body to log what runs; beyond maxStateChangingBody the request is refused, unrun.
func TestOversizedStateChangingBodyIsRefusedBeforeTheHandler(t *testing.T) {
	_, port, posted := startWith(t, Config{Endpoint: "127.0.0.1:0"}, nil)
	base := "http://127.0.0.1:" + port
	code, body := do(t, http.DefaultClient, "POST", base+"/test/change", "application/json", `{"a":"`+strings.Repeat("a", maxStateChangingBody)+`"}`)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "bytes") {
		t.Errorf("oversized POST = %d %s, want 413", code, body)
	}
	if posted.Load() != 0 {
		t.Error("the handler ran an oversized request")
	}
	_, metrics := get(t, base+MetricsPath)
	if want := `contiv_rest_refused_requests_total{reason="body-too-large"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}
}

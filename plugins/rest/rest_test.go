package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// fakeLoader hands the plugin a fixed http.conf.
type fakeLoader struct{ cfg Config }

// A key left at its zero value keeps the default, as a key absent from the file does.
func (f fakeLoader) LoadConfig(out any) (bool, error) {
	c := out.(*Config)
	def := *c
	*c = f.cfg
	orDefault(&c.Endpoint, def.Endpoint)
	orDefault(&c.ReadHeaderTimeout, def.ReadHeaderTimeout)
	orDefault(&c.ReadTimeout, def.ReadTimeout)
	orDefault(&c.WriteTimeout, def.WriteTimeout)
	orDefault(&c.IdleTimeout, def.IdleTimeout)
	orDefault(&c.MaxHeaderBytes, def.MaxHeaderBytes)
	orDefault(&c.MaxConnections, def.MaxConnections)
	orDefault(&c.MaxConnectionsPerClient, def.MaxConnectionsPerClient)
	orDefault(&c.MaxLocalConnections, def.MaxLocalConnections)
	orDefault(&c.BasicAuthFailureBurst, def.BasicAuthFailureBurst)
	orDefault(&c.BasicAuthFailureInterval, def.BasicAuthFailureInterval)
	return true, nil
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func startPlugin(t *testing.T, deps Deps) (*Plugin, string) {
	t.Helper()
	deps.Log = quiet()
	deps.Config = fakeLoader{cfg: Config{Endpoint: "127.0.0.1:0"}}
	p := NewPlugin(deps)
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p, "http://" + p.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestProbesFollowTheAggregatedStatus(t *testing.T) {
	reg := health.NewRegistry()
	agent := reg.Reporter("agent")
	vpp := reg.Reporter("vpp")
	_, base := startPlugin(t, Deps{Health: reg})

	tests := []struct {
		name                string
		agent, vpp          health.State
		wantLive, wantReady int
		wantInBody          string
	}{
		{"starting", health.Init, health.Init, 200, 503, "agent: INIT"},
		{"vpp down", health.OK, health.Error, 503, 503, "vpp: ERROR (socket gone)"},
		{"all ok", health.OK, health.OK, 200, 200, `"state": "OK"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			agent.Report(tc.agent, "starting")
			vpp.Report(tc.vpp, "socket gone")
			code, body := get(t, base+LivenessPath)
			if code != tc.wantLive {
				t.Errorf("liveness = %d, want %d (%s)", code, tc.wantLive, body)
			}
			code, body = get(t, base+ReadinessPath)
			if code != tc.wantReady {
				t.Errorf("readiness = %d, want %d (%s)", code, tc.wantReady, body)
			}
			if !strings.Contains(body, tc.wantInBody) {
				t.Errorf("readiness body lacks %q: %s", tc.wantInBody, body)
			}
			var parsed probeBody
			if err := json.Unmarshal([]byte(body), &parsed); err != nil {
				t.Errorf("readiness body is not JSON: %v", err)
			}
		})
	}
}

func TestMetricsServeStandardAndPluginMetrics(t *testing.T) {
	p, base := startPlugin(t, Deps{Health: health.NewRegistry()})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "contiv_test_things_total", Help: "Things."})
	p.Registerer().MustRegister(c)
	c.Add(3)
	code, body := get(t, base+MetricsPath)
	if code != 200 {
		t.Fatalf("metrics = %d", code)
	}
	for _, want := range []string{"go_goroutines", "process_start_time_seconds", "contiv_test_things_total 3"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestHandlersRegisteredBeforeAndAfterInit(t *testing.T) {
	p := NewPlugin(Deps{Log: quiet(), Config: fakeLoader{cfg: Config{Endpoint: "127.0.0.1:0"}}})
	p.RegisterPublic("GET /early", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, "early") })
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.RegisterAdmin("GET /late", func(w http.ResponseWriter, _ *http.Request) { WriteError(w, 418, "late") })
	base := "http://" + p.Addr().String()
	if code, body := get(t, base+"/early"); code != 200 || strings.TrimSpace(body) != `"early"` {
		t.Errorf("/early = %d %q", code, body)
	}
	if code, body := get(t, base+"/late"); code != 418 || !strings.Contains(body, `"error": "late"`) {
		t.Errorf("/late = %d %q", code, body)
	}
	resp, err := http.Post(base+ReadinessPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /readiness = %d, want 405", resp.StatusCode)
	}
}

func TestInitRejectsBadConfig(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Endpoint: "9999"}, `endpoint: "9999" is not host:port`},
		{Config{Endpoint: "example.com:9999"}, `endpoint: "example.com:9999": host must be an IP address or localhost`},
		{Config{Endpoint: "0.0.0.0:99999"}, `endpoint: "0.0.0.0:99999": port must be a number between 0 and 65535`},
		{Config{Endpoint: "127.0.0.1:0", ReadHeaderTimeout: -1}, `read-header-timeout: -1ns must be positive`},
		{Config{Endpoint: "127.0.0.1:6", ReadTimeout: -1}, `read-timeout: -1ns must be positive`},
		{Config{Endpoint: "127.0.0.1:7", ReadTimeout: infra.Duration(time.Second)}, `read-timeout: 1s must not be shorter than read-header-timeout (10s)`},
		{Config{Endpoint: "127.0.0.1:8", WriteTimeout: -1}, `write-timeout: -1ns must be positive`},
		{Config{Endpoint: "127.0.0.1:9", IdleTimeout: -1}, `idle-timeout: -1ns must be positive`},
		{Config{Endpoint: "127.0.0.1:10", MaxHeaderBytes: 100}, `max-header-bytes: 100 must be between 1024 and 1048576`},
		{Config{Endpoint: "127.0.0.1:11", MaxHeaderBytes: 2 << 20}, `max-header-bytes: 2097152 must be between 1024 and 1048576`},
		{Config{Endpoint: "127.0.0.1:12", MaxConnections: -1}, `max-connections: -1 must be at least 1`},
		{Config{Endpoint: "127.0.0.1:13", MaxConnectionsPerClient: -5}, `max-connections-per-client: -5 must be at least 1`},
		{Config{Endpoint: "127.0.0.1:14", MaxLocalConnections: -1}, `max-local-connections: -1 must be at least 1`},
		{Config{Endpoint: "127.0.0.1:15", MaxConnections: 8, MaxConnectionsPerClient: 9}, `max-connections-per-client: 9 must not exceed max-connections (8)`},
		{Config{Endpoint: "127.0.0.1:1", ServerCertFile: "a.pem"}, `server-cert-file and server-key-file: set both or neither`},
		{Config{Endpoint: "127.0.0.1:2", ClientCertFiles: []string{"ca.pem"}}, `client-cert-files: needs server-cert-file and server-key-file`},
		{Config{Endpoint: "127.0.0.1:3", ServerCertFile: "/nonexistent/a.pem", ServerKeyFile: "/nonexistent/a.key"}, `server-cert-file "/nonexistent/a.pem", server-key-file "/nonexistent/a.key": open /nonexistent/a.pem`},
		{Config{Endpoint: "127.0.0.1:4", BasicAuth: []string{"alice:secret", "bob"}}, `basic-auth[1]: entry for "bob" is not user:password`},
		{Config{Endpoint: "127.0.0.1:5", BasicAuth: []string{"carol:"}}, `basic-auth[0]: entry for "carol" is not user:password`},
		{Config{Endpoint: "127.0.0.1:24", BasicAuthFailureBurst: -1}, `basic-auth-failure-burst: -1 must be at least 1`},
		{Config{Endpoint: "127.0.0.1:25", BasicAuthFailureInterval: infra.Duration(2 * time.Hour)}, `basic-auth-failure-interval: 2h0m0s must be positive and at most 1h`},
		{Config{Endpoint: "127.0.0.1:16", AdminSocket: "admin.sock"}, `admin-socket: "admin.sock" must be an absolute path`},
		{Config{Endpoint: "127.0.0.1:17", AdminSocket: "/run/a.sock", AdminSocketMode: 0o666}, `admin-socket-mode: 0666 lets any user of the node run VPP commands`},
		{Config{Endpoint: "127.0.0.1:18", AdminSocket: "/run/a.sock", AdminSocketMode: 0o1660}, `admin-socket-mode: 1660 must be permission bits`},
		{Config{Endpoint: "127.0.0.1:19", AdminSocket: "/run/a.sock", AdminSocketMode: 0o060}, `admin-socket-mode: 0060 must be permission bits (at most 0777) with read and write for the owner`},
		{Config{Endpoint: "127.0.0.1:20", AdminSocketMode: 0o660}, `admin-socket-mode: set without admin-socket`},
		{Config{Endpoint: "127.0.0.1:21", AdminOnLoopback: true}, `admin-on-loopback: set without admin-socket`},
		{Config{Endpoint: "127.0.0.1:22", AdminSocket: "/run/a.sock", AdminSocketGroup: "no-such-group-here"}, `admin-socket-group: group "no-such-group-here"`},
		{Config{Endpoint: "127.0.0.1:23", AdminSocket: "/" + strings.Repeat("d", 100) + "/a.sock"}, `is too long for a unix socket`},
	}
	for _, tc := range tests {
		t.Run(tc.cfg.Endpoint, func(t *testing.T) {
			p := NewPlugin(Deps{Log: quiet(), Config: fakeLoader{cfg: tc.cfg}})
			err := p.Init()
			if err == nil {
				p.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Init err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestInitFailsWhenPortIsTaken(t *testing.T) {
	first, _ := startPlugin(t, Deps{})
	second := NewPlugin(Deps{Log: quiet(), Config: fakeLoader{cfg: Config{Endpoint: first.Addr().String()}}})
	err := second.Init()
	if err == nil {
		second.Close()
		t.Fatal("second server on the same port started")
	}
	if !strings.Contains(err.Error(), "endpoint "+first.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("err = %v", err)
	}
}

func TestWriteJSONKeepsAngleBracketsReadable(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, 200, map[string]string{"cmd": "<command> & more"})
	if got := rec.Body.String(); !strings.Contains(got, `"<command> & more"`) || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("body %q, content type %q", got, rec.Header().Get("Content-Type"))
	}
}

func TestProfilerOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		p := NewPlugin(Deps{Log: quiet(), Config: pprofLoader{enabled}})
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		code, body := get(t, "http://"+p.Addr().String()+"/debug/pprof/")
		p.Close()
		if enabled && (code != 200 || !strings.Contains(body, "goroutine")) {
			t.Errorf("enabled: /debug/pprof/ = %d", code)
		}
		if !enabled && code != 404 {
			t.Errorf("disabled: /debug/pprof/ = %d, want 404", code)
		}
	}
}

// pprofLoader sets a loopback endpoint and enable-pprof.
type pprofLoader struct{ enabled bool }

func (l pprofLoader) LoadConfig(out any) (bool, error) {
	c := out.(*Config)
	c.Endpoint, c.EnablePprof = "127.0.0.1:0", l.enabled
	return true, nil
}

func TestAdminSocketModeIsAQuotedOctalString(t *testing.T) {
	var c Config
	if err := infra.ParseConfig([]byte("admin-socket: /run/a.sock\nadmin-socket-mode: \"0660\"\n"), &c, true, nil); err != nil {
		t.Fatal(err)
	}
	if c.AdminSocketMode != 0o660 {
		t.Errorf("admin-socket-mode \"0660\" = %v, want 0660", c.AdminSocketMode)
	}
	err := infra.ParseConfig([]byte("admin-socket-mode: 0660\n"), &c, true, nil)
	if err == nil || !strings.Contains(err.Error(), "quoted octal string") {
		t.Errorf("unquoted admin-socket-mode: %v, want it refused asking for a quoted octal string", err)
	}
}

package govppmux

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func TestCLICommandOverREST(t *testing.T) {
	e := newEnv(t)
	mux := http.NewServeMux()
	e.plugin.RegisterHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct {
		name     string
		body     string
		wantCode int
		wantBody string
	}{
		{name: "show interface lists the NIC", body: `{"vppclicommand":"show interface"}`, wantCode: 200, wantBody: testNIC},
		{name: "unknown command answers like VPP", body: `{"vppclicommand":"show bogus"}`, wantCode: 200, wantBody: "unknown input"},
		{name: "empty command", body: `{"vppclicommand":"  "}`, wantCode: 400, wantBody: "vppclicommand: must not be empty"},
		{name: "not JSON", body: `show interface`, wantCode: 400, wantBody: `vppclicommand\": \"<command>\"}: invalid character`},
		{name: "too large", body: `{"vppclicommand":"` + strings.Repeat("x", maxCLIRequest) + `"}`, wantCode: 413, wantBody: "request larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+CLIPath, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("POST %s = %d %s, want %d containing %q", CLIPath, resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}

	// VPP gone: the endpoint says so instead of hanging.
	e.sim.Close()
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "disconnect noticed", func() bool { return !e.plugin.IsConnected() })
	resp, err := http.Post(srv.URL+CLIPath, "application/json", strings.NewReader(`{"vppclicommand":"show version"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "VPP is not connected") {
		t.Errorf("with VPP gone: %d %s", resp.StatusCode, body)
	}
}

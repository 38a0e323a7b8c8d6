package infra

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLogLevelsOverHTTP(t *testing.T) {
	r, _ := NewLogRegistry(&bytes.Buffer{}, LogFormatText)
	r.Logger("ipam")
	mux := http.NewServeMux()
	r.RegisterHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct {
		method, path string
		wantCode     int
		wantBody     string
	}{
		{"GET", "/log/list", 200, `"ipam":"info"`},
		{"PUT", "/log/ipam/debug", 200, `{"ipam":"debug"}`},
		{"GET", "/log/list", 200, `"ipam":"debug"`},
		{"PUT", "/log/ipam/shouting", 400, `log level of \"ipam\": not a valid logrus Level: \"shouting\"`},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantCode || !strings.Contains(body.String(), tc.wantBody) {
			t.Errorf("%s %s = %d %s, want %d containing %s", tc.method, tc.path, resp.StatusCode, body.String(), tc.wantCode, tc.wantBody)
		}
		if !json.Valid(body.Bytes()) {
			t.Errorf("%s %s: body is not JSON: %s", tc.method, tc.path, body.String())
		}
	}
}

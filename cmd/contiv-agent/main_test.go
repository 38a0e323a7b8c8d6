package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestVersionFlagPrintsVersionAndCommit(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "contiv-agent dev (commit unknown, go") {
		t.Errorf("-version printed %q", out.String())
	}
}

func TestBadConfigurationExitsNonZeroNamingTheKey(t *testing.T) {
	dir := t.TempDir()
	httpConf := writeFile(t, dir, "http.conf", "endpoint: "+freePort(t)+"\n")
	tests := []struct {
		name   string
		args   []string
		contiv string
		want   string
	}{
		{
			name:   "prefix not longer than the cluster prefix",
			contiv: "ipamConfig:\n  podSubnetCIDR: 10.1.0.0/16\n  podSubnetOneNodePrefixLen: 15\n",
			want:   "ipamConfig.podSubnetOneNodePrefixLen: 15 is not longer than podSubnetCIDR /16",
		},
		{
			name:   "unknown key in strict mode",
			args:   []string{"-strict-config"},
			contiv: "useTAPInterface: true\n",
			want:   "unknown keys: useTAPInterface",
		},
		{
			name: "missing file named explicitly",
			want: "no such file or directory",
		},
		{
			name: "bad log format",
			args: []string{"-log-format=xml"},
			want: `log format "xml"`,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			contivConf := filepath.Join(dir, fmt.Sprintf("missing-%d.conf", i))
			if tc.contiv != "" {
				contivConf = writeFile(t, dir, fmt.Sprintf("contiv-%d.conf", i), tc.contiv)
			}
			args := append([]string{"-contiv-config=" + contivConf, "-http-config=" + httpConf, "-node-name=n1"}, tc.args...)
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, &out, &errOut)
			if code == 0 {
				t.Fatalf("exit code 0 for a bad start, stderr: %s", errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut.String())
			}
			// In the log and as the last line (once only without a logger): not three times.
			if n := strings.Count(errOut.String(), tc.want); n > 2 {
				t.Errorf("stderr has %q %d times, want it at most twice (the log line and the last line):\n%s", tc.want, n, errOut.String())
			}
		})
	}
}

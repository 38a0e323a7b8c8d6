package etcdconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateNamesTheConflictingKey(t *testing.T) {
	tests := []struct {
		sec  Security
		eps  []string
		want string
	}{
		{Security{}, []string{"127.0.0.1:2379"}, ""},
		{Security{InsecureTransport: true}, []string{"https://e:2379"}, `endpoints[0] "https://e:2379": https endpoint but insecure-transport is true`},
		{Security{InsecureTransport: true, CAFile: "ca.pem"}, nil, "ca-file: set although insecure-transport is true"},
		{Security{InsecureTransport: true, InsecureSkipTLSVerify: true}, nil, "insecure-skip-tls-verify: set although insecure-transport is true"},
		{Security{CertFile: "c.pem"}, nil, "cert-file and key-file: set both or neither"},
	}
	for _, tc := range tests {
		err := tc.sec.Validate(tc.eps)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.sec, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", tc.sec, err, tc.want)
		}
	}
}

func TestTLSIsUsedWhenAskedFor(t *testing.T) {
	tests := []struct {
		sec  Security
		eps  []string
		want bool
	}{
		{Security{}, []string{"127.0.0.1:2379"}, false},
		{Security{}, []string{"https://e:2379"}, true},
		{Security{CAFile: "ca.pem"}, nil, true},
		{Security{InsecureSkipTLSVerify: true}, nil, true},
		{Security{InsecureTransport: true}, []string{"https://e:2379"}, false},
	}
	for _, tc := range tests {
		if got := tc.sec.UseTLS(tc.eps); got != tc.want {
			t.Errorf("%+v %v: UseTLS = %v", tc.sec, tc.eps, got)
		}
	}
	cfg, err := (&Security{}).TLSConfig([]string{"127.0.0.1:2379"})
	if cfg != nil || err != nil {
		t.Errorf("plain transport gave %v, %v", cfg, err)
	}
}

func TestTLSConfigNamesBadFiles(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sec  Security
		want string
	}{
		{Security{CAFile: notPEM}, "ca-file " + notPEM + ": no PEM certificate found"},
		{Security{CAFile: filepath.Join(dir, "missing.pem")}, "ca-file: open"},
		{Security{CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem")}, "cert-file " + filepath.Join(dir, "c.pem")},
	}
	for _, tc := range tests {
		if _, err := tc.sec.TLSConfig(nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.sec, err, tc.want)
		}
	}
}

package podmanager

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

func TestConfigFileOverridesDefaults(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want Config
	}{
		{"", DefaultConfig()},
		{"requestTimeout: 90s", Config{SocketPath: DefaultSocketPath, StateFile: DefaultStateFile, CNICacheDir: DefaultCNICacheDir, RequestTimeout: Duration(90 * time.Second), MaxClockSkew: Duration(DefaultMaxClockSkew)}},
		{"requestTimeout: 2000000000\nstateFile: \"\"", Config{SocketPath: DefaultSocketPath, CNICacheDir: DefaultCNICacheDir, RequestTimeout: Duration(2 * time.Second), MaxClockSkew: Duration(DefaultMaxClockSkew)}},
		{"socketPath: /run/contiv/cni.sock", Config{SocketPath: "/run/contiv/cni.sock", StateFile: DefaultStateFile, CNICacheDir: DefaultCNICacheDir, RequestTimeout: Duration(DefaultRequestTimeout), MaxClockSkew: Duration(DefaultMaxClockSkew)}},
		{"maxClockSkew: 5m", Config{SocketPath: DefaultSocketPath, StateFile: DefaultStateFile, CNICacheDir: DefaultCNICacheDir, RequestTimeout: Duration(DefaultRequestTimeout), MaxClockSkew: Duration(5 * time.Minute)}},
	} {
		cfg := DefaultConfig()
		if err := infra.ParseConfig([]byte(tc.yaml), &cfg, true, nil); err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if cfg != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.yaml, cfg, tc.want)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: Validate = %v", tc.yaml, err)
		}
	}
}

func TestConfigRejectsBadValuesNamingTheKey(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string
	}{
		{"requestTimeout: soon", "duration \"soon\""},
		{"requestTimeout: true", "want nanoseconds"},
		{"requestTimeout: 0", "requestTimeout 0s: must be positive"},
		{"socketPath: \"\"", "socketPath: must not be empty"},
		{"socketPath: cni.sock", "socketPath \"cni.sock\": must be an absolute path"},
		{"socketPath: /" + strings.Repeat("x", 120), "too long for a unix socket"},
		{"stateFile: pods.json", "stateFile \"pods.json\": must be an absolute path"},
		{"sockedPath: /x", "unknown keys: sockedPath"},
		{"maxClockSkew: -1s", "maxClockSkew -1s: must not be negative"},
	} {
		cfg := DefaultConfig()
		err := infra.ParseConfig([]byte(tc.yaml), &cfg, true, nil)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

func TestDurationMarshalsAsAString(t *testing.T) {
	data, err := json.Marshal(Duration(90 * time.Second))
	if err != nil || string(data) != `"1m30s"` {
		t.Errorf("Marshal = %s, %v", data, err)
	}
}

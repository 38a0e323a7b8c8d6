package govppmux

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

func TestDefaultsAreUpstreamConfigMap(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	checks := []struct {
		key       string
		got, want time.Duration
	}{
		{"health-check-probe-interval", time.Duration(c.HealthCheckProbeInterval), 3 * time.Second},
		{"health-check-reply-timeout", time.Duration(c.HealthCheckReplyTimeout), 500 * time.Millisecond},
		{"reply-timeout", time.Duration(c.ReplyTimeout), 3 * time.Second},
		{"liveness-timeout", time.Duration(c.LivenessTimeout), 90 * time.Second},
	}
	for _, tc := range checks {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.key, tc.got, tc.want)
		}
	}
	if c.HealthCheckThreshold != 3 || c.BinAPISocketPath != "/run/vpp/api.sock" || c.SocketClient != SocketClientVPPSock {
		t.Errorf("defaults = %+v", c)
	}
}

func TestUpstreamFileWithNanosecondsLoads(t *testing.T) {
	file := []byte("health-check-probe-interval: 3000000000\nhealth-check-reply-timeout: 500000000\n" +
		"health-check-threshold: 3\nreply-timeout: 3000000000\nconnect-timeout: 2s\n")
	c := DefaultConfig()
	if err := infra.ParseConfig(file, &c, true, nil); err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.HealthCheckReplyTimeout) != 500*time.Millisecond || time.Duration(c.ConnectTimeout) != 2*time.Second {
		t.Fatalf("parsed %+v", c)
	}
	if err := infra.ParseConfig([]byte("reply-timeout: soon\n"), &c, true, nil); err == nil {
		t.Error("bad duration accepted")
	}
	out, err := json.Marshal(Duration(1500 * time.Millisecond))
	if err != nil || string(out) != `"1.5s"` {
		t.Errorf("Marshal = %s, %v", out, err)
	}
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		keys   []string
	}{
		{"relative socket", func(c *Config) { c.BinAPISocketPath = "api.sock" }, []string{"binapi-socket-path"}},
		{"empty socket", func(c *Config) { c.BinAPISocketPath = "" }, []string{"binapi-socket-path"}},
		{"zero timeouts", func(c *Config) { c.ConnectTimeout, c.HealthCheckProbeInterval = 0, 0 },
			[]string{"connect-timeout", "health-check-probe-interval"}},
		{"negative reply timeout", func(c *Config) { c.ReplyTimeout = -1 }, []string{"reply-timeout"}},
		{"probe reply longer than interval", func(c *Config) { c.HealthCheckReplyTimeout = Duration(time.Minute) },
			[]string{"health-check-reply-timeout"}},
		{"threshold and retries", func(c *Config) { c.HealthCheckThreshold, c.RetryConnectCount, c.RetryConnectTimeout = 0, -1, 0 },
			[]string{"health-check-threshold", "retry-connect-count", "retry-connect-timeout"}},
		{"relative stats socket", func(c *Config) { c.StatsSocketPath = "stats.sock" }, []string{"stats-socket-path"}},
		{"zero liveness timeout", func(c *Config) { c.LivenessTimeout = 0 }, []string{"liveness-timeout"}},
		{"negative liveness timeout", func(c *Config) { c.LivenessTimeout = -1 }, []string{"liveness-timeout"}},
		{"unknown socket client", func(c *Config) { c.SocketClient = "shm" }, []string{"socket-client"}},
		{"empty socket client", func(c *Config) { c.SocketClient = "" }, []string{"socket-client"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.modify(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, k := range tc.keys {
				if !strings.Contains(err.Error(), k+":") {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}

// An unknown transport is refused with the choices and the value given.
func TestUnknownSocketClientIsNamed(t *testing.T) {
	c := DefaultConfig()
	c.SocketClient = "shm"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `socket-client: must be "vppsock" or "govpp", got "shm"`) {
		t.Errorf("error %v", err)
	}
}

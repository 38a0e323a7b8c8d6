package rest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// basicGet sends GET path with the given credentials and returns the status code and
// the Retry-After header.
func basicGet(t *testing.T, c *http.Client, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestBasicAuthGuessesOfOneClientAreSlowedToTheConfiguredRate: a client guessing
// passwords (127.0.0.2) gets its burst of 401s, then 429 with Retry-After, and one
// more guess per interval on the agent's clock, whatever it sends meanwhile (the right
// password too: while limited, no guess is checked). Another client (127.0.0.3) logs in
// at once with the right password.
func TestBasicAuthGuessesOfOneClientAreSlowedToTheConfiguredRate(t *testing.T) {
	const burst, interval = 3, 2 * time.Second
	clk := testkit.NewClock()
	log, hook := logtest.NewNullLogger()
	p, addr := startLimited(t, Config{
		BasicAuth: []string{"alice:s3cret"}, BasicAuthFailureBurst: burst, BasicAuthFailureInterval: infra.Duration(interval),
	}, log, Deps{Clock: clk}, nil)
	p.RegisterPublic("GET /test/view", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, "view") })
	url := "http://" + addr + "/test/view"
	attacker, other := clientFrom(t, "127.0.0.2"), clientFrom(t, "127.0.0.3")

	for i := range burst {
		if code, _ := basicGet(t, attacker, url, "alice", "guess"); code != 401 {
			t.Fatalf("guess %d within the burst = %d, want 401", i+1, code)
		}
	}
	code, retry := basicGet(t, attacker, url, "alice", "guess")
	if code != 429 || retry != "2" {
		t.Fatalf("guess over the burst = %d (Retry-After %q), want 429 after 2 s", code, retry)
	}
	if code, _ := basicGet(t, attacker, url, "alice", "s3cret"); code != 429 {
		t.Errorf("the right password from the limited client = %d, want 429 (not checked while limited)", code)
	}
	if code, _ := basicGet(t, other, url, "alice", "s3cret"); code != 200 {
		t.Errorf("the right password from another client = %d, want 200 at once", code)
	}
	if code, _ := basicGet(t, other, url, "alice", "wrong"); code != 401 {
		t.Errorf("a wrong password from another client = %d, want 401 (a budget of its own)", code)
	}

	// Over a minute of the agent's clock, guessing every 100 ms: one guess per interval.
	checked := 0
	for range 600 {
		clk.Step(100 * time.Millisecond)
		switch code, _ := basicGet(t, attacker, url, "alice", "guess"); code {
		case 401:
			checked++
		case 429:
		default:
			t.Fatalf("guess = %d, want 401 or 429", code)
		}
	}
	if want := int(time.Minute / interval); checked != want {
		t.Errorf("%d guesses checked in a minute, want %d (one per %v)", checked, want, interval)
	}

	clk.Step(interval)
	if code, _ := basicGet(t, attacker, url, "alice", "s3cret"); code != 200 {
		t.Errorf("the right password after waiting = %d, want 200", code)
	}
	if n := testutil.ToFloat64(p.metrics.refused.WithLabelValues(RefusedAuthRateLimit)); n < 2 {
		t.Errorf("contiv_rest_refused_requests_total{reason=\"basic-auth-rate-limit\"} = %v, want the 429s counted", n)
	}
	warnings := 0
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "basic-auth failures over the limit") {
			warnings++
		}
	}
	if warnings < 1 || warnings > 2 {
		t.Errorf("%d warnings about the limited client over a minute, want 1 or 2 (at most one a minute)", warnings)
	}
}

func TestAuthClientsAreAddressesIPv6PrefixesAndSocketUsers(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"10.1.1.2:4711", "10.1.1.2"},
		{"[::ffff:10.1.1.2]:4711", "10.1.1.2"},
		{"[2001:db8:1:2:aaaa::1]:4711", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:80", "2001:db8:1:2::/64"},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if got := authClient(r); got != tc.want {
			t.Errorf("client of %s = %q, want %q", tc.remote, got, tc.want)
		}
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), peerKey{}, Peer{PID: 7, UID: 1000, GID: 1000}))
	if got := authClient(r); got != "uid:1000" {
		t.Errorf("client of an admin socket peer = %q, want uid:1000", got)
	}
}

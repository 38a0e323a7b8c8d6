package rest

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// Defaults of the basic-auth failure limit (http.conf basic-auth-failure-burst and
// basic-auth-failure-interval): ten wrong guesses at once, then one per second, per
// client; 86,400 a day where one connection used to try 4,000 a second.
const (
	DefaultAuthFailureBurst    = 10
	DefaultAuthFailureInterval = time.Second
)

// maxAuthClients bounds the clients whose failures are tracked at once; beyond it, new
// failing clients share one budget (authOverflowKey): many source addresses together
// get no more guesses than one, at the price of a client of the right password among
// them waiting too (the limit fails closed).
const (
	maxAuthClients  = 16384
	authOverflowKey = "overflow"
)

// authLimiter limits failed basic-auth attempts per client (its IP address, an IPv6
// client by its /64, which one host usually holds whole; a peer of the admin socket by
// its uid) with a token bucket, kept as the time its bucket would be full again
// (GCRA): each attempt reserves a token before the credentials are checked, a success
// gives it back. A client without tokens is answered 429 with Retry-After before its
// credentials are looked at, so a right guess is not told apart while limited, and
// concurrent attempts cannot overrun the bucket. Clients of other addresses, and their
// logins, are not affected. Clients whose bucket is full again are forgotten.
type authLimiter struct {
	burst    int
	interval time.Duration
	clock    clock.PassiveClock

	mu      sync.Mutex
	full    map[string]time.Time // per client: when its bucket is full again
	warning warnLimiter
}

func newAuthLimiter(burst int, interval time.Duration, clk clock.PassiveClock) *authLimiter {
	return &authLimiter{burst: burst, interval: interval, clock: clk, full: map[string]time.Time{}}
}

// reserve takes a token of client's bucket for one attempt; without one, it returns
// how long until the next and false.
func (a *authLimiter) reserve(client string) (retryAfter time.Duration, ok bool) {
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	key := a.keyFor(client, now)
	full := a.full[key]
	if full.Before(now) {
		full = now
	}
	if wait := full.Sub(now) - time.Duration(a.burst-1)*a.interval; wait > 0 {
		return wait, false
	}
	a.full[key] = full.Add(a.interval)
	return 0, true
}

// succeeded gives back the token client reserved for an attempt that authenticated.
func (a *authLimiter) succeeded(client string) {
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	key := a.keyFor(client, now)
	full, ok := a.full[key]
	if !ok {
		return
	}
	if full = full.Add(-a.interval); !full.After(now) {
		delete(a.full, key)
		return
	}
	a.full[key] = full
}

// keyFor is the key client's bucket is kept under: its own, or the shared one when
// maxAuthClients are tracked and forgetting those whose bucket is full frees none.
func (a *authLimiter) keyFor(client string, now time.Time) string {
	if _, ok := a.full[client]; ok || len(a.full) < maxAuthClients {
		return client
	}
	for k, full := range a.full {
		if !full.After(now) {
			delete(a.full, k)
		}
	}
	if len(a.full) < maxAuthClients {
		return client
	}
	return authOverflowKey
}

// warn says whether to log a limited client now (at most once per warnInterval), and
// how many were not logged since.
func (a *authLimiter) warn() (bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.warning.allow(a.clock.Now())
}

// authClient names the client of r whose failures are counted together: "uid:N" for a
// peer of the admin socket, else its IP address (an IPv6 address by its /64).
func authClient(r *http.Request) string {
	if p, ok := SocketPeer(r); ok {
		return fmt.Sprintf("uid:%d", p.UID)
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		prefix, _ := ip.Prefix(64)
		return prefix.String()
	}
	return ip.String()
}

// limitAuthFailures answers 429 when r's client has no basic-auth attempt left, and
// then returns false; it logs that at most once a minute.
func (p *Plugin) limitAuthFailures(w http.ResponseWriter, r *http.Request, client string) bool {
	wait, ok := p.authLimit.reserve(client)
	if ok {
		return true
	}
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	p.refuse(w, r, RefusedAuthRateLimit, http.StatusTooManyRequests, fmt.Sprintf(
		"basic-auth: too many failed attempts from %s; retry after %d s (http.conf basic-auth-failure-burst %d, basic-auth-failure-interval %v)",
		client, secs, p.authLimit.burst, p.authLimit.interval))
	if warn, held := p.authLimit.warn(); warn {
		p.Log.WithFields(logrus.Fields{
			"client": client, "retry-after": fmt.Sprintf("%ds", secs), "limited-since-last-warning": held,
		}).Warn("REST basic-auth failures over the limit: answering 429 to this client until it waits " +
			"(contiv_rest_refused_requests_total{reason=\"basic-auth-rate-limit\"}; warned at most once a minute)")
	}
	return false
}

package vppsim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/api"
)

// ParseFailSpec parses a failure injection "msg=retval[:times]", e.g.
// "ip_route_add_del=-3" (always) or "tap_create_v3=-13:2" (twice), for
// FailMessage.
func ParseFailSpec(spec string) (name string, retval int32, times int, err error) {
	name, val, ok := strings.Cut(spec, "=")
	if !ok || name == "" || val == "" {
		return "", 0, 0, fmt.Errorf("fail spec %q: want msg=retval[:times]", spec)
	}
	rv, count, hasCount := strings.Cut(val, ":")
	v, err := strconv.ParseInt(rv, 10, 32)
	if err != nil {
		return "", 0, 0, fmt.Errorf("fail spec %q: retval: %w", spec, err)
	}
	if hasCount {
		times, err = strconv.Atoi(count)
		if err != nil || times <= 0 {
			return "", 0, 0, fmt.Errorf("fail spec %q: times must be a positive number", spec)
		}
	}
	return name, int32(v), times, nil
}

// ParseDelaySpec parses a delay injection "msg=duration", e.g.
// "sw_interface_dump=200ms", for DelayMessage.
func ParseDelaySpec(spec string) (name string, d time.Duration, err error) {
	name, val, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", 0, fmt.Errorf("delay spec %q: want msg=duration", spec)
	}
	d, err = time.ParseDuration(val)
	if err != nil || d < 0 {
		return "", 0, fmt.Errorf("delay spec %q: invalid duration", spec)
	}
	return name, d, nil
}

// RandomFailRetval is the error a random failure (Options.FailProbability,
// SetFailProbability) answers with: VNET_API_ERROR_BUSY (-167, "Busy"),
// what VPP reports when a request cannot be served at this moment and may
// succeed if sent again. A client that retries transient errors must
// converge despite it; the request is not executed.
const RandomFailRetval = int32(api.BUSY)

// randomFaults fails a random share of the state-changing requests.
type randomFaults struct {
	on     atomic.Bool // p > 0, read without the lock on every request
	mu     sync.Mutex
	p      float64
	rng    *rand.Rand
	failed atomic.Int64
}

// configure checks Options.FailProbability and seeds the generator with
// Options.FailSeed. The same seed and the same sequence of requests give the
// same failures.
func (r *randomFaults) configure(p float64, seed int64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("vppsim: Options.FailProbability %v: want a share between 0 and 1", p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rng = newFailRand(seed)
	r.setLocked(p)
	return nil
}

// newFailRand returns the generator of the random failures.
func newFailRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x636f6e746976)) // second word: "contiv"
}

func (r *randomFaults) setLocked(p float64) {
	r.p = min(max(p, 0), 1)
	r.on.Store(r.p > 0)
}

// SetFailProbability changes, at run time, the share (0..1) of
// state-changing requests that fail with RandomFailRetval; 0 turns the
// random failures off. Values outside 0..1 are clamped. The generator keeps
// the seed of Options.FailSeed.
func (s *Sim) SetFailProbability(p float64) {
	s.random.mu.Lock()
	defer s.random.mu.Unlock()
	if s.random.rng == nil {
		s.random.rng = newFailRand(s.opts.FailSeed)
	}
	s.random.setLocked(p)
	s.log.WithField("probability", s.random.p).Info("random request failures set")
}

// RandomFailureCount returns how many requests the random failure share has
// failed so far.
func (s *Sim) RandomFailureCount() int64 { return s.random.failed.Load() }

// takeRandomFault tells whether the request is to fail at random. Only
// state-changing requests whose reply carries a retval can fail: dumps,
// control_ping, the sockclnt_* handshake, show_version and the other
// read-only requests (see readOnlyRequest) never do.
func (s *Sim) takeRandomFault(info *msgInfo) (int32, bool) {
	if !s.random.on.Load() || info.reply == nil || !info.reply.hasRetval || readOnlyRequest(info.name) {
		return 0, false
	}
	s.random.mu.Lock()
	fail := s.random.p > 0 && s.random.rng.Float64() < s.random.p
	s.random.mu.Unlock()
	if !fail {
		return 0, false
	}
	s.random.failed.Add(1)
	return RandomFailRetval, true
}

// readOnlyRequest tells whether a request only reads state or manages the
// client's session: control_ping, memclnt_*, sockclnt_*, cli_inband (the
// simulator serves show commands only), want_* event registrations and
// every request whose name has a "dump", "get" or "show" word
// (show_version, nat44_show_running_config, sw_interface_get_table, ...).
func readOnlyRequest(name string) bool {
	switch {
	case name == "control_ping", name == "cli_inband", name == "cli",
		strings.HasPrefix(name, "memclnt_"), strings.HasPrefix(name, "sockclnt_"),
		strings.HasPrefix(name, "want_"):
		return true
	}
	for word := range strings.SplitSeq(name, "_") {
		switch word {
		case "dump", "get", "show":
			return true
		}
	}
	return false
}

package govppmux

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Defaults of govpp.conf. The health-check values and the reply timeout are those of
// the upstream Contiv ConfigMap; the others are this port's choices.
const (
	// DefaultSocketPath is where VPP serves its binary API.
	DefaultSocketPath = "/run/vpp/api.sock"
	// DefaultConnectTimeout bounds one connection attempt (dial and handshake).
	DefaultConnectTimeout = 3 * time.Second
	// DefaultReplyTimeout bounds the wait for every reply on channels handed out.
	DefaultReplyTimeout = 3 * time.Second
	// DefaultHealthCheckProbeInterval is how often govpp pings VPP.
	DefaultHealthCheckProbeInterval = 3 * time.Second
	// DefaultHealthCheckReplyTimeout is how long govpp waits for a ping reply.
	DefaultHealthCheckReplyTimeout = 500 * time.Millisecond
	// DefaultHealthCheckThreshold is how many pings may time out in a row before
	// VPP is considered gone.
	DefaultHealthCheckThreshold = 3
	// DefaultRetryConnectCount is how many failed connection attempts the start-up
	// tolerates before Init fails. After VPP went away there is no limit.
	DefaultRetryConnectCount = 10
	// DefaultRetryConnectTimeout is the pause after the first failed connection
	// attempt; it doubles with every further failure up to
	// DefaultRetryConnectMaxTimeout.
	DefaultRetryConnectTimeout = time.Second
	// DefaultRetryConnectMaxTimeout caps the pause between connection attempts.
	DefaultRetryConnectMaxTimeout = 5 * time.Second
	// DefaultLivenessTimeout is how long VPP may stay unanswered (disconnected or not
	// responding) before the agent's liveness fails; Felix gives its dataplane loop the
	// same bound (DataplaneWatchdogTimeout).
	DefaultLivenessTimeout = 90 * time.Second
	// DefaultSocketClient is the transport used when socket-client is not set.
	DefaultSocketClient = SocketClientVPPSock
)

// Values of the socket-client key: which implementation of VPP's socket API carries
// the messages.
const (
	// SocketClientVPPSock is this repository's client (package vppsock): writes of
	// concurrent senders are batched, replies are read through a large buffer.
	SocketClientVPPSock = "vppsock"
	// SocketClientGovpp is govpp's adapter/socketclient (one write per message); kept
	// as a fallback for operators.
	SocketClientGovpp = "govpp"
)

// Duration is a duration in the configuration file: nanoseconds or a string like "5s".
type Duration = infra.Duration

// Config is the content of govpp.conf, with the keys of the vpp-agent govppmux plugin.
type Config struct {
	// BinAPISocketPath is VPP's binary API socket.
	BinAPISocketPath string `json:"binapi-socket-path"`
	// ConnectTimeout bounds one connection attempt (dial and the sockclnt_create
	// handshake).
	ConnectTimeout Duration `json:"connect-timeout"`
	// ReplyTimeout bounds the wait for each reply on the channels NewAPIChannel hands
	// out; 0 waits forever.
	ReplyTimeout Duration `json:"reply-timeout"`
	// HealthCheckProbeInterval is the period of govpp's control_ping health probe.
	HealthCheckProbeInterval Duration `json:"health-check-probe-interval"`
	// HealthCheckReplyTimeout is how long one probe waits for its reply.
	HealthCheckReplyTimeout Duration `json:"health-check-reply-timeout"`
	// HealthCheckThreshold is the number of probes that may time out in a row before
	// VPP is considered not responding.
	HealthCheckThreshold int `json:"health-check-threshold"`
	// RetryConnectCount is how many failed connection attempts the start-up
	// tolerates before Init fails (0: the first failure fails it). Once connected,
	// the plugin reconnects after a loss for as long as the agent runs, reporting
	// the VPP health component INIT (alive, not ready) with the last failure.
	RetryConnectCount int `json:"retry-connect-count"`
	// RetryConnectTimeout is the pause after the first failed connection attempt;
	// it doubles with every further failure in a row, up to RetryConnectMaxTimeout.
	RetryConnectTimeout Duration `json:"retry-connect-timeout"`
	// RetryConnectMaxTimeout caps the pause between connection attempts.
	RetryConnectMaxTimeout Duration `json:"retry-connect-max-timeout"`
	// StatsSocketPath is VPP's stats socket ("": /run/vpp/stats.sock), which
	// plugins/statscollector reads the data-plane counters through; a missing socket
	// is logged here and leaves contiv_dataplane_stats_up at 0.
	StatsSocketPath string `json:"stats-socket-path"`
	// SocketClient selects the implementation of VPP's socket API:
	// SocketClientVPPSock ("vppsock", the default) or SocketClientGovpp ("govpp",
	// govpp's own socketclient, the fallback). Both speak the same protocol; only
	// the batching of writes and the read buffering differ.
	SocketClient string `json:"socket-client"`
	// LivenessTimeout is how long VPP may stay unanswered, from the moment the loss is
	// noticed (the socket closed, or health-check-threshold probes timed out) until it
	// answers again, before the VPP health component turns from INIT (not ready) to
	// ERROR (not alive): the kubelet then restarts the vswitch container, and VPP with
	// it. A VPP that hangs is not repaired by waiting.
	LivenessTimeout Duration `json:"liveness-timeout"`
}

// DefaultConfig returns the configuration used when govpp.conf is absent.
func DefaultConfig() Config {
	return Config{
		BinAPISocketPath:         DefaultSocketPath,
		ConnectTimeout:           Duration(DefaultConnectTimeout),
		ReplyTimeout:             Duration(DefaultReplyTimeout),
		HealthCheckProbeInterval: Duration(DefaultHealthCheckProbeInterval),
		HealthCheckReplyTimeout:  Duration(DefaultHealthCheckReplyTimeout),
		HealthCheckThreshold:     DefaultHealthCheckThreshold,
		RetryConnectCount:        DefaultRetryConnectCount,
		RetryConnectTimeout:      Duration(DefaultRetryConnectTimeout),
		RetryConnectMaxTimeout:   Duration(DefaultRetryConnectMaxTimeout),
		SocketClient:             DefaultSocketClient,
		LivenessTimeout:          Duration(DefaultLivenessTimeout),
	}
}

// Validate checks every value and returns one error naming each bad key, or nil.
func (c Config) Validate() error {
	var problems []string
	bad := func(key, format string, args ...any) {
		problems = append(problems, key+": "+fmt.Sprintf(format, args...))
	}
	positive := func(key string, d Duration) {
		if d <= 0 {
			bad(key, "must be positive, got %v", time.Duration(d))
		}
	}
	if c.BinAPISocketPath == "" {
		bad("binapi-socket-path", "must not be empty")
	} else if !filepath.IsAbs(c.BinAPISocketPath) {
		bad("binapi-socket-path", "must be an absolute path, got %q", c.BinAPISocketPath)
	}
	positive("connect-timeout", c.ConnectTimeout)
	if c.ReplyTimeout < 0 {
		bad("reply-timeout", "must not be negative, got %v", time.Duration(c.ReplyTimeout))
	}
	positive("health-check-probe-interval", c.HealthCheckProbeInterval)
	positive("health-check-reply-timeout", c.HealthCheckReplyTimeout)
	if c.HealthCheckReplyTimeout > 0 && c.HealthCheckProbeInterval > 0 && c.HealthCheckReplyTimeout > c.HealthCheckProbeInterval {
		bad("health-check-reply-timeout", "%v is longer than health-check-probe-interval %v",
			time.Duration(c.HealthCheckReplyTimeout), time.Duration(c.HealthCheckProbeInterval))
	}
	if c.HealthCheckThreshold < 1 {
		bad("health-check-threshold", "must be at least 1, got %d", c.HealthCheckThreshold)
	}
	if c.RetryConnectCount < 0 {
		bad("retry-connect-count", "must not be negative, got %d", c.RetryConnectCount)
	}
	positive("retry-connect-timeout", c.RetryConnectTimeout)
	if c.RetryConnectMaxTimeout < c.RetryConnectTimeout {
		bad("retry-connect-max-timeout", "%v is shorter than retry-connect-timeout %v",
			time.Duration(c.RetryConnectMaxTimeout), time.Duration(c.RetryConnectTimeout))
	}
	positive("liveness-timeout", c.LivenessTimeout)
	if c.StatsSocketPath != "" && !filepath.IsAbs(c.StatsSocketPath) {
		bad("stats-socket-path", "must be an absolute path, got %q", c.StatsSocketPath)
	}
	switch c.SocketClient {
	case SocketClientVPPSock, SocketClientGovpp:
	default:
		bad("socket-client", "must be %q or %q, got %q", SocketClientVPPSock, SocketClientGovpp, c.SocketClient)
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("govpp.conf: " + strings.Join(problems, "; "))
}

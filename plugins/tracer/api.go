package tracer

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// The admin REST paths of the plugin.
const (
	StartPath = "/contiv/v1/trace/start"
	ProbePath = "/contiv/v1/trace/probe"
	StopPath  = "/contiv/v1/trace/stop"
)

// Bounds of a trace.
const (
	// DefaultCount and MaxCount bound the packets VPP traces per input node.
	DefaultCount = 50
	MaxCount     = 500
	// DefaultTimeout and MaxTimeout bound how long a trace stays on when nobody
	// stops it.
	DefaultTimeout = 30 * time.Second
	MaxTimeout     = 2 * time.Minute
	// MaxProbeWait bounds how long a probe waits for its answer.
	MaxProbeWait = 10 * time.Second
)

// StartRequest is the body of POST StartPath.
type StartRequest struct {
	// Count is how many packets each input node traces (DefaultCount if 0).
	Count int `json:"count,omitempty"`
	// TimeoutSeconds is when the plugin stops the trace itself (DefaultTimeout if 0).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
}

// Validate checks the bounds, naming the field and the value.
func (r *StartRequest) Validate() error {
	if r.Count < 0 || r.Count > MaxCount {
		return fmt.Errorf("count: %d is not between 1 and %d", r.Count, MaxCount)
	}
	if r.TimeoutSeconds < 0 || time.Duration(r.TimeoutSeconds)*time.Second > MaxTimeout {
		return fmt.Errorf("timeoutSeconds: %d is not between 1 and %d", r.TimeoutSeconds, int(MaxTimeout/time.Second))
	}
	return nil
}

// Protocols of a probe.
const (
	ProtoTCP  = "tcp"
	ProtoUDP  = "udp"
	ProtoICMP = "icmp"
)

// ProbeRequest is the body of POST ProbePath.
type ProbeRequest struct {
	// Pod is the source pod, "namespace/name"; empty means the node itself (its host
	// namespace, which reaches VPP through the host interconnect).
	Pod string `json:"pod,omitempty"`
	// Dst is the destination IPv4 address.
	Dst string `json:"dst"`
	// Port is the destination port (tcp, udp).
	Port uint16 `json:"port,omitempty"`
	// Proto is tcp, udp or icmp.
	Proto string `json:"proto"`
	// WaitSeconds bounds the wait for an answer (default 3, at most MaxProbeWait).
	WaitSeconds int `json:"waitSeconds,omitempty"`
}

// Validate checks the request, naming the field and the value.
func (r *ProbeRequest) Validate() error {
	if r.Pod != "" {
		if ns, name, ok := strings.Cut(r.Pod, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("pod: %q is not namespace/name", r.Pod)
		}
	}
	a, err := netip.ParseAddr(r.Dst)
	if err != nil || !a.Is4() {
		return fmt.Errorf("dst: %q is not an IPv4 address", r.Dst)
	}
	switch r.Proto {
	case ProtoTCP, ProtoUDP:
		if r.Port == 0 {
			return fmt.Errorf("port: 0 is not a port (needed for %s)", r.Proto)
		}
	case ProtoICMP:
		if r.Port != 0 {
			return fmt.Errorf("port: %d given for icmp", r.Port)
		}
	default:
		return fmt.Errorf("proto: %q is not tcp, udp or icmp", r.Proto)
	}
	if r.WaitSeconds < 0 || time.Duration(r.WaitSeconds)*time.Second > MaxProbeWait {
		return fmt.Errorf("waitSeconds: %d is not between 1 and %d", r.WaitSeconds, int(MaxProbeWait/time.Second))
	}
	return nil
}

// What the sender of a probe saw.
const (
	// OutcomeConnected: a TCP connection was established.
	OutcomeConnected = "connected"
	// OutcomeAnswered: a UDP or ICMP echo answer came back.
	OutcomeAnswered = "answered"
	// OutcomeRefused: TCP RST or ICMP port unreachable.
	OutcomeRefused = "refused"
	// OutcomeUnreachable: an ICMP destination unreachable (host, prohibited).
	OutcomeUnreachable = "unreachable"
	// OutcomeNoAnswer: nothing came back in time.
	OutcomeNoAnswer = "no answer"
)

// ProbeResult is the answer of POST ProbePath.
type ProbeResult struct {
	// Src is the probe's source address.
	Src string `json:"src"`
	// Outcome is one of the Outcome constants; Detail the sender's error, if any.
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// StopRequest is the body of POST StopPath.
type StopRequest struct {
	// Match selects the probe's packets.
	Match Match `json:"match"`
}

// Result is the answer of POST StopPath: the node's part of the path.
type Result struct {
	// Node is the node name.
	Node string `json:"node"`
	// Packets are the probe's packets, explained.
	Packets []Explained `json:"packets"`
	// Traced is how many packets VPP traced in all (the probe's and others).
	Traced int `json:"traced"`
	// Raw is VPP's "show trace" output.
	Raw string `json:"raw"`
}

// Validate checks the match.
func (r *StopRequest) Validate() error {
	if len(r.Match.Srcs) == 0 || len(r.Match.Dsts) == 0 {
		return fmt.Errorf("match: srcs (%d) and dsts (%d) must both name addresses", len(r.Match.Srcs), len(r.Match.Dsts))
	}
	return nil
}

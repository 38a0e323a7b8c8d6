// Package config is service.conf, the configuration of the service plugin (file given
// by -service-config or env SERVICE_CONFIG, loaded through an infra.ConfigLoader).
//
// Every key is optional; DefaultConfig holds the code defaults. The Kubernetes
// deployment's ConfigMap sets cleanupIdleNATSessions: true, tcpNATSessionTimeout: 180
// and otherNATSessionTimeout: 5.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConfigName is the plugin's configuration name: service.conf, -service-config,
// SERVICE_CONFIG.
const ConfigName = "service"

// Defaults applied when a timeout is 0.
const (
	// DefaultTCPNATSessionTimeout is the idle time after which a TCP NAT session is
	// deleted when tcpNATSessionTimeout is 0.
	DefaultTCPNATSessionTimeout = 180 * time.Minute
	// DefaultOtherNATSessionTimeout is the idle time after which a non-TCP NAT session
	// is deleted when otherNATSessionTimeout is 0.
	DefaultOtherNATSessionTimeout = 5 * time.Minute
	// DefaultServiceLocalEndpointWeight is the load-balancing weight of a local
	// endpoint relative to a remote one (weight 1).
	DefaultServiceLocalEndpointWeight = 1
)

// Config is the content of service.conf.
type Config struct {
	// CleanupIdleNATSessions turns on the periodic deletion of idle NAT sessions
	// (code default false; the deployment ConfigMap sets true).
	CleanupIdleNATSessions bool `json:"cleanupIdleNATSessions"`
	// TCPNATSessionTimeout is the idle time in minutes after which a TCP session is
	// deleted; 0 means DefaultTCPNATSessionTimeout (3 hours).
	TCPNATSessionTimeout uint32 `json:"tcpNATSessionTimeout"`
	// OtherNATSessionTimeout is the idle time in minutes after which a session of any
	// other protocol is deleted; 0 means DefaultOtherNATSessionTimeout (5 minutes).
	// It is also the period of the cleanup.
	OtherNATSessionTimeout uint32 `json:"otherNATSessionTimeout"`
	// ServiceLocalEndpointWeight is the load-balancing weight of endpoints running on
	// this node; remote endpoints have weight 1 (default 1: all endpoints equal).
	ServiceLocalEndpointWeight uint8 `json:"serviceLocalEndpointWeight"`
	// DisableNATVirtualReassembly makes NAT drop IP fragments instead of reassembling
	// them virtually.
	DisableNATVirtualReassembly bool `json:"disableNATVirtualReassembly"`
	// NodePortRange is the range of node ports the API server hands out
	// (kube-apiserver --service-node-port-range), "FIRST-LAST"; a node port outside
	// it is rejected (logged, counted, not rendered). Default "30000-32767".
	NodePortRange string `json:"nodePortRange"`
	// NodePortsOnThisNodeOnly renders node ports only on this node's own IPs (its VPP
	// and management addresses), as kube-proxy does, instead of on the IPs of every
	// node of the cluster (upstream Contiv's behaviour, the default). See
	// docs/PERFORMANCE.md ("Node ports in large clusters") for what changes for
	// clients.
	NodePortsOnThisNodeOnly bool `json:"nodePortsOnThisNodeOnly"`
	// DisableAffinityTimeoutEnforcement turns off what makes a ClientIP affinity
	// timeout hold in VPP (docs/dev-guide/SERVICES.md, "ClientIP affinity timeout"):
	// while a Service has ClientIP affinity the NAT44 renderer sets VPP's
	// tcp_transitory timeout to 1 s (global to VPP), deletes the Services' ended
	// sessions every second and programs VPP's affinity as the timeout minus 2 s. Off,
	// VPP's affinity is the timeout and lasts as long as any session of the client
	// lives (closed TCP sessions 240 s and more), plus the timeout.
	DisableAffinityTimeoutEnforcement bool `json:"disableAffinityTimeoutEnforcement"`
	// ServiceLoadBalancing chooses how the cnat renderer (IPv6 Services, and IPv4 ones
	// with contiv.conf's serviceRenderer: cnat) picks the backend of a new flow of
	// external traffic (node ports, external and load balancer IPs):
	// LoadBalancingDefault (VPP's flow hash modulo the number of backends, the
	// default) or LoadBalancingMaglev (VPP's Maglev table: every node picks the same
	// backend for a flow, and a backend removed moves about its share of flows only).
	// Cluster IPs keep the default. The NAT44 renderer has no Maglev and ignores it.
	ServiceLoadBalancing string `json:"serviceLoadBalancing"`
}

// Values of serviceLoadBalancing.
const (
	// LoadBalancingDefault is VPP cnat's lb_type DEFAULT.
	LoadBalancingDefault = "default"
	// LoadBalancingMaglev is VPP cnat's lb_type MAGLEV.
	LoadBalancingMaglev = "maglev"
)

// DefaultNodePortRange is the Kubernetes default node port range.
const DefaultNodePortRange = "30000-32767"

// DefaultConfig returns service.conf with every key at its code default.
func DefaultConfig() *Config {
	return &Config{ServiceLocalEndpointWeight: DefaultServiceLocalEndpointWeight}
}

// Validate reports every invalid value, naming the key.
func (c *Config) Validate() error {
	var errs []error
	if c.ServiceLocalEndpointWeight == 0 {
		errs = append(errs, fmt.Errorf("serviceLocalEndpointWeight: 0 is not a valid weight (1..255)"))
	}
	const maxMinutes = uint32(1<<31-1) / 60
	if c.TCPNATSessionTimeout > maxMinutes {
		errs = append(errs, fmt.Errorf("tcpNATSessionTimeout: %d minutes is too long (at most %d)", c.TCPNATSessionTimeout, maxMinutes))
	}
	if c.OtherNATSessionTimeout > maxMinutes {
		errs = append(errs, fmt.Errorf("otherNATSessionTimeout: %d minutes is too long (at most %d)", c.OtherNATSessionTimeout, maxMinutes))
	}
	if _, _, err := c.NodePorts(); err != nil {
		errs = append(errs, err)
	}
	switch c.ServiceLoadBalancing {
	case "", LoadBalancingDefault, LoadBalancingMaglev:
	default:
		errs = append(errs, fmt.Errorf("serviceLoadBalancing: %q is not a load-balancing method: use %q (default) or %q",
			c.ServiceLoadBalancing, LoadBalancingDefault, LoadBalancingMaglev))
	}
	return errors.Join(errs...)
}

// Maglev tells whether serviceLoadBalancing chooses Maglev.
func (c *Config) Maglev() bool { return c != nil && c.ServiceLoadBalancing == LoadBalancingMaglev }

// NodePorts returns the first and last port of NodePortRange (the default range
// when it is empty).
func (c *Config) NodePorts() (first, last uint16, err error) {
	r := c.NodePortRange
	if r == "" {
		r = DefaultNodePortRange
	}
	a, b, ok := strings.Cut(r, "-")
	lo, errA := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	hi, errB := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if !ok || errA != nil || errB != nil || lo == 0 || lo > hi {
		return 0, 0, fmt.Errorf("nodePortRange: %q is not a range FIRST-LAST of ports 1..65535", c.NodePortRange)
	}
	return uint16(lo), uint16(hi), nil
}

// TCPSessionTimeout returns the effective idle timeout of TCP NAT sessions.
func (c *Config) TCPSessionTimeout() time.Duration {
	if c.TCPNATSessionTimeout == 0 {
		return DefaultTCPNATSessionTimeout
	}
	return time.Duration(c.TCPNATSessionTimeout) * time.Minute
}

// OtherSessionTimeout returns the effective idle timeout of non-TCP NAT sessions.
func (c *Config) OtherSessionTimeout() time.Duration {
	if c.OtherNATSessionTimeout == 0 {
		return DefaultOtherNATSessionTimeout
	}
	return time.Duration(c.OtherNATSessionTimeout) * time.Minute
}

// LocalEndpointWeight returns the effective weight of local endpoints (the default
// when the field was left 0 by a caller that skipped Validate).
func (c *Config) LocalEndpointWeight() uint32 {
	if c.ServiceLocalEndpointWeight == 0 {
		return DefaultServiceLocalEndpointWeight
	}
	return uint32(c.ServiceLocalEndpointWeight)
}

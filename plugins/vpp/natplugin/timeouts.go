package natplugin

import (
	"fmt"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// VPP 25.10's NAT session timeouts in seconds (nat/lib/lib.h NAT_UDP_TIMEOUT,
// NAT_TCP_ESTABLISHED_TIMEOUT, NAT_TCP_TRANSITORY_TIMEOUT, NAT_ICMP_TIMEOUT): what
// nat44_plugin_enable sets (nat_reset_timeouts) and what a timeout left 0 in the
// model stands for.
const (
	DefaultUDPTimeout            = 300
	DefaultTCPEstablishedTimeout = 7440
	DefaultTCPTransitoryTimeout  = 240
	DefaultICMPTimeout           = 60
)

// MaxTimeout is the largest timeout accepted, in seconds. VPP takes any u32; a value
// of 2^31 or more (68 years) is a negative number written as unsigned, not a timeout.
const MaxTimeout = 1<<31 - 1

// defaultTimeouts are VPP's timeouts in the form nat_set_timeouts carries them.
var defaultTimeouts = nat_types.NatTimeouts{UDP: DefaultUDPTimeout, TCPEstablished: DefaultTCPEstablishedTimeout,
	TCPTransitory: DefaultTCPTransitoryTimeout, ICMP: DefaultICMPTimeout}

// effectiveTimeouts returns the timeouts VPP runs with for the model's value: each
// field left 0 (or no value) is VPP's default. VPP's nat_set_timeouts takes 0
// literally (a session expires at once), so 0 is never sent.
func effectiveTimeouts(t *nat.Timeouts) nat_types.NatTimeouts {
	eff := defaultTimeouts
	if v := t.GetUdp(); v != 0 {
		eff.UDP = v
	}
	if v := t.GetTcpEstablished(); v != 0 {
		eff.TCPEstablished = v
	}
	if v := t.GetTcpTransitory(); v != 0 {
		eff.TCPTransitory = v
	}
	if v := t.GetIcmp(); v != 0 {
		eff.ICMP = v
	}
	return eff
}

// timeoutsOf returns the model's form of the timeouts VPP reports: nil when they are
// VPP's defaults, else every field.
func timeoutsOf(t nat_types.NatTimeouts) *nat.Timeouts {
	if t == defaultTimeouts {
		return nil
	}
	return &nat.Timeouts{Udp: t.UDP, TcpEstablished: t.TCPEstablished, TcpTransitory: t.TCPTransitory, Icmp: t.ICMP}
}

// validateTimeouts reports the fields of t above MaxTimeout through bad.
func validateTimeouts(t *nat.Timeouts, bad func(field, format string, args ...any)) {
	for _, f := range []struct {
		name  string
		value uint32
	}{
		{"timeouts.udp", t.GetUdp()}, {"timeouts.tcp_established", t.GetTcpEstablished()},
		{"timeouts.tcp_transitory", t.GetTcpTransitory()}, {"timeouts.icmp", t.GetIcmp()},
	} {
		if f.value > MaxTimeout {
			bad(f.name, "%s: %d s is more than %d s", f.name, f.value, uint32(MaxTimeout))
		}
	}
}

// setTimeouts sends nat_set_timeouts when the effective timeouts of from and to
// differ.
func (d *globalDescriptor) setTimeouts(from, to *nat.Timeouts) error {
	old, eff := effectiveTimeouts(from), effectiveTimeouts(to)
	if old == eff {
		return nil
	}
	req := &nat44_ed.NatSetTimeouts{UDP: eff.UDP, TCPEstablished: eff.TCPEstablished, TCPTransitory: eff.TCPTransitory, ICMP: eff.ICMP}
	if err := vppbase.Call(d.Ch, req, &nat44_ed.NatSetTimeoutsReply{}); err != nil {
		return fmt.Errorf("set NAT timeouts (udp %d s, tcp_established %d s, tcp_transitory %d s, icmp %d s): %w",
			eff.UDP, eff.TCPEstablished, eff.TCPTransitory, eff.ICMP, err)
	}
	return nil
}

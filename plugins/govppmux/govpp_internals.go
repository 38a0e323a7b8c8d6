package govppmux

import (
	"math"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/core"
)

// This file holds every place where the reconnect path depends on how govpp's core
// (go.fd.io/govpp/core, pinned in go.mod) behaves inside, beyond what its API
// promises: package variables it reads, the way its connection loop drives the
// adapter, and when it calls the adapter's Disconnect. Each reliance is named below
// and asserted against the pinned govpp by govpp_internals_test.go, whose failures say
// "govpp changed ...": after a govpp upgrade, read those first.
//
// Relied on (R1-R4):
//
//   - R1, health-check globals: core.HealthCheckProbeInterval (time.Duration),
//     core.HealthCheckReplyTimeout (time.Duration) and core.HealthCheckThreshold (int)
//     are package variables that core reads each time its health-check loop starts
//     (the interval) and at every probe (the timeout and the threshold), so values
//     written before AsyncConnect apply to the connection. govpp.conf's health-check
//     settings reach core only this way.
//   - R2, the connection loop: AsyncConnect's loop calls the adapter's WaitReady before
//     every Connect; it sends Failed only after `attempts` failures; it pauses
//     `interval` between attempts, and an interval of 0 means its default of
//     core.DefaultReconnectInterval. retryingAdapter paces the attempts in WaitReady,
//     so the plugin passes attempts beyond reach and an interval of 1 ns.
//   - R3, Disconnect calls: core calls the adapter's Disconnect once when its health
//     check declares VPP gone (NotResponding or Disconnected), before its loop
//     reconnects through WaitReady and Connect, and once on Connection.Disconnect
//     while connected; never while VPP answers its probes. retryingAdapter counts
//     these calls: a count that moved since the last successful Connect means core's
//     loop owns the reconnect (coreOwns), so a reconnect after a loss gives way to it.
//   - R4, a transport reconnected underneath core: core keeps its channels and the
//     message IDs it learnt, and goes on using the adapter, when the transport is
//     reconnected without core being told (as reconnectAfterLoss does after a loss).
//     That is sound only while VPP keeps its message table, which reconnectAfterLoss
//     checks.

// setHealthCheck writes govpp's health-check package variables (R1), only the ones
// that differ, so that plugins with the same configuration never race.
func setHealthCheck(probeInterval, replyTimeout time.Duration, threshold int) {
	if core.HealthCheckProbeInterval != probeInterval {
		core.HealthCheckProbeInterval = probeInterval
	}
	if core.HealthCheckReplyTimeout != replyTimeout {
		core.HealthCheckReplyTimeout = replyTimeout
	}
	if core.HealthCheckThreshold != threshold {
		core.HealthCheckThreshold = threshold
	}
}

// coreConnectAttempts and coreConnectInterval are what the plugin gives
// core.AsyncConnect (R2): attempts beyond reach, so that core never reports Failed,
// and a pause that is negligible but not 0 (0 would mean core's default).
const (
	coreConnectAttempts = math.MaxInt32
	coreConnectInterval = time.Nanosecond
)

// connectCore starts govpp's connection loop over a, which paces the attempts (R2).
func connectCore(a adapter.VppAPI) (*core.Connection, chan core.ConnectionEvent, error) {
	return core.AsyncConnect(a, coreConnectAttempts, coreConnectInterval)
}

// Disconnect disconnects the inner client; govpp's core calls it when its health
// check declared VPP gone, and on Close (R3). The count tells a reconnect after a loss
// in progress to give way to core's own loop.
func (a *retryingAdapter) Disconnect() error {
	a.disconnects.Add(1)
	a.connMu.Lock()
	defer a.connMu.Unlock()
	return a.VppAPI.Disconnect()
}

// coreOwns tells whether govpp's core disconnected the adapter since its last
// successful Connect (R3): core's own loop then reconnects.
func (a *retryingAdapter) coreOwns() bool { return a.disconnects.Load() != a.connectedGen.Load() }

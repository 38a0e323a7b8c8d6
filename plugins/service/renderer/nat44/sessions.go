package nat44

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// GoVPPChan is the part of govpp's api.Channel that the session cleanup uses; an
// api.Channel satisfies it.
type GoVPPChan interface {
	// SendRequest sends a request expecting one reply.
	SendRequest(msg govppapi.Message) govppapi.RequestCtx
	// SendMultiRequest sends a dump request expecting a stream of details.
	SendMultiRequest(msg govppapi.Message) govppapi.MultiRequestCtx
}

const protoTCP = 6

// Label values of the proto label of the session metrics.
const (
	metricProtoTCP   = "tcp"
	metricProtoOther = "other"
)

// sessionMetrics are the metrics of the idle NAT session cleanup.
type sessionMetrics struct {
	sessions     *prometheus.GaugeVec
	deleted      *prometheus.CounterVec
	deleteErrors prometheus.Counter
}

func newSessionMetrics() *sessionMetrics {
	return &sessionMetrics{
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_nat_sessions",
			Help: "NAT44 sessions in VPP at the last cleanup pass, by protocol (tcp, other).",
		}, []string{"proto"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_nat_sessions_deleted_total",
			Help: "Idle NAT44 sessions deleted by the cleanup, by protocol (tcp, other).",
		}, []string{"proto"}),
		deleteErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_nat_session_delete_errors_total",
			Help: "Idle NAT44 sessions the cleanup failed to delete.",
		}),
	}
}

func (m *sessionMetrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.sessions, m.deleted, m.deleteErrors} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// natSession is what the cleanup keeps of one dumped session.
type natSession struct {
	inside  netip.AddrPort
	outside netip.AddrPort // the inside end as seen from the outside (a service's address)
	extHost netip.AddrPort // the remote end as seen from the inside
	proto   uint8
	// vrfs are the VRFs of the NAT users whose dump returned the session: VPP's
	// session dump ignores vrf_id, so a session of an address that is a user in
	// several VRFs comes back once per VRF, and the dump does not tell which is its
	// own.
	vrfs      []uint32
	lastHeard uint64 // VPP time (seconds since VPP started)
	idleFor   uint64 // VPP's own "time since last heard", seconds
	// timedOut is VPP's is_timed_out: idle longer than the timeout of its protocol
	// and TCP state (a closed TCP session: tcp_transitory).
	timedOut bool
}

// cleanupResult summarises one cleanup pass.
type cleanupResult struct {
	tcp, other               int
	deletedTCP, deletedOther int
	deleteErrors             int
}

// runSessionCleanup runs a cleanup pass at every tick (none without a ticker), purges
// the stale UDP sessions of every batch queued by Committed and, while some service
// has ClientIP affinity, runs the affinity pass every second (affinity.go), until ctx
// is cancelled. It is the one goroutine that uses the GoVPP channel.
func (rndr *Renderer) runSessionCleanup(ctx context.Context, ticker clock.Ticker) {
	defer rndr.cleanupDone.Done()
	var ticks <-chan time.Time
	if ticker != nil {
		defer ticker.Stop()
		ticks = ticker.C()
	}
	// The ClientIP affinity pass runs while some Service has ClientIP affinity.
	affinity := rndr.affinityTicker(nil)
	defer func() {
		if affinity != nil {
			affinity.Stop()
		}
	}()
	for {
		var affinityTicks <-chan time.Time
		if affinity != nil {
			affinityTicks = affinity.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-rndr.affinityWake:
			affinity = rndr.affinityTicker(affinity)
		case <-affinityTicks:
			rndr.runAffinityPass(ctx)
		case targets := <-rndr.purge:
			rndr.runPurge(ctx, rndr.withQueuedPurges(targets))
		case <-ticks:
			res, err := rndr.cleanupIdleSessions(ctx)
			fields := logrus.Fields{
				"tcp": res.tcp, "other": res.other, "deletedTCP": res.deletedTCP,
				"deletedOther": res.deletedOther, "deleteErrors": res.deleteErrors,
			}
			switch {
			case err != nil && ctx.Err() == nil:
				rndr.Log.WithFields(fields).WithError(err).Warn("idle NAT session cleanup failed")
			case res.deletedTCP+res.deletedOther+res.deleteErrors > 0:
				rndr.Log.WithFields(fields).Info("idle NAT sessions deleted")
			default:
				rndr.Log.WithFields(fields).Debug("no idle NAT sessions")
			}
		}
	}
}

// cleanupIdleSessions runs one pass: dump every NAT user and its sessions, count them,
// and delete those idle longer than the timeout of their protocol.
//
// Idle time is measured on VPP's clock, never on the agent's: VPP reports for each
// session when it was last heard (last_heard, seconds of VPP time) and, in the v3
// dump, how long ago that was (time_since_last_heard). Both are used: the idle time is
// the larger of time_since_last_heard and (newest last_heard of the pass - last_heard).
// The newest last_heard is a lower bound of VPP's current time, so both values are
// lower bounds of the true idle time and a session is never deleted too early, also
// when VPP was restarted independently of the agent (upstream assumed that VPP started
// with the agent and added last_heard to the agent's start time).
func (rndr *Renderer) cleanupIdleSessions(ctx context.Context) (cleanupResult, error) {
	var res cleanupResult
	sessions, newest, err := rndr.dumpSessions(ctx)
	if err != nil {
		return res, err
	}

	tcpTimeout := uint64(rndr.Config.TCPSessionTimeout() / time.Second)
	otherTimeout := uint64(rndr.Config.OtherSessionTimeout() / time.Second)
	var errs []error
	for _, s := range sessions {
		isTCP := s.proto == protoTCP
		timeout := otherTimeout
		if isTCP {
			res.tcp++
			timeout = tcpTimeout
		} else {
			res.other++
		}
		idle := max(s.idleFor, newest-s.lastHeard)
		if idle < timeout {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := rndr.deleteSession(s); err != nil {
			res.deleteErrors++
			rndr.sessionMetrics.deleteErrors.Inc()
			if len(errs) < 3 {
				errs = append(errs, err)
			}
			continue
		}
		label := metricProtoOther
		if isTCP {
			res.deletedTCP++
			label = metricProtoTCP
		} else {
			res.deletedOther++
		}
		rndr.sessionMetrics.deleted.WithLabelValues(label).Inc()
	}
	rndr.sessionMetrics.sessions.WithLabelValues(metricProtoTCP).Set(float64(res.tcp))
	rndr.sessionMetrics.sessions.WithLabelValues(metricProtoOther).Set(float64(res.other))
	if len(errs) > 0 {
		return res, fmt.Errorf("%d of %d idle sessions not deleted: %w", res.deleteErrors,
			res.deleteErrors+res.deletedTCP+res.deletedOther, errors.Join(errs...))
	}
	return res, nil
}

// dumpSessions returns every NAT session of VPP, each once, and the newest last-heard
// time among them. A session is identified by its inside lookup key without the VRF
// (inside end, remote end as seen from inside, protocol): a session returned again by
// the dump of the same address in another VRF (the dump ignores vrf_id) is listed
// once and remembers both VRFs.
func (rndr *Renderer) dumpSessions(ctx context.Context) (sessions []natSession, newest uint64, err error) {
	users, err := rndr.dumpNATUsers()
	if err != nil {
		return nil, 0, err
	}
	type sessionKey struct {
		inside, extHost netip.AddrPort
		proto           uint8
	}
	index := make(map[sessionKey]int)
	for _, u := range users {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		list, err := rndr.dumpUserSessions(u)
		if err != nil {
			return nil, 0, err
		}
		for _, s := range list {
			newest = max(newest, s.lastHeard)
			k := sessionKey{inside: s.inside, extHost: s.extHost, proto: s.proto}
			if i, dup := index[k]; dup {
				if !slices.Contains(sessions[i].vrfs, u.vrf) {
					sessions[i].vrfs = append(sessions[i].vrfs, u.vrf)
				}
				continue
			}
			index[k] = len(sessions)
			sessions = append(sessions, s)
		}
	}
	return sessions, newest, nil
}

// natUser is one NAT user (inside address and its VRF).
type natUser struct {
	addr netip.Addr
	vrf  uint32
}

func (rndr *Renderer) dumpNATUsers() ([]natUser, error) {
	var users []natUser
	req := rndr.GoVPPChan.SendMultiRequest(&nat44_ed.Nat44UserDump{})
	for {
		d := &nat44_ed.Nat44UserDetails{}
		last, err := req.ReceiveReply(d)
		if err != nil {
			return nil, fmt.Errorf("dump NAT users: %w", err)
		}
		if last {
			return users, nil
		}
		users = append(users, natUser{addr: netip.AddrFrom4(d.IPAddress), vrf: d.VrfID})
	}
}

func (rndr *Renderer) dumpUserSessions(u natUser) ([]natSession, error) {
	var list []natSession
	req := rndr.GoVPPChan.SendMultiRequest(&nat44_ed.Nat44UserSessionV3Dump{IPAddress: u.addr.As4(), VrfID: u.vrf})
	for {
		d := &nat44_ed.Nat44UserSessionV3Details{}
		last, err := req.ReceiveReply(d)
		if err != nil {
			return nil, fmt.Errorf("dump NAT sessions of user %s (VRF %d): %w", u.addr, u.vrf, err)
		}
		if last {
			return list, nil
		}
		s := natSession{
			inside:    netip.AddrPortFrom(netip.AddrFrom4(d.InsideIPAddress), d.InsidePort),
			outside:   netip.AddrPortFrom(netip.AddrFrom4(d.OutsideIPAddress), d.OutsidePort),
			extHost:   netip.AddrPortFrom(netip.AddrFrom4(d.ExtHostAddress), d.ExtHostPort),
			proto:     uint8(d.Protocol),
			vrfs:      []uint32{u.vrf},
			lastHeard: d.LastHeard,
			idleFor:   d.TimeSinceLastHeard,
			timedOut:  d.IsTimedOut,
		}
		// In a twice-NAT session the inside talks to the twice-NAT address of the
		// remote end, which is what VPP's inside lookup key holds.
		if d.Flags&nat_types.NAT_IS_TWICE_NAT != 0 && netip.AddrFrom4(d.ExtHostNatAddress) != netip.IPv4Unspecified() {
			s.extHost = netip.AddrPortFrom(netip.AddrFrom4(d.ExtHostNatAddress), d.ExtHostNatPort)
		}
		list = append(list, s)
	}
}

// deleteSession deletes one session by its inside end and remote host, trying the
// VRFs it may be in until one has it. (A session of an address that is a user in
// several VRFs is deleted in the first VRF that has one with its key; should each VRF
// have one, the others follow in later passes.)
func (rndr *Renderer) deleteSession(s natSession) error {
	var err error
	for _, vrf := range s.vrfs {
		if err = rndr.deleteSessionIn(s, vrf); !errors.Is(err, govppapi.NO_SUCH_ENTRY) {
			return err
		}
	}
	return err
}

// deleteSessionIn deletes one session in the given VRF.
func (rndr *Renderer) deleteSessionIn(s natSession, vrf uint32) error {
	req := &nat44_ed.Nat44DelSession{
		Address:        s.inside.Addr().As4(),
		Port:           s.inside.Port(),
		Protocol:       s.proto,
		VrfID:          vrf,
		Flags:          nat_types.NAT_IS_INSIDE | nat_types.NAT_IS_EXT_HOST_VALID,
		ExtHostAddress: s.extHost.Addr().As4(),
		ExtHostPort:    s.extHost.Port(),
	}
	reply := &nat44_ed.Nat44DelSessionReply{}
	if err := rndr.GoVPPChan.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("delete NAT session %s -> %s (proto %d, VRF %d): %w", s.inside, s.extHost, s.proto, vrf, err)
	}
	if reply.Retval != 0 {
		return fmt.Errorf("delete NAT session %s -> %s (proto %d, VRF %d): %w", s.inside, s.extHost, s.proto, vrf,
			govppapi.RetvalToVPPApiError(reply.Retval))
	}
	return nil
}

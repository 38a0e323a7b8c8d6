package govppmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux/vppsock"
)

// ExpectedVPPVersion is the VPP release the pinned govpp binapi was generated from.
// A VPP of another release is accepted (the message check decides) but logged.
const ExpectedVPPVersion = "25.10"

// ClientName is the name the agent registers with VPP (sockclnt_create).
const ClientName = "contiv-agent"

// ErrConnectionLost is wrapped by the errors of requests that failed because the
// connection to VPP was lost (VPP closed or reset the socket, or govpp's health
// check declared VPP gone); the error names the cause.
var ErrConnectionLost = vppsock.ErrConnectionLost

// API is what the VPP plugins need from govppmux.
type API interface {
	// NewAPIChannel returns a new channel to VPP with the configured reply timeout.
	NewAPIChannel() (govppapi.Channel, error)
	// NewAPIChannelBuffered is NewAPIChannel with the given request and reply buffer
	// sizes (useful for long pipelines).
	NewAPIChannelBuffered(reqChanBufSize, replyChanBufSize int) (govppapi.Channel, error)
	// RegisterMessages declares messages the caller will use. Before AfterInit they
	// are checked all together by AfterInit; afterwards they are checked at once. The
	// error names every message VPP does not know.
	RegisterMessages(msgs ...govppapi.Message) error
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// Config loads govpp.conf; nil means defaults.
	Config infra.ConfigLoader
	// Health receives the state of the VPP connection. Optional.
	Health *health.Reporter
	// OnReconnect is called (from the connection watcher) whenever the connection to
	// VPP is re-established, after the version and the messages were checked again:
	// VPP may have restarted with an empty configuration, so the agent wires it to
	// request a full (healing) resync. An error is logged and reported to Health.
	// Optional. A callback rather than an event loop keeps govppmux below the
	// Contiv plugins (docs/ARCHITECTURE.md §2).
	OnReconnect func() error
	// Clock paces the reconnect attempts (nil: the real clock); tests inject a fake.
	Clock clock.Clock
}

// VPPInfo describes the VPP the agent is connected to.
type VPPInfo struct {
	// Connected tells whether the connection is up now.
	Connected bool
	// Version is the version show_version reported at the last connect.
	Version string
	// BuildDate is the build date show_version reported.
	BuildDate string
	// Reconnects counts the connections re-established after a loss.
	Reconnects int
	// FailedAttempts counts the failed connection attempts in a row (0 while
	// connected); the plugin keeps trying, with backoff, for as long as it runs.
	FailedAttempts int
}

// Plugin is the govppmux plugin. Create it with NewPlugin (or set Deps on a zero
// Plugin), then Init, AfterInit and finally Close.
type Plugin struct {
	Deps

	log    logrus.FieldLogger
	config Config

	adapter  adapter.VppAPI
	retry    *retryingAdapter
	stop     chan struct{} // closed to interrupt the reconnect backoff
	stopOnce sync.Once
	conn     *core.Connection
	events   chan core.ConnectionEvent
	// losses receives the transport's reports of a connection VPP closed (vppsock
	// only; nil with govpp's socketclient, which only the health check watches).
	losses chan error
	// down is set while the plugin handles a loss (from the report of the
	// transport or an event of govpp's core), until the next connection: a second
	// notice of the same loss is not reported again.
	down atomic.Bool
	// session is cancelled, with the loss as the cause, when the connection is
	// lost; the streams of pipes are opened under it.
	session atomic.Pointer[connSession]

	mu         sync.Mutex
	msgs       map[string]govppapi.Message // by name_crc
	checked    bool                        // AfterInit ran: check new messages at once
	info       VPPInfo
	connected  atomic.Bool
	closeOnce  sync.Once
	done       chan struct{}
	wg         sync.WaitGroup
	inited     bool
	closedFlag atomic.Bool
	// health reports to Deps.Health, failing liveness when VPP stays unanswered
	// longer than liveness-timeout.
	health *watchdog
}

var (
	_ API                 = (*Plugin)(nil)
	_ govppapi.Connection = (*Plugin)(nil)
)

// connSession is the context of one connection to VPP.
type connSession struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newConnSession() *connSession {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &connSession{ctx: ctx, cancel: cancel}
}

// NewPlugin returns a plugin with the given dependencies (Init not yet called).
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String returns the plugin name.
func (p *Plugin) String() string { return "govppmux" }

// Config returns the configuration in force (valid after Init).
func (p *Plugin) Config() Config { return p.config }

// Init loads and validates govpp.conf, connects to VPP (waiting until govpp reports
// the connection up, or fails after its retries), logs the VPP version and starts
// watching the connection.
func (p *Plugin) Init() error {
	if p.inited {
		return nil
	}
	p.log = infra.LoggerOr(p.Log, p.String())
	p.config = DefaultConfig()
	if p.Deps.Config != nil {
		if _, err := p.Deps.Config.LoadConfig(&p.config); err != nil {
			return fmt.Errorf("govppmux: load govpp.conf: %w", err)
		}
	}
	if err := p.config.Validate(); err != nil {
		return fmt.Errorf("govppmux: %w", err)
	}
	p.msgs = make(map[string]govppapi.Message)
	p.done = make(chan struct{})
	clk := p.Deps.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p.health = newWatchdog(clk, time.Duration(p.config.LivenessTimeout), p.config.BinAPISocketPath, p.log, p.Health, p.done, &p.wg)
	p.report(health.Init, "connecting to VPP at "+p.config.BinAPISocketPath)
	p.checkStatsSocket()
	p.applyHealthCheckConfig()

	transport, err := NewTransport(p.config)
	if err != nil {
		return fmt.Errorf("govppmux: %w", err)
	}
	p.adapter = transport
	p.session.Store(newConnSession())
	if lr, ok := transport.(lossReporter); ok {
		p.losses = make(chan error, 1)
		lr.SetLossCallback(p.lossReported)
	}
	p.log.WithField("socket-client", p.config.SocketClient).Debug("VPP socket API transport selected")
	p.stop = make(chan struct{})
	p.retry = newRetryingAdapter(p.adapter, clk, time.Duration(p.config.RetryConnectTimeout),
		time.Duration(p.config.RetryConnectMaxTimeout), p.config.RetryConnectCount, p.stop, p.attemptFailed)
	// govpp's loop must never give up (Failed): the adapter paces the attempts and
	// spends the start-up budget; govpp's own pause is made negligible.
	conn, events, err := connectCore(p.retry)
	if err != nil {
		return fmt.Errorf("govppmux: connect to VPP at %s: %w", p.config.BinAPISocketPath, err)
	}
	p.conn, p.events = conn, events
	if err := p.waitConnected(); err != nil {
		p.stopRetrying()
		p.conn.Disconnect()
		p.conn = nil
		p.report(health.Error, err.Error())
		return err
	}
	p.inited = true
	p.wg.Add(1)
	go p.watch()
	return nil
}

// NewTransport returns the implementation of VPP's socket API that cfg.SocketClient
// selects, for cfg.BinAPISocketPath, registering as ClientName. The plugin uses it;
// benchmarks and tests use it to compare the transports.
func NewTransport(cfg Config) (adapter.VppAPI, error) {
	switch cfg.SocketClient {
	case SocketClientGovpp:
		c := socketclient.NewVppClient(cfg.BinAPISocketPath)
		c.SetClientName(ClientName)
		c.SetConnectTimeout(time.Duration(cfg.ConnectTimeout))
		return c, nil
	case SocketClientVPPSock, "":
		c, err := vppsock.New(vppsock.Options{
			SocketPath:     cfg.BinAPISocketPath,
			ClientName:     ClientName,
			ConnectTimeout: time.Duration(cfg.ConnectTimeout),
		})
		if err != nil {
			return nil, fmt.Errorf("socket-client %s: %w", cfg.SocketClient, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("socket-client: must be %q or %q, got %q", SocketClientVPPSock, SocketClientGovpp, cfg.SocketClient)
}

// lossReported is the transport's LossCallback (in its reader goroutine): the watch
// goroutine handles the loss. A loss already waiting covers this one.
func (p *Plugin) lossReported(err error) {
	select {
	case p.losses <- err:
	default:
	}
}

// waitConnected waits for the first connection, or until the start-up budget of
// failed attempts (retry-connect-count) is spent.
func (p *Plugin) waitConnected() error {
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				return errors.New("govppmux: connection event channel closed")
			}
			switch ev.State {
			case core.Connected:
				return p.onConnected(false)
			case core.Failed:
				return fmt.Errorf("govppmux: connect to VPP at %s: %w", p.config.BinAPISocketPath, errOr(ev.Error, "retries exhausted"))
			default:
				p.log.WithField("state", ev.State).WithError(ev.Error).Debug("VPP connection not up yet")
			}
		case <-p.retry.exhausted:
			return fmt.Errorf("govppmux: connect to VPP at %s: %d attempt(s) failed (retry-connect-count %d): %w",
				p.config.BinAPISocketPath, p.retry.failuresInRow(), p.config.RetryConnectCount, errOr(p.retry.lastError(), "unknown error"))
		}
	}
}

// attemptFailed reports a failed connection attempt: the plugin stays INIT (alive, not
// ready) with the reason, and keeps trying.
func (p *Plugin) attemptFailed(at attempt) {
	what := "connecting to"
	if at.everConnected {
		what = "reconnecting to"
	}
	reason := fmt.Sprintf("%s VPP at %s: attempt %d failed (%v), next in %v", what, p.config.BinAPISocketPath, at.n, at.err, at.next)
	// govpp starts reconnecting as it sends the Disconnected event: a failed attempt can
	// be reported before watch has handled that event, and must not leave the plugin
	// saying it is connected while its health says it is reconnecting.
	p.connected.Store(false)
	p.report(health.Init, reason)
	log := p.log.WithFields(logrus.Fields{"attempt": at.n, "next-in": at.next}).WithError(at.err)
	if at.n&(at.n-1) == 0 { // 1, 2, 4, 8, ...: the log stays short during a long outage
		log.Warn(what + " VPP failed; still trying")
	} else {
		log.Debug(what + " VPP failed; still trying")
	}
}

// stopRetrying interrupts the reconnect backoff (before the connection is closed).
func (p *Plugin) stopRetrying() {
	p.stopOnce.Do(func() {
		if p.stop != nil {
			close(p.stop)
		}
	})
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// AfterInit checks that VPP knows every message registered so far; the error names
// each missing one and fails the start-up.
func (p *Plugin) AfterInit() error {
	p.mu.Lock()
	p.checked = true
	msgs := p.registeredLocked()
	p.mu.Unlock()
	if err := p.checkMessages(msgs); err != nil {
		p.report(health.Error, err.Error())
		return err
	}
	return nil
}

// RegisterMessages implements API.
func (p *Plugin) RegisterMessages(msgs ...govppapi.Message) error {
	p.mu.Lock()
	if p.msgs == nil {
		p.msgs = make(map[string]govppapi.Message)
	}
	for _, m := range msgs {
		p.msgs[m.GetMessageName()+"_"+m.GetCrcString()] = m
	}
	checkNow := p.checked
	p.mu.Unlock()
	if !checkNow {
		return nil
	}
	return p.checkMessages(msgs)
}

func (p *Plugin) registeredLocked() []govppapi.Message {
	out := make([]govppapi.Message, 0, len(p.msgs))
	for _, m := range p.msgs {
		out = append(out, m)
	}
	return out
}

// checkMessages returns an error naming every message of msgs missing from VPP's
// message table.
func (p *Plugin) checkMessages(msgs []govppapi.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if p.conn == nil {
		return errors.New("govppmux: not connected to VPP")
	}
	ch, err := p.conn.NewAPIChannel()
	if err != nil {
		return fmt.Errorf("govppmux: check messages: %w", err)
	}
	defer ch.Close()
	err = ch.CheckCompatiblity(msgs...)
	var ce *govppapi.CompatibilityError
	switch {
	case err == nil:
		p.log.WithField("messages", len(msgs)).Debug("VPP knows every registered message")
		return nil
	case errors.As(err, &ce):
		missing := append([]string(nil), ce.IncompatibleMessages...)
		sort.Strings(missing)
		return fmt.Errorf("govppmux: VPP %s lacks %d of %d message(s) the agent uses: %s",
			p.VPPInfo().Version, len(missing), len(msgs), strings.Join(missing, ", "))
	default:
		return fmt.Errorf("govppmux: check messages: %w", err)
	}
}

// NewAPIChannel implements API. The channel's request and reply buffers hold
// 2*ChannelWindow messages, so pipelines on it may keep ChannelWindow requests in
// flight (Window).
func (p *Plugin) NewAPIChannel() (govppapi.Channel, error) {
	return p.NewAPIChannelBuffered(2*ChannelWindow, 2*ChannelWindow)
}

// NewAPIChannelBuffered implements API. Window of the channel is at most
// replyChanBufSize.
func (p *Plugin) NewAPIChannelBuffered(reqChanBufSize, replyChanBufSize int) (govppapi.Channel, error) {
	if p.conn == nil || p.closedFlag.Load() {
		return nil, errNotConnected
	}
	ch, err := newChannel(p.conn, reqChanBufSize, replyChanBufSize, time.Duration(p.config.ReplyTimeout))
	if err != nil {
		return nil, err
	}
	ch.base = p.sessionContext
	return ch, nil
}

// sessionContext returns the context of the current connection to VPP: cancelled,
// with the loss as the cause, when the connection is lost.
func (p *Plugin) sessionContext() context.Context { return p.session.Load().ctx }

// NewChannel opens a channel on conn as the plugin's NewAPIChannel does (reply buffer
// of 2*ChannelWindow, window ChannelWindow, pipelines over a stream of conn), for
// tools and tests that connect govpp's core themselves.
func NewChannel(conn *core.Connection, replyTimeout time.Duration) (govppapi.Channel, error) {
	ch, err := newChannel(conn, 2*ChannelWindow, 2*ChannelWindow, replyTimeout)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ch, nil
}

func newChannel(conn *core.Connection, reqChanBufSize, replyChanBufSize int, replyTimeout time.Duration) (*sizedChannel, error) {
	ch, err := conn.NewAPIChannelBuffered(reqChanBufSize, replyChanBufSize)
	if err != nil {
		return nil, fmt.Errorf("govppmux: new channel: %w", err)
	}
	sc := &sizedChannel{Channel: ch, replyBuf: replyChanBufSize, opener: conn}
	sc.SetReplyTimeout(replyTimeout)
	return sc, nil
}

// IsConnected tells whether the connection to VPP is up now.
func (p *Plugin) IsConnected() bool { return p.connected.Load() }

// VPPInfo returns what is known about the VPP the agent is connected to.
func (p *Plugin) VPPInfo() VPPInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := p.info
	info.Connected = p.connected.Load()
	if p.retry != nil {
		info.FailedAttempts = p.retry.failuresInRow()
	}
	return info
}

// Close stops watching the connection and disconnects from VPP.
func (p *Plugin) Close() error {
	p.closeOnce.Do(func() {
		p.closedFlag.Store(true)
		p.stopRetrying()
		if p.done != nil {
			close(p.done)
		}
		p.wg.Wait()
		if p.conn != nil {
			p.conn.Disconnect()
		}
		if ls, ok := p.adapter.(lossReporter); ok {
			ls.SetLossCallback(nil)
		}
		if sess := p.session.Load(); sess != nil {
			sess.cancel(errClosed)
		}
		p.connected.Store(false)
	})
	return nil
}

// errClosed cancels the session context on Close.
var errClosed = errors.New("govppmux: plugin closed")

// watch follows govpp's connection events until Close.
func (p *Plugin) watch() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case ev := <-p.events:
			p.handleEvent(ev)
		case err := <-p.losses: // nil channel without a lossReporter
			p.handleLoss(err)
		}
	}
}

// handleLoss handles the transport's report that VPP closed the connection: VPP is
// disconnected at once, as after govpp's health check declared it gone, and the
// plugin reconnects underneath govpp's core (same backoff and failure reports),
// then checks VPP again and requests the resync as after core's Connected event.
// If core disconnects meanwhile (its health probe failed), core's loop reconnects
// and reports Connected instead; if VPP came back with another message table, core
// must relearn it: its next health probe fails and it reconnects.
func (p *Plugin) handleLoss(cause error) {
	if p.closedFlag.Load() || !p.markDown("Disconnected", cause) {
		return // Close, or the loss is already being handled
	}
	err := p.retry.reconnectAfterLoss()
	switch {
	case err == nil:
	case errors.Is(err, errStopped):
		return
	case errors.Is(err, errCoreTookOver):
		p.log.Debug("govpp's core reconnects to VPP itself")
		return
	case errors.Is(err, errTableChanged):
		p.retry.markLost(fmt.Errorf("govppmux: %w: %v", ErrConnectionLost, err))
		p.log.WithError(err).Warn("VPP came back with another message table; govpp's core reconnects at its next health probe")
		p.report(health.Init, "VPP disconnected, reconnecting: "+err.Error()+"; waiting for govpp's health probe")
		return
	default:
		p.log.WithError(err).Error("reconnecting to VPP after the loss failed")
		return
	}
	if err := p.onConnected(true); err != nil {
		if p.retry.coreOwns() {
			p.log.WithError(err).Debug("govpp's core disconnected while the plugin checked VPP; core reconnects itself")
			return
		}
		p.log.WithError(err).Error("VPP reconnected but is not usable")
		p.report(health.Error, err.Error())
		return
	}
	p.afterReconnect()
}

// markDown records that the connection to VPP is lost (state is govpp's name of
// it, cause why) and reports it: the plugin is not connected, its health is INIT
// with the cause, the session context is cancelled (pipes in flight fail with the
// cause) and failed sends name it. It returns false when the loss was already
// recorded (a second notice of it).
func (p *Plugin) markDown(state string, cause error) bool {
	if !p.down.CompareAndSwap(false, true) {
		p.log.WithField("state", state).WithError(cause).Debug("VPP loss already handled")
		return false
	}
	p.connected.Store(false)
	reason := "VPP " + strings.ToLower(state) + ", reconnecting"
	if cause != nil {
		reason += ": " + cause.Error()
	}
	lost := cause
	if !errors.Is(lost, ErrConnectionLost) {
		lost = fmt.Errorf("%w: VPP %s (govpp health check)", ErrConnectionLost, strings.ToLower(state))
		if cause != nil {
			lost = fmt.Errorf("%w: %v", lost, cause)
		}
	}
	lost = fmt.Errorf("govppmux: %w", lost)
	p.retry.markLost(lost)
	if sess := p.session.Load(); sess != nil {
		sess.cancel(lost)
	}
	p.log.WithField("state", state).WithError(cause).Warn("lost connection to VPP, reconnecting (with backoff, for as long as the agent runs)")
	p.report(health.Init, reason)
	p.health.down()
	return true
}

func (p *Plugin) handleEvent(ev core.ConnectionEvent) {
	log := p.log.WithField("state", ev.State)
	switch ev.State {
	case core.Connected:
		if err := p.onConnected(true); err != nil {
			log.WithError(err).Error("VPP reconnected but is not usable")
			p.report(health.Error, err.Error())
			return
		}
		p.afterReconnect()
	case core.Disconnected, core.NotResponding:
		p.markDown(ev.State.String(), ev.Error)
	case core.Failed:
		// not expected: govpp is given attempts beyond reach (see Init)
		p.connected.Store(false)
		err := errOr(ev.Error, "retries exhausted")
		log.WithError(err).Error("govpp gave up reconnecting to VPP")
		p.report(health.Error, "cannot reconnect to VPP: "+err.Error())
	}
}

// onConnected reads the VPP version, re-checks the registered messages after a
// reconnect and reports the connection up.
func (p *Plugin) onConnected(reconnect bool) error {
	// The transport is connected again: a new loss is a new one, and pipes open
	// their streams under the new connection's context.
	if p.down.CompareAndSwap(true, false) {
		p.session.Store(newConnSession())
	}
	ver, err := p.showVersion()
	if err != nil {
		return fmt.Errorf("govppmux: show_version: %w", err)
	}
	p.mu.Lock()
	p.info.Version, p.info.BuildDate = ver.Version, ver.BuildDate
	if reconnect {
		p.info.Reconnects++
	}
	msgs := p.registeredLocked()
	p.mu.Unlock()
	log := p.log.WithFields(logrus.Fields{"version": ver.Version, "build-date": ver.BuildDate, "socket": p.config.BinAPISocketPath})
	if !strings.HasPrefix(ver.Version, ExpectedVPPVersion) {
		log.WithField("expected", ExpectedVPPVersion).Warn("VPP version differs from the one the binary API was generated for")
	}
	if reconnect {
		if err := p.checkMessages(msgs); err != nil {
			return err
		}
		log.Warn("reconnected to VPP")
	} else {
		log.Info("connected to VPP")
	}
	p.connected.Store(true)
	p.health.answered()
	p.report(health.OK, "connected to VPP "+ver.Version)
	return nil
}

func (p *Plugin) showVersion() (*vpe.ShowVersionReply, error) {
	ch, err := p.conn.NewAPIChannel()
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	ch.SetReplyTimeout(time.Duration(p.config.ConnectTimeout))
	reply := &vpe.ShowVersionReply{}
	if err := ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(reply); err != nil {
		return nil, err
	}
	return reply, nil
}

// afterReconnect runs OnReconnect (the agent's request for a full resync: VPP may
// have restarted with an empty configuration).
func (p *Plugin) afterReconnect() {
	if p.OnReconnect == nil {
		return
	}
	if err := p.OnReconnect(); err != nil {
		p.log.WithError(err).Error("cannot request the resync after the VPP reconnect")
		p.report(health.Error, "VPP reconnected but the resync could not be requested: "+err.Error())
		return
	}
	p.log.Info("resync requested after the VPP reconnect")
}

// report passes the state of the VPP connection to Deps.Health, through the
// watchdog of liveness-timeout.
func (p *Plugin) report(state health.State, reason string) {
	if p.health != nil {
		p.health.report(state, reason)
	} else if p.Health != nil {
		p.Health.Report(state, reason)
	}
}

// checkStatsSocket logs whether the configured stats socket exists (the data-plane
// metrics of plugins/statscollector are read through it).
func (p *Plugin) checkStatsSocket() {
	path := p.config.StatsSocketPath
	if path == "" {
		return
	}
	if _, err := os.Stat(path); err != nil {
		p.log.WithField("stats-socket-path", path).WithError(err).Warn("VPP stats socket not available: the data-plane metrics stay empty until it appears")
		return
	}
	p.log.WithField("stats-socket-path", path).Debug("VPP stats socket present")
}

// applyHealthCheckConfig sets govpp's health-check package variables from the
// configuration (setHealthCheck).
func (p *Plugin) applyHealthCheckConfig() {
	setHealthCheck(time.Duration(p.config.HealthCheckProbeInterval), time.Duration(p.config.HealthCheckReplyTimeout),
		p.config.HealthCheckThreshold)
}

// errNotConnected is returned by the stream methods before Init or after Close.
var errNotConnected = errors.New("govppmux: not connected to VPP (Init not run or plugin closed)")

// NewStream implements govppapi.Connection: a stream over the shared connection,
// for requests channels cannot carry (reply followed by details).
func (p *Plugin) NewStream(ctx context.Context, options ...govppapi.StreamOption) (govppapi.Stream, error) {
	if p.conn == nil || p.closedFlag.Load() {
		return nil, errNotConnected
	}
	return p.conn.NewStream(ctx, options...)
}

// Invoke implements govppapi.Connection: one request and its reply over a stream.
func (p *Plugin) Invoke(ctx context.Context, req, reply govppapi.Message) error {
	if p.conn == nil || p.closedFlag.Load() {
		return errNotConnected
	}
	return p.conn.Invoke(ctx, req, reply)
}

// WatchEvent implements govppapi.Connection: a watcher of VPP events of the given type.
func (p *Plugin) WatchEvent(ctx context.Context, event govppapi.Message) (govppapi.Watcher, error) {
	if p.conn == nil || p.closedFlag.Load() {
		return nil, errNotConnected
	}
	return p.conn.WatchEvent(ctx, event)
}

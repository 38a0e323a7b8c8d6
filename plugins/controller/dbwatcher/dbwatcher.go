package dbwatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Defaults of the controller.conf values the watcher takes.
const (
	// DefaultDelayLocalResync is how long the watcher waits for etcd before it resyncs
	// from the local mirror.
	DefaultDelayLocalResync = 5 * time.Second
	// DefaultRemoteDBProbingInterval is the period of the etcd connection probe.
	DefaultRemoteDBProbingInterval = 3 * time.Second
)

// Queue sizes. The change queue only decouples the watch from the loop: when it is full
// the watch waits (the loop coalesces changes faster than etcd delivers them).
const (
	changeQueueSize = 1000
	resyncQueueSize = 10
)

// probeKey is read to check the etcd connection; it need not exist.
const probeKey = "/probe-etcd-connection"

// ExternalSource is the Source of the ExternalConfigChange events the watcher sends.
const ExternalSource = "db"

// Deps lists what the watcher needs.
type Deps struct {
	// Log is the watcher's logger; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// NodeName is this node's name, the agent label: /vnf-agent/<NodeName>/ holds the
	// external configuration of this node. Required when etcd is enabled.
	NodeName string
	// EventLoop receives the DBResync, KubeStateChange and ExternalConfigChange events.
	EventLoop api.EventLoop
	// EtcdConfig loads etcd.conf; nil (or a missing optional file) disables etcd: the
	// agent then runs from the local mirror only.
	EtcdConfig infra.ConfigLoader
	// BoltConfig loads bolt.conf; nil means the defaults.
	BoltConfig infra.ConfigLoader
	// ExternalConfigCodec decodes a value of the external configuration; key is the part
	// after /vnf-agent/<NodeName>/ (a vpp-agent model key). It returns (nil, nil) for keys
	// that are not configuration (they are ignored). nil ignores the external
	// configuration altogether (it is then neither listed nor watched).
	ExternalConfigCodec func(key string, data []byte) (proto.Message, error)
	// MirrorHealth receives the state of the bolt mirror: OK, or DEGRADED from the start
	// that found it damaged (and set it aside) until it is rebuilt from etcd; optional.
	MirrorHealth *health.Reporter
	// Registerer receives the watcher's metrics; optional.
	Registerer prometheus.Registerer
	// StatusReporter is told every change of the etcd connection state (and the state
	// found by the first probe), for readiness; optional, never called when etcd is
	// disabled. It is called from the prober goroutine and must not block.
	StatusReporter func(connected bool, reason string)
	// DelayLocalResync is delayLocalResync of controller.conf; 0 means the default.
	DelayLocalResync time.Duration
	// RemoteDBProbingInterval is remoteDBProbingInterval of controller.conf; 0 means the
	// default.
	RemoteDBProbingInterval time.Duration
	// Clock drives the watcher's timers (local resync delay, probes, retries); nil means
	// the real clock.
	Clock clock.WithTicker
	// Timing, when set, is asked at Init for delayLocalResync and remoteDBProbingInterval
	// (the controller's configuration, loaded by then); it overrides the two fields above.
	Timing func() (delayLocalResync, remoteDBProbingInterval time.Duration)
}

// DBWatcher feeds the controller's event loop with the Kubernetes state from etcd (or,
// while etcd is out of reach at start-up, from the local bolt mirror) and with the
// external configuration of this node. See the package documentation for the rules.
type DBWatcher struct {
	Deps

	etcdCfg *EtcdConfig // nil when etcd is disabled
	boltCfg BoltConfig
	client  *clientv3.Client
	local   *localDB
	mirrorW *mirrorWriter // writes local
	metrics *metrics
	// mirrorReset is set when Init found the mirror damaged, until it is rebuilt;
	// mirrorAside is where the damaged file went.
	mirrorReset atomic.Bool
	mirrorAside string
	// registered is set once the metrics are registered with Registerer.
	registered bool

	connected atomic.Bool
	resyncReq chan struct{} // resync requests, coalesced by the loop
	connCh    chan bool     // connection state changes: prober -> loop
	changes   chan change   // watched changes: watch goroutine -> loop
	// pending holds the events not yet taken by the event loop, coalesced per key.
	pending *changeTracker
	// pumpWake is set when the event loop cannot drain pending itself (it is not an
	// api.EventSourceRegistrar): the pump goroutine then pushes the events.
	pumpWake chan struct{}

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// Owned by the loop goroutine.
	loop loopState
}

// NewDBWatcher returns a watcher with its dependencies set.
func NewDBWatcher(deps Deps) *DBWatcher { return &DBWatcher{Deps: deps} }

// String names the plugin.
func (w *DBWatcher) String() string { return "dbwatcher" }

// Init loads and validates etcd.conf and bolt.conf, opens the bolt mirror and prepares
// the etcd client. With allow-delayed-start false it also checks that etcd answers
// within dial-timeout. Nothing runs until AfterInit.
func (w *DBWatcher) Init() (err error) {
	w.Log = infra.LoggerOr(w.Log, w.String())
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}
	if w.EventLoop == nil {
		return errors.New("dbwatcher: no event loop given")
	}
	if w.Timing != nil {
		w.DelayLocalResync, w.RemoteDBProbingInterval = w.Timing()
	}
	if w.DelayLocalResync < 0 || w.RemoteDBProbingInterval < 0 {
		return fmt.Errorf("dbwatcher: negative delayLocalResync %v or remoteDBProbingInterval %v", w.DelayLocalResync, w.RemoteDBProbingInterval)
	}
	if w.DelayLocalResync == 0 {
		w.DelayLocalResync = DefaultDelayLocalResync
	}
	if w.RemoteDBProbingInterval == 0 {
		w.RemoteDBProbingInterval = DefaultRemoteDBProbingInterval
	}
	if err := w.loadConfigs(); err != nil {
		return err
	}

	w.resyncReq = make(chan struct{}, resyncQueueSize)
	w.connCh = make(chan bool, 1)
	w.changes = make(chan change, changeQueueSize)
	w.pending = newChangeTracker()
	w.metrics = newMetrics(w.pending.len)
	w.pending.delivered = func(resource string) { w.metrics.changes.WithLabelValues(resource).Inc() }
	w.pending.coalesced = w.metrics.coalesced.Inc

	if err := w.openMirror(); err != nil {
		return err
	}
	w.mirrorW = newMirrorWriter(w.local, w.Clock, w.Log)
	w.mirrorW.afterSnapshot = w.mirrorRebuilt
	defer func() {
		if err != nil {
			w.releaseResources()
		}
	}()
	if w.etcdCfg != nil {
		if err := w.connectEtcd(); err != nil {
			return fmt.Errorf("dbwatcher: %w", err)
		}
	}
	if w.Registerer != nil {
		if err := w.metrics.register(w.Registerer); err != nil {
			return fmt.Errorf("dbwatcher: register metrics: %w", err)
		}
		w.registered = true
	}
	return nil
}

// openMirror opens the bolt mirror. A damaged file is set aside and replaced by an
// empty one (openMirror in localdb.go): this is logged, counted and reported DEGRADED
// until the next snapshot from etcd is written (mirrorRebuilt).
func (w *DBWatcher) openMirror() error {
	local, aside, cause, err := openMirror(w.boltCfg, w.Clock.Now())
	if err != nil {
		w.reportMirror(health.Error, err.Error())
		return fmt.Errorf("dbwatcher: %w", err)
	}
	w.local = local
	if aside == "" {
		w.reportMirror(health.OK, "")
		return nil
	}
	w.metrics.mirrorResets.Inc()
	w.mirrorAside = aside
	w.mirrorReset.Store(true)
	w.Log.WithError(cause).WithFields(logrus.Fields{"file": w.boltCfg.DBPath, "setAside": aside}).
		Error("local bolt mirror damaged: set aside, starting with an empty one that the next resync from etcd rebuilds; " +
			"until then the agent cannot start from it without etcd")
	w.reportMirror(health.Degraded, fmt.Sprintf("bolt mirror %s was damaged (%v); set aside as %s, "+
		"rebuilding it from etcd", w.boltCfg.DBPath, cause, aside))
	return nil
}

// mirrorRebuilt is called by the mirror writer after each snapshot it wrote: the first
// one after a reset ends the DEGRADED state.
func (w *DBWatcher) mirrorRebuilt() {
	if !w.mirrorReset.CompareAndSwap(true, false) {
		return
	}
	w.Log.WithFields(logrus.Fields{"file": w.boltCfg.DBPath, "setAside": w.mirrorAside}).
		Warn("local bolt mirror rebuilt from etcd")
	w.reportMirror(health.OK, "rebuilt from etcd; the damaged file was kept as "+w.mirrorAside)
}

// reportMirror reports the state of the bolt mirror to MirrorHealth, if set.
func (w *DBWatcher) reportMirror(state health.State, reason string) {
	if w.MirrorHealth != nil {
		w.MirrorHealth.Report(state, reason)
	}
}

// loadConfigs reads and validates etcd.conf and bolt.conf.
func (w *DBWatcher) loadConfigs() error {
	w.boltCfg = DefaultBoltConfig()
	if w.BoltConfig != nil {
		if _, err := w.BoltConfig.LoadConfig(&w.boltCfg); err != nil {
			return fmt.Errorf("dbwatcher: %w", err)
		}
	}
	if err := w.boltCfg.Validate(); err != nil {
		return fmt.Errorf("dbwatcher: bolt config: %w", err)
	}
	if w.EtcdConfig == nil {
		w.Log.Info("etcd disabled (no etcd configuration): running from the local database only")
		return nil
	}
	cfg := &EtcdConfig{}
	found, err := w.EtcdConfig.LoadConfig(cfg)
	if err != nil {
		return fmt.Errorf("dbwatcher: %w", err)
	}
	if !found {
		w.Log.Info("etcd disabled (no etcd.conf found): running from the local database only")
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("dbwatcher: etcd config: %w", err)
	}
	if w.NodeName == "" {
		return errors.New("dbwatcher: no node name given (it selects /vnf-agent/<node>/ in etcd)")
	}
	w.etcdCfg = cfg
	return nil
}

// connectEtcd creates the etcd client; it connects in the background unless
// allow-delayed-start is false, in which case etcd must answer within dial-timeout.
func (w *DBWatcher) connectEtcd() error {
	cfg := w.etcdCfg
	tlsCfg, err := cfg.TLSConfig(cfg.Endpoints)
	if err != nil {
		return fmt.Errorf("etcd config: %w", err)
	}
	// Reconnect at least once per probing interval: gRPC's default back-off grows to
	// two minutes, which would hide a restarted etcd from the probe for that long.
	maxDelay := w.RemoteDBProbingInterval
	baseDelay := min(100*time.Millisecond, maxDelay)
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.dialTimeout(),
		TLS:         tlsCfg,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  baseDelay,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   maxDelay,
			},
			MinConnectTimeout: cfg.dialTimeout(),
		})},
	})
	if err != nil {
		return fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	w.client = client
	if cfg.AllowDelayedStart {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.dialTimeout())
	defer cancel()
	if _, err := client.Get(ctx, probeKey); err != nil {
		return fmt.Errorf("etcd %v not reachable within dial-timeout %v (set allow-delayed-start to start without it): %w",
			cfg.Endpoints, cfg.dialTimeout(), err)
	}
	return nil
}

// AfterInit starts the goroutines: the loop, and with etcd the connection prober (the
// watch goroutine starts with the first remote resync).
func (w *DBWatcher) AfterInit() error {
	if w.resyncReq == nil {
		return errors.New("dbwatcher: AfterInit called before a successful Init")
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.loop = newLoopState()
	if reg, ok := w.EventLoop.(api.EventSourceRegistrar); ok {
		w.pending.wake = reg.AddEventSource(w.pending)
	} else {
		w.pumpWake = make(chan struct{}, 1)
		w.pending.wake = func() {
			select {
			case w.pumpWake <- struct{}{}:
			default:
			}
		}
		w.wg.Add(1)
		go w.pump(w.ctx)
	}
	w.wg.Add(1)
	go w.run(w.ctx)
	w.wg.Go(func() { w.mirrorW.run(w.ctx) })
	if w.client != nil {
		w.wg.Add(1)
		go w.probe(w.ctx)
	}
	return nil
}

// Close stops every goroutine of the watcher and waits for them, then closes the etcd
// client and the bolt file. It may be called more than once.
func (w *DBWatcher) Close() error {
	w.closeOnce.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
		w.wg.Wait()
		if w.mirrorW != nil {
			w.mirrorW.flush() // what the loop queued last: a clean stop loses nothing
		}
		w.closeErr = w.releaseResources()
	})
	return w.closeErr
}

// releaseResources closes what Init opened.
func (w *DBWatcher) releaseResources() error {
	var errs []error
	if w.client != nil {
		if err := w.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("dbwatcher: close etcd client: %w", err))
		}
		w.client = nil
	}
	if w.local != nil {
		if err := w.local.close(); err != nil {
			errs = append(errs, fmt.Errorf("dbwatcher: %w", err))
		}
		w.local = nil
	}
	if w.registered {
		w.metrics.unregister(w.Registerer)
		w.registered = false
	}
	return errors.Join(errs...)
}

// pump pushes the pending events to an event loop that does not drain them itself. A
// refused event is lost to the loop, so a resync is requested after the probing
// interval to make up for it.
func (w *DBWatcher) pump(ctx context.Context) {
	defer w.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.pumpWake:
		}
		for ev := w.pending.Next(); ev != nil; ev = w.pending.Next() {
			err := w.EventLoop.PushEvent(ev)
			if err == nil {
				continue
			}
			w.Log.WithError(err).WithField("event", ev.String()).Warn("event not delivered: requesting a resync")
			if r, ok := ev.(*api.DBResync); ok {
				w.metrics.resyncs.WithLabelValues(resyncSource(r), outcomeError).Inc()
			}
			select {
			case <-ctx.Done():
				return
			case <-w.Clock.After(w.RemoteDBProbingInterval):
			}
			w.requestResync("event not delivered")
			break
		}
	}
}

// resyncSource labels a resync by where its snapshot came from.
func resyncSource(r *api.DBResync) string {
	if r.Local {
		return sourceLocal
	}
	return sourceRemote
}

// RequestResync asks for a full resync from etcd (from the local mirror when etcd is
// disabled) without waiting for it; requests made while etcd is unreachable are
// satisfied by the resync that follows the reconnection. It serves
// POST /controller/resync and is safe to call from any goroutine.
func (w *DBWatcher) RequestResync() {
	w.requestResync("requested")
}

// requestResync queues a resync request; a full queue already holds one.
func (w *DBWatcher) requestResync(reason string) {
	if w.resyncReq == nil {
		return
	}
	select {
	case w.resyncReq <- struct{}{}:
		w.Log.WithField("reason", reason).Debug("resync requested")
	default:
		w.Log.WithField("reason", reason).Debug("resync already requested")
	}
}

// IsConnected reports whether the last etcd probe succeeded (always false when etcd is
// disabled).
func (w *DBWatcher) IsConnected() bool { return w.connected.Load() }

// ErrNotConnected is returned by KV while etcd is disabled or unreachable.
var ErrNotConnected = errors.New("database is not connected")

// KV returns the key-value API of the watcher's etcd client, for plugins that write to
// etcd themselves (nodesync allocates node IDs with it). It fails with an error wrapping
// ErrNotConnected when etcd is disabled, or when the last connection probe did not reach
// it (also before the first probe). Use it between Init and Close.
func (w *DBWatcher) KV() (clientv3.KV, error) {
	if w.client == nil {
		return nil, fmt.Errorf("%w: etcd is disabled", ErrNotConnected)
	}
	if !w.connected.Load() {
		return nil, fmt.Errorf("%w: etcd %v is unreachable", ErrNotConnected, w.etcdCfg.Endpoints)
	}
	return w.client.KV, nil
}

// Lease returns the lease API of the watcher's etcd client, for plugins that hold
// keys under a lease (nodesync holds its node ID so). It fails like KV.
func (w *DBWatcher) Lease() (clientv3.Lease, error) {
	if _, err := w.KV(); err != nil {
		return nil, err
	}
	return w.client.Lease, nil
}

// agentPrefix is the etcd prefix of this node's external configuration.
func (w *DBWatcher) agentPrefix() string { return ksrkey.AgentPrefix(w.NodeName) }

package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Errors returned by PushEvent or delivered through Event.Done.
var (
	// ErrEventQueueFull: the event was not queued because the loop is 1000 events behind.
	ErrEventQueueFull = errors.New("controller: event queue is full")
	// ErrClosedController: the controller was closed; no more events are taken.
	ErrClosedController = errors.New("controller: closed")
	// ErrEventLoopIsAborting: a fatal error stopped event processing; the agent must be
	// restarted.
	ErrEventLoopIsAborting = errors.New("controller: event loop is aborting after a fatal error")
	// ErrBlockingFollowUp: a handler pushed a blocking event from inside the loop, which
	// would wait for itself forever.
	ErrBlockingFollowUp = errors.New("controller: a blocking event cannot be pushed from inside the event loop")
	// ErrStartupResyncDeadline: no database resync arrived in time.
	ErrStartupResyncDeadline = errors.New("controller: no database resync before the start-up deadline")
)

// queueSize bounds both the event queue and the follow-up queue.
const queueSize = 1000

// historyTrimPeriod is how often old event records are dropped.
const historyTrimPeriod = time.Minute

// shutdownTimeout bounds how long Close waits for the Shutdown event.
const shutdownTimeout = 30 * time.Second

// DBResyncer is the database watcher, asked for a fresh snapshot by POST /controller/resync.
type DBResyncer interface {
	RequestResync()
}

// Deps lists what the controller needs.
type Deps struct {
	// Log is the controller's logger.
	Log logrus.FieldLogger
	// Config loads controller.conf; nil means defaults.
	Config infra.ConfigLoader
	// Scheduler commits the transactions.
	Scheduler Scheduler
	// EventHandlers in dependency order (Forward events see them in this order).
	EventHandlers []api.EventHandler
	// DBWatcher serves POST /controller/resync; optional.
	DBWatcher DBResyncer
	// HTTP is where the REST handlers are registered; optional.
	HTTP infra.HandlerRegistrar
	// Registerer receives the controller's metrics; optional.
	Registerer prometheus.Registerer
	// Health reports the controller's state to readiness and liveness; optional.
	Health *health.Reporter
	// Clock drives the timers (start-up deadline, healing, history trimming, the stall
	// watchdog); nil means the real clock.
	Clock clock.WithTicker
}

// Controller is the event loop: one goroutine that owns every handler's state, processes
// one event at a time and commits one transaction per event.
type Controller struct {
	Deps

	config  Config
	metrics *metrics
	clock   clock.WithTicker

	// Guarded by pushMu: whether new events are taken.
	pushMu sync.RWMutex
	closed bool

	eventQueue    chan api.Event
	followUpQueue chan api.Event

	// Guarded by sourcesMu: the sources drained by the loop, and their wake-up signal.
	sourcesMu  sync.Mutex
	sources    []api.EventSource
	sourceNext int // round-robin position
	sourceWake chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Owned by the loop goroutine.
	startTime        time.Time
	resyncCount      int
	startupResynced  bool
	aborting         bool
	delayed          []api.Event // events parked until the first DB resync
	backlog          []api.Event // parked events to process, before the queue
	kubeState        api.KubeStateData
	externalConfig   map[string]api.KeyValuePairs // source -> config
	internalConfig   api.KeyValuePairs            // last committed handler-staged values
	extConflicts     map[string]struct{}          // keys both external and the agent's
	healingScheduled bool
	healingTimer     clock.Timer
	healingErr       error
	healingDue       time.Time
	healingFailures  int                    // consecutive failed healing resyncs
	failedValues     map[string]failedValue // keys the scheduler could not apply
	periodicTicker   clock.Ticker
	seqNum           uint64
	currentSeq       uint64

	// Guarded by healthMu: the event in progress, for the stall watchdog.
	healthMu  sync.Mutex
	busyName  string
	busySince time.Time
	stalled   bool

	history *eventHistory

	// releaser returns the memory of full resyncs to the system.
	releaser *memoryReleaser
}

// NewController returns a controller with its dependencies set.
func NewController(deps Deps) *Controller { return &Controller{Deps: deps} }

// String names the plugin.
func (c *Controller) String() string { return "controller" }

// Init loads controller.conf and prepares the queues; the loop starts in AfterInit.
func (c *Controller) Init() error {
	c.Log = infra.LoggerOr(c.Log, c.String())
	if c.Scheduler == nil {
		return errors.New("no scheduler given")
	}
	c.config = DefaultConfig()
	if c.Deps.Config != nil {
		if _, err := c.Deps.Config.LoadConfig(&c.config); err != nil {
			return err
		}
	}
	if err := c.config.Validate(); err != nil {
		return fmt.Errorf("controller config: %w", err)
	}
	c.eventQueue = make(chan api.Event, queueSize)
	c.followUpQueue = make(chan api.Event, queueSize)
	c.initSourceWake()
	c.clock = c.Deps.Clock
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.kubeState = make(api.KubeStateData)
	c.externalConfig = make(map[string]api.KeyValuePairs)
	c.internalConfig = make(api.KeyValuePairs)
	c.failedValues = make(map[string]failedValue)
	c.extConflicts = make(map[string]struct{})
	c.startTime = c.clock.Now()
	c.history = newEventHistory(c.config, c.startTime)
	c.metrics = newMetrics(func() float64 { return float64(len(c.eventQueue) + len(c.followUpQueue)) })
	if c.Registerer != nil {
		if err := c.metrics.register(c.Registerer); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	if c.HTTP != nil {
		c.registerHandlers(c.HTTP)
	}
	c.report(health.Init, "waiting for the first database resync")
	return nil
}

// Config returns the effective controller.conf (valid after Init).
func (c *Controller) Config() Config { return c.config }

// DBWatcherTiming returns delayLocalResync and remoteDBProbingInterval, the settings of
// controller.conf that the database watcher uses (valid after Init).
func (c *Controller) DBWatcherTiming() (delayLocalResync, remoteDBProbingInterval time.Duration) {
	return time.Duration(c.config.DelayLocalResync), time.Duration(c.config.RemoteDBProbingInterval)
}

// AfterInit starts the event loop.
func (c *Controller) AfterInit() error {
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if c.releaser == nil {
		c.releaser = newMemoryReleaser(nil)
	}
	c.releaser.start(c.ctx)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.loop()
	}()
	if limit := time.Duration(c.config.EventLoopStallTimeout); limit > 0 {
		ticker := c.clock.NewTicker(limit / 4)
		c.wg.Add(1)
		go c.watchStalls(ticker, limit)
	}
	return nil
}

// Close processes a blocking Shutdown event (so handlers can remove what would outlive
// the agent), then stops the loop. Events pushed afterwards fail with ErrClosedController.
func (c *Controller) Close() error {
	if c.cancel == nil {
		return nil
	}
	var err error
	shutdown := api.NewShutdown()
	if perr := c.PushEvent(shutdown); perr == nil {
		select {
		case err = <-shutdown.WaitChan():
		case <-c.clock.After(shutdownTimeout):
			err = fmt.Errorf("shutdown event not processed within %v", shutdownTimeout)
		}
	}
	c.pushMu.Lock()
	c.closed = true
	c.pushMu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.releaser.wait()
	// Nobody will process what is still queued: release producers waiting on it.
	drain(c.followUpQueue)
	drain(c.eventQueue)
	if errors.Is(err, ErrEventLoopIsAborting) {
		err = nil
	}
	return err
}

func drain(q chan api.Event) {
	for {
		select {
		case ev := <-q:
			ev.Done(ErrClosedController)
		default:
			return
		}
	}
}

// PushEvent queues an event. Handlers push follow-ups of the event they process through
// the transaction they are given (api.PushFollowUp), not here.
func (c *Controller) PushEvent(ev api.Event) error {
	c.pushMu.RLock()
	defer c.pushMu.RUnlock()
	if c.closed || c.eventQueue == nil {
		return ErrClosedController
	}
	select {
	case c.eventQueue <- ev:
		return nil
	default:
		c.metrics.queueFull.Inc()
		return ErrEventQueueFull
	}
}

// pushFollowUp queues an event pushed by a handler while the loop processes event
// `to`: it runs before any other queued event. Called on the loop goroutine.
func (c *Controller) pushFollowUp(ev api.Event, to uint64) error {
	if ev.IsBlocking() {
		return fmt.Errorf("%w: %s", ErrBlockingFollowUp, ev.GetName())
	}
	c.pushMu.RLock()
	defer c.pushMu.RUnlock()
	if c.closed || c.followUpQueue == nil {
		return ErrClosedController
	}
	select {
	case c.followUpQueue <- &followUp{Event: ev, to: to}:
		return nil
	default:
		c.metrics.queueFull.Inc()
		return ErrEventQueueFull
	}
}

// initSourceWake creates the wake-up signal of the event sources once.
func (c *Controller) initSourceWake() {
	c.sourcesMu.Lock()
	defer c.sourcesMu.Unlock()
	if c.sourceWake == nil {
		c.sourceWake = make(chan struct{}, 1)
	}
}

// AddEventSource registers a source whose pending events the loop takes one at a time,
// interleaved with the queued events (see api.EventSource). Register sources before
// AfterInit. The returned function tells the loop that src has pending events.
func (c *Controller) AddEventSource(src api.EventSource) (wake func()) {
	c.initSourceWake()
	c.sourcesMu.Lock()
	c.sources = append(c.sources, src)
	ch := c.sourceWake
	c.sourcesMu.Unlock()
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// nextFromSources takes one pending event of the sources, round robin; nil when none
// has any.
func (c *Controller) nextFromSources() api.Event {
	c.sourcesMu.Lock()
	defer c.sourcesMu.Unlock()
	for range c.sources {
		src := c.sources[c.sourceNext%len(c.sources)]
		c.sourceNext++
		if ev := src.Next(); ev != nil {
			return ev
		}
	}
	return nil
}

// followUp marks an event pushed from inside the loop while processing event `to`.
type followUp struct {
	api.Event
	to uint64
}

// loop is the one goroutine that processes events.
func (c *Controller) loop() {
	deadline := c.clock.NewTimer(time.Duration(c.config.StartupResyncDeadline))
	defer deadline.Stop()
	trim := c.clock.NewTicker(historyTrimPeriod)
	defer trim.Stop()
	defer c.stopHealingTimers()

	for {
		// Priority: follow-ups, then parked events, then everything else.
		select {
		case ev := <-c.followUpQueue:
			c.receive(ev)
			continue
		default:
		}
		if len(c.backlog) > 0 {
			ev := c.backlog[0]
			c.backlog = c.backlog[1:]
			c.receive(ev)
			continue
		}
		select {
		case <-c.ctx.Done():
			return
		case ev := <-c.followUpQueue:
			c.receive(ev)
		case ev := <-c.eventQueue:
			c.receive(ev)
		case <-c.sourceWake:
			if ev := c.takeFromSources(); ev != nil {
				c.receive(ev)
				// Take the next one in a later round, after what else is queued.
				select {
				case c.sourceWake <- struct{}{}:
				default: // already signalled
				}
			}
		case <-deadline.C():
			if !c.startupResynced {
				c.abort(ErrStartupResyncDeadline)
			}
		case <-trim.C():
			c.history.trim(c.clock.Now())
		case <-c.healingTimerC():
			c.healingTimer = nil
			c.receive(&api.HealingResync{Type: api.AfterError, Error: c.healingErr})
		case <-c.periodicTickerC():
			c.receive(&api.HealingResync{Type: api.Periodic})
		}
	}
}

func (c *Controller) healingTimerC() <-chan time.Time {
	if c.healingTimer == nil {
		return nil
	}
	return c.healingTimer.C()
}

func (c *Controller) periodicTickerC() <-chan time.Time {
	if c.periodicTicker == nil {
		return nil
	}
	return c.periodicTicker.C()
}

func (c *Controller) stopHealingTimers() {
	if c.healingTimer != nil {
		c.healingTimer.Stop()
	}
	if c.periodicTicker != nil {
		c.periodicTicker.Stop()
	}
}

// receive applies the start-up gate and the abort state, then processes the event.
func (c *Controller) receive(ev api.Event) {
	if c.aborting {
		ev.Done(ErrEventLoopIsAborting)
		return
	}
	if !c.startupResynced {
		switch unwrapFollowUp(ev).(type) {
		case *api.DBResync:
		case *api.Shutdown:
			// Nothing was applied yet, so there is nothing to clean up.
			ev.Done(nil)
			return
		default:
			c.delayed = append(c.delayed, ev)
			return
		}
	}
	c.processEvent(ev)
	if !c.startupResynced && !c.aborting {
		if _, ok := unwrapFollowUp(ev).(*api.DBResync); ok {
			c.startupResynced = true
			c.backlog = append(c.backlog, c.delayed...)
			c.delayed = nil
			if c.config.EnablePeriodicHealing {
				c.periodicTicker = c.clock.NewTicker(time.Duration(c.config.PeriodicHealingInterval))
			}
		}
	}
}

func unwrapFollowUp(ev api.Event) api.Event {
	if f, ok := ev.(*followUp); ok {
		return f.Event
	}
	return ev
}

// abort stops event processing for good after a fatal error.
func (c *Controller) abort(err error) {
	c.aborting = true
	c.Log.WithError(err).Error("event loop is aborting: the agent needs a restart")
	c.report(health.Error, err.Error())
	for _, ev := range c.delayed {
		ev.Done(ErrEventLoopIsAborting)
	}
	c.delayed = nil
	for _, ev := range c.backlog {
		ev.Done(ErrEventLoopIsAborting)
	}
	c.backlog = nil
	c.stopHealingTimers()
	c.healingTimer, c.periodicTicker = nil, nil
}

func (c *Controller) report(state health.State, reason string) {
	if c.Health != nil {
		c.Health.Report(state, reason)
	}
}

// applyKubeStateChange keeps the cached Kubernetes state current.
func (c *Controller) applyKubeStateChange(ev *api.KubeStateChange) {
	res, ok := c.kubeState[ev.Resource]
	if !ok {
		res = make(api.KeyValuePairs)
		c.kubeState[ev.Resource] = res
	}
	if ev.NewValue == nil {
		delete(res, ev.Key)
		return
	}
	res[ev.Key] = ev.NewValue
}

// applyExternalChange keeps the cached external configuration current.
func (c *Controller) applyExternalChange(ev *api.ExternalConfigChange) {
	src, ok := c.externalConfig[ev.Source]
	if !ok {
		src = make(api.KeyValuePairs)
		c.externalConfig[ev.Source] = src
	}
	for k, v := range ev.UpdatedKVs {
		if v == nil {
			delete(src, k)
			continue
		}
		src[k] = v
	}
}

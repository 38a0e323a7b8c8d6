package infra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// Plugin is one part of an agent. Its needs are the fields of its Deps struct, set by
// whoever builds the agent (cmd/<binary>), never looked up at run time.
type Plugin interface {
	// Init prepares the plugin: load configuration, validate it, build internal state.
	// It runs after the Init of every plugin listed before this one.
	Init() error
	// Close releases what the plugin holds; it runs in reverse order of Init and only
	// for plugins whose Init succeeded.
	Close() error
	// String names the plugin in logs and errors.
	String() string
}

// PostInit is implemented by plugins that need a second start-up phase, run once every
// plugin has been initialised (start servers, goroutines, watches).
type PostInit interface {
	AfterInit() error
}

// DefaultStartupTimeout bounds Init plus AfterInit of all plugins.
const DefaultStartupTimeout = 45 * time.Second

// StartupTimeoutEnv is the environment variable overriding DefaultStartupTimeout, as a Go
// duration ("90s", "2m").
const StartupTimeoutEnv = "STARTUPTIMEOUT"

// StartupTimeoutFromEnv reads STARTUPTIMEOUT, returning the default when unset.
func StartupTimeoutFromEnv() (time.Duration, error) {
	v, ok := os.LookupEnv(StartupTimeoutEnv)
	if !ok || v == "" {
		return DefaultStartupTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive duration (e.g. 45s)", StartupTimeoutEnv, v)
	}
	return d, nil
}

// Agent runs plugins through their lifecycle: Init of all in order, AfterInit of all in
// order, then (on Stop) Close in reverse order.
type Agent struct {
	plugins        []Plugin
	log            logrus.FieldLogger
	startupTimeout time.Duration
	observer       func(LifecycleEvent)

	initialized []Plugin // plugins whose Init succeeded, in Init order
	started     bool
}

// Phase is a step of the agent lifecycle, reported to the observer.
type Phase string

// The lifecycle phases.
const (
	PhaseStarting Phase = "starting"
	PhaseStarted  Phase = "started"
	PhaseFailed   Phase = "failed"
	PhaseStopping Phase = "stopping"
	PhaseStopped  Phase = "stopped"
)

// LifecycleEvent tells the observer which phase the agent entered (and why it failed).
type LifecycleEvent struct {
	Phase Phase
	Err   error
}

// Option configures an Agent.
type Option func(*Agent)

// WithPlugins appends plugins in the order they are to be initialised.
func WithPlugins(plugins ...Plugin) Option {
	return func(a *Agent) { a.plugins = append(a.plugins, plugins...) }
}

// WithLogger sets the logger for lifecycle messages.
func WithLogger(log logrus.FieldLogger) Option {
	return func(a *Agent) { a.log = log }
}

// WithStartupTimeout bounds Init plus AfterInit of all plugins.
func WithStartupTimeout(d time.Duration) Option {
	return func(a *Agent) { a.startupTimeout = d }
}

// WithObserver registers a function told about every lifecycle phase, e.g. to drive the
// agent's readiness.
func WithObserver(f func(LifecycleEvent)) Option {
	return func(a *Agent) { a.observer = f }
}

// NewAgent builds an agent from options.
func NewAgent(opts ...Option) *Agent {
	a := &Agent{startupTimeout: DefaultStartupTimeout}
	for _, o := range opts {
		o(a)
	}
	a.log = LoggerOr(a.log, "agent")
	return a
}

func (a *Agent) notify(p Phase, err error) {
	if a.observer != nil {
		a.observer(LifecycleEvent{Phase: p, Err: err})
	}
}

// Start runs Init of every plugin in order, then AfterInit of every plugin in order, all
// within the start-up timeout. When a step fails or the timeout passes, the plugins
// already initialised are closed in reverse order and the error names the plugin.
func (a *Agent) Start(ctx context.Context) error {
	if a.started {
		return errors.New("agent already started")
	}
	a.notify(PhaseStarting, nil)
	deadline := time.Now().Add(a.startupTimeout)
	begin := time.Now()
	err := a.start(ctx, deadline)
	if err != nil {
		a.log.WithError(err).Error("agent start-up failed")
		if cerr := a.closeInitialized(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		a.notify(PhaseFailed, err)
		return err
	}
	a.started = true
	a.log.WithField("duration", time.Since(begin).Round(time.Millisecond)).
		Infof("agent started with %d plugins", len(a.plugins))
	a.notify(PhaseStarted, nil)
	return nil
}

func (a *Agent) start(ctx context.Context, deadline time.Time) error {
	for _, p := range a.plugins {
		if err := a.runStep(ctx, deadline, p, "Init", p.Init); err != nil {
			return err
		}
		a.initialized = append(a.initialized, p)
	}
	for _, p := range a.plugins {
		post, ok := p.(PostInit)
		if !ok {
			continue
		}
		if err := a.runStep(ctx, deadline, p, "AfterInit", post.AfterInit); err != nil {
			return err
		}
	}
	return nil
}

// runStep runs one lifecycle call, giving up (without being able to stop it) when the
// start-up deadline passes or ctx is cancelled.
func (a *Agent) runStep(ctx context.Context, deadline time.Time, p Plugin, step string, f func() error) error {
	remaining := time.Until(deadline)
	if remaining <= 0 {
		return fmt.Errorf("plugin %s: %s not started: start-up timeout %v exceeded", p, step, a.startupTimeout)
	}
	done := make(chan error, 1)
	begin := time.Now()
	go func() { done <- f() }()
	timer := time.NewTimer(remaining)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("plugin %s: %s: %w", p, step, err)
		}
		a.log.WithField("plugin", p.String()).WithField("duration", time.Since(begin).Round(time.Microsecond)).
			Debugf("%s done", step)
		return nil
	case <-timer.C:
		return fmt.Errorf("plugin %s: %s did not finish within the start-up timeout %v (set %s to allow more)",
			p, step, a.startupTimeout, StartupTimeoutEnv)
	case <-ctx.Done():
		return fmt.Errorf("plugin %s: %s interrupted: %w", p, step, ctx.Err())
	}
}

// Stop closes every initialised plugin in reverse order. Every plugin is closed even
// when an earlier Close fails; the errors are joined.
func (a *Agent) Stop() error {
	a.notify(PhaseStopping, nil)
	err := a.closeInitialized()
	a.started = false
	a.notify(PhaseStopped, err)
	return err
}

func (a *Agent) closeInitialized() error {
	var errs []error
	for i := len(a.initialized) - 1; i >= 0; i-- {
		p := a.initialized[i]
		if err := p.Close(); err != nil {
			a.log.WithField("plugin", p.String()).WithError(err).Error("close failed")
			errs = append(errs, fmt.Errorf("plugin %s: Close: %w", p, err))
		}
	}
	a.initialized = nil
	return errors.Join(errs...)
}

// Run starts the agent, waits until ctx is done or the process receives SIGINT or
// SIGTERM, then stops it.
func (a *Agent) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	a.log.Info("stopping agent")
	return a.Stop()
}

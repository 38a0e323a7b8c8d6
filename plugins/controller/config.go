package controller

import (
	"errors"
	"fmt"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Config is the content of controller.conf. Durations are written in the file as
// nanoseconds (as upstream) or as Go duration strings ("5s").
type Config struct {
	// EnableRetry lets the scheduler retry failed operations.
	EnableRetry bool `json:"enableRetry"`
	// DelayRetry is the delay before the first retry.
	DelayRetry Duration `json:"delayRetry"`
	// MaxRetryAttempts bounds the retries of one operation.
	MaxRetryAttempts int `json:"maxRetryAttempts"`
	// EnableExpBackoffRetry doubles the delay after every retry.
	EnableExpBackoffRetry bool `json:"enableExpBackoffRetry"`
	// DelayLocalResync is how long to wait for etcd before resyncing from the local DB.
	DelayLocalResync Duration `json:"delayLocalResync"`
	// StartupResyncDeadline: without a resync by then the agent reports an error.
	StartupResyncDeadline Duration `json:"startupResyncDeadline"`
	// EnablePeriodicHealing turns on the periodic downstream resync.
	EnablePeriodicHealing bool `json:"enablePeriodicHealing"`
	// PeriodicHealingInterval is the period of the periodic healing.
	PeriodicHealingInterval Duration `json:"periodicHealingInterval"`
	// DelayAfterErrorHealing is how long after a failed event the healing resync runs.
	DelayAfterErrorHealing Duration `json:"delayAfterErrorHealing"`
	// MaxDelayAfterErrorHealing caps the delay of the healing resync, which doubles
	// after every healing resync that failed in a row.
	MaxDelayAfterErrorHealing Duration `json:"maxDelayAfterErrorHealing"`
	// EventLoopStallTimeout: one event processed for longer than this means the loop
	// cannot make progress, and liveness fails until it returns; 0 disables the check.
	EventLoopStallTimeout Duration `json:"eventLoopStallTimeout"`
	// RemoteDBProbingInterval is the period of the etcd connection probe.
	RemoteDBProbingInterval Duration `json:"remoteDBProbingInterval"`
	// RecordEventHistory keeps processed events for /controller/event-history.
	RecordEventHistory bool `json:"recordEventHistory"`
	// EventHistoryAgeLimit is how long events are kept, in minutes.
	EventHistoryAgeLimit uint32 `json:"eventHistoryAgeLimit"`
	// PermanentlyRecordedInitPeriod: events of the first minutes of the agent's life are
	// kept regardless of their age (within half of the size bounds below).
	PermanentlyRecordedInitPeriod uint32 `json:"permanentlyRecordedInitPeriod"`
	// EventHistoryMaxRecords bounds the recorded events; 0 means no bound.
	EventHistoryMaxRecords int `json:"eventHistoryMaxRecords"`
	// EventHistoryMaxBytes bounds the approximate memory of the recorded events,
	// including the scheduler transactions they refer to; 0 means no bound.
	EventHistoryMaxBytes int `json:"eventHistoryMaxBytes"`
	// MaxBatchedChanges is how many pending Kubernetes state changes one event may
	// take together (one transaction for all of them); 1 processes every change as
	// its own event, as upstream does.
	MaxBatchedChanges int `json:"maxBatchedChanges"`
}

// DefaultConfig returns the code defaults. Unlike upstream (1 minute in code, 30 s in its
// documentation), the periodic healing interval defaults to the documented 30 s.
func DefaultConfig() Config {
	return Config{
		EnableRetry:                   true,
		DelayRetry:                    Duration(time.Second),
		MaxRetryAttempts:              3,
		EnableExpBackoffRetry:         true,
		DelayLocalResync:              Duration(5 * time.Second),
		StartupResyncDeadline:         Duration(30 * time.Second),
		EnablePeriodicHealing:         false,
		PeriodicHealingInterval:       Duration(30 * time.Second),
		DelayAfterErrorHealing:        Duration(5 * time.Second),
		MaxDelayAfterErrorHealing:     Duration(5 * time.Minute),
		EventLoopStallTimeout:         Duration(5 * time.Minute),
		RemoteDBProbingInterval:       Duration(3 * time.Second),
		RecordEventHistory:            true,
		EventHistoryAgeLimit:          1440,
		PermanentlyRecordedInitPeriod: 60,
		EventHistoryMaxRecords:        10000,
		EventHistoryMaxBytes:          32 << 20,
		MaxBatchedChanges:             64,
	}
}

// Validate checks every field and names the bad ones.
func (c Config) Validate() error {
	var errs []error
	positive := []struct {
		key string
		d   Duration
	}{
		{"delayLocalResync", c.DelayLocalResync},
		{"startupResyncDeadline", c.StartupResyncDeadline},
		{"delayAfterErrorHealing", c.DelayAfterErrorHealing},
		{"maxDelayAfterErrorHealing", c.MaxDelayAfterErrorHealing},
		{"remoteDBProbingInterval", c.RemoteDBProbingInterval},
	}
	if c.EnableRetry {
		positive = append(positive, struct {
			key string
			d   Duration
		}{"delayRetry", c.DelayRetry})
	}
	if c.EnablePeriodicHealing {
		positive = append(positive, struct {
			key string
			d   Duration
		}{"periodicHealingInterval", c.PeriodicHealingInterval})
	}
	for _, p := range positive {
		if p.d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v must be positive", p.key, time.Duration(p.d)))
		}
	}
	if c.EventHistoryMaxRecords < 0 {
		errs = append(errs, fmt.Errorf("eventHistoryMaxRecords: %d must not be negative (0: no bound)", c.EventHistoryMaxRecords))
	}
	if c.EventHistoryMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("eventHistoryMaxBytes: %d must not be negative (0: no bound)", c.EventHistoryMaxBytes))
	}
	if c.MaxBatchedChanges < 1 {
		errs = append(errs, fmt.Errorf("maxBatchedChanges: %d must be at least 1 (1: no batching)", c.MaxBatchedChanges))
	}
	if c.EventLoopStallTimeout < 0 {
		errs = append(errs, fmt.Errorf("eventLoopStallTimeout: %v must not be negative (0 disables it)", time.Duration(c.EventLoopStallTimeout)))
	}
	if c.EnableRetry && c.MaxRetryAttempts < 1 {
		errs = append(errs, fmt.Errorf("maxRetryAttempts: %d must be at least 1 when enableRetry is set", c.MaxRetryAttempts))
	}
	if c.RecordEventHistory && c.EventHistoryAgeLimit == 0 {
		errs = append(errs, errors.New("eventHistoryAgeLimit: 0 must be at least 1 minute when recordEventHistory is set"))
	}
	return errors.Join(errs...)
}

// Duration is a duration in the configuration file: nanoseconds or a string like "5s".
type Duration = infra.Duration

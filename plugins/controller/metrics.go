package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the event loop, named contiv_controller_<name>_<unit>.
type metrics struct {
	events    *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	queueLen  prometheus.GaugeFunc
	queueFull prometheus.Counter
	// failedValues, healing and stalls report the healing state (healing.go).
	failedValues prometheus.Gauge
	healing      *prometheus.CounterVec
	stalls       prometheus.Counter
	// extConflicts and extConflictsTotal report external keys the agent owns (external.go).
	extConflicts      prometheus.Gauge
	extConflictsTotal prometheus.Counter
	// batchChanges and batchSplits report how Kubernetes changes were batched (batch.go).
	batchChanges prometheus.Histogram
	batchSplits  prometheus.Counter
}

func newMetrics(queueLen func() float64) *metrics {
	return &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_controller_events_total",
			Help: "Events processed by the controller, by event name and outcome (ok, error, fatal).",
		}, []string{"event", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contiv_controller_event_processing_duration_seconds",
			Help:    "Time to process one event: handlers plus the transaction commit.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"event"}),
		queueLen: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "contiv_controller_event_queue_length",
			Help: "Events waiting in the controller's queues.",
		}, queueLen),
		queueFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_controller_events_rejected_total",
			Help: "Events refused because the queue was full.",
		}),
		failedValues: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_controller_failed_values",
			Help: "Values the scheduler could not apply and that were not repaired yet (readiness is DEGRADED meanwhile).",
		}),
		healing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_controller_healing_resyncs_total",
			Help: "After-error healing resyncs by outcome (ok, error); a failed one is retried with backoff.",
		}, []string{"outcome"}),
		extConflicts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_controller_external_config_conflicts",
			Help: "Keys of the external configuration that the agent also configures (the agent's value is kept).",
		}),
		extConflictsTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_controller_external_config_conflicts_total",
			Help: "Conflicts between the external configuration and the agent's values, counted when they start.",
		}),
		batchChanges: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "contiv_controller_batch_changes",
			Help:    "Kubernetes state changes processed by one event (1: alone; a part of a split batch counts as one event).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		batchSplits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_controller_batch_splits_total",
			Help: "Batches split because a change staged a key an earlier change of the batch staged.",
		}),
		stalls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_controller_event_loop_stalls_total",
			Help: "Times one event was processed for longer than eventLoopStallTimeout (liveness fails meanwhile).",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.events, m.duration, m.queueLen, m.queueFull, m.failedValues, m.healing, m.stalls, m.extConflicts, m.extConflictsTotal, m.batchChanges, m.batchSplits} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *metrics) observe(event, outcome string, d time.Duration) {
	m.events.WithLabelValues(event, outcome).Inc()
	m.duration.WithLabelValues(event).Observe(d.Seconds())
}

package dbwatcher

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
)

// Values of the labels of the resync counter.
const (
	sourceRemote = "remote"
	sourceLocal  = "local"

	outcomeOK      = "ok"
	outcomeError   = "error"
	outcomeSkipped = "skipped"

	// externalResource labels bad values and changes of the external configuration.
	externalResource = "external"
)

// metrics of the watcher, named contiv_dbwatcher_<name>_<unit>.
type metrics struct {
	resyncs   *prometheus.CounterVec
	changes   *prometheus.CounterVec
	badValues *prometheus.CounterVec
	// identityMismatches counts values whose name disagrees with their key.
	identityMismatches *prometheus.CounterVec
	connected          prometheus.Gauge
	pending            prometheus.GaugeFunc
	coalesced          prometheus.Counter
	// mirrorResets counts damaged bolt mirrors set aside.
	mirrorResets prometheus.Counter
}

// newMetrics creates the collectors; pending reports the number of pending changes.
func newMetrics(pending func() int) *metrics {
	return &metrics{
		pending: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "contiv_dbwatcher_pending_changes",
			Help: "Changes (coalesced per key) waiting for the event loop.",
		}, func() float64 { return float64(pending()) }),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_dbwatcher_coalesced_changes_total",
			Help: "Changes merged into a change of the same key still pending for the event loop.",
		}),
		mirrorResets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_dbwatcher_mirror_resets_total",
			Help: "Damaged bolt mirrors set aside (renamed <db-path>.corrupt-<time>) and replaced by an empty one rebuilt from etcd.",
		}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_dbwatcher_resyncs_total",
			Help: "Database resyncs by source (remote = etcd, local = bolt mirror) and outcome (ok, error, skipped).",
		}, []string{"source", "outcome"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_dbwatcher_changes_total",
			Help: "Changes passed to the controller, by resource keyword (external = external configuration).",
		}, []string{"resource"}),
		badValues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_dbwatcher_bad_values_total",
			Help: "Values that could not be decoded and were skipped, by resource keyword.",
		}, []string{"resource"}),
		identityMismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_dbwatcher_identity_mismatches_total",
			Help: "Values rejected because the name (and namespace) inside them disagrees with their key, by resource keyword.",
		}, []string{"resource"}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_dbwatcher_etcd_connected",
			Help: "1 while the etcd connection probe succeeds, else 0.",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.resyncs, m.changes, m.badValues, m.identityMismatches, m.connected, m.pending, m.coalesced, m.mirrorResets}
}

// register registers every collector, undoing the registrations when one fails.
func (m *metrics) register(r prometheus.Registerer) error {
	return health.RegisterAll(r, m.collectors()...)
}

func (m *metrics) unregister(r prometheus.Registerer) {
	health.UnregisterAll(r, m.collectors()...)
}

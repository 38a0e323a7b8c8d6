package nodesync

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
)

// metrics of the plugin, named contiv_nodesync_<name>_<unit>.
type metrics struct {
	// conflict is 1 while another running node holds this node's ID.
	conflict prometheus.Gauge
	// reclaims counts this node's records re-created or repaired while it runs.
	reclaims prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		conflict: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_nodesync_node_id_conflict",
			Help: "1 while another running node holds this node's ID (or its allocatedIDs record names another node), else 0.",
		}),
		reclaims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_nodesync_node_id_reclaims_total",
			Help: "This node's allocatedIDs record re-created (deleted while the node runs) or repaired (corrupt).",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.conflict, m.reclaims}
}

// register registers every collector, undoing the registrations when one fails.
func (m *metrics) register(r prometheus.Registerer) error {
	return health.RegisterAll(r, m.collectors()...)
}

func (m *metrics) unregister(r prometheus.Registerer) {
	health.UnregisterAll(r, m.collectors()...)
}

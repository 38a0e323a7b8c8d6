package ksr

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/store"
)

// Error kinds of the contiv_ksr_errors_total counter (upstream's AddErrors, UpdErrors,
// DelErrors, ArgErrors and ResErrors).
const (
	errAdd    = "add"
	errUpdate = "update"
	errDelete = "delete"
	errArg    = "arg"
	errResync = "resync"
)

// metrics are the per-reflector counters and the state gauges.
type metrics struct {
	adds, updates, deletes, resyncs *prometheus.CounterVec
	errors                          *prometheus.CounterVec
	invalidFields                   *prometheus.CounterVec
	skipped                         *prometheus.GaugeVec
	leader, inSync                  prometheus.Gauge
}

func newMetrics(reflectors []string) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "contiv", Subsystem: "ksr", Name: name, Help: help,
		}, labels)
	}
	m := &metrics{
		adds:    counter("adds_total", "Keys the reflector created in etcd.", "reflector"),
		updates: counter("updates_total", "Keys the reflector changed in etcd.", "reflector"),
		deletes: counter("deletes_total", "Keys the reflector deleted from etcd.", "reflector"),
		resyncs: counter("resyncs_total", "Completed mark-and-sweep resyncs of the reflector's etcd prefix.", "reflector"),
		errors: counter("errors_total",
			"Failures by kind: add, update, delete (etcd writes), arg (objects that could not be converted), resync.",
			"reflector", "kind"),
		invalidFields: counter("invalid_fields_total",
			"Fields of reflected objects that broke a limit (port or node port out of range, cluster IP outside the service CIDR) and were left out.",
			"reflector", "field"),
		skipped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "contiv", Subsystem: "ksr", Name: "skipped_objects",
			Help: "Objects of the leader's informer caches that are not written by design: EndpointSlices without the kubernetes.io/service-name label.",
		}, []string{"reflector"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "contiv", Subsystem: "ksr", Name: "leader",
			Help: "1 while this replica is the elected leader (the one writing to etcd).",
		}),
		inSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "contiv", Subsystem: "ksr", Name: "in_sync",
			Help: "1 while this replica leads and etcd matches the informer caches (last resync succeeded).",
		}),
	}
	m.skipped.WithLabelValues(endpointslice.Keyword)
	for _, r := range reflectors { // every series exists from the start, at 0
		m.adds.WithLabelValues(r)
		m.updates.WithLabelValues(r)
		m.deletes.WithLabelValues(r)
		m.resyncs.WithLabelValues(r)
		for _, k := range []string{errAdd, errUpdate, errDelete, errArg, errResync} {
			m.errors.WithLabelValues(r, k)
		}
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.adds, m.updates, m.deletes, m.resyncs, m.errors, m.invalidFields, m.skipped, m.leader, m.inSync} {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}

// written counts one write by its result.
func (m *metrics) written(reflector string, r store.Result) {
	switch r {
	case store.Added:
		m.adds.WithLabelValues(reflector).Inc()
	case store.Updated:
		m.updates.WithLabelValues(reflector).Inc()
	case store.Deleted:
		m.deletes.WithLabelValues(reflector).Inc()
	}
}

// failed counts one failed write by what it would have done.
func (m *metrics) failed(reflector string, r store.Result) {
	kind := errUpdate
	switch r {
	case store.Added:
		kind = errAdd
	case store.Deleted:
		kind = errDelete
	}
	m.errors.WithLabelValues(reflector, kind).Inc()
}

// resynced counts a completed resync and its changes.
func (m *metrics) resynced(reflector string, st store.Stats) {
	m.resyncs.WithLabelValues(reflector).Inc()
	m.adds.WithLabelValues(reflector).Add(float64(st.Added))
	m.updates.WithLabelValues(reflector).Add(float64(st.Updated))
	m.deletes.WithLabelValues(reflector).Add(float64(st.Deleted))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

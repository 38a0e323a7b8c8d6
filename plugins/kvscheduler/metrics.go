package kvscheduler

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// metrics are the scheduler's Prometheus collectors. They always exist (so the code
// paths do not branch on them) and are exported only when Deps.Registerer is set.
type metrics struct {
	txns     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	failed   *prometheus.CounterVec
	pending  prometheus.Gauge
	opTime   *prometheus.HistogramVec

	// pre-resolved children for the common label values
	txnOK, txnFailed [3]prometheus.Counter
	durationByType   [3]prometheus.Observer
}

func newMetrics() *metrics {
	m := &metrics{
		txns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_kvscheduler_transactions_total",
			Help: "Transactions executed by the KV scheduler, by type (NB, SB, RETRY) and outcome (ok, failed).",
		}, []string{"type", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contiv_kvscheduler_transaction_duration_seconds",
			Help:    "Execution time of KV scheduler transactions, by type.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 12),
		}, []string{"type"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_kvscheduler_failed_operations_total",
			Help: "Failed create/update/delete operations, by descriptor.",
		}, []string{"descriptor"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_kvscheduler_pending_values",
			Help: "Values waiting for a missing dependency.",
		}),
		opTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contiv_kvscheduler_operation_duration_seconds",
			Help:    "Time spent in descriptor callbacks that change the dataplane, by descriptor and operation (create, update, delete); for operations run together (CreateAsync, UpdateAsync, DeleteAsync), the time to start one plus the time waited for it.",
			Buckets: prometheus.ExponentialBuckets(0.000005, 4, 11),
		}, []string{"descriptor", "operation"}),
	}
	for _, tt := range []api.TxnType{api.NBTransaction, api.SBNotification, api.RetryFailedOps} {
		m.txnOK[tt] = m.txns.WithLabelValues(tt.String(), "ok")
		m.txnFailed[tt] = m.txns.WithLabelValues(tt.String(), "failed")
		m.durationByType[tt] = m.duration.WithLabelValues(tt.String())
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.txns, m.duration, m.failed, m.pending, m.opTime} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *metrics) txnDone(r *api.RecordedTxn, failed bool, pending int) {
	tt := r.TxnType
	if tt >= 0 && int(tt) < len(m.txnOK) {
		if failed {
			m.txnFailed[tt].Inc()
		} else {
			m.txnOK[tt].Inc()
		}
		m.durationByType[tt].Observe(r.Stop.Sub(r.Start).Seconds())
	}
	m.pending.Set(float64(pending))
}

func (m *metrics) failedOp(descriptor string) {
	m.failed.WithLabelValues(descriptor).Inc()
}

// opObservers returns the operation-duration observers of a descriptor, indexed by
// api.TxnOperation (create, update, delete; the others stay nil).
func (m *metrics) opObservers(descriptor string) [api.OpRecreate + 1]prometheus.Observer {
	var obs [api.OpRecreate + 1]prometheus.Observer
	for _, op := range []api.TxnOperation{api.OpCreate, api.OpUpdate, api.OpDelete} {
		obs[op] = m.opTime.WithLabelValues(descriptor, strings.ToLower(op.String()))
	}
	return obs
}

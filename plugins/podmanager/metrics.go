package podmanager

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// Values of the "kind" label: the Remote CNI rpc.
const (
	kindAdd    = "add"
	kindDelete = "delete"
	kindCheck  = "check"
)

// Values of the "result" label.
const (
	resultOK          = "ok"          // a reply with ResultOK
	resultError       = "error"       // a reply with ResultError
	resultUnavailable = "unavailable" // no event was taken (loop refused it, agent stopping)
	resultTimeout     = "timeout"     // the event was not processed within requestTimeout
	resultCanceled    = "canceled"    // the client went away
)

// metrics of the pod manager, named contiv_podmanager_<name>_<unit>.
type metrics struct {
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	localPods        prometheus.Gauge
	stateWriteErrors prometheus.Counter
	unconfirmedPods  prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_podmanager_cni_requests_total",
			Help: "Remote CNI requests by kind (add, delete, check) and result (ok, error, unavailable, timeout, canceled).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contiv_podmanager_cni_request_duration_seconds",
			Help:    "Time to answer a Remote CNI request, by kind.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"kind"}),
		localPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_podmanager_local_pods",
			Help: "Pods connected on this node.",
		}),
		stateWriteErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_podmanager_state_write_errors_total",
			Help: "Failed writes of the local pods' state file.",
		}),
		unconfirmedPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_podmanager_unconfirmed_pods",
			Help: "Local pods that the last resync's Kubernetes state lacks (or shows on another node) without proving them deleted: kept wired until their CNI DEL.",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration, m.localPods, m.stateWriteErrors, m.unconfirmedPods}
}

// register registers every collector, undoing the registrations when one fails.
func (m *metrics) register(r prometheus.Registerer) error {
	return health.RegisterAll(r, m.collectors()...)
}

func (m *metrics) unregister(r prometheus.Registerer) {
	health.UnregisterAll(r, m.collectors()...)
}

// observe counts one answered request.
func (m *metrics) observe(kind string, reply *cni.CNIReply, rpcErr error, d time.Duration) {
	m.requests.WithLabelValues(kind, requestResult(reply, rpcErr)).Inc()
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
}

func requestResult(reply *cni.CNIReply, rpcErr error) string {
	if rpcErr != nil {
		switch status.Code(rpcErr) {
		case codes.DeadlineExceeded:
			return resultTimeout
		case codes.Canceled:
			return resultCanceled
		case codes.Unavailable:
			return resultUnavailable
		}
		return resultError
	}
	if reply.GetResult() != cni.ResultOK {
		return resultError
	}
	return resultOK
}

package service

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// programmingLatency measures the network programming latency the way Kubernetes
// measures it for kube-proxy (network_programming_duration_seconds): from the
// endpoints.kubernetes.io/last-change-trigger-time of an Endpoints change (carried by
// contiv-ksr in the Endpoints value) to the moment the controller committed the
// transaction that programs it. Changes without a trigger time, failed transactions
// and resyncs are not measured.
type programmingLatency struct {
	clock clock.PassiveClock
	hist  prometheus.Histogram

	pending     controller.Event // the Endpoints change being handled
	triggerTime time.Time
}

func newProgrammingLatency(c clock.PassiveClock) *programmingLatency {
	if c == nil {
		c = clock.RealClock{}
	}
	return &programmingLatency{clock: c, hist: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "contiv_network_programming_duration_seconds",
		Help: "Time from the last change trigger time of an Endpoints object (the change of a pod or " +
			"service in Kubernetes) to the commit of the transaction programming it on this node.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 20), // 1 ms .. about 9 minutes
	})}
}

// started notes the trigger time of an Endpoints or EndpointSlice change that the
// plugin handles.
func (l *programmingLatency) started(ev controller.Event) {
	l.pending = nil
	ksc, ok := ev.(*controller.KubeStateChange)
	if !ok {
		return
	}
	var trigger int64
	switch v := ksc.NewValue.(type) {
	case *epmodel.Endpoints:
		trigger = v.GetLastChangeTriggerTimeUnixNano()
	case *esmodel.EndpointSlice:
		trigger = v.GetLastChangeTriggerTimeUnixNano()
	}
	if trigger <= 0 {
		return
	}
	l.pending, l.triggerTime = ev, time.Unix(0, trigger)
}

// committed observes the latency of the change when its transaction succeeded. A
// trigger time in the future (clocks of the nodes apart) is not observed.
func (l *programmingLatency) committed(ev controller.Event, err error) {
	if l.pending == nil || l.pending != ev {
		return
	}
	l.pending = nil
	if err != nil {
		return
	}
	if d := l.clock.Since(l.triggerTime); d >= 0 {
		l.hist.Observe(d.Seconds())
	}
}

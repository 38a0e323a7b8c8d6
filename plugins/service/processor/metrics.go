package processor

import "github.com/prometheus/client_golang/prometheus"

// stats counts what the processor had to leave out of the Kubernetes objects. The
// gauges reflect the current objects: a fixed service drops out of them.
type stats struct {
	unsupportedPorts *prometheus.GaugeVec
	invalidIPs       prometheus.Gauge
	rejectedFields   *prometheus.GaugeVec
	// rejectedEndpoints counts the endpoint addresses left out, by reason
	// (endpointcheck.go).
	rejectedEndpoints *prometheus.GaugeVec
}

func newStats() *stats {
	s := &stats{
		unsupportedPorts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_service_unsupported_ports",
			Help: "Service ports left out because VPP NAT44 cannot translate their protocol (SCTP, other).",
		}, []string{"protocol"}),
		invalidIPs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_service_invalid_ips",
			Help: "Service and endpoint IPs left out because they cannot be parsed.",
		}),
		rejectedFields: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_service_rejected_fields",
			Help: "Service and Endpoints values rejected as out of range, by field: port and endpointPort " +
				"outside 1-65535, nodePort outside the node port range, clusterIP outside the service CIDR.",
		}, []string{"field"}),
		rejectedEndpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_service_rejected_endpoints",
			Help: "Endpoint addresses of the current EndpointSlices and Endpoints left out of the backends, by reason: " +
				"unspecified, loopback, linkLocal, multicast, broadcast, clusterIP (a Service's cluster IP), " +
				"nodeIP (a node's address, from an endpoint that names no Pod).",
		}, []string{"reason"}),
	}
	s.initSeries()
	return s
}

func (s *stats) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.unsupportedPorts, s.invalidIPs, s.rejectedFields, s.rejectedEndpoints} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// initSeries creates every series at 0, so that the gauges are exported before
// anything was rejected (the counts follow the objects by difference afterwards).
func (s *stats) initSeries() {
	s.unsupportedPorts.WithLabelValues("SCTP").Set(0)
	s.unsupportedPorts.WithLabelValues("other").Set(0)
	s.invalidIPs.Set(0)
	for _, name := range rejectedFieldNames {
		s.rejectedFields.WithLabelValues(name).Set(0)
	}
	for _, name := range epRejectNames {
		s.rejectedEndpoints.WithLabelValues(name).Set(0)
	}
}

// addRejected adds the change of one object's rejected fields from old to cur.
func (s *stats) addRejected(old, cur *rejectedFields) {
	if s == nil || *old == *cur {
		return
	}
	for f := range numRejectedFields {
		if d := cur[f] - old[f]; d != 0 {
			s.rejectedFields.WithLabelValues(rejectedFieldNames[f]).Add(float64(d))
		}
	}
}

// addSkipped adds the changes of one service's counts (nothing on a nil stats, e.g.
// a Service of a processor that was not initialised).
func (s *stats) addSkipped(sctp, otherProto, badIPs int) {
	if s == nil {
		return
	}
	if sctp != 0 {
		s.unsupportedPorts.WithLabelValues("SCTP").Add(float64(sctp))
	}
	if otherProto != 0 {
		s.unsupportedPorts.WithLabelValues("other").Add(float64(otherProto))
	}
	if badIPs != 0 {
		s.invalidIPs.Add(float64(badIPs))
	}
}

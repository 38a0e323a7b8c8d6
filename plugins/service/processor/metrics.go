package processor

import "github.com/prometheus/client_golang/prometheus"

// stats counts what the processor had to leave out of the Kubernetes objects. The
// gauges reflect the current objects: a fixed service drops out of them.
type stats struct {
	unsupportedPorts *prometheus.GaugeVec
	invalidIPs       prometheus.Gauge
}

func newStats() *stats {
	return &stats{
		unsupportedPorts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_service_unsupported_ports",
			Help: "Service ports left out because VPP NAT44 cannot translate their protocol (SCTP, other).",
		}, []string{"protocol"}),
		invalidIPs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_service_invalid_ips",
			Help: "Service and endpoint IPs left out because they cannot be parsed.",
		}),
	}
}

func (s *stats) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.unsupportedPorts, s.invalidIPs} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// reset zeroes the gauges before a resync counts everything again.
func (s *stats) reset() {
	s.unsupportedPorts.WithLabelValues("SCTP").Set(0)
	s.unsupportedPorts.WithLabelValues("other").Set(0)
	s.invalidIPs.Set(0)
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

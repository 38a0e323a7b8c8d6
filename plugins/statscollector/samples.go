package statscollector

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// sample is one exported value with label pairs built beforehand (and kept between
// scrapes by a labelSets): prometheus.MustNewConstMetric would build and check the
// pairs of every sample of every scrape again.
type sample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair // sorted by name; shared, never changed
	value  float64
}

// Desc implements prometheus.Metric.
func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write implements prometheus.Metric: a counter (every cached-label series is one).
func (s *sample) Write(m *dto.Metric) error {
	m.Label = s.labels
	m.Counter = &dto.Counter{Value: &s.value}
	return nil
}

// labelPairs builds the pairs of name, value, name, value, ... given in name order.
func labelPairs(nameValues ...string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(nameValues)/2)
	for i := 0; i+1 < len(nameValues); i += 2 {
		out = append(out, &dto.LabelPair{Name: proto.String(nameValues[i]), Value: proto.String(nameValues[i+1])})
	}
	return out
}

// labelSets keeps the label pairs of the series of the last scrape by owner (a pod,
// a node, an error counter, a rule), so a scrape builds only those of new owners.
// Owners not seen in a scrape are forgotten at the next: the sets stay bounded by
// the series of one scrape.
type labelSets[K comparable] struct {
	prev, cur map[K][]*dto.LabelPair
}

func newLabelSets[K comparable]() *labelSets[K] {
	return &labelSets[K]{prev: make(map[K][]*dto.LabelPair), cur: make(map[K][]*dto.LabelPair)}
}

// scrape starts a scrape: what the last one used becomes what this one may reuse.
func (c *labelSets[K]) scrape() {
	c.prev, c.cur = c.cur, c.prev
	clear(c.cur)
}

// get returns the pairs of owner k, built by build when the last scrape had none.
func (c *labelSets[K]) get(k K, build func() []*dto.LabelPair) []*dto.LabelPair {
	if l, ok := c.cur[k]; ok {
		return l
	}
	l, ok := c.prev[k]
	if !ok {
		l = build()
	}
	c.cur[k] = l
	return l
}

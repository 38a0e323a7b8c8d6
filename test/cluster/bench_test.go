package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// benchPods is the number of pods of the pod-start benchmark.
const benchPods = 100

// BenchmarkPodStartAndNetworkProgramming creates 100 pods behind one Service (round robin
// over the nodes, 10 at a time) and reports
//   - pod start: from the create request to the Ready status its kubelet reports (CNI ADD
//     included), p50 and p99, seen by a watch of this process (one clock);
//   - network programming: the agents' contiv_network_programming_duration_seconds (from
//     the Endpoints change's trigger time to the commit of its transaction on a node),
//     p50 and p99 over every node's observations during the run (histogram buckets: the
//     figures are bucket upper bounds).
//
// It runs once whatever b.N is (the figures are per pod and per change).
func BenchmarkPodStartAndNetworkProgramming(b *testing.B) {
	l := sharedLab(b)
	ns := testNamespace(b, l, "bench")
	ctx := testCtx(b, 10*time.Minute)
	createService(b, l, ns, echoService("bench", "bench", corev1.ServiceTypeClusterIP, ""))
	before, err := programmingHistogram(l)
	if err != nil {
		b.Fatal(err)
	}

	w, err := l.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	ready := make(map[string]time.Time)
	created := make(map[string]time.Time)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			if _, seen := ready[p.Name]; !seen && podIsReady(p) {
				ready[p.Name] = time.Now()
			}
			n := len(ready)
			mu.Unlock()
			if n == benchPods {
				return
			}
		}
	}()

	nodes := l.Nodes()
	b.ResetTimer()
	sem := make(chan struct{}, 10)
	var wg sync.WaitGroup
	for i := range benchPods {
		name := fmt.Sprintf("bench-%03d", i)
		node := nodes[i%len(nodes)].Name
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			start := time.Now() // creationTimestamp has a resolution of one second
			if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, echoPod(name, "bench", node), metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			created[name] = start
			mu.Unlock()
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("not all pods ready: %v", ctx.Err())
	}
	b.StopTimer()

	var starts []float64
	mu.Lock()
	for name, r := range ready {
		c := created[name]
		starts = append(starts, r.Sub(c).Seconds())
	}
	mu.Unlock()
	slices.Sort(starts)
	b.ReportMetric(quantile(starts, 0.5)*1000, "pod-start-p50-ms")
	b.ReportMetric(quantile(starts, 0.99)*1000, "pod-start-p99-ms")

	// Let the last Endpoints changes be programmed, then read the agents' histograms.
	time.Sleep(2 * time.Second) // real time: the last changes reach every node
	after, err := programmingHistogram(l)
	if err != nil {
		b.Fatal(err)
	}
	delta := after.minus(before)
	b.ReportMetric(delta.quantile(0.5)*1000, "programming-p50-ms")
	b.ReportMetric(delta.quantile(0.99)*1000, "programming-p99-ms")
	b.ReportMetric(float64(delta.count), "programming-observations")
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// histogram is a cumulative Prometheus histogram summed over the nodes.
type histogram struct {
	bounds []float64 // upper bounds, ascending (+Inf last)
	counts []float64 // cumulative counts per bound
	count  int
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), count: h.count - o.count}
	for i := range out.counts {
		if i < len(o.counts) {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

// quantile returns the upper bound of the bucket holding the q-quantile.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.counts) == 0 {
		return math.NaN()
	}
	rank := q * h.counts[len(h.counts)-1]
	for i, c := range h.counts {
		if c >= rank {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

const programmingMetric = "contiv_network_programming_duration_seconds"

// programmingHistogram sums the agents' programming-latency histograms.
func programmingHistogram(l *lab.Lab) (histogram, error) {
	var sum histogram
	for _, n := range l.Nodes() {
		resp, err := http.Get("http://" + n.RESTAddr + "/metrics")
		if err != nil {
			return sum, err
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return sum, err
		}
		h, err := parseHistogram(buf.String(), programmingMetric)
		if err != nil {
			return sum, fmt.Errorf("%s: %w", n.Name, err)
		}
		if sum.bounds == nil {
			sum = h
			continue
		}
		for i := range sum.counts {
			sum.counts[i] += h.counts[i]
		}
		sum.count += h.count
	}
	return sum, nil
}

// parseHistogram reads the buckets and count of a histogram from Prometheus text.
func parseHistogram(text, name string) (histogram, error) {
	var h histogram
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, name+"_bucket{"):
			i := strings.Index(line, `le="`)
			j := strings.Index(line[i+4:], `"`)
			if i < 0 || j < 0 {
				return h, fmt.Errorf("bucket line %q", line)
			}
			le, err := strconv.ParseFloat(line[i+4:i+4+j], 64)
			if err != nil {
				return h, fmt.Errorf("bucket line %q: %w", line, err)
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return h, fmt.Errorf("bucket line %q: %w", line, err)
			}
			h.bounds = append(h.bounds, le)
			h.counts = append(h.counts, v)
		case strings.HasPrefix(line, name+"_count"):
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return h, fmt.Errorf("count line %q: %w", line, err)
			}
			h.count = int(v)
		}
	}
	if h.bounds == nil {
		return h, fmt.Errorf("no %s in the metrics", name)
	}
	return h, sc.Err()
}

// The benchmark's helpers are checked on their own.
func TestHistogramQuantileIsTheBucketBound(t *testing.T) {
	text := programmingMetric + `_bucket{le="0.001"} 1
` + programmingMetric + `_bucket{le="0.002"} 3
` + programmingMetric + `_bucket{le="0.004"} 4
` + programmingMetric + `_bucket{le="+Inf"} 4
` + programmingMetric + `_count 4
`
	h, err := parseHistogram(text, programmingMetric)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.quantile(0.5); got != 0.002 {
		t.Errorf("p50 %v, want 0.002", got)
	}
	if got := h.quantile(0.99); got != 0.004 {
		t.Errorf("p99 %v, want 0.004", got)
	}
	zero := h.minus(h)
	if zero.count != 0 || !math.IsNaN(zero.quantile(0.5)) {
		t.Errorf("h - h = %+v", zero)
	}
	if got := quantile([]float64{1, 2, 3, 4}, 0.5); got != 2 {
		t.Errorf("quantile of 1..4 at 0.5 = %v, want 2", got)
	}
}

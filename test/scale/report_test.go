package scale

import (
	"testing"
	"time"
)

// TestPairedRatioIsTheMedianOfTheRoundsRatios: the ratio of each round's two values,
// then their median; a round without a first value is left out.
func TestPairedRatioIsTheMedianOfTheRoundsRatios(t *testing.T) {
	rs := func(ms ...int) []result {
		out := make([]result, len(ms))
		for i, m := range ms {
			out[i].firstResync = time.Duration(m) * time.Millisecond
		}
		return out
	}
	v := func(r result) float64 { return float64(r.firstResync) }
	// Rounds: 200/100 = 2, 90/100 = 0.9, 330/300 = 1.1; the ratio of the medians would
	// be 200/100 = 2.
	if got := pairedRatio(rs(100, 100, 300), rs(200, 90, 330), v); got != 1.1 {
		t.Errorf("paired ratio %v, want 1.1 (the middle of 2, 0.9 and 1.1)", got)
	}
	if got := pairedRatio(rs(0, 100), rs(50, 120), v); got != 1.2 {
		t.Errorf("paired ratio %v, want 1.2 (the round without a first value left out)", got)
	}
	if got := pairedRatio(nil, nil, v); got != 0 {
		t.Errorf("paired ratio of no rounds %v, want 0", got)
	}
	if got := median(rs(100, 300, 200, 400), v); got != float64(250*time.Millisecond) {
		t.Errorf("median of an even count %v, want the mean of the middle two", time.Duration(got))
	}
}

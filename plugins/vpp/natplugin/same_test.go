package natplugin

import (
	"slices"
	"testing"
)

// TestDropCommon: entries equal in both lists are dropped from both, whether they sit
// in a common prefix or suffix, in place among changed entries, or elsewhere (paired by
// key); what remains keeps its order. Entries here are numbers whose key is the tens.
func TestDropCommon(t *testing.T) {
	same := func(x, y int) bool { return x == y }
	key := func(x int) int { return x / 10 }
	tests := []struct {
		name         string
		a, b         []int
		wantA, wantB []int
	}{
		{"equal", []int{10, 20, 30}, []int{10, 20, 30}, nil, nil},
		{"changed in the middle", []int{10, 20, 30}, []int{10, 21, 30}, []int{20}, []int{21}},
		{"every entry changed in place", []int{10, 20, 30}, []int{11, 21, 31}, []int{10, 20, 30}, []int{11, 21, 31}},
		{"changed in place around an equal one", []int{10, 20, 30, 40}, []int{11, 20, 30, 41}, []int{10, 40}, []int{11, 41}},
		{"reordered, one changed", []int{10, 20, 30, 40}, []int{41, 30, 20, 11}, []int{10, 40}, []int{41, 11}},
		{"one added, one removed", []int{10, 20, 30}, []int{10, 40, 30, 50}, []int{20}, []int{40, 50}},
	}
	for _, tt := range tests {
		gotA, gotB := dropCommon(tt.a, tt.b, same, key)
		if !slices.Equal(gotA, tt.wantA) || !slices.Equal(gotB, tt.wantB) {
			t.Errorf("%s: dropCommon(%v, %v) = %v, %v; want %v, %v", tt.name, tt.a, tt.b, gotA, gotB, tt.wantA, tt.wantB)
		}
	}
	a, b := []int{10, 20, 30}, []int{11, 21, 31}
	if n := testing.AllocsPerRun(10, func() { dropCommon(a, b, same, key) }); n != 0 {
		t.Errorf("dropCommon of lists changed in every place allocates %v times, want 0", n)
	}
}

package shares

import (
	"runtime"
	"slices"
	"testing"
)

func TestSmallWorkRunsOnTheCallerInOneShare(t *testing.T) {
	calls := 0
	Run(1999, 1000, func(share, lo, hi int) {
		calls++
		if share != 0 || lo != 0 || hi != 1999 {
			t.Fatalf("share %d [%d, %d), want the one share [0, 1999)", share, lo, hi)
		}
	})
	if calls != 1 {
		t.Fatalf("%d calls, want 1", calls)
	}
}

func TestLargeWorkIsSplitInContiguousSharesCoveringEveryItemOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	const n = 10001
	if k := Count(n, 1000); k != 3 {
		t.Fatalf("Count = %d, want 3 (GOMAXPROCS)", k)
	}
	hits := make([]int, n)
	bounds := make([][2]int, 3)
	Run(n, 1000, func(share, lo, hi int) {
		bounds[share] = [2]int{lo, hi}
		for i := lo; i < hi; i++ {
			hits[i]++
		}
	})
	if !slices.Equal(bounds, [][2]int{{0, 3333}, {3333, 6667}, {6667, n}}) {
		t.Fatalf("shares %v", bounds)
	}
	for i, h := range hits {
		if h != 1 {
			t.Fatalf("item %d done %d times", i, h)
		}
	}
}

func TestAPanicInAShareIsRaisedOnTheCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func() {
		if p := recover(); p != "share 1" {
			t.Fatalf("recovered %v, want the panic of share 1", p)
		}
	}()
	Run(4000, 1000, func(share, lo, hi int) {
		if share == 1 {
			panic("share 1")
		}
	})
	t.Fatal("Run returned")
}

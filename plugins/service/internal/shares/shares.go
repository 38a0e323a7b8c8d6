// Package shares splits the independent work of a large resync of the Services plugin
// (parsing and rendering thousands of services) over the available CPUs. It is for
// fork-join work inside one call of the event loop only: Run returns when every share
// is done, and no goroutine outlives it. It is not a worker pool and keeps no state.
package shares

import (
	"runtime"
	"sync"
)

// Count returns into how many shares Run splits n items: 1 (the calling goroutine
// alone) when n is under 2*minShare or only one CPU is available, otherwise up to
// runtime.GOMAXPROCS shares of at least minShare items each.
func Count(n, minShare int) int {
	if minShare < 1 {
		minShare = 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), n/minShare))
}

// Run calls do for contiguous shares [lo, hi) of n items, in order of the shares
// (Count of them): on the calling goroutine when there is one share, otherwise each
// share on its own goroutine (share w is items [w*n/k, (w+1)*n/k) of k shares), and
// waits for them all. A panic in a share is raised again on the caller once every
// share has ended. do must touch nothing that another share touches.
func Run(n, minShare int, do func(share, lo, hi int)) {
	k := Count(n, minShare)
	if k == 1 {
		do(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	panics := make([]any, k)
	for w := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[w] = recover() }()
			do(w, w*n/k, (w+1)*n/k)
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

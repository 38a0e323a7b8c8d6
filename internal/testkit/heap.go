package testkit

import "runtime"

// LiveHeap runs one garbage collection and returns the bytes of the heap objects that
// survived it (runtime.MemStats.HeapAlloc right after it): what a test's values keep
// alive. The content of a sync.Pool survives one collection (in the pool's victim
// cache), so it counts.
func LiveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

package vppsim

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user+system) the process used so far;
// on a shared machine it measures the graph's cost better than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
